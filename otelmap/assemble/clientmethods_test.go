package assemble_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// sdkTrace builds the spans of a made-up trace across processes: span n
// under parent (0: a root), n milliseconds from the start, ending in the
// order they started in reverse (a parent holds its children).
type sdkTrace struct{ spans []otelmap.Span }

func (s *sdkTrace) add(res *otelmap.Resource, n, parent byte, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sp := otelmap.Span{TraceID: trace.TraceID{0xab}, SpanID: trace.SpanID{0xab, n}, Name: name, Kind: kind,
		Start: t0.Add(time.Duration(n) * time.Millisecond), End: t0.Add(time.Second - time.Duration(n)*time.Millisecond),
		Attrs: attrs, Resource: res}
	if parent != 0 {
		sp.ParentSpanID = trace.SpanID{0xab, parent}
	}
	s.spans = append(s.spans, sp)
}

func (s *sdkTrace) read() *tracedata.TraceData { return assemble.Trace(s.spans[0].TraceID, s.spans) }

func invokeAgent(name string) []attribute.KeyValue {
	return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(name)}
}

const jsonrpc = "a2a.client.transports.jsonrpc.JsonRpcTransport."

// a2aSDKCall adds, under span parent of the coordinator's process, what
// the A2A Python SDK 1.x client records of one send_message to the agent
// served by callee (nil: no answer in the trace), from span n on: the
// SDK's method spans around the HTTP request, the _check_jsonrpc_response
// beside it, and the callee's HTTP server span and agent span.
func (s *sdkTrace) a2aSDKCall(co, callee *otelmap.Resource, n, parent byte, agent string) {
	s.add(co, n, parent, jsonrpc+"send_message", trace.SpanKindClient)
	s.add(co, n+1, n, jsonrpc+"_send_request", trace.SpanKindClient)
	s.add(co, n+2, n+1, "POST", trace.SpanKindClient, attribute.String("http.request.method", "POST"),
		attribute.String("url.full", "http://127.0.0.1:9000/"))
	if callee != nil {
		s.add(callee, n+3, n+2, "POST /", trace.SpanKindServer, attribute.String("http.request.method", "POST"),
			attribute.String("url.path", "/"))
		s.add(callee, n+4, n+3, "invoke_agent "+agent, trace.SpanKindInternal, invokeAgent(agent)...)
	}
	s.add(co, n+5, n+1, jsonrpc+"_check_jsonrpc_response", trace.SpanKindClient)
}

// agentCallSpan adds the GenAI agent call span docs/participants.md asks a
// caller for, with the agent-card fetch under it.
func (s *sdkTrace) agentCallSpan(co, callee *otelmap.Resource, n, parent byte, agent string) {
	s.add(co, n, parent, "invoke_agent "+agent, trace.SpanKindClient, append(invokeAgent(agent),
		otelmap.AttrServerAddress.String("127.0.0.1"), otelmap.AttrServerPort.Int(9000))...)
	s.add(co, n+1, n, "GET", trace.SpanKindClient, attribute.String("url.full", "http://127.0.0.1:9000/.well-known/agent-card.json"))
	if callee != nil {
		s.add(callee, n+2, n+1, "GET /.well-known/agent-card.json", trace.SpanKindServer,
			attribute.String("url.path", "/.well-known/agent-card.json"))
	}
}

// TestA2ASDKClientMethodSpans: a GenAI agent call span around the A2A
// Python SDK 1.x client (the AgentBeats participants' shape) is one call,
// seen from both sides: the SDK's method spans between it and the HTTP
// request (send_message, _send_request, _check_jsonrpc_response) are not
// a second, unanswered call (before, coordinator -> reviewer counted one
// both-sides and one client-only call, evidence partial).
func TestA2ASDKClientMethodSpans(t *testing.T) {
	co := &otelmap.Resource{ServiceName: "coordinator"}
	rv := &otelmap.Resource{ServiceName: "reviewer"}
	other := &otelmap.Resource{ServiceName: "other"}
	base := func() *sdkTrace {
		s := &sdkTrace{}
		s.add(co, 1, 0, "invoke_agent coordinator", trace.SpanKindInternal, invokeAgent("coordinator")...)
		return s
	}
	type want struct {
		from, to                  string
		both, clientOnly, errored int
	}
	cases := []struct {
		name  string
		build func() *sdkTrace
		want  []want
	}{
		{"the SDK 1.x call under an agent call span", func() *sdkTrace {
			s := base()
			s.agentCallSpan(co, rv, 10, 1, "reviewer")
			s.a2aSDKCall(co, rv, 20, 10, "reviewer")
			return s
		}, []want{{"coordinator", "reviewer", 1, 0, 0}}},
		// Attacks.
		{"the SDK's spans without an agent call span", func() *sdkTrace {
			s := base()
			s.a2aSDKCall(co, rv, 20, 1, "reviewer")
			return s
		}, []want{{"coordinator", "reviewer", 1, 0, 0}}},
		{"no answer in the trace: still one unanswered call", func() *sdkTrace {
			s := base()
			s.agentCallSpan(co, nil, 10, 1, "reviewer")
			s.a2aSDKCall(co, nil, 20, 10, "reviewer")
			return s
		}, []want{{"coordinator", "reviewer", 0, 1, 0}}},
		{"the request reached another agent than the span names", func() *sdkTrace {
			s := base()
			s.agentCallSpan(co, rv, 10, 1, "reviewer")
			s.a2aSDKCall(co, other, 20, 10, "other")
			return s
		}, []want{{"coordinator", "other", 1, 0, 0}, {"coordinator", "reviewer", 0, 1, 0}}},
		{"two messages under one agent call span are two calls", func() *sdkTrace {
			s := base()
			s.agentCallSpan(co, rv, 10, 1, "reviewer")
			s.a2aSDKCall(co, rv, 20, 10, "reviewer")
			s.a2aSDKCall(co, rv, 30, 10, "reviewer")
			return s
		}, []want{{"coordinator", "reviewer", 2, 0, 0}}},
		{"a span named like _check_jsonrpc_response that is a real call", func() *sdkTrace {
			s := base()
			s.agentCallSpan(co, rv, 10, 1, "reviewer")
			s.a2aSDKCall(co, rv, 20, 10, "reviewer")
			s.add(co, 40, 20, jsonrpc+"_check_jsonrpc_response", trace.SpanKindClient,
				attribute.String("url.full", "http://127.0.0.1:9001/"))
			s.add(other, 41, 40, "POST /", trace.SpanKindServer, attribute.String("url.path", "/"))
			s.add(other, 42, 41, "invoke_agent other", trace.SpanKindInternal, invokeAgent("other")...)
			return s
		}, []want{{"coordinator", "other", 1, 0, 0}, {"coordinator", "reviewer", 1, 0, 0}}},
		{"the agent call span failed though its request was answered", func() *sdkTrace {
			s := base()
			s.agentCallSpan(co, rv, 10, 1, "reviewer")
			s.a2aSDKCall(co, rv, 20, 10, "reviewer")
			s.spans[1].StatusError, s.spans[1].StatusMessage = true, "bad answer" // the agent call span
			return s
		}, []want{{"coordinator", "reviewer", 1, 0, 1}}},
		{"the caller answering its own request under the method spans", func() *sdkTrace {
			// An A2A call to an address (no agent named) that failed with
			// no answer, and under the SDK's method span a request the
			// caller's own process answers: read as the call's answer, the
			// call became a self-call, dropped, and its failure with it.
			s := base()
			s.add(co, 10, 1, "SendMessage", trace.SpanKindClient, attribute.String("a2a.method", "message/send"),
				otelmap.AttrServerAddress.String("10.0.0.9"), otelmap.AttrServerPort.Int(9000))
			s.spans[1].StatusError = true
			s.add(co, 20, 10, jsonrpc+"send_message", trace.SpanKindClient)
			s.add(co, 21, 20, "POST", trace.SpanKindClient, attribute.String("http.request.method", "POST"))
			s.add(co, 22, 21, "POST /", trace.SpanKindServer, attribute.String("url.path", "/"))
			return s
		}, []want{{"coordinator", "10.0.0.9:9000", 0, 1, 1}}},
		{"a method span of another process between them", func() *sdkTrace {
			s := base()
			s.agentCallSpan(co, rv, 10, 1, "reviewer")
			s.add(other, 20, 10, jsonrpc+"send_message", trace.SpanKindClient)
			s.add(co, 21, 20, "POST", trace.SpanKindClient, attribute.String("url.full", "http://127.0.0.1:9000/"))
			s.add(rv, 22, 21, "POST /", trace.SpanKindServer, attribute.String("url.path", "/"))
			s.add(rv, 23, 22, "invoke_agent reviewer", trace.SpanKindInternal, invokeAgent("reviewer")...)
			return s
		}, nil}, // whatever it reads, the reviewer's answer does not absorb the span's own call
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			td := c.build().read()
			if c.want == nil {
				in := findPair(td, "coordinator", "reviewer")
				if in == nil || in.ClientOnly+in.BothSides == 0 {
					t.Errorf("the agent call span's own call is gone: %+v", td.Interactions)
				}
				return
			}
			if len(td.Interactions) != len(c.want) {
				t.Errorf("interactions %+v, want %+v", td.Interactions, c.want)
			}
			for _, w := range c.want {
				in := findPair(td, w.from, w.to)
				if in == nil || in.BothSides != w.both || in.ClientOnly != w.clientOnly || in.Errors != w.errored ||
					in.Count != w.both+w.clientOnly {
					t.Errorf("%s -> %s = %+v, want %+v", w.from, w.to, in, w)
				}
			}
		})
	}
}

func findPair(td *tracedata.TraceData, from, to string) *tracedata.Interaction {
	for i := range td.Interactions {
		if td.Interactions[i].From == from && td.Interactions[i].To == to {
			return &td.Interactions[i]
		}
	}
	return nil
}
