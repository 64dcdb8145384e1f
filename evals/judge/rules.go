package judge

// The rule-based judge answers when the LLM cannot: no key, an API error, a
// timeout, or an answer that fails the schema twice. It is deterministic and
// its score is a documented sum (docs/judge.md), so a rule-based verdict can
// be checked by hand and compared across runs; it reads the same inputs the
// LLM gets: the trace, the graph evaluator's label and findings, the latency
// evaluator's critical path (evidence only, never a score term: latencies
// compare only within one run), and the task outcome.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/tracedata"
)

// The score terms. The verdict's score is the sum of the terms that apply,
// clamped to [0,1].
const (
	// ruleNeutralStart is the start when the outcome is unknown: neither a
	// pass nor a fail.
	ruleNeutralStart = 0.5
	// Graph labels: a hub every path runs through, one agent in most
	// calls, or few links between agents are coordination weaknesses even
	// when the task succeeds.
	ruleBottleneck      = -0.15
	ruleOverCentralized = -0.10
	ruleSparse          = -0.05
	// ruleIsolatedLabel applies when the graph evaluator reports an
	// isolated agent that the trace shows took some part (it only talked to
	// the assessor or a virtual node); agents that took no part at all are
	// counted by ruleAbsentEach instead, so nothing is counted twice.
	ruleIsolatedLabel = -0.10
	// ruleInsufficientEvidence applies where the request named the
	// participants (an assessment run) and the graph evaluator could give
	// the trace no shape for lack of evidence. Participants export their
	// own spans, so a participant could otherwise trade a costly verdict
	// for none: stop exporting, or emit spans no rule can read or that make
	// its service look like several agents. Withheld evidence costs what the
	// worst shape verdict costs, so hiding never pays. Offline (no
	// participants named) there is no one to game it, and it costs nothing.
	ruleInsufficientEvidence = min(ruleBottleneck, ruleOverCentralized, ruleSparse, ruleIsolatedLabel)
	ruleAbsentEach           = -0.10
	ruleAbsentMax            = -0.30
	// ruleFailedCalls is multiplied by the share of agent calls that failed.
	ruleFailedCalls = -0.30
	// ruleNoInteractions applies when no agent called another: nothing was
	// coordinated, or nothing of it was observed.
	ruleNoInteractions = -0.30
	// ruleCoverage is multiplied by the share of calls not observed from
	// both sides: the less was seen, the less the verdict is worth.
	ruleCoverage = -0.10
	// ruleRepetitionEach applies per message an agent sent the same callee
	// ruleRepeatAtLeast times or more.
	ruleRepetitionEach = -0.05
	ruleRepetitionMax  = -0.10
	ruleRepeatAtLeast  = 3
	// ruleExamples bounds the examples quoted as evidence.
	ruleExamples = 3
)

// The coordination_quality thresholds on the score.
const (
	judgeQualityExcellent = 0.85
	judgeQualityGood      = 0.65
	judgeQualityFair      = 0.40
)

// judgeQualityFor maps a score to coordination_quality.
func judgeQualityFor(score float64) string {
	switch {
	case score >= judgeQualityExcellent:
		return "excellent"
	case score >= judgeQualityGood:
		return "good"
	case score >= judgeQualityFair:
		return "fair"
	}
	return "poor"
}

// ruleVerdict is the rule-based judge's answer.
type ruleVerdict struct {
	Score        float64
	Quality      string
	Reasoning    string
	Strengths    []string
	Weaknesses   []string
	FailureModes []FailureMode
	Adjustments  []ScoreAdjustment
}

// ruleJudge scores the trace by the rules above. The first adjustment is the
// start (the outcome's score, or the neutral start); the rest are penalties.
func ruleJudge(trace *tracedata.TraceData, in evals.Inputs) ruleVerdict {
	v := ruleVerdict{Strengths: []string{}, Weaknesses: []string{}, FailureModes: []FailureMode{}}
	add := func(rule string, delta float64, detail string) {
		v.Adjustments = append(v.Adjustments, ScoreAdjustment{Rule: rule, Delta: judgeRound4(delta), Detail: detail})
	}
	fm := func(mode, evidence string) { v.FailureModes = append(v.FailureModes, FailureMode{mode, evidence}) }

	// Start: the outcome.
	o := in.Outcome
	switch {
	case o == nil:
		add("outcome", ruleNeutralStart, "task outcome unknown: neutral start")
		v.Weaknesses = append(v.Weaknesses, "the task outcome is unknown, so the score rests on the coordination alone")
	default:
		start := judgeClamp01(o.Score)
		if o.Success {
			add("outcome", start, "task succeeded: start at the outcome score")
			v.Strengths = append(v.Strengths, judgeWithSummary(fmt.Sprintf("the task succeeded (outcome score %.2f)", start), o.Summary))
		} else {
			add("outcome", start, "task failed: start at the outcome score")
			v.Weaknesses = append(v.Weaknesses, judgeWithSummary(fmt.Sprintf("the task failed (outcome score %.2f)", start), o.Summary))
		}
	}

	// The graph evaluator's label.
	g := judgeReadGraph(in.Prior)
	switch {
	case !g.Present:
		v.Weaknesses = append(v.Weaknesses, "no graph result: the shape of the collaboration was not scored")
	case g.Label == "healthy":
		s := "a healthy spread of interactions (graph label healthy"
		if g.HasDensity {
			s += fmt.Sprintf(", density %.2f", g.Density)
		}
		v.Strengths = append(v.Strengths, s+")")
	case g.Label == "bottleneck":
		add("bottleneck", ruleBottleneck, "the graph evaluator labels the trace bottleneck")
		v.Weaknesses = append(v.Weaknesses, judgeWithEvidence("one agent is a bottleneck most paths run through", g.matching("bottleneck", "betweenness")))
	case g.Label == "over_centralized":
		add("over_centralized", ruleOverCentralized, "the graph evaluator labels the trace over_centralized")
		v.Weaknesses = append(v.Weaknesses, judgeWithEvidence("one agent takes part in most interactions", g.matching("central")))
	case g.Label == "sparse":
		add("sparse", ruleSparse, "the graph evaluator labels the trace sparse")
		v.Weaknesses = append(v.Weaknesses, judgeWithEvidence("few of the possible links between agents were used", g.matching("sparse", "density")))
	case g.Label == evals.LabelInsufficientEvidence:
		v.Weaknesses = append(v.Weaknesses, "the trace holds too little evidence for a verdict on the shape of the collaboration (graph label insufficient_evidence)")
		if len(in.Participants) > 0 {
			add("insufficient_evidence", ruleInsufficientEvidence,
				"the participants' spans could not show the shape of their collaboration: withheld evidence costs what the worst shape verdict costs")
		}
	}

	// Calls between agents.
	calls, failedCalls := 0, 0
	involved := map[string]bool{}
	for _, it := range trace.Interactions {
		calls += it.Count
		failedCalls += it.Errors
		if it.Count > 0 {
			involved[it.From], involved[it.To] = true, true
		}
	}
	switch {
	case calls == 0:
		add("no_interactions", ruleNoInteractions, "no agent called another")
		v.Weaknesses = append(v.Weaknesses, "no call between agents was observed")
	case failedCalls > 0:
		share := float64(failedCalls) / float64(calls)
		add("failed_calls", ruleFailedCalls*share, fmt.Sprintf("%d of %d agent calls failed", failedCalls, calls))
		ev := ruleFailedCallEvidence(trace)
		v.Weaknesses = append(v.Weaknesses, judgeWithEvidence(fmt.Sprintf("%d of %d agent calls failed", failedCalls, calls), ev))
		fm(ModePrematureTermination, fmt.Sprintf("%d of %d agent calls failed and returned no result: %s",
			failedCalls, calls, strings.Join(ev, "; ")))
	default:
		v.Strengths = append(v.Strengths, fmt.Sprintf("all %d agent calls succeeded", calls))
	}

	// Agents that took no part.
	absent := ruleAbsentAgents(trace, in.Participants, involved)
	if len(absent) > 0 {
		delta := max(ruleAbsentEach*float64(len(absent)), ruleAbsentMax)
		add("absent_agents", delta, fmt.Sprintf("%d agent(s) took no part: %s", len(absent), strings.Join(absent, ", ")))
		v.Weaknesses = append(v.Weaknesses, fmt.Sprintf("%s took no part", strings.Join(absent, ", ")))
		for _, name := range absent {
			if a := trace.Agent(name); a == nil {
				fm(ModeInfoWithholding, fmt.Sprintf("%s was named as a participant but has no span and no call to or from it", name))
			} else {
				fm(ModeInfoWithholding, fmt.Sprintf("%s has no step and no call to or from it", name))
			}
		}
	} else if g.Label == "isolated" {
		ev := g.matching("isolat", "degree")
		add("isolated", ruleIsolatedLabel, "the graph evaluator reports an isolated agent")
		v.Weaknesses = append(v.Weaknesses, judgeWithEvidence("an agent had no interaction with the other agents", ev))
		evidence := "the graph evaluator labels the trace isolated"
		if len(ev) > 0 {
			evidence += ": " + strings.Join(ev, "; ")
		}
		fm(ModeInfoWithholding, evidence)
	} else if n := ruleCountMeasured(trace, in.Participants); n >= 2 {
		v.Strengths = append(v.Strengths, fmt.Sprintf("all %d agents took part", n))
	}

	// The same message sent again and again.
	reps := ruleRepetitions(trace)
	if len(reps) > 0 {
		delta := max(ruleRepetitionEach*float64(len(reps)), ruleRepetitionMax)
		add("repetition", delta, fmt.Sprintf("%d message(s) sent %d or more times", len(reps), ruleRepeatAtLeast))
		for _, r := range reps {
			v.Weaknesses = append(v.Weaknesses, r)
			fm(ModeStepRepetition, r)
		}
	}

	// How much was observed.
	if c := trace.Coverage; calls > 0 {
		if c.Complete < 1 {
			add("coverage", ruleCoverage*(1-judgeClamp01(c.Complete)),
				fmt.Sprintf("%.0f%% of calls observed from both sides", 100*judgeClamp01(c.Complete)))
			v.Weaknesses = append(v.Weaknesses, fmt.Sprintf(
				"only %.0f%% of the %d calls were observed from both sides (client_only=%d server_only=%d extension_only=%d)",
				100*judgeClamp01(c.Complete), c.Interactions, c.ClientOnly, c.ServerOnly, c.ExtensionOnly))
		} else {
			v.Strengths = append(v.Strengths, "every call was observed from both sides")
		}
	}

	// A failed task where every call succeeded: the answer went out
	// unchecked.
	if o != nil && !o.Success && calls > 0 && failedCalls == 0 {
		evidence := "the task failed although every agent call succeeded: the result went out without a check that caught the error"
		if o.Summary != "" {
			evidence += ": " + judgeTruncate(o.Summary, 300)
		}
		fm(ModeNoVerification, evidence)
	}

	// An agent the others waited on: reported, not scored.
	if w := ruleLatencyEvidence(judgeReadLatency(in.Prior)); w != "" {
		v.Weaknesses = append(v.Weaknesses, w)
	}

	// LLM and tool calls that failed: reported, not scored (their effect
	// shows in the outcome).
	if tf := ruleFailedToolSteps(trace); len(tf) > 0 {
		v.Weaknesses = append(v.Weaknesses, judgeWithEvidence(fmt.Sprintf("%d LLM or tool call(s) failed", len(tf)), judgeFirstN(tf, ruleExamples)))
	}

	sum := 0.0
	terms := make([]string, len(v.Adjustments))
	for i, a := range v.Adjustments {
		sum += a.Delta
		if i == 0 {
			terms[i] = fmt.Sprintf("start %.2f (%s)", a.Delta, a.Detail)
		} else {
			// The exact term, not rounded to two places, so the
			// reasoning adds up.
			terms[i] = strconv.FormatFloat(a.Delta, 'f', -1, 64) + " " + a.Detail
		}
	}
	v.Score = judgeRound4(judgeClamp01(sum))
	v.Quality = judgeQualityFor(v.Score)
	v.Reasoning = fmt.Sprintf("Rule-based verdict: %s; score %.2f (%s).", strings.Join(terms, "; "), v.Score, v.Quality)
	return v
}

// ruleAbsentAgents lists, sorted, the agents that took no part: participants
// named by the request, and measured agents of the trace, with no call to or
// from them and no step of their own.
func ruleAbsentAgents(trace *tracedata.TraceData, participants []string, involved map[string]bool) []string {
	var out []string
	for _, name := range ruleCandidateAgents(trace, participants) {
		if involved[name] {
			continue
		}
		if a := trace.Agent(name); a != nil && a.Steps > 0 {
			continue
		}
		out = append(out, name)
	}
	return out
}

// ruleCandidateAgents are the agents expected to take part: the request's
// participants and the trace's measured agents, sorted.
func ruleCandidateAgents(trace *tracedata.TraceData, participants []string) []string {
	names := slices.Clone(participants)
	for i := range trace.Agents {
		if trace.Agents[i].Measured() {
			names = append(names, trace.Agents[i].Name)
		}
	}
	return judgeSortedUnique(names)
}

func ruleCountMeasured(trace *tracedata.TraceData, participants []string) int {
	return len(ruleCandidateAgents(trace, participants))
}

// ruleFailedCallEvidence describes the first failed agent calls of the trace,
// or, when no step carries the error, the interactions with errors.
func ruleFailedCallEvidence(trace *tracedata.TraceData) []string {
	var ev []string
	for i := range trace.Steps {
		s := &trace.Steps[i]
		if s.CallType != tracedata.CallAgent || !s.Failed() {
			continue
		}
		if len(ev) == ruleExamples {
			break
		}
		ev = append(ev, fmt.Sprintf("%s (step %s) failed after %.0fms: %s", judgeStepWho(s), s.StepID, judgeStepLatency(s),
			judgeTruncate(s.Error, 200)))
	}
	if len(ev) > 0 {
		return ev
	}
	for _, it := range trace.Interactions {
		if it.Errors > 0 && len(ev) < ruleExamples {
			ev = append(ev, fmt.Sprintf("%s -> %s: %d of %d calls failed", it.From, it.To, it.Errors, it.Count))
		}
	}
	return ev
}

// ruleFailedToolSteps describes failed steps other than agent calls.
func ruleFailedToolSteps(trace *tracedata.TraceData) []string {
	var out []string
	for i := range trace.Steps {
		s := &trace.Steps[i]
		if s.CallType != tracedata.CallAgent && s.Failed() {
			out = append(out, fmt.Sprintf("%s %q by %s: %s", s.CallType, s.Name, cmp.Or(s.Agent, "?"), judgeTruncate(s.Error, 200)))
		}
	}
	return out
}

// ruleRepetitions finds agent calls that carried the same message from the same
// caller to the same callee at least ruleRepeatAtLeast times, in order of
// first occurrence.
func ruleRepetitions(trace *tracedata.TraceData) []string {
	type key struct{ from, to, input string }
	counts := map[key]int{}
	var order []key
	for i := range trace.Steps {
		s := &trace.Steps[i]
		if s.CallType != tracedata.CallAgent || strings.TrimSpace(s.Input) == "" {
			continue
		}
		k := key{s.Caller, s.Agent, s.Input}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	var out []string
	for _, k := range order {
		if n := counts[k]; n >= ruleRepeatAtLeast {
			out = append(out, fmt.Sprintf("%s sent %s the same message %d times: %q",
				cmp.Or(k.from, "?"), cmp.Or(k.to, "?"), n, judgeTruncate(k.input, 120)))
		}
	}
	return out
}

// judgeGraphView is what the rule-based judge reads of the graph evaluator's
// result. The graph result's Go type is not known here: it is read through
// its JSON form, and every field may be absent.
type judgeGraphView struct {
	Present    bool
	Label      string // normalised: healthy, sparse, bottleneck, over_centralized, isolated, ...
	Findings   []string
	Density    float64
	HasDensity bool
}

// judgeReadGraph reads prior["graph"]: "label", "findings" (strings or
// objects) and the density under "graph", "metrics" or the top level.
func judgeReadGraph(prior map[string]evals.Result) judgeGraphView {
	r, ok := prior["graph"]
	if !ok || r == nil {
		return judgeGraphView{}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return judgeGraphView{}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return judgeGraphView{}
	}
	g := judgeGraphView{Present: true}
	if s, ok := m["label"].(string); ok {
		g.Label = judgeNormalizeLabel(s)
	}
	switch f := m["findings"].(type) {
	case []any:
		for _, x := range f {
			if t := judgeFindingText(x); t != "" {
				g.Findings = append(g.Findings, t)
			}
		}
	case map[string]any:
		for _, k := range judgeSortedKeys(f) {
			if t := judgeFindingText(f[k]); t != "" {
				g.Findings = append(g.Findings, k+": "+t)
			}
		}
	}
	for _, src := range []any{m["graph"], m["metrics"], m} {
		if sub, ok := src.(map[string]any); ok {
			if d, ok := judgeNumber(sub["density"]); ok {
				g.Density, g.HasDensity = d, true
				break
			}
		}
	}
	return g
}

// matching returns the findings that mention any of words, at most
// ruleExamples.
func (g judgeGraphView) matching(words ...string) []string {
	var out []string
	for _, f := range g.Findings {
		lf := strings.ToLower(f)
		for _, w := range words {
			if strings.Contains(lf, w) {
				out = append(out, f)
				break
			}
		}
		if len(out) == ruleExamples {
			break
		}
	}
	return out
}

// judgeNormalizeLabel accepts "over-centralized", "Over Centralised" and the like.
func judgeNormalizeLabel(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer("-", "_", " ", "_").Replace(s)
	if s == "over_centralised" {
		s = "over_centralized"
	}
	return s
}

// judgeFindingText renders one finding: a string as is; an object (the
// graph evaluator's {kind, agents, values, detail}) as "kind [agents]:
// detail"; anything else as JSON.
func judgeFindingText(x any) string {
	var s string
	switch f := x.(type) {
	case nil:
		return ""
	case string:
		s = f
	case map[string]any:
		kind := judgeFirstString(f, "kind", "type", "finding", "name")
		msg := judgeFirstString(f, "detail", "message", "description", "summary", "text", "explanation")
		who := judgeFindingAgents(f)
		switch {
		case kind == "" && msg == "" && who == "":
			b, _ := json.Marshal(f)
			s = string(b)
		default:
			s = kind
			if who != "" {
				s = strings.TrimSpace(s + " [" + who + "]")
			}
			if msg != "" {
				if s != "" {
					s += ": "
				}
				s += msg
			}
		}
	default:
		b, _ := json.Marshal(f)
		s = string(b)
	}
	return judgeTruncate(strings.TrimSpace(s), 200)
}

// judgeFindingAgents names the agents of a finding object, with their
// measure when it carries one per agent ("coder=0.67").
func judgeFindingAgents(f map[string]any) string {
	var names []string
	if a := judgeFirstString(f, "agent", "node"); a != "" {
		names = append(names, a)
	}
	for _, k := range []string{"agents", "nodes"} {
		if list, ok := f[k].([]any); ok {
			for _, a := range list {
				if n, ok := a.(string); ok {
					names = append(names, n)
				}
			}
		}
	}
	vals, _ := f["values"].(map[string]any)
	for i, n := range names {
		if v, ok := vals[n].(float64); ok {
			names[i] = fmt.Sprintf("%s=%.2f", n, v)
		}
	}
	return strings.Join(names, ", ")
}

func judgeFirstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// judgeNumber reads a JSON number, or an object holding one under "value".
func judgeNumber(x any) (float64, bool) {
	switch n := x.(type) {
	case float64:
		return n, true
	case map[string]any:
		f, ok := n["value"].(float64)
		return f, ok
	}
	return 0, false
}

func judgeSortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func judgeWithSummary(s, summary string) string {
	if summary == "" {
		return s
	}
	return s + ": " + judgeTruncate(summary, 200)
}

func judgeWithEvidence(s string, ev []string) string {
	if len(ev) == 0 {
		return s
	}
	return s + " (" + strings.Join(ev, "; ") + ")"
}

func judgeFirstN(s []string, n int) []string { return s[:min(n, len(s))] }

func judgeClamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return min(max(x, 0), 1)
}

func judgeRound4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
