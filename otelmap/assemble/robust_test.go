package assemble_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
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

// brokenSpans is input no producer should send: attributes of the wrong
// type, no resource, no attributes, reversed and zero times, a parent
// cycle, a self-parent, duplicate ids with different content, a span of
// another trace, an invalid id, non-finite numbers.
func brokenSpans(id trace.TraceID) []otelmap.Span {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sid := func(b byte) trace.SpanID { return trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, b} }
	noName := &otelmap.Resource{}
	svc := &otelmap.Resource{ServiceName: "svc"}
	return []otelmap.Span{
		{TraceID: id, SpanID: sid(1), Name: "invoke_agent 7", Kind: trace.SpanKindInternal, Start: t0, End: t0.Add(time.Second),
			Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.Int(7)}, Resource: noName},
		{TraceID: id, SpanID: sid(2), ParentSpanID: sid(1), Name: "bare", Resource: nil},
		{TraceID: id, SpanID: sid(3), ParentSpanID: sid(1), Name: "chat backwards", Kind: trace.SpanKindClient,
			Start: t0.Add(3 * time.Second), End: t0.Add(2 * time.Second),
			Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrCost.Float64(math.NaN()),
				otelmap.AttrTotalTokens.String("many"), attribute.Float64(otelmap.AttrParametersPrefix+"x", math.Inf(1)),
				attribute.Float64Slice(otelmap.AttrExtraPrefix+"v", []float64{1, math.NaN()}), otelmap.AttrCallType.String("BOGUS")}},
		// A cycle of two, and a span hanging below it.
		{TraceID: id, SpanID: sid(4), ParentSpanID: sid(5), Name: "invoke_agent a", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: invokeAttrs("a"), Start: t0, End: t0.Add(time.Millisecond)},
		{TraceID: id, SpanID: sid(5), ParentSpanID: sid(4), Name: "invoke_agent b", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: invokeAttrs("b"), Start: t0, End: t0.Add(time.Millisecond)},
		{TraceID: id, SpanID: sid(6), ParentSpanID: sid(5), Name: "execute_tool t", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool)}},
		// Its own parent, and a server.
		{TraceID: id, SpanID: sid(7), ParentSpanID: sid(7), Name: "loop", Kind: trace.SpanKindServer, Resource: svc},
		// Duplicates with different content.
		{TraceID: id, SpanID: sid(8), Name: "dup one", Kind: trace.SpanKindServer, Resource: svc, Start: t0, End: t0.Add(time.Second)},
		{TraceID: id, SpanID: sid(8), Name: "dup two", Kind: trace.SpanKindServer, Resource: svc, Start: t0, End: t0.Add(time.Second)},
		{TraceID: id, SpanID: sid(8), Name: "dup ext", Kind: trace.SpanKindServer, Resource: svc, Source: otelmap.SourceExtension},
		{TraceID: id, SpanID: sid(9), ParentSpanID: sid(8), Name: "invoke_agent x", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.Int(3), otelmap.AttrCallType.String("agent"), otelmap.AttrGenAIAgentID.Bool(true),
				otelmap.AttrGenAIInputMessages.String(`[{"role":"user","parts":[{"type":"text"`), otelmap.AttrGenAIOutputMessages.Int(1)}},
		// Not of this trace; no id; far-future end.
		{TraceID: trace.TraceID{9}, SpanID: sid(10), Name: "stranger"},
		{TraceID: id, Name: "no id"},
		{TraceID: id, SpanID: sid(11), Name: "far", Start: t0, End: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
}

// TestAssembleBrokenInput: broken spans give a result, no panic, warnings
// that say what was wrong, and still no dependence on input order.
func TestAssembleBrokenInput(t *testing.T) {
	id := trace.TraceID{0xb0, 1}
	spans := brokenSpans(id)
	td := assemble.Trace(id, spans)
	js := assertPermutationStable(t, id, spans, 20)
	if !json.Valid([]byte(js)) {
		t.Fatal("invalid JSON")
	}
	for _, w := range []string{
		"attribute gen_ai.agent.name on span b000000000000001 is INT64, want string",
		"attribute gen_ai.operation.name on span b000000000000009 is INT64, want string",
		"attribute coordbench.call_type on span b000000000000003 has value \"BOGUS\", want AGENT, TOOL or HOST",
		"attribute coordbench.cost on span b000000000000003 is FLOAT64 NaN, want a finite number",
		"attribute coordbench.total_tokens on span b000000000000003 is STRING many, want an integer",
		"1 spans have end before start",
		"1 spans belong to another trace and were left out",
		"1 spans have an invalid span id and were left out",
		"2 spans repeat a span id already in the trace",
		"parent links form a cycle; cut above span b000000000000004",
		"parent links form a cycle; cut above span b000000000000007",
		"are attributed to \"unknown\"",
		"spans have no start or end time",
	} {
		if !hasWarning(td, w) {
			t.Errorf("no warning %q in %q", w, td.Coverage.Warnings)
		}
	}
	if !slices.IsSorted(td.Coverage.Warnings) {
		t.Errorf("warnings not sorted: %q", td.Coverage.Warnings)
	}
	if td.Coverage.Spans != 10 {
		t.Errorf("spans = %d, want 10 after dropping duplicates, stranger and no-id", td.Coverage.Spans)
	}
	// The agent named by an integer is not named by it: an invoke_agent span
	// that names no agent is no agent and no step, said in a warning, and
	// the work under it belongs to "unknown" (no service.name).
	for _, s := range td.Steps {
		if s.StepID == "b000000000000001" {
			t.Errorf("agent span naming no agent is a step: %+v", s)
		}
	}
	if !hasWarning(td, `1 spans look like an agent's work but name no agent any rule reads (the first: span b000000000000001 "invoke_agent 7")`) ||
		td.Coverage.UnreadAgentSpans != 1 {
		t.Errorf("no warning for the agent span naming no agent: %q", td.Coverage.Warnings)
	}
	if s := findStep(t, td, trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, 3}); s.Agent != tracedata.UnknownAgent {
		t.Errorf("step under the agent span naming no agent = %+v", s)
	}
	back := findStep(t, td, trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, 3})
	if back.Latency != 0 || back.LatencyMS != 0 || back.Cost != 0 || back.Parameters["x"] != "+Inf" {
		t.Errorf("backwards step = %+v", back)
	}
	// The cycle is cut above the smaller id: a is a root, and calls b.
	if got := edges(td); !slices.Equal(got, []string{"a->b", "unknown->svc", "user->svc"}) {
		t.Errorf("interactions = %v", got)
	}
	// The duplicate kept is the real one that sorts first.
	if !strings.Contains(js, `"name":"invoke_agent x"`) {
		t.Errorf("step under the duplicate missing")
	}
	if x := findStep(t, td, trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, 9}); x.CallType != tracedata.CallAgent || x.Agent != "svc" ||
		x.Input != `[{"role":"user","parts":[{"type":"text"` || x.Output != "1" {
		t.Errorf("step with wrong types = %+v", x)
	}
	for _, s := range td.Steps {
		if s.Name == "far" || s.Name == "bare" {
			t.Errorf("a span with no step attributes became a step: %+v", s)
		}
	}
	if td.End.Year() > 3000 {
		t.Errorf("trace end %v includes an impossible time", td.End)
	}

	// Nothing at all, and spans with nothing in them.
	// An empty graph is no evidence, not complete.
	empty := assemble.Trace(id, nil)
	if empty.Coverage.Complete != 0 || !empty.Coverage.NoEvidence || len(empty.Steps) != 0 || empty.Steps == nil {
		t.Errorf("empty trace = %+v", empty)
	}
	mustJSON(t, empty)
	mustJSON(t, assemble.Trace(trace.TraceID{}, []otelmap.Span{{}, {SpanID: trace.SpanID{1}}}))
}

// TestAssembleRandomGraphs throws random span forests with random kinds,
// parents (missing, cyclic, cross-process) and attributes at assemble.Trace: no
// panic, valid JSON, the same JSON in any order, and every interaction's
// counts adding up.
func TestAssembleRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	id := trace.TraceID{0xaa}
	ress := []*otelmap.Resource{nil, {ServiceName: "p"}, {ServiceName: "q"}, {ServiceName: "q"}, {}}
	names := []string{"a", "b", "c", ""}
	for round := range 200 {
		n := 1 + rng.IntN(40)
		spans := make([]otelmap.Span, n)
		for i := range spans {
			sp := &spans[i]
			sp.TraceID = id
			sp.SpanID = trace.SpanID{0, 0, 0, 0, 0, 0, byte(round), byte(1 + rng.IntN(n+3))}
			if rng.IntN(5) > 0 {
				sp.ParentSpanID = trace.SpanID{0, 0, 0, 0, 0, 0, byte(round), byte(rng.IntN(n + 3))}
			}
			sp.Kind = trace.SpanKind(rng.IntN(6))
			sp.Resource = ress[rng.IntN(len(ress))]
			if rng.IntN(4) == 0 {
				sp.Source = otelmap.SourceExtension
			}
			s := time.Unix(1700000000, 0).Add(time.Duration(rng.IntN(100)) * time.Millisecond)
			sp.Start, sp.End = s, s.Add(time.Duration(rng.IntN(50)-10)*time.Millisecond)
			if rng.IntN(3) == 0 {
				sp.Attrs = append(sp.Attrs, otelmap.AttrGenAIOperationName.String([]string{otelmap.OpInvokeAgent, otelmap.OpChat, otelmap.OpExecuteTool}[rng.IntN(3)]))
			}
			if nm := names[rng.IntN(len(names))]; nm != "" {
				sp.Attrs = append(sp.Attrs, otelmap.AttrGenAIAgentName.String(nm))
			}
			if rng.IntN(4) == 0 {
				sp.Attrs = append(sp.Attrs, otelmap.AttrCallType.String([]string{"AGENT", "TOOL", "HOST", "x"}[rng.IntN(4)]))
			}
			if rng.IntN(4) == 0 {
				sp.Attrs = append(sp.Attrs, otelmap.AttrA2AMethodName.String("SendMessage"))
			}
			if rng.IntN(5) == 0 {
				sp.Attrs = append(sp.Attrs, otelmap.AttrServerAddress.String("h"), otelmap.AttrServerPort.Int(1))
			}
			sp.StatusError = rng.IntN(6) == 0
		}
		td := assemble.Trace(id, spans)
		assertPermutationStable(t, id, spans, 3)
		total := 0
		for _, in := range td.Interactions {
			if in.From == in.To {
				t.Fatalf("round %d: self-call %s kept", round, in.From)
			}
			if in.BothSides+in.ClientOnly+in.ServerOnly+in.InProcess+in.ExtensionOnly != in.Count || len(in.LatenciesMS) != in.Count {
				t.Fatalf("round %d: counts of %+v do not add up", round, in)
			}
			total += in.Count
			if td.Agent(in.From) == nil || td.Agent(in.To) == nil {
				t.Fatalf("round %d: edge %s->%s to a missing node", round, in.From, in.To)
			}
		}
		if total != td.Coverage.Interactions {
			t.Fatalf("round %d: coverage counts %d calls, interactions %d", round, td.Coverage.Interactions, total)
		}
		steps := 0
		for _, a := range td.Agents {
			steps += a.Steps
		}
		if steps != len(td.Steps) {
			t.Fatalf("round %d: agents hold %d steps of %d", round, steps, len(td.Steps))
		}
	}
}
