package green

// Repeated runs (config.repeats, the PRD's repeatable-numbers requirement):
// the executor runs each task N times, each run a task result of its own in
// Result.Tasks, and summarises every metric of the task across its runs in
// Result.Repeats: mean, sample standard deviation, a 95% Student-t
// confidence interval, and a flag when there are too few runs to conclude
// from (internal/stats).

import (
	"fmt"
	"math"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/stats"
)

// Metric names of a repeats block besides the evaluators' headline numbers
// ("<evaluator>.<key>", e.g. "graph.density", "judge.overall_score").
const (
	RepeatMetricScore   = "outcome.score"
	RepeatMetricSuccess = "outcome.success" // 1 for a run that succeeded, else 0
)

// TaskRepeats summarises the runs of one task.
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

// summarizeRepeats groups tasks (the runs, in the order the executor
// appended them) by task id and summarises each task's runs. runs is the
// number of runs asked for per task.
func summarizeRepeats(tasks []TaskResult, runs int) map[string]*TaskRepeats {
	out := map[string]*TaskRepeats{}
	values := map[string]map[string][]float64{}
	for _, t := range tasks {
		r, ok := out[t.TaskID]
		if !ok {
			r = &TaskRepeats{Runs: runs, TraceIDs: []string{}, Labels: map[string]int{}, Metrics: map[string]stats.Summary{}}
			out[t.TaskID] = r
			values[t.TaskID] = map[string][]float64{}
		}
		r.TraceIDs = append(r.TraceIDs, t.TraceID)
		if t.TraceID == "" {
			continue // not run
		}
		r.Ran++
		vals := values[t.TaskID]
		if o := t.Outcome; o != nil {
			vals[RepeatMetricScore] = append(vals[RepeatMetricScore], o.Score)
			success := 0.0
			if o.Success {
				success = 1
			}
			vals[RepeatMetricSuccess] = append(vals[RepeatMetricSuccess], success)
		}
		for name, res := range t.Evaluations {
			if res == nil {
				continue
			}
			if g, ok := res.(*evals.GraphResult); ok && g != nil && g.Label != "" {
				r.Labels[g.Label]++
			}
			for key, v := range res.Headline() {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					vals[name+"."+key] = append(vals[name+"."+key], v)
				}
			}
		}
	}
	for id, r := range out {
		for name, xs := range values[id] {
			r.Metrics[name] = stats.Summarize(xs)
		}
		r.TooFew = r.Ran < stats.MinSamples
		switch {
		case r.Ran == 0:
			r.Note = "no run of this task ran"
		case r.TooFew:
			r.Note = fmt.Sprintf("%d of %d runs ran: too few to conclude from (at least %d needed)", r.Ran, r.Runs, stats.MinSamples)
		case r.Ran < r.Runs:
			r.Note = fmt.Sprintf("%d of %d runs ran", r.Ran, r.Runs)
		}
		if len(r.Labels) == 0 {
			r.Labels = nil
		}
	}
	return out
}

// runLabel names run (0-based) of runs for progress texts: "" for a single
// run, " run 2/5" otherwise.
func runLabel(run, runs int) string {
	if runs <= 1 {
		return ""
	}
	return fmt.Sprintf(" run %d/%d", run+1, runs)
}
