package green

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/scicode"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
	"github.com/coordbench/coordbench/tracedata"
)

// newSciCodeForTest builds the scenario on the test data, skipping (or
// failing with CI=true) without the data or a Python with the scientific
// stack.
func newSciCodeForTest(t *testing.T, sb sandbox.Options) *scicode.Scenario {
	t.Helper()
	dir := sciCodeTestDir(t)
	s, err := scicode.New(t.Context(), scicode.Options{DataDir: dir, Sandbox: sb, Logger: quietLogger})
	if err != nil {
		if errors.Is(err, sandbox.ErrNoPython) || errors.Is(err, errors.ErrUnsupported) {
			testenv.Missing(t, "%v", err)
		}
		t.Fatal(err)
	}
	return s
}

// sciMessage is one message a test solver received.
type sciMessage struct {
	ContextID string
	Kind      string
	Problem   string
	Step      string
	Turn      int
	Text      string
}

// sciSolverLog records what a test solver was sent.
type sciSolverLog struct {
	mu   sync.Mutex
	msgs []sciMessage
}

func (l *sciSolverLog) all() []sciMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

// sciCodeTestSolver answers as the purple solver's modes do, from the
// split's reference code: "oracle" answers with it; "repair" answers with
// a stub first and with the reference after feedback; "prose" answers
// without code.
func sciCodeTestSolver(t *testing.T, split *scicode.Split, mode string, log *sciSolverLog) func(context.Context, a2atest.Input) (string, error) {
	return func(_ context.Context, in a2atest.Input) (string, error) {
		var d map[string]any
		for _, m := range in.Data {
			if k, _ := m["kind"].(string); k == stepproto.StepKind || k == stepproto.FeedbackKind {
				d = m
			}
		}
		if d == nil {
			return "", fmt.Errorf("no SciCode data part in %v", in.Data)
		}
		pid, _ := d["problem_id"].(string)
		num, _ := d["step_number"].(string)
		turn, _ := d["turn"].(float64)
		kind, _ := d["kind"].(string)
		log.mu.Lock()
		log.msgs = append(log.msgs, sciMessage{ContextID: in.ContextID, Kind: kind, Problem: pid, Step: num, Turn: int(turn), Text: in.Text})
		log.mu.Unlock()
		p, ok := split.Problem(pid)
		if !ok {
			return "", fmt.Errorf("unknown problem %q", pid)
		}
		var step *scicode.Step
		for i := range p.Steps {
			if p.Steps[i].Number == num {
				step = &p.Steps[i]
			}
		}
		if step == nil {
			return "", fmt.Errorf("unknown step %q", num)
		}
		switch {
		case mode == "prose":
			return "I would approach this by thinking hard about the physics.", nil
		case mode == "repair" && kind == stepproto.StepKind:
			return "Here is a first draft.\n```python\n" + step.FunctionHeader + "\n    return None\n```\n", nil
		}
		return "```python\n" + step.Reference + "\n```", nil
	}
}

// TestSciCodeScenarioRepair runs two problems through the executor with a
// solver that answers wrong first and right after feedback: every sub-step
// fails its first turn, gets the test output back in the same A2A context,
// and passes on the second; the result carries SciCode's scores next to the
// coordination metrics.
func TestSciCodeScenarioRepair(t *testing.T) {
	s := newSciCodeForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	log := &sciSolverLog{}
	purple := a2atest.Start(t, a2atest.Options{Name: "scicode-solver", ReplyFunc: sciCodeTestSolver(t, split, "repair", log)})
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{scenario.SciCode: s}, time.Minute)
	req := mustParse(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["29", 1], "max_num_steps": 2, "settle_quiet_ms": 100, "settle_max_wait_ms": 500}}`, purple.URL)
	res, err := e.Assess(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 2 || res.Tasks[0].TaskID != "1" || res.Tasks[1].TaskID != "29" {
		t.Fatalf("tasks %v, want problems 1 and 29 in file order", res.Tasks)
	}
	for _, tr := range res.Tasks {
		o := tr.Outcome
		if o == nil || !o.Success || o.Score != 1 {
			t.Fatalf("problem %s: %+v", tr.TaskID, o)
		}
		steps := o.Details["steps"].([]scicode.StepResult)
		for _, st := range steps {
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
		if o.Details["turns_used"] != 2*len(steps) || o.Details["sub_step_pass_rate"] != 1.0 || o.Details["solved"] != true {
			t.Errorf("problem %s details: turns %v, rate %v, solved %v", tr.TaskID, o.Details["turns_used"], o.Details["sub_step_pass_rate"], o.Details["solved"])
		}
		sb, ok := o.Details["sandbox"].(*sandbox.Info)
		if !ok || !sb.ProcessGroup || len(sb.Rlimits) == 0 || !sb.ScrubbedEnv || !sb.PrivateTmp || sb.OutputCapBytes == 0 || sb.Network == "" {
			t.Errorf("problem %s sandbox block: %+v", tr.TaskID, o.Details["sandbox"])
		}
		if _, ok := tr.Evaluations["graph"]; !ok {
			t.Errorf("problem %s has no coordination metrics: %v", tr.TaskID, tr.EvaluatorErrors)
		}
		if !slices.ContainsFunc(tr.Agents, func(a tracedata.Agent) bool { return a.Name == "scicode-solver" }) {
			t.Errorf("problem %s: the solver is not among the trace's agents %v", tr.TaskID, tr.Agents)
		}
	}
	if *res.PassRate != 1 || *res.Score != 100 {
		t.Errorf("pass_rate %v, score %v", *res.PassRate, *res.Score)
	}

	// One context per problem: the first message starts it, every later
	// message of the problem (the feedback turns too) continues it.
	msgs := log.all()
	if i := slices.IndexFunc(msgs, func(m sciMessage) bool { return m.Kind == stepproto.FeedbackKind }); i >= 0 {
		t.Logf("a feedback message:\n%s", msgs[i].Text)
	}
	for _, tr := range res.Tasks {
		b, _ := json.MarshalIndent(tr.Outcome, "", "  ")
		t.Logf("outcome of problem %s:\n%s", tr.TaskID, tail(string(b), 2500))
	}
	contexts := map[string]string{}
	for _, m := range msgs {
		if c, ok := contexts[m.Problem]; ok && c != m.ContextID {
			t.Errorf("problem %s step %s turn %d came in context %s, not %s", m.Problem, m.Step, m.Turn, m.ContextID, c)
		}
		contexts[m.Problem] = m.ContextID
		if m.Kind == stepproto.FeedbackKind {
			// 29.3's first target is a boolean: its feedback names no case
			// (TestAttacksSandbox); the others name the first failing one.
			where := "test case 1 of"
			if m.Step == "29.3" {
				where = "which one is not said"
			}
			if m.Turn != 2 || !strings.Contains(m.Text, "did not pass (turn 1 of 2)") || !strings.Contains(m.Text, where) {
				t.Errorf("feedback for %s: turn %d, text:\n%s", m.Step, m.Turn, m.Text)
			}
		}
	}
	if len(contexts) != 2 || contexts["1"] == contexts["29"] || contexts["1"] == "" {
		t.Errorf("contexts %v, want one per problem", contexts)
	}
	if want := 2 * (1 + 3); len(msgs) != want {
		t.Errorf("%d messages, want %d", len(msgs), want)
	}
	// A later step's prompt carries the solver's accepted code of the
	// earlier ones.
	p29, _ := split.Problem("29")
	for _, m := range msgs {
		if m.Step == "29.3" && m.Kind == stepproto.StepKind && !strings.Contains(m.Text, strings.TrimSpace(p29.Steps[1].Reference)) {
			t.Errorf("step 29.3's prompt lacks step 29.2's code:\n%s", m.Text)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sub_step_pass_rate":1`, `"network":`, `"rlimits":`, `"attempts":`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result JSON lacks %s", want)
		}
	}
}

// TestSciCodeServerLegacyTags runs the SciCode green agent the way the
// original SciCode green agent is run: a 0.3 client sends the legacy tag
// format naming a 0.3 white agent, which answers with the reference code.
func TestSciCodeServerLegacyTags(t *testing.T) {
	s := newSciCodeForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	log := &sciSolverLog{}
	g := startGreen(t, ServerOptions{Scenarios: map[string]scenario.Scenario{scenario.SciCode: s}, ProgressInterval: time.Minute})
	// The tag format carries no settle settings: the white agent's spans
	// reach the green agent's store, so its trace settles without the
	// default maximum wait.
	white := a2atest.Start(t, a2atest.Options{Name: "white", Legacy: true, Store: g.srv.Store(), ReplyFunc: sciCodeTestSolver(t, split, "oracle", log)})
	c, _ := g.client03(t)
	text := fmt.Sprintf("Solve these.\n<white_agent_url>%s</white_agent_url>\n<scicode_problem_id>3, 6</scicode_problem_id>\n<split>dev</split>\n<max_num_steps>2</max_num_steps>", white.URL)
	out, err := c.SendMessage(t.Context(), userMessage(text))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := out.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("answer %T %+v", out, out)
	}
	res := resultOf(t, task.Artifacts[0])
	checkLeaderboardFields(t, res, scenario.SciCode, 2)
	if res["pass_rate"] != 1.0 {
		t.Errorf("pass_rate %v", res["pass_rate"])
	}
	for _, tk := range res["tasks"].([]any) {
		o := tk.(map[string]any)["outcome"].(map[string]any)
		d := o["details"].(map[string]any)
		if d["split"] != scicode.SplitValidation || d["max_num_steps"] != 2.0 || d["solved"] != true {
			t.Errorf("task %v details %v", tk.(map[string]any)["task_id"], d)
		}
	}
	if got := len(log.all()); got != 2 {
		t.Errorf("the white agent got %d messages, want 2", got)
	}
}

// sciCodeTestDir is ../shared/data/scicode beside the module root.
// Without it the SciCode tests skip (or fail with CI=true).
func sciCodeTestDir(t testing.TB) string {
	t.Helper()
	return testenv.SharedData(t, "scicode")
}

// oracleStepTimeout is SciCode's own maximum: step 51.4's reference (a
// pure-Python molecular dynamics loop) needs about 40 s of CPU, which on a
// shared machine giving a test a tenth of a core is minutes of wall clock.
const oracleStepTimeout = 1800 * time.Second

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestSciCodeServerForgery: a served green agent, asked in the legacy tag
// format over A2A 0.3, scores a white agent whose answers patch numpy's
// comparisons (and return nonsense) at 0: the comparisons that decide run
// outside the solver's process.
func TestSciCodeServerForgery(t *testing.T) {
	s := newSciCodeForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	g := startGreen(t, ServerOptions{Scenarios: map[string]scenario.Scenario{scenario.SciCode: s}, ProgressInterval: time.Minute})
	// The white agent's spans reach the green agent's store (the tag
	// format carries no settle settings).
	white := a2atest.Start(t, a2atest.Options{Name: "white", Legacy: true, Store: g.srv.Store(), ReplyFunc: func(_ context.Context, in a2atest.Input) (string, error) {
		for _, d := range in.Data {
			pid, _ := d["problem_id"].(string)
			num, _ := d["step_number"].(string)
			if p, ok := split.Problem(pid); ok {
				for _, st := range p.Steps {
					if st.Number == num {
						return "```python\nimport numpy\nnumpy.allclose = numpy.isclose = lambda *a, **k: True\n" +
							strings.TrimRight(st.FunctionHeader, "\n") + "\n    return 12345.678\n```", nil
					}
				}
			}
		}
		return "", fmt.Errorf("no step in %v", in.Data)
	}})
	c, _ := g.client03(t)
	text := fmt.Sprintf("<white_agent_url>%s</white_agent_url>\n<scicode_problem_id>1, 3, 4</scicode_problem_id>\n<split>dev</split>\n<max_num_steps>1</max_num_steps>", white.URL)
	out, err := c.SendMessage(t.Context(), userMessage(text))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := out.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("answer %T %+v", out, out)
	}
	res := resultOf(t, task.Artifacts[0])
	if res["pass_rate"] != 0.0 || res["score"] != 0.0 {
		t.Errorf("pass_rate %v, score %v", res["pass_rate"], res["score"])
	}
	for _, tk := range res["tasks"].([]any) {
		d := tk.(map[string]any)["outcome"].(map[string]any)["details"].(map[string]any)
		if d["tamper_proof"] != true {
			continue // the sandbox block says why; the score is 0 all the same
		}
		for _, st := range d["steps"].([]any) {
			if r := st.(map[string]any)["reason"]; r != scicode.ReasonTestFailed {
				t.Errorf("step %v: reason %v", st.(map[string]any)["step"], r)
			}
		}
	}
}
