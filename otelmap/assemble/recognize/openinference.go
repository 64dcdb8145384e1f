package recognize

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// OpenInference (Arize), the conventions of its instrumentations for the
// OpenAI Agents SDK, LangChain/LangGraph, CrewAI, smolagents and others.
//
//   - openinference.span.kind: AGENT is an agent span, LLM and EMBEDDING
//     are LLM calls, TOOL, RETRIEVER and RERANKER are tool calls; CHAIN and
//     the rest are neither.
//   - An AGENT span names its agent by agent.name, else graph.node.id;
//     smolagents' AGENT spans carry neither and are named
//     "<agent name or class>.run" (read when the span has smolagents.*
//     attributes). An AGENT span that names no agent is not an agent: the
//     OpenAI Agents SDK's root "Agent workflow" span, and LangChain runs
//     marked AGENT only because "agent" is in their name.
//   - graph.node.parent_id on an agent span names the agent that handed off
//     to it (the OpenAI Agents SDK), a caller read when nothing else gives
//     one.
//   - A TOOL span named "handoff to <agent>" (output.value the target)
//     is a handoff, and so is a transfer_to_<agent> tool (LangGraph
//     supervisor): handoff.go.
//   - LangGraph names agents nowhere but in its graph's node runs: the
//     metadata JSON of every LangChain run holds langgraph_node and
//     langgraph_checkpoint_ns. A run whose name is its langgraph_node, at
//     the top of the graph (a checkpoint namespace without "|"), directly
//     under a run of the same name and node, is a compiled agent graph run
//     as a node (create_react_agent(name=...), a supervisor): both runs are
//     that agent's spans. Plain nodes ("tools", "agent" inside a react
//     agent, a function node) have no such pair and name no agent.

// OpenInference span kinds.
const (
	oiNone uint8 = iota
	oiAgent
	oiLLM
	oiTool
	oiOther
)

// oiSlots is what the OpenInference attributes say.
type oiSlots struct {
	kind       uint8
	agentName  string // agent.name
	nodeID     string // graph.node.id
	parentID   string // graph.node.parent_id
	tool       string // tool.name
	output     string // output.value
	smolagents bool   // some smolagents.* attribute
}

// readOpenInference reads one OpenInference attribute.
func (r *Reading) readOpenInference(kv *attribute.KeyValue, key string) {
	o := &r.oi
	switch key {
	case "openinference.span.kind":
		r.claim(famOpenInference)
		switch strings.ToUpper(quiet(kv)) {
		case "AGENT":
			o.kind = oiAgent
		case "LLM", "EMBEDDING":
			o.kind = oiLLM
		case "TOOL", "RETRIEVER", "RERANKER":
			o.kind = oiTool
		default:
			o.kind = oiOther
		}
	case string(otelmap.AttrOIAgentName):
		o.agentName = quiet(kv)
	case string(otelmap.AttrOIGraphNodeID):
		o.nodeID = quiet(kv)
	case string(otelmap.AttrOIGraphNodeParentID):
		o.parentID = quiet(kv)
	case "tool.name":
		o.tool = quiet(kv)
	case "output.value":
		o.output = quiet(kv)
	case "metadata":
		if v := quiet(kv); strings.Contains(v, `"langgraph_node"`) || strings.Contains(v, `"lc_agent_name"`) {
			r.metadata = v
		}
	}
}

// operation classifies openinference.span.kind.
func (o *oiSlots) operation() Op {
	switch o.kind {
	case oiAgent:
		return OpInvoke
	case oiLLM:
		return OpLLM
	case oiTool:
		return OpTool
	}
	return OpNone
}

// smolagentsName returns the agent named by a smolagents run span,
// "<name>.run", or "".
func (o *oiSlots) smolagentsName(span string) string {
	if o.kind != oiAgent || !o.smolagents {
		return ""
	}
	if name, ok := strings.CutSuffix(span, ".run"); ok {
		return name
	}
	return ""
}

// LangChainMeta is the part of a LangChain run's metadata (OpenInference's
// metadata attribute) that places it in a LangGraph graph, or names the
// LangChain agent it runs in.
type LangChainMeta struct {
	Node  string `json:"langgraph_node"`          // the graph node the run is part of
	NS    string `json:"langgraph_checkpoint_ns"` // "|" in it: a subgraph's
	Agent string `json:"lc_agent_name"`           // the createAgent agent the run is in
}

// LangChainMeta returns what the span's LangChain metadata says, false
// when it has none.
func (r *Reading) LangChainMeta() (LangChainMeta, bool) {
	if r.metadata == "" {
		return LangChainMeta{}, false // tested first: m escapes to the decoder
	}
	var m LangChainMeta
	if json.Unmarshal([]byte(r.metadata), &m) != nil {
		return LangChainMeta{}, false
	}
	return m, true
}
