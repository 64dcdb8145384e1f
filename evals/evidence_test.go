package evals

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// evidenceTrace is a fan-out task as assembly gives it: the assessor
// (green) calls the coordinator, which calls two reviewers. sides sets how
// each call was observed, by "from->to".
func evidenceTrace(sides map[string]tracedata.Interaction) *tracedata.TraceData {
	tr := &tracedata.TraceData{Agents: []tracedata.Agent{
		{Name: "coordinator", IdentifiedBy: tracedata.IdentityAgentName},
		{Name: "green", IdentifiedBy: tracedata.IdentityServiceName, Role: tracedata.RoleAssessor},
		{Name: "reviewer-1", IdentifiedBy: tracedata.IdentityAgentName},
		{Name: "reviewer-2", IdentifiedBy: tracedata.IdentityAgentName},
	}}
	for _, k := range []string{"coordinator->reviewer-1", "coordinator->reviewer-2", "green->coordinator"} {
		it, ok := sides[k]
		if !ok {
			it = tracedata.Interaction{Count: 1, BothSides: 1}
		}
		it.From, it.To, _ = strings.Cut(k, "->")
		tr.Interactions = append(tr.Interactions, it)
	}
	return tr
}

var evidenceParticipants = []string{"coordinator", "reviewer-1", "reviewer-2"}

func evaluateEvidence(t *testing.T, tr *tracedata.TraceData, in Inputs) *GraphResult {
	t.Helper()
	if in.Participants == nil {
		in.Participants = evidenceParticipants
	}
	res, err := EvaluateGraph(context.Background(), tr, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Evidence == nil {
		t.Fatal("no evidence in the graph result")
	}
	// Without the reasons, every test's trace gets the same result but
	// for them: the level, the label and what it replaced.
	in.Config.WithoutReasons = true
	quiet, err := EvaluateGraph(context.Background(), tr, in)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Evidence.Reasons != nil {
		t.Errorf("WithoutReasons wrote reasons %q", quiet.Evidence.Reasons)
	}
	withReasons := *res
	ev := *res.Evidence
	ev.Reasons, withReasons.Evidence = nil, &ev
	if !reflect.DeepEqual(quiet, &withReasons) {
		t.Errorf("WithoutReasons: %+v (evidence %+v); with the reasons left out %+v (evidence %+v)", quiet, quiet.Evidence, &withReasons, &ev)
	}
	return res
}

func TestEvidenceCompleteKeepsTheLabel(t *testing.T) {
	res := evaluateEvidence(t, evidenceTrace(nil), Inputs{Collection: &Collection{Settled: true}})
	if res.Evidence.Level != EvidenceComplete || len(res.Evidence.Reasons) != 0 || res.Label == LabelInsufficientEvidence {
		t.Fatalf("evidence %+v, label %s: want complete and the graph's label", res.Evidence, res.Label)
	}
}

// TestEvidenceParticipantExportedNothing is the case: the
// coordinator's spans never came, so the assessor's call is seen from its
// side only and the reviewers appear to take no part. The graph alone
// would call that isolated; the verdict is insufficient_evidence, and says
// why.
func TestEvidenceParticipantExportedNothing(t *testing.T) {
	tr := evidenceTrace(nil)
	tr.Interactions = []tracedata.Interaction{{From: "green", To: "coordinator", Count: 2, ClientOnly: 2}}
	tr.Agents = slices.DeleteFunc(tr.Agents, func(a tracedata.Agent) bool { return strings.HasPrefix(a.Name, "reviewer") })
	res := evaluateEvidence(t, tr, Inputs{})
	ev := res.Evidence
	if res.Label != LabelInsufficientEvidence || ev.Level != EvidenceInsufficient || ev.GraphLabel != LabelIsolated {
		t.Fatalf("label %s, evidence %+v: want insufficient_evidence replacing isolated", res.Label, ev)
	}
	if len(ev.Reasons) != 1 || !strings.Contains(ev.Reasons[0], "called coordinator 2 times") {
		t.Errorf("reasons %q: want the unanswered calls to coordinator named", ev.Reasons)
	}
}

func TestEvidencePartial(t *testing.T) {
	cases := map[string]struct {
		tr     *tracedata.TraceData
		in     Inputs
		reason string
	}{
		"a reviewer exported nothing": {
			tr:     evidenceTrace(map[string]tracedata.Interaction{"coordinator->reviewer-2": {Count: 1, ClientOnly: 1}}),
			reason: "coordinator -> reviewer-2: 1 call seen from the caller only",
		},
		"the coordinator's caller side is missing": {
			tr:     evidenceTrace(map[string]tracedata.Interaction{"coordinator->reviewer-1": {Count: 2, ServerOnly: 2}}),
			reason: "coordinator -> reviewer-1: 2 calls seen from the callee only",
		},
		"one of two assessor calls unanswered": {
			tr:     evidenceTrace(map[string]tracedata.Interaction{"green->coordinator": {Count: 2, BothSides: 1, ClientOnly: 1}}),
			reason: "1 of the assessor's 2 calls to coordinator were not answered",
		},
		"the wait ended at its maximum": {
			tr:     evidenceTrace(nil),
			in:     Inputs{Collection: &Collection{Settled: false, Unanswered: []string{"coordinator -> reviewer-2"}, MaxWaitMS: 15000}},
			reason: "maximum wait of 15000 ms with 1 awaited call unanswered (coordinator -> reviewer-2)",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			res := evaluateEvidence(t, c.tr, c.in)
			ev := res.Evidence
			if ev.Level != EvidencePartial || res.Label == LabelInsufficientEvidence || ev.GraphLabel != "" {
				t.Fatalf("label %s, evidence %+v: want partial, the label kept", res.Label, ev)
			}
			if len(ev.Reasons) != 1 || !strings.Contains(ev.Reasons[0], c.reason) {
				t.Errorf("reasons %q, want one containing %q", ev.Reasons, c.reason)
			}
		})
	}
}

func TestEvidenceAssessorReachedNobody(t *testing.T) {
	tr := &tracedata.TraceData{Agents: []tracedata.Agent{{Name: "green", Role: tracedata.RoleAssessor}}}
	res := evaluateEvidence(t, tr, Inputs{})
	if res.Label != LabelInsufficientEvidence || res.Evidence.GraphLabel != LabelIsolated {
		t.Fatalf("label %s, evidence %+v: want insufficient_evidence", res.Label, res.Evidence)
	}
}

// TestEvidenceNotWeighedWithoutObservation: hand-made traces (no
// observation classes) and traces without an assessor (offline files) keep
// their labels.
func TestEvidenceNotWeighedWithoutObservation(t *testing.T) {
	tr := &tracedata.TraceData{
		Agents:       []tracedata.Agent{{Name: "a"}, {Name: "b"}},
		Interactions: []tracedata.Interaction{{From: "a", To: "b", Count: 3}},
	}
	res := evaluateEvidence(t, tr, Inputs{Participants: []string{"a", "b", "c"}})
	if res.Evidence.Level != EvidenceComplete || res.Label != LabelIsolated {
		t.Fatalf("label %s, evidence %+v: want isolated (c took no part), complete", res.Label, res.Evidence)
	}
	res = evaluateEvidence(t, &tracedata.TraceData{}, Inputs{Participants: []string{"a"}})
	// One participant, no calls: the graph alone says single_agent
	// (docs/evaluators.md); without an assessor the evidence rule leaves it.
	if res.Label != LabelSingleAgent {
		t.Fatalf("label %s without an assessor: want single_agent", res.Label)
	}
}

// TestEvidenceFromUnreadSpans: spans assembly could not read weaken the
// verdict, and a trace that is no evidence (no readable interaction) gets
// no confident label, with or without an assessor.
func TestEvidenceFromUnreadSpans(t *testing.T) {
	tr := &tracedata.TraceData{
		Agents:       []tracedata.Agent{{Name: "a"}, {Name: "b"}},
		Interactions: []tracedata.Interaction{{From: "a", To: "b", Count: 1, InProcess: 1}},
		Coverage:     tracedata.Coverage{Interactions: 1, InProcess: 1, Complete: 1, UnreadAgentSpans: 3},
	}
	res := evaluateEvidence(t, tr, Inputs{})
	if res.Evidence.Level != EvidencePartial || res.Label == LabelInsufficientEvidence ||
		!strings.Contains(strings.Join(res.Evidence.Reasons, "\n"), "3 spans that look like an agent's work") {
		t.Errorf("unread spans: label %s, evidence %+v", res.Label, res.Evidence)
	}
	empty := &tracedata.TraceData{
		Agents:   []tracedata.Agent{{Name: "svc"}},
		Coverage: tracedata.Coverage{NoEvidence: true, UnreadAgentSpans: 5},
	}
	res = evaluateEvidence(t, empty, Inputs{})
	if res.Label != LabelInsufficientEvidence || res.Evidence.Level != EvidenceInsufficient {
		t.Errorf("no evidence: label %s, evidence %+v; want insufficient_evidence", res.Label, res.Evidence)
	}
}

// TestEvidenceFromUnreadNamespaces: spans of an agent namespace no rule
// read make a whole-looking graph partial, the reason naming the namespace
// and the count; when no agent was named by a span of its own, nothing of
// the team was read and the verdict is insufficient_evidence.
func TestEvidenceFromUnreadNamespaces(t *testing.T) {
	tr := evidenceTrace(nil)
	tr.Coverage.UnreadNamespaces = map[string]int{"ai.*": 14, "mastra.*": 1}
	res := evaluateEvidence(t, tr, Inputs{})
	reasons := strings.Join(res.Evidence.Reasons, "\n")
	if res.Evidence.Level != EvidencePartial || res.Label == LabelInsufficientEvidence ||
		!strings.Contains(reasons, "14 spans carry `ai.*` attributes no rule reads") ||
		!strings.Contains(reasons, "1 span carries `mastra.*` attributes no rule reads") {
		t.Errorf("unread namespaces: label %s, evidence %+v", res.Label, res.Evidence)
	}

	// The same edges, but every agent only a service: the team's own
	// spans were all unread.
	byService := evidenceTrace(nil)
	for i := range byService.Agents {
		byService.Agents[i].IdentifiedBy = tracedata.IdentityServiceName
	}
	byService.Coverage.UnreadNamespaces = map[string]int{"ai.*": 14}
	res = evaluateEvidence(t, byService, Inputs{})
	if res.Label != LabelInsufficientEvidence || res.Evidence.Level != EvidenceInsufficient ||
		!strings.Contains(strings.Join(res.Evidence.Reasons, "\n"), "no agent of the trace was named by a span of its own") {
		t.Errorf("team unread: label %s, evidence %+v", res.Label, res.Evidence)
	}
	// Without unread namespaces the same service-named graph stands.
	byService.Coverage.UnreadNamespaces = nil
	if res = evaluateEvidence(t, byService, Inputs{}); res.Evidence.Level != EvidenceComplete {
		t.Errorf("service-named graph, all read: evidence %+v", res.Evidence)
	}
}

// TestEvidenceSplitConversation: a trace that is a fragment of a
// conversation whose agents ran as separate traces is no evidence when it
// shows no call between agents, and partial when it shows some.
func TestEvidenceSplitConversation(t *testing.T) {
	split := &SplitConversation{Conversation: "net", Traces: 2, Agents: []string{"researcher", "writer"}, Missing: []string{"writer"}}
	lone := &tracedata.TraceData{
		Agents:   []tracedata.Agent{{Name: "researcher", IdentifiedBy: tracedata.IdentityAgentName}},
		Coverage: tracedata.Coverage{Complete: 1},
	}
	res := evaluateEvidence(t, lone, Inputs{Participants: []string{}, Collection: &Collection{Settled: true, Split: split}})
	if res.Label != LabelInsufficientEvidence || !strings.Contains(strings.Join(res.Evidence.Reasons, "\n"),
		`this trace is one of 2 traces of conversation "net", whose agents (researcher, writer) ran as separate traces (writer not in this one)`) {
		t.Errorf("lone fragment: label %s, evidence %+v", res.Label, res.Evidence)
	}
	res = evaluateEvidence(t, evidenceTrace(nil), Inputs{Collection: &Collection{Settled: true, Split: split}})
	if res.Evidence.Level != EvidencePartial {
		t.Errorf("fragment with calls: evidence %+v, want partial", res.Evidence)
	}
}

// TestEvidenceUnwiredAgents: agents that share the trace with no span
// saying how control reached them make the graph partial; and a trace
// that is a fragment (it begins with a call received from a caller it
// does not hold) is never complete.
func TestEvidenceUnwiredAgents(t *testing.T) {
	tr := evidenceTrace(nil)
	tr.Coverage.UnwiredAgents = 3
	res := evaluateEvidence(t, tr, Inputs{})
	if res.Evidence.Level != EvidencePartial || !strings.Contains(strings.Join(res.Evidence.Reasons, "\n"), "3 agents share the trace and no call") {
		t.Errorf("unwired: evidence %+v", res.Evidence)
	}
	tr = evidenceTrace(nil)
	tr.Coverage.Fragment = "the trace begins with span 1 \"handle\", a message consumed from a producer the trace does not hold"
	res = evaluateEvidence(t, tr, Inputs{})
	if res.Evidence.Level != EvidencePartial || !slices.Contains(res.Evidence.Reasons, tr.Coverage.Fragment) {
		t.Errorf("fragment: evidence %+v", res.Evidence)
	}
}

// TestEvidenceRefusedSpans: spans the span store refused (span
// admission) make a whole-looking trace partial, with the count.
func TestEvidenceRefusedSpans(t *testing.T) {
	res := evaluateEvidence(t, evidenceTrace(nil), Inputs{Collection: &Collection{Settled: true, RefusedSpans: 3}})
	ev := res.Evidence
	if ev.Level != EvidencePartial || res.Label == LabelInsufficientEvidence ||
		!slices.ContainsFunc(ev.Reasons, func(r string) bool { return strings.Contains(r, "refused 3 spans of this trace") }) {
		t.Fatalf("evidence %+v, label %s: want partial, naming the 3 refused spans", ev, res.Label)
	}
}

// TestEvidenceDetached: spans cut off from the trace's root when the wait
// ended (a collector that died holding the spans between them and the
// root) make the trace partial, with the count.
func TestEvidenceDetached(t *testing.T) {
	res := evaluateEvidence(t, evidenceTrace(nil), Inputs{Collection: &Collection{Settled: false, MaxWaitMS: 60000, Detached: 2}})
	ev := res.Evidence
	if ev.Level != EvidencePartial || res.Label == LabelInsufficientEvidence ||
		!slices.ContainsFunc(ev.Reasons, func(r string) bool { return strings.Contains(r, "2 spans cut off from the trace's root") }) {
		t.Fatalf("evidence %+v, label %s: want partial, naming the 2 spans cut off", ev, res.Label)
	}
}

// TestEvidenceSetAsideOutside: received spans set aside for lying outside
// the assessor's calls make a whole-looking trace partial; forged ones
// (counted elsewhere) do not enter Collection.
func TestEvidenceSetAsideOutside(t *testing.T) {
	res := evaluateEvidence(t, evidenceTrace(nil), Inputs{Collection: &Collection{Settled: true, SetAsideOutside: 2}})
	ev := res.Evidence
	if ev.Level != EvidencePartial || res.Label == LabelInsufficientEvidence ||
		!slices.ContainsFunc(ev.Reasons, func(r string) bool { return strings.Contains(r, "2 spans set aside, not counted") }) {
		t.Fatalf("evidence %+v, label %s: want partial, naming the 2 spans set aside", ev, res.Label)
	}
	if res := evaluateEvidence(t, evidenceTrace(nil), Inputs{Collection: &Collection{Settled: true}}); res.Evidence.Level != EvidenceComplete {
		t.Fatalf("nothing set aside: evidence %+v, want complete", res.Evidence)
	}
}
