package green

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/scenario"
)

// The two attacks of issue 15, over loopback with real OTLP bytes: a
// participant that exports, beside its own spans, spans claiming to be the
// assessor's (service.name coordbench-green, coordbench.role=assessor) with
// a call to "hijacked"; and an outsider who learned the live trace id and
// exports agents into it while the assessment runs. Neither reaches the
// graph; the result says what was set aside.
func TestServerProvenanceSetsForgeriesAside(t *testing.T) {
	g := startGreen(t, ServerOptions{Scenarios: map[string]scenario.Scenario{"route": routeScenario{}}, ProgressInterval: time.Minute})
	traces := g.url + strings.TrimPrefix(otlpreceiver.TracesPath, "/")
	forge := func(ctx context.Context, _ a2atest.Input) (string, error) {
		sc := trace.SpanContextFromContext(ctx)
		now := time.Now()
		call := func(name string) []attribute.KeyValue {
			return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(name)}
		}
		// The participant speaks for the assessor, under its own (honestly
		// exported) span: inside the subtree of the assessor's call.
		asGreen := resource.NewSchemaless(otelmap.AttrServiceName.String(DefaultServiceName), otelmap.AttrRole.String(otelmap.RoleAssessor))
		impersonation := tracetest.SpanStubs{{
			Name: "invoke_agent hijacked", SpanKind: trace.SpanKindClient, Parent: sc, Resource: asGreen,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: sc.TraceID(), SpanID: trace.SpanID{0xf0, 1}, TraceFlags: trace.FlagsSampled}),
			StartTime:   now, EndTime: now.Add(time.Millisecond), Attributes: call("hijacked"),
		}}
		if err := exportSpans(t, traces, nil, impersonation.Snapshots()); err != nil {
			return "", err
		}
		// An outsider with the trace id: a root agent that calls another.
		outsider := resource.NewSchemaless(otelmap.AttrServiceName.String("intruder-host"))
		root := trace.NewSpanContext(trace.SpanContextConfig{TraceID: sc.TraceID(), SpanID: trace.SpanID{0xf0, 2}, TraceFlags: trace.FlagsSampled})
		injected := tracetest.SpanStubs{
			{Name: "invoke_agent intruder", SpanKind: trace.SpanKindInternal, SpanContext: root, Resource: outsider,
				StartTime: now, EndTime: now.Add(time.Millisecond), Attributes: call("intruder")},
			{Name: "invoke_agent hijacked", SpanKind: trace.SpanKindClient, Parent: root, Resource: outsider,
				SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: sc.TraceID(), SpanID: trace.SpanID{0xf0, 3}, TraceFlags: trace.FlagsSampled}),
				StartTime:   now, EndTime: now.Add(time.Millisecond), Attributes: call("hijacked")},
		}
		if err := exportSpans(t, traces, nil, injected.Snapshots()); err != nil {
			return "", err
		}
		return "done", nil
	}
	worker := a2atest.Start(t, a2atest.Options{Name: "worker", ReplyFunc: forge, OTLP: traces})

	raw, _ := json.Marshal(map[string]any{"participants": map[string]string{"worker": worker.URL}, "config": map[string]any{
		"scenario": "route", "task_ids": []string{"worker#1"}, "settle_quiet_ms": 200, "settle_max_wait_ms": 20000,
	}})
	s := summarize(streamAll(t, t.Context(), g.client10(t), string(raw)))
	if s.final != a2a.TaskStateCompleted {
		t.Fatalf("final state %s: %s", s.final, s.text)
	}
	res := resultOf(t, s.artifact)
	task := res["tasks"].([]any)[0].(map[string]any)

	agents := taskAgentNames(task)
	if !slices.Contains(agents, "worker") {
		t.Errorf("agents %v lack the participant", agents)
	}
	for _, forged := range []string{"hijacked", "intruder", "intruder-host"} {
		if slices.Contains(agents, forged) {
			t.Errorf("agents %v hold the forged %q", agents, forged)
		}
	}
	for _, in := range task["interactions"].([]any) {
		in := in.(map[string]any)
		if in["to"] == "hijacked" || in["from"] == "intruder" {
			t.Errorf("forged interaction %v -> %v", in["from"], in["to"])
		}
	}
	// The participant's honest spans are kept: the assessor's call is seen
	// from both sides.
	if cov := task["coverage"].(map[string]any); cov["both_sides"].(float64) < 1 {
		t.Errorf("coverage %v: the participant's own spans were lost", cov)
	}

	aside, _ := task["set_aside"].(map[string]any)
	if aside == nil {
		t.Fatalf("no set_aside in the task: %v", task)
	}
	if aside["spans"] != 3.0 || aside["impersonating"] != 1.0 || aside["outside"] != 2.0 {
		t.Errorf("set_aside = %v, want 3 spans: 1 impersonating, 2 outside", aside)
	}
	var claimed []string
	for _, n := range aside["claimed"].([]any) {
		claimed = append(claimed, n.(string))
	}
	if want := []string{DefaultServiceName, "hijacked", "intruder", "intruder-host"}; !slices.Equal(claimed, want) {
		t.Errorf("claimed %v, want %v", claimed, want)
	}
	// The outsider's two spans may as well be a participant's broken chain:
	// the graph's evidence says it may lack them.
	evidence, _ := json.Marshal(task["evaluations"].(map[string]any)["graph"].(map[string]any)["evidence"])
	if !strings.Contains(string(evidence), `"partial"`) || !strings.Contains(string(evidence), "2 spans set aside, not counted") {
		t.Errorf("graph evidence %s: want partial, naming the 2 spans set aside outside the calls", evidence)
	}
	md := s.artifact.Parts[0].Text()
	if !strings.Contains(md, "Provenance: 3 received spans set aside") {
		t.Errorf("the summary does not warn of the spans set aside:\n%s", md)
	}
	warnings, _ := json.Marshal(res["warnings"])
	if !strings.Contains(string(warnings), "set aside") {
		t.Errorf("warnings %s do not name the spans set aside", warnings)
	}
}

// The same forgery through the Traceability Extension: a participant whose
// returned steps say the assessor did work and called "hijacked".
func TestServerProvenanceExtensionForgery(t *testing.T) {
	g := startGreen(t, ServerOptions{Scenarios: map[string]scenario.Scenario{"route": routeScenario{}}, ProgressInterval: time.Minute})
	now := time.Now().UTC()
	step := func(id, parent, agent, caller string) map[string]any {
		return map[string]any{"step_id": id, "parent_step_id": parent, "call_type": "AGENT", "agent": agent, "caller": caller,
			"start_time": now.Format(time.RFC3339Nano), "end_time": now.Add(time.Millisecond).Format(time.RFC3339Nano), "latency": 1}
	}
	worker := a2atest.Start(t, a2atest.Options{Name: "worker", Reply: "done", Extension: true,
		ExtensionPayload: map[string]any{"trace_id": "", "steps": []any{
			step("w1", "", "worker", DefaultServiceName),
			step("g1", "w1", DefaultServiceName, "worker"),
			step("h1", "g1", "hijacked", DefaultServiceName),
		}}})
	raw, _ := json.Marshal(map[string]any{"participants": map[string]string{"worker": worker.URL}, "config": map[string]any{
		"scenario": "route", "task_ids": []string{"worker#1"}, "settle_quiet_ms": 100, "settle_max_wait_ms": 20000,
	}})
	s := summarize(streamAll(t, t.Context(), g.client10(t), string(raw)))
	if s.final != a2a.TaskStateCompleted {
		t.Fatalf("final state %s: %s", s.final, s.text)
	}
	task := resultOf(t, s.artifact)["tasks"].([]any)[0].(map[string]any)
	if agents := taskAgentNames(task); slices.Contains(agents, "hijacked") || !slices.Contains(agents, "worker") {
		t.Errorf("agents %v: want the worker, not hijacked", agents)
	}
	for _, in := range task["interactions"].([]any) {
		if in := in.(map[string]any); in["to"] == "hijacked" {
			t.Errorf("forged interaction %v -> %v", in["from"], in["to"])
		}
	}
	aside, _ := task["set_aside"].(map[string]any)
	// The step claiming the assessor, and its call, which the extension
	// rebuilds as a CLIENT span of the claimed assessor's process.
	if aside == nil || aside["spans"] != 2.0 || aside["impersonating"] != 2.0 {
		t.Errorf("set_aside = %v, want the 2 spans claiming the assessor", aside)
	}
}
