// Package genai is the convention family of the OpenTelemetry GenAI
// conventions in their current shape (semantic conventions v1.41.0 and
// the GenAI conventions since), "genai" in coverage.recognized, and in the
// shapes from before gen_ai.operation.name was set everywhere,
// "genai_previous" (previous.go). gen_ai.operation.name says what a span
// is, gen_ai.agent.name and gen_ai.agent.id name the agent of an agent
// span (the callee on a CLIENT one). Emitted by coordbench's own agents,
// by hand-instrumented agents, and by Google ADK, Pydantic AI 2.x,
// Strands, Microsoft Agent Framework, AutoGen, Semantic Kernel and
// OpenLLMetry's newer instrumentations; checked on the live corpus's
// otel-genai-manual (@opentelemetry/instrumentation-openai 0.21.0),
// google-adk (@google/adk 2.0.0), strands-* (@strands-agents/sdk 1.19.0),
// a365-observability (@microsoft/agents-a365-observability 1.0.0),
// ai-sdk-7-genai (ai 7.0.173) and mastra-js (@mastra/core 1.71.0)
// programs, and the fixtures of otelmap/assemble/testdata/frameworks.
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
// Frameworks that write these conventions add a few words of their own,
// read here: Pydantic AI's agent_name on its agent runs (previous.go),
// Strands TS's agent_loop.* on a loop cycle span without an operation, the
// handoff tools of Google ADK (transfer_to_agent) and Strands (Python's
// handoff_to_agent, TS's strands_structured_output), whose target is an
// argument, and the sources of a Strands TS Graph node (graph.go).
package genai

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the GenAI family.
var Family recognize.Family = family{}

type family struct{}

// Keys.
const (
	keyGenAI     uint8 = iota // gen_ai.*
	keyPydantic               // agent_name
	keyLoopCycle              // agent_loop.*
	keyLLMType                // llm.request.type, the previous shape's LLM call
)

// Identities.
const (
	idAgentName = iota // gen_ai.agent.name
	idAgentID          // gen_ai.agent.id
	idGraphNode        // a Strands graph node's id naming a caller (graph.go)
)

// claimPrevious is the bit of "genai_previous" among the family's claims.
const claimPrevious = 1 << 1

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "genai",
		Also: []string{"genai_previous"},
		Keys: []recognize.Key{
			recognize.Prefix("gen_ai.", keyGenAI),
			recognize.Exact(string(otelmap.AttrPydanticAgentName), keyPydantic),
			recognize.Prefix("agent_loop.", keyLoopCycle),
			recognize.Exact("llm.request.type", keyLLMType),
		},
		Identities: []recognize.Identity{
			idAgentName: {Label: tracedata.IdentityAgentName, Tier: recognize.NameStandard},
			idAgentID:   {Label: tracedata.IdentityAgentID, Tier: recognize.NameID},
			idGraphNode: {Label: tracedata.IdentityOpenInference, Tier: recognize.NameAttribute},
		},
		HandoffTools: []recognize.HandoffTool{
			{Name: "transfer_to_agent"}, // Google ADK
			{Name: "handoff_to_agent"},  // Strands Python swarm
			// Strands TS routes a Swarm by structured output: {agentId,
			// message} hands off, {message} alone is the final answer.
			{Name: "strands_structured_output", WithTarget: true},
		},
		// Pydantic AI 1.x's running tool span, Google ADK's tool span.
		ArgumentKeys: []string{"tool_arguments", "gcp.vertex.agent.tool_call_args"},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// reader is what the gen_ai.* attributes (and the frameworks' few words
// beside them) say of one span.
type reader struct {
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
	llm       bool // llm.request.type
}

func (g *reader) Reset() { *g = reader{} }

func (g *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keyPydantic:
		g.pydanticAgent = recognize.Quiet(kv)
		return
	case keyLoopCycle:
		// Strands TS's execute_agent_loop_cycle: one turn of an agent's
		// loop, its work, neither step nor call.
		g.loopCycle = true
		r.Claim()
		return
	case keyLLMType:
		g.llm = recognize.Quiet(kv) != ""
		return
	}
	switch kv.Key {
	case otelmap.AttrGenAIOperationName:
		g.op = canonicalOp(r.Str(kv))
		r.Claim()
		return
	case otelmap.AttrGenAIAgentName:
		g.agentName = r.Str(kv)
	case otelmap.AttrGenAIAgentID:
		g.agentID = r.Str(kv)
	case otelmap.AttrGenAIToolName:
		g.tool = recognize.Quiet(kv)
	case otelmap.AttrGenAIToolCallArgs:
		g.toolArgs = recognize.Quiet(kv)
	case otelmap.AttrGenAIRequestModel:
		g.model = true
	case otelmap.AttrGenAIHandoffFromAgent:
		g.handoffFrom = recognize.Quiet(kv)
	case otelmap.AttrGenAIHandoffToAgent:
		g.handoffTo = recognize.Quiet(kv)
	}
	g.any = true
}

func (g *reader) Decide(r *recognize.Reading, sp *otelmap.Span) {
	if g.op == "" && g.loopCycle {
		g.op = "execute_agent_loop_cycle"
	}
	if g.op != "" {
		r.Understand()
		op, workflow := g.operation()
		r.Say(recognize.TierStandard, recognize.Word{Op: op, Workflow: workflow})
	} else {
		r.Say(recognize.TierFallback, g.previousWord(sp))
	}
	r.Name(idAgentName, g.agentName)
	r.ID(idAgentID, g.agentID)
	if g.op == "handoff" {
		r.HandoffKind()
	}
	r.HandoffTarget(g.handoffTo)
	r.HandoffSource(idAgentName, g.handoffFrom)
	r.ToolName(g.tool)
	r.ToolArguments(g.toolArgs)
}

// operation classifies gen_ai.operation.name.
func (g *reader) operation() (op recognize.Op, workflow bool) {
	switch g.op {
	case otelmap.OpInvokeAgent:
		return recognize.OpInvoke, false
	case otelmap.OpChat, "text_completion", "generate_content", "embeddings":
		return recognize.OpLLM, false
	case otelmap.OpExecuteTool, "retrieval":
		return recognize.OpTool, false
	}
	if strings.HasPrefix(g.op, "invoke_") {
		return recognize.OpNone, true // invoke_workflow, invoke_swarm, invoke_graph
	}
	return recognize.OpNone, false
}

// genaiOps are the gen_ai.operation.name values this family reads.
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
