package purple

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// The tests run agents as real HTTP servers on loopback, driven by a real
// a2acall Messenger, with their spans exported as real OTLP/HTTP into
// coordbench's real receiver: what a green agent sees of them.

var quiet = slog.New(slog.DiscardHandler)

// noEnv keeps a developer's OTEL_* and AGENTBEATS_LLM_* variables out of
// the tests.
func noEnv(string) string { return "" }

// harness is the green side of a test: a trace store fed by an OTLP
// receiver and by the in-process spans of a Messenger's tracer provider,
// as in the green agent.
type harness struct {
	store    *tracestore.Store
	receiver string // base URL of the OTLP receiver
	m        *a2acall.Messenger
	tracer   trace.Tracer
	close    func()
}

func newHarness(t *testing.T, opts ...a2acall.Options) *harness {
	t.Helper()
	mo := a2acall.Options{CallTimeout: 20 * time.Second, Logger: quiet}
	if len(opts) > 0 {
		mo.Credentials = opts[0].Credentials
	}
	store := tracestore.NewStore(tracestore.Limits{})
	srv := httptest.NewServer(otlpreceiver.NewReceiver(store, otlpreceiver.ReceiverLimits{}))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String("green"), otelmap.AttrRole.String(otelmap.RoleAssessor))),
		sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(store)),
	)
	h := &harness{store: store, receiver: srv.URL, tracer: tp.Tracer("test"),
		m: a2acall.New(tp, store, mo)}
	var once sync.Once
	h.close = func() {
		once.Do(func() {
			_ = h.m.Close()
			_ = tp.Shutdown(context.Background())
			srv.Close()
		})
	}
	t.Cleanup(h.close)
	return h
}

// reviewRequest is a coordbench review request like the green agent's.
func reviewRequest(url, taskID string) a2acall.SendRequest {
	return a2acall.SendRequest{
		URL:  url,
		Text: "Review this paper. Answer with one JSON object.\nTitle: A novel method",
		Data: map[string]any{
			"kind":     ReviewRequestKind,
			"task_id":  taskID,
			"title":    "A novel and rigorous method",
			"abstract": "We present a novel, clear and rigorous method with significant, state-of-the-art results.",
			"reviews":  []any{map[string]any{"comments": "The paper is well written and convincing."}},
		},
	}
}

// call sends req inside a HOST task span and returns the reply, the
// assembled trace once it settled, and the error.
func (h *harness) call(t *testing.T, req a2acall.SendRequest) (*a2acall.Reply, *tracedata.TraceData, error) {
	t.Helper()
	ctx, task := h.tracer.Start(t.Context(), otelmap.SpanTask, trace.WithAttributes(otelmap.AttrCallType.String(string(tracedata.CallHost))))
	reply, err := h.m.Send(ctx, req)
	task.End()
	spans, settled, werr := h.store.WaitSettled(t.Context(), task.SpanContext().TraceID(),
		tracestore.SettleOptions{Root: task.SpanContext().SpanID(), Quiet: 400 * time.Millisecond, MaxWait: 10 * time.Second})
	if werr != nil || !settled {
		t.Fatalf("trace did not settle: %v", werr)
	}
	return reply, assemble.Trace(task.SpanContext().TraceID(), spans), err
}

// startSystem starts specs with the test defaults: spans to the harness's
// receiver for agents that export, quiet logs, no environment.
func startSystem(t *testing.T, h *harness, specs ...AgentSpec) *System {
	t.Helper()
	for i := range specs {
		o := &specs[i].Options
		if o.Getenv == nil {
			o.Getenv = noEnv
		}
		if o.Logger == nil {
			o.Logger = quiet
		}
		if o.OTLPEndpoint == "export" {
			o.OTLPEndpoint = h.receiver
			o.FlushOnResponse = true
		}
	}
	sys, err := StartSystem(t.Context(), "", specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sys.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return sys
}

// edges returns "from->to:count/class" strings of a trace's interactions
// between non-virtual agents.
func edges(td *tracedata.TraceData) []string {
	var out []string
	for _, in := range td.Interactions {
		class := ""
		switch {
		case in.BothSides == in.Count:
			class = "both"
		case in.ClientOnly == in.Count:
			class = "client"
		case in.ExtensionOnly == in.Count:
			class = "extension"
		case in.ServerOnly == in.Count:
			class = "server"
		default:
			class = "mixed"
		}
		out = append(out, in.From+"->"+in.To+":"+strconv.Itoa(in.Count)+"/"+class)
	}
	return out
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func wantEdges(t *testing.T, td *tracedata.TraceData, want ...string) {
	t.Helper()
	got := edges(td)
	if !slices.Equal(got, want) {
		t.Errorf("interactions %v, want %v (warnings %v)", got, want, td.Coverage.Warnings)
	}
}

// TestFanOutRoads: a coordinator and a reviewer that export OTLP and a
// reviewer that reports only steps. Every call is seen from both sides;
// the steps-only reviewer's work arrives through the coordinator, which
// forwards its steps by OTLP; the answer is the mean of the reviews.
func TestFanOutRoads(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t)
	sys := startSystem(t, h,
		AgentSpec{Options: Options{Name: "coordinator", Role: RoleCoordinator, OTLPEndpoint: "export", NoExtension: true}, PeerNames: []string{"reviewer-1", "reviewer-2"}},
		AgentSpec{Options: Options{Name: "reviewer-1", OTLPEndpoint: "export", NoExtension: true}},
		AgentSpec{Options: Options{Name: "reviewer-2"}},
	)
	reply, td, err := h.call(t, reviewRequest(sys.Agent("coordinator").URL(), "t-1"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReview(reply)
	if err != nil || r.Decision != DecisionAccept || !strings.Contains(r.Rationale, "mean of 2 reviews") {
		t.Errorf("review %+v, %v; reply %q", r, err, reply.Text)
	}
	if reply.ExtensionSteps != 0 {
		t.Errorf("the coordinator returns no steps, got %d", reply.ExtensionSteps)
	}
	wantEdges(t, td, "coordinator->reviewer-1:1/both", "coordinator->reviewer-2:1/both", "green->coordinator:1/both")
	src := td.Coverage.SpansBySource
	if src[otelmap.SourceInProcess] == 0 || src[otelmap.SourceOTLP] == 0 || src[otelmap.SourceExtension] == 0 {
		t.Errorf("spans by source %v, want all three roads", src)
	}
	var tools, chats int
	for _, s := range td.Steps {
		if s.CallType == tracedata.CallTool {
			tools++
			if s.Agent != "reviewer-1" && s.Agent != "reviewer-2" {
				t.Errorf("tool step of %q, want a reviewer's", s.Agent)
			}
		}
		if strings.HasPrefix(s.Name, otelmap.SpanChatPrefix) {
			chats++
		}
	}
	if tools != 2 || chats != 0 {
		t.Errorf("%d tool steps and %d chat steps, want the two reviewers' rule and no LLM", tools, chats)
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}
	h.close()
	checkNoLeak(t, before)
}

// TestHubCycle: reviewers that call their coordinator back, one of them
// reporting only steps. The path record ends the cycle (the coordinator
// answers a call-back by itself), every call happens once, and the
// steps-only reviewer's call to the coordinator pairs with the
// coordinator's server span because it propagates its invoke_agent span.
func TestHubCycle(t *testing.T) {
	h := newHarness(t)
	sys := startSystem(t, h,
		AgentSpec{Options: Options{Name: "coordinator", Role: RoleCoordinator, OTLPEndpoint: "export", NoExtension: true}, PeerNames: []string{"reviewer-1", "reviewer-2"}},
		AgentSpec{Options: Options{Name: "reviewer-1", OTLPEndpoint: "export", NoExtension: true}, PeerNames: []string{"coordinator"}},
		AgentSpec{Options: Options{Name: "reviewer-2"}, PeerNames: []string{"coordinator"}},
	)
	_, td, err := h.call(t, reviewRequest(sys.Agent("coordinator").URL(), "t-hub"))
	if err != nil {
		t.Fatal(err)
	}
	wantEdges(t, td, "coordinator->reviewer-1:1/both", "coordinator->reviewer-2:1/both", "green->coordinator:1/both",
		"reviewer-1->coordinator:1/both", "reviewer-2->coordinator:1/both")
	if len(td.Coverage.Warnings) > 0 {
		t.Errorf("warnings %v", td.Coverage.Warnings)
	}
}

// TestStepsOnlyChain: a chain of agents that report only steps, behind an
// entry that answers the green agent with steps too: everything arrives
// through the extension, nested, and the chain's calls are counted once.
func TestStepsOnlyChain(t *testing.T) {
	h := newHarness(t)
	sys := startSystem(t, h,
		AgentSpec{Options: Options{Name: "coordinator", Role: RoleCoordinator, Delegation: DelegateChain}, PeerNames: []string{"reviewer-1"}},
		AgentSpec{Options: Options{Name: "reviewer-1", Delegation: DelegateChain}, PeerNames: []string{"reviewer-2"}},
		AgentSpec{Options: Options{Name: "reviewer-2"}},
	)
	reply, td, err := h.call(t, reviewRequest(sys.Agent("coordinator").URL(), "t-chain"))
	if err != nil {
		t.Fatal(err)
	}
	if reply.ExtensionSteps < 5 {
		t.Errorf("%d extension steps, want the whole chain's", reply.ExtensionSteps)
	}
	wantEdges(t, td, "coordinator->reviewer-1:1/extension", "green->coordinator:1/both", "reviewer-1->reviewer-2:1/extension")
	if td.Coverage.SpansBySource[otelmap.SourceOTLP] != 0 {
		t.Errorf("spans by source %v: nothing was exported", td.Coverage.SpansBySource)
	}
}

// TestFaults: each fault costs the call it strikes, as a caller sees it,
// and Faults.Tasks limits it to the tasks named.
func TestFaults(t *testing.T) {
	h := newHarness(t)
	short := a2acall.New(sdktrace.NewTracerProvider(), nil, a2acall.Options{CallTimeout: 700 * time.Millisecond, Logger: quiet})
	defer short.Close()
	sys := startSystem(t, h,
		AgentSpec{Options: Options{Name: "hang", Faults: Faults{Hang: true, Tasks: []string{"bad"}}}},
		AgentSpec{Options: Options{Name: "fail", Faults: Faults{FailureRate: 1}}},
		AgentSpec{Options: Options{Name: "garbage", Faults: Faults{Malformed: true}}},
		AgentSpec{Options: Options{Name: "crash", Faults: Faults{Crash: true}}},
		AgentSpec{Options: Options{Name: "slow", Faults: Faults{Delay: 300 * time.Millisecond}}},
		AgentSpec{Options: Options{Name: "dark", OTLPEndpoint: "export", Faults: Faults{NoSpans: true}}},
	)
	// Only the hang meets the short timeout; every other call gets a2acall's
	// default, so that a slow machine does not read as a hang.
	patient := a2acall.New(sdktrace.NewTracerProvider(), nil, a2acall.Options{Logger: quiet})
	defer patient.Close()
	send := func(name, task string) (*a2acall.Reply, error) {
		return patient.Send(t.Context(), reviewRequest(sys.Agent(name).URL(), task))
	}
	if _, err := short.Send(t.Context(), reviewRequest(sys.Agent("hang").URL(), "bad")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang: %v, want a timeout", err)
	}
	if r, err := send("hang", "good"); err != nil || r.State != "completed" {
		t.Errorf("hang on another task: %v", err)
	}
	if r, err := send("fail", "x"); !errors.Is(err, a2acall.ErrTaskFailed) || r == nil || !strings.Contains(r.Text, "injected failure") {
		t.Errorf("failure rate 1: %v", err)
	}
	if r, err := send("garbage", "x"); err != nil || r.Text != MalformedAnswer {
		t.Errorf("malformed: %v, %+v", err, r)
	} else if _, perr := ParseReview(r); perr == nil {
		t.Error("the malformed answer parses as a review")
	}
	if _, err := send("crash", "x"); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("crash: %v, want a broken connection", err)
	}
	start := time.Now()
	if _, err := send("slow", "x"); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Errorf("delay: %v after %v", err, time.Since(start))
	}
	if card := sys.Agent("dark").Card(); len(card.Capabilities.Extensions) != 0 {
		t.Errorf("the dark agent lists extensions %v", card.Capabilities.Extensions)
	}
	// The dark agent is seen only through the caller's client spans.
	reply, td, err := h.call(t, reviewRequest(sys.Agent("dark").URL(), "x"))
	if err != nil || reply.ExtensionSteps != 0 {
		t.Fatalf("dark: %v, %d steps", err, reply.ExtensionSteps)
	}
	if len(td.Coverage.Services) != 1 || td.Coverage.Services[0] != "green" {
		t.Errorf("services %v, want the green side's only", td.Coverage.Services)
	}
	wantEdges(t, td, "green->dark:1/client")

	// A hang ends when its agent stops, so Stop does not wait for it: the
	// caller here would wait a2acall's default 300 s.
	hung := make(chan error, 1)
	go func() { _, err := send("hang", "bad"); hung <- err }()
	time.Sleep(100 * time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- sys.Stop() }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop waited for a hung request")
	}
	select {
	case err := <-hung:
		if err == nil {
			t.Error("the hung request was answered")
		}
	case <-time.After(time.Minute):
		t.Fatal("the hung request outlived its agent")
	}
}

// TestProtocol03 talks the A2A 0.3 wire format to an agent, as
// AgentBeats' Python clients do, and reads the answer.
func TestProtocol03(t *testing.T) {
	h := newHarness(t)
	sys := startSystem(t, h, AgentSpec{Options: Options{Name: "solo"}})
	body := `{"jsonrpc":"2.0","id":"1","method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user",` +
		`"parts":[{"kind":"text","text":"The method is novel, clear, rigorous and significant."}]}}}`
	hreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, sys.Agent("solo").URL()+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	// The header the 0.3 Python SDK sends to activate an extension.
	hreq.Header["X-A2A-Extensions"] = []string{tracedata.ExtensionURI}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Kind   string `json:"kind"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Artifacts []struct {
				Parts    []map[string]any `json:"parts"`
				Metadata map[string]any   `json:"metadata"`
			} `json:"artifacts"`
		} `json:"result"`
	}
	if err := jsonDecode(resp, &out); err != nil {
		t.Fatal(err)
	}
	if out.Result.Kind != "task" || out.Result.Status.State != "completed" || len(out.Result.Artifacts) != 1 {
		t.Fatalf("0.3 answer %+v", out)
	}
	parts := out.Result.Artifacts[0].Parts
	if len(parts) != 2 || parts[0]["kind"] != "text" || parts[1]["kind"] != "data" {
		t.Fatalf("parts %v", parts)
	}
	if d, _ := parts[1]["data"].(map[string]any); d["decision"] != DecisionAccept {
		t.Errorf("data part %v", parts[1])
	}
	rt, err := tracedata.ResponseTraceFromMetadata(out.Result.Artifacts[0].Metadata)
	if err != nil || rt == nil || len(rt.Steps) != 2 {
		t.Fatalf("extension steps %+v, %v: want the agent's own step and its rule's", rt, err)
	}
	if rt.Steps[0].Agent != "solo" || rt.Steps[0].ParentStepID != "" {
		t.Errorf("root step %+v", rt.Steps[0])
	}
}

func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServiceNameIsTheAgent: with the process's environment, the agent
// still names its spans after itself (OTEL_SERVICE_NAME would rename every
// agent of a process alike), and OTEL_RESOURCE_ATTRIBUTES is honoured.
func TestServiceNameIsTheAgent(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", llmconfig.EnvAPIKey} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_SERVICE_NAME", "everyone")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	h := newHarness(t)
	s, err := NewServer(t.Context(), Options{Name: "reviewer-9", Port: 0, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	_, td, err := h.call(t, reviewRequest(s.URL(), "t"))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := trace.TraceIDFromHex(td.TraceID)
	spans := s.tel.store.Spans(id)
	if len(spans) == 0 {
		t.Fatal("the agent recorded no span")
	}
	for _, sp := range spans {
		env := ""
		for _, kv := range sp.Resource.Attrs {
			if kv.Key == "deployment.environment.name" {
				env = kv.Value.AsString()
			}
		}
		if sp.Resource.ServiceName != "reviewer-9" || env != "test" {
			t.Fatalf("span %s: service.name %q, environment %q", sp.Name, sp.Resource.ServiceName, env)
		}
	}
}

// TestExportIntervalFromEnvironment: the batcher's timeout is the
// option's, else OTEL_BSP_SCHEDULE_DELAY (milliseconds, as the
// OpenTelemetry SDKs read it), else DefaultExportInterval.
func TestExportIntervalFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env    string
		option time.Duration
		want   time.Duration
	}{
		{"", 0, DefaultExportInterval},
		{"250", 0, 250 * time.Millisecond},
		{"5s", 0, DefaultExportInterval}, // not milliseconds: ignored
		{"250", time.Second, time.Second},
	} {
		o := Options{ExportInterval: tc.option, Getenv: func(k string) string {
			if k == "OTEL_BSP_SCHEDULE_DELAY" {
				return tc.env
			}
			return ""
		}}
		if err := o.withDefaults(); err != nil {
			t.Fatal(err)
		}
		if o.ExportInterval != tc.want {
			t.Errorf("env %q, option %v: interval %v, want %v", tc.env, tc.option, o.ExportInterval, tc.want)
		}
	}
}
