package green

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
)

// Full assessments through the served agent: participants failing, concurrency, cancel, deadline, shutdown, bad JSON-RPC, listeners, goroutines.

// coordinationAnswer is a purple agent's answer to the coordination
// scenario's review request.
func coordinationAnswer(decision string) func(context.Context, a2atest.Input) (string, error) {
	return func(context.Context, a2atest.Input) (string, error) {
		return fmt.Sprintf(`{"decision": %q, "recommendation": 4, "scores": {"originality": 4}, "rationale": "test"}`, decision), nil
	}
}

func newCoordinationForServer(t *testing.T) map[string]scenario.Scenario {
	t.Helper()
	c, err := coordination.New(coordination.Options{TitlesOnly: true})
	if err != nil {
		t.Fatalf("coordination scenario: %v", err)
	}
	return map[string]scenario.Scenario{scenario.Coordination: c}
}

// TestServerFullAssessment runs the coordination scenario end to end over
// A2A: a 1.0 client streams an assessment of a 1.0 purple agent that
// exports its spans, and a 0.3 client sends (blocking) an assessment of a
// 0.3 purple agent.
func TestServerFullAssessment(t *testing.T) {
	g := startGreen(t, ServerOptions{Scenarios: newCoordinationForServer(t), ProgressInterval: time.Minute})
	accepter := a2atest.Start(t, a2atest.Options{Name: "accepter", Streaming: true, Extension: true,
		ReplyFunc: coordinationAnswer("accept"), Store: g.srv.Store()})
	legacy := a2atest.Start(t, a2atest.Options{Name: "legacy-rejecter", Legacy: true, Path: "/rejecter",
		ReplyFunc: coordinationAnswer("reject")})

	t.Run("1.0 stream", func(t *testing.T) {
		c := g.client10(t)
		req := fmt.Sprintf(`{"participants": {"reviewer": %q}, "config": {"task_ids": ["iclr2017-305", "iclr2017-749"], "settle_quiet_ms": 100}}`, accepter.URL)
		s := summarize(streamAll(t, t.Context(), c, req))
		if s.final != a2a.TaskStateCompleted {
			t.Fatalf("final state %s: %s", s.final, s.text)
		}
		if s.states[0] != a2a.TaskStateSubmitted || s.states[1] != a2a.TaskStateWorking {
			t.Errorf("states = %v, want submitted, working, ...", s.states)
		}
		if !s.artifactBeforeFinal {
			t.Error("the Result artifact did not come before the final status")
		}
		for _, want := range []string{"assessment started", "task 1/2 done: iclr2017-305 pass", "task 2/2 done: iclr2017-749 fail"} {
			if !slices.ContainsFunc(s.working, func(w string) bool { return strings.Contains(w, want) }) {
				t.Errorf("no working update saying %q in %q", want, s.working)
			}
		}
		if !strings.Contains(s.text, "1 of 2 tasks passed") {
			t.Errorf("final status text = %q", s.text)
		}
		res := resultOf(t, s.artifact)
		checkLeaderboardFields(t, res, "coordination", 2)
		if res["pass_rate"] != 0.5 {
			t.Errorf("pass_rate = %v, want 0.5", res["pass_rate"])
		}
		md := s.artifact.Parts[0].Text()
		if n := strings.Count(md, "```mermaid"); n != 2 {
			t.Errorf("summary has %d Mermaid graphs, want one per task:\n%s", n, md)
		}
		for _, task := range res["tasks"].([]any) {
			task := task.(map[string]any)
			for _, k := range []string{"task_id", "trace_id", "outcome", "coverage", "agents", "interactions", "evaluations"} {
				if _, ok := task[k]; !ok {
					t.Errorf("task %v lacks %q", task["task_id"], k)
				}
			}
			evaluations, _ := task["evaluations"].(map[string]any)
			for _, k := range []string{"graph", "latency", "judge", "text"} {
				if _, ok := evaluations[k]; !ok {
					t.Errorf("task %v lacks evaluation %q", task["task_id"], k)
				}
			}
			if !slices.Contains(taskAgentNames(task), "accepter") {
				t.Errorf("task %v agents %v lack the participant", task["task_id"], taskAgentNames(task))
			}
			// The purple agent's spans reached the store: the green
			// agent's call is seen from both sides.
			if cov := task["coverage"].(map[string]any); cov["both_sides"].(float64) < 1 {
				t.Errorf("task %v coverage = %v", task["task_id"], cov)
			}
		}
	})

	t.Run("0.3 send", func(t *testing.T) {
		c, rec := g.client03(t)
		req := fmt.Sprintf(`{"participants": {"solver": %q}, "config": {"num_tasks": 1, "settle_quiet_ms": 100, "settle_max_wait_ms": 500}}`, legacy.URL)
		out, err := c.SendMessage(t.Context(), userMessage(req))
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		task, ok := out.(*a2a.Task)
		if !ok {
			t.Fatalf("result %T", out)
		}
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("state %s: %s", task.Status.State, messageText(task.Status.Message))
		}
		if len(task.Artifacts) != 1 || task.Artifacts[0].Name != ResultArtifactName {
			t.Fatalf("artifacts = %v", task.Artifacts)
		}
		res := resultOf(t, task.Artifacts[0])
		checkLeaderboardFields(t, res, "coordination", 1)
		if got := rec.methods(); !slices.Equal(got, []string{"message/send"}) {
			t.Errorf("0.3 client sent %v", got)
		}
		if len(legacy.Calls()) != 1 {
			t.Errorf("the 0.3 purple received %d calls, want 1", len(legacy.Calls()))
		}
	})
}

func checkLeaderboardFields(t *testing.T, res map[string]any, domain string, tasks int) {
	t.Helper()
	if res["domain"] != domain {
		t.Errorf("domain = %v", res["domain"])
	}
	score, ok := res["score"].(float64)
	if !ok || score < 0 || score > 100 || res["max_score"] != 100.0 {
		t.Errorf("score %v / %v", res["score"], res["max_score"])
	}
	if pr, ok := res["pass_rate"].(float64); !ok || pr < 0 || pr > 1 {
		t.Errorf("pass_rate = %v", res["pass_rate"])
	}
	if tu, ok := res["time_used"].(float64); !ok || tu <= 0 {
		t.Errorf("time_used = %v", res["time_used"])
	}
	if got := len(res["tasks"].([]any)); got != tasks {
		t.Errorf("%d tasks, want %d", got, tasks)
	}
}

func taskAgentNames(task map[string]any) []string {
	var names []string
	for _, a := range task["agents"].([]any) {
		names = append(names, a.(map[string]any)["name"].(string))
	}
	return names
}

// routeScenario sends task "<role>#<n>" to participant <role> and passes
// when it completes: a scenario small enough that a test reads its whole
// behaviour here.
type routeScenario struct{ ids []string }

func (routeScenario) Name() string { return "route" }

func (s routeScenario) Tasks(req *scenario.Request) ([]scenario.Task, error) {
	ids := s.ids
	if len(req.Config.TaskIDs) > 0 {
		ids = req.Config.TaskIDs
	}
	var tasks []scenario.Task
	for _, id := range ids {
		role, _, _ := strings.Cut(id, "#")
		if _, ok := req.Participants[role]; !ok {
			return nil, fmt.Errorf("route: task %s names no participant", id)
		}
		tasks = append(tasks, scenario.Task{ID: id, Data: role})
	}
	return tasks, nil
}

func (routeScenario) Run(ctx context.Context, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	role := task.Data.(string)
	if role == "panic" {
		panic("route: deliberate panic")
	}
	reply, err := env.Messenger.Send(ctx, a2acall.SendRequest{URL: env.Request.Participants[role], Text: "do " + task.ID})
	if err != nil {
		return &evals.Outcome{Summary: role + " failed: " + err.Error(), Details: map[string]any{"error": err.Error()}}, nil
	}
	return &evals.Outcome{Success: true, Score: 1, Summary: role + " answered " + reply.Text}, nil
}

func routeServer(t *testing.T, progress time.Duration) *greenUnderTest {
	return startGreen(t, ServerOptions{Scenarios: map[string]scenario.Scenario{"route": routeScenario{}}, ProgressInterval: progress})
}

// TestServerParticipantFailures: a participant that hangs, crashes,
// refuses the connection, answers garbage or fails its task costs its task
// a recorded failure; the assessment completes.
func TestServerParticipantFailures(t *testing.T) {
	g := routeServer(t, time.Minute)
	participants := map[string]string{
		"good":    a2atest.Start(t, a2atest.Options{Name: "good", Reply: "done"}).URL,
		"hang":    a2atest.Start(t, a2atest.Options{Name: "hang", Fault: a2atest.FaultHang}).URL,
		"crash":   a2atest.Start(t, a2atest.Options{Name: "crash", Fault: a2atest.FaultCrash}).URL,
		"garbage": a2atest.Start(t, a2atest.Options{Name: "garbage", Fault: a2atest.FaultGarbage}).URL,
		"fail":    a2atest.Start(t, a2atest.Options{Name: "fail", Fault: a2atest.FaultFail}).URL,
		"refused": a2atest.RefusedURL(t),
	}
	ids := []string{"good#1", "hang#1", "crash#1", "garbage#1", "fail#1", "refused#1", "good#2"}
	raw, _ := json.Marshal(map[string]any{"participants": participants, "config": map[string]any{
		"scenario": "route", "task_ids": ids, "call_timeout_seconds": 1.5, "settle_quiet_ms": 50, "settle_max_wait_ms": 1000,
	}})
	s := summarize(streamAll(t, t.Context(), g.client10(t), string(raw)))
	if s.final != a2a.TaskStateCompleted {
		t.Fatalf("final state %s: %s", s.final, s.text)
	}
	res := resultOf(t, s.artifact)
	tasks := res["tasks"].([]any)
	if len(tasks) != len(ids) {
		t.Fatalf("%d tasks, want %d", len(tasks), len(ids))
	}
	for i, task := range tasks {
		task := task.(map[string]any)
		outcome := task["outcome"].(map[string]any)
		wantPass := strings.HasPrefix(ids[i], "good")
		if task["task_id"] != ids[i] || outcome["success"] != wantPass {
			t.Errorf("task %v: success %v, want %v (%v)", task["task_id"], outcome["success"], wantPass, outcome["summary"])
		}
		if !wantPass && !strings.Contains(outcome["summary"].(string), "failed") {
			t.Errorf("task %v: the failure is not described: %v", task["task_id"], outcome["summary"])
		}
		if task["trace_id"] == "" {
			t.Errorf("task %v has no trace", task["task_id"])
		}
		// Only the hang waits its call timeout out; the others fail for
		// their own reason, at once.
		waited := strings.Contains(outcome["summary"].(string), "no answer within")
		if waited != strings.HasPrefix(ids[i], "hang") {
			t.Errorf("task %v: waited out the call timeout %v: %v", task["task_id"], waited, outcome["summary"])
		}
	}
	if res["pass_rate"].(float64) != round(2.0/7, 4) {
		t.Errorf("pass_rate = %v", res["pass_rate"])
	}
}

// TestServerConcurrentAssessments runs two assessments at once whose
// participants export spans into the green agent's store: every task has
// its own trace, and each task's graph holds its own participant only.
func TestServerConcurrentAssessments(t *testing.T) {
	g := routeServer(t, time.Minute)
	alpha := a2atest.Start(t, a2atest.Options{Name: "alpha", Delay: 150 * time.Millisecond, Store: g.srv.Store(), Chat: true})
	beta := a2atest.Start(t, a2atest.Options{Name: "beta", Delay: 150 * time.Millisecond, Store: g.srv.Store(), Chat: true})
	run := func(c *a2aclient.Client, p *a2atest.Agent) (streamSummary, []a2a.Event) {
		raw := fmt.Sprintf(`{"participants": {"agent": %q}, "config": {"scenario": "route", "task_ids": ["agent#1", "agent#2", "agent#3"], "settle_quiet_ms": 150}}`, p.URL)
		var events []a2a.Event
		for ev, err := range c.SendStreamingMessage(t.Context(), userMessage(raw)) {
			if err != nil {
				t.Errorf("stream: %v", err)
				break
			}
			events = append(events, ev)
		}
		return summarize(events), events
	}
	ca, cb := g.client10(t), g.client10(t)
	var wg sync.WaitGroup
	var sa, sb streamSummary
	wg.Go(func() { sa, _ = run(ca, alpha) })
	wg.Go(func() { sb, _ = run(cb, beta) })
	wg.Wait()

	traces := map[string]string{}
	for _, tc := range []struct {
		s          streamSummary
		own, other string
	}{{sa, "alpha", "beta"}, {sb, "beta", "alpha"}} {
		if tc.s.final != a2a.TaskStateCompleted {
			t.Fatalf("%s: final state %s: %s", tc.own, tc.s.final, tc.s.text)
		}
		res := resultOf(t, tc.s.artifact)
		for _, task := range res["tasks"].([]any) {
			task := task.(map[string]any)
			id := task["trace_id"].(string)
			if prev, dup := traces[id]; dup || id == "" {
				t.Errorf("trace %q of %s/%v also belongs to %s", id, tc.own, task["task_id"], prev)
			}
			traces[id] = tc.own + "/" + task["task_id"].(string)
			names := taskAgentNames(task)
			if !slices.Contains(names, tc.own) || slices.Contains(names, tc.other) {
				t.Errorf("%s task %v: agents %v", tc.own, task["task_id"], names)
			}
			if task["outcome"].(map[string]any)["success"] != true {
				t.Errorf("%s task %v failed: %v", tc.own, task["task_id"], task["outcome"])
			}
		}
	}
	if len(traces) != 6 {
		t.Errorf("%d distinct task traces, want 6", len(traces))
	}
	// The green agent's store keeps none of its own spans once the tasks
	// are assessed: not the tasks', the evaluators', the assessments' nor
	// the A2A requests'. (A participant's span that arrives after its
	// task was assembled may linger until the store's MaxAge.)
	for _, id := range g.srv.Store().TraceIDs() {
		for _, sp := range g.srv.Store().Spans(id) {
			if sp.Resource != nil && sp.Resource.ServiceName == DefaultServiceName {
				t.Errorf("store still holds the green agent's span %q of trace %s", sp.Name, id)
			}
		}
	}
	if n := g.srv.Executor().Running(); n != 0 {
		t.Errorf("%d assessments still running", n)
	}
}

func TestServerCancel(t *testing.T) {
	g := routeServer(t, time.Minute)
	hang := a2atest.Start(t, a2atest.Options{Name: "hang", Fault: a2atest.FaultHang, Streaming: true})
	c, canceler := g.client10(t), g.client10(t)
	raw := fmt.Sprintf(`{"participants": {"hang": %q}, "config": {"scenario": "route", "task_ids": ["hang#1", "hang#2"]}}`, hang.URL)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var events []a2a.Event
	var taskID a2a.TaskID
	canceled := make(chan *a2a.Task, 1)
	for ev, err := range c.SendStreamingMessage(ctx, userMessage(raw)) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		events = append(events, ev)
		if task, ok := ev.(*a2a.Task); ok {
			taskID = task.ID
		}
		if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && st.Status.State == a2a.TaskStateWorking && taskID != "" && len(canceled) == 0 {
			id := taskID
			go func() {
				task, err := canceler.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
				if err != nil {
					t.Errorf("CancelTask: %v", err)
				}
				canceled <- task
			}()
			taskID = "" // once
		}
	}
	s := summarize(events)
	if s.final != a2a.TaskStateCanceled {
		t.Errorf("stream ended %s: %s", s.final, s.text)
	}
	select {
	case task := <-canceled:
		if task == nil || task.Status.State != a2a.TaskStateCanceled {
			t.Errorf("CancelTask returned %+v", task)
		}
	case <-ctx.Done():
		t.Fatal("CancelTask did not return")
	}
	waitFor(t, "the canceled assessment to stop", func() bool { return g.srv.Executor().Running() == 0 })
	if s.artifact != nil {
		t.Error("a canceled assessment delivered a Result")
	}
}

// TestServerDeadline: the assessment deadline interrupts the running task
// (a recorded failure that says so), the tasks after it are recorded as
// not run, and the assessment completes with what it has.
func TestServerDeadline(t *testing.T) {
	g := routeServer(t, time.Minute)
	hang := a2atest.Start(t, a2atest.Options{Name: "hang", Fault: a2atest.FaultHang})
	raw := fmt.Sprintf(`{"participants": {"hang": %q}, "config": {"scenario": "route", "task_ids": ["hang#1", "hang#2"], "deadline_seconds": 1, "settle_quiet_ms": 50}}`, hang.URL)
	start := time.Now()
	out, err := g.client10(t).SendMessage(t.Context(), userMessage(raw))
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task := out.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s: %s", task.Status.State, messageText(task.Status.Message))
	}
	// The hang's call timeout is a2acall's default, 300 s: well within it,
	// the 1 s deadline is what ended the assessment.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %s with a 1 s deadline", d)
	}
	res := resultOf(t, task.Artifacts[0])
	tasks := res["tasks"].([]any)
	first, second := tasks[0].(map[string]any), tasks[1].(map[string]any)
	if o := first["outcome"].(map[string]any); o["success"] != false || first["trace_id"] == "" {
		t.Errorf("first task = %v", first)
	}
	if o := second["outcome"].(map[string]any); o["success"] != false || !strings.Contains(o["summary"].(string), "not run") || second["trace_id"] != "" {
		t.Errorf("second task = %v", second)
	}
	warnings, _ := res["warnings"].([]any)
	if !slices.ContainsFunc(warnings, func(w any) bool { return strings.Contains(w.(string), "deadline") }) {
		t.Errorf("warnings %v do not mention the deadline", warnings)
	}
	if res["score"] != 0.0 {
		t.Errorf("score = %v", res["score"])
	}
}

// TestServerShutdown: stopping the server ends a running assessment with a
// failed status that says why, and Serve returns.
func TestServerShutdown(t *testing.T) {
	g := routeServer(t, time.Minute)
	hang := a2atest.Start(t, a2atest.Options{Name: "hang", Fault: a2atest.FaultHang})
	raw := fmt.Sprintf(`{"participants": {"hang": %q}, "config": {"scenario": "route", "task_ids": ["hang#1"]}}`, hang.URL)
	var events []a2a.Event
	stopped := false
	for ev, err := range g.client10(t).SendStreamingMessage(t.Context(), userMessage(raw)) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		events = append(events, ev)
		if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && st.Status.State == a2a.TaskStateWorking && !stopped {
			stopped = true
			go g.stop()
		}
	}
	s := summarize(events)
	if s.final != a2a.TaskStateFailed || !strings.Contains(s.text, ErrShuttingDown.Error()) {
		t.Errorf("stream ended %s: %q", s.final, s.text)
	}
	g.stop() // waits for Serve to return
	if n := g.srv.Executor().Running(); n != 0 {
		t.Errorf("%d assessments still running", n)
	}
}

func TestServerBadRPC(t *testing.T) {
	g := startGreen(t, ServerOptions{})
	post := func(body string) map[string]any {
		resp, err := g.http.Post(g.url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return out
	}
	for _, body := range []string{"not json", `{"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod"}`, `{"jsonrpc": "2.0", "id": 1, "method": "no/such"}`} {
		if out := post(body); out["error"] == nil {
			t.Errorf("%s: %v, want a JSON-RPC error", body, out)
		}
	}
	resp, err := g.http.Post(g.url, "application/json", strings.NewReader(`{"x": "`+strings.Repeat("a", maxRPCBody)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized request: %s", resp.Status)
	}
	// The OTLP receiver shares the listener.
	resp, err = g.http.Post(g.url+"v1/traces", "application/json", strings.NewReader(`{"resourceSpans": []}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("OTLP on the main listener: %s", resp.Status)
	}
}

func TestServerOTLPListenerAndCardURL(t *testing.T) {
	g := startGreen(t, ServerOptions{OTLPAddr: "127.0.0.1:0", CardURL: "http://green:9009"})
	if g.srv.OTLPAddr() == nil {
		t.Fatal("no OTLP listener")
	}
	resp, err := g.http.Post("http://"+g.srv.OTLPAddr().String()+"/v1/traces", "application/json", strings.NewReader(`{"resourceSpans": []}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("OTLP listener: %s", resp.Status)
	}
	card, err := (&agentcard.Resolver{Client: g.http, CardParser: a2av0.NewAgentCardParser()}).Resolve(t.Context(), g.url)
	if err != nil {
		t.Fatal(err)
	}
	if got := card.SupportedInterfaces[0].URL; got != "http://green:9009/" {
		t.Errorf("advertised URL = %q, want the --card-url", got)
	}
	if _, err := NewServer(t.Context(), ServerOptions{Port: 0, CardURL: "green:9009"}); err == nil {
		t.Error("a card URL without a scheme was accepted")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServerNoGoroutineLeak: a server that ran assessments (one
// rejected, one completed, one canceled by shutdown) leaves nothing
// running once Serve has returned and its clients are closed.
func TestServerNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		g := routeServer(t, time.Minute)
		good := a2atest.Start(t, a2atest.Options{Name: "good", Streaming: true})
		hang := a2atest.Start(t, a2atest.Options{Name: "hang", Fault: a2atest.FaultHang})
		c := g.client10(t)
		_ = streamAll(t, t.Context(), c, "Hello")
		s := summarize(streamAll(t, t.Context(), c, fmt.Sprintf(
			`{"participants": {"good": %q}, "config": {"scenario": "route", "task_ids": ["good#1"], "settle_quiet_ms": 50, "settle_max_wait_ms": 500}}`, good.URL)))
		if s.final != a2a.TaskStateCompleted {
			t.Fatalf("final state %s: %s", s.final, s.text)
		}
		for ev, err := range c.SendStreamingMessage(t.Context(), userMessage(fmt.Sprintf(
			`{"participants": {"hang": %q}, "config": {"scenario": "route", "task_ids": ["hang#1"]}}`, hang.URL))) {
			if err != nil {
				break
			}
			if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && st.Status.State == a2a.TaskStateWorking {
				go g.stop()
			}
		}
		g.stop()
		_ = c.Destroy()
		good.Close()
		hang.Close()
	}()
	testenv.CheckNoGoroutineLeak(t, before)
}
