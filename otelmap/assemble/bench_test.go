//go:build unix

package assemble_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/internal/cputime"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// synthTrace builds a trace of about n spans shaped like a real assessment: the
// assessor's task span calls an entry agent, and agents in their own processes
// call each other over A2A (the six-span figure of
// docs/design.md#one-call-in-spans), make LLM calls (a chat span with the HTTP
// call to the API below it), run tools, and now and then run a sub-agent
// in-process. The assessor's spans come in-process, the agents' by OTLP; the
// spans are laid out as they would arrive and be decoded: each process exports
// its spans as they end (children before parents) in batches of 512, each batch
// with its own resource, batches from all processes interleaved, and each span's
// attributes allocated in arrival order, as the OTLP decoder does.
func synthTrace(n int, seed uint64) (trace.TraceID, []otelmap.Span) {
	rng := rand.New(rand.NewPCG(seed, seed))
	var id trace.TraceID
	for i := range id {
		id[i] = byte(rng.Uint32())
	}
	const agents, batchSize = 16, 512
	type agentProc struct {
		name string
		res  *otelmap.Resource
	}
	procs := make([]agentProc, agents)
	for a := range procs {
		procs[a].name = fmt.Sprintf("agent-%02d", a)
		procs[a].res = &otelmap.Resource{ServiceName: procs[a].name, Attrs: []attribute.KeyValue{
			attribute.String("service.name", procs[a].name), attribute.String("telemetry.sdk.language", "go"),
			attribute.String("host.name", "node-1"),
		}}
	}
	green := &otelmap.Resource{ServiceName: "green", Attrs: []attribute.KeyValue{
		attribute.String("service.name", "green"), otelmap.AttrRole.String(otelmap.RoleAssessor),
	}}

	spans := make([]otelmap.Span, 0, n+32)
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var clock time.Duration
	arena := make([]attribute.KeyValue, 0, 4096)
	attrs := func(kvs ...attribute.KeyValue) []attribute.KeyValue {
		if cap(arena)-len(arena) < len(kvs) {
			arena = make([]attribute.KeyValue, 0, 4096)
		}
		arena = append(arena, kvs...)
		out := arena[len(arena)-len(kvs):]
		return out[:len(kvs):len(kvs)]
	}
	add := func(parent trace.SpanID, name string, kind trace.SpanKind, res *otelmap.Resource, src string, kv []attribute.KeyValue) trace.SpanID {
		var sid trace.SpanID
		for sid == (trace.SpanID{}) {
			v := rng.Uint64()
			for i := range sid {
				sid[i] = byte(v >> (8 * i))
			}
		}
		clock += time.Duration(50+rng.IntN(200)) * time.Microsecond
		start := t0.Add(clock)
		spans = append(spans, otelmap.Span{
			TraceID: id, SpanID: sid, ParentSpanID: parent, Name: name, Kind: kind,
			Start: start, End: start.Add(time.Duration(1+rng.IntN(900)) * time.Millisecond),
			Attrs: kv, Resource: res, Source: src, StatusError: rng.IntN(200) == 0,
		})
		return sid
	}
	msgs := `[{"role":"user","parts":[{"type":"text","content":"Review the paper and decide."}]}]`
	outs := `[{"role":"assistant","parts":[{"type":"text","content":"accept"}]}]`

	type invocation struct {
		parent trace.SpanID
		caller int // -1: the assessor
		callee int
	}
	task := add(trace.SpanID{}, otelmap.SpanTask, trace.SpanKindInternal, green, otelmap.SourceInProcess, attrs(otelmap.AttrCallType.String("HOST")))
	queue := []invocation{{parent: task, caller: -1, callee: 0}}
	for len(queue) > 0 && len(spans) < n {
		inv := queue[0]
		queue = queue[1:]
		cres, csrc := green, otelmap.SourceInProcess
		if inv.caller >= 0 {
			cres, csrc = procs[inv.caller].res, otelmap.SourceOTLP
		}
		callee := &procs[inv.callee]
		sres := callee.res
		// The caller's side of the call.
		c1 := add(inv.parent, otelmap.SpanInvokeAgentPrefix+callee.name, trace.SpanKindClient, cres, csrc, attrs(
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(callee.name),
			otelmap.AttrGenAIConversationID.String("ctx-1"), otelmap.AttrServerAddress.String("127.0.0.1"), otelmap.AttrServerPort.Int(9000+inv.callee),
			otelmap.AttrCallType.String("AGENT")))
		c2 := add(c1, "SendMessage", trace.SpanKindClient, cres, csrc, attrs(
			otelmap.AttrA2AMethodName.String("SendMessage"), otelmap.AttrA2AMessageID.String("m-1"), otelmap.AttrA2AProtocolVersion.String("0.3")))
		c3 := add(c2, "POST", trace.SpanKindClient, cres, csrc, attrs(
			attribute.String("http.request.method", "POST"), attribute.String("url.full", "http://127.0.0.1:9000/"),
			otelmap.AttrServerAddress.String("127.0.0.1"), attribute.Int("http.response.status_code", 200)))
		// The callee's side.
		s1 := add(c3, "POST", trace.SpanKindServer, sres, otelmap.SourceOTLP, attrs(
			attribute.String("http.request.method", "POST"), attribute.String("url.path", "/"),
			attribute.Int("http.response.status_code", 200)))
		s2 := add(s1, "SendMessage", trace.SpanKindServer, sres, otelmap.SourceOTLP, attrs(
			otelmap.AttrA2AMethodName.String("SendMessage"), otelmap.AttrA2ATaskID.String("t-1"), otelmap.AttrA2ATaskState.String("completed")))
		work := add(s2, otelmap.SpanInvokeAgentPrefix+callee.name, trace.SpanKindInternal, sres, otelmap.SourceOTLP, attrs(
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(callee.name), otelmap.AttrCallType.String("AGENT"),
			otelmap.AttrGenAIInputMessages.String(msgs), otelmap.AttrGenAIOutputMessages.String(outs)))
		for range 2 {
			ch := add(work, otelmap.SpanChatPrefix+"gpt-4o", trace.SpanKindClient, sres, otelmap.SourceOTLP, attrs(
				otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrGenAIProviderName.String("openai"),
				otelmap.AttrGenAIRequestModel.String("gpt-4o"), otelmap.AttrGenAIResponseModel.String("gpt-4o-2024-08-06"),
				otelmap.AttrGenAIInputTokens.Int(100+rng.IntN(1000)), otelmap.AttrGenAIOutputTokens.Int(10+rng.IntN(300)), otelmap.AttrCallType.String("TOOL")))
			add(ch, "POST", trace.SpanKindClient, sres, otelmap.SourceOTLP, attrs(
				attribute.String("http.request.method", "POST"), otelmap.AttrServerAddress.String("api.openai.com"),
				otelmap.AttrServerPort.Int(443), attribute.Int("http.response.status_code", 200)))
		}
		add(work, otelmap.SpanExecuteToolPrefix+"search", trace.SpanKindInternal, sres, otelmap.SourceOTLP, attrs(
			otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool), otelmap.AttrGenAIToolName.String("search")))
		if rng.IntN(4) == 0 {
			sub := fmt.Sprintf("%s-sub", callee.name)
			sw := add(work, otelmap.SpanInvokeAgentPrefix+sub, trace.SpanKindInternal, sres, otelmap.SourceOTLP, attrs(
				otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(sub)))
			add(sw, otelmap.SpanChatPrefix+"gpt-4o-mini", trace.SpanKindClient, sres, otelmap.SourceOTLP, attrs(
				otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrGenAIRequestModel.String("gpt-4o-mini"),
				otelmap.AttrGenAIInputTokens.Int(50), otelmap.AttrGenAIOutputTokens.Int(5)))
		}
		for range rng.IntN(4) {
			next := rng.IntN(agents)
			if next != inv.callee {
				queue = append(queue, invocation{parent: work, caller: inv.callee, callee: next})
			}
		}
		if len(queue) == 0 {
			queue = append(queue, invocation{parent: work, caller: inv.callee, callee: (inv.callee + 1) % agents})
		}
	}
	return id, arrive(spans, batchSize)
}

// arrive lays spans out in arrival order: per process in end order, in
// batches with a resource of their own, batches ordered by their last end;
// attributes are copied into one arena in that order.
func arrive(spans []otelmap.Span, batchSize int) []otelmap.Span {
	byProc := map[*otelmap.Resource][]otelmap.Span{}
	var order []*otelmap.Resource
	for _, sp := range spans {
		if _, ok := byProc[sp.Resource]; !ok {
			order = append(order, sp.Resource)
		}
		byProc[sp.Resource] = append(byProc[sp.Resource], sp)
	}
	var batches [][]otelmap.Span
	for _, res := range order {
		ps := byProc[res]
		slices.SortFunc(ps, func(x, y otelmap.Span) int { return x.End.Compare(y.End) })
		for len(ps) > 0 {
			n := min(batchSize, len(ps))
			batch := ps[:n:n]
			own := &otelmap.Resource{ServiceName: res.ServiceName, Attrs: res.Attrs}
			for i := range batch {
				batch[i].Resource = own
			}
			batches = append(batches, batch)
			ps = ps[n:]
		}
	}
	slices.SortFunc(batches, func(x, y []otelmap.Span) int { return x[len(x)-1].End.Compare(y[len(y)-1].End) })
	total := 0
	for _, b := range batches {
		total += len(b)
		for _, sp := range b {
			total += len(sp.Attrs)
		}
	}
	out := make([]otelmap.Span, 0, len(spans))
	arena := make([]attribute.KeyValue, 0, total)
	for _, b := range batches {
		for _, sp := range b {
			arena = append(arena, sp.Attrs...)
			sp.Attrs = arena[len(arena)-len(sp.Attrs) : len(arena) : len(arena)]
			out = append(out, sp)
		}
	}
	return out
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration { return cputime.Total() }

// BenchmarkAssemble measures assembly alone, for traces of 1k, 100k and 1M
// spans, reporting spans/s and allocations per span.
func BenchmarkAssemble(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("spans=%d", n), func(b *testing.B) {
			id, spans := synthTrace(n, 1)
			b.ReportAllocs()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			start, cpuStart := time.Now(), cpuTime()
			for b.Loop() {
				assemble.Trace(id, spans)
			}
			elapsed, cpu := time.Since(start), cpuTime()-cpuStart
			b.StopTimer()
			runtime.ReadMemStats(&after)
			total := float64(len(spans)) * float64(b.N)
			b.ReportMetric(total/elapsed.Seconds(), "spans/s")
			// On a shared machine wall time says little; CPU time (GC
			// included) says what a core does.
			if cpu > 0 {
				b.ReportMetric(total/cpu.Seconds(), "spans/cpu-s")
			}
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/span")
		})
	}
}

// TestAssembleSynthTrace checks the benchmark's trace is what it claims:
// every call paired, an entry agent called by the assessor, sub-agents in
// process, and the same result in any order.
func TestAssembleSynthTrace(t *testing.T) {
	id, spans := synthTrace(2000, 3)
	td := assemble.Trace(id, spans)
	if td.Coverage.ClientOnly+td.Coverage.ServerOnly+td.Coverage.ExtensionOnly != 0 || td.Coverage.Complete != 1 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
	if in := findInteraction(td, "green", "agent-00"); in == nil || in.Count != 1 {
		t.Errorf("assessor call = %+v", in)
	}
	if a := td.Agent("green"); a == nil || a.Role != otelmap.RoleAssessor {
		t.Errorf("green = %+v", a)
	}
	inProcess := 0
	for _, in := range td.Interactions {
		inProcess += in.InProcess
	}
	if inProcess == 0 || len(td.Coverage.Warnings) != 0 {
		t.Errorf("in-process calls = %d, warnings = %q", inProcess, td.Coverage.Warnings)
	}
	assertPermutationStable(t, id, spans, 3)
}
