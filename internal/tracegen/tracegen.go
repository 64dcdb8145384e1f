// Package tracegen generates the deterministic multi-agent OTLP traces the
// whole-process benchmarks post (cmd/bench-ingest, cmd/bench-collector):
// traces of GenAI and A2A spans from six agents, a coordinator at the root
// fanning out to reviewers, their spans interleaved over export requests as
// a batching exporter of several concurrent agent sessions sends them.
package tracegen

import (
	"encoding/binary"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Shape is what a generated payload holds.
type Shape struct {
	Requests        int // export requests
	SpansPerRequest int
	SpansPerTrace   int
	// OpenTraces is how many traces are under way at once: their spans
	// are interleaved, as a batching exporter of that many concurrent
	// agent sessions sends them, so a trace's spans arrive over several
	// requests.
	OpenTraces int
}

// Spans is the number of spans of the payload.
func (s Shape) Spans() int { return s.Requests * s.SpansPerRequest }

// Traces is the number of traces the spans fall into (see TraceOf).
func (s Shape) Traces() int {
	block := s.OpenTraces * s.SpansPerTrace
	full, rest := s.Spans()/block, s.Spans()%block
	return full*s.OpenTraces + min(rest, s.OpenTraces)
}

// TraceOf places global span g: spans go out in blocks of OpenTraces
// traces, round-robin over the traces of the block.
func (s Shape) TraceOf(g int) (trace, index int) {
	block := s.OpenTraces * s.SpansPerTrace
	b, k := g/block, g%block
	return b*s.OpenTraces + k%s.OpenTraces, k / s.OpenTraces
}

// ServiceNames are the agents of the generated traces, one resource each:
// a coordinator that fans out to reviewers over A2A, as the coordination
// scenario's topologies do.
var ServiceNames = []string{"coordinator", "reviewer-1", "reviewer-2", "reviewer-3", "author", "editor"}

// baseTime is the fixed start of every generated trace: the payload is
// the same bytes on every run.
var baseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Request builds export request r (0 <= r < shape.Requests) of shape,
// deterministically, with pdata (the Collector's own types): one
// ResourceSpans per agent.
func Request(shape Shape, r int) ptrace.Traces {
	td := ptrace.NewTraces()
	scopes := make([]ptrace.SpanSlice, len(ServiceNames))
	for i, name := range ServiceNames {
		rs := td.ResourceSpans().AppendEmpty()
		a := rs.Resource().Attributes()
		a.PutStr("service.name", name)
		a.PutStr("service.version", "1.4.2")
		a.PutStr("service.instance.id", fmt.Sprintf("%s-%08x", name, 0x5eed0000+i))
		a.PutStr("telemetry.sdk.language", "python")
		a.PutStr("telemetry.sdk.name", "opentelemetry")
		a.PutStr("telemetry.sdk.version", "1.39.0")
		a.PutStr("host.name", "agents-"+name)
		a.PutInt("process.pid", int64(4000+i))
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("opentelemetry.instrumentation.a2a")
		ss.Scope().SetVersion("0.3.1")
		scopes[i] = ss.Spans()
	}
	for g := r * shape.SpansPerRequest; g < (r+1)*shape.SpansPerRequest; g++ {
		trace, index := shape.TraceOf(g)
		service := 0
		if index > 0 {
			service = (trace + index) % len(ServiceNames)
		}
		fillSpan(scopes[service].AppendEmpty(), trace, index)
	}
	return td
}

// TraceID is the id of generated trace number trace.
func TraceID(trace int) pcommon.TraceID {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], 0xc0019b3e7c4a5d21)
	binary.BigEndian.PutUint64(id[8:], uint64(trace)+1)
	return id
}

func spanID(trace, index int) pcommon.SpanID {
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], uint64(trace+1)<<24|uint64(index+1))
	return id
}

// fillSpan makes span index of trace: the root is the coordinator's
// invoke_agent; below it, a tree (four children per span) of GenAI chat
// and tool calls and A2A client and server spans, each with the
// attributes the OpenTelemetry GenAI and A2A conventions give it.
func fillSpan(s ptrace.Span, trace, index int) {
	s.SetTraceID(TraceID(trace))
	s.SetSpanID(spanID(trace, index))
	start := baseTime.Add(time.Duration(trace)*time.Second + time.Duration(index)*3*time.Millisecond)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(20+index%37) * time.Millisecond)))
	a := s.Attributes()
	conversation := fmt.Sprintf("conv-%06d", trace)
	if index == 0 {
		s.SetName("invoke_agent coordinator")
		s.SetKind(ptrace.SpanKindServer)
		a.PutStr("gen_ai.operation.name", "invoke_agent")
		a.PutStr("gen_ai.agent.name", "coordinator")
		a.PutStr("gen_ai.conversation.id", conversation)
		a.PutStr("a2a.method.name", "SendMessage")
		a.PutStr("a2a.protocol.version", "1.0")
		return
	}
	s.SetParentSpanID(spanID(trace, (index-1)/4))
	switch index % 5 {
	case 0, 1:
		s.SetName("chat gpt-4o-mini")
		s.SetKind(ptrace.SpanKindClient)
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.provider.name", "openai")
		a.PutStr("gen_ai.request.model", "gpt-4o-mini")
		a.PutStr("gen_ai.response.model", "gpt-4o-mini-2024-07-18")
		a.PutStr("gen_ai.conversation.id", conversation)
		a.PutInt("gen_ai.usage.input_tokens", int64(800+index*7%900))
		a.PutInt("gen_ai.usage.output_tokens", int64(60+index*13%400))
		a.PutStr("server.address", "api.openai.com")
		a.PutInt("server.port", 443)
	case 2:
		s.SetName("execute_tool search_papers")
		s.SetKind(ptrace.SpanKindInternal)
		a.PutStr("gen_ai.operation.name", "execute_tool")
		a.PutStr("gen_ai.tool.name", "search_papers")
		a.PutStr("gen_ai.tool.call.arguments", fmt.Sprintf(`{"query":"coordination in multi-agent review","page":%d}`, index%9))
	case 3:
		s.SetName("a2a SendMessage")
		s.SetKind(ptrace.SpanKindClient)
		a.PutStr("a2a.method.name", "SendMessage")
		a.PutStr("a2a.message.id", fmt.Sprintf("msg-%06d-%04d", trace, index))
		a.PutStr("a2a.protocol.version", "1.0")
		a.PutStr("server.address", "127.0.0.1")
		a.PutInt("server.port", int64(9018+index%4))
	case 4:
		s.SetName("invoke_agent reviewer")
		s.SetKind(ptrace.SpanKindServer)
		a.PutStr("gen_ai.operation.name", "invoke_agent")
		a.PutStr("gen_ai.agent.name", "reviewer")
		a.PutStr("a2a.method.name", "SendMessage")
		a.PutStr("a2a.task.id", fmt.Sprintf("task-%06d-%04d", trace, index))
		a.PutStr("a2a.task.state", "completed")
	}
	if index%50 == 7 {
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage("upstream timeout")
		a.PutStr("error.type", "timeout")
	}
}
