package evals

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/coordbench/coordbench/tracedata"
)

// textEvaluator measures how much the agents repeated each other: agents
// that say the same things add cost without adding information. It compares
// each agent's contribution (the distinct outputs of its agent-call and LLM
// steps, joined) with TF-IDF cosine similarity, computed as scikit-learn's
// TfidfVectorizer does with its defaults, so a number can be reproduced
// there. Only recorded text is used: when too little was recorded the
// result says so instead of guessing.
//
// Which steps: AGENT steps (their Output is the callee's reply, so it is the
// callee's contribution) and LLM steps (TOOL steps with a model or a "chat"
// name). Plain tool calls are left out: their output is a tool's, not an
// agent's message. Inputs are left out too: an agent call's input is the
// caller's words recorded on the callee's step, and counting it would blur
// who said what. The assessor and virtual nodes are left out unless the
// request includes virtual nodes, as in the graph metrics.
type textEvaluator struct{}

func (textEvaluator) Name() string { return "text" }
func (textEvaluator) Tier() int    { return 3 }

// TextMethod describes the similarity measure in the result, so a reader
// can recompute it.
const TextMethod = "tf-idf cosine: lowercase tokens of 2+ word characters, raw counts, " +
	"idf = ln((1+n)/(1+df)) + 1, l2-normalised (scikit-learn TfidfVectorizer defaults)"

// textTruncatedMarker ends message text cut to the span attribute limit
// (otelmap.ContentTruncatedMarker; evals does not import otelmap). It is
// removed so that two cut messages do not look alike for being cut.
const textTruncatedMarker = "…[truncated]"

// textExcerptRunes bounds the excerpt of each contribution in the result.
const textExcerptRunes = 300

// TextContent counts the agent-call and LLM steps by whether they recorded
// output text.
type TextContent struct {
	StepsWithContent    int `json:"steps_with_content"`
	StepsWithoutContent int `json:"steps_without_content"`
	// StepsWithoutAgent name no agent, so their text cannot be attributed;
	// they are in neither count above.
	StepsWithoutAgent int `json:"steps_without_agent,omitempty"`
}

// TextAgent is one agent's contribution.
type TextAgent struct {
	// Steps with content, and the distinct outputs among them: one reply is
	// often recorded on several steps (the caller's and the callee's side of
	// a call, or an LLM answer passed on as the agent's reply) and counts
	// once.
	Steps    int `json:"steps"`
	Messages int `json:"messages"`
	// Chars (runes) and Terms (tokens) of the joined contribution. An agent
	// with no terms has a zero vector and similarity 0 to everyone.
	Chars int `json:"chars"`
	Terms int `json:"terms"`
	// Redundancy is the mean similarity of this agent's contribution to each
	// other agent's; absent when the result is not available.
	Redundancy *float64 `json:"redundancy,omitempty"`
	// Excerpt is the start of the contribution.
	Excerpt string `json:"excerpt"`
}

// TextPair is the similarity of two agents' contributions, names in order.
type TextPair struct {
	Agents     [2]string `json:"agents"`
	Similarity float64   `json:"similarity"`
}

// TextResult is the text evaluator's result.
type TextResult struct {
	// Available is false when fewer than two agents recorded content; Reason
	// then says why and no similarity is reported.
	Available bool        `json:"available"`
	Reason    string      `json:"reason,omitempty"`
	Method    string      `json:"method"`
	Content   TextContent `json:"content"`
	// Redundancy is the mean pairwise similarity between agents'
	// contributions (0..1); Diversity is 1 - Redundancy.
	Redundancy *float64 `json:"redundancy,omitempty"`
	Diversity  *float64 `json:"diversity,omitempty"`
	// MostSimilar is the pair with the highest similarity; ties go to the
	// first pair in name order.
	MostSimilar *TextPair `json:"most_similar_pair,omitempty"`
	// Agents holds the agents with content, by name.
	Agents map[string]TextAgent `json:"agents"`
	// AgentsWithoutContent had agent-call or LLM steps but no output text.
	AgentsWithoutContent []string `json:"agents_without_content,omitempty"`
	// Pairs lists every pair of agents with content, in name order.
	Pairs []TextPair `json:"pairs,omitempty"`
}

// Headline keys of the text result. The set is fixed; the similarity keys
// are left out when the result is not available, rather than reported as a
// zero that would read as "no redundancy".
const (
	TextKeyStepsWithContent    = "steps_with_content"
	TextKeyStepsWithoutContent = "steps_without_content"
	TextKeyAgentsWithContent   = "agents_with_content"
	TextKeyRedundancy          = "redundancy"
	TextKeyDiversity           = "diversity"
	TextKeyMaxPairSimilarity   = "max_pair_similarity"
)

// Headline returns the content counts and, when available, redundancy,
// diversity and the most similar pair's similarity.
func (r *TextResult) Headline() map[string]float64 {
	h := map[string]float64{
		TextKeyStepsWithContent:    float64(r.Content.StepsWithContent),
		TextKeyStepsWithoutContent: float64(r.Content.StepsWithoutContent),
		TextKeyAgentsWithContent:   float64(len(r.Agents)),
	}
	if r.Redundancy != nil {
		h[TextKeyRedundancy] = *r.Redundancy
	}
	if r.Diversity != nil {
		h[TextKeyDiversity] = *r.Diversity
	}
	if r.MostSimilar != nil {
		h[TextKeyMaxPairSimilarity] = r.MostSimilar.Similarity
	}
	return h
}

// Evaluate fails only when ctx is done; missing content is a result.
func (textEvaluator) Evaluate(ctx context.Context, trace *tracedata.TraceData, in Inputs) (Result, error) {
	res := &TextResult{Method: TextMethod, Agents: map[string]TextAgent{}}
	if trace == nil {
		res.Reason = "no trace"
		return res, nil
	}
	isMeasured := map[string]bool{}
	for i := range trace.Agents {
		isMeasured[trace.Agents[i].Name] = trace.Agents[i].Measured()
	}
	type contribution struct {
		steps int
		seen  map[string]bool
		texts []string
	}
	contrib := map[string]*contribution{}
	withoutContent := map[string]bool{}
	eligible := 0
	for i := range trace.Steps {
		s := &trace.Steps[i]
		if !textMessageStep(s) {
			continue
		}
		if m, known := isMeasured[s.Agent]; known && !m && !in.Config.IncludeVirtualNodes {
			continue
		}
		eligible++
		if s.Agent == "" {
			res.Content.StepsWithoutAgent++
			continue
		}
		out := strings.TrimSpace(strings.TrimSuffix(s.Output, textTruncatedMarker))
		if out == "" {
			res.Content.StepsWithoutContent++
			withoutContent[s.Agent] = true
			continue
		}
		res.Content.StepsWithContent++
		c := contrib[s.Agent]
		if c == nil {
			c = &contribution{seen: map[string]bool{}}
			contrib[s.Agent] = c
		}
		c.steps++
		if !c.seen[out] {
			c.seen[out] = true
			c.texts = append(c.texts, out)
		}
	}

	names := make([]string, 0, len(contrib))
	for name := range contrib {
		names = append(names, name)
	}
	slices.Sort(names)
	for name := range withoutContent {
		if contrib[name] == nil {
			res.AgentsWithoutContent = append(res.AgentsWithoutContent, name)
		}
	}
	slices.Sort(res.AgentsWithoutContent)

	docs := make([][]string, len(names))
	for i, name := range names {
		c := contrib[name]
		joined := strings.Join(c.texts, "\n")
		docs[i] = textTokens(joined)
		res.Agents[name] = TextAgent{
			Steps: c.steps, Messages: len(c.texts), Chars: utf8.RuneCountInString(joined),
			Terms: len(docs[i]), Excerpt: textExcerpt(joined, textExcerptRunes),
		}
	}

	switch {
	case eligible == 0:
		res.Reason = "the trace has no agent-call or LLM steps"
		return res, nil
	case len(names) == 0:
		// Some instrumentations never put content on spans: the
		// OpenTelemetry JS openai instrumentation (0.21.0, run in the live
		// corpus's otel-genai-manual) sends it, when the variable is set,
		// as log records, which coordbench does not read.
		res.Reason = "no agent-call or LLM step of a named agent recorded output text (message content capture may be off: " +
			"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; or the instrumentation sends content as log records, not on spans)"
		return res, nil
	case len(names) == 1:
		res.Reason = fmt.Sprintf("only agent %q recorded output text; similarity needs two agents", names[0])
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	vecs := textTFIDF(docs)
	n := len(names)
	sums := make([]float64, n)
	var total float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			sim := textCosine(vecs[i], vecs[j])
			sums[i] += sim
			sums[j] += sim
			total += sim
			p := TextPair{Agents: [2]string{names[i], names[j]}, Similarity: sim}
			res.Pairs = append(res.Pairs, p)
			if res.MostSimilar == nil || sim > res.MostSimilar.Similarity {
				res.MostSimilar = &p
			}
		}
	}
	for i, name := range names {
		a := res.Agents[name]
		r := sums[i] / float64(n-1)
		a.Redundancy = &r
		res.Agents[name] = a
	}
	red := total / float64(n*(n-1)/2)
	div := 1 - red
	res.Available, res.Redundancy, res.Diversity = true, &red, &div
	return res, nil
}

// textMessageStep reports whether a step carries an agent's message: an
// agent call, or an LLM call (a TOOL step with a model or a chat span name).
func textMessageStep(s *tracedata.Step) bool {
	switch s.CallType {
	case tracedata.CallAgent:
		return true
	case tracedata.CallTool:
		return s.Model != "" || s.Name == "chat" || strings.HasPrefix(s.Name, "chat ")
	}
	return false
}

// textTokens lowercases s and returns its runs of two or more word
// characters (letters, numbers, underscore), which is scikit-learn's
// default token_pattern (?u)\b\w\w+\b.
func textTokens(s string) []string {
	var tokens []string
	for f := range strings.FieldsFuncSeq(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '_'
	}) {
		if utf8.RuneCountInString(f) >= 2 {
			tokens = append(tokens, f)
		}
	}
	return tokens
}

// textTerm is one non-zero weight of a sparse vector.
type textTerm struct {
	idx int
	w   float64
}

// textTFIDF returns the l2-normalised TF-IDF vector of each document, as
// sparse vectors sorted by term index (terms indexed in sorted order), so
// every sum runs in one fixed order and results are deterministic to the
// bit. tf is the raw count; idf = ln((1+n)/(1+df)) + 1 (smooth idf). A
// document without terms gets an empty vector.
func textTFIDF(docs [][]string) [][]textTerm {
	df := map[string]int{}
	for _, d := range docs {
		seen := map[string]bool{}
		for _, t := range d {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	vocab := make([]string, 0, len(df))
	for t := range df {
		vocab = append(vocab, t)
	}
	slices.Sort(vocab)
	index := make(map[string]int, len(vocab))
	for i, t := range vocab {
		index[t] = i
	}
	n := float64(len(docs))
	vecs := make([][]textTerm, len(docs))
	for k, d := range docs {
		counts := map[int]int{}
		for _, t := range d {
			counts[index[t]]++
		}
		v := make([]textTerm, 0, len(counts))
		for i, c := range counts {
			idf := math.Log((1+n)/(1+float64(df[vocab[i]]))) + 1
			v = append(v, textTerm{i, float64(c) * idf})
		}
		slices.SortFunc(v, func(a, b textTerm) int { return cmp.Compare(a.idx, b.idx) })
		var sq float64
		for _, x := range v {
			sq += x.w * x.w
		}
		if norm := math.Sqrt(sq); norm > 0 {
			for i := range v {
				v[i].w /= norm
			}
		}
		vecs[k] = v
	}
	return vecs
}

// textCosine is the dot product of two normalised sparse vectors, clamped
// to [0, 1] against rounding (weights are never negative).
func textCosine(a, b []textTerm) float64 {
	var dot float64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].idx < b[j].idx:
			i++
		case a[i].idx > b[j].idx:
			j++
		default:
			dot += a[i].w * b[j].w
			i++
			j++
		}
	}
	return min(max(dot, 0), 1)
}

// textExcerpt returns the first n runes of s, marked when cut.
func textExcerpt(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
