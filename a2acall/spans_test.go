package a2acall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

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

// TestMessengerWireHeaders checks what the participant sees: traceparent of
// the caller's trace, whose parent is the POST client span, and the
// Traceability Extension in X-A2A-Extensions (spelled so on the wire) and
// A2A-Extensions.
func TestMessengerWireHeaders(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			p := a2atest.Start(t, a2atest.Options{Legacy: legacy, Streaming: legacy})
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

// TestMessengerSpans checks the call figure (docs/design.md#one-call-in-spans)
// on the caller's side (invoke_agent -> SendMessage -> POST, all CLIENT, with
// their attributes) and that trace assembly reads it as one interaction green ->
// agent: client-only when the agent's spans are missing, both sides when they
// arrive.
func TestMessengerSpans(t *testing.T) {
	for _, withServer := range []bool{false, true} {
		t.Run(fmt.Sprintf("server spans=%v", withServer), func(t *testing.T) {
			c := newCaller(t, a2acall.Options{})
			opts := a2atest.Options{Name: "solver"}
			if withServer {
				opts.Store = c.store
			}
			p := a2atest.Start(t, opts)
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

// TestMessengerSpansLegacyStream: over 0.3 the A2A method span keeps the
// 1.0 method name (the span names the operation, not the wire method) and
// reports the task state as 0.3 spells it.
func TestMessengerSpansLegacyStream(t *testing.T) {
	p := a2atest.Start(t, a2atest.Options{Name: "solver", Legacy: true, Streaming: true})
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
	p := a2atest.Start(t, a2atest.Options{Name: "solver"})
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

// TestMessengerExtensionSteps runs a two-level team, green -> lead (1.0,
// streaming) -> worker (0.3), both returning their steps through the
// Traceability Extension and exporting nothing: the steps become spans of
// the green agent's trace under its invoke_agent span, and assembly shows
// the lead's call to the worker, seen only through the extension.
func TestMessengerExtensionSteps(t *testing.T) {
	worker := a2atest.Start(t, a2atest.Options{Name: "worker", Legacy: true, Extension: true, Chat: true})
	lead := a2atest.Start(t, a2atest.Options{Name: "lead", Streaming: true, Extension: true, Peers: []string{worker.URL}})
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

// TestMessengerOnExtensionSpans: a Messenger without a store hands the
// spans rebuilt from the extension to OnExtensionSpans, under its
// invoke_agent span; without either it still counts the steps.
func TestMessengerOnExtensionSpans(t *testing.T) {
	p := a2atest.Start(t, a2atest.Options{Name: "solver", Extension: true, Chat: true})
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
			p := a2atest.Start(t, a2atest.Options{Extension: true, ExtensionPayload: payload, AsMessage: true})
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
