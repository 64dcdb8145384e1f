package assemble

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
//     supervisor): recognize_handoff.go.
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
func (r *reading) readOpenInference(kv *attribute.KeyValue, key string) {
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
func (o *oiSlots) operation() uint8 {
	switch o.kind {
	case oiAgent:
		return opInvoke
	case oiLLM:
		return opLLM
	case oiTool:
		return opTool
	}
	return opNone
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

// langGraphMeta is the part of a LangChain run's metadata that places it
// in a LangGraph graph, or names the LangChain agent it runs in.
type langGraphMeta struct {
	Node  string `json:"langgraph_node"`
	NS    string `json:"langgraph_checkpoint_ns"`
	Agent string `json:"lc_agent_name"`
}

// lcAgentRun is a LangChain run that names the createAgent agent it runs
// in (metadata.lc_agent_name).
type lcAgentRun struct {
	span int32
	name string
}

// langGraphNode keeps node i as a candidate LangGraph agent run when its
// name is its node's, at the top of the graph, and as a run of a named
// LangChain agent when its metadata names one.
func (a *assembler) langGraphNode(i int32, sp *otelmap.Span, metadata string) {
	var m langGraphMeta
	if json.Unmarshal([]byte(metadata), &m) != nil {
		return
	}
	if m.Agent != "" {
		a.lcRuns = append(a.lcRuns, lcAgentRun{span: i, name: m.Agent})
	}
	if m.Node == "" || m.Node != sp.Name || strings.Contains(m.NS, "|") {
		return
	}
	a.lgNodes = append(a.lgNodes, i)
}

// resolveLangGraph makes agent spans of the candidate node runs that come
// in pairs: a run directly under a run of the same node. Called once the
// parents are known, before structure.
func (a *assembler) resolveLangGraph() {
	a.resolveLCAgents()
	if len(a.lgNodes) == 0 {
		return
	}
	cand := make(map[int32]bool, len(a.lgNodes))
	for _, i := range a.lgNodes {
		cand[i] = true
	}
	for _, i := range a.lgNodes {
		p := a.nodes[i].parent
		if p < 0 || !cand[p] || a.span(p).Name != a.span(i).Name || a.nodes[p].proc != a.nodes[i].proc {
			continue
		}
		for _, x := range [2]int32{p, i} {
			n := &a.nodes[x]
			if n.selfIdent >= 0 && n.flags&fAgent != 0 {
				continue
			}
			n.selfIdent = a.intern(a.span(x).Name)
			a.note(n.selfIdent, rankSpanName, false)
			n.flags |= fAgent | fMarker | fStep
			n.flags &^= fAgentLike
			n.op, n.callType, n.role = opInvoke, ctAgent, roleInternal
		}
	}
}

// resolveLCAgents makes agent spans of the outermost runs of each named
// LangChain agent (LangChain v1 createAgent({name}) puts lc_agent_name in
// the metadata of every run inside the agent): a run whose parent in its
// process is not a run of the same agent. Runs inside it are its work; a
// sub-agent run from the caller's tool names itself, so its outermost run
// sits in the caller's TOOL span, a call by nesting. The TOOL span's
// tool.name is the tool's, not the sub-agent's.
func (a *assembler) resolveLCAgents() {
	if len(a.lcRuns) == 0 {
		return
	}
	nameOf := make(map[int32]string, len(a.lcRuns))
	for _, r := range a.lcRuns {
		nameOf[r.span] = r.name
	}
	for _, r := range a.lcRuns {
		n := &a.nodes[r.span]
		if p := n.parent; p >= 0 && a.nodes[p].proc == n.proc && nameOf[p] == r.name {
			continue
		}
		if n.flags&fAgent != 0 && n.selfIdent >= 0 {
			continue // named by a rule of its own
		}
		if n.op == opLLM || n.op == opTool {
			continue // a model or tool call is no agent's run, whatever its metadata
		}
		n.selfIdent = a.intern(r.name)
		a.note(n.selfIdent, rankOpenInference, false)
		n.flags |= fAgent | fMarker | fStep
		n.flags &^= fAgentLike
		n.op, n.callType, n.role = opInvoke, ctAgent, roleInternal
	}
}
