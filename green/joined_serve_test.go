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
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/scenario"
)

// TestServerJoinsFragments: green serve reads the traces that continue a
// task's trace with it, as green assess does (docs/trace-assembly.md, "A
// trace that begins with a received call"), over loopback with real OTLP
// bytes. The participant "worker" hands a message to a runtime that starts
// a trace of its own per delivery, linked back to where the message was
// sent (Semantic Kernel's agent runtime does so): its agent "helper" runs
// in that trace. The attacks beside it: a trace linked to a span id the
// task's trace does not hold (forged, or never exported) and a trace
// linked to a span an outsider injected into the task's trace (set aside
// by provenance) bring no agent of theirs into the graph.
func TestServerJoinsFragments(t *testing.T) {
	g := startGreen(t, ServerOptions{Scenarios: map[string]scenario.Scenario{"route": routeScenario{}}, ProgressInterval: time.Minute})
	traces := g.url + strings.TrimPrefix(otlpreceiver.TracesPath, "/")
	fragment, forged, viaOutsider := trace.TraceID{0xf1, 0xa9}, trace.TraceID{0xf2, 0xa9}, trace.TraceID{0xf3, 0xa9}
	worker := a2atest.Start(t, a2atest.Options{Name: "worker", OTLP: traces, ReplyFunc: func(ctx context.Context, _ a2atest.Input) (string, error) {
		sc := trace.SpanContextFromContext(ctx)
		now := time.Now()
		res := resource.NewSchemaless(otelmap.AttrServiceName.String("worker"))
		ctxOf := func(tid trace.TraceID, sid byte) trace.SpanContext {
			return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0x5e, sid}, TraceFlags: trace.FlagsSampled})
		}
		agent := func(name string) []attribute.KeyValue {
			return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(name)}
		}
		send := ctxOf(sc.TraceID(), 1)
		outsider := ctxOf(sc.TraceID(), 2)
		// A delivery trace: a CONSUMER top linked to link, an agent under it.
		delivery := func(tid trace.TraceID, name string, link trace.SpanContext) tracetest.SpanStubs {
			top := ctxOf(tid, 3)
			return tracetest.SpanStubs{
				{Name: "process message", SpanKind: trace.SpanKindConsumer, SpanContext: top, Resource: res,
					StartTime: now.Add(2 * time.Millisecond), EndTime: now.Add(8 * time.Millisecond),
					Links: []sdktrace.Link{{SpanContext: link}}},
				{Name: "invoke_agent " + name, SpanKind: trace.SpanKindInternal, SpanContext: ctxOf(tid, 4), Parent: top, Resource: res,
					StartTime: now.Add(3 * time.Millisecond), EndTime: now.Add(7 * time.Millisecond), Attributes: agent(name)},
			}
		}
		stubs := tracestest(
			// The worker's own run, in the task's trace, and the message
			// it sends to the runtime.
			tracetest.SpanStubs{
				{Name: "invoke_agent worker", SpanKind: trace.SpanKindInternal, SpanContext: ctxOf(sc.TraceID(), 5), Parent: sc, Resource: res,
					StartTime: now, EndTime: now.Add(9 * time.Millisecond), Attributes: agent("worker")},
				{Name: "send message", SpanKind: trace.SpanKindProducer, SpanContext: send, Parent: ctxOf(sc.TraceID(), 5), Resource: res,
					StartTime: now.Add(time.Millisecond), EndTime: now.Add(2 * time.Millisecond)},
				// An outsider's root span in the task's trace: set aside.
				{Name: "send message", SpanKind: trace.SpanKindProducer, SpanContext: outsider, Resource: res,
					StartTime: now.Add(time.Millisecond), EndTime: now.Add(2 * time.Millisecond)},
			},
			delivery(fragment, "helper", send),
			delivery(forged, "forger", ctxOf(sc.TraceID(), 0x77)),
			delivery(viaOutsider, "intruder", outsider),
		)
		if err := exportSpans(t, traces, nil, stubs.Snapshots()); err != nil {
			return "", err
		}
		return "done", nil
	}})

	raw, _ := json.Marshal(map[string]any{"participants": map[string]string{"worker": worker.URL}, "config": map[string]any{
		"scenario": "route", "task_ids": []string{"worker#1"}, "settle_quiet_ms": 300, "settle_max_wait_ms": 20000,
	}})
	s := summarize(streamAll(t, t.Context(), g.client10(t), string(raw)))
	if s.final != a2a.TaskStateCompleted {
		t.Fatalf("final state %s: %s", s.final, s.text)
	}
	task := resultOf(t, s.artifact)["tasks"].([]any)[0].(map[string]any)
	agents := taskAgentNames(task)
	if !slices.Contains(agents, "helper") || !slices.Contains(agents, "worker") {
		t.Errorf("agents %v: the helper run in the linked trace is missing", agents)
	}
	for _, not := range []string{"forger", "intruder"} {
		if slices.Contains(agents, not) {
			t.Errorf("agents %v hold %q, from a trace that does not continue the task's", agents, not)
		}
	}
	cov := task["coverage"].(map[string]any)
	joined, _ := json.Marshal(cov["joined_traces"])
	if want := `["` + fragment.String() + `"]`; string(joined) != want {
		t.Errorf("joined_traces %s, want %s (the trace linked to the outsider's span is read, and all of it set aside)", joined, want)
	}
	var helperTrace string
	for _, st := range task["steps"].([]any) {
		st := st.(map[string]any)
		if st["agent"] == "helper" {
			helperTrace, _ = st["trace_id"].(string)
		}
	}
	if helperTrace != fragment.String() {
		t.Errorf("the helper's step is in trace %q, want its own %s", helperTrace, fragment)
	}
	if aside, _ := task["set_aside"].(map[string]any); aside == nil || aside["outside"] != 3.0 {
		t.Errorf("set_aside %v, want the outsider's span and the 2 of the trace linked to it", task["set_aside"])
	}
}

// tracestest joins span stubs.
func tracestest(parts ...tracetest.SpanStubs) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
