package a2acall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// caller is the calling side of a messenger test: a Messenger whose spans,
// and the spans it rebuilds from the Traceability Extension, land in one
// store, as in the green agent (service "green", the assessor).
type caller struct {
	m      *a2acall.Messenger
	store  *otelmap.Store
	tracer trace.Tracer
}

func newCaller(t *testing.T, opts a2acall.Options) *caller {
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
	c := &caller{m: a2acall.New(tp, store, opts), store: store, tracer: tp.Tracer("test")}
	t.Cleanup(func() {
		_ = c.m.Close()
		_ = tp.Shutdown(context.Background())
	})
	return c
}

// send makes one call inside a HOST task span, as the green executor does,
// and returns the reply, the task's trace id and the error.
func (c *caller) send(t *testing.T, req a2acall.SendRequest) (*a2acall.Reply, trace.TraceID, error) {
	t.Helper()
	ctx, task := c.tracer.Start(t.Context(), otelmap.SpanTask, trace.WithAttributes(otelmap.AttrCallType.String(string(tracedata.CallHost))))
	reply, err := c.m.Send(ctx, req)
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

// countSpans counts the spans of a trace with this name and kind.
func countSpans(spans []otelmap.Span, name string, kind trace.SpanKind) int {
	n := 0
	for _, s := range spans {
		if s.Name == name && s.Kind == kind {
			n++
		}
	}
	return n
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
		opts       agentOptions
		protocol   string
		wireMethod string
	}{
		{"1.0 blocking", agentOptions{}, "1.0", `"method":"SendMessage"`},
		{"1.0 streaming", agentOptions{Streaming: true}, "1.0", `"method":"SendStreamingMessage"`},
		{"1.0 message", agentOptions{AsMessage: true}, "1.0", `"method":"SendMessage"`},
		{"1.0 streaming message", agentOptions{Streaming: true, AsMessage: true}, "1.0", `"method":"SendStreamingMessage"`},
		{"0.3 blocking", agentOptions{Legacy: true}, "0.3.0", `"method":"message/send"`},
		{"0.3 streaming", agentOptions{Legacy: true, Streaming: true}, "0.3.0", `"method":"message/stream"`},
		{"0.3 streaming message", agentOptions{Legacy: true, Streaming: true, AsMessage: true}, "0.3.0", `"method":"message/stream"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Name = "solver"
			opts.ReplyData = map[string]any{"decision": "accept"}
			p := startAgent(t, opts)
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review paper 7", Data: map[string]any{"paper": "7"}})
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

// TestMessengerProgressNotInReply: a working status message is progress,
// not the answer. When the task then ends with a status that carries no
// message, the reply holds the artifacts alone; the earlier progress text
// is not resurrected.
func TestMessengerProgressNotInReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts agentOptions
	}{
		{"1.0 streaming", agentOptions{Streaming: true}},
		{"0.3 streaming", agentOptions{Streaming: true, Legacy: true}},
		{"1.0 blocking", agentOptions{}},
		{"0.3 blocking", agentOptions{Legacy: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Progress = "still reading the paper"
			p := startAgent(t, opts)
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "purple answers: review" || reply.State != "completed" {
				t.Errorf("reply %q (%s), want the artifact's text alone", reply.Text, reply.State)
			}
		})
	}
}

// TestMessengerChunkedArtifact: an artifact sent in two events, the second
// appending to the first, is one answer: its text and its data.
func TestMessengerChunkedArtifact(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts agentOptions
	}{
		{"1.0 streaming", agentOptions{Streaming: true}},
		{"0.3 streaming", agentOptions{Streaming: true, Legacy: true}},
		{"1.0 blocking", agentOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Chunked = true
			opts.ReplyData = map[string]any{"decision": "reject"}
			p := startAgent(t, opts)
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "purple answers: review" || len(reply.Data) != 1 || reply.Data[0]["decision"] != "reject" {
				t.Errorf("reply %q %v", reply.Text, reply.Data)
			}
		})
	}
}

// TestMessengerInputRequired: a task that ends input-required ends the call
// with its question; sending again with its task id continues it.
func TestMessengerInputRequired(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			p := startAgent(t, agentOptions{Streaming: streaming, AskFirst: "which paper?"})
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.State != "input-required" || reply.Text != "which paper?" || reply.TaskID == "" {
				t.Fatalf("reply %+v", reply)
			}
			reply2, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "paper 7", ContextID: reply.ContextID, TaskID: reply.TaskID})
			if err != nil {
				t.Fatal(err)
			}
			if reply2.State != "completed" || reply2.TaskID != reply.TaskID || reply2.Text != "purple answers: paper 7" {
				t.Errorf("continued task: %+v", reply2)
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
			p := startAgent(t, agentOptions{Name: "reviewer", Path: "/reviewer", Legacy: legacy})
			if !strings.HasSuffix(p.URL, "/reviewer") {
				t.Fatalf("url %s", p.URL)
			}
			c := newCaller(t, a2acall.Options{})
			// A trailing slash is the same participant.
			for _, u := range []string{p.URL, p.URL + "/"} {
				if _, _, err := c.send(t, a2acall.SendRequest{URL: u, Text: "hi"}); err != nil {
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
			p := startAgent(t, agentOptions{Legacy: legacy, Streaming: legacy})
			c := newCaller(t, a2acall.Options{})
			_, tid, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			post := spanNamed(t, c.store.Spans(tid), http.MethodPost, trace.SpanKindClient)
			calls := p.Calls()
			if len(calls) != 1 {
				t.Fatalf("%d calls", len(calls))
			}
			h := calls[0].Header
			want := fmt.Sprintf("00-%s-%s-01", tid, post.SpanID)
			if got := h.Get("Traceparent"); got != want {
				t.Errorf("traceparent %q, want %q", got, want)
			}
			if got := h.Values(a2acall.HeaderExtensions); len(got) != 1 || got[0] != tracedata.ExtensionURI {
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
			c := newCaller(t, a2acall.Options{})
			opts := agentOptions{Name: "solver"}
			if withServer {
				opts.Store = c.store
			}
			p := startAgent(t, opts)
			reply, tid, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hello", ContextID: "ctx-1"})
			if err != nil {
				t.Fatal(err)
			}
			spans := c.store.Spans(tid)
			task := spanNamed(t, spans, otelmap.SpanTask, trace.SpanKindInternal)
			inv := spanNamed(t, spans, "invoke_agent solver", trace.SpanKindClient)
			a2aSpan := spanNamed(t, spans, "SendMessage", trace.SpanKindClient)
			post := spanNamed(t, spans, http.MethodPost, trace.SpanKindClient)
			if inv.ParentSpanID != task.SpanID {
				t.Errorf("invoke_agent parent %v, want the task %v", inv.ParentSpanID, task.SpanID)
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

			td := otelmap.Assemble(tid, spans)
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

// TestMessengerSpansLegacyStream: over 0.3 the A2A method span keeps the
// 1.0 method name (the span names the operation, not the wire method) and
// reports the task state as 0.3 spells it.
func TestMessengerSpansLegacyStream(t *testing.T) {
	p := startAgent(t, agentOptions{Name: "solver", Legacy: true, Streaming: true})
	c := newCaller(t, a2acall.Options{})
	reply, tid, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	spans := c.store.Spans(tid)
	inv := spanNamed(t, spans, "invoke_agent solver", trace.SpanKindClient)
	st := spanNamed(t, spans, "SendStreamingMessage", trace.SpanKindClient)
	if st.ParentSpanID != inv.SpanID {
		t.Errorf("SendStreamingMessage under %v, want invoke_agent %v", st.ParentSpanID, inv.SpanID)
	}
	for key, want := range map[attribute.Key]string{
		otelmap.AttrA2AMethodName:       "SendStreamingMessage",
		otelmap.AttrA2ATaskID:           reply.TaskID,
		otelmap.AttrA2ATaskState:        "completed",
		otelmap.AttrA2AProtocolVersion:  "0.3.0",
		otelmap.AttrGenAIConversationID: reply.ContextID,
	} {
		if got := strAttr(st, key); got != want {
			t.Errorf("SendStreamingMessage %s = %q, want %q", key, got, want)
		}
	}
	if got := strAttr(inv, otelmap.AttrGenAIConversationID); got != reply.ContextID {
		t.Errorf("invoke_agent takes the context the agent made: %q, want %q", got, reply.ContextID)
	}
}

// TestMessengerNoTransportSpans: with NoTransportSpans the call is the
// invoke_agent span alone, and the participant sees its context in
// traceparent, with the Traceability Extension still requested.
func TestMessengerNoTransportSpans(t *testing.T) {
	p := startAgent(t, agentOptions{Name: "solver"})
	c := newCaller(t, a2acall.Options{NoTransportSpans: true})
	_, tid, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	spans := c.store.Spans(tid)
	inv := spanNamed(t, spans, "invoke_agent solver", trace.SpanKindClient)
	for _, name := range []string{"SendMessage", http.MethodPost} {
		if n := countSpans(spans, name, trace.SpanKindClient); n != 0 {
			t.Errorf("%d %s spans", n, name)
		}
	}
	calls := p.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	h := calls[0].Header
	if got, want := h.Get("Traceparent"), fmt.Sprintf("00-%s-%s-01", tid, inv.SpanID); got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
	if got := h.Values(a2acall.HeaderExtensions); len(got) != 1 || got[0] != tracedata.ExtensionURI {
		t.Errorf("X-A2A-Extensions %q", got)
	}
}

// TestMessengerOptions: DisableStreaming sends message/send to an agent
// that streams; DisableContentCapture leaves message text off the spans.
func TestMessengerOptions(t *testing.T) {
	p := startAgent(t, agentOptions{Streaming: true})
	c := newCaller(t, a2acall.Options{DisableStreaming: true, DisableContentCapture: true})
	reply, tid, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Streamed || reply.Text != "purple answers: hi" {
		t.Errorf("reply %+v", reply)
	}
	if w := p.Wire(); !strings.Contains(w, `"method":"SendMessage"`) {
		t.Errorf("not a blocking send:\n%s", w)
	}
	inv := spanNamed(t, c.store.Spans(tid), "invoke_agent purple", trace.SpanKindClient)
	for _, key := range []attribute.Key{otelmap.AttrGenAIInputMessages, otelmap.AttrGenAIOutputMessages} {
		if _, ok := inv.Attr(key); ok {
			t.Errorf("%s recorded with content capture off", key)
		}
	}
}

// TestMessengerExtensionSteps runs a two-level team, green -> lead (1.0,
// streaming) -> worker (0.3), both returning their steps through the
// Traceability Extension and exporting nothing: the steps become spans of
// the green agent's trace under its invoke_agent span, and assembly shows
// the lead's call to the worker, seen only through the extension.
func TestMessengerExtensionSteps(t *testing.T) {
	worker := startAgent(t, agentOptions{Name: "worker", Legacy: true, Extension: true, Chat: true})
	lead := startAgent(t, agentOptions{Name: "lead", Streaming: true, Extension: true, Peers: []string{worker.URL}})
	c := newCaller(t, a2acall.Options{})
	reply, tid, err := c.send(t, a2acall.SendRequest{URL: lead.URL, Text: "review"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "lead answers: review\nworker answers: review" {
		t.Errorf("text %q", reply.Text)
	}
	if reply.ExtensionSteps == 0 {
		t.Fatal("no extension steps")
	}
	info, err := c.m.Agent(t.Context(), lead.URL)
	if err != nil || !info.Traceability {
		t.Errorf("the lead's card lists the extension: %+v, %v", info, err)
	}
	spans := c.store.Spans(tid)
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

	td := otelmap.Assemble(tid, spans)
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

// TestMessengerOnExtensionSpans: a Messenger without a store hands the
// spans rebuilt from the extension to OnExtensionSpans, under its
// invoke_agent span; without either it still counts the steps.
func TestMessengerOnExtensionSpans(t *testing.T) {
	p := startAgent(t, agentOptions{Name: "solver", Extension: true, Chat: true})
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var mu sync.Mutex
	var got []otelmap.Span
	m := a2acall.New(tp, nil, a2acall.Options{Logger: quietLogger, OnExtensionSpans: func(_ context.Context, spans []otelmap.Span) {
		mu.Lock()
		got = append(got, spans...)
		mu.Unlock()
	}})
	t.Cleanup(func() { _ = m.Close() })
	ctx, parent := tp.Tracer("test").Start(t.Context(), "task")
	reply, err := m.Send(ctx, a2acall.SendRequest{URL: p.URL, Text: "hi"})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The solver's own work and its chat.
	if reply.ExtensionSteps != 2 || len(got) != 2 {
		t.Fatalf("reply says %d steps, callback got %d spans", reply.ExtensionSteps, len(got))
	}
	for _, s := range got {
		if s.TraceID != parent.SpanContext().TraceID() || s.Source != otelmap.SourceExtension {
			t.Errorf("extension span %+v", s)
		}
	}

	bare := a2acall.New(tp, nil, a2acall.Options{Logger: quietLogger})
	t.Cleanup(func() { _ = bare.Close() })
	reply, err = bare.Send(t.Context(), a2acall.SendRequest{URL: p.URL, Text: "hi"})
	if err != nil || reply.ExtensionSteps != 2 {
		t.Errorf("without a store: %+v, %v", reply, err)
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
			p := startAgent(t, agentOptions{Extension: true, ExtensionPayload: payload, AsMessage: true})
			c := newCaller(t, a2acall.Options{})
			reply, tid, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.ExtensionSteps != 0 {
				t.Errorf("%d steps from a malformed payload", reply.ExtensionSteps)
			}
			for _, s := range c.store.Spans(tid) {
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
		opts    agentOptions
		refused bool
		errType string
		is      error
	}{
		{name: "hang", opts: agentOptions{Fault: faultHang}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "hang streaming", opts: agentOptions{Fault: faultHang, Streaming: true}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "hang 0.3 streaming", opts: agentOptions{Fault: faultHang, Streaming: true, Legacy: true}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "fail", opts: agentOptions{Fault: faultFail}, errType: "task_failed", is: a2acall.ErrTaskFailed},
		{name: "fail 0.3 streaming", opts: agentOptions{Fault: faultFail, Legacy: true, Streaming: true}, errType: "task_failed", is: a2acall.ErrTaskFailed},
		{name: "garbage", opts: agentOptions{Fault: faultGarbage}, errType: "protocol"},
		{name: "garbage streaming", opts: agentOptions{Fault: faultGarbage, Streaming: true}, errType: "no_result", is: a2acall.ErrNoResult},
		{name: "garbage 0.3", opts: agentOptions{Fault: faultGarbage, Legacy: true}, errType: "protocol"},
		{name: "crash 0.3 streaming", opts: agentOptions{Fault: faultCrash, Streaming: true, Legacy: true}, errType: "connection"},
		{name: "crash", opts: agentOptions{Fault: faultCrash}, errType: "connection"},
		{name: "crash streaming", opts: agentOptions{Fault: faultCrash, Streaming: true}, errType: "connection"},
		{name: "refused", refused: true, errType: "agent_card"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			var url string
			var p *testAgent
			if tc.refused {
				url = refusedURL(t)
			} else {
				p = startAgent(t, tc.opts)
				url = p.URL
			}
			c := newCaller(t, a2acall.Options{CallTimeout: 500 * time.Millisecond})
			start := time.Now()
			reply, tid, err := c.send(t, a2acall.SendRequest{URL: url, Text: "hi"})
			took := time.Since(start)
			if err == nil {
				t.Fatalf("no error; reply %+v", reply)
			}
			t.Logf("error after %v: %v", took, err)
			// A bound against hanging, far above the call timeout.
			if took > 30*time.Second {
				t.Errorf("took %v", took)
			}
			var ce *a2acall.CallError
			if !errors.As(err, &ce) || ce.URL != url || !strings.Contains(err.Error(), url) {
				t.Errorf("error does not name %s: %v", url, err)
			}
			if !tc.refused && (ce == nil || ce.Agent != "purple" || !strings.Contains(err.Error(), "(purple)")) {
				t.Errorf("error does not name the agent of the card: %v", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error is not %v: %v", tc.is, err)
			}
			if errors.Is(err, a2acall.ErrTaskFailed) {
				if reply == nil || reply.State != "failed" || !strings.Contains(reply.Text, "deliberate failure") || ce.State != "failed" {
					t.Errorf("failed task: reply %+v", reply)
				}
				if !strings.Contains(err.Error(), "deliberate failure") {
					t.Errorf("the error quotes the task's text: %v", err)
				}
			}
			var inv *otelmap.Span
			for _, s := range c.store.Spans(tid) {
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
			if err := c.m.Close(); err != nil {
				t.Error(err)
			}
			if p != nil {
				p.Close()
			}
			checkNoGoroutineLeak(t, before)
		})
	}
}

// TestMessengerRequestTimeout: SendRequest.Timeout bounds one call below
// the Messenger's CallTimeout, and the error says how long it waited.
func TestMessengerRequestTimeout(t *testing.T) {
	p := startAgent(t, agentOptions{Fault: faultHang, Streaming: true})
	c := newCaller(t, a2acall.Options{})
	_, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi", Timeout: 300 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("err %v", err)
	}
}

// TestMessengerReusesClients: one card fetch serves every call to a
// participant, concurrent first calls included; Close ends the Messenger.
func TestMessengerReusesClients(t *testing.T) {
	before := runtime.NumGoroutine()
	p := startAgent(t, agentOptions{Streaming: true})
	c := newCaller(t, a2acall.Options{})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.m.Send(t.Context(), a2acall.SendRequest{URL: p.URL, Text: fmt.Sprint(i)})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if n := p.CardFetches(); n != 1 {
		t.Errorf("%d card fetches for 7 calls, want 1", n)
	}
	if len(p.Calls()) != 7 {
		t.Errorf("%d calls", len(p.Calls()))
	}
	info, err := c.m.Agent(t.Context(), p.URL)
	if err != nil || info.Name != "purple" || !info.Streaming || info.Protocol != "1.0" || info.Endpoint != p.URL || info.URL != p.URL || info.Traceability {
		t.Errorf("agent info %+v, %v", info, err)
	}

	if err := c.m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.m.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "late"}); !errors.Is(err, a2acall.ErrClosed) {
		t.Errorf("send after close: %v", err)
	}
	if _, err := c.m.Agent(t.Context(), p.URL); !errors.Is(err, a2acall.ErrClosed) {
		t.Errorf("agent after close: %v", err)
	}
	p.Close()
	checkNoGoroutineLeak(t, before)
}

// TestMessengerCardRetry: a participant that is not up yet at the first
// call is asked for its card again at the next.
func TestMessengerCardRetry(t *testing.T) {
	var up sync.Mutex
	ready := false
	p := startAgent(t, agentOptions{})
	gate := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.Lock()
		ok := ready
		up.Unlock()
		if !ok {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		http.Redirect(w, r, p.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	c := newCaller(t, a2acall.Options{})
	if _, _, err := c.send(t, a2acall.SendRequest{URL: gate, Text: "hi"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("first call: %v", err)
	}
	up.Lock()
	ready = true
	up.Unlock()
	reply, _, err := c.send(t, a2acall.SendRequest{URL: gate, Text: "hi"})
	if err != nil || reply.AgentName != "purple" {
		t.Fatalf("second call: %+v %v", reply, err)
	}
}

// TestMessengerPollsUnfinishedTask: an agent that answers a blocking send,
// or ends its stream, while its task is still working is followed with
// tasks/get until the task ends. The agent is a hand-written A2A 1.0
// JSON-RPC server, since a2a-go's own server does not answer early.
func TestMessengerPollsUnfinishedTask(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			var mu sync.Mutex
			gets := 0
			var srvURL string
			srvURL = startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					_ = json.NewEncoder(w).Encode(a2a.AgentCard{Name: "slow", Capabilities: a2a.AgentCapabilities{Streaming: streaming},
						SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srvURL, a2a.TransportProtocolJSONRPC)}})
					return
				}
				var req struct {
					ID     any    `json:"id"`
					Method string `json:"method"`
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				task := map[string]any{"id": "t1", "contextId": "c1", "status": map[string]any{"state": "TASK_STATE_WORKING"}}
				switch req.Method {
				case "SendStreamingMessage":
					// One event, then the stream ends.
					w.Header().Set("Content-Type", "text/event-stream")
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"task": task}})
					_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
					return
				case "GetTask":
					mu.Lock()
					gets++
					if gets >= 2 {
						task["status"] = map[string]any{"state": "TASK_STATE_COMPLETED",
							"message": map[string]any{"messageId": "m", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": "finally"}}}}
					}
					mu.Unlock()
					_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": task})
					return
				}
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"task": task}})
			}))
			c := newCaller(t, a2acall.Options{})
			reply, tid, err := c.send(t, a2acall.SendRequest{URL: srvURL, Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "finally" || reply.State != "completed" || reply.TaskID != "t1" || reply.Streamed != streaming {
				t.Errorf("reply %+v", reply)
			}
			spans := c.store.Spans(tid)
			inv := spanNamed(t, spans, "invoke_agent slow", trace.SpanKindClient)
			n := 0
			for _, s := range spans {
				if s.Name == "GetTask" && s.Kind == trace.SpanKindClient {
					n++
					if s.ParentSpanID != inv.SpanID || strAttr(s, otelmap.AttrA2ATaskID) != "t1" || strAttr(s, otelmap.AttrGenAIConversationID) != "c1" {
						t.Errorf("GetTask span %+v", s)
					}
				}
			}
			if n != 2 {
				t.Errorf("%d GetTask spans, want 2", n)
			}
		})
	}
}

// TestMessengerNoTaskToFollow: an answer that is neither a message nor a
// task in a state that ends the call, and names no task to poll, ends the
// call with ErrNoResult.
func TestMessengerNoTaskToFollow(t *testing.T) {
	var srvURL string
	srvURL = startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(a2a.AgentCard{Name: "vague", Capabilities: a2a.AgentCapabilities{Streaming: true},
				SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srvURL, a2a.TransportProtocolJSONRPC)}})
			return
		}
		var req struct {
			ID any `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
			"statusUpdate": map[string]any{"status": map[string]any{"state": "TASK_STATE_WORKING"}}}})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
	}))
	c := newCaller(t, a2acall.Options{})
	reply, tid, err := c.send(t, a2acall.SendRequest{URL: srvURL, Text: "hi"})
	if !errors.Is(err, a2acall.ErrNoResult) {
		t.Fatalf("err %v", err)
	}
	var ce *a2acall.CallError
	if reply == nil || reply.State != "working" || !errors.As(err, &ce) || ce.State != "working" {
		t.Errorf("what arrived is returned with the error: %+v, %v", reply, err)
	}
	inv := spanNamed(t, c.store.Spans(tid), "invoke_agent vague", trace.SpanKindClient)
	if strAttr(inv, otelmap.AttrErrorType) != "no_result" {
		t.Errorf("error.type %q", strAttr(inv, otelmap.AttrErrorType))
	}
}

// TestMessengerBadURL: a malformed URL is an error naming it, without a
// call.
func TestMessengerBadURL(t *testing.T) {
	c := newCaller(t, a2acall.Options{})
	_, _, err := c.send(t, a2acall.SendRequest{URL: "not a url", Text: "x"})
	var ce *a2acall.CallError
	if !errors.As(err, &ce) || ce.URL != "not a url" {
		t.Errorf("err %v", err)
	}
}

// TestMessengerCloseEndsCalls: Close ends the calls under way, with an error
// that says so.
func TestMessengerCloseEndsCalls(t *testing.T) {
	before := runtime.NumGoroutine()
	p := startAgent(t, agentOptions{Fault: faultHang, Streaming: true})
	c := newCaller(t, a2acall.Options{})
	done := make(chan error, 1)
	go func() {
		_, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi"})
		done <- err
	}()
	for len(p.Calls()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, a2acall.ErrClosed) || !strings.Contains(err.Error(), p.URL) {
			t.Errorf("call under way at Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the call under way")
	}
	p.Close()
	checkNoGoroutineLeak(t, before)
}

// TestGenAIContent: the GenAI conventions' message list, the text first and
// each data part JSON-encoded after it.
func TestGenAIContent(t *testing.T) {
	for _, tc := range []struct {
		text, finish string
		data         []map[string]any
		want         string
	}{
		{"hi", "", nil, `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`},
		{"", "", nil, `[{"role":"user","parts":[{"type":"text","content":""}]}]`},
		{"", "stop", []map[string]any{{"a": 1}}, `[{"role":"user","parts":[{"type":"text","content":"{\"a\":1}"}],"finish_reason":"stop"}]`},
		{"hi", "", []map[string]any{{"a": 1}, {"b": "x"}}, `[{"role":"user","parts":[{"type":"text","content":"hi"},{"type":"text","content":"{\"a\":1}"},{"type":"text","content":"{\"b\":\"x\"}"}]}]`},
	} {
		if got := a2acall.GenAIContent("user", tc.text, tc.data, tc.finish); got != tc.want {
			t.Errorf("GenAIContent(%q, %v, %q) = %s, want %s", tc.text, tc.data, tc.finish, got, tc.want)
		}
	}
	long := a2acall.GenAIContent("assistant", strings.Repeat("é", otelmap.MaxContentChars), nil, "")
	var msgs []struct {
		Parts []struct{ Content string }
	}
	if err := json.Unmarshal([]byte(long), &msgs); err != nil || len(msgs) != 1 || len(msgs[0].Parts) != 1 {
		t.Fatalf("long content does not decode: %v", err)
	}
	if c := msgs[0].Parts[0].Content; len(c) > otelmap.MaxContentChars || !strings.HasSuffix(c, otelmap.ContentTruncatedMarker) {
		t.Errorf("long content not truncated with the marker: %d bytes", len(c))
	}
}
