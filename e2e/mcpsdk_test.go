package e2e

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/scenario/scicode"
	"github.com/coordbench/coordbench/tracedata"
)

// The official MCP SDKs as participants: two real purple agents, each its
// own process, that work the green agent's tasks through MCP only with an
// official SDK, unpatched, over its stock Streamable HTTP client transport
// (e2e/testdata/mcp-js: @modelcontextprotocol/sdk 1.32.2 and @a2a-js/sdk;
// e2e/testdata/mcp-py: mcp 2.3.0 and a2a-sdk, in their own virtual
// environment). `make mcp-clients` installs them (docs/mcp.md, "A
// participant's quick start").

// sdkParticipant is one of the participant programs.
type sdkParticipant struct {
	name string
	// agent is the name the participant's agent card gives it, by which
	// the graph knows it.
	agent string
	// traceparentModes are the program's MCP_TRACEPARENT values, if any.
	traceparentModes []string
	dir              string // below the module root
	// command returns the program and its arguments, after checking that
	// what it needs is installed.
	command func(t *testing.T, dir string) []string
}

var sdkParticipants = []sdkParticipant{
	{name: "typescript", agent: "mcp-participant-js", traceparentModes: []string{"forward", "previous", "alternate"}, dir: "e2e/testdata/mcp-js", command: func(t *testing.T, dir string) []string {
		node := testenv.NeedTool(t, "node", "Node.js 20 or later")
		needInstalled(t, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
		needInstalled(t, filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json"))
		return []string{node, "participant.mjs"}
	}},
	{name: "python", agent: "mcp-participant-py", dir: "e2e/testdata/mcp-py", command: func(t *testing.T, dir string) []string {
		py := needInstalled(t, filepath.Join(dir, ".venv", "bin", "python"))
		out, err := exec.CommandContext(t.Context(), py, "-c",
			"import importlib.metadata as m; print(' '.join(p + '==' + m.version(p) for p in ('mcp', 'a2a-sdk', 'uvicorn')))").CombinedOutput()
		if err != nil {
			testenv.Missing(t, "the Python participant's virtual environment lacks its packages (make mcp-clients): %v: %s", err, out)
		}
		t.Logf("%s: %s", py, strings.TrimSpace(string(out)))
		return []string{py, "participant.py"}
	}},
}

// needInstalled returns path if it exists, else skips (fails under CI)
// saying how to install the participants.
func needInstalled(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		testenv.Missing(t, "the participants on the official MCP SDKs are not installed (make mcp-clients): %v", err)
	}
	return path
}

// startParticipant starts a participant program on loopback and returns its
// A2A URL; the test's cleanup stops it (SIGTERM, then SIGKILL) and logs its
// standard error when the test failed.
func startParticipant(t *testing.T, p sdkParticipant, env ...string) string {
	t.Helper()
	dir := filepath.Join(testenv.ModuleRoot(t), filepath.FromSlash(p.dir))
	argv := p.command(t, dir)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	// The URL line comes through a pipe of our own, so that Wait never
	// races a reader of it.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, pw, stderr
	cmd.Env = append(os.Environ(), env...)
	err = cmd.Start()
	pw.Close()
	if err != nil {
		t.Fatalf("start %s participant: %v", p.name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		stderr.Close()
		if t.Failed() {
			if b, err := os.ReadFile(stderr.Name()); err == nil && len(b) > 0 {
				t.Logf("%s participant's stderr:\n%s", p.name, b)
			}
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- s
	}()
	var first string
	select {
	case first = <-line:
	case err := <-exited:
		exited <- err
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("%s participant exited before it listened: %v\n%s", p.name, err, b)
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s participant did not say where it listens within 2 minutes", p.name)
	}
	var ready struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(first), &ready); err != nil || ready.URL == "" {
		t.Fatalf("%s participant's first line %q: %v", p.name, first, err)
	}
	return ready.URL
}

// assessOne runs one assessment of the participant at url.
func assessOne(t *testing.T, h *loopback.Harness, url, delivery string, config map[string]any) *report.Result {
	t.Helper()
	c := map[string]any{"delivery": delivery, "settle_max_wait_ms": 3000, "settle_quiet_ms": 200}
	for k, v := range config {
		c[k] = v
	}
	raw, err := h.Assess(t.Context(), map[string]string{"solver": url}, c)
	if err != nil {
		t.Fatalf("%s: %v", delivery, err)
	}
	var res report.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Score == nil || res.MaxScore == nil {
		t.Fatalf("%s: no score: %s", delivery, raw)
	}
	return &res
}

// checkCoordination compares a coordination assessment worked through MCP
// with the same in text, task by task, and checks where the tool calls are
// in each task's trace; participant is the name the graph gives the
// participant.
func checkCoordination(t *testing.T, text, viaTools *report.Result, participant string) {
	t.Helper()
	if len(text.Tasks) != 3 || len(viaTools.Tasks) != 3 {
		t.Fatalf("tasks: text %d, mcp %d", len(text.Tasks), len(viaTools.Tasks))
	}
	if *viaTools.Score != *text.Score || *viaTools.MaxScore != *text.MaxScore {
		t.Errorf("score: text %v of %v, mcp %v of %v", *text.Score, *text.MaxScore, *viaTools.Score, *viaTools.MaxScore)
	}
	for i, tt := range text.Tasks {
		mt := viaTools.Tasks[i]
		to, mo := tt.Outcome, mt.Outcome
		if to == nil || mo == nil {
			t.Fatalf("task %s: no outcome (text %v, mcp %v)", tt.TaskID, to, mo)
		}
		if mo.Score != to.Score || mo.Success != to.Success || to.Details["decision"] != "accept" ||
			mo.Details["decision"] != to.Details["decision"] || mo.Details["recommendation"] != to.Details["recommendation"] {
			t.Errorf("task %s: mcp %v %v %v/%v (%s), text %v %v %v/%v (%s)", tt.TaskID,
				mo.Score, mo.Success, mo.Details["decision"], mo.Details["recommendation"], mo.Summary,
				to.Score, to.Success, to.Details["decision"], to.Details["recommendation"], to.Summary)
		}
		if mo.Details["answer_source"] != coordination.AnswerFromTool {
			t.Errorf("task %s: answer from %v", tt.TaskID, mo.Details["answer_source"])
		}
		if got := toolSteps(t, mt); !maps.Equal(got, map[string]int{"read_paper": 1, "submit_review": 1}) {
			t.Errorf("task %s: tool calls in the trace %v, want read_paper and submit_review once", mt.TaskID, got)
		}
		// The participant stays in the graph, called by the assessor.
		found := false
		for _, in := range mt.Interactions {
			found = found || in.From == green.DefaultServiceName && in.To == participant && in.Count == 1
		}
		if !found {
			t.Errorf("task %s: no call %s -> %s among %+v", mt.TaskID, green.DefaultServiceName, participant, mt.Interactions)
		}
	}
}

// assessBoth runs the same assessment in text and through MCP.
func assessBoth(t *testing.T, h *loopback.Harness, url string, config map[string]any) (text, viaTools *report.Result) {
	t.Helper()
	return assessOne(t, h, url, scenario.DeliveryText, config), assessOne(t, h, url, scenario.DeliveryMCP, config)
}

// toolSteps reads the tool calls of a task worked through MCP with no
// traceparent in params._meta out of its assembled trace (docs/mcp.md#spans):
// each is a TOOL step named "tools/call <tool>" in the task's trace, the
// child of the task's own span (the HOST step), on the assessor's node, and
// no tool server and no call to one appear. It returns the calls by tool.
func toolSteps(t *testing.T, tr report.TaskResult) map[string]int {
	t.Helper()
	task := ""
	for _, s := range tr.Steps {
		if s.Name == otelmap.SpanTask && s.CallType == tracedata.CallHost {
			task = s.StepID
		}
	}
	if task == "" {
		t.Fatalf("task %s: no task step among %d", tr.TaskID, len(tr.Steps))
	}
	calls := map[string]int{}
	for _, s := range tr.Steps {
		tool, ok := strings.CutPrefix(s.Name, mcpcall.MethodToolsCall+" ")
		if !ok {
			continue
		}
		if s.CallType != tracedata.CallTool || s.ParentStepID != task || s.TraceID != tr.TraceID || s.Agent != green.DefaultServiceName || s.Error != "" {
			t.Errorf("task %s: tool step %s: %s, parent %s (the task's %s), trace %s, agent %s, error %q",
				tr.TaskID, s.Name, s.CallType, s.ParentStepID, task, s.TraceID, s.Agent, s.Error)
		}
		calls[tool]++
	}
	for _, a := range tr.Agents {
		if a.Role == tracedata.RoleToolServer {
			t.Errorf("task %s: a tool server %s with no caller the trace names", tr.TaskID, a.Name)
		}
	}
	return calls
}

// TestOfficialMCPSDKs: each official MCP SDK, unpatched, as a participant
// works a coordination and a SciCode assessment through MCP only (list the
// tools, read, run the code, submit), and the result is the text mode's for
// the same answers: the same scores, decisions, steps, turns and verdicts.
// Every tool call is in the task's trace and its assembled graph, though
// neither SDK puts a traceparent in params._meta here (the TypeScript SDK
// never does; the Python SDK does only under a live OpenTelemetry context,
// which this participant does not set up): a step under the task's span.
func TestOfficialMCPSDKs(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	dataDir := testenv.SharedData(t, "scicode")
	testenv.NeedPython(t, "numpy", "scipy", "h5py")
	before := runtime.NumGoroutine()
	quiet := slog.New(slog.DiscardHandler)
	sc, err := scicode.New(t.Context(), scicode.Options{DataDir: dataDir, Sandbox: sandbox.Options{Timeout: 30 * time.Minute}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	coord, err := coordination.New(coordination.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := loopback.Start(t.Context(), loopback.Options{Green: green.ServerOptions{
		Scenarios: map[string]scenario.Scenario{scenario.SciCode: sc, scenario.Coordination: coord},
		Getenv:    func(string) string { return "" }, Logger: quiet,
	}, CallTimeout: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		sc.Close()
		checkNoLeak(t, before)
	}()
	const wrongFirst = "29.2" // the scripted model's first draft of this step fails
	coordConfig := map[string]any{"num_tasks": 3}
	for _, p := range sdkParticipants {
		t.Run(p.name, func(t *testing.T) {
			url := startParticipant(t, p, "COORDBENCH_SCICODE_DIR="+dataDir, "FIRST_DRAFT_WRONG="+wrongFirst)
			var coordText *report.Result
			t.Run("coordination", func(t *testing.T) {
				var viaTools *report.Result
				coordText, viaTools = assessBoth(t, h, url, coordConfig)
				checkCoordination(t, coordText, viaTools, p.agent)
			})
			// The rule for a traceparent in params._meta, tried with the
			// real client: the tool calls stay in their own task's trace,
			// under its span, and the participant in the graph.
			for _, mode := range p.traceparentModes {
				t.Run("coordination with MCP_TRACEPARENT="+mode, func(t *testing.T) {
					if coordText == nil {
						t.Skip("no text result to compare with")
					}
					url := startParticipant(t, p, "MCP_TRACEPARENT="+mode)
					checkCoordination(t, coordText, assessOne(t, h, url, scenario.DeliveryMCP, coordConfig), p.agent)
				})
			}
			t.Run("scicode", func(t *testing.T) {
				text, viaTools := assessBoth(t, h, url, map[string]any{"scenario": "scicode", "problem_ids": []string{"29"}, "max_num_steps": 2})
				if *text.Score != *text.MaxScore || *viaTools.Score != *text.Score {
					t.Errorf("score: text %v of %v, mcp %v", *text.Score, *text.MaxScore, *viaTools.Score)
				}
				ts, ms := sciSteps(t, text), sciSteps(t, viaTools)
				if len(ts) != 3 || len(ms) != len(ts) {
					t.Fatalf("steps: text %d, mcp %d", len(ts), len(ms))
				}
				messages := 0
				for i, s := range ts {
					m := ms[i]
					wantTurns := 1
					if s.Step == wrongFirst {
						wantTurns = 2
					}
					messages += wantTurns
					if m.Passed != s.Passed || m.Reason != s.Reason || m.Turns != s.Turns || s.Turns != wantTurns || !s.Passed {
						t.Errorf("step %s: mcp %v %s in %d turns, text %v %s in %d (want %d)", s.Step, m.Passed, m.Reason, m.Turns, s.Passed, s.Reason, s.Turns, wantTurns)
					}
					if len(m.Attempts) != len(s.Attempts) {
						t.Errorf("step %s: %d attempts through MCP, %d in text", s.Step, len(m.Attempts), len(s.Attempts))
						continue
					}
					for j, a := range s.Attempts {
						b := m.Attempts[j]
						if b.Reason != a.Reason || b.Turn != a.Turn || b.Code != a.Code {
							t.Errorf("step %s attempt %d: mcp %s (turn %d), text %s (turn %d); same code %v", s.Step, j, b.Reason, b.Turn, a.Reason, a.Turn, b.Code == a.Code)
						}
						if b.AnswerSource != scicode.AnswerFromTool {
							t.Errorf("step %s attempt %d: answer from %q", s.Step, j, b.AnswerSource)
						}
					}
				}
				// read_step, run_code and submit_step for each message.
				want := map[string]int{"read_step": messages, "run_code": messages, "submit_step": messages}
				if got := toolSteps(t, viaTools.Tasks[0]); !maps.Equal(got, want) {
					t.Errorf("tool calls in the trace %v, want %v", got, want)
				}
			})
		})
	}
	if n := h.Green().MCP().OpenTasks(); n != 0 {
		t.Errorf("%d MCP endpoints open after the assessments", n)
	}
}

// sciSteps reads a SciCode result's steps.
func sciSteps(t *testing.T, r *report.Result) []scicode.StepResult {
	t.Helper()
	if len(r.Tasks) != 1 || r.Tasks[0].Outcome == nil {
		t.Fatalf("tasks %+v", r.Tasks)
	}
	b, err := json.Marshal(r.Tasks[0].Outcome.Details["steps"])
	if err != nil {
		t.Fatal(err)
	}
	var out []scicode.StepResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
