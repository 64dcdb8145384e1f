package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/report"
)

// Generous bounds: the test must pass on a tenth of a core.
const (
	pyStartTimeout  = 3 * time.Minute
	pyAssessTimeout = 8 * time.Minute
	pyStopTimeout   = 2 * time.Minute
)

// TestAgentBeatsPython runs an assessment the way AgentBeats' Python
// tooling does (docs/python-participants.md): bin/green (built from this
// tree) serving, a team of Python purple participants exporting
// OpenTelemetry Python spans to its receiver (a coordinator and a reviewer
// on a2a-sdk 1.x, a reviewer on the 0.3 line), a scenario TOML naming them,
// and AgentBeats' client (testdata/agentbeats-py/client/client_cli.py, a2a-sdk 0.3)
// sending the request and writing the Result artifact's data parts. The
// same green agent and team are then assessed through our own A2A client
// (a2acall, as internal/loopback's harness sends it), and the two results
// must agree on what the team did: scores, outcomes, labels, evidence and
// the graph. The virtual environments come from `make
// python-participants` (.ci/run makes them): without them the test skips,
// and fails under CI=true.
func TestAgentBeatsPython(t *testing.T) {
	root := testenv.ModuleRoot(t)
	dir := filepath.Join(root, "e2e", "testdata", "agentbeats-py")
	pythons := map[string]string{}
	for _, env := range []string{"client", "sdk1", "sdk03"} {
		py := filepath.Join(dir, env, ".venv", "bin", "python")
		if _, err := os.Stat(py); err != nil {
			testenv.Missing(t, "the AgentBeats Python test's virtual environment %s is missing: run `make python-participants` (%v)", env, err)
		}
		pythons[env] = py
	}
	ctx, cancel := context.WithTimeout(t.Context(), pyAssessTimeout+3*pyStartTimeout)
	defer cancel()

	green := filepath.Join(t.TempDir(), "green")
	build := exec.CommandContext(ctx, "go", "build", "-o", green, "./cmd/green")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/green: %v\n%s", err, out)
	}
	logs := t.TempDir()
	// No LLM: the rule-based judge, so both runs are judged alike.
	env := pyEnv(map[string]string{"AGENTBEATS_LLM_API_KEY": ""})
	greenProc := startProc(t, logs, "green", root, env, green, "--port", "0")
	greenAddr := greenProc.await(t, regexp.MustCompile(`listen=(127\.0\.0\.1:\d+)`), pyStartTimeout)
	greenURL := "http://" + greenAddr

	partEnv := pyEnv(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": greenURL,
		"PYTHONUNBUFFERED":            "1",
		"PYTHONDONTWRITEBYTECODE":     "1",
	})
	participants := filepath.Join(dir, "participants")
	urlLine := regexp.MustCompile(`"url": "([^"]+)"`)
	startAgent := func(name, python string, args ...string) string {
		p := startProc(t, logs, name, participants, partEnv, python, args...)
		u := p.await(t, urlLine, pyStartTimeout)
		waitCard(t, ctx, u, name)
		return u
	}
	r1 := startAgent("reviewer-1", pythons["sdk1"], "agent.py", "--name", "reviewer-1", "--port", "0")
	r2 := startAgent("reviewer-2", pythons["sdk03"], "agent03.py", "--name", "reviewer-2", "--lean", "-1", "--port", "0")
	coord := startAgent("coordinator", pythons["sdk1"], "agent.py", "--name", "coordinator", "--role", "coordinator",
		"--peer", "reviewer-1="+r1, "--peer", "reviewer-2="+r2, "--port", "0")

	team := map[string]string{"coordinator": coord, "reviewer-1": r1, "reviewer-2": r2}
	config := map[string]any{"entry_role": "coordinator", "num_tasks": 2}

	// AgentBeats' client, from a scenario file.
	scenario := filepath.Join(t.TempDir(), "scenario.toml")
	writeScenario(t, scenario, greenURL, team, []string{"coordinator", "reviewer-1", "reviewer-2"})
	out := filepath.Join(t.TempDir(), "output.json")
	client := exec.CommandContext(ctx, pythons["client"], "client_cli.py", scenario, out)
	client.Dir = filepath.Join(dir, "client")
	client.Env = pyEnv(map[string]string{"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
	if b, err := client.CombinedOutput(); err != nil {
		t.Fatalf("client_cli.py: %v\n%s", err, tail(b, 4000))
	}
	viaAgentBeats := readAgentBeatsOutput(t, out)

	// Our own client, the same request.
	viaOurs := assessThroughA2ACall(t, ctx, greenURL, team, config)

	a, b := pyResultView(viaAgentBeats), pyResultView(viaOurs)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", "  ")
		jb, _ := json.MarshalIndent(b, "", "  ")
		t.Fatalf("AgentBeats' client and ours got different results:\nAgentBeats:\n%s\nours:\n%s", ja, jb)
	}
	view, _ := json.MarshalIndent(a, "", "  ")
	t.Logf("both clients: %s", view)

	// What the team did, so that agreeing on nothing cannot pass.
	if len(a.Tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(a.Tasks))
	}
	for _, task := range a.Tasks {
		if task.Outcome == "" {
			t.Errorf("%s: no outcome", task.TaskID)
		}
		agents := strings.Join(task.Agents, ",")
		if agents != "coordbench-green,coordinator,reviewer-1,reviewer-2" {
			t.Errorf("%s: agents %s", task.TaskID, agents)
		}
		calls := map[string]int{}
		for _, e := range task.Calls {
			calls[e.From+"->"+e.To] += e.BothSides
			if e.ClientOnly > 0 {
				// The a2a-sdk 1.x client's method spans between the
				// GenAI invoke_agent CLIENT span and the POST once made
				// that span a second, unanswered call
				// (otelmap/assemble/testdata/live/a2a-sdk-py/FINDINGS.md).
				t.Errorf("%s: %s -> %s: %d client-only call(s) besides the real one", task.TaskID, e.From, e.To, e.ClientOnly)
			}
		}
		for _, want := range []string{"coordbench-green->coordinator", "coordinator->reviewer-1", "coordinator->reviewer-2"} {
			if calls[want] != 1 {
				t.Errorf("%s: %s seen from both sides %d times, want 1 (calls %+v)", task.TaskID, want, calls[want], task.Calls)
			}
		}
		if task.Evidence != evals.EvidenceComplete {
			t.Errorf("%s: evidence %s, want complete: %v", task.TaskID, task.Evidence, task.Reasons)
		}
	}

	// A participant that leaves the HTTP instrumentation out, which the
	// quick start warns against: the SDK's own spans alone propagate no
	// trace context, so its work starts traces the green agent does not
	// hold, and the result must say that nothing answered its call rather
	// than read it as complete (with the instrumentation it reads
	// single_agent, complete: checked by hand when this was written).
	bare := startAgent("reviewer-bare", pythons["sdk1"], "agent.py", "--name", "reviewer-bare", "--no-http-instrumentation", "--port", "0")
	res := assessThroughA2ACall(t, ctx, greenURL, map[string]string{"reviewer": bare},
		map[string]any{"num_tasks": 1, "settle_max_wait_ms": 3000})
	for _, tv := range pyResultView(res).Tasks {
		if tv.Label != evals.LabelInsufficientEvidence || tv.Evidence != evals.EvidenceInsufficient ||
			!strings.Contains(strings.Join(tv.Reasons, " "), "no span of reviewer-bare answered") {
			t.Errorf("%s: a participant whose spans are not joined reads %s, evidence %s %v; want insufficient_evidence, no span of reviewer-bare answered",
				tv.TaskID, tv.Label, tv.Evidence, tv.Reasons)
		}
	}
}

// pyEnv is the environment without the caller's OpenTelemetry and LLM
// settings, plus set.
func pyEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || strings.HasPrefix(k, "AGENTBEATS_LLM_") {
			continue
		}
		if _, over := set[k]; over {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// proc is a process of the test, its output teed to a log file and
// scanned for a line.
type proc struct {
	name  string
	cmd   *exec.Cmd
	lines chan string
	log   string
}

// startProc starts name and stops it (SIGTERM, then SIGKILL) when the
// test ends; its stdout and stderr lines are logged and scanned.
func startProc(t *testing.T, logs, name, dir string, env []string, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	_ = pw.Close()
	p := &proc{name: name, cmd: cmd, lines: make(chan string, 1024), log: filepath.Join(logs, name+".log")}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer f.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			fmt.Fprintln(f, sc.Text())
			select {
			case p.lines <- sc.Text():
			default: // nobody is waiting for lines any more
			}
		}
		_ = pr.Close()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Errorf("%s: %v", name, err)
			} else if err != nil {
				t.Errorf("%s exited with %v after SIGTERM; its log:\n%s", name, err, tailFile(p.log))
			}
		case <-time.After(pyStopTimeout):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%s did not stop within %s of SIGTERM; its log:\n%s", name, pyStopTimeout, tailFile(p.log))
		}
		<-scanned
	})
	return p
}

// await returns the first submatch of re in p's output.
func (p *proc) await(t *testing.T, re *regexp.Regexp, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case line := <-p.lines:
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-deadline:
			t.Fatalf("%s printed no line matching %s within %s; its log:\n%s", p.name, re, within, tailFile(p.log))
		}
	}
}

// waitCard waits until the agent at base serves its card.
func waitCard(t *testing.T, ctx context.Context, base, name string) {
	t.Helper()
	url := strings.TrimSuffix(base, "/") + "/.well-known/agent-card.json"
	deadline := time.Now().Add(pyStartTimeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s serves no agent card at %s: %v", name, url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeScenario writes the scenario file AgentBeats' client reads
// (agentbeats-tutorial scenarios/*/scenario.toml): the green agent and each
// participant's role and endpoint, with the request's config.
func writeScenario(t *testing.T, path, green string, team map[string]string, roles []string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[green_agent]\nendpoint = %q\n", green)
	for _, role := range roles {
		fmt.Fprintf(&b, "\n[[participants]]\nrole = %q\nendpoint = %q\nagentbeats_id = %q\n", role, team[role], "id-"+role)
	}
	b.WriteString("\n[config]\nentry_role = \"coordinator\"\nnum_tasks = 2\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readAgentBeatsOutput reads client_cli.py's output file and returns the
// one coordbench result among its results.
func readAgentBeatsOutput(t *testing.T, path string) *report.Result {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("client_cli.py wrote no output: %v", err)
	}
	var out struct {
		Participants map[string]string `json:"participants"`
		Results      []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("client_cli.py's output: %v", err)
	}
	if want := map[string]string{"coordinator": "id-coordinator", "reviewer-1": "id-reviewer-1", "reviewer-2": "id-reviewer-2"}; !reflect.DeepEqual(out.Participants, want) {
		t.Errorf("output participants %v, want %v", out.Participants, want)
	}
	if len(out.Results) != 1 {
		t.Fatalf("client_cli.py's output holds %d results, want the Result artifact's one data part", len(out.Results))
	}
	res, err := report.Decode(out.Results[0])
	if err != nil {
		t.Fatalf("decode AgentBeats' result: %v", err)
	}
	return res
}

// assessThroughA2ACall sends the request with our A2A client and decodes
// the Result artifact's data part.
func assessThroughA2ACall(t *testing.T, ctx context.Context, green string, team map[string]string, config map[string]any) *report.Result {
	t.Helper()
	text, err := json.Marshal(map[string]any{"participants": team, "config": config})
	if err != nil {
		t.Fatal(err)
	}
	m := a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{CallTimeout: pyAssessTimeout})
	defer func() { _ = m.Close() }()
	reply, err := m.Send(ctx, a2acall.SendRequest{URL: green + "/", Text: string(text)})
	if err != nil {
		t.Fatalf("assessment through a2acall: %v", err)
	}
	for _, d := range reply.Data {
		if d["schema"] != report.Schema {
			continue
		}
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		res, err := report.Decode(raw)
		if err != nil {
			t.Fatalf("decode our result: %v", err)
		}
		return res
	}
	t.Fatalf("the assessment ended %s without a result: %q", reply.State, reply.Text)
	return nil
}

// pyView is what two assessments of the same deterministic team must
// share: not trace ids, times or latencies.
type pyView struct {
	Domain   string
	Score    float64
	PassRate float64
	Tasks    []pyTaskView
}

type pyTaskView struct {
	TaskID, Outcome                  string
	Success                          bool
	OutcomeScore                     float64
	Label, Evidence, GraphLabel      string
	Reasons, Agents, Findings        []string
	Calls                            []pyCall
	Interactions, BothSides, Clients int
}

type pyCall struct {
	From, To                         string
	Count, BothSides, ClientOnly, SO int
}

func pyResultView(r *report.Result) pyView {
	v := pyView{Domain: r.Domain}
	if r.Score != nil {
		v.Score = *r.Score
	}
	if r.PassRate != nil {
		v.PassRate = *r.PassRate
	}
	for _, task := range r.Tasks {
		tv := pyTaskView{TaskID: task.TaskID, Interactions: task.Coverage.Interactions, BothSides: task.Coverage.BothSides, Clients: task.Coverage.ClientOnly}
		if task.Outcome != nil {
			tv.Success, tv.OutcomeScore, tv.Outcome = task.Outcome.Success, task.Outcome.Score, task.Outcome.Summary
		}
		if g, ok := task.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult); ok {
			tv.Label = g.Label
			for _, f := range g.Findings {
				tv.Findings = append(tv.Findings, f.Kind+" "+strings.Join(f.Agents, ","))
			}
			if g.Evidence != nil {
				tv.Evidence, tv.Reasons, tv.GraphLabel = g.Evidence.Level, g.Evidence.Reasons, g.Evidence.GraphLabel
			}
		}
		for _, a := range task.Agents {
			tv.Agents = append(tv.Agents, a.Name)
		}
		sort.Strings(tv.Agents)
		for _, in := range task.Interactions {
			tv.Calls = append(tv.Calls, pyCall{From: in.From, To: in.To, Count: in.Count, BothSides: in.BothSides, ClientOnly: in.ClientOnly, SO: in.ServerOnly})
		}
		sort.Slice(tv.Calls, func(i, j int) bool {
			return tv.Calls[i].From+"\x00"+tv.Calls[i].To < tv.Calls[j].From+"\x00"+tv.Calls[j].To
		})
		v.Tasks = append(v.Tasks, tv)
	}
	return v
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(b, 4000)
}
