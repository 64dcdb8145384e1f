package report

import "github.com/coordbench/coordbench/internal/stats"

// Metric names of a repeats block besides the evaluators' headline numbers
// ("<evaluator>.<key>", e.g. "graph.density", "judge.overall_score").
const (
	RepeatMetricScore   = "outcome.score"
	RepeatMetricSuccess = "outcome.success" // 1 for a run that succeeded, else 0
)

// TaskRepeats summarises the runs of one task (config.repeats): the green
// agent runs each task N times and summarises every metric across them.
type TaskRepeats struct {
	// Runs is how many runs the request asked for; Ran how many ran (the
	// assessment deadline may leave none for the last ones). Runs that did
	// not run are left out of every summary (they still count 0 in the
	// assessment's score).
	Runs int `json:"runs"`
	Ran  int `json:"ran"`
	// TraceIDs are the runs' traces in run order, "" for a run that did not
	// run; Result.Tasks holds the runs in the same order.
	TraceIDs []string `json:"trace_ids"`
	// Labels counts the graph evaluator's label over the runs.
	Labels map[string]int `json:"labels,omitempty"`
	// Metrics summarises, per metric, the values of the runs that have it:
	// outcome.score and outcome.success, and every evaluator's headline
	// numbers as "<evaluator>.<key>".
	Metrics map[string]stats.Summary `json:"metrics"`
	// TooFew is true when fewer than stats.MinSamples runs ran: report the
	// numbers, conclude nothing from them. Note says so in words.
	TooFew bool   `json:"too_few"`
	Note   string `json:"note,omitempty"`
}
