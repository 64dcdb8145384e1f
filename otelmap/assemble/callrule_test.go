package assemble

import (
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// TestCallRule: the rule the settle wait is handed reads a span as the
// recognizers do, a user's convention map included, and may be called from
// many waits at once.
func TestCallRule(t *testing.T) {
	conv, err := ParseConventions([]byte(`name: myco
rules:
  - match: {span_name: '^myco\.delegate$', kind: client}
    is: agent
    agent: {attribute: myco.target}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	span := func(name string, kind trace.SpanKind, attrs ...attribute.KeyValue) *otelmap.Span {
		return &otelmap.Span{Name: name, Kind: kind, Attrs: attrs}
	}
	delegate := span("myco.delegate", trace.SpanKindClient, attribute.String("myco.target", "reviewer"))
	for _, tc := range []struct {
		name       string
		conv       *Conventions
		sp         *otelmap.Span
		agentCall  bool
		wantCallee string
	}{
		{"invoke_agent", nil, span("invoke_agent reviewer", trace.SpanKindClient,
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("reviewer")), true, "reviewer"},
		{"a2a method", nil, span("SendMessage", trace.SpanKindClient, otelmap.AttrA2AMethodName.String("SendMessage")), true, ""},
		{"call type", nil, span("ask", trace.SpanKindClient, otelmap.AttrCallType.String("AGENT"), otelmap.AttrGenAIAgentID.String("r-1")), true, "r-1"},
		{"openllmetry agent", nil, span("reviewer.agent", trace.SpanKindClient,
			attribute.String("traceloop.span.kind", "agent"), otelmap.AttrTraceloopEntityName.String("reviewer")), true, "reviewer"},
		{"plain http", nil, span("POST", trace.SpanKindClient, otelmap.AttrServerAddress.String("api.openai.com")), false, ""},
		{"chat", nil, span("chat gpt-4o", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String(otelmap.OpChat)), false, ""},
		{"unknown framework", nil, delegate, false, ""},
		{"unknown framework, mapped", conv, delegate, true, "reviewer"},
	} {
		got, callee := CallRule(tc.conv)(tc.sp)
		if got != tc.agentCall || callee != tc.wantCallee {
			t.Errorf("%s: agent call %v, callee %q; want %v, %q", tc.name, got, callee, tc.agentCall, tc.wantCallee)
		}
	}

	rule := CallRule(conv)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if ok, callee := rule(delegate); !ok || callee != "reviewer" {
					t.Errorf("concurrent read: %v %q", ok, callee)
					return
				}
			}
		})
	}
	wg.Wait()
}
