// Package openinference is the convention family of OpenInference (Arize),
// the conventions of its instrumentations for the OpenAI Agents SDK,
// LangChain/LangGraph, CrewAI, smolagents, BeeAI, MCP and others:
// "openinference" in coverage.recognized. Checked on the live corpus's
// openai-agents-handoffs and openai-agents-astool (@openai/agents 0.20.0,
// @arizeai/openinference-instrumentation-openai-agents 0.2.15),
// langgraph-supervisor-js, langgraph-swarm-js, langchain-subagents-js and
// deepagents (@arizeai/openinference-instrumentation-langchain 4.1.1),
// beeai and mcp-openinference-js programs, and the fixtures of
// otelmap/assemble/testdata/frameworks (OpenAI Agents, LangGraph
// supervisor, smolagents, CrewAI).
//
//   - openinference.span.kind: AGENT is an agent span, LLM and EMBEDDING
//     are LLM calls, TOOL, RETRIEVER and RERANKER are tool calls; CHAIN and
//     the rest are neither. Its kinds are coarse (LangChain marks AGENT any
//     run with "agent" in its name): the GenAI standard's operation comes
//     first (recognize.TierCoarse).
//   - An AGENT span names its agent by agent.name, else graph.node.id;
//     smolagents' AGENT spans carry neither and are named
//     "<agent name or class>.run" (read when the span has smolagents.*
//     attributes). An AGENT span that names no agent is not an agent: the
//     OpenAI Agents SDK's root "Agent workflow" span, and LangChain runs
//     marked AGENT only because "agent" is in their name.
//   - graph.node.parent_id on an agent span names the agent that handed off
//     to it (the OpenAI Agents SDK), a caller read when nothing else gives
//     one.
//   - A TOOL span named "handoff to <agent>" is a handoff (the OpenAI
//     Agents SDK); so is a transfer_to_<agent> tool (LangGraph supervisor),
//     by the rule every family shares (package recognize, handoff.go).
//   - A handoff tool's arguments may be in input.value.
//   - OpenInference's MCP instrumentation makes no span of its own: it
//     carries the client's context in params._meta, so that the spans the
//     server's tool handler makes are children of the client's tool span,
//     in another process: the tool server's side of that call
//     (otelmap/assemble/toolservers.go).
//
// LangGraph's graph node runs and LangChain's agents, which OpenInference
// records only in its metadata attribute, are the langgraph family's.
package openinference

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the OpenInference family.
var Family recognize.Family = family{}

type family struct{}

// Keys.
const (
	keySpanKind   uint8 = iota // openinference.span.kind (and openinference.*)
	keyGraphNode               // graph.node.id, graph.node.parent_id
	keyAgentName               // agent.name
	keyToolName                // tool.name
	keySmolagents              // smolagents.*
)

// Identities.
const (
	idAgentName = iota // agent.name, graph.node.id
	idSpanName         // smolagents' "<name>.run"
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "openinference",
		Keys: []recognize.Key{
			recognize.Prefix("openinference.", keySpanKind),
			recognize.Prefix("graph.node.", keyGraphNode),
			recognize.Exact(string(otelmap.AttrOIAgentName), keyAgentName),
			recognize.Exact("tool.name", keyToolName),
			recognize.Prefix("smolagents.", keySmolagents),
		},
		Identities: []recognize.Identity{
			idAgentName: {Label: tracedata.IdentityOpenInference, Tier: recognize.NameAttribute},
			idSpanName:  {Label: tracedata.IdentitySpanName, Tier: recognize.NameSpanName},
		},
		ArgumentKeys: []string{"input.value"},
		StepKeys: []recognize.StepKey{
			{Key: "llm.model_name", Is: recognize.StepModel},
			{Key: "llm.token_count.prompt", Is: recognize.StepInputTokens},
			{Key: "llm.token_count.completion", Is: recognize.StepOutputTokens},
			{Key: "llm.token_count.total", Is: recognize.StepTotalTokens},
		},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// OpenInference span kinds.
const (
	kindNone uint8 = iota
	kindAgent
	kindLLM
	kindTool
	kindOther
)

// reader is what the OpenInference attributes say of one span.
type reader struct {
	kind       uint8
	agentName  string // agent.name
	nodeID     string // graph.node.id
	parentID   string // graph.node.parent_id
	tool       string // tool.name
	smolagents bool   // some smolagents.* attribute
}

func (o *reader) Reset() { *o = reader{} }

func (o *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keySpanKind:
		if kv.Key != "openinference.span.kind" {
			return
		}
		r.Claim()
		switch strings.ToUpper(recognize.Quiet(kv)) {
		case "AGENT":
			o.kind = kindAgent
		case "LLM", "EMBEDDING":
			o.kind = kindLLM
		case "TOOL", "RETRIEVER", "RERANKER":
			o.kind = kindTool
		default:
			o.kind = kindOther
		}
	case keyGraphNode:
		switch kv.Key {
		case otelmap.AttrOIGraphNodeID:
			o.nodeID = recognize.Quiet(kv)
		case otelmap.AttrOIGraphNodeParentID:
			o.parentID = recognize.Quiet(kv)
		}
	case keyAgentName:
		o.agentName = recognize.Quiet(kv)
	case keyToolName:
		o.tool = recognize.Quiet(kv)
	case keySmolagents:
		o.smolagents = true
	}
}

func (o *reader) Decide(r *recognize.Reading, sp *otelmap.Span) {
	if o.kind != kindNone {
		r.Understand()
		r.Say(recognize.TierCoarse, recognize.Word{Op: o.operation()})
	}
	if o.kind == kindAgent {
		r.KindAgent()
	}
	if o.agentName != "" {
		r.Name(idAgentName, o.agentName)
	} else {
		r.Name(idAgentName, o.nodeID)
	}
	r.Name(idSpanName, o.smolagentsName(sp.Name))
	if o.kind == kindTool {
		if to, ok := strings.CutPrefix(sp.Name, "handoff to "); ok {
			r.HandoffNamed(strings.TrimSpace(to))
		}
	}
	r.ToolName(o.tool)
}

// Callers names the agent that handed off to an agent span
// (graph.node.parent_id).
func (o *reader) Callers(r *recognize.Reading, _ *otelmap.Span, out []recognize.Caller) []recognize.Caller {
	if o.parentID == "" {
		return out
	}
	return append(out, recognize.Caller{Name: o.parentID, Rank: r.Rank(idAgentName)})
}

// operation classifies openinference.span.kind.
func (o *reader) operation() recognize.Op {
	switch o.kind {
	case kindAgent:
		return recognize.OpInvoke
	case kindLLM:
		return recognize.OpLLM
	case kindTool:
		return recognize.OpTool
	}
	return recognize.OpNone
}

// smolagentsName returns the agent named by a smolagents run span,
// "<name>.run", or "".
func (o *reader) smolagentsName(span string) string {
	if o.kind != kindAgent || !o.smolagents {
		return ""
	}
	if name, ok := strings.CutSuffix(span, ".run"); ok {
		return name
	}
	return ""
}
