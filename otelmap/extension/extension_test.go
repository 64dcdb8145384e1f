package extension

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/tracedata"
)

func extAttr(t *testing.T, sp *otelmap.Span, key attribute.Key) attribute.Value {
	t.Helper()
	v, ok := sp.Attr(key)
	if !ok {
		t.Errorf("span %q has no %s", sp.Name, key)
	}
	return v
}

func extNoAttr(t *testing.T, sp *otelmap.Span, key attribute.Key) {
	t.Helper()
	if v, ok := sp.Attr(key); ok {
		t.Errorf("span %q has %s = %v", sp.Name, key, v.String())
	}
}

// The Python sample's answer becomes spans of the caller's trace shaped as
// a participant would have recorded them: the responder's handling (SERVER),
// its call to another agent (CLIENT), that agent's tool and LLM calls
// (INTERNAL, on that agent's resource).
func TestExtensionSpansFromPythonSample(t *testing.T) {
	rt := otlptest.ResponseTraceFixture(t, "python_sample.json")
	caller := otlptest.CallerSpan(t, "Host Agent")
	parent := otlptest.RemoteParent(caller)
	spans, err := SpansFromResponseTrace(rt, parent, "Host Agent")
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != len(rt.Steps) {
		t.Fatalf("%d spans from %d steps", len(spans), len(rt.Steps))
	}
	by := otlptest.SpansByName(t, spans)
	root := by["invoke_agent Host Agent"]
	call := by["invoke_agent Weather Agent"]
	weather, llm, failed, summary := by["get_weather"], by["gemini-2.0-flash"], by["lookup_airport"], by["send_summary"]
	for name, sp := range map[string]*otelmap.Span{"root": root, "call": call, "weather": weather, "llm": llm, "failed": failed, "summary": summary} {
		if sp == nil {
			t.Fatalf("no %s span among %v", name, spanNames(spans))
		}
	}

	ids := map[string]trace.SpanID{}
	for i, s := range rt.Steps {
		// Python's "step-<uuid>" ids are not span ids: they are derived.
		ids[s.StepID] = DeriveSpanID(caller.TraceID, s.StepID, 0)
		sp := &spans[i]
		if sp.SpanID != ids[s.StepID] {
			t.Errorf("step %s: span id %s, want the derived %s", s.StepID, sp.SpanID, ids[s.StepID])
		}
		if sp.TraceID != caller.TraceID {
			t.Errorf("span %q in trace %s, want the caller's %s", sp.Name, sp.TraceID, caller.TraceID)
		}
		if sp.Source != otelmap.SourceExtension {
			t.Errorf("span %q source %q", sp.Name, sp.Source)
		}
		if got := extAttr(t, sp, otelmap.AttrSource).AsString(); got != otelmap.SourceExtension {
			t.Errorf("span %q coordbench.source = %q", sp.Name, got)
		}
		if got := extAttr(t, sp, otelmap.AttrCallType).AsString(); got != string(s.CallType) {
			t.Errorf("span %q call type %q, want %q", sp.Name, got, s.CallType)
		}
		if got := extAttr(t, sp, AttrOriginalTraceID).AsString(); got != rt.TraceID {
			t.Errorf("span %q original trace id %q", sp.Name, got)
		}
	}

	type want struct {
		sp      *otelmap.Span
		kind    trace.SpanKind
		parent  trace.SpanID
		service string
		op      string
	}
	for name, w := range map[string]want{
		"root":    {root, trace.SpanKindServer, caller.SpanID, "Host Agent", otelmap.OpInvokeAgent},
		"call":    {call, trace.SpanKindClient, ids["step-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"], "Host Agent", otelmap.OpInvokeAgent},
		"weather": {weather, trace.SpanKindInternal, ids["step-8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"], "Weather Agent", otelmap.OpExecuteTool},
		"llm":     {llm, trace.SpanKindInternal, ids["step-8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"], "Weather Agent", otelmap.OpChat},
		"failed":  {failed, trace.SpanKindInternal, ids["step-8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"], "Weather Agent", otelmap.OpExecuteTool},
		"summary": {summary, trace.SpanKindInternal, ids["step-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"], "Host Agent", otelmap.OpExecuteTool},
	} {
		if w.sp.Kind != w.kind {
			t.Errorf("%s: kind %v, want %v", name, w.sp.Kind, w.kind)
		}
		if w.sp.ParentSpanID != w.parent {
			t.Errorf("%s: parent %s, want %s", name, w.sp.ParentSpanID, w.parent)
		}
		if w.sp.Resource.ServiceName != w.service {
			t.Errorf("%s: service %q, want %q", name, w.sp.Resource.ServiceName, w.service)
		}
		if got := extAttr(t, w.sp, otelmap.AttrGenAIOperationName).AsString(); got != w.op {
			t.Errorf("%s: operation %q, want %q", name, got, w.op)
		}
	}
	// One resource per executing agent, shared by its spans.
	if root.Resource != call.Resource || weather.Resource != llm.Resource || root.Resource == weather.Resource {
		t.Error("resources are not one per agent")
	}
	if got := root.Resource.Attrs; len(got) != 1 || got[0] != otelmap.AttrServiceName.String("Host Agent") {
		t.Errorf("resource attributes %v", got)
	}

	if got := extAttr(t, root, otelmap.AttrGenAIAgentName).AsString(); got != "Host Agent" {
		t.Errorf("root agent %q", got)
	}
	if got := extAttr(t, call, otelmap.AttrGenAIAgentName).AsString(); got != "Weather Agent" {
		t.Errorf("callee %q", got)
	}
	if got := extAttr(t, call, otelmap.AttrRequestsPrefix+"message").AsString(); !strings.Contains(got, "Paris") {
		t.Errorf("requests.message %q", got)
	}
	if got := extAttr(t, call, otelmap.AttrExtraPrefix+"agent_url").AsString(); got != "http://localhost:10001/" {
		t.Errorf("attr.agent_url %q", got)
	}
	extNoAttr(t, call, otelmap.AttrCaller) // the Python sample names no caller

	if got := extAttr(t, weather, otelmap.AttrGenAIToolName).AsString(); got != "get_weather" {
		t.Errorf("tool name %q", got)
	}
	if got := extAttr(t, weather, otelmap.AttrParametersPrefix+"city").AsString(); got != "Paris" {
		t.Errorf("parameters.city %q", got)
	}
	if v := extAttr(t, weather, otelmap.AttrParametersPrefix+"days"); v.Type() != attribute.INT64 || v.AsInt64() != 3 {
		t.Errorf("parameters.days %s %v", v.Type(), v.String())
	}
	if got := extAttr(t, weather, otelmap.AttrStepType).AsString(); got != "tool_call" {
		t.Errorf("step type %q", got)
	}
	if !weather.Start.Equal(rt.Steps[0].StartTime) || !weather.End.Equal(rt.Steps[0].EndTime) {
		t.Errorf("weather times %v..%v", weather.Start, weather.End)
	}
	extNoAttr(t, weather, otelmap.AttrCost)
	extNoAttr(t, weather, otelmap.AttrTotalTokens)

	if got := extAttr(t, llm, otelmap.AttrCost).AsFloat64(); got != 0.00042 {
		t.Errorf("cost %v", got)
	}
	if got := extAttr(t, llm, otelmap.AttrTotalTokens).AsInt64(); got != 1536 {
		t.Errorf("tokens %v", got)
	}
	if v := extAttr(t, llm, otelmap.AttrExtraPrefix+"cached"); v.Type() != attribute.BOOL || v.AsBool() {
		t.Errorf("attr.cached %s %v", v.Type(), v.String())
	}
	if v := extAttr(t, llm, otelmap.AttrParametersPrefix+"temperature"); v.Type() != attribute.FLOAT64 || v.AsFloat64() != 0.2 {
		t.Errorf("parameters.temperature %s %v", v.Type(), v.String())
	}
	extNoAttr(t, llm, otelmap.AttrGenAIToolName)

	if !failed.StatusError || !strings.Contains(failed.StatusMessage, "KeyError") {
		t.Errorf("failed step status %v %q", failed.StatusError, failed.StatusMessage)
	}
	if root.StatusError || weather.StatusError {
		t.Error("a step without error has status error")
	}
	// Still running when the trace was taken: no end, no latency.
	if !summary.End.Equal(summary.Start) || summary.Start.IsZero() {
		t.Errorf("summary times %v..%v", summary.Start, summary.End)
	}
}

func spanNames(spans []otelmap.Span) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return names
}

func extStep(id, parent string, ct tracedata.CallType, agent string) tracedata.Step {
	return tracedata.Step{StepID: id, ParentStepID: parent, CallType: ct, Agent: agent}
}

// coordbench's own steps, which name agents, callers, models and content.
func TestExtensionSpanShapes(t *testing.T) {
	caller := otlptest.CallerSpan(t, "purple")
	parent := otlptest.RemoteParent(caller)
	long := strings.Repeat("é", otelmap.MaxContentChars)
	steps := []tracedata.Step{
		extStep("root", "", tracedata.CallAgent, ""),
		extStep("again", "root", tracedata.CallAgent, "purple"),
		{StepID: "llm", ParentStepID: "root", CallType: tracedata.CallTool, Model: "gpt-4o-mini", Input: "Say <hi> & \"bye\"", Output: long},
		{StepID: "call", ParentStepID: "root", CallType: tracedata.CallAgent, Agent: "booking", Caller: "purple", Error: "deadline exceeded"},
		extStep("served", "call", tracedata.CallAgent, "booking"),
		{StepID: "search", ParentStepID: "served", CallType: tracedata.CallTool, Name: "execute_tool search", StepType: "tool"},
		{StepID: "direct", ParentStepID: "call", CallType: tracedata.CallTool, AdditionalAttributes: map[string]any{"tool_name": "lookup"}},
		{StepID: "host", ParentStepID: "root", CallType: tracedata.CallHost, Name: "coordbench.evaluate latency"},
		{StepID: "byname", ParentStepID: "again", CallType: tracedata.CallAgent, Name: "invoke_agent weather"},
		{StepID: "byurl", ParentStepID: "again", CallType: tracedata.CallAgent, AdditionalAttributes: map[string]any{"agent_url": "http://w:1/"}},
		{StepID: "chatless", ParentStepID: "again", CallType: tracedata.CallTool, StepType: "LLM_call"},
		{StepID: "orphan", ParentStepID: "not-in-the-set", CallType: tracedata.CallAgent, Agent: "stray"},
	}
	rt := &tracedata.ResponseTrace{TraceID: caller.TraceID.String(), Steps: steps}
	spans, err := SpansFromResponseTrace(rt, parent, "purple")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*otelmap.Span{}
	for i, s := range steps {
		byID[s.StepID] = &spans[i]
		extNoAttr(t, &spans[i], AttrOriginalTraceID) // same trace
	}
	id := func(step string) trace.SpanID { return byID[step].SpanID }
	for _, c := range []struct {
		step, name string
		kind       trace.SpanKind
		parent     trace.SpanID
		service    string
		agent      string // gen_ai.agent.name, "" for none
	}{
		{"root", "invoke_agent purple", trace.SpanKindServer, caller.SpanID, "purple", "purple"},
		{"again", "invoke_agent purple", trace.SpanKindServer, id("root"), "purple", "purple"},
		{"llm", "chat gpt-4o-mini", trace.SpanKindInternal, id("root"), "purple", ""},
		{"call", "invoke_agent booking", trace.SpanKindClient, id("root"), "purple", "booking"},
		{"served", "invoke_agent booking", trace.SpanKindServer, id("call"), "booking", "booking"},
		{"search", "execute_tool search", trace.SpanKindInternal, id("served"), "booking", ""},
		{"direct", "execute_tool lookup", trace.SpanKindInternal, id("call"), "booking", ""},
		{"host", "coordbench.evaluate latency", trace.SpanKindInternal, id("root"), "purple", ""},
		{"byname", "invoke_agent weather", trace.SpanKindClient, id("again"), "purple", "weather"},
		{"byurl", "invoke_agent http://w:1/", trace.SpanKindClient, id("again"), "purple", "http://w:1/"},
		{"chatless", "chat", trace.SpanKindInternal, id("again"), "purple", ""},
		{"orphan", "invoke_agent stray", trace.SpanKindServer, caller.SpanID, "stray", "stray"},
	} {
		sp := byID[c.step]
		if sp.Name != c.name || sp.Kind != c.kind || sp.ParentSpanID != c.parent || sp.Resource.ServiceName != c.service {
			t.Errorf("%s: got %q %v parent %s service %q; want %q %v parent %s service %q",
				c.step, sp.Name, sp.Kind, sp.ParentSpanID, sp.Resource.ServiceName, c.name, c.kind, c.parent, c.service)
		}
		if c.agent == "" {
			extNoAttr(t, sp, otelmap.AttrGenAIAgentName)
		} else if got := extAttr(t, sp, otelmap.AttrGenAIAgentName).AsString(); got != c.agent {
			t.Errorf("%s: agent %q, want %q", c.step, got, c.agent)
		}
	}

	if got := extAttr(t, byID["call"], otelmap.AttrCaller).AsString(); got != "purple" {
		t.Errorf("caller %q", got)
	}
	if sp := byID["call"]; !sp.StatusError || sp.StatusMessage != "deadline exceeded" {
		t.Errorf("call status %v %q", sp.StatusError, sp.StatusMessage)
	}
	if got := extAttr(t, byID["search"], otelmap.AttrGenAIToolName).AsString(); got != "search" {
		t.Errorf("search tool %q", got)
	}
	if got := extAttr(t, byID["direct"], otelmap.AttrGenAIToolName).AsString(); got != "lookup" {
		t.Errorf("direct tool %q", got)
	}
	if got := extAttr(t, byID["chatless"], otelmap.AttrGenAIOperationName).AsString(); got != otelmap.OpChat {
		t.Errorf("step_type LLM_call: operation %q", got)
	}
	host := byID["host"]
	extNoAttr(t, host, otelmap.AttrGenAIOperationName)
	if got := extAttr(t, host, otelmap.AttrCallType).AsString(); got != "HOST" {
		t.Errorf("host call type %q", got)
	}

	llm := byID["llm"]
	if got := extAttr(t, llm, otelmap.AttrGenAIRequestModel).AsString(); got != "gpt-4o-mini" {
		t.Errorf("model %q", got)
	}
	in := extAttr(t, llm, otelmap.AttrGenAIInputMessages).AsString()
	if want := `[{"role":"user","parts":[{"type":"text","content":"Say <hi> & \"bye\""}]}]`; in != want {
		t.Errorf("input messages\n got %s\nwant %s", in, want)
	}
	var out []struct {
		Role  string `json:"role"`
		Parts []struct {
			Type, Content string
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(extAttr(t, llm, otelmap.AttrGenAIOutputMessages).AsString()), &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Role != "assistant" || len(out[0].Parts) != 1 || out[0].Parts[0].Type != "text" {
		t.Fatalf("output messages %+v", out)
	}
	if c := out[0].Parts[0].Content; len(c) > otelmap.MaxContentChars || !strings.HasSuffix(c, otelmap.ContentTruncatedMarker) {
		t.Errorf("output content of %d bytes is not truncated", len(c))
	}
}

// Step ids that are span ids are kept, so a round trip and the store's
// dedup work; others are derived from (trace id, step id), the same way
// every time.
func TestExtensionSpanIDs(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	callerID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: callerID})
	steps := []string{
		"b7ad6b7169203331", // kept
		"B7AD6B7169203332", // upper case: not the canonical form, derived
		"0000000000000000", // the invalid span id
		"00f067aa0ba902b7", // the caller's own span id
		"b7ad6b716920333",  // 15 hex digits
		"step-1",
		"42",
	}
	rt := &tracedata.ResponseTrace{}
	for _, s := range steps {
		rt.Steps = append(rt.Steps, tracedata.Step{StepID: s, CallType: tracedata.CallTool})
	}
	spans, err := SpansFromResponseTrace(rt, parent, "p")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[trace.SpanID]bool{callerID: true}
	for i, s := range steps {
		got := spans[i].SpanID
		want := DeriveSpanID(tid, s, 0)
		if i == 0 {
			want, _ = trace.SpanIDFromHex(s)
		}
		if got != want {
			t.Errorf("step %q: span id %s, want %s", s, got, want)
		}
		if !got.IsValid() || seen[got] {
			t.Errorf("step %q: span id %s is invalid or taken", s, got)
		}
		seen[got] = true
	}
	again, _ := SpansFromResponseTrace(rt, parent, "p")
	for i := range spans {
		if again[i].SpanID != spans[i].SpanID {
			t.Errorf("step %q: ids differ between runs", steps[i])
		}
	}
	otherTrace, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4737")
	if DeriveSpanID(otherTrace, "step-1", 0) == DeriveSpanID(tid, "step-1", 0) {
		t.Error("derived id does not depend on the trace")
	}
	if DeriveSpanID(tid, "step-1", 1) == DeriveSpanID(tid, "step-1", 0) {
		t.Error("salt does not change the derived id")
	}

	// A derived id that collides with a kept one is derived again.
	clash := DeriveSpanID(tid, "step-x", 0).String()
	rt = &tracedata.ResponseTrace{Steps: []tracedata.Step{
		{StepID: "step-x", CallType: tracedata.CallTool},
		{StepID: clash, CallType: tracedata.CallTool},
	}}
	spans, err = SpansFromResponseTrace(rt, parent, "p")
	if err != nil {
		t.Fatal(err)
	}
	if spans[1].SpanID.String() != clash || spans[0].SpanID != DeriveSpanID(tid, "step-x", 1) {
		t.Errorf("collision: %s %s", spans[0].SpanID, spans[1].SpanID)
	}
}
