package recognize

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// The OpenTelemetry GenAI conventions in their current shape (semantic
// conventions v1.41.0 and the GenAI conventions since): gen_ai.operation.name
// says what a span is, gen_ai.agent.name and gen_ai.agent.id name the agent
// of an agent span (the callee on a CLIENT one). Emitted by coordbench's
// own agents, by hand-instrumented agents, and by Google ADK, Pydantic AI
// 2.x, Strands, Microsoft Agent Framework, AutoGen, Semantic Kernel and
// OpenLLMetry's newer instrumentations.
//
// Operations: invoke_agent is an agent span; chat, text_completion,
// generate_content and embeddings are LLM calls; execute_tool and
// retrieval are tool calls; invoke_workflow and any other invoke_* (Strands'
// invoke_swarm, invoke_graph) are orchestrations: never an agent, not a
// step, and not a side of a call whatever their kind; handoff (OpenLLMetry's
// OpenAI Agents instrumentation) is a handoff, with gen_ai.handoff.from_agent
// and gen_ai.handoff.to_agent. Other values (create_agent,
// execute_event_loop_cycle, ...) are neither steps nor calls.
//
// The values are read whatever their case and underscores (canonicalOp):
// Microsoft's Agent 365 observability SDKs set gen_ai.operation.name on their
// InferenceScope spans to their InferenceOperationType, "Chat",
// "TextCompletion" or "GenerateContent" (@microsoft/agents-a365-observability
// 1.0.0, dist/esm/tracing/contracts.d.ts and scopes/InferenceScope.js), while
// their agent and tool scopes write invoke_agent and execute_tool.
//
// The shapes from before gen_ai.operation.name was set everywhere are
// genai_previous.go's.

// genaiSlots is what the gen_ai.* attributes say.
type genaiSlots struct {
	op          string // gen_ai.operation.name
	agentName   string // gen_ai.agent.name
	agentID     string // gen_ai.agent.id
	tool        string // gen_ai.tool.name
	toolArgs    string // gen_ai.tool.call.arguments
	model       bool   // gen_ai.request.model
	any         bool   // some other gen_ai.* attribute
	handoffFrom string // gen_ai.handoff.from_agent
	handoffTo   string // gen_ai.handoff.to_agent
	// pydanticAgent is Pydantic AI's own agent_name attribute, which only
	// its agent run spans carry.
	pydanticAgent string
	// loopCycle: an agent_loop.* attribute, Strands TS's loop cycle span
	// (which carries no gen_ai.operation.name).
	loopCycle bool
}

// readGenAI reads one gen_ai.* attribute.
func (r *Reading) readGenAI(kv *attribute.KeyValue, key string) {
	g := &r.gen
	switch kv.Key {
	case otelmap.AttrGenAIOperationName:
		g.op = canonicalOp(r.str(kv))
		r.claim(famGenAI)
		return
	case otelmap.AttrGenAIAgentName:
		g.agentName = r.str(kv)
	case otelmap.AttrGenAIAgentID:
		g.agentID = r.str(kv)
	case otelmap.AttrGenAIToolName:
		g.tool = quiet(kv)
	case otelmap.AttrGenAIToolCallArgs:
		g.toolArgs = quiet(kv)
	case otelmap.AttrGenAIRequestModel:
		g.model = true
	default:
		switch key {
		case string(otelmap.AttrGenAIHandoffFromAgent):
			g.handoffFrom = quiet(kv)
		case string(otelmap.AttrGenAIHandoffToAgent):
			g.handoffTo = quiet(kv)
		}
	}
	g.any = true
}

// operation classifies gen_ai.operation.name.
func (g *genaiSlots) operation() (op Op, workflow bool) {
	switch g.op {
	case otelmap.OpInvokeAgent:
		return OpInvoke, false
	case otelmap.OpChat, "text_completion", "generate_content", "embeddings":
		return OpLLM, false
	case otelmap.OpExecuteTool, "retrieval":
		return OpTool, false
	}
	if strings.HasPrefix(g.op, "invoke_") {
		return OpNone, true // invoke_workflow, invoke_swarm, invoke_graph
	}
	return OpNone, false
}

// genaiOps are the gen_ai.operation.name values this file reads.
var genaiOps = []string{otelmap.OpInvokeAgent, otelmap.OpChat, "text_completion", "generate_content", "embeddings",
	otelmap.OpExecuteTool, "retrieval", "handoff", "invoke_workflow"}

// foldedOps maps the folded spelling (lower case, no underscores) of each
// of genaiOps to it.
var foldedOps = func() map[string]string {
	m := make(map[string]string, len(genaiOps))
	for _, op := range genaiOps {
		m[foldOp(op)] = op
	}
	return m
}()

func foldOp(op string) string { return strings.ReplaceAll(strings.ToLower(op), "_", "") }

// canonicalOp returns the GenAI spelling of a known operation written in
// another case or without its underscores ("Chat", "TextCompletion",
// "Execute_Tool"); any other value is returned as it is, so that a word that
// merely contains a known one ("chatbot", "ChatCompletion") stays unknown.
func canonicalOp(op string) string {
	for _, known := range genaiOps {
		if op == known {
			return op // the usual case, without folding
		}
	}
	if known, ok := foldedOps[foldOp(op)]; ok {
		return known
	}
	return op
}
