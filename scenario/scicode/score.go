package scicode

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/evals"
)

// StepResult is one sub-step in the result.
type StepResult struct {
	Step   string `json:"step"`
	Scored bool   `json:"scored"`
	Passed bool   `json:"passed"`
	// Reason is the last attempt's: passed, test_failed, crashed,
	// no_result, invalid_result, timeout, limit, no_code, no_answer,
	// runner_error, not_run, unscored.
	Reason string `json:"reason"`
	Limit  string `json:"limit,omitempty"`
	Detail string `json:"detail,omitempty"`
	Turns  int    `json:"turns"`
	// TimeMS is the step's wall time (calls and tests); TestMS the part in
	// the runner.
	TimeMS float64 `json:"time_ms"`
	TestMS float64 `json:"test_ms"`
	// ContextCode says what later steps were given as this step's code:
	// "solver" (its passing code), "reference" (the split's reference, the
	// step not being solved), "solver_unverified" (its last code, where
	// the split has no reference) or "none".
	ContextCode string `json:"context_code"`
	// PropertyCheck is set when the pass rests in part on property cases,
	// test cases whose assertions meet no target but booleans (78.2's
	// "the final angle is within 0.1 of …", 29.3's "two columns are
	// orthogonal"), which an answer computing nothing can satisfy:
	// "reference" when their values were compared with the reference
	// code's run on the same inputs and are not degenerate where its are
	// not; "unchecked" when some could not be (UncheckedCases): the split
	// has no reference code (the test split), or nothing comparable was
	// recorded. Such a pass is not evidence of a computation.
	PropertyCheck  string `json:"property_check,omitempty"`
	UncheckedCases []int  `json:"unchecked_cases,omitempty"`
	// StrictOnly is set on a failed step whose last attempt SciCode's own
	// comparison would have passed: the judge's stricter rules alone
	// refused it (Attempt.StrictOnly).
	StrictOnly bool      `json:"strict_only,omitempty"`
	Attempts   []Attempt `json:"attempts"`
}

// PropertyCheck values.
const (
	propertyReference = "reference"
	propertyUnchecked = "unchecked"
)

// propertyCheck is a passing verdict's PropertyCheck.
func propertyCheck(v *Verdict) string {
	switch {
	case v == nil || !v.Passed:
		return ""
	case len(v.Unchecked) > 0:
		return propertyUnchecked
	case v.ReferenceChecked:
		return propertyReference
	}
	return ""
}

// Attempt is one turn of a step.
type Attempt struct {
	Turn    int    `json:"turn"`
	Reason  string `json:"reason"`
	Limit   string `json:"limit,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Section string `json:"section,omitempty"`
	// PropertyCheck and UncheckedCases as in StepResult, on a pass.
	PropertyCheck  string `json:"property_check,omitempty"`
	UncheckedCases []int  `json:"unchecked_cases,omitempty"`
	// StrictOnly: the attempt failed on the judge's stricter rules alone
	// (the structure rule, an equivalence that holds one way only, NaN in
	// an ordering, a degenerate value where the reference's is not);
	// SciCode's own comparison would have passed it.
	StrictOnly bool `json:"strict_only,omitempty"`
	// AnswerSource is where the code was found: data, json, code_tag,
	// fenced; Code is the code as tested.
	AnswerSource string  `json:"answer_source,omitempty"`
	Code         string  `json:"code,omitempty"`
	CallMS       float64 `json:"call_ms"`
	TestMS       float64 `json:"test_ms,omitempty"`
	JudgeMS      float64 `json:"judge_ms,omitempty"`
	CPUMS        float64 `json:"cpu_ms,omitempty"`
	ExitCode     int     `json:"exit_code,omitempty"`
	Signal       string  `json:"signal,omitempty"`
	OutputBytes  int64   `json:"output_bytes,omitempty"`
}

// outcome scores the walk as SciCode does: the share of scored sub-steps
// passed, and the problem solved when all pass.
func (w *walker) outcome() *evals.Outcome {
	p := w.t.Problem
	scored, passed, turns, unchecked, strictOnly := 0, 0, 0, 0, 0
	failures := map[string]int{}
	for _, r := range w.steps {
		turns += r.Turns
		if !r.Scored {
			continue
		}
		scored++
		if r.Passed {
			passed++
			if r.PropertyCheck == propertyUnchecked {
				unchecked++
			}
		} else {
			failures[r.Reason]++
			if r.StrictOnly {
				strictOnly++
			}
		}
	}
	rate := 0.0
	if scored > 0 {
		rate = float64(passed) / float64(scored)
	}
	solved := scored > 0 && passed == scored
	sb := w.sandbox
	if sb == nil {
		sb = w.s.runner.Info(w.timeout)
	}
	details := map[string]any{
		"problem_id":         p.ID,
		"problem_name":       p.Name,
		"split":              w.t.Split.Name,
		"targets":            filepath.Base(w.t.Split.TargetsPath),
		"with_background":    w.t.Config.WithBackground,
		"max_num_steps":      w.t.Config.MaxTurns,
		"entry_role":         w.role,
		"sub_steps":          scored,
		"sub_steps_passed":   passed,
		"sub_step_pass_rate": round(rate, 4),
		// Passes that rest on property cases no reference could check.
		"sub_steps_passed_unchecked": unchecked,
		// Failures SciCode's own comparison would have passed.
		"sub_steps_failed_strict_only": strictOnly,
		"solved":                       solved,
		"turns_used":                   turns,
		"failures":                     failures,
		"steps":                        w.steps,
		"sandbox":                      sb,
		"tamper_proof":                 TamperProof(sb),
		"time_ms":                      msSince(w.started),
	}
	if !TamperProof(sb) {
		details["tamper_proof_note"] = notTamperProof
	}
	if w.contextID != "" {
		details["context_id"] = w.contextID
	}
	if w.agent != "" {
		details["agent"] = w.agent
	}
	if w.ended != "" {
		details["ended_early"] = w.ended
	}
	summary := fmt.Sprintf("problem %s (%s): %d of %d sub-steps passed", p.ID, p.Name, passed, scored)
	if solved {
		summary += ", solved"
	}
	summary += fmt.Sprintf(", %s", plural(turns, "turn", "turns"))
	if unchecked > 0 {
		summary += fmt.Sprintf(" (%d of the passes rest on test cases that check only a property, unchecked: see property_check)", unchecked)
	}
	if strictOnly > 0 {
		summary += fmt.Sprintf(" (%d of the failures SciCode's own comparison would pass: see strict_only)", strictOnly)
	}
	if !TamperProof(sb) {
		summary += " (not tamper-proof: see the sandbox block)"
	}
	if len(failures) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(failures)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, failures[k]))
		}
		summary += "; failed: " + strings.Join(parts, ", ")
	}
	return &evals.Outcome{Success: solved, Score: rate, Summary: summary, Details: details}
}
