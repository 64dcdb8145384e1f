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
	"github.com/coordbench/coordbench/report"
)

// summarizeRepeats groups tasks (the runs, in the order the executor
// appended them) by task id and summarises each task's runs. runs is the
// number of runs asked for per task.
func summarizeRepeats(tasks []report.TaskResult, runs int) map[string]*report.TaskRepeats {
	out := map[string]*report.TaskRepeats{}
	values := map[string]map[string][]float64{}
	for _, t := range tasks {
		r, ok := out[t.TaskID]
		if !ok {
			r = &report.TaskRepeats{Runs: runs, TraceIDs: []string{}, Labels: map[string]int{}, Metrics: map[string]stats.Summary{}}
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
			vals[report.RepeatMetricScore] = append(vals[report.RepeatMetricScore], o.Score)
			success := 0.0
			if o.Success {
				success = 1
			}
			vals[report.RepeatMetricSuccess] = append(vals[report.RepeatMetricSuccess], success)
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
