package stepproto_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

var step = stepproto.Step{
	ProblemID: "78", ProblemName: "Chaotic_Dynamics_Pendulum", StepNumber: "78.2", StepIndex: 2, NumSteps: 3,
	Turn: 1, MaxTurns: 3, Split: "validation", FunctionName: "f", FunctionHeader: "def f(x):",
	ReturnLine: "    return y", Dependencies: "import numpy as np",
}

// wire is data as the other side reads it: through JSON, as A2A carries it.
func wire(t *testing.T, d map[string]any) []map[string]any {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return []map[string]any{back}
}

// TestRoundTrip: what the scenario writes, a solver reads, through the
// data part (in process and through JSON) and, without it, through the
// text's headings alone.
func TestRoundTrip(t *testing.T) {
	first := stepproto.Request{ProblemID: "78", Step: "78.2", Turn: 1, Header: "def f(x):"}
	fb := step
	fb.Turn = 2
	again := stepproto.Request{ProblemID: "78", Step: "78.2", Turn: 2, Header: "def f(x):", Feedback: true}
	failure := stepproto.Failure{Reason: "test_failed", Section: "test case 1", Output: "AssertionError"}
	for _, tc := range []struct {
		name string
		text string
		data []map[string]any
		want stepproto.Request
	}{
		{"step data", "", []map[string]any{stepproto.StepData(step)}, first},
		{"step data, JSON", "", wire(t, stepproto.StepData(step)), first},
		{"feedback data", "", []map[string]any{stepproto.FeedbackData(fb, failure)}, again},
		{"feedback data, JSON", "", wire(t, stepproto.FeedbackData(fb, failure)), again},
		{"prompt text", stepproto.PromptHeading(step) + "\n\nYou will write...", nil,
			stepproto.Request{ProblemID: "78", Step: "78.2", Turn: 1}},
		{"feedback text", stepproto.FeedbackHeading("78.2", 1, 3) + "test case 1 failed.", nil,
			stepproto.Request{ProblemID: "78", Step: "78.2", Turn: 2, Feedback: true}},
		// A data part of another kind is not read; the text still is.
		{"foreign data", stepproto.PromptHeading(step), []map[string]any{{"kind": "other/v1", "step_number": "1.1"}},
			stepproto.Request{ProblemID: "78", Step: "78.2", Turn: 1}},
		// A step number without a problem id names its problem.
		{"no problem id", "", []map[string]any{{"kind": stepproto.StepKind, "step_number": "10.3"}},
			stepproto.Request{ProblemID: "10", Step: "10.3", Turn: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stepproto.ParseRequest(tc.text, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, text := range []string{"", "Review this paper.", "SciCode problem without a step", "sub-step 1.1"} {
		if r, err := stepproto.ParseRequest(text, nil); err == nil {
			t.Errorf("%q read as a SciCode step: %+v", text, r)
		}
	}
}

// TestData: the data parts carry every field under its documented key, the
// feedback's failure fields only when set.
func TestData(t *testing.T) {
	d := stepproto.StepData(step)
	for k, want := range map[string]any{
		"kind": stepproto.StepKind, "problem_id": "78", "problem_name": "Chaotic_Dynamics_Pendulum", "step_number": "78.2",
		"step_index": 2, "num_steps": 3, "turn": 1, "max_turns": 3, "split": "validation", "with_background": false,
		"function_name": "f", "function_header": "def f(x):", "return_line": "    return y", "dependencies": "import numpy as np",
	} {
		if !reflect.DeepEqual(d[k], want) {
			t.Errorf("%s = %#v, want %#v", k, d[k], want)
		}
	}
	if _, ok := d["feedback"]; ok {
		t.Error("a step message says feedback")
	}
	if f, _ := d["answer_formats"].([]any); len(f) != len(stepproto.AnswerFormats) {
		t.Errorf("answer_formats %v", d["answer_formats"])
	}
	fb := stepproto.FeedbackData(step, stepproto.Failure{Reason: "limit", Limit: "memory"})
	if fb["kind"] != stepproto.FeedbackKind || fb["feedback"] != true || fb["failure"] != "limit" || fb["limit"] != "memory" {
		t.Errorf("feedback data %v", fb)
	}
	for _, k := range []string{"detail", "section", "output"} {
		if _, ok := fb[k]; ok {
			t.Errorf("unset %s present", k)
		}
	}
	if !strings.HasPrefix(stepproto.PromptHeading(step), "SciCode problem 78 (Chaotic_Dynamics_Pendulum), sub-step 78.2 (2 of 3).") {
		t.Errorf("heading %q", stepproto.PromptHeading(step))
	}
}
