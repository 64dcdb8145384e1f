package assemble_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/extension"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// extensionSpans builds the spans a responder's Traceability Extension
// steps become: its root step as a SERVER invoke_agent span under the
// caller's client span, its own calls as CLIENT invoke_agent spans, its LLM
// calls as INTERNAL chat spans.
func extensionSpans(id trace.TraceID, parent trace.SpanID, res *otelmap.Resource, t0 time.Time) []otelmap.Span {
	sid := func(b byte) trace.SpanID { return trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, b} }
	mk := func(b, pb byte, name string, kind trace.SpanKind, from, to int, attrs ...attribute.KeyValue) otelmap.Span {
		p := sid(pb)
		if pb == 0 {
			p = parent
		}
		return otelmap.Span{TraceID: id, SpanID: sid(b), ParentSpanID: p, Name: name, Kind: kind,
			Start: t0.Add(time.Duration(from) * time.Millisecond), End: t0.Add(time.Duration(to) * time.Millisecond),
			Attrs: append(attrs, otelmap.AttrSource.String(otelmap.SourceExtension)), Resource: res, Source: otelmap.SourceExtension}
	}
	return []otelmap.Span{
		mk(1, 0, "invoke_agent responder", trace.SpanKindServer, 1, 20, invokeAttrs("responder")...),
		mk(2, 1, "chat gpt-4o", trace.SpanKindInternal, 2, 4, otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrCallType.String("TOOL"),
			otelmap.AttrGenAIRequestModel.String("gpt-4o"), otelmap.AttrTotalTokens.Int(42), otelmap.AttrCost.Float64(0.25)),
		mk(3, 1, "invoke_agent helper", trace.SpanKindClient, 5, 9, append(invokeAttrs("helper"), otelmap.AttrCaller.String("responder"))...),
		mk(4, 1, "invoke_agent helper", trace.SpanKindClient, 10, 12, append(invokeAttrs("helper"), otelmap.AttrCaller.String("responder"),
			attribute.String(otelmap.AttrRequestsPrefix+"text", "again"), attribute.String(otelmap.AttrExtraPrefix+"retry", "yes"))...),
		mk(5, 1, "execute_tool search", trace.SpanKindInternal, 13, 14, otelmap.AttrCallType.String("TOOL"), otelmap.AttrStepType.String("search")),
	}
}

// TestAssembleExtensionSteps: the call into an agent that reported its
// steps through the extension is seen from both sides; the calls it made,
// known only from its own report, are extension-only.
func TestAssembleExtensionSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *otelmap.Resource
	}{
		{"no resource", nil},
		{"own resource", &otelmap.Resource{ServiceName: "responder"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tracestore.NewStore(tracestore.Limits{})
			green := newSimProc(t, store, "green", otelmap.AttrRole.String(otelmap.RoleAssessor))
			c := newClock()
			ctx, task := green.start(context.Background(), c, "coordbench.task", trace.SpanKindInternal, otelmap.AttrCallType.String("HOST"))
			callSC := remoteCall(ctx, c, green, nil, "responder", nil)
			end(c, task)
			id := task.SpanContext().TraceID()
			store.Add(extensionSpans(id, callSC.SpanID(), tc.res, c.tick()))

			td := assemble.Trace(id, store.Spans(id))
			want := []string{"green->responder", "responder->helper"}
			if got := edges(td); !slices.Equal(got, want) {
				t.Fatalf("interactions = %v, want %v", got, want)
			}
			if in := findInteraction(td, "green", "responder"); in.BothSides != 1 || in.Count != 1 {
				t.Errorf("call into responder = %+v", in)
			}
			if in := findInteraction(td, "responder", "helper"); in.ExtensionOnly != 2 || in.Count != 2 || !slices.Equal(in.LatenciesMS, []float64{4, 2}) {
				t.Errorf("responder's calls = %+v", in)
			}
			cov := td.Coverage
			if cov.BothSides != 1 || cov.ExtensionOnly != 2 || math.Abs(cov.Complete-1.0/3) > 1e-9 || cov.SpansBySource[otelmap.SourceExtension] != 5 {
				t.Errorf("coverage = %+v", cov)
			}
			chatStep := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 2})
			rootStep := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 1})
			if chatStep.Agent != "responder" || chatStep.TotalTokens != 42 || chatStep.Cost != 0.25 || chatStep.ParentStepID != rootStep.StepID {
				t.Errorf("chat step = %+v", chatStep)
			}
			if rootStep.Caller != "green" || rootStep.ParentStepID != callSC.SpanID().String() {
				t.Errorf("responder root step = %+v", rootStep)
			}
			retry := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 4})
			if retry.Caller != "responder" || retry.Agent != "helper" || retry.Requests["text"] != "again" || retry.AdditionalAttributes["retry"] != "yes" {
				t.Errorf("helper call step = %+v", retry)
			}
			if s := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 5}); s.StepType != "search" || s.Agent != "responder" {
				t.Errorf("tool step = %+v", s)
			}
			// The assessor's client span named the responder; the helper is
			// known only from the responder's report.
			if a := td.Agent("responder"); a.IdentifiedBy != tracedata.IdentityAgentName || a.Role != "" {
				t.Errorf("responder = %+v", a)
			}
			if a := td.Agent("helper"); a.IdentifiedBy != tracedata.IdentityExtension || a.Virtual {
				t.Errorf("helper = %+v", a)
			}
			if a := td.Agent("green"); a.Role != tracedata.RoleAssessor {
				t.Errorf("green = %+v", a)
			}
			// The real span replaces the extension's version of itself.
			assertPermutationStable(t, id, store.Spans(id), 6)
		})
	}
}

// TestAssembleExtensionPythonSample: the spans the Python sample's
// extension answer becomes are read as the calls they stand for.
func TestAssembleExtensionPythonSample(t *testing.T) {
	rt := otlptest.ResponseTraceFixture(t, "python_sample.json")
	caller := otlptest.CallerSpan(t, "Host Agent")
	spans, err := extension.SpansFromResponseTrace(rt, otlptest.RemoteParent(caller), "Host Agent")
	if err != nil {
		t.Fatal(err)
	}
	td := assemble.Trace(caller.TraceID, append([]otelmap.Span{caller}, spans...))
	edges := map[string]int{}
	for _, in := range td.Interactions {
		edges[in.From+"->"+in.To] = in.Count
	}
	if len(edges) != 2 || edges["green->Host Agent"] != 1 || edges["Host Agent->Weather Agent"] != 1 {
		t.Errorf("interactions %+v", td.Interactions)
	}
	if len(td.Steps) != len(spans)+1 {
		t.Errorf("%d steps assembled from %d spans", len(td.Steps), len(spans)+1)
	}
}

func stepIDs(steps []tracedata.Step) []string {
	var ids []string
	for _, s := range steps {
		ids = append(ids, s.StepID+"<-"+s.ParentStepID)
	}
	return ids
}

// steps -> spans -> assemble.Trace -> steps keeps what the steps said.
func TestExtensionRoundTripThroughAssembly(t *testing.T) {
	caller := otlptest.CallerSpan(t, "purple")
	parent := otlptest.RemoteParent(caller)
	t0 := caller.Start.Add(10 * time.Millisecond)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	steps := []tracedata.Step{
		{StepID: "1000000000000001", CallType: tracedata.CallAgent, Agent: "purple", StartTime: at(0), EndTime: at(1000), LatencyMS: 1000, Latency: 1000},
		{StepID: "1000000000000002", ParentStepID: "1000000000000001", CallType: tracedata.CallTool, Agent: "purple", Model: "gpt-4o-mini",
			StartTime: at(10), EndTime: at(310), LatencyMS: 300, Latency: 300},
		{StepID: "1000000000000003", ParentStepID: "1000000000000001", CallType: tracedata.CallAgent, Agent: "booking", Caller: "purple",
			StartTime: at(320), EndTime: at(920.5), LatencyMS: 600.5, Latency: 601},
		{StepID: "1000000000000004", ParentStepID: "1000000000000003", CallType: tracedata.CallAgent, Agent: "booking",
			StartTime: at(330), EndTime: at(900), LatencyMS: 570, Latency: 570},
		{StepID: "1000000000000005", ParentStepID: "1000000000000004", CallType: tracedata.CallTool, Agent: "booking", Name: "execute_tool search",
			StartTime: at(340), EndTime: at(400), LatencyMS: 60, Latency: 60},
	}
	spans, err := extension.SpansFromResponseTrace(&tracedata.ResponseTrace{TraceID: caller.TraceID.String(), Steps: steps}, parent, "purple")
	if err != nil {
		t.Fatal(err)
	}
	td := assemble.Trace(caller.TraceID, append([]otelmap.Span{caller}, spans...))
	got := map[string]tracedata.Step{}
	for _, s := range td.Steps {
		got[s.StepID] = s
	}
	for _, w := range steps {
		g, ok := got[w.StepID]
		if !ok {
			t.Errorf("step %s lost; assembled %v", w.StepID, stepIDs(td.Steps))
			continue
		}
		wantParent := w.ParentStepID
		if wantParent == "" {
			wantParent = caller.SpanID.String()
		}
		if g.ParentStepID != wantParent || g.CallType != w.CallType || g.Agent != w.Agent || g.LatencyMS != w.LatencyMS {
			t.Errorf("step %s:\n got parent %s type %s agent %q latency %v\nwant parent %s type %s agent %q latency %v",
				w.StepID, g.ParentStepID, g.CallType, g.Agent, g.LatencyMS, wantParent, w.CallType, w.Agent, w.LatencyMS)
		}
	}
	// The graph reads the calls the shapes stand for: green's call to
	// purple (its CLIENT span paired with the SERVER step) and purple's to
	// booking, the latter known only through the extension.
	edges := map[string]tracedata.Interaction{}
	for _, in := range td.Interactions {
		edges[in.From+"->"+in.To] = in
	}
	if len(edges) != 2 || edges["green->purple"].Count != 1 || edges["purple->booking"].Count != 1 ||
		edges["purple->booking"].ExtensionOnly != 1 {
		t.Errorf("interactions %+v", td.Interactions)
	}
	// And back out as the extension's payload.
	rt := extension.ResponseTraceFromSteps(caller.TraceID.String(), td.Steps)
	if len(rt.Steps) != len(td.Steps) {
		t.Errorf("%d steps from %d", len(rt.Steps), len(td.Steps))
	}
}
