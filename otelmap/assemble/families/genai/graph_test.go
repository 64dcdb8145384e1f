package genai_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
	"github.com/coordbench/coordbench/tracedata"
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

// TestStrandsPythonGraph: a Strands Python Graph edge is read from the
// target agent's input ("Inputs from previous nodes:", then "From <id>:"
// per source), on the live capture and on edited copies of it: a node id
// that is no agent's name gives no call (and the evidence is no longer
// complete), "From <id>:" blocks before the marker or inside a source's
// result give none, and without content capture the honest reading stays.
func TestStrandsPythonGraph(t *testing.T) {
	const program = "strands-graph-py"
	// editInput rewrites the input event of the named agent's span.
	editInput := func(spans []otelmap.Span, agent, from, to string) []otelmap.Span {
		out := slices.Clone(spans)
		for i := range out {
			if out[i].Name != "invoke_agent "+agent {
				continue
			}
			evs := slices.Clone(out[i].Events())
			for j := range evs {
				attrs := slices.Clone(evs[j].Attrs)
				for k := range attrs {
					if attrs[k].Key == "content" {
						attrs[k] = attribute.String("content", strings.ReplaceAll(attrs[k].Value.AsString(), from, to))
					}
				}
				evs[j].Attrs = attrs
			}
			d := *out[i].Detail
			d.Events = evs
			out[i].Detail = &d
		}
		return out
	}
	read := func(t *testing.T, id trace.TraceID, spans []otelmap.Span) ([]string, *tracedata.TraceData) {
		t.Helper()
		td := assemble.Trace(id, spans)
		return assembletest.Edges(td), td
	}

	t.Run("the capture as it came", func(t *testing.T) {
		for run := 1; run <= 3; run++ {
			id, spans := assembletest.LoadLive(t, program, fmt.Sprintf("captures/run-%d.otlp.json", run))
			if got, td := read(t, id, spans); !slices.Equal(got, []string{"coordinator->researcher", "researcher->writer"}) || td.Coverage.Complete != 1 {
				t.Errorf("run %d: edges %v coverage %+v", run, got, td.Coverage)
			}
		}
	})
	id, spans := assembletest.LoadLive(t, program, "captures/run-1.otlp.json")

	t.Run("a node id that is no agent's name", func(t *testing.T) {
		// GraphBuilder.add_node(agent, "planner"): the writer's source is
		// the node "planner", which no agent span runs as. No call from a
		// node that is not in the graph, a warning, and the evidence
		// says the wiring is missing.
		got, td := read(t, id, editInput(spans, "researcher", `From coordinator:`, `From planner:`))
		if !slices.Equal(got, []string{"researcher->writer"}) || !assembletest.HasWarning(td, "name a caller no agent span of the trace runs as") ||
			slices.Contains(assembletest.AgentNames(td), "planner") {
			t.Errorf("edges %v agents %v warnings %q", got, assembletest.AgentNames(td), td.Coverage.Warnings)
		}
	})

	t.Run("From blocks before the marker", func(t *testing.T) {
		// The marker removed: a "From coordinator:" block in a task's text
		// is no edge.
		got, _ := read(t, id, editInput(spans, "researcher", `"\nInputs from previous nodes:"`, `"\nInputs:"`))
		if !slices.Equal(got, []string{"researcher->writer"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("From inside a source's result", func(t *testing.T) {
		// The coordinator's result itself says "From writer:": prose in a
		// result block is no edge.
		got, _ := read(t, id, editInput(spans, "researcher", `  - Agent: Plan:`, `  - Agent: From writer: Plan:`))
		if !slices.Equal(got, []string{"coordinator->researcher", "researcher->writer"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("fan-in: two sources", func(t *testing.T) {
		got, _ := read(t, id, editInput(spans, "writer", `{"text": "\nFrom researcher:"}`, `{"text": "\nFrom researcher:"}, {"text": "\nFrom coordinator:"}`))
		if !slices.Equal(got, []string{"coordinator->researcher", "coordinator->writer", "researcher->writer"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("without content capture", func(t *testing.T) {
		bare := slices.Clone(spans)
		for i := range bare {
			bare[i].Detail = nil
		}
		got, td := read(t, id, bare)
		if len(got) != 0 || td.Coverage.UnwiredAgents != 3 || !td.Coverage.NoEvidence {
			t.Errorf("edges %v coverage %+v", got, td.Coverage)
		}
	})
}
