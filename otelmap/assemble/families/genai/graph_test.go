package genai_test

import (
	"slices"
	"testing"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// TestStrandsGraphSources: a Strands TS Graph edge is read from the
// target agent's input, a text block that is exactly "[node: <source>]";
// a node fed by two sources gets a call from each, and prose that merely
// mentions such a marker gives none.
func TestStrandsGraphSources(t *testing.T) {
	const internal = trace.SpanKindInternal
	agentWithInput := func(name, _ string) []attribute.KeyValue {
		return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("invoke_agent"), otelmap.AttrGenAIAgentName.String(name)}
	}
	id, span := assembletest.NSSpans("strands-agents")
	withInput := func(sp otelmap.Span, content string) otelmap.Span {
		sp.Detail = &otelmap.SpanDetail{Events: []otelmap.Event{{Name: "gen_ai.user.message", Time: sp.Start,
			Attrs: []attribute.KeyValue{attribute.String("content", content)}}}}
		return sp
	}
	spans := []otelmap.Span{
		span(1, 0, "invoke_graph graph", internal, otelmap.AttrGenAIOperationName.String("invoke_graph"), otelmap.AttrGenAIAgentName.String("graph")),
		span(2, 1, "invoke_agent a", internal, agentWithInput("a", "")...),
		span(3, 1, "invoke_agent b", internal, agentWithInput("b", "")...),
		withInput(span(4, 1, "invoke_agent c", internal, agentWithInput("c", "")...),
			`[{"text":"task"},{"text":"[node: a]"},{"text":"a's output"},{"text":"[node: b]"},{"text":"b's output"}]`),
		withInput(span(5, 1, "invoke_agent d", internal, agentWithInput("d", "")...),
			`[{"text":"please read [node: a] first"}]`),
	}
	td := assemble.Trace(id, spans)
	if got := assembletest.Edges(td); !slices.Equal(got, []string{"a->c", "b->c"}) {
		t.Errorf("edges = %v, want a->c, b->c", got)
	}
}
