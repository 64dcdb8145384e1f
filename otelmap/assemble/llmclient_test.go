package assemble_test

import (
	"fmt"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// A model call is no call to an agent (docs/trace-assembly.md, "A model
// call's span around the agent's loop"): Mastra's OpenTelemetry bridge
// (@mastra/otel-bridge 1.5.4, the live corpus's mastra-otel-bridge-js)
// writes its model_generation span as a CLIENT "chat <model>" span that
// holds the agent's whole tool loop, so the sub-agents its tools run sit
// in-process under that one client span. Read as the client call that an
// in-process agent answers, the span made one call (to the first sub-agent)
// and lost the others. These attack the rule with shapes no capture shows.

// mastraStep adds what the bridge writes for one step of an agent's loop
// under its model_generation span: model_step > execute_tool agent-<key> >
// the sub-agent's run.
func mastraStep(p *principleTrace, gen int, subAgent string) int {
	step := p.add(gen, "model_step", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String("model_step"))
	tool := p.add(step, "execute_tool agent-"+subAgent, trace.SpanKindInternal,
		otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool), otelmap.AttrGenAIToolName.String("agent-"+subAgent))
	return p.agent(tool, subAgent)
}

// modelGeneration adds the bridge's CLIENT model_generation span of agent
// name under parent.
func modelGeneration(p *principleTrace, parent int, name string) int {
	return p.add(parent, "chat gpt-4o", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
		otelmap.AttrGenAIAgentName.String(name), otelmap.AttrGenAIRequestModel.String("gpt-4o"))
}

func countedEdges(td *tracedata.TraceData) []string {
	var out []string
	for _, in := range td.Interactions {
		out = append(out, fmt.Sprintf("%s->%s x%d", in.From, in.To, in.Count))
	}
	slices.Sort(out)
	return out
}

func TestModelCallHoldingTheLoopIsNoAgentCall(t *testing.T) {
	for _, c := range []struct {
		name     string
		build    func(p *principleTrace)
		want     []string // the interactions, sorted
		complete bool     // evidence must be complete (else: must not be)
	}{
		{
			// The bridge's shape (mastra-otel-bridge-js): two sub-agents,
			// each by a tool of its own step of the coordinator's loop.
			name: "the Mastra bridge's supervisor",
			build: func(p *principleTrace) {
				co := p.add(-1, "invoke_agent coordinator", trace.SpanKindInternal,
					otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("coordinator"))
				gen := modelGeneration(p, co, "coordinator")
				mastraStep(p, gen, "researcher")
				mastraStep(p, gen, "writer")
			},
			want:     []string{"coordinator->researcher x1", "coordinator->writer x1"},
			complete: true,
		},
		{
			// The same sub-agent run twice, and a third one directly under
			// the model span without a tool between: every run is a call.
			name: "three runs, one straight under the model span",
			build: func(p *principleTrace) {
				co := p.add(-1, "invoke_agent coordinator", trace.SpanKindInternal,
					otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("coordinator"))
				gen := modelGeneration(p, co, "coordinator")
				mastraStep(p, gen, "researcher")
				mastraStep(p, gen, "researcher")
				p.agent(gen, "writer")
			},
			want:     []string{"coordinator->researcher x2", "coordinator->writer x1"},
			complete: true,
		},
		{
			// Sub-agents two deep, each level with the bridge's CLIENT
			// model span: the researcher's own sub-agent is the
			// researcher's callee, not the coordinator's.
			name: "nested supervisors",
			build: func(p *principleTrace) {
				co := p.add(-1, "invoke_agent coordinator", trace.SpanKindInternal,
					otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("coordinator"))
				gen := modelGeneration(p, co, "coordinator")
				r := mastraStep(p, gen, "researcher")
				mastraStep(p, modelGeneration(p, r, "researcher"), "checker")
				mastraStep(p, gen, "writer")
			},
			want:     []string{"coordinator->researcher x1", "coordinator->writer x1", "researcher->checker x1"},
			complete: true,
		},
		{
			// A model span with no agent around it: the agents under it
			// have no caller the spans name, and the rule invents none.
			name: "a model span at the root holding two agents",
			build: func(p *principleTrace) {
				gen := modelGeneration(p, -1, "")
				mastraStep(p, gen, "researcher")
				mastraStep(p, gen, "writer")
			},
			want: nil,
		},
		{
			// An agent's model span holding a run of the same agent: an
			// agent nested in itself is no call, and no edge is made up.
			name: "the agent itself under its own model span",
			build: func(p *principleTrace) {
				co := p.add(-1, "invoke_agent coordinator", trace.SpanKindInternal,
					otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("coordinator"))
				gen := modelGeneration(p, co, "coordinator")
				mastraStep(p, gen, "coordinator")
				mastraStep(p, gen, "writer")
			},
			want:     []string{"coordinator->writer x1"},
			complete: true,
		},
		{
			// The control the rule must leave alone: a client span that is
			// not a model call (an A2A request, no server instrumentation)
			// answered by an agent run in-process under it is one call,
			// seen from both sides.
			name: "an A2A client span answered in-process",
			build: func(p *principleTrace) {
				co := p.agent(-1, "coordinator")
				tool := p.add(co, "execute_tool ask_researcher", trace.SpanKindInternal,
					otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool), otelmap.AttrGenAIToolName.String("ask_researcher"))
				post := p.add(tool, "POST", trace.SpanKindClient, attribute.String("http.request.method", "POST"),
					attribute.String("server.address", "127.0.0.1"), attribute.Int("server.port", 9001))
				p.agent(post, "researcher")
			},
			want:     []string{"coordinator->researcher x1"},
			complete: true,
		},
		{
			// A user's agent served behind a chat completions API (an
			// agent framework's OpenAI-compatible server): the chat span is
			// answered by a server span of another process whose agent runs
			// under it. That is a call, seen from both sides: the rule on
			// model spans speaks only of agents in the model span's process.
			name: "an agent served behind a chat completions API",
			build: func(p *principleTrace) {
				co := p.agent(-1, "coordinator")
				chat := p.add(co, "chat researcher-model", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String("chat"),
					attribute.String("server.address", "127.0.0.1"), attribute.Int("server.port", 9002))
				srv := p.add(chat, "POST /v1/chat/completions", trace.SpanKindServer, attribute.String("http.request.method", "POST"),
					attribute.String("url.path", "/v1/chat/completions"))
				p.spans[srv].Resource = &otelmap.Resource{ServiceName: "researcher-server"}
				r := p.agent(srv, "researcher")
				p.spans[r].Resource, p.spans[r+1].Resource = p.spans[srv].Resource, p.spans[srv].Resource
			},
			want:     []string{"coordinator->researcher x1"},
			complete: true,
		},
		{
			// A call out of the process from inside the model span's
			// loop (a tool calling a remote agent) is still a call: only
			// the model span itself stops being read as one. Evidence
			// partial: the remote agent's side is not in the trace.
			name: "a remote agent called from a tool inside the model span",
			build: func(p *principleTrace) {
				co := p.add(-1, "invoke_agent coordinator", trace.SpanKindInternal,
					otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("coordinator"))
				gen := modelGeneration(p, co, "coordinator")
				step := p.add(gen, "model_step", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String("model_step"))
				tool := p.add(step, "execute_tool ask_remote", trace.SpanKindInternal,
					otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool), otelmap.AttrGenAIToolName.String("ask_remote"))
				p.add(tool, "invoke_agent remote", trace.SpanKindClient,
					otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("remote"))
				mastraStep(p, gen, "writer")
			},
			want: []string{"coordinator->remote x1", "coordinator->writer x1"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPrincipleTrace(7)
			c.build(p)
			td, ev := p.judge(assemble.Options{})
			if got := countedEdges(td); !slices.Equal(got, c.want) {
				t.Errorf("interactions %q, want %q (agents %v)", got, c.want, agentNames(td))
			}
			if complete := ev.Level == evals.EvidenceComplete; complete != c.complete {
				t.Errorf("evidence %s %q, want complete=%v; coverage %+v", ev.Level, ev.Reasons, c.complete, td.Coverage)
			}
		})
	}
}
