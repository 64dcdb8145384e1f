package evals

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// textReply is an agent-call step whose output is agent's reply.
func textReply(id, parent, agent, output string) tracedata.Step {
	return tracedata.Step{StepID: id, ParentStepID: parent, Agent: agent, CallType: tracedata.CallAgent,
		Name: "invoke_agent " + agent, Output: output}
}

func textEval(t *testing.T, trace *tracedata.TraceData, in Inputs) *TextResult {
	t.Helper()
	r, err := textEvaluator{}.Evaluate(context.Background(), trace, in)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	res := r.(*TextResult)
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("result does not encode: %v", err)
	}
	return res
}

func textClose(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s is absent, want %v", what, want)
		return
	}
	if math.Abs(*got-want) > 1e-12 {
		t.Errorf("%s = %.17g, want %.17g", what, *got, want)
	}
}

func TestTextTokens(t *testing.T) {
	got := textTokens("Hello, WORLD! a b_c x2 é Ünïcode 42\n")
	want := []string{"hello", "world", "b_c", "x2", "ünïcode", "42"}
	if !slices.Equal(got, want) {
		t.Errorf("tokens = %q, want %q", got, want)
	}
}

func TestTextIdenticalAndDisjoint(t *testing.T) {
	same := &tracedata.TraceData{Steps: []tracedata.Step{
		textReply("1", "", "a", "The paper is sound; accept."),
		textReply("2", "", "b", "the paper is SOUND accept"),
	}}
	res := textEval(t, same, Inputs{})
	if !res.Available {
		t.Fatalf("not available: %s", res.Reason)
	}
	textClose(t, "identical redundancy", res.Redundancy, 1)
	textClose(t, "identical diversity", res.Diversity, 0)
	textClose(t, "a redundancy", res.Agents["a"].Redundancy, 1)

	disjoint := &tracedata.TraceData{Steps: []tracedata.Step{
		textReply("1", "", "a", "accept the paper"),
		textReply("2", "", "b", "reject this submission"),
	}}
	res = textEval(t, disjoint, Inputs{})
	if *res.Redundancy != 0 || *res.Diversity != 1 || res.MostSimilar.Similarity != 0 {
		t.Errorf("disjoint: redundancy %v diversity %v pair %+v", *res.Redundancy, *res.Diversity, res.MostSimilar)
	}
}

// Three documents, by hand. Tokens (one-letter "a" dropped):
//
//	alpha: the cat sat    beta: the dog sat    gamma: a dog ran
//
// n = 3; df: the 2, sat 2, dog 2, cat 1, ran 1. Smooth idf:
// df 2 -> ln(4/3)+1 = 1.2876820724517808 (call it u); df 1 -> ln 2 + 1 =
// 1.6931471805599454 (v). Vectors before l2: alpha (the u, cat v, sat u),
// beta (the u, dog u, sat u), gamma (dog u, ran v). Cosines:
//
//	alpha·beta  = 2u² / (sqrt(2u²+v²) · sqrt(3)u) = 0.5979687361418284
//	alpha·gamma = 0 (no shared term)
//	beta·gamma  = u / (sqrt(3) · sqrt(u²+v²))    = 0.3494981241087058
//
// Redundancy = mean of the three = 0.3158222867501781; per agent the mean
// of its two: alpha 0.2989843680709142, beta 0.47373343012526714, gamma
// 0.1747490620543529. (numpy, normalising the same vectors, prints these
// values.)
func TestTextThreeDocuments(t *testing.T) {
	trace := &tracedata.TraceData{Steps: []tracedata.Step{
		textReply("1", "", "alpha", "The cat sat."),
		textReply("2", "", "beta", "the dog sat"),
		{StepID: "3", Agent: "gamma", CallType: tracedata.CallTool, Name: "chat gpt-4o-mini", Output: "A dog ran!"},
	}}
	res := textEval(t, trace, Inputs{})
	if !res.Available {
		t.Fatalf("not available: %s", res.Reason)
	}
	const ab, ag, bg = 0.5979687361418284, 0.0, 0.3494981241087058
	wantPairs := []TextPair{
		{Agents: [2]string{"alpha", "beta"}, Similarity: ab},
		{Agents: [2]string{"alpha", "gamma"}, Similarity: ag},
		{Agents: [2]string{"beta", "gamma"}, Similarity: bg},
	}
	if len(res.Pairs) != 3 {
		t.Fatalf("pairs = %+v", res.Pairs)
	}
	for i, p := range res.Pairs {
		if p.Agents != wantPairs[i].Agents || math.Abs(p.Similarity-wantPairs[i].Similarity) > 1e-12 {
			t.Errorf("pair %d = %+v, want %+v", i, p, wantPairs[i])
		}
	}
	textClose(t, "redundancy", res.Redundancy, (ab+ag+bg)/3)
	textClose(t, "redundancy (literal)", res.Redundancy, 0.3158222867501781)
	textClose(t, "diversity", res.Diversity, 1-0.3158222867501781)
	textClose(t, "alpha", res.Agents["alpha"].Redundancy, 0.2989843680709142)
	textClose(t, "beta", res.Agents["beta"].Redundancy, 0.47373343012526714)
	textClose(t, "gamma", res.Agents["gamma"].Redundancy, 0.1747490620543529)
	if res.MostSimilar == nil || res.MostSimilar.Agents != [2]string{"alpha", "beta"} {
		t.Errorf("most similar = %+v", res.MostSimilar)
	}
	if g := res.Agents["gamma"]; g.Terms != 2 || g.Chars != 10 || g.Excerpt != "A dog ran!" {
		t.Errorf("gamma = %+v", g)
	}
	h := res.Headline()
	want := []string{TextKeyAgentsWithContent, TextKeyDiversity, TextKeyMaxPairSimilarity,
		TextKeyRedundancy, TextKeyStepsWithContent, TextKeyStepsWithoutContent}
	if keys := slices.Sorted(maps.Keys(h)); !slices.Equal(keys, want) {
		t.Errorf("headline keys = %v, want %v", keys, want)
	}
	if h[TextKeyAgentsWithContent] != 3 || h[TextKeyStepsWithContent] != 3 || h[TextKeyMaxPairSimilarity] != res.MostSimilar.Similarity {
		t.Errorf("headline = %v", h)
	}
}

// What counts as content, and what is left out: plain tool and HOST steps,
// the assessor, a reply recorded twice, the truncation marker.
func TestTextContentSelection(t *testing.T) {
	long := strings.Repeat("word ", 100)
	trace := &tracedata.TraceData{
		Agents: []tracedata.Agent{{Name: "green", Role: tracedata.RoleAssessor}, {Name: "a"}, {Name: "b"}, {Name: "c"}},
		Steps: []tracedata.Step{
			{StepID: "task", Agent: "green", CallType: tracedata.CallHost, Output: "host text"},
			{StepID: "judge", Agent: "green", CallType: tracedata.CallTool, Model: "m", Output: "alpha beta"},
			// The same reply on the caller's and the callee's step: one message.
			textReply("c1", "task", "a", "alpha beta gamma"),
			textReply("s1", "c1", "a", "alpha beta gamma"),
			{StepID: "tool", ParentStepID: "s1", Agent: "a", CallType: tracedata.CallTool, Name: "execute_tool search", Output: "delta"},
			textReply("c2", "s1", "b", "alpha beta gamma"+textTruncatedMarker),
			textReply("c3", "s1", "c", "   "),
			textReply("c4", "s1", "", "nobody said this"),
			textReply("c5", "s1", "b", long),
		},
	}
	res := textEval(t, trace, Inputs{})
	if res.Content != (TextContent{StepsWithContent: 4, StepsWithoutContent: 1, StepsWithoutAgent: 1}) {
		t.Errorf("content = %+v", res.Content)
	}
	if a := res.Agents["a"]; a.Steps != 2 || a.Messages != 1 || a.Terms != 3 {
		t.Errorf("a = %+v", a)
	}
	if b := res.Agents["b"]; b.Steps != 2 || b.Messages != 2 || !strings.HasSuffix(b.Excerpt, "…") ||
		len([]rune(b.Excerpt)) != textExcerptRunes+1 || strings.Contains(b.Excerpt, "truncated") {
		t.Errorf("b = %+v", b)
	}
	if _, ok := res.Agents["green"]; ok {
		t.Error("the assessor's text was counted")
	}
	if !slices.Equal(res.AgentsWithoutContent, []string{"c"}) {
		t.Errorf("agents without content = %v", res.AgentsWithoutContent)
	}

	// With virtual nodes included the assessor's LLM output counts too.
	res = textEval(t, trace, Inputs{Config: Config{IncludeVirtualNodes: true}})
	if g := res.Agents["green"]; g.Steps != 1 {
		t.Errorf("green with virtual nodes = %+v", g)
	}
}

func TestTextNotAvailable(t *testing.T) {
	cases := map[string]struct {
		trace  *tracedata.TraceData
		with   int
		reason string
	}{
		"nil":   {nil, 0, "no trace"},
		"empty": {&tracedata.TraceData{}, 0, "no agent-call or LLM steps"},
		"no content": {&tracedata.TraceData{Steps: []tracedata.Step{
			textReply("1", "", "a", ""), textReply("2", "", "b", ""),
		}}, 0, "content capture may be off"},
		"one agent": {&tracedata.TraceData{Steps: []tracedata.Step{
			textReply("1", "", "a", "all mine"), textReply("2", "", "b", ""),
		}}, 1, `only agent "a"`},
	}
	for name, c := range cases {
		res := textEval(t, c.trace, Inputs{})
		if res.Available || !strings.Contains(res.Reason, c.reason) || res.Redundancy != nil || res.Diversity != nil {
			t.Errorf("%s: %+v", name, res)
		}
		if res.Content.StepsWithContent != c.with {
			t.Errorf("%s: content = %+v", name, res.Content)
		}
		h := res.Headline()
		if len(h) != 3 || h[TextKeyStepsWithContent] != float64(c.with) {
			t.Errorf("%s: headline = %v", name, h)
		}
		b, _ := json.Marshal(res)
		if !strings.Contains(string(b), `"available":false`) || !strings.Contains(string(b), `"content":{"steps_with_content":`) {
			t.Errorf("%s: json = %s", name, b)
		}
	}
}

// An agent whose text has no terms has a zero vector: similarity 0, not NaN.
func TestTextZeroVector(t *testing.T) {
	res := textEval(t, &tracedata.TraceData{Steps: []tracedata.Step{
		textReply("1", "", "a", "!!! ? x"),
		textReply("2", "", "b", "real words"),
	}}, Inputs{})
	if !res.Available || *res.Redundancy != 0 || res.Agents["a"].Terms != 0 {
		t.Errorf("zero vector: %+v", res)
	}
}

// The same trace with its steps in any order gives the same JSON.
func TestTextDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("plan review accept reject novelty clarity method data result baseline score paper")
	var base []tracedata.Step
	for i := range 40 {
		var msg []string
		for range 12 {
			msg = append(msg, words[rng.IntN(len(words))])
		}
		agent := string(rune('a' + i%5))
		base = append(base, textReply(string(rune('A'+i)), "", agent, strings.Join(msg, " ")))
	}
	encode := func(steps []tracedata.Step) string {
		b, err := json.Marshal(textEval(t, &tracedata.TraceData{Steps: steps}, Inputs{}))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := encode(base)
	for range 10 {
		// Interleave the agents differently, keeping each agent's own
		// messages in order (its joined text, and so its excerpt, follows
		// that order).
		queues := map[string][]tracedata.Step{}
		for _, s := range base {
			queues[s.Agent] = append(queues[s.Agent], s)
		}
		var steps []tracedata.Step
		for len(steps) < len(base) {
			agent := string(rune('a' + rng.IntN(5)))
			if q := queues[agent]; len(q) > 0 {
				steps, queues[agent] = append(steps, q[0]), q[1:]
			}
		}
		if got := encode(steps); got != want {
			t.Fatalf("order changed the result:\n%s\n%s", got, want)
		}
	}
}
