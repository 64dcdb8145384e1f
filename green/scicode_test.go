package green

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/tracedata"
)

// newSciCodeForTest builds the scenario on the test data, skipping (or
// failing with CI=true) without the data or a Python with the scientific
// stack.
func newSciCodeForTest(t *testing.T, runner RunnerOptions) *SciCodeScenario {
	t.Helper()
	dir := sciCodeTestDir(t)
	runner.Logger = quietLogger
	s, err := NewSciCodeScenario(t.Context(), SciCodeOptions{DataDir: dir, Runner: runner, Logger: quietLogger})
	if err != nil {
		if strings.Contains(err.Error(), "no Python") {
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
func sciCodeTestSolver(t *testing.T, split *SciCodeSplit, mode string, log *sciSolverLog) func(context.Context, testPurpleInput) (string, error) {
	return func(_ context.Context, in testPurpleInput) (string, error) {
		var d map[string]any
		for _, m := range in.Data {
			if k, _ := m["kind"].(string); k == sciStepKind || k == sciFeedbackKind {
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
		var step *SciCodeStep
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
		case mode == "repair" && kind == sciStepKind:
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
	s := newSciCodeForTest(t, RunnerOptions{Timeout: oracleStepTimeout})
	split, _ := s.Split(SciCodeValidation)
	log := &sciSolverLog{}
	purple := startTestPurple(t, testPurpleOptions{Name: "scicode-solver", ReplyFunc: sciCodeTestSolver(t, split, "repair", log)})
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{scenario.SciCode: s}, time.Minute)
	req := mustParse(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["29", 1], "max_num_steps": 2, "settle_quiet_ms": 100}}`, purple.URL)
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
		steps := o.Details["steps"].([]SciCodeStepResult)
		for _, st := range steps {
			if !st.Passed || st.Turns != 2 || len(st.Attempts) != 2 || st.ContextCode != contextSolver {
				t.Errorf("step %s: %+v", st.Step, st)
				continue
			}
			if first := st.Attempts[0].Reason; first != ReasonCrashed && first != ReasonTestFailed {
				t.Errorf("step %s: first turn %q (%s), want a failure", st.Step, first, st.Attempts[0].Detail)
			}
			if st.Attempts[1].Reason != ReasonPassed || st.Attempts[1].AnswerSource != AnswerFromFence {
				t.Errorf("step %s: second turn %+v", st.Step, st.Attempts[1])
			}
		}
		if o.Details["turns_used"] != 2*len(steps) || o.Details["sub_step_pass_rate"] != 1.0 || o.Details["solved"] != true {
			t.Errorf("problem %s details: turns %v, rate %v, solved %v", tr.TaskID, o.Details["turns_used"], o.Details["sub_step_pass_rate"], o.Details["solved"])
		}
		sb, ok := o.Details["sandbox"].(*SandboxInfo)
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
	if i := slices.IndexFunc(msgs, func(m sciMessage) bool { return m.Kind == sciFeedbackKind }); i >= 0 {
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
		if m.Kind == sciFeedbackKind {
			if m.Turn != 2 || !strings.Contains(m.Text, "did not pass (turn 1 of 2)") || !strings.Contains(m.Text, "Traceback") {
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
		if m.Step == "29.3" && m.Kind == sciStepKind && !strings.Contains(m.Text, strings.TrimSpace(p29.Steps[1].Reference)) {
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

// TestSciCodeScenarioFailures: a solver that answers without code, one
// that fails, and one that cannot be reached cost the steps, with the
// reason recorded, and later steps get the reference code.
func TestSciCodeScenarioFailures(t *testing.T) {
	s := newSciCodeForTest(t, RunnerOptions{Timeout: oracleStepTimeout})
	split, _ := s.Split(SciCodeValidation)
	prose := startTestPurple(t, testPurpleOptions{Name: "prose", ReplyFunc: sciCodeTestSolver(t, split, "prose", &sciSolverLog{})})
	failing := startTestPurple(t, testPurpleOptions{Name: "failing", Fault: faultFail})
	for _, tc := range []struct {
		name, url, reason string
		turns             int
	}{
		{"no code", prose.URL, ReasonNoCode, 3},
		{"failed task", failing.URL, ReasonNoAnswer, 1},
		{"nobody there", refusedURL(t), ReasonNoAnswer, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := mustParse(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": "19"}}`, tc.url)
			tasks, err := s.Tasks(req)
			if err != nil || len(tasks) != 1 {
				t.Fatalf("Tasks: %v, %v", tasks, err)
			}
			m := NewMessenger(noop.NewTracerProvider(), nil, MessengerOptions{Logger: quietLogger, CallTimeout: 30 * time.Second})
			defer m.Close()
			o, err := s.Run(t.Context(), &scenario.TaskEnv{Messenger: m, Request: req}, tasks[0])
			if err != nil {
				t.Fatal(err)
			}
			if o.Success || o.Score != 0 {
				t.Errorf("outcome %+v", o)
			}
			steps := o.Details["steps"].([]SciCodeStepResult)
			if len(steps) != 2 {
				t.Fatalf("%d steps", len(steps))
			}
			for _, st := range steps {
				if st.Passed || st.Reason != tc.reason || st.Turns != tc.turns || st.ContextCode != contextReference {
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

// TestSciCodeScenarioDeadline: when the problem's time runs out while the
// solver hangs, Run returns at once with what was done, the steps not
// reached marked not run.
func TestSciCodeScenarioDeadline(t *testing.T) {
	s := newSciCodeForTest(t, RunnerOptions{})
	hang := startTestPurple(t, testPurpleOptions{Name: "hang", Fault: faultHang})
	req := mustParse(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["78"]}}`, hang.URL)
	tasks, err := s.Tasks(req)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMessenger(noop.NewTracerProvider(), nil, MessengerOptions{Logger: quietLogger})
	defer m.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	o, err := s.Run(ctx, &scenario.TaskEnv{Messenger: m, Request: req}, tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run took %s after the deadline", d)
	}
	steps := o.Details["steps"].([]SciCodeStepResult)
	if o.Success || len(steps) != 3 || o.Details["ended_early"] == nil {
		t.Fatalf("outcome %+v", o)
	}
	for _, st := range steps {
		if st.Reason != ReasonNotRun {
			t.Errorf("step %s: %+v", st.Step, st)
		}
	}
}

// TestSciCodeServerLegacyTags runs the SciCode green agent the way the
// original SciCode green agent is run: a 0.3 client sends the legacy tag
// format naming a 0.3 white agent, which answers with the reference code.
func TestSciCodeServerLegacyTags(t *testing.T) {
	s := newSciCodeForTest(t, RunnerOptions{Timeout: oracleStepTimeout})
	split, _ := s.Split(SciCodeValidation)
	log := &sciSolverLog{}
	white := startTestPurple(t, testPurpleOptions{Name: "white", Legacy: true, ReplyFunc: sciCodeTestSolver(t, split, "oracle", log)})
	g := startGreen(t, ServerOptions{Scenarios: map[string]scenario.Scenario{scenario.SciCode: s}, ProgressInterval: time.Minute})
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
		if d["split"] != SciCodeValidation || d["max_num_steps"] != 2.0 || d["solved"] != true {
			t.Errorf("task %v details %v", tk.(map[string]any)["task_id"], d)
		}
	}
	if got := len(log.all()); got != 2 {
		t.Errorf("the white agent got %d messages, want 2", got)
	}
}

// TestSciCodeRequestConfig: the scenario's keys in both request formats,
// and the errors that name what is wrong.
func TestSciCodeRequestConfig(t *testing.T) {
	s := newSciCodeForTest(t, RunnerOptions{})
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
		{"legacy tags", "<white_agent_url>http://x/</white_agent_url><problem_id>13 10</problem_id>\n<split>dev</split><max_num_steps>4</max_num_steps>",
			nil, 0, false, 0},
		{"legacy dev", "<white_agent_url>http://x/</white_agent_url><scicode_problem_id>10</scicode_problem_id><split>dev</split><max_num_steps>4</max_num_steps>",
			[]string{"10"}, 4, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseRequest(tc.req)
			if err != nil {
				t.Fatal(err)
			}
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
			cfg := tasks[0].Data.(*SciCodeTask).Config
			if cfg.MaxTurns != tc.turns || cfg.WithBackground != tc.bg || cfg.StepTimeout != tc.timeout || cfg.Split != SciCodeValidation {
				t.Errorf("config %+v", cfg)
			}
			if req.Config.TaskTimeout() != DefaultSciCodeTaskTimeout || req.Config.Deadline() != DefaultSciCodeDeadline {
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
		req, err := ParseRequest(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Tasks(req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.req, err, tc.want)
		}
		if _, ok := err.(*scenario.RequestError); !ok {
			t.Errorf("%s: error %T, want a *scenario.RequestError", tc.req, err)
		}
	}
}

// TestSciCodeDataMissing: a data directory without the data says what is
// missing, and where.
func TestSciCodeDataMissing(t *testing.T) {
	empty := t.TempDir()
	if _, err := LoadSciCodeSplit(empty, "validation"); err == nil || !strings.Contains(err.Error(), "problems_dev.jsonl") || !strings.Contains(err.Error(), empty) {
		t.Errorf("empty directory: %v", err)
	}
	src := sciCodeTestDir(t)
	b, err := os.ReadFile(filepath.Join(src, "problems_dev.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "problems_dev.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSciCodeSplit(empty, "dev"); err == nil || !strings.Contains(err.Error(), "test_data_dev.h5") {
		t.Errorf("no targets: %v", err)
	}
	if _, err := LoadSciCodeSplit(filepath.Join(empty, "nope"), "dev"); err == nil || !strings.Contains(err.Error(), EnvSciCodeDir) {
		t.Errorf("no directory: %v", err)
	}
	if _, err := NewSciCodeScenario(t.Context(), SciCodeOptions{DataDir: filepath.Join(empty, "nope"), Logger: quietLogger}); err == nil || !strings.Contains(err.Error(), "no split can be loaded") {
		t.Errorf("scenario without data: %v", err)
	}
	t.Setenv(EnvSciCodeDir, filepath.Join(empty, "nope"))
	if _, err := DefaultSciCodeDir(); err == nil || !strings.Contains(err.Error(), EnvSciCodeDir) {
		t.Errorf("$%s naming nothing: %v", EnvSciCodeDir, err)
	}
	bad := filepath.Join(empty, "problems_test.jsonl")
	if err := os.WriteFile(bad, []byte(`{"problem_id": "1", "sub_steps": [{"step_number": "2.1", "function_header": "def f():"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSciCodeProblems(bad); err == nil || !strings.Contains(err.Error(), `step_number "2.1"`) {
		t.Errorf("bad step number: %v", err)
	}
}

// TestSciCodeSplitLoads: the validation split as the data README describes
// it: 15 problems, 50 sub-steps, reference code for each.
func TestSciCodeSplitLoads(t *testing.T) {
	split := sciCodeTestSplit(t)
	if len(split.Problems) != 15 || split.Steps() != 50 || filepath.Base(split.TargetsPath) != "test_data_dev.h5" {
		t.Errorf("%d problems, %d steps, targets %s", len(split.Problems), split.Steps(), split.TargetsPath)
	}
	for _, p := range split.Problems {
		for _, st := range p.Steps {
			if st.Reference == "" || st.FunctionName() == "" || !st.Scored() {
				t.Errorf("step %s: reference %d bytes, function %q, %d tests", st.Number, len(st.Reference), st.FunctionName(), len(st.TestCases))
			}
		}
	}
	test, err := readSciCodeProblems(filepath.Join(sciCodeTestDir(t), "problems_test.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	total, scored := 0, 0
	for _, p := range test {
		for _, st := range p.Steps {
			total++
			if st.Scored() {
				scored++
			}
		}
	}
	if len(test) != 65 || scored != 288 || total != 291 {
		t.Errorf("test split: %d problems, %d of %d steps scored; want 65, 288 of 291", len(test), scored, total)
	}
}

// TestExtractSciCodeAnswer: the three answer forms, and what is not code.
func TestExtractSciCodeAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		data       []map[string]any
		code, src  string
	}{
		{"data part", "see data", []map[string]any{{"code": "def f():\n    return 1"}}, "def f():\n    return 1\n", AnswerFromData},
		{"json text", `{"code": "def f():\n    return 2"}`, nil, "def f():\n    return 2\n", AnswerFromJSON},
		{"fenced json", "Here:\n```json\n{\"code\": \"x = 1\"}\n```", nil, "x = 1\n", AnswerFromJSON},
		{"code tags", "Answer: <code>\ndef f():\n    return 3\n</code> done", nil, "def f():\n    return 3\n", AnswerFromCodeTag},
		{"code tags around a fence", "<code>```python\nx = 4\n```</code>", nil, "x = 4\n", AnswerFromCodeTag},
		{"python fence first", "Plan.\n```text\nnot code\n```\n```python\ndef f():\n    return 5\n```\nUsage:\n```python\nf()\n```", nil, "def f():\n    return 5\n", AnswerFromFence},
		{"any fence", "```\ny = 6\n```", nil, "y = 6\n", AnswerFromFence},
		{"crlf", "```py\r\nz = 7\r\n```", nil, "z = 7\n", AnswerFromFence},
		{"prose", "I think the answer is 42.", nil, "", ""},
		{"empty json code", `{"code": "  "}`, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, src := ExtractSciCodeAnswer(tc.text, tc.data)
			if code != tc.code || src != tc.src {
				t.Errorf("got %q from %q, want %q from %q", code, src, tc.code, tc.src)
			}
		})
	}
}

// TestSciCodeScriptSections: the script is SciCode's, and its sections
// name the lines a failure points at.
func TestSciCodeScriptSections(t *testing.T) {
	split := sciCodeTestSplit(t)
	p, _ := split.Problem("19")
	script, sections := BuildSciCodeScript(p, 1, []string{"def first():\n    return 1"}, "def second():\n    return 2\n")
	lines := strings.Split(script, "\n")
	want := []string{SectionDependencies, "step 19.1's code", SectionAnswer, SectionTargets, "test case 1 of 4", "test case 2 of 4", "test case 3 of 4", "test case 4 of 4"}
	var got []string
	for _, s := range sections {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sections %v, want %v", got, want)
	}
	if l := lines[sections[2].From-1]; l != "def second():" {
		t.Errorf("the answer starts at line %d: %q", sections[2].From, l)
	}
	if l := lines[sections[4].From-1]; l != "target = targets[0]" {
		t.Errorf("test case 1 starts with %q", l)
	}
	if !strings.Contains(script, "targets = process_hdf5_to_tuple('19.2', 4, 3)") {
		t.Errorf("script:\n%s", script)
	}
}
