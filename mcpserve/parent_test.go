package mcpserve_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/mcpserve"
)

// TestServerSpansStayInTheTaskTrace attacks the rule of parent.go: whatever
// trace context a client sends in params._meta, the server span of a
// request to a task's endpoint is in that task's trace; it is the child of
// the client's span only when the client names a span of that trace, else
// the child of the task's span. Two tasks are open; the client of task A
// sends, call by call, every kind of traceparent, task B's among them (a
// participant grafting its calls into another participant's trace).
func TestServerSpansStayInTheTaskTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	green := tp.Tracer("green")
	ctxA, taskA := green.Start(t.Context(), "coordbench.task A", trace.WithNewRoot())
	ctxB, taskB := green.Start(t.Context(), "coordbench.task B", trace.WithNewRoot())
	defer taskA.End()
	defer taskB.End()
	// The green agent's A2A call to task A's participant, whose context the
	// participant receives in the request's traceparent header.
	_, callA := green.Start(ctxA, "invoke_agent solver", trace.WithSpanKind(trace.SpanKindClient))
	defer callA.End()
	h := serve(t, mcpserve.Options{TracerProvider: tp, OwnSpan: func(sc trace.SpanContext) bool {
		return sc.SpanID() == callA.SpanContext().SpanID() || sc.SpanID() == taskA.SpanContext().SpanID() || sc.SpanID() == taskB.SpanContext().SpanID()
	}})
	a, closeA, err := h.Open(ctxA, echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeA()
	b, closeB, err := h.Open(ctxB, echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeB()
	traceA, traceB := taskA.SpanContext().TraceID(), taskB.SpanContext().TraceID()
	const clientSpan = "00f067aa0ba902b7"
	tp00 := func(tid trace.TraceID, flags string) string {
		return "00-" + tid.String() + "-" + clientSpan + "-" + flags
	}

	type want struct {
		trace  trace.TraceID
		parent string // span id: the client's, else the task's
		how    string
	}
	taskParent := func(task trace.Span, how string) want {
		return want{task.SpanContext().TraceID(), task.SpanContext().SpanID().String(), how}
	}
	cases := []struct {
		name string
		ep   string // "a" or "b"
		meta string // the params' _meta member, "" for none
		want want
	}{
		{"no _meta", "a", "", taskParent(taskA, mcpserve.TraceContextAbsent)},
		{"empty _meta", "a", `{}`, taskParent(taskA, mcpserve.TraceContextAbsent)},
		{"tracestate only", "a", `{"tracestate":"k=v"}`, taskParent(taskA, mcpserve.TraceContextAbsent)},
		{"own trace, sampled", "a", `{"traceparent":"` + tp00(traceA, "01") + `"}`, want{traceA, clientSpan, mcpserve.TraceContextClient}},
		{"own trace, flags 00 (not sampled)", "a", `{"traceparent":"` + tp00(traceA, "00") + `"}`, want{traceA, clientSpan, mcpserve.TraceContextClient}},
		{"own trace, tracestate too", "a", `{"traceparent":"` + tp00(traceA, "01") + `","tracestate":"vendor=x"}`, want{traceA, clientSpan, mcpserve.TraceContextClient}},
		{"the task's own span named", "a", `{"traceparent":"00-` + traceA.String() + `-` + taskA.SpanContext().SpanID().String() + `-01"}`, taskParent(taskA, mcpserve.TraceContextAssessorSpan)},
		{"the assessor's A2A call forwarded", "a", `{"traceparent":"00-` + traceA.String() + `-` + callA.SpanContext().SpanID().String() + `-01"}`, taskParent(taskA, mcpserve.TraceContextAssessorSpan)},
		{"the assessor's A2A call, flags 00", "a", `{"traceparent":"00-` + traceA.String() + `-` + callA.SpanContext().SpanID().String() + `-00"}`, taskParent(taskA, mcpserve.TraceContextAssessorSpan)},
		{"another task's trace (graft)", "a", `{"traceparent":"` + tp00(traceB, "01") + `"}`, taskParent(taskA, mcpserve.TraceContextOtherTrace)},
		{"another task's span itself", "a", `{"traceparent":"00-` + traceB.String() + `-` + taskB.SpanContext().SpanID().String() + `-01"}`, taskParent(taskA, mcpserve.TraceContextOtherTrace)},
		{"an unrelated trace", "a", `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, taskParent(taskA, mcpserve.TraceContextOtherTrace)},
		{"task B's endpoint, task A's trace", "b", `{"traceparent":"` + tp00(traceA, "01") + `"}`, taskParent(taskB, mcpserve.TraceContextOtherTrace)},
		{"task B's endpoint, own trace", "b", `{"traceparent":"` + tp00(traceB, "01") + `"}`, want{traceB, clientSpan, mcpserve.TraceContextClient}},
		{"garbage", "a", `{"traceparent":"garbage"}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"empty string", "a", `{"traceparent":""}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"null", "a", `{"traceparent":null}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"a number", "a", `{"traceparent":42}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"an object", "a", `{"traceparent":{"trace_id":"` + traceB.String() + `"}}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"version ff", "a", `{"traceparent":"ff-` + traceA.String() + `-` + clientSpan + `-01"}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"zero trace id", "a", `{"traceparent":"00-00000000000000000000000000000000-` + clientSpan + `-01"}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"zero span id", "a", `{"traceparent":"00-` + traceA.String() + `-0000000000000000-01"}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"upper-case hex", "a", `{"traceparent":"00-` + strings.ToUpper(traceA.String()) + `-00F067AA0BA902B7-01"}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"trace id one short", "a", `{"traceparent":"00-` + traceA.String()[1:] + `-` + clientSpan + `-01"}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		{"version 00 with more fields", "a", `{"traceparent":"` + tp00(traceA, "01") + `-extra"}`, taskParent(taskA, mcpserve.TraceContextMalformed)},
		// After all that the session still takes a plain call.
		{"no _meta again", "a", "", taskParent(taskA, mcpserve.TraceContextAbsent)},
	}

	sessions := map[string]string{}
	for name, ep := range map[string]string{"a": a.URL, "b": b.URL} {
		token := a.Token
		if name == "b" {
			token = b.Token
		}
		code, session, body := rpc(t, ep, token, "",
			`{"jsonrpc":"2.0","id":"init-`+name+`","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"},"_meta":{"traceparent":"`+tp00(traceB, "01")+`"}}}`)
		if code != http.StatusOK || session == "" {
			t.Fatalf("initialize %s: %d %s", name, code, body)
		}
		sessions[name] = session
		rpc(t, ep, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	for i, c := range cases {
		url, token := a.URL, a.Token
		if c.ep == "b" {
			url, token = b.URL, b.Token
		}
		params := `{"name":"echo","arguments":{"text":"hi"}`
		if c.meta != "" {
			params += `,"_meta":` + c.meta
		}
		params += "}"
		code, _, body := rpc(t, url, token, sessions[c.ep], fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i, params))
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.name, code, body)
		}
	}

	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanKind() != trace.SpanKindServer {
			continue
		}
		attrs := spanAttrs(s)
		byID[attrs[mcpcall.AttrRequestID]] = s
		// Every server span of either endpoint is in one of the two tasks'
		// traces, initialize's (task B's traceparent sent to A) too.
		if tid := s.SpanContext().TraceID(); tid != traceA && tid != traceB {
			t.Errorf("%s (%s): span in trace %s, neither task's", s.Name(), attrs[mcpcall.AttrRequestID], tid)
		}
	}
	if s := byID["init-a"]; s == nil || s.SpanContext().TraceID() != traceA || s.Parent().SpanID() != taskA.SpanContext().SpanID() {
		t.Errorf("initialize on A with B's traceparent: %v", s)
	}
	for i, c := range cases {
		s := byID[strconv.Itoa(i)]
		if s == nil {
			t.Errorf("%s: no server span recorded", c.name)
			continue
		}
		attrs := spanAttrs(s)
		if s.SpanContext().TraceID() != c.want.trace || s.Parent().SpanID().String() != c.want.parent || attrs[mcpserve.AttrTraceContext] != c.want.how {
			t.Errorf("%s: trace %s parent %s (%s), want trace %s parent %s (%s)", c.name,
				s.SpanContext().TraceID(), s.Parent().SpanID(), attrs[mcpserve.AttrTraceContext], c.want.trace, c.want.parent, c.want.how)
		}
		if !s.SpanContext().IsSampled() {
			t.Errorf("%s: server span not sampled", c.name)
		}
	}
}

// serve serves a Host with opts on loopback.
func serve(t *testing.T, opts mcpserve.Options) *mcpserve.Host {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	opts.BaseURL = srv.URL + mcpserve.DefaultPath
	h, err := mcpserve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(h.Path(), h)
	return h
}

// TestServerSpansWithoutTask: an endpoint opened with no span in its
// context (a scenario's own test) keeps the client's trace context as any
// MCP server would: the client's span is the parent, and without one the
// span is a root.
func TestServerSpansWithoutTask(t *testing.T) {
	h, rec, _ := host(t)
	ep, closeEp, err := h.Open(t.Context(), echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEp()
	_, session, _ := rpc(t, ep.URL, ep.Token, "",
		`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	rpc(t, ep.URL, ep.Token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	rpc(t, ep.URL, ep.Token, session, `{"jsonrpc":"2.0","id":"with","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`)
	rpc(t, ep.URL, ep.Token, session, `{"jsonrpc":"2.0","id":"without","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	got := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		got[spanAttrs(s)[mcpcall.AttrRequestID]] = s
	}
	if s := got["with"]; s == nil || s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("with a traceparent: %v", s)
	}
	if s := got["without"]; s == nil || s.Parent().IsValid() {
		t.Errorf("without a traceparent: %v", s)
	}
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	return m
}
