package openinference_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
	"github.com/coordbench/coordbench/tracedata"
)

func sortedEdges(td *tracedata.TraceData) []string {
	e := assembletest.Edges(td)
	slices.Sort(e)
	return e
}

// TestOpenInferencePython reads three Python teams through OpenInference's
// instrumentations, every run: the OpenAI Agents SDK's handoffs
// ("handoff to <agent>" TOOL spans, agents by agent.name), smolagents'
// managed agents (AGENT spans named only "<name>.run") and an Agno team
// (AGENT spans nested).
func TestOpenInferencePython(t *testing.T) {
	for _, c := range []struct {
		program string
		want    []string
	}{
		{"openai-agents-handoffs-py", []string{"researcher->writer", "triage->researcher"}},
		{"smolagents-managed-py", []string{"CodeAgent->researcher", "CodeAgent->writer"}},
		{"agno-team-py", []string{"report_team->researcher", "report_team->writer"}},
	} {
		for run := 1; run <= 3; run++ {
			id, spans := assembletest.LoadLive(t, c.program, fmt.Sprintf("captures/run-%d.otlp.json", run))
			td := assemble.Trace(id, spans)
			if got := sortedEdges(td); !slices.Equal(got, c.want) || td.Coverage.Complete != 1 || td.Coverage.Recognized["openinference"] == 0 {
				t.Errorf("%s run %d: edges %v, want %v; coverage %+v", c.program, run, got, c.want, td.Coverage)
			}
		}
	}
}

// span builds one span of a made-up OpenInference trace: n under parent
// (0: a root), n milliseconds from the start.
func span(proc *otelmap.Resource, n, parent byte, name string, attrs ...attribute.KeyValue) otelmap.Span {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sp := otelmap.Span{TraceID: trace.TraceID{0xe4}, SpanID: trace.SpanID{0xe4, n}, Name: name, Kind: trace.SpanKindInternal,
		Start: t0.Add(time.Duration(n) * time.Millisecond), End: t0.Add(time.Duration(n)*time.Millisecond + 20*time.Millisecond),
		Attrs: attrs, Resource: proc}
	if parent != 0 {
		sp.ParentSpanID = trace.SpanID{0xe4, parent}
	} else {
		sp.End = t0.Add(time.Second)
	}
	return sp
}

func kind(k string, more ...attribute.KeyValue) []attribute.KeyValue {
	return append([]attribute.KeyValue{attribute.String("openinference.span.kind", k)}, more...)
}

func agentName(name string) attribute.KeyValue { return attribute.String("agent.name", name) }

// TestOpenInferenceAttacks: the family's rules on what the live programs
// do not show. An AGENT kind without a name is no agent (the OpenAI Agents
// SDK's "Agent workflow" root, a LangChain run marked AGENT for its
// name); "<name>.run" names an agent only on a span with smolagents'
// attributes; "handoff to <agent>" is a handoff only on a TOOL span; a
// kind is read whatever its case; graph.node.id names an agent when
// agent.name does not; graph.node.parent_id names a caller only if an
// agent span of the trace runs as it.
func TestOpenInferenceAttacks(t *testing.T) {
	app := &otelmap.Resource{ServiceName: "app"}
	read := func(spans ...otelmap.Span) *tracedata.TraceData { return assemble.Trace(spans[0].TraceID, spans) }
	llm := kind("LLM", attribute.String("llm.model_name", "m"))
	cases := []struct {
		name   string
		spans  []otelmap.Span
		agents []string
		edges  []string
	}{
		{"an AGENT span without a name is no agent", []otelmap.Span{
			span(app, 1, 0, "Agent workflow", kind("AGENT")...),
			span(app, 2, 1, "a", kind("AGENT", agentName("a"))...),
			span(app, 3, 2, "response", llm...),
		}, []string{"a"}, nil},
		{"<name>.run names an agent only with smolagents' attributes", []otelmap.Span{
			span(app, 1, 0, "boss", kind("AGENT", agentName("boss"))...),
			span(app, 2, 1, "mallory.run", kind("AGENT")...),
			span(app, 3, 2, "response", llm...),
		}, []string{"boss"}, nil},
		{"smolagents' <name>.run", []otelmap.Span{
			span(app, 1, 0, "boss", kind("AGENT", agentName("boss"))...),
			span(app, 2, 1, "helper.run", kind("AGENT", attribute.String("smolagents.max_steps", "3"))...),
			span(app, 3, 2, "response", llm...),
		}, []string{"boss", "helper"}, []string{"boss->helper"}},
		{"a lower-case kind", []otelmap.Span{
			span(app, 1, 0, "boss", kind("agent", agentName("boss"))...),
			span(app, 2, 1, "helper", kind("Agent", agentName("helper"))...),
			span(app, 3, 2, "response", llm...),
		}, []string{"boss", "helper"}, []string{"boss->helper"}},
		{"graph.node.id names an agent", []otelmap.Span{
			span(app, 1, 0, "boss", kind("AGENT", attribute.String("graph.node.id", "boss"))...),
			span(app, 2, 1, "response", llm...),
		}, []string{"boss"}, nil},
		{"handoff to <agent> on a TOOL span hands off", []otelmap.Span{
			span(app, 1, 0, "Agent workflow", kind("CHAIN")...),
			span(app, 2, 1, "a", kind("AGENT", agentName("a"))...),
			span(app, 3, 2, "handoff to b", kind("TOOL")...),
			span(app, 30, 1, "b", kind("AGENT", agentName("b"))...),
		}, []string{"a", "b"}, []string{"a->b"}},
		{"handoff to <agent> on a CHAIN span does not", []otelmap.Span{
			span(app, 1, 0, "Agent workflow", kind("CHAIN")...),
			span(app, 2, 1, "a", kind("AGENT", agentName("a"))...),
			span(app, 3, 2, "handoff to b", kind("CHAIN")...),
			span(app, 30, 1, "b", kind("AGENT", agentName("b"))...),
		}, []string{"a", "b"}, nil},
		{"graph.node.parent_id names a caller that runs", []otelmap.Span{
			span(app, 1, 0, "Agent workflow", kind("CHAIN")...),
			span(app, 2, 1, "a", kind("AGENT", agentName("a"))...),
			span(app, 30, 1, "b", kind("AGENT", agentName("b"), attribute.String("graph.node.parent_id", "a"))...),
		}, []string{"a", "b"}, []string{"a->b"}},
		{"graph.node.parent_id naming no agent of the trace", []otelmap.Span{
			span(app, 1, 0, "Agent workflow", kind("CHAIN")...),
			span(app, 2, 1, "a", kind("AGENT", agentName("a"))...),
			span(app, 30, 1, "b", kind("AGENT", agentName("b"), attribute.String("graph.node.parent_id", "ghost"))...),
		}, []string{"a", "b"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			td := read(c.spans...)
			names := assembletest.AgentNames(td)
			slices.Sort(names)
			if !slices.Equal(names, c.agents) {
				t.Errorf("agents %v, want %v", names, c.agents)
			}
			var got []string
			for _, e := range sortedEdges(td) {
				if !strings.HasPrefix(e, tracedata.UserAgent+"->") {
					got = append(got, e)
				}
			}
			if !slices.Equal(got, c.edges) {
				t.Errorf("edges %v, want %v", sortedEdges(td), c.edges)
			}
		})
	}
}
