// Package stepproto is SciCode's step protocol, defined once for both sides:
// the messages the green agent's SciCode scenario sends (one per sub-step,
// and one after each failed turn, each a prompt text and a data part), how a
// solver reads them, and the answer formats the scenario reads back. The
// scenario (scenario/scicode) writes with it and the base purple agent's
// solver reads with it; it imports nothing of ours, so a participant can
// speak the protocol without the assessor. docs/scicode.md describes it.
package stepproto

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Kinds of the data parts.
const (
	StepKind     = "coordbench.scicode_step/v1"
	FeedbackKind = "coordbench.scicode_feedback/v1"
)

// AnswerFormats names the answer forms ExtractAnswer reads, as the data
// part's answer_formats lists them.
var AnswerFormats = []string{"```python fenced block", "<code>…</code>", `JSON {"code": "..."}`}

// Step is what a step or feedback message says of the step, the fields of
// its data part.
type Step struct {
	ProblemID      string
	ProblemName    string
	StepNumber     string // "10.3"
	StepIndex      int    // 1-based
	NumSteps       int
	Turn           int // 1-based
	MaxTurns       int
	Split          string
	WithBackground bool
	FunctionName   string
	FunctionHeader string
	ReturnLine     string
	Dependencies   string
}

// Failure is what a feedback message adds: why the turn failed.
type Failure struct {
	// Reason is the scenario's reason code (test_failed, no_code, ...).
	Reason  string
	Limit   string
	Detail  string
	Section string
	// Output is the (bounded) test output.
	Output string
}

// StepData is the data part of a step's first message.
func StepData(s Step) map[string]any {
	formats := make([]any, len(AnswerFormats))
	for i, f := range AnswerFormats {
		formats[i] = f
	}
	return map[string]any{
		"kind":            StepKind,
		"problem_id":      s.ProblemID,
		"problem_name":    s.ProblemName,
		"step_number":     s.StepNumber,
		"step_index":      s.StepIndex,
		"num_steps":       s.NumSteps,
		"turn":            s.Turn,
		"max_turns":       s.MaxTurns,
		"split":           s.Split,
		"with_background": s.WithBackground,
		"function_name":   s.FunctionName,
		"function_header": s.FunctionHeader,
		"return_line":     s.ReturnLine,
		"dependencies":    s.Dependencies,
		"answer_formats":  formats,
	}
}

// FeedbackData is the data part of the message after a failed turn: the
// step's data for the next turn (s.Turn is that turn), and the failure.
func FeedbackData(s Step, f Failure) map[string]any {
	d := StepData(s)
	d["kind"] = FeedbackKind
	d["feedback"] = true
	d["failure"] = f.Reason
	for k, v := range map[string]string{"limit": f.Limit, "detail": f.Detail, "section": f.Section, "output": f.Output} {
		if v != "" {
			d[k] = v
		}
	}
	return d
}

// PromptHeading is the first line of a step's prompt, which a solver without
// the data part reads (ParseRequest).
func PromptHeading(s Step) string {
	return fmt.Sprintf("SciCode problem %s (%s), sub-step %s (%d of %d).", s.ProblemID, s.ProblemName, s.StepNumber, s.StepIndex, s.NumSteps)
}

// FeedbackHeading opens the message after failed turn turn of maxTurns.
func FeedbackHeading(stepNumber string, turn, maxTurns int) string {
	return fmt.Sprintf("Your answer for sub-step %s did not pass (turn %d of %d): ", stepNumber, turn, maxTurns)
}

// The headings as ParseRequest reads them.
var (
	promptRE   = regexp.MustCompile(`SciCode problem (\S+) \(.*?\), sub-step (\S+) \(`)
	feedbackRE = regexp.MustCompile(`Your answer for sub-step (\S+) did not pass \(turn (\d+) of`)
)

// Request is one SciCode message as a solver reads it.
type Request struct {
	ProblemID string
	Step      string // "10.3"
	Turn      int
	// Feedback is true for a message that reports a failed turn.
	Feedback bool
	Header   string
}

// ParseRequest reads a SciCode message: the data part when present, else
// the headings of the text. A message that is neither is an error.
func ParseRequest(text string, data []map[string]any) (Request, error) {
	var r Request
	for _, d := range data {
		kind, _ := d["kind"].(string)
		if kind != StepKind && kind != FeedbackKind {
			continue
		}
		r.ProblemID, _ = d["problem_id"].(string)
		r.Step, _ = d["step_number"].(string)
		r.Header, _ = d["function_header"].(string)
		switch t := d["turn"].(type) {
		case float64: // as decoded from JSON
			r.Turn = int(t)
		case int: // as built in process
			r.Turn = t
		}
		fb, _ := d["feedback"].(bool)
		r.Feedback = fb || kind == FeedbackKind
	}
	if r.Step == "" {
		if m := feedbackRE.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[2])
			r.Step, r.Turn, r.Feedback = m[1], n+1, true
		} else if m := promptRE.FindStringSubmatch(text); m != nil {
			r.ProblemID, r.Step, r.Turn = m[1], m[2], 1
		}
	}
	if r.Step == "" {
		return r, errors.New("not a SciCode step request: no data part of kind " + StepKind + " and no step named in the text")
	}
	if r.ProblemID == "" {
		if i := strings.LastIndexByte(r.Step, '.'); i > 0 {
			r.ProblemID = r.Step[:i]
		}
	}
	if r.Turn <= 0 {
		r.Turn = 1
	}
	return r, nil
}

// The tools of the scenario's MCP delivery (docs/mcp.md), by name.
const (
	ToolReadStep   = "read_step"
	ToolRunCode    = "run_code"
	ToolSubmitStep = "submit_step"
)
