package report

import (
	"strings"

	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/internal/textutil"
)

// writeLegend explains, one line each, the numbers the summary shows: the
// score, the judge's score, the coordination label and findings, and the
// coverage. Only the numbers present are explained.
func writeLegend(b *strings.Builder, r *Result) {
	var lines []string
	if r.Score != nil {
		maxScore := "100"
		if r.MaxScore != nil {
			maxScore = textutil.Number(*r.MaxScore)
		}
		lines = append(lines, "**Score**: the mean of the tasks' outcome scores (each 0 to 1, set by the scenario; a task "+
			"without an outcome counts 0), scaled to max_score "+maxScore+"; the pass rate is the share of tasks whose outcome passed.")
	}
	var judged, graphed bool
	for i := range r.Tasks {
		t := &r.Tasks[i]
		if j, ok := t.Evaluations[evalJudge].(*judge.Result); ok && j != nil {
			judged = true
		}
		if graphResult(t) != nil {
			graphed = true
		}
	}
	if judged {
		lines = append(lines, "**Judge**: the judge's overall score of a task's coordination, 0 to 1, from the LLM judge "+
			"or, without one, the rule-based judge (the reason in parentheses); it is reported beside the score and never changes it.")
	}
	if graphed {
		lines = append(lines, "**Coordination** and **Findings**: the findings are every rule of the graph evaluator that "+
			"holds of the agents' call graph (isolated, bottleneck, over_centralized, healthy_spread); the label is the first "+
			"of them in that order (healthy_spread gives healthy), sparse when none holds, so a finding other than the label may be listed too.")
	}
	if len(r.Tasks) > 0 {
		lines = append(lines, "**Coverage**: how many of the trace's interactions were seen from both sides (the caller's "+
			"and the callee's spans); one seen from one side only rests on that side's word, so the lower the share, the less the graph can be trusted.")
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## What the numbers mean\n\n")
	for _, l := range lines {
		b.WriteString("- " + l + "\n")
	}
	b.WriteString("\n")
}
