// Package langgraph is the convention family of LangGraph's graphs and
// LangChain's agents, which name their agents nowhere but in the metadata
// of their runs: the langgraph_node and langgraph_checkpoint_ns of every
// run in a graph, and LangChain v1 createAgent's lc_agent_name. Its spans
// reach coordbench through OpenInference's LangChain instrumentation,
// which copies a run's metadata into its metadata attribute as JSON (read
// here; the span's kind is the openinference family's). It claims no
// span: coverage.recognized counts those spans under openinference.
// Checked on the live corpus's langgraph-supervisor-js and
// langgraph-swarm-js (@langchain/langgraph 1.7.3, langgraph-supervisor
// 1.1.3, langgraph-swarm 1.0.4), langchain-subagents-js (langchain
// 1.5.14) and deepagents (deepagents 1.14.1) programs, all through
// @arizeai/openinference-instrumentation-langchain 4.1.1, and on the
// langgraph-supervisor fixture of otelmap/assemble/testdata/frameworks.
//
//   - A run whose name is its langgraph_node, at the top of the graph (a
//     checkpoint namespace without "|"), directly under a run of the same
//     name and node in its process, is a compiled agent graph run as a
//     node (create_react_agent(name=...), a supervisor): both runs are
//     that agent's spans, named by the span's name. Plain nodes ("tools",
//     "agent" inside a react agent, a function node) have no such pair and
//     name no agent.
//   - LangChain v1 createAgent({name}) puts lc_agent_name in the metadata
//     of every run inside the agent: the outermost run of each named agent
//     (one whose parent in its process is not a run of the same agent, and
//     that is no model or tool call) is its agent span, the runs inside it
//     its work. A sub-agent run from the caller's tool names itself, so its
//     outermost run sits in the caller's TOOL span: a call by nesting (the
//     TOOL span's tool.name is the tool's, not the sub-agent's). deepagents'
//     task tool names each sub-agent by its subagent_type.
//   - LangGraph's handoff tools raise ParentCommand (a Command routed to
//     the parent graph) and its interrupts pause a graph for a human: all
//     are its GraphBubbleUp family, which LangGraph itself does not treat
//     as errors. A span that fails with one of them fails nothing
//     (ControlFlow).
package langgraph

import (
	"encoding/json"
	"regexp"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the LangGraph and LangChain family.
var Family recognize.Family = family{}

type family struct{}

// Identities.
const (
	idAgentName = iota // lc_agent_name
	idSpanName         // a graph node run's name
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "langgraph",
		Keys: []recognize.Key{recognize.Exact("metadata", 0)},
		Identities: []recognize.Identity{
			// As OpenInference names an agent (agent.name), which LangChain
			// agents' metadata stands in for.
			idAgentName: {Label: tracedata.IdentityOpenInference, Tier: recognize.NameAttribute},
			idSpanName:  {Label: tracedata.IdentitySpanName, Tier: recognize.NameSpanName},
		},
	}
}

// controlFlow are the exception types LangGraph raises to move control,
// recorded as an error status with an exception event though nothing
// failed: subclasses of its GraphBubbleUp.
var controlFlow = regexp.MustCompile(`^(ParentCommand|GraphBubbleUp|GraphInterrupt|NodeInterrupt)$`)

// ControlFlow reports whether sp failed with one of LangGraph's
// control-flow exceptions.
func (family) ControlFlow(_ *otelmap.Span, types []string) bool {
	for _, t := range types {
		if controlFlow.MatchString(t) {
			return true
		}
	}
	return false
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// meta is the part of a LangChain run's metadata that places it in a
// LangGraph graph, or names the LangChain agent it runs in.
type meta struct {
	Node  string `json:"langgraph_node"`          // the graph node the run is part of
	NS    string `json:"langgraph_checkpoint_ns"` // "|" in it: a subgraph's
	Agent string `json:"lc_agent_name"`           // the createAgent agent the run is in
}

// agentRun is a LangChain run that names the createAgent agent it runs in.
type agentRun struct {
	span int32
	name string
}

// reader keeps the metadata of the span being read, and across the spans
// of an assembly the runs its pass looks at.
type reader struct {
	metadata string // metadata JSON that holds langgraph_node or lc_agent_name

	nodes []int32    // candidate graph node runs
	runs  []agentRun // runs naming their agent
}

func (m *reader) Reset() { m.metadata = "" }

func (m *reader) Attr(_ *recognize.Reading, kv *attribute.KeyValue, _ uint8) {
	if v := recognize.Quiet(kv); strings.Contains(v, `"langgraph_node"`) || strings.Contains(v, `"lc_agent_name"`) {
		m.metadata = v
	}
}

func (m *reader) Decide(*recognize.Reading, *otelmap.Span) {}

func (m *reader) Begin() { m.nodes, m.runs = m.nodes[:0], m.runs[:0] }

// Keep keeps span i as a candidate graph node run when its name is its
// node's, at the top of the graph, and as a run of a named LangChain agent
// when its metadata names one.
func (m *reader) Keep(_ *recognize.Reading, sp *otelmap.Span, i int32) {
	if m.metadata == "" {
		return
	}
	var md meta
	if json.Unmarshal([]byte(m.metadata), &md) != nil {
		return
	}
	if md.Agent != "" {
		m.runs = append(m.runs, agentRun{span: i, name: md.Agent})
	}
	if md.Node == "" || md.Node != sp.Name || strings.Contains(md.NS, "|") {
		return
	}
	m.nodes = append(m.nodes, i)
}
