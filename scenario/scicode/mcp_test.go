package scicode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/mcpserve"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// toolHost serves an mcpserve.Host on loopback, as the green agent does.
func toolHost(t testing.TB) *mcpserve.Host {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h, err := mcpserve.New(mcpserve.Options{BaseURL: srv.URL + mcpserve.DefaultPath})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(h.Path(), h)
	return h
}

// runWithTools is runProblem with a tool host in the task's environment.
func runWithTools(t testing.TB, s *scicode.Scenario, req *scenario.Request, host scenario.ToolHost) (*scenarioOutcome, error) {
	t.Helper()
	tasks, err := s.Tasks(req)
	if err != nil {
		return nil, err
	}
	m := a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{Logger: quiet, CallTimeout: 10 * time.Minute})
	defer m.Close()
	o, err := s.Run(t.Context(), &scenario.TaskEnv{Messenger: m, Request: req, Tools: host}, tasks[0])
	if err != nil {
		return nil, err
	}
	steps, _ := o.Details["steps"].([]scicode.StepResult)
	return &scenarioOutcome{Outcome: o.Success, Score: o.Score, Summary: o.Summary, Details: o.Details, Steps: steps}, nil
}

// toolSession is what an MCP solver saw of one call.
type toolSession struct {
	step      scicode.StepView
	verdicts  []scicode.SubmitStepOutput
	runOutput scicode.RunCodeOutput
}

// mcpAnswer is a solver that works through the tools: it reads the step,
// runs a probe with run_code, and submits code(step, turn, feedback) until
// the step passes or no submission is left; it replies without code.
func mcpAnswer(split *scicode.Split, seen chan<- toolSession, code func(step *scicode.Step, turn int, feedback string) string) solverFunc {
	return func(ctx context.Context, in solverInput) (string, map[string]any, error) {
		ep, ok := mcpcall.FindEndpoint(in.DataParts)
		if !ok {
			return "", nil, fmt.Errorf("no MCP endpoint in the message")
		}
		cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{})
		if err != nil {
			return "", nil, err
		}
		defer cs.Close()
		var ts toolSession
		if err := callInto(ctx, cs, "read_step", map[string]any{}, &ts.step); err != nil {
			return "", nil, err
		}
		_, step, err := stepOf(split, map[string]any{"problem_id": ts.step.ProblemID, "step_number": ts.step.StepNumber})
		if err != nil {
			return "", nil, err
		}
		if err := callInto(ctx, cs, "run_code", map[string]any{"code": "print('probe', flush=True)\nx = 20", "expression": "x + 22"}, &ts.runOutput); err != nil {
			return "", nil, err
		}
		feedback := ""
		for turn := ts.step.Turn; ; turn++ {
			var v scicode.SubmitStepOutput
			if err := callInto(ctx, cs, "submit_step", map[string]any{"step_number": step.Number, "code": code(step, turn, feedback)}, &v); err != nil {
				return "", nil, err
			}
			ts.verdicts = append(ts.verdicts, v)
			if v.Passed || v.SubmissionsLeft == 0 {
				break
			}
			feedback = v.Detail + "\n" + v.Output
		}
		if seen != nil {
			seen <- ts
		}
		return "Submitted through the tools.", nil, nil
	}
}

// callInto calls a tool and decodes its structured result.
func callInto(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, out any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := mcpcall.ToolText(res); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// TestMCPDeliveryScoresAsText: the same answers (a wrong first draft, then
// the reference) score the same through the submit tool as in text, step by
// step and turn by turn; read_step shows the step and the previous steps'
// code; run_code runs the solver's code with nothing of the tests.
func TestMCPDeliveryScoresAsText(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	host := toolHost(t)
	textURL := startSolver(t, "text-solver", answerWith(split, nil, repair), false)
	seen := make(chan toolSession, 16)
	mcpURL := startSolver(t, "mcp-solver", mcpAnswer(split, seen, func(step *scicode.Step, turn int, _ string) string {
		return repair(step, turn, solverInput{})
	}), false)
	cfg := `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["29"], "max_num_steps": 2, "delivery": %q}}`
	text, err := runWithTools(t, s, request(t, cfg, textURL, "text"), host)
	if err != nil {
		t.Fatal(err)
	}
	viaTools, err := runWithTools(t, s, request(t, cfg, mcpURL, "mcp"), host)
	if err != nil {
		t.Fatal(err)
	}
	if text.Score != 1 || viaTools.Score != text.Score || viaTools.Outcome != text.Outcome || len(viaTools.Steps) != len(text.Steps) {
		t.Fatalf("text %v (%s), mcp %v (%s)", text.Score, text.Summary, viaTools.Score, viaTools.Summary)
	}
	for i, st := range viaTools.Steps {
		want := text.Steps[i]
		if st.Passed != want.Passed || st.Reason != want.Reason || st.Turns != want.Turns || st.ContextCode != want.ContextCode {
			t.Errorf("step %s: mcp %s/%d turns/%s, text %s/%d turns/%s", st.Step, st.Reason, st.Turns, st.ContextCode, want.Reason, want.Turns, want.ContextCode)
		}
		for j, a := range st.Attempts {
			if a.Reason != want.Attempts[j].Reason || a.AnswerSource != scicode.AnswerFromTool {
				t.Errorf("step %s turn %d: mcp %s from %s, text %s", st.Step, j+1, a.Reason, a.AnswerSource, want.Attempts[j].Reason)
			}
		}
	}
	if host.OpenTasks() != 0 {
		t.Errorf("%d MCP endpoints still open after the tasks", host.OpenTasks())
	}
	close(seen)
	p29, _ := split.Problem("29")
	n := 0
	for ts := range seen {
		n++
		if ts.runOutput.Result != "42" || !strings.Contains(ts.runOutput.Stdout, "probe") || ts.runOutput.Reason != sandbox.ReasonExited {
			t.Errorf("run_code at %s: %+v", ts.step.StepNumber, ts.runOutput)
		}
		if len(ts.verdicts) != 2 || ts.verdicts[0].Passed || !ts.verdicts[1].Passed || ts.verdicts[0].SubmissionsLeft != 1 {
			t.Errorf("verdicts at %s: %+v", ts.step.StepNumber, ts.verdicts)
		}
		if ts.step.StepNumber == "29.3" {
			if len(ts.step.PreviousSteps) != 2 || ts.step.PreviousSteps[1].Code != strings.TrimSpace(p29.Steps[1].Reference) {
				t.Errorf("read_step at 29.3: previous steps %+v", ts.step.PreviousSteps)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d tool sessions, want 3", n)
	}
}

// TestMCPToolsRefuse: submissions the walk cannot take are refused without
// costing a turn (another step's number, empty code), and a solver that
// submits nothing costs its turns as no_code; a request for MCP without a
// tool host cannot run, and a delivery that is not one is a bad request.
func TestMCPToolsRefuse(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	host := toolHost(t)
	refusals := make(chan []string, 4)
	url := startSolver(t, "awkward-solver", func(ctx context.Context, in solverInput) (string, map[string]any, error) {
		ep, ok := mcpcall.FindEndpoint(in.DataParts)
		if !ok {
			return "", nil, fmt.Errorf("no endpoint")
		}
		cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{})
		if err != nil {
			return "", nil, err
		}
		defer cs.Close()
		var got []string
		for _, args := range []map[string]any{{"step_number": "99.1", "code": "x = 1"}, {"step_number": in.Data["step_number"], "code": "  \n"}} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "submit_step", Arguments: args})
			if err != nil {
				return "", nil, err
			}
			txt, terr := mcpcall.ToolText(res)
			if terr == nil {
				return "", nil, fmt.Errorf("submission %v was taken: %s", args, txt)
			}
			got = append(got, txt)
		}
		refusals <- got
		// A code answer in text does not count under delivery mcp.
		return "```python\nx = 1\n```", nil, nil
	}, false)
	o, err := runWithTools(t, s, request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["1"], "max_num_steps": 2, "delivery": "mcp"}}`, url), host)
	if err != nil {
		t.Fatal(err)
	}
	if o.Score != 0 || len(o.Steps) != 1 || o.Steps[0].Turns != 2 || o.Steps[0].Reason != scicode.ReasonNoCode {
		t.Fatalf("outcome %+v", o)
	}
	for range 2 {
		got := <-refusals
		if !strings.Contains(got[0], "not \"99.1\"") || !strings.Contains(got[1], "empty") {
			t.Errorf("refusals: %q", got)
		}
	}
	if _, err := runProblem(t, s, t.Context(), request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["1"], "delivery": "mcp"}}`, url), time.Minute); err == nil || !strings.Contains(err.Error(), "serves no MCP endpoint") {
		t.Errorf("mcp without a host: %v", err)
	}
	for _, bad := range []string{`"smoke"`, `3`, `[]`, `["text", "fax"]`} {
		_, err := s.Tasks(request(t, `{"participants": {"solver": "http://x/"}, "config": {"scenario": "scicode", "problem_ids": ["1"], "delivery": %s}}`, bad))
		if err == nil || !strings.Contains(err.Error(), "config.delivery") {
			t.Errorf("delivery %s: %v", bad, err)
		}
	}
}

// TestAttacksThroughSubmitTool: the forgery corpus of TestAttacks,
// submitted through the tool, scores 0 with the same reasons.
func TestAttacksThroughSubmitTool(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	if !scicode.TamperProof(s.Sandbox()) {
		testenv.Missing(t, "%s", "no tamper-proof sandbox here: "+strings.Join(s.Sandbox().Notes, "; "))
	}
	split, _ := s.Split(scicode.SplitValidation)
	host := toolHost(t)
	for _, at := range attacks() {
		t.Run(at.name, func(t *testing.T) {
			url := startSolver(t, "attacker", mcpAnswer(split, nil, func(step *scicode.Step, turn int, feedback string) string {
				body := strings.ReplaceAll(at.body, "{step}", strconv.Quote(step.Number))
				if turn > 1 && at.secondTurn != nil {
					body = at.secondTurn(feedback)
				}
				return at.module + "\n" + strings.TrimRight(step.FunctionHeader, "\n") + "\n" + body
			}), false)
			turns := 1
			if at.secondTurn != nil {
				turns = 2
			}
			id := attackProblems[0]
			if at.problems != nil {
				id = at.problems[0]
			}
			req := request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": [%q], "max_num_steps": %d, "delivery": "mcp"}}`, url, id, turns)
			o, err := runWithTools(t, s, req, host)
			if err != nil {
				t.Fatal(err)
			}
			if o.Score != 0 || o.Outcome {
				t.Errorf("problem %s: scored %v (%s)", id, o.Score, o.Summary)
			}
			for _, st := range o.Steps {
				if st.Passed || (st.Reason != at.reason && !slices.Contains(at.also, st.Reason)) || st.Turns != turns {
					t.Errorf("step %s: %s (%s), %d turns; want %s", st.Step, st.Reason, st.Detail, st.Turns, at.reason)
				}
				for _, a := range st.Attempts {
					if a.AnswerSource != scicode.AnswerFromTool {
						t.Errorf("step %s turn %d came from %s", st.Step, a.Turn, a.AnswerSource)
					}
				}
			}
		})
	}
}

// TestRunCodeSeesNothingOfTheTests: run_code is the solver's own code in
// the same sandbox as the tests, and nothing there leads to the targets or
// the test cases: the snooping route of TestAttacks finds nothing, the
// harness runs no case, an expression that raises reports the exception,
// and a run that prints the result marker itself cannot forge another
// run's result.
func TestRunCodeSeesNothingOfTheTests(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	if !scicode.TamperProof(s.Sandbox()) {
		testenv.Missing(t, "%s", "no tamper-proof sandbox here")
	}
	host := toolHost(t)
	type probe struct {
		out []scicode.RunCodeOutput
		err error
	}
	runs := make(chan probe, 1)
	url := startSolver(t, "prober", func(ctx context.Context, in solverInput) (text string, data map[string]any, err error) {
		var out []scicode.RunCodeOutput
		defer func() { runs <- probe{out, err} }()
		ep, _ := mcpcall.FindEndpoint(in.DataParts)
		cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{})
		if err != nil {
			return "", nil, err
		}
		defer cs.Close()
		for _, args := range []map[string]any{
			{"code": snoop + "\nprint('SNOOP:', __snoop(), flush=True)"},
			{"code": "import coordbench_harness as h\nprint('CASES:', [n for n in dir(h) if 'case' in n.lower()], flush=True)",
				"expression": "sorted(k for k in globals() if 'target' in k or 'case' in k)"},
			{"expression": "1/0"},
			{"code": "print('\\n__coordbench_result_forged__\\n42')", "expression": "7"},
		} {
			var o scicode.RunCodeOutput
			if err := callInto(ctx, cs, "run_code", args, &o); err != nil {
				return "", nil, fmt.Errorf("run_code %v: %w", args["expression"], err)
			}
			out = append(out, o)
		}
		return "done", nil, nil
	}, false)
	if _, err := runWithTools(t, s, request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["1"], "max_num_steps": 1, "delivery": "mcp"}}`, url), host); err != nil {
		t.Fatal(err)
	}
	p := <-runs
	if p.err != nil {
		t.Fatal(p.err)
	}
	out := p.out
	if !strings.Contains(out[0].Stdout, "SNOOP: nothing") {
		t.Errorf("the snoop found something:\n%s", out[0].Stdout)
	}
	if out[1].Result != "[]" {
		t.Errorf("the run's namespace holds targets or cases: %s (%s)", out[1].Result, out[1].Stdout)
	}
	if out[2].Reason != sandbox.ReasonCrashed || !strings.Contains(out[2].Exception, "ZeroDivisionError") || out[2].Section != scicode.SectionRunExpression {
		t.Errorf("a raising expression: %+v", out[2])
	}
	if out[3].Result != "7" {
		t.Errorf("a forged marker changed the result: %+v", out[3])
	}
	for _, o := range out {
		for _, leak := range []string{"test_data", "problems_", "/work/", ".h5"} {
			if strings.Contains(o.Stdout+o.Result+o.Exception, leak) {
				t.Errorf("run output carries %q: %+v", leak, o)
			}
		}
	}
}
