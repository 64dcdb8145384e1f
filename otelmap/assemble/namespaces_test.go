package assemble_test

import (
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// TestUnreadNamespaces: spans that carry attributes of an agent or GenAI
// namespace and that no rule reads are counted by namespace and named in a
// warning, and the trace is never complete; spans that were read, and
// namespaces that are not an agent's, are not counted. The cases attack
// the rule from both sides: frameworks nobody listed, a known namespace
// with one unread key, standard namespaces whose keys mention agents.
func TestUnreadNamespaces(t *testing.T) {
	const internal = trace.SpanKindInternal
	agent := func(name string) []attribute.KeyValue {
		return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("invoke_agent"), otelmap.AttrGenAIAgentName.String(name)}
	}
	cases := []struct {
		name        string
		spans       func(span func(n, parent byte, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) otelmap.Span) []otelmap.Span
		want        map[string]int
		noEvidence  bool
		wantWarning string
	}{{
		// The Vercel AI SDK's ai.* shape: only the model call carries
		// gen_ai.*; the agent and its tool call are ai.* spans.
		name: "vercel ai.* spans, model calls read",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "ai.generateText", internal, attribute.String("ai.telemetry.functionId", "coordinator"), attribute.String("ai.model.id", "gpt-4o")),
				span(2, 1, "ai.generateText.doGenerate", internal, attribute.String("ai.model.id", "gpt-4o"), otelmap.AttrGenAIRequestModel.String("gpt-4o")),
				span(3, 1, "ai.toolCall", internal, attribute.String("ai.toolCall.name", "ask_researcher")),
				span(4, 3, "ai.generateText", internal, attribute.String("ai.telemetry.functionId", "researcher")),
			}
		},
		want:        map[string]int{"ai.*": 3},
		noEvidence:  true,
		wantWarning: "3 spans carry `ai.*` attributes no rule reads (the first: span d001000000000000 \"ai.generateText\")",
	}, {
		// A framework nobody listed, with a namespace of its own: its keys
		// speak of agents and tools, so the namespace is an agent's.
		name: "invented framework zeta.*",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "zeta run", internal, attribute.String("zeta.run.id", "r1")),
				span(2, 1, "zeta step", internal, attribute.String("zeta.subAgent.id", "planner"), attribute.String("zeta.cache", "hit")),
				span(3, 1, "zeta step", internal, attribute.String("zeta.toolCall", "search")),
				span(4, 2, "chat gpt-4o", internal, otelmap.AttrGenAIOperationName.String("chat")),
			}
		},
		want:       map[string]int{"zeta.*": 2},
		noEvidence: true,
	}, {
		// Genkit writes genkit:name, genkit:type: a colon namespace.
		name: "colon namespace genkit:*",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "invoke_agent boss", internal, agent("boss")...),
				span(2, 1, "worker", internal, attribute.String("genkit:name", "worker"), attribute.String("genkit:type", "action")),
			}
		},
		want:       map[string]int{"genkit:*": 1},
		noEvidence: true,
	}, {
		// A known namespace with one key no rule reads, on a span nothing
		// else says anything of: counted. The same key on an agent span
		// that was read is detail, not missing work.
		name: "one unread gen_ai key",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "invoke_agent boss", internal, append(agent("boss"), attribute.String("gen_ai.agent.description", "x"))...),
				span(2, 1, "invoke_agent helper", internal, agent("helper")...),
				span(3, 2, "step", internal, attribute.String("gen_ai.system", "openai")),
			}
		},
		want: map[string]int{"gen_ai.*": 1},
	}, {
		// Only HTTP: standard namespaces, whatever their keys say, are no
		// agent's (user_agent.original, a header named after agents).
		name: "only HTTP spans",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "GET /", trace.SpanKindServer, attribute.String("http.request.method", "GET"), attribute.String("user_agent.original", "agent/1.0"),
					attribute.String("http.request.header.x-agent-id", "a")),
				span(2, 1, "db query", internal, attribute.String("db.system", "sqlite"), attribute.String("code.function", "run_tool")),
			}
		},
		want: nil,
	}, {
		// An application's own attributes that say nothing of agents.
		name: "application namespace without agent words",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "invoke_agent solo", internal, agent("solo")...),
				span(2, 1, "load", internal, attribute.String("myapp.cache.hits", "3"), attribute.Int("myapp.model_size", 7)),
			}
		},
		want: nil,
	}, {
		// Every span read: a step, an orchestration, an OpenInference CHAIN,
		// all carrying their namespaces' other keys.
		name: "everything read",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "invoke_workflow", internal, otelmap.AttrGenAIOperationName.String("invoke_workflow"), attribute.String("gen_ai.workflow.name", "w")),
				span(2, 1, "invoke_agent a", internal, agent("a")...),
				span(3, 2, "invoke_agent b", internal, agent("b")...),
				span(4, 3, "chain", internal, attribute.String("openinference.span.kind", "CHAIN"), attribute.String("llm.invocation_parameters", "{}")),
				span(5, 3, "execute_tool t", internal, otelmap.AttrGenAIOperationName.String("execute_tool"), attribute.String("ai.toolCall.name", "t")),
			}
		},
		want: nil,
	}, {
		// A participant's spans under a read agent that hide work in a
		// namespace of their own are still counted: being inside a read
		// agent does not make a span read.
		name: "unread work inside a read agent",
		spans: func(span func(byte, byte, string, trace.SpanKind, ...attribute.KeyValue) otelmap.Span) []otelmap.Span {
			return []otelmap.Span{
				span(1, 0, "invoke_agent a", internal, agent("a")...),
				span(2, 1, "invoke_agent b", internal, agent("b")...),
				span(3, 2, "mastra step", internal, attribute.String("mastra.agent.id", "c"), attribute.String("mastra.run", "1")),
				span(4, 2, "mastra step", internal, attribute.String("mastra.agent.id", "d")),
			}
		},
		want: map[string]int{"mastra.*": 2},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, span := nsSpans("app")
			spans := c.spans(span)
			td := assemble.Trace(id, spans)
			cov := td.Coverage
			if !maps.Equal(cov.UnreadNamespaces, c.want) {
				t.Errorf("unread namespaces = %v, want %v (warnings %q)", cov.UnreadNamespaces, c.want, cov.Warnings)
			}
			if cov.NoEvidence != c.noEvidence {
				t.Errorf("no_evidence = %v, want %v (warnings %q)", cov.NoEvidence, c.noEvidence, cov.Warnings)
			}
			if len(c.want) > 0 && cov.NoEvidence == false && cov.Interactions == 0 {
				t.Errorf("unread namespaces with no interaction must be no evidence: %+v", cov)
			}
			for ns, n := range c.want {
				if !hasWarning(td, "`"+ns+"` attributes no rule reads") {
					t.Errorf("no warning names %s (%d spans): %q", ns, n, cov.Warnings)
				}
			}
			if c.wantWarning != "" && !hasWarning(td, c.wantWarning) {
				t.Errorf("warnings = %q, want one containing %q", cov.Warnings, c.wantWarning)
			}
			assertPermutationStable(t, id, spans, 5)
		})
	}
}

// TestFlatSpansNoAgent: a process whose spans are model and tool calls
// and name no agent cannot show whether it hosted one agent or a team; it
// is no evidence, and the warning says why.
func TestFlatSpansNoAgent(t *testing.T) {
	id, span := nsSpans("flat-app")
	spans := []otelmap.Span{
		span(1, 0, "chat gpt-4o", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String("chat")),
		span(2, 0, "execute_tool search", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String("execute_tool")),
		span(3, 0, "chat gpt-4o", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String("chat")),
	}
	td := assemble.Trace(id, spans)
	if !td.Coverage.NoEvidence || td.Coverage.Complete != 0 {
		t.Errorf("coverage = %+v, want no evidence", td.Coverage)
	}
	if !hasWarning(td, "no span names an agent") {
		t.Errorf("warnings = %q", td.Coverage.Warnings)
	}
}

// TestHandoffArgumentNames: a handoff tool's target is read whatever the
// framework calls the argument (agent_name, agentName, agent_id, agentId),
// and Strands TS's structured output hands off only when it names an
// agent.
func TestHandoffArgumentNames(t *testing.T) {
	const internal = trace.SpanKindInternal
	agent := func(name string) []attribute.KeyValue {
		return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("invoke_agent"), otelmap.AttrGenAIAgentName.String(name)}
	}
	tool := func(name, args string) []attribute.KeyValue {
		return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("execute_tool"), otelmap.AttrGenAIToolName.String(name),
			otelmap.AttrGenAIToolCallArgs.String(args)}
	}
	cases := []struct {
		tool, args string
		want       []string
	}{
		{"transfer_to_agent", `{"agent_name":"billing"}`, []string{"triage->billing"}},
		{"transfer_to_agent", `{"agentName":"billing"}`, []string{"triage->billing"}},
		{"handoff_to_agent", `{"agent_id":"billing"}`, []string{"triage->billing"}},
		{"strands_structured_output", `{"agentId":"billing","message":"over to you"}`, []string{"triage->billing"}},
		{"strands_structured_output", `{"message":"the final answer"}`, nil},
		{"transfer_to_agent", `{"agentName":""}`, []string{"triage->billing"}}, // no name: the next agent of another
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			id, span := nsSpans("app")
			spans := []otelmap.Span{
				span(1, 0, "invoke_swarm", internal, otelmap.AttrGenAIOperationName.String("invoke_swarm")),
				span(2, 1, "invoke_agent triage", internal, agent("triage")...),
				span(3, 2, "execute_tool "+c.tool, internal, tool(c.tool, c.args)...),
				span(4, 1, "invoke_agent billing", internal, agent("billing")...),
			}
			td := assemble.Trace(id, spans)
			if got := edges(td); !slices.Equal(got, c.want) {
				t.Errorf("edges = %v, want %v", got, c.want)
			}
		})
	}
}
