package scicode_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/scicode"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

var quiet = slog.New(slog.DiscardHandler)

// message is one message a test solver received.
type message struct {
	ContextID string
	Kind      string
	Problem   string
	Step      string
	Turn      int
	Text      string
	Data      map[string]any
}

// messageLog records what a test solver was sent.
type messageLog struct {
	mu   sync.Mutex
	msgs []message
}

func (l *messageLog) add(m message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, m)
}

func (l *messageLog) all() []message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

// stepOf finds the step a SciCode message asks for.
func stepOf(split *scicode.Split, d map[string]any) (*scicode.Problem, *scicode.Step, error) {
	pid, _ := d["problem_id"].(string)
	num, _ := d["step_number"].(string)
	p, ok := split.Problem(pid)
	if !ok {
		return nil, nil, fmt.Errorf("unknown problem %q", pid)
	}
	for i := range p.Steps {
		if p.Steps[i].Number == num {
			return p, &p.Steps[i], nil
		}
	}
	return nil, nil, fmt.Errorf("unknown step %q", num)
}

// answerWith is a solver that logs what it is asked and answers with the
// code code returns for the step and turn (the text is that code in a
// fenced block).
func answerWith(split *scicode.Split, log *messageLog, code func(step *scicode.Step, turn int, in solverInput) string) solverFunc {
	return func(_ context.Context, in solverInput) (string, map[string]any, error) {
		if in.Data == nil {
			return "", nil, fmt.Errorf("no SciCode data part in the message")
		}
		p, step, err := stepOf(split, in.Data)
		if err != nil {
			return "", nil, err
		}
		kind, _ := in.Data["kind"].(string)
		turn, _ := in.Data["turn"].(float64)
		if log != nil {
			log.add(message{ContextID: in.ContextID, Kind: kind, Problem: p.ID, Step: step.Number, Turn: int(turn), Text: in.Text, Data: in.Data})
		}
		c := code(step, int(turn), in)
		if c == "" {
			return "I would approach this by thinking hard about the physics.", nil, nil
		}
		return "```python\n" + c + "\n```", nil, nil
	}
}

// reference answers every step with its reference code.
func reference(step *scicode.Step, _ int, _ solverInput) string { return step.Reference }

// repair answers a stub first and the reference after feedback.
func repair(step *scicode.Step, turn int, _ solverInput) string {
	if turn == 1 {
		return step.FunctionHeader + "\n    return None\n"
	}
	return step.Reference
}

// TestScenarioRepair: a solver that answers wrong first and right after
// feedback passes every sub-step on its second turn; the feedback comes in
// the same A2A context with the traceback, and a later step's prompt carries
// the code the earlier steps passed with.
func TestScenarioRepair(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	log := &messageLog{}
	url := startSolver(t, "repairing-solver", answerWith(split, log, repair), false)
	req := request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["29"], "max_num_steps": 2}}`, url)
	o, err := runProblem(t, s, t.Context(), req, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Outcome || o.Score != 1 || len(o.Steps) != 3 {
		t.Fatalf("outcome %+v", o)
	}
	for _, st := range o.Steps {
		if !st.Passed || st.Turns != 2 || len(st.Attempts) != 2 || st.ContextCode != "solver" {
			t.Errorf("step %s: %+v", st.Step, st)
			continue
		}
		if first := st.Attempts[0].Reason; first != scicode.ReasonCrashed && first != scicode.ReasonTestFailed {
			t.Errorf("step %s: first turn %q (%s), want a failure", st.Step, first, st.Attempts[0].Detail)
		}
		if st.Attempts[1].Reason != scicode.ReasonPassed || st.Attempts[1].AnswerSource != stepproto.AnswerFromFence {
			t.Errorf("step %s: second turn %+v", st.Step, st.Attempts[1])
		}
	}
	if o.Details["turns_used"] != 6 || o.Details["sub_step_pass_rate"] != 1.0 || o.Details["solved"] != true {
		t.Errorf("details: turns %v, rate %v, solved %v", o.Details["turns_used"], o.Details["sub_step_pass_rate"], o.Details["solved"])
	}
	if sb, ok := o.Details["sandbox"].(*sandbox.Info); !ok || !sb.ProcessGroup || len(sb.Rlimits) == 0 {
		t.Errorf("sandbox block %+v", o.Details["sandbox"])
	}
	msgs := log.all()
	if len(msgs) != 6 {
		t.Errorf("%d messages, want 6", len(msgs))
	}
	p29, _ := split.Problem("29")
	for _, m := range msgs {
		if m.ContextID != msgs[0].ContextID || m.ContextID == "" {
			t.Errorf("step %s turn %d came in context %q, not %q", m.Step, m.Turn, m.ContextID, msgs[0].ContextID)
		}
		switch m.Kind {
		case stepproto.FeedbackKind:
			// 29.3's first target is a boolean: its feedback names no
			// case (see TestAttacksSandbox); the others name the first
			// failing one.
			where := "test case 1 of"
			if m.Step == "29.3" {
				where = "which one is not said"
			}
			if m.Turn != 2 || !strings.Contains(m.Text, "did not pass (turn 1 of 2)") || !strings.Contains(m.Text, where) {
				t.Errorf("feedback for %s: turn %d, text:\n%s", m.Step, m.Turn, m.Text)
			}
			if m.Step == "29.3" && regexp.MustCompile(`test case \d`).MatchString(m.Text) {
				t.Errorf("feedback for %s names a case:\n%s", m.Step, m.Text)
			}
		case stepproto.StepKind:
			if m.Step == "29.3" && !strings.Contains(m.Text, strings.TrimSpace(p29.Steps[1].Reference)) {
				t.Errorf("step 29.3's prompt lacks step 29.2's code:\n%s", m.Text)
			}
		}
	}
}

// TestScenarioFailures: a solver that answers without code, one that
// fails, and one that cannot be reached cost the steps, with the reason
// recorded, and later steps get the reference code.
func TestScenarioFailures(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	prose := startSolver(t, "prose", answerWith(split, nil, func(*scicode.Step, int, solverInput) string { return "" }), false)
	failing := startSolver(t, "failing", func(context.Context, solverInput) (string, map[string]any, error) {
		return "", nil, fmt.Errorf("deliberate failure")
	}, false)
	for _, tc := range []struct {
		name, url, reason string
		turns             int
	}{
		{"no code", prose, scicode.ReasonNoCode, 3},
		{"failed task", failing, scicode.ReasonNoAnswer, 1},
		{"nobody there", refusedURL(t), scicode.ReasonNoAnswer, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": "19"}}`, tc.url)
			o, err := runProblem(t, s, t.Context(), req, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if o.Outcome || o.Score != 0 || len(o.Steps) != 2 {
				t.Fatalf("outcome %+v", o)
			}
			for _, st := range o.Steps {
				if st.Passed || st.Reason != tc.reason || st.Turns != tc.turns || st.ContextCode != "reference" {
					t.Errorf("step %s: %+v", st.Step, st)
				}
			}
			if f := o.Details["failures"].(map[string]int); f[tc.reason] != 2 {
				t.Errorf("failures %v", f)
			}
			if !strings.Contains(o.Summary, "0 of 2 sub-steps passed") {
				t.Errorf("summary %q", o.Summary)
			}
		})
	}
}

// TestScenarioDeadline: when the problem's time runs out while the solver
// hangs, Run returns at once with what was done, the steps not reached
// marked not run.
func TestScenarioDeadline(t *testing.T) {
	s := newForTest(t, sandbox.Options{})
	hang := startSolver(t, "hang", nil, true)
	req := request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["78"]}}`, hang)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	o, err := runProblem(t, s, ctx, req, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run took %s after the deadline", d)
	}
	if o.Outcome || len(o.Steps) != 3 || o.Details["ended_early"] == nil {
		t.Fatalf("outcome %+v", o)
	}
	for _, st := range o.Steps {
		if st.Reason != scicode.ReasonNotRun {
			t.Errorf("step %s: %+v", st.Step, st)
		}
	}
}

// TestRequestConfig: the scenario's keys, and the errors that name what is
// wrong. (The legacy tag format is mapped onto the same keys by the green
// agent's request parser, and tested there.)
func TestRequestConfig(t *testing.T) {
	s := newForTest(t, sandbox.Options{})
	ids := func(tasks []scenario.Task) []string {
		var out []string
		for _, t := range tasks {
			out = append(out, t.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name, req string
		want      []string
		turns     int
		bg        bool
		timeout   time.Duration
	}{
		{"all", `{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode"}}`,
			[]string{"10", "1", "3", "4", "6", "7", "19", "78", "29", "38", "44", "47", "49", "51", "70"}, 3, false, 0},
		{"ids as numbers and strings", `{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "problem_ids": [70, "1"], "max_num_steps": 5, "with_background": true, "step_timeout_seconds": 30}}`,
			[]string{"1", "70"}, 5, true, 30 * time.Second},
		{"task_ids and num_tasks", `{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "task_ids": ["7", "3", "6"], "num_tasks": 2, "split": "validation"}}`,
			[]string{"3", "6"}, 3, false, 0},
		{"shard", `{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "problem_ids": "1 3 4 6", "num_shards": 2, "shard_index": 1}}`,
			[]string{"3", "6"}, 3, false, 0},
		{"unknown id", `{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "problem_ids": ["13", "10"], "split": "dev", "max_num_steps": 4}}`,
			nil, 0, false, 0},
		{"dev", `{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "problem_ids": ["10"], "split": "dev", "max_num_steps": "4"}}`,
			[]string{"10"}, 4, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, "%s", tc.req)
			tasks, err := s.Tasks(req)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), `"13"`) || !strings.Contains(err.Error(), "are not in the validation split") {
					t.Errorf("error %v, want one naming problem 13", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(tasks); !slices.Equal(got, tc.want) {
				t.Errorf("tasks %v, want %v", got, tc.want)
			}
			cfg := tasks[0].Data.(*scicode.TaskData).Config
			if cfg.MaxTurns != tc.turns || cfg.WithBackground != tc.bg || cfg.StepTimeout != tc.timeout || cfg.Split != scicode.SplitValidation {
				t.Errorf("config %+v", cfg)
			}
			if req.Config.TaskTimeout() != scicode.DefaultTaskTimeout || req.Config.Deadline() != scicode.DefaultDeadline {
				t.Errorf("task timeout %s, deadline %s", req.Config.TaskTimeout(), req.Config.Deadline())
			}
		})
	}
	for _, tc := range []struct{ req, want string }{
		{`{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "split": "train"}}`, `unknown SciCode split "train"`},
		{`{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "max_num_steps": 0}}`, "config.max_num_steps must be a whole number from 1 to 20"},
		{`{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "with_background": "yes"}}`, "config.with_background must be true or false"},
		{`{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "step_timeout_seconds": -1}}`, "config.step_timeout_seconds must be"},
		{`{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "problem_ids": [{"id": 1}]}}`, "config.problem_ids"},
		{`{"participants": {"a": "http://x/", "b": "http://y/"}, "config": {"scenario": "scicode"}}`, "no config.entry_role"},
		{`{"participants": {"s": "http://x/"}, "config": {"scenario": "scicode", "split": "test"}}`, "test_data.h5"},
	} {
		_, err := s.Tasks(request(t, "%s", tc.req))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.req, err, tc.want)
		}
		if _, ok := err.(*scenario.RequestError); !ok {
			t.Errorf("%s: error %T, want a *scenario.RequestError", tc.req, err)
		}
	}
}

// TestNotTamperProof: without namespaces the scores still come from the
// judge, and the result says plainly that they are not tamper-proof.
func TestNotTamperProof(t *testing.T) {
	s := newForTest(t, sandbox.Options{Isolation: sandbox.IsolationNone})
	split, _ := s.Split(scicode.SplitValidation)
	url := startSolver(t, "oracle", answerWith(split, nil, reference), false)
	req := request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["1"]}}`, url)
	o, err := runProblem(t, s, t.Context(), req, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	note, _ := o.Details["tamper_proof_note"].(string)
	if o.Score != 1 || o.Details["tamper_proof"] != false || !strings.Contains(note, "not tamper-proof") ||
		!strings.Contains(o.Summary, "not tamper-proof") {
		t.Errorf("score %v, tamper_proof %v, note %q, summary %q", o.Score, o.Details["tamper_proof"], note, o.Summary)
	}
}
