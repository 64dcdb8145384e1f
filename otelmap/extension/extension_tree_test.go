package extension

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// Extension steps as a tree: cycles, missing times, errors and limits, store dedup, the reverse conversion, fuzzing.

// Parent links that loop are cut, and the cut step hangs under the
// caller's span; no walk up the result loops.
func TestExtensionCycles(t *testing.T) {
	caller := otlptest.CallerSpan(t, "p")
	parent := otlptest.RemoteParent(caller)
	rt := &tracedata.ResponseTrace{Steps: []tracedata.Step{
		extStep("a", "c", tracedata.CallAgent, "x"),
		extStep("b", "a", tracedata.CallTool, ""),
		extStep("c", "b", tracedata.CallAgent, "y"),
		extStep("d", "d", tracedata.CallTool, ""),
		extStep("e", "c", tracedata.CallTool, ""),
	}}
	spans, err := SpansFromResponseTrace(rt, parent, "p")
	if err != nil {
		t.Fatal(err)
	}
	extCheckTree(t, spans, caller.SpanID)
	roots := 0
	cut := spans[0].SpanID
	for _, i := range []int{0, 1, 2} {
		if spans[i].ParentSpanID == caller.SpanID {
			roots++
		}
		if string(spans[i].SpanID[:]) < string(cut[:]) {
			cut = spans[i].SpanID
		}
	}
	if roots != 1 {
		t.Errorf("%d steps of the a-b-c cycle hang under the caller, want 1", roots)
	}
	for _, sp := range spans[:3] {
		if sp.SpanID == cut && sp.ParentSpanID != caller.SpanID {
			t.Errorf("cycle not cut at its smallest span id %s", cut)
		}
	}
	if spans[3].ParentSpanID != caller.SpanID {
		t.Errorf("self-parented step: parent %s", spans[3].ParentSpanID)
	}

	// One cycle through every step of a full trace ends, and quickly.
	n := tracedata.MaxExtensionSteps
	rt = &tracedata.ResponseTrace{Steps: make([]tracedata.Step, n)}
	for i := range n {
		rt.Steps[i] = extStep(fmt.Sprint(i), fmt.Sprint((i+1)%n), tracedata.CallTool, "")
	}
	start := time.Now()
	spans, err = SpansFromResponseTrace(rt, parent, "p")
	if err != nil {
		t.Fatal(err)
	}
	// A walk that followed the cycle would not end at all; a minute is
	// generous for a tenth of a core.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("%d steps took %v", n, d)
	}
	extCheckTree(t, spans, caller.SpanID)
}

// extCheckTree checks that every span reaches root by its parent links. A
// span once seen to reach it is remembered, so a long chain costs O(n).
func extCheckTree(t *testing.T, spans []otelmap.Span, root trace.SpanID) {
	t.Helper()
	parentOf := map[trace.SpanID]trace.SpanID{}
	for _, sp := range spans {
		if sp.ParentSpanID == sp.SpanID {
			t.Fatalf("span %s is its own parent", sp.SpanID)
		}
		parentOf[sp.SpanID] = sp.ParentSpanID
	}
	reaches := map[trace.SpanID]bool{root: true}
	for _, sp := range spans {
		var path []trace.SpanID
		x := sp.SpanID
		for !reaches[x] {
			if len(path) > len(spans) {
				t.Fatalf("span %s: walk up loops", sp.SpanID)
			}
			p, ok := parentOf[x]
			if !ok {
				t.Fatalf("span %s: walk up ends at %s, not the caller", sp.SpanID, x)
			}
			path = append(path, x)
			x = p
		}
		for _, y := range path {
			reaches[y] = true
		}
	}
}

func TestExtensionMissingTimes(t *testing.T) {
	caller := otlptest.CallerSpan(t, "p")
	parent := otlptest.RemoteParent(caller)
	t0 := time.Date(2025, 6, 3, 9, 0, 0, 0, time.UTC)
	rt := &tracedata.ResponseTrace{Steps: []tracedata.Step{
		{StepID: "start-only", CallType: tracedata.CallAgent, StartTime: t0, Latency: 900},
		{StepID: "untimed", ParentStepID: "start-only", CallType: tracedata.CallTool, LatencyMS: 12.5},
		{StepID: "untimed-child", ParentStepID: "untimed", CallType: tracedata.CallTool},
		{StepID: "end-only", ParentStepID: "start-only", CallType: tracedata.CallTool, EndTime: t0.Add(time.Second), Latency: 100},
		{StepID: "backwards", ParentStepID: "start-only", CallType: tracedata.CallTool, StartTime: t0.Add(time.Second), EndTime: t0},
		{StepID: "negative", ParentStepID: "start-only", CallType: tracedata.CallTool, Latency: -5},
		{StepID: "forever", ParentStepID: "start-only", CallType: tracedata.CallTool, LatencyMS: 1e300},
		{StepID: "untimed-root", CallType: tracedata.CallTool, Latency: 3},
	}}
	spans, err := SpansFromResponseTrace(rt, parent, "p")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ start, end time.Time }{
		{t0, t0.Add(900 * time.Millisecond)},
		{t0, t0.Add(12500 * time.Microsecond)},
		{t0, t0},
		{t0.Add(900 * time.Millisecond), t0.Add(time.Second)},
		{t0.Add(time.Second), t0.Add(time.Second)},
		{t0, t0},
		{t0, t0.Add(maxStepDuration)},
		// A root with no time of its own starts where the earliest step does.
		{t0, t0.Add(3 * time.Millisecond)},
	} {
		sp := spans[i]
		if !sp.Start.Equal(c.start) || !sp.End.Equal(c.end) {
			t.Errorf("%s: %v..%v, want %v..%v", rt.Steps[i].StepID, sp.Start, sp.End, c.start, c.end)
		}
	}

	// No time anywhere: now.
	before := time.Now()
	spans, err = SpansFromResponseTrace(&tracedata.ResponseTrace{Steps: []tracedata.Step{
		{StepID: "a", CallType: tracedata.CallAgent, Latency: 5},
	}}, parent, "p")
	if err != nil {
		t.Fatal(err)
	}
	if s := spans[0]; s.Start.Before(before.Add(-time.Second)) || s.End.Sub(s.Start) != 5*time.Millisecond {
		t.Errorf("untimed trace: %v..%v", s.Start, s.End)
	}
}

func TestExtensionSpansErrorsAndLimits(t *testing.T) {
	caller := otlptest.CallerSpan(t, "p")
	parent := otlptest.RemoteParent(caller)

	if spans, err := SpansFromResponseTrace(nil, parent, "p"); spans != nil || err != nil {
		t.Errorf("nil trace: %v, %v", spans, err)
	}
	if spans, err := SpansFromResponseTrace(&tracedata.ResponseTrace{}, parent, "p"); spans != nil || err != nil {
		t.Errorf("empty trace: %v, %v", spans, err)
	}
	for name, rt := range map[string]*tracedata.ResponseTrace{
		"no step id":        {Steps: []tracedata.Step{{CallType: tracedata.CallTool}}},
		"unknown call type": {Steps: []tracedata.Step{{StepID: "a", CallType: "LLM"}}},
		"too many steps":    {Steps: make([]tracedata.Step, tracedata.MaxExtensionSteps+1)},
	} {
		if spans, err := SpansFromResponseTrace(rt, parent, "p"); err == nil || spans != nil {
			t.Errorf("%s: %d spans, err %v", name, len(spans), err)
		} else if !strings.HasPrefix(err.Error(), "spans from response trace") {
			t.Errorf("%s: error %q", name, err)
		}
	}

	// Without a caller span the steps' own trace id is used, if it is one.
	rt := &tracedata.ResponseTrace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Steps: []tracedata.Step{{StepID: "a", CallType: tracedata.CallAgent}}}
	spans, err := SpansFromResponseTrace(rt, trace.SpanContext{}, "p")
	if err != nil {
		t.Fatal(err)
	}
	if spans[0].TraceID.String() != rt.TraceID || spans[0].ParentSpanID.IsValid() {
		t.Errorf("no caller: trace %s parent %s", spans[0].TraceID, spans[0].ParentSpanID)
	}
	extNoAttr(t, &spans[0], AttrOriginalTraceID)
	rt.TraceID = "trace-1"
	if _, err := SpansFromResponseTrace(rt, trace.SpanContext{}, "p"); err == nil {
		t.Error("no caller and no usable trace id: no error")
	}

	// Duplicate step ids: the first is kept.
	rt = &tracedata.ResponseTrace{Steps: []tracedata.Step{
		{StepID: "a", CallType: tracedata.CallTool, Name: "first"},
		{StepID: "a", CallType: tracedata.CallTool, Name: "second"},
	}}
	spans, err = SpansFromResponseTrace(rt, parent, "p")
	if err != nil || len(spans) != 1 || spans[0].Name != "first" {
		t.Errorf("duplicates: %v %v", spanNames(spans), err)
	}

	// A participant's own original_trace_id attribute does not hide ours.
	rt = &tracedata.ResponseTrace{TraceID: "theirs", Steps: []tracedata.Step{{
		StepID: "a", CallType: tracedata.CallTool,
		AdditionalAttributes: map[string]any{"original_trace_id": "forged", "nested": map[string]any{"k": []any{1.0, "x"}}, "none": nil},
	}}}
	spans, err = SpansFromResponseTrace(rt, parent, "p")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range spans[0].Attrs {
		if kv.Key == AttrOriginalTraceID {
			n++
			if kv.Value.AsString() != "theirs" {
				t.Errorf("original trace id %q", kv.Value.AsString())
			}
		}
	}
	if n != 1 {
		t.Errorf("%d original_trace_id attributes", n)
	}
	if got := extAttr(t, &spans[0], otelmap.AttrExtraPrefix+"nested").AsString(); got != `{"k":[1,"x"]}` {
		t.Errorf("nested value %q", got)
	}
	extNoAttr(t, &spans[0], otelmap.AttrExtraPrefix+"none")
}

// The store holds the span a participant recorded itself over the copy
// rebuilt from its extension answer, whichever arrives first.
func TestExtensionStoreDedup(t *testing.T) {
	caller := otlptest.CallerSpan(t, "purple")
	parent := otlptest.RemoteParent(caller)

	// The purple's real span of the call, as OTLP would bring it.
	tr, rec := otlptest.RecordingTracer(t, "purple")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	_, span := tr.Start(ctx, "invoke_agent purple", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("purple")))
	span.End()
	real := otlptest.SpansFromSDK(rec.Ended(), otelmap.SourceOTLP)[0]

	// The same step in the purple's extension answer.
	rt := &tracedata.ResponseTrace{TraceID: real.TraceID.String(), Steps: []tracedata.Step{{
		StepID: real.SpanID.String(), CallType: tracedata.CallAgent, Agent: "purple",
		StartTime: real.Start, EndTime: real.End,
	}}}
	ext, err := SpansFromResponseTrace(rt, parent, "purple")
	if err != nil {
		t.Fatal(err)
	}
	if ext[0].SpanID != real.SpanID || ext[0].ParentSpanID != real.ParentSpanID {
		t.Fatalf("extension span %s (parent %s), real %s (parent %s)", ext[0].SpanID, ext[0].ParentSpanID, real.SpanID, real.ParentSpanID)
	}

	for _, order := range []string{"extension first", "real first"} {
		t.Run(order, func(t *testing.T) {
			st := tracestore.NewStore(tracestore.Limits{})
			first, second := ext, []otelmap.Span{real}
			if order == "real first" {
				first, second = second, first
			}
			if res := st.Add(first); res.Accepted != 1 {
				t.Fatalf("first add: %+v", res)
			}
			if res := st.Add(second); res.Duplicates != 1 || res.Accepted != 0 {
				t.Fatalf("second add: %+v", res)
			}
			held := st.Spans(real.TraceID)
			// The store keeps its own copy of the resource: equal, not the same.
			if len(held) != 1 || held[0].Source != otelmap.SourceOTLP || held[0].Resource.ServiceName != real.Resource.ServiceName ||
				!slices.Equal(held[0].Resource.Attrs, real.Resource.Attrs) {
				t.Errorf("held %+v", held)
			}
		})
	}
}

func TestExtensionResponseTraceFromSteps(t *testing.T) {
	steps := []tracedata.Step{{StepID: "a", TraceID: "mine"}, {StepID: "b", ParentStepID: "a"}}
	rt := ResponseTraceFromSteps("t", steps)
	if rt.TraceID != "t" || rt.Steps[0].TraceID != "mine" || rt.Steps[1].TraceID != "t" || rt.Steps[1].ParentStepID != "a" {
		t.Errorf("%+v", rt)
	}
	if steps[1].TraceID != "" {
		t.Error("ResponseTraceFromSteps changed its argument")
	}
	if empty := ResponseTraceFromSteps("t", nil); empty.Steps == nil {
		t.Error("no steps encode as null, want []")
	}

	// Over the limit: the first steps are kept, links to dropped ones cut.
	n := tracedata.MaxExtensionSteps + 2
	many := make([]tracedata.Step, n)
	for i := range many {
		many[i] = tracedata.Step{StepID: fmt.Sprint(i), CallType: tracedata.CallTool}
	}
	many[1].ParentStepID = fmt.Sprint(n - 1)
	many[2].ParentStepID = "0"
	rt = ResponseTraceFromSteps("t", many)
	if len(rt.Steps) != tracedata.MaxExtensionSteps || rt.Steps[1].ParentStepID != "" || rt.Steps[2].ParentStepID != "0" {
		t.Errorf("%d steps, parents %q %q", len(rt.Steps), rt.Steps[1].ParentStepID, rt.Steps[2].ParentStepID)
	}
	b, err := tracedata.EncodeResponseTrace(rt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tracedata.DecodeResponseTrace(b); err != nil {
		t.Errorf("the caller cannot read it: %v", err)
	}
}

// FuzzExtensionSpans feeds whatever the decoder accepts to the conversion:
// it never panics, and the spans always form a tree under the caller's span
// with unique, valid ids.
func FuzzExtensionSpans(f *testing.F) {
	for _, name := range []string{"python_sample.json", "proto_json.json", "coordbench.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "tracedata", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"steps":[{"step_id":"a","parent_step_id":"b","call_type":"AGENT"},{"step_id":"b","parent_step_id":"a","call_type":"TOOL"}]}`))
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	callerID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: callerID})
	f.Fuzz(func(t *testing.T, data []byte) {
		rt, err := tracedata.DecodeResponseTrace(data)
		if err != nil {
			return
		}
		spans, err := SpansFromResponseTrace(rt, parent, "responder")
		if err != nil {
			t.Fatalf("decoded trace does not convert: %v", err)
		}
		seen := map[trace.SpanID]bool{}
		for _, sp := range spans {
			if !sp.SpanID.IsValid() || seen[sp.SpanID] || sp.SpanID == callerID {
				t.Fatalf("span id %s invalid or reused", sp.SpanID)
			}
			seen[sp.SpanID] = true
			if sp.TraceID != tid || sp.End.Before(sp.Start) || sp.Resource == nil {
				t.Fatalf("span %+v", sp)
			}
		}
		extCheckTree(t, spans, callerID)
	})
}
