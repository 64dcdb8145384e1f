package report

import (
	"strings"
	"testing"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/tracedata"
)

// unreachedFixture is what `green run --participant agent=URL` returns when
// nothing listens at URL: the trace knows the participant by its address
// only (a virtual node), and the graph evaluator lists it as absent.
func unreachedFixture(cause string) *Result {
	score, maxScore, pass := 0.0, 100.0, 0.0
	return &Result{
		Schema: Schema, Domain: "coordination", Score: &score, MaxScore: &maxScore, PassRate: &pass,
		Inputs: []string{"agent=http://127.0.0.1:9010/"},
		Tasks: []TaskResult{{
			TaskID: "iclr2017-305", TraceID: "4584cec2410faaadfdcac2a6b6aaf9c7",
			Agents: []tracedata.Agent{
				{Name: "127.0.0.1:9010", IdentifiedBy: tracedata.IdentityServerAddr, Virtual: true, Steps: 1, Errors: 1},
				{Name: "coordbench-green", Role: tracedata.RoleAssessor, Steps: 1},
			},
			Interactions: []tracedata.Interaction{{From: "coordbench-green", To: "127.0.0.1:9010", Count: 1, Errors: 1, ClientOnly: 1}},
			Steps: []tracedata.Step{
				{StepID: "1", Name: "coordbench.task", Agent: "coordbench-green"},
				{StepID: "2", Name: "invoke_agent", Agent: "127.0.0.1:9010", Caller: "coordbench-green", Error: cause},
			},
			Coverage: tracedata.Coverage{Interactions: 1, ClientOnly: 1},
			Outcome:  &evals.Outcome{Summary: "expected accept; agent did not answer"},
			Evaluations: map[string]evals.Result{
				"graph": &evals.GraphResult{Label: "isolated", Nodes: []evals.GraphNode{
					{Name: "agent", Participant: true, NoAgent: true},
					{Name: "127.0.0.1:9010", Virtual: true},
				}},
			},
		}},
	}
}

// TestSummaryUnreachedParticipantOnce: a participant nobody could reach is
// one node of the graph, named by its role and labelled with its address,
// and one line with the full cause.
func TestSummaryUnreachedParticipantOnce(t *testing.T) {
	cause := `agent card at http://127.0.0.1:9010/.well-known/agent-card.json: card request failed: Get "http://127.0.0.1:9010/.well-known/agent-card.json": dial tcp 127.0.0.1:9010: connect: connection refused`
	md := Summary(unreachedFixture(cause))
	if want := "- Not reached: **agent** at 127.0.0.1:9010 — 1 call, 1 error: " + cause + "\n"; !strings.Contains(md, want) {
		t.Errorf("summary lacks %q:\n%s", want, md)
	}
	block := mermaidBlock(t, md)
	for _, want := range []string{
		`n_agent["agent (127.0.0.1:9010, not reached)"]`,
		`n_coordbench_green -->|"1 call, 1 error"| n_agent`,
		"class n_agent absent",
	} {
		if !strings.Contains(block, want) {
			t.Errorf("mermaid block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "n_127") || strings.Count(block, `["`) != 2 || strings.Contains(block, "virtual") {
		t.Errorf("the participant is drawn twice, or its address as a node of its own:\n%s", block)
	}
}

// TestSummaryLongCauseKeepsItsEnd: a cause too long to quote whole loses its
// middle, never its end.
func TestSummaryLongCauseKeepsItsEnd(t *testing.T) {
	cause := "call participant http://127.0.0.1:9010/: " + strings.Repeat("wrapped: ", 200) + "dial tcp 127.0.0.1:9010: connect: connection refused"
	md := Summary(unreachedFixture(cause))
	line := ""
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "- Not reached:") {
			line = l
		}
	}
	if !strings.HasSuffix(line, "dial tcp 127.0.0.1:9010: connect: connection refused") || !strings.Contains(line, "…[truncated]") ||
		len(line) > causeRunes+200 {
		t.Errorf("line (%d bytes): %q", len(line), line)
	}
}

// TestSummaryAbsentWithoutAddress: a participant absent from the trace that
// was never called is listed and drawn once, dashed; a reachable
// participant's address node (not absent) is left alone.
func TestSummaryAbsentWithoutAddress(t *testing.T) {
	r := unreachedFixture("refused")
	r.Inputs = []string{"agent=http://127.0.0.1:9010/", "reviewer=https://reviewer.example"}
	r.Tasks[0].Evaluations["graph"].(*evals.GraphResult).Nodes = append(r.Tasks[0].Evaluations["graph"].(*evals.GraphResult).Nodes,
		evals.GraphNode{Name: "reviewer", Participant: true, NoAgent: true})
	md := Summary(r)
	if !strings.Contains(md, "- Absent: **reviewer** took no part in the trace\n") {
		t.Errorf("summary lacks the absent reviewer:\n%s", md)
	}
	block := mermaidBlock(t, md)
	if !strings.Contains(block, `n_reviewer["reviewer"]`) || !strings.Contains(block, "class n_agent,n_reviewer absent") {
		t.Errorf("mermaid block:\n%s", block)
	}
	if got := participantAddrs(r.Inputs); got["reviewer"] != "reviewer.example:443" || got["agent"] != "127.0.0.1:9010" {
		t.Errorf("participantAddrs = %v", got)
	}
}

// TestSummaryExplainsItsNumbers: one line each for the score, the judge,
// the label and findings, and the coverage; a result without a score (an
// offline assessment) does not explain one.
func TestSummaryExplainsItsNumbers(t *testing.T) {
	md := Summary(summaryFixture())
	_, legend, ok := strings.Cut(md, "## What the numbers mean\n\n")
	if !ok {
		t.Fatalf("no explanation of the numbers:\n%s", md)
	}
	legend, _, _ = strings.Cut(legend, "\n\n")
	lines := strings.Split(legend, "\n")
	wants := []string{
		"- **Score**: the mean of the tasks' outcome scores (each 0 to 1",
		"- **Judge**: the judge's overall score",
		"- **Coordination** and **Findings**: ",
		"- **Coverage**: ",
	}
	if len(lines) != len(wants) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wants), legend)
	}
	for i, want := range wants {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], want)
		}
	}
	for _, want := range []string{"max_score 100", "never changes it", "the label is the first"} {
		if !strings.Contains(legend, want) {
			t.Errorf("explanation lacks %q:\n%s", want, legend)
		}
	}

	offline := summaryFixture()
	offline.Score, offline.MaxScore, offline.PassRate = nil, nil, nil
	md = Summary(offline)
	if strings.Contains(md, "**Score**") || !strings.Contains(md, "- **Coverage**: ") {
		t.Errorf("offline summary:\n%s", md)
	}
}
