package tracestore

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

func spanIDs(spans []otelmap.Span) []byte {
	out := make([]byte, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.SpanID[0])
	}
	return out
}

func TestVouchKeepsTheSubtreesOfTheAssessorsCalls(t *testing.T) {
	linked := settleSpan(12, 0, trace.SpanKindConsumer, settleCoordRes, otelmap.SourceExtension)
	linked.Detail = &otelmap.SpanDetail{Links: []otelmap.Link{{TraceID: linked.TraceID, SpanID: trace.SpanID{10}}}}
	spans := append(assessorCall(), coordinatorSide()...)
	spans = append(spans, reviewerSide()...)
	spans = append(spans,
		linked, // a root linked to the coordinator's work: causal
		settleSpan(13, 12, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP),
	)
	kept, aside := Vouch(spans, trace.SpanID{1})
	if got, want := spanIDs(kept), []byte{1, 2, 3, 4, 10, 11, 20, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if aside.Spans != 0 || len(aside.Claimed) != 0 {
		t.Errorf("set aside %+v, want nothing", aside)
	}
}

func TestVouchSetsAsideImpersonationAndStrangers(t *testing.T) {
	forgedRes := &otelmap.Resource{ServiceName: "green"}
	outsider := &otelmap.Resource{ServiceName: "outsider"}
	spans := append(assessorCall(), coordinatorSide()...)
	spans = append(spans,
		// The coordinator claims to be the assessor, under its own server
		// span, calling "hijacked".
		settleSpan(30, 10, trace.SpanKindClient, forgedRes, otelmap.SourceOTLP,
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("hijacked")),
		// ...and in its own resource, naming itself the assessor's agent.
		settleSpan(31, 10, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP,
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("green")),
		// An extension step with the assessor's resource attribute.
		settleSpan(32, 2, trace.SpanKindServer, &otelmap.Resource{ServiceName: "x", Attrs: []attribute.KeyValue{otelmap.AttrRole.String(otelmap.RoleAssessor)}}, otelmap.SourceExtension),
		// An outsider who knew the trace id: a root, and a child of the
		// task span (whose id never left the assessor).
		settleSpan(40, 0, trace.SpanKindServer, outsider, otelmap.SourceOTLP, otelmap.AttrGenAIAgentName.String("intruder")),
		settleSpan(41, 40, trace.SpanKindClient, outsider, otelmap.SourceOTLP),
		settleSpan(42, 1, trace.SpanKindInternal, outsider, otelmap.SourceOTLP),
		// A span hanging under the impersonation is not vouched for either.
		settleSpan(43, 30, trace.SpanKindServer, &otelmap.Resource{ServiceName: "hijacked"}, otelmap.SourceOTLP),
		// A span named as the assessor's agent run (smolagents' shape).
		settleSpan(45, 10, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP, attribute.String("smolagents.max_steps", "3")),
		// A participant's span whose parent its process never exported.
		settleSpan(44, 99, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP),
	)
	spans[len(spans)-2].Name = "green.run"
	kept, aside := Vouch(spans, trace.SpanID{1})
	if got, want := spanIDs(kept), []byte{1, 2, 3, 4, 10, 11}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	want := tracedata.SetAside{Spans: 9, Impersonating: 4, Outside: 5, ParentMissing: 1,
		Claimed: []string{"coordinator", "green", "hijacked", "intruder", "outsider", "x"}}
	if aside.Spans != want.Spans || aside.Impersonating != want.Impersonating || aside.Outside != want.Outside || aside.ParentMissing != want.ParentMissing ||
		!slices.Equal(aside.Claimed, want.Claimed) || aside.ClaimedMore != 0 {
		t.Errorf("set aside %+v, want %+v", aside, want)
	}
}

func TestVouchClipsTheNames(t *testing.T) {
	spans := assessorCall()
	for i := range 30 {
		name := string(rune('A'+i)) + strings.Repeat("é", 60)
		spans = append(spans, settleSpan(byte(50+i), 0, trace.SpanKindServer, &otelmap.Resource{ServiceName: name}, otelmap.SourceOTLP))
	}
	_, aside := Vouch(spans, trace.SpanID{1})
	if aside.Outside != 30 || len(aside.Claimed) != MaxSetAsideNames || aside.ClaimedMore != 30-MaxSetAsideNames {
		t.Fatalf("set aside %d, names %d (+%d)", aside.Outside, len(aside.Claimed), aside.ClaimedMore)
	}
	for _, n := range aside.Claimed {
		if len(n) > maxClaimedChars+len("…") {
			t.Errorf("name of %d bytes not clipped", len(n))
		}
	}
}

// The assessor's spans that come back through a collector after their trace
// was assessed are neither late nor stored; a participant's are late.
func TestAssessorResourceAfterAssessmentIsDropped(t *testing.T) {
	st := NewStore(Limits{})
	st.Add(assessorCall())
	id := trace.TraceID{settleTrace}
	st.MarkAssessed(id)
	back := settleSpan(60, 1, trace.SpanKindInternal, settleAssessorRes, otelmap.SourceOTLP)
	res := st.Add([]otelmap.Span{back, settleSpan(61, 4, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP)})
	if res.Late != 1 || res.Accepted != 0 || st.LateSpans(id) != 1 || len(st.Spans(id)) != 0 {
		t.Fatalf("add %+v, late %d, held %d; want 1 late (the coordinator's), nothing held", res, st.LateSpans(id), len(st.Spans(id)))
	}
}

// A chain of another road with the assessor's resource is not the
// assessor's call: the settle wait does not await an answer to it.
func TestSettleAwaitsOnlyTheAssessorsOwnCalls(t *testing.T) {
	st := NewStore(Limits{})
	forged := settleSpan(30, 10, trace.SpanKindClient, settleAssessorRes, otelmap.SourceOTLP,
		otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("hijacked"))
	st.Add(append(append(assessorCall(), coordinatorSide()...), forged))
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace}, SettleOptions{
		Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: 30 * time.Second, Await: &Await{Calls: assemble.CallRule(nil), Assessor: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Awaited != 1 {
		t.Errorf("settled %v with %d awaited calls (unanswered %v), want complete with 1: the assessor's own", res.Complete, res.Awaited, res.Unanswered)
	}
}

// BenchmarkVouch: one task's trace of 100k received spans under the
// assessor's call, a tenth of them outside it.
func BenchmarkVouch(b *testing.B) {
	const n = 100_000
	spans := assessorCall()
	res := []*otelmap.Resource{{ServiceName: "coordinator"}, {ServiceName: "reviewer"}, {ServiceName: "outsider"}}
	for i := range n {
		sp := otelmap.Span{TraceID: trace.TraceID{settleTrace}, Source: otelmap.SourceOTLP, Kind: trace.SpanKindInternal,
			Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrGenAIAgentName.String("coordinator")}}
		sp.SpanID = trace.SpanID{0xa0, byte(i >> 16), byte(i >> 8), byte(i)}
		switch {
		case i == 0:
			sp.ParentSpanID = trace.SpanID{4}
		case i%10 == 9:
			sp.ParentSpanID = trace.SpanID{0xb0, byte(i >> 16), byte(i >> 8), byte(i)} // not in the trace
		default:
			p := i / 2
			sp.ParentSpanID = trace.SpanID{0xa0, byte(p >> 16), byte(p >> 8), byte(p)}
		}
		sp.Resource = res[i%len(res)]
		spans = append(spans, sp)
	}
	b.ReportAllocs()
	for b.Loop() {
		kept, aside := Vouch(spans, trace.SpanID{1})
		if aside.Spans == 0 || len(kept) == len(spans) {
			b.Fatal("nothing set aside")
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

func TestNameMentions(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"coordbench-green", true}, {"coordbench-green.run", true}, {"invoke_agent coordbench-green", true},
		{"coordbench-green.agent", true}, {"POST /coordbench-green", true},
		{"coordbench-greenhouse", false}, {"my-coordbench-green", false}, {"invoke_agent reviewer", false},
		{"coordbench-greencoordbench-green", false}, {"x coordbench-greencoordbench-green coordbench-green", true},
	} {
		if got := nameMentions(c.name, "coordbench-green"); got != c.want {
			t.Errorf("nameMentions(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestVouchReadsEveryAgentNameKey: a received span under the assessor's
// call that names the assessor in any attribute trace assembly reads an
// agent's name from (otelmap.NamesAgent, the recognizers' own keys) speaks
// for it and is set aside; the same value in another attribute is not a
// claim.
func TestVouchReadsEveryAgentNameKey(t *testing.T) {
	keys := []attribute.Key{
		otelmap.AttrGenAIAgentName, otelmap.AttrGenAIAgentID, otelmap.AttrOIAgentName, otelmap.AttrOIGraphNodeID,
		otelmap.AttrOIGraphNodeParentID, otelmap.AttrTraceloopEntityName, otelmap.AttrGenAIHandoffFromAgent,
		otelmap.AttrGenAIHandoffToAgent, otelmap.AttrAIFunctionID, otelmap.AttrPydanticAgentName, otelmap.AttrGenkitName,
	}
	for _, k := range keys {
		if !otelmap.NamesAgent(k) {
			t.Errorf("otelmap.NamesAgent(%s) is false", k)
		}
		spans := append(assessorCall(), settleSpan(10, 4, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP, k.String("green")))
		if _, aside := Vouch(spans, trace.SpanID{1}); aside.Impersonating != 1 {
			t.Errorf("%s=green: set aside %+v, want the span impersonating", k, aside)
		}
	}
	spans := append(assessorCall(), settleSpan(10, 4, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP, attribute.String("user.note", "green")))
	if kept, aside := Vouch(spans, trace.SpanID{1}); aside.Spans != 0 || len(kept) != len(spans) {
		t.Errorf("user.note=green: set aside %+v, want nothing", aside)
	}
}
