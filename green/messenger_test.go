package green

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// testGreen is the green side of a messenger test: a Messenger whose spans,
// and the spans it rebuilds from the Traceability Extension, land in one
// store, as in the assessor.
type testGreen struct {
	m      *Messenger
	store  *otelmap.Store
	tracer trace.Tracer
}

func newTestGreen(t *testing.T, opts MessengerOptions) *testGreen {
	t.Helper()
	store := otelmap.NewStore(otelmap.Limits{})
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String("green"),
			otelmap.AttrRole.String(otelmap.RoleAssessor))),
		sdktrace.WithSpanProcessor(otelmap.NewRecorder(store)),
	)
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	g := &testGreen{m: NewMessenger(tp, store, opts), store: store, tracer: tp.Tracer("test")}
	t.Cleanup(func() {
		_ = g.m.Close()
		_ = tp.Shutdown(context.Background())
	})
	return g
}

// send makes one call inside a HOST task span, as the executor does, and
// returns the reply, the task's trace id and the error.
func (g *testGreen) send(t *testing.T, req SendRequest) (*Reply, trace.TraceID, error) {
	t.Helper()
	ctx, task := g.tracer.Start(t.Context(), otelmap.SpanTask, trace.WithAttributes(otelmap.AttrCallType.String(string(tracedata.CallHost))))
	reply, err := g.m.Send(ctx, req)
	task.End()
	return reply, task.SpanContext().TraceID(), err
}

// spanNamed returns the one span of the trace with this name and kind.
func spanNamed(t *testing.T, spans []otelmap.Span, name string, kind trace.SpanKind) otelmap.Span {
	t.Helper()
	var found []otelmap.Span
	for _, s := range spans {
		if s.Name == name && s.Kind == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		names := make([]string, len(spans))
		for i, s := range spans {
			names[i] = fmt.Sprintf("%s(%s,%s)", s.Name, s.Kind, s.Source)
		}
		t.Fatalf("want one span %q, got %d among %v", name, len(found), names)
	}
	return found[0]
}

func strAttr(s otelmap.Span, key attribute.Key) string {
	v, _ := s.Attr(key)
	return v.String()
}

// TestMessengerProtocols sends to agents of both protocol generations, each
// blocking and streaming, answering with a task or a message, and checks
// the reply and which wire method was used.
func TestMessengerProtocols(t *testing.T) {
	cases := []struct {
		name       string
		opts       testPurpleOptions
		protocol   string
		wireMethod string
	}{
		{"1.0 blocking", testPurpleOptions{}, "1.0", `"method":"SendMessage"`},
		{"1.0 streaming", testPurpleOptions{Streaming: true}, "1.0", `"method":"SendStreamingMessage"`},
		{"1.0 message", testPurpleOptions{AsMessage: true}, "1.0", `"method":"SendMessage"`},
		{"0.3 blocking", testPurpleOptions{Legacy: true}, "0.3.0", `"method":"message/send"`},
		{"0.3 streaming", testPurpleOptions{Legacy: true, Streaming: true}, "0.3.0", `"method":"message/stream"`},
		{"0.3 streaming message", testPurpleOptions{Legacy: true, Streaming: true, AsMessage: true}, "0.3.0", `"method":"message/stream"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Name = "solver"
			opts.ReplyData = map[string]any{"decision": "accept"}
			p := startTestPurple(t, opts)
			g := newTestGreen(t, MessengerOptions{})
			reply, _, err := g.send(t, SendRequest{URL: p.URL, Text: "review paper 7", Data: map[string]any{"paper": "7"}})
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			if reply.Text != "solver answers: review paper 7" {
				t.Errorf("text %q", reply.Text)
			}
			if len(reply.Data) != 1 || reply.Data[0]["decision"] != "accept" {
				t.Errorf("data %v", reply.Data)
			}
			if reply.State != "completed" || reply.AgentName != "solver" || reply.Protocol != tc.protocol || reply.Streamed != opts.Streaming {
				t.Errorf("reply %+v", reply)
			}
			if reply.ContextID == "" || (!opts.AsMessage && reply.TaskID == "") {
				t.Errorf("context %q task %q", reply.ContextID, reply.TaskID)
			}
			if w := p.Wire(); !strings.Contains(w, tc.wireMethod) {
				t.Errorf("wire does not show %s:\n%s", tc.wireMethod, w)
			}
			if got := p.Calls(); len(got) != 1 {
				t.Errorf("%d calls, want 1", len(got))
			}
		})
	}
}

// TestMessengerCardPath: a participant URL with a path (AgentBeats'
// gateway, http://host:port/<role>) has its card under that path, and the
// calls go there.
func TestMessengerCardPath(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			p := startTestPurple(t, testPurpleOptions{Name: "reviewer", Path: "/reviewer", Legacy: legacy})
			if !strings.HasSuffix(p.URL, "/reviewer") {
				t.Fatalf("url %s", p.URL)
			}
			g := newTestGreen(t, MessengerOptions{})
			// A trailing slash is the same participant.
			for _, u := range []string{p.URL, p.URL + "/"} {
				if _, _, err := g.send(t, SendRequest{URL: u, Text: "hi"}); err != nil {
					t.Fatalf("send to %s: %v", u, err)
				}
			}
			var paths []string
			for _, r := range p.Requests() {
				paths = append(paths, r.Method+" "+r.Path)
			}
			want := []string{"GET /reviewer/.well-known/agent-card.json", "POST /reviewer", "POST /reviewer"}
			if strings.Join(paths, ",") != strings.Join(want, ",") {
				t.Errorf("requests %v, want %v", paths, want)
			}
		})
	}
}

// TestMessengerWireHeaders checks what the participant sees: traceparent of
// the caller's trace, whose parent is the POST client span, and the
// Traceability Extension in X-A2A-Extensions (spelled so on the wire) and
// A2A-Extensions.
func TestMessengerWireHeaders(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			p := startTestPurple(t, testPurpleOptions{Legacy: legacy, Streaming: legacy})
			g := newTestGreen(t, MessengerOptions{})
			_, tid, err := g.send(t, SendRequest{URL: p.URL, Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			post := spanNamed(t, g.store.Spans(tid), http.MethodPost, trace.SpanKindClient)
			calls := p.Calls()
			if len(calls) != 1 {
				t.Fatalf("%d calls", len(calls))
			}
			h := calls[0].Header
			want := fmt.Sprintf("00-%s-%s-01", tid, post.SpanID)
			if got := h.Get("Traceparent"); got != want {
				t.Errorf("traceparent %q, want %q", got, want)
			}
			if got := h.Values(HeaderExtensions); len(got) != 1 || got[0] != tracedata.ExtensionURI {
				t.Errorf("X-A2A-Extensions %q", got)
			}
			if got := h.Values(a2a.SvcParamExtensions); len(got) != 1 || got[0] != tracedata.ExtensionURI {
				t.Errorf("A2A-Extensions %q", got)
			}
			if w := p.Wire(); !strings.Contains(w, "\r\nX-A2A-Extensions: "+tracedata.ExtensionURI+"\r\n") {
				t.Errorf("X-A2A-Extensions not spelled so on the wire:\n%s", w)
			}
			// The card fetch is bookkeeping: no trace context.
			for _, r := range p.Requests() {
				if r.Method == http.MethodGet && r.Header.Get("Traceparent") != "" {
					t.Errorf("card fetch carries traceparent %q", r.Header.Get("Traceparent"))
				}
			}
		})
	}
}

// TestMessengerSpans checks the figure of DESIGN §3 on the caller's side
// (invoke_agent -> SendMessage -> POST, all CLIENT, with their attributes)
// and that trace assembly reads it as one interaction green -> agent:
// client-only when the agent's spans are missing, both sides when they
// arrive.
func TestMessengerSpans(t *testing.T) {
	for _, withServer := range []bool{false, true} {
		t.Run(fmt.Sprintf("server spans=%v", withServer), func(t *testing.T) {
			g := newTestGreen(t, MessengerOptions{})
			opts := testPurpleOptions{Name: "solver"}
			if withServer {
				opts.Store = g.store
			}
			p := startTestPurple(t, opts)
			reply, tid, err := g.send(t, SendRequest{URL: p.URL, Text: "hello", ContextID: "ctx-1"})
			if err != nil {
				t.Fatal(err)
			}
			spans := g.store.Spans(tid)
			task := spanNamed(t, spans, otelmap.SpanTask, trace.SpanKindInternal)
			inv := spanNamed(t, spans, "invoke_agent solver", trace.SpanKindClient)
			var a2aSpan, post otelmap.Span
			for _, s := range spans {
				switch {
				case s.Name == "SendMessage" && s.Kind == trace.SpanKindClient:
					a2aSpan = s
				case s.Name == http.MethodPost && s.Kind == trace.SpanKindClient:
					post = s
				}
			}
			if inv.Kind != trace.SpanKindClient || inv.ParentSpanID != task.SpanID {
				t.Errorf("invoke_agent kind %v parent %v", inv.Kind, inv.ParentSpanID)
			}
			if a2aSpan.ParentSpanID != inv.SpanID || post.ParentSpanID != a2aSpan.SpanID {
				t.Errorf("nesting: SendMessage under %v (want %v), POST under %v (want %v)",
					a2aSpan.ParentSpanID, inv.SpanID, post.ParentSpanID, a2aSpan.SpanID)
			}
			for key, want := range map[attribute.Key]string{
				otelmap.AttrGenAIOperationName:  otelmap.OpInvokeAgent,
				otelmap.AttrGenAIAgentName:      "solver",
				otelmap.AttrGenAIAgentID:        p.URL,
				otelmap.AttrGenAIConversationID: "ctx-1",
				otelmap.AttrServerAddress:       "127.0.0.1",
				otelmap.AttrCallType:            "AGENT",
			} {
				if got := strAttr(inv, key); got != want {
					t.Errorf("invoke_agent %s = %q, want %q", key, got, want)
				}
			}
			if port, ok := inv.IntAttr(otelmap.AttrServerPort); !ok || port <= 0 {
				t.Errorf("server.port %v", port)
			}
			var in, out []map[string]any
			if err := json.Unmarshal([]byte(strAttr(inv, otelmap.AttrGenAIInputMessages)), &in); err != nil || len(in) != 1 || in[0]["role"] != "user" {
				t.Errorf("input messages %s (%v)", strAttr(inv, otelmap.AttrGenAIInputMessages), err)
			}
			if err := json.Unmarshal([]byte(strAttr(inv, otelmap.AttrGenAIOutputMessages)), &out); err != nil || !strings.Contains(strAttr(inv, otelmap.AttrGenAIOutputMessages), "solver answers: hello") {
				t.Errorf("output messages %s (%v)", strAttr(inv, otelmap.AttrGenAIOutputMessages), err)
			}
			for key, want := range map[attribute.Key]string{
				otelmap.AttrA2AMethodName:       "SendMessage",
				otelmap.AttrA2ATaskID:           reply.TaskID,
				otelmap.AttrA2ATaskState:        string(a2a.TaskStateCompleted),
				otelmap.AttrA2AProtocolVersion:  "1.0",
				otelmap.AttrGenAIConversationID: "ctx-1",
			} {
				if got := strAttr(a2aSpan, key); got != want {
					t.Errorf("SendMessage %s = %q, want %q", key, got, want)
				}
			}
			if strAttr(a2aSpan, otelmap.AttrA2AMessageID) == "" {
				t.Error("SendMessage has no a2a.message.id")
			}

			td := assemble.Trace(tid, spans)
			if len(td.Interactions) != 1 {
				t.Fatalf("interactions %+v", td.Interactions)
			}
			ia := td.Interactions[0]
			if ia.From != "green" || ia.To != "solver" || ia.Count != 1 || ia.Errors != 0 {
				t.Errorf("interaction %+v", ia)
			}
			if withServer && ia.BothSides != 1 {
				t.Errorf("with the agent's spans the call is seen from both sides: %+v", ia)
			}
			if !withServer && ia.ClientOnly != 1 {
				t.Errorf("without the agent's spans the call is client-only: %+v", ia)
			}
		})
	}
}

// TestMessengerExtensionSteps runs a two-level team, green -> lead (1.0,
// streaming) -> worker (0.3), both returning their steps through the
// Traceability Extension and exporting nothing: the steps become spans of
// the green agent's trace under its invoke_agent span, and assembly shows
// the lead's call to the worker, seen only through the extension.
func TestMessengerExtensionSteps(t *testing.T) {
	worker := startTestPurple(t, testPurpleOptions{Name: "worker", Legacy: true, Extension: true, Chat: true})
	lead := startTestPurple(t, testPurpleOptions{Name: "lead", Streaming: true, Extension: true, Peers: []string{worker.URL}})
	g := newTestGreen(t, MessengerOptions{})
	reply, tid, err := g.send(t, SendRequest{URL: lead.URL, Text: "review"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "lead answers: review\nworker answers: review" {
		t.Errorf("text %q", reply.Text)
	}
	if reply.ExtensionSteps == 0 {
		t.Fatal("no extension steps")
	}
	spans := g.store.Spans(tid)
	inv := spanNamed(t, spans, "invoke_agent lead", trace.SpanKindClient)
	var ext []otelmap.Span
	for _, s := range spans {
		if s.Source == otelmap.SourceExtension {
			ext = append(ext, s)
		}
	}
	if len(ext) != reply.ExtensionSteps {
		t.Errorf("%d extension spans stored, reply says %d", len(ext), reply.ExtensionSteps)
	}
	// lead's own work, its call to worker, worker's work and its chat.
	if len(ext) != 4 {
		t.Errorf("%d extension spans, want 4", len(ext))
	}
	roots := 0
	for _, s := range ext {
		if s.TraceID != tid {
			t.Errorf("extension span %s in trace %s", s.Name, s.TraceID)
		}
		if s.ParentSpanID == inv.SpanID {
			roots++
		}
	}
	if roots != 1 {
		t.Errorf("%d extension spans under invoke_agent, want 1 (the lead's own work)", roots)
	}

	td := assemble.Trace(tid, spans)
	edges := map[string]tracedata.Interaction{}
	for _, ia := range td.Interactions {
		edges[ia.From+"->"+ia.To] = ia
	}
	// The lead's own work, returned through the extension, is the server
	// side of the green agent's call.
	if ia, ok := edges["green->lead"]; !ok || ia.Count != 1 || ia.BothSides != 1 {
		t.Errorf("green->lead: %+v", td.Interactions)
	}
	if ia, ok := edges["lead->worker"]; !ok || ia.Count != 1 || ia.ExtensionOnly != 1 {
		t.Errorf("lead->worker, seen only through the extension: %+v", td.Interactions)
	}
	if len(edges) != 2 {
		t.Errorf("interactions %+v", td.Interactions)
	}
	if td.Agent("worker") == nil {
		t.Errorf("agents %v", td.AgentNames())
	}
}

// TestMessengerMalformedExtension: a payload that does not decode is
// ignored and the call succeeds.
func TestMessengerMalformedExtension(t *testing.T) {
	for name, payload := range map[string]any{
		"not json":           "{not json",
		"bad call type":      map[string]any{"trace_id": "x", "steps": []any{map[string]any{"step_id": "a", "call_type": "BOGUS"}}},
		"not an object":      []any{1, 2},
		"step without an id": map[string]any{"steps": []any{map[string]any{"call_type": "AGENT"}}},
	} {
		t.Run(name, func(t *testing.T) {
			p := startTestPurple(t, testPurpleOptions{Extension: true, ExtensionPayload: payload, AsMessage: true})
			g := newTestGreen(t, MessengerOptions{})
			reply, tid, err := g.send(t, SendRequest{URL: p.URL, Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.ExtensionSteps != 0 {
				t.Errorf("%d steps from a malformed payload", reply.ExtensionSteps)
			}
			for _, s := range g.store.Spans(tid) {
				if s.Source == otelmap.SourceExtension {
					t.Errorf("extension span %s stored", s.Name)
				}
			}
		})
	}
}

// TestMessengerFailures: every way a participant can fail ends the call
// with an error naming its URL, promptly, records the failure on the
// invoke_agent span, and leaves no goroutine behind once closed.
func TestMessengerFailures(t *testing.T) {
	cases := []struct {
		name    string
		opts    testPurpleOptions
		refused bool
		errType string
		is      error
	}{
		{name: "hang", opts: testPurpleOptions{Fault: faultHang}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "hang streaming", opts: testPurpleOptions{Fault: faultHang, Streaming: true}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "hang 0.3 streaming", opts: testPurpleOptions{Fault: faultHang, Streaming: true, Legacy: true}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "fail", opts: testPurpleOptions{Fault: faultFail}, errType: "task_failed", is: ErrTaskFailed},
		{name: "fail 0.3 streaming", opts: testPurpleOptions{Fault: faultFail, Legacy: true, Streaming: true}, errType: "task_failed", is: ErrTaskFailed},
		{name: "garbage", opts: testPurpleOptions{Fault: faultGarbage}, errType: "protocol"},
		{name: "garbage streaming", opts: testPurpleOptions{Fault: faultGarbage, Streaming: true}, errType: "no_result", is: ErrNoResult},
		{name: "garbage 0.3", opts: testPurpleOptions{Fault: faultGarbage, Legacy: true}, errType: "protocol"},
		{name: "crash 0.3 streaming", opts: testPurpleOptions{Fault: faultCrash, Streaming: true, Legacy: true}, errType: "connection"},
		{name: "crash", opts: testPurpleOptions{Fault: faultCrash}, errType: "connection"},
		{name: "crash streaming", opts: testPurpleOptions{Fault: faultCrash, Streaming: true}, errType: "connection"},
		{name: "refused", refused: true, errType: "agent_card"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			var url string
			var p *testPurple
			if tc.refused {
				url = refusedURL(t)
			} else {
				p = startTestPurple(t, tc.opts)
				url = p.URL
			}
			g := newTestGreen(t, MessengerOptions{CallTimeout: 500 * time.Millisecond})
			start := time.Now()
			reply, tid, err := g.send(t, SendRequest{URL: url, Text: "hi"})
			took := time.Since(start)
			if err == nil {
				t.Fatalf("no error; reply %+v", reply)
			}
			t.Logf("error after %v: %v", took, err)
			// A bound against hanging, far above the call timeout.
			if took > 10*time.Second {
				t.Errorf("took %v", took)
			}
			var ce *CallError
			if !errors.As(err, &ce) || ce.URL != url || !strings.Contains(err.Error(), url) {
				t.Errorf("error does not name %s: %v", url, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error is not %v: %v", tc.is, err)
			}
			if errors.Is(err, ErrTaskFailed) {
				if reply == nil || reply.State != "failed" || !strings.Contains(reply.Text, "deliberate failure") || ce.State != "failed" {
					t.Errorf("failed task: reply %+v", reply)
				}
			}
			var inv *otelmap.Span
			for _, s := range g.store.Spans(tid) {
				if strings.HasPrefix(s.Name, otelmap.OpInvokeAgent) {
					inv = &s
				}
			}
			if inv == nil || !inv.StatusError {
				t.Fatalf("invoke_agent span not failed: %+v", inv)
			}
			if tc.errType != "" && strAttr(*inv, otelmap.AttrErrorType) != tc.errType {
				t.Errorf("error.type %q, want %q", strAttr(*inv, otelmap.AttrErrorType), tc.errType)
			}
			if err := g.m.Close(); err != nil {
				t.Error(err)
			}
			if p != nil {
				p.Close()
			}
			checkNoGoroutineLeak(t, before)
		})
	}
}

// TestMessengerReusesClients: one card fetch serves every call to a
// participant, concurrent first calls included; Close ends the Messenger.
func TestMessengerReusesClients(t *testing.T) {
	before := runtime.NumGoroutine()
	p := startTestPurple(t, testPurpleOptions{Streaming: true})
	g := newTestGreen(t, MessengerOptions{})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = g.m.Send(t.Context(), SendRequest{URL: p.URL, Text: fmt.Sprint(i)})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.send(t, SendRequest{URL: p.URL, Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if n := p.CardFetches(); n != 1 {
		t.Errorf("%d card fetches for 7 calls, want 1", n)
	}
	if len(p.Calls()) != 7 {
		t.Errorf("%d calls", len(p.Calls()))
	}
	info, err := g.m.Agent(t.Context(), p.URL)
	if err != nil || info.Name != "purple" || !info.Streaming || info.Protocol != "1.0" || info.Endpoint != p.URL {
		t.Errorf("agent info %+v, %v", info, err)
	}

	if err := g.m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.m.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, _, err := g.send(t, SendRequest{URL: p.URL, Text: "late"}); !errors.Is(err, ErrMessengerClosed) {
		t.Errorf("send after close: %v", err)
	}
	p.Close()
	checkNoGoroutineLeak(t, before)
}

// TestMessengerCardRetry: a participant that is not up yet at the first
// call is asked for its card again at the next.
func TestMessengerCardRetry(t *testing.T) {
	var up sync.Mutex
	ready := false
	p := startTestPurple(t, testPurpleOptions{})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.Lock()
		ok := ready
		up.Unlock()
		if !ok {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		http.Redirect(w, r, p.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(gate.Close)
	g := newTestGreen(t, MessengerOptions{UseParticipantURL: false})
	if _, _, err := g.send(t, SendRequest{URL: gate.URL, Text: "hi"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("first call: %v", err)
	}
	up.Lock()
	ready = true
	up.Unlock()
	reply, _, err := g.send(t, SendRequest{URL: gate.URL, Text: "hi"})
	if err != nil || reply.AgentName != "purple" {
		t.Fatalf("second call: %+v %v", reply, err)
	}
}

// TestMessengerPollsUnfinishedTask: an agent that answers a blocking send
// while its task is still working is followed with tasks/get until the
// task ends.
func TestMessengerPollsUnfinishedTask(t *testing.T) {
	var mu sync.Mutex
	gets := 0
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(a2a.AgentCard{Name: "slow", SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srvURL, a2a.TransportProtocolJSONRPC)}})
			return
		}
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		task := map[string]any{"id": "t1", "contextId": "c1", "status": map[string]any{"state": "TASK_STATE_WORKING"}}
		var result any = map[string]any{"task": task}
		if req.Method == "GetTask" {
			mu.Lock()
			gets++
			if gets >= 2 {
				task["status"] = map[string]any{"state": "TASK_STATE_COMPLETED",
					"message": map[string]any{"messageId": "m", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": "finally"}}}}
			}
			mu.Unlock()
			result = task
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}))
	srvURL = srv.URL
	t.Cleanup(srv.Close)
	g := newTestGreen(t, MessengerOptions{})
	reply, tid, err := g.send(t, SendRequest{URL: srv.URL, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "finally" || reply.State != "completed" || reply.TaskID != "t1" {
		t.Errorf("reply %+v", reply)
	}
	n := 0
	for _, s := range g.store.Spans(tid) {
		if s.Name == "GetTask" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d GetTask spans, want 2", n)
	}
}

// TestMessengerBadURL: a malformed URL is an error naming it, without a
// call.
func TestMessengerBadURL(t *testing.T) {
	g := newTestGreen(t, MessengerOptions{})
	_, _, err := g.send(t, SendRequest{URL: "not a url", Text: "x"})
	var ce *CallError
	if !errors.As(err, &ce) || ce.URL != "not a url" {
		t.Errorf("err %v", err)
	}
}

// TestMessengerCloseEndsCalls: Close ends the calls under way, with an error
// that says so.
func TestMessengerCloseEndsCalls(t *testing.T) {
	before := runtime.NumGoroutine()
	p := startTestPurple(t, testPurpleOptions{Fault: faultHang, Streaming: true})
	g := newTestGreen(t, MessengerOptions{})
	done := make(chan error, 1)
	go func() {
		_, _, err := g.send(t, SendRequest{URL: p.URL, Text: "hi"})
		done <- err
	}()
	for len(p.Calls()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := g.m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrMessengerClosed) || !strings.Contains(err.Error(), p.URL) {
			t.Errorf("call under way at Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the call under way")
	}
	p.Close()
	checkNoGoroutineLeak(t, before)
}
