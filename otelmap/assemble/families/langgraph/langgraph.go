// Package langgraph is the convention family of LangGraph's graphs and
// LangChain's agents, which name their agents nowhere but in the metadata
// of their runs: the langgraph_node and langgraph_checkpoint_ns of every
// run in a graph, and LangChain v1 create_agent's lc_agent_name. That
// metadata reaches coordbench through whichever exporter the user picked,
// each writing it in a shape of its own (metadata.go): OpenInference's
// metadata JSON, LangSmith's langsmith.metadata.* attributes, Langfuse's
// langfuse.observation.metadata.* attributes. This family is the one
// reading of it: the same runs make the same agents whatever the exporter.
// It claims no span: coverage.recognized counts those spans under the
// family that read their kind (openinference, genai for LangSmith's
// gen_ai.operation.name, langfuse). Checked on the live corpus's
// langgraph-supervisor-js and langgraph-swarm-js (@langchain/langgraph
// 1.7.3, langgraph-supervisor 1.1.3, langgraph-swarm 1.0.4; through
// @arizeai/openinference-instrumentation-langchain 4.1.1, and through
// @langfuse/langchain 5.11.1 in their captures-langfuse/),
// langchain-subagents-js (langchain 1.5.14) and deepagents (deepagents
// 1.14.1), langgraph-supervisor-py (langgraph 1.2.24, langgraph-supervisor
// 0.0.31; openinference-instrumentation-langchain 0.1.80, and langfuse
// 5.0.4's CallbackHandler in its captures-langfuse/) and
// langgraph-swarm-langsmith-py (langgraph-swarm 0.1.0, langchain 1.5.2;
// langsmith[otel] 0.15.1) programs, and on the langgraph-supervisor
// fixture of otelmap/assemble/testdata/frameworks.
//
//   - A compiled agent graph run as a node of the outermost graph
//     (create_react_agent(name=...), create_agent(name=...), a supervisor)
//     is recorded as the node's run (its name the node's, a checkpoint
//     namespace without "|") with, under it, a run of the same name, node
//     and namespace whose own nodes run one namespace deeper: the graph's
//     run. Between the two there may be wrappers of the same node and
//     namespace (langgraph-supervisor Python's call_agent, which trims the
//     worker's output). Every run of that chain is the agent's span, named
//     by the node. A plain node ("tools", a function node, a node whose
//     function calls a runnable of its own name) has no such pair and names
//     no agent.
//   - LangChain v1 create_agent puts lc_agent_name in the metadata of every
//     run inside the agent: the outermost run of each named agent (one
//     whose parent in its process is not a run of the same agent, and that
//     is no model or tool call) is its agent span, the runs inside it its
//     work. A sub-agent run from the caller's tool names itself, so its
//     outermost run sits in the caller's TOOL span: a call by nesting (the
//     TOOL span's tool.name is the tool's, not the sub-agent's). deepagents'
//     task tool names each sub-agent by its subagent_type.
//   - Whether a run inside a graph is an agent is said by its metadata
//     alone. An exporter's agent kind given by a run's name (OpenInference
//     marks AGENT, and Langfuse's Python CallbackHandler types "agent",
//     every run with "agent" in its name or class path: a react agent's
//     "agent" node, langgraph-supervisor's "call_agent") names no agent.
//   - Exporters that disagree on one run's metadata are believed in none
//     of what they disagree on (a warning names the key).
//   - LangGraph's handoff tools raise ParentCommand (a Command routed to
//     the parent graph) and its interrupts pause a graph for a human: all
//     are its GraphBubbleUp family, which LangGraph itself does not treat
//     as errors. A span that fails with one of them fails nothing
//     (controlflow.go), unless it is the run of a whole graph that no node
//     holds: there it escaped to the graph's caller.
package langgraph

import (
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

// Keys.
const (
	keyOpenInference uint8 = iota // metadata (JSON)
	keyLangSmith                  // langsmith.metadata.*
	keyLangfuse                   // langfuse.observation.metadata.*
	keyLangfuseType               // langfuse.observation.type
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "langgraph",
		Keys: []recognize.Key{
			recognize.Exact("metadata", keyOpenInference),
			recognize.Prefix(langsmithPrefix, keyLangSmith),
			recognize.Prefix(langfusePrefix, keyLangfuse),
			recognize.Exact("langfuse.observation.type", keyLangfuseType),
		},
		Identities: []recognize.Identity{
			// As OpenInference names an agent (agent.name), which LangChain
			// agents' metadata stands in for.
			idAgentName: {Label: tracedata.IdentityOpenInference, Tier: recognize.NameAttribute},
			idSpanName:  {Label: tracedata.IdentitySpanName, Tier: recognize.NameSpanName},
		},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// graphRun is a run of the outermost graph's nodes (a checkpoint namespace
// without "|"), a candidate for a node's run, a wrapper or a compiled
// graph's run.
type graphRun struct {
	span     int32
	node, ns string
	named    bool // its name is its node's
}

// innerRun is a run one namespace inside a node of the outermost graph: a
// node of a graph run as that node.
type innerRun struct {
	span int32
	ns   string
}

// agentRun is a LangChain run that names the createAgent agent it runs in.
type agentRun struct {
	span int32
	name string
}

// reader keeps the metadata of the span being read, and across the spans
// of an assembly the runs its pass looks at.
type reader struct {
	src      [numSources]runMeta
	oiJSON   string // OpenInference's metadata, decoded when kept
	lfAgent  bool   // langfuse.observation.type=agent
	nodeRuns []graphRun
	inner    []innerRun
	runs     []agentRun // runs naming their agent
}

func (m *reader) Reset() {
	m.src = [numSources]runMeta{}
	m.oiJSON, m.lfAgent = "", false
}

func (m *reader) Attr(_ *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keyOpenInference:
		m.oiJSON = recognize.Quiet(kv)
	case keyLangSmith:
		readFlat(&m.src[srcLangSmith], kv, langsmithPrefix)
	case keyLangfuse:
		readFlat(&m.src[srcLangfuse], kv, langfusePrefix)
	case keyLangfuseType:
		m.lfAgent = recognize.Quiet(kv) == "agent"
	}
}

// Decide takes back an agent kind Langfuse's CallbackHandler gave a run
// inside a graph by its name: LangGraph runs are agents by their metadata
// (pass.go), as they are through every other exporter. Said in a
// framework's word, it comes before Langfuse's (the registry lists this
// family first); the span still looks like an agent's, so that one no
// rule names is counted unread.
func (m *reader) Decide(r *recognize.Reading, _ *otelmap.Span) {
	if lf := &m.src[srcLangfuse]; m.lfAgent && (lf.node != "" || lf.agent != "") {
		r.Say(recognize.TierFramework, recognize.Word{Understood: true})
		r.KindAgent()
	}
}

func (m *reader) Begin() { m.nodeRuns, m.inner, m.runs = m.nodeRuns[:0], m.inner[:0], m.runs[:0] }

// Keep keeps span i when its metadata, read from every exporter's copy,
// places it in a node of the outermost graph or one level inside one, or
// names the LangChain agent it runs in.
func (m *reader) Keep(r *recognize.Reading, sp *otelmap.Span, i int32) {
	if m.oiJSON != "" {
		readJSON(&m.src[srcOpenInference], m.oiJSON)
	}
	md, conflict := merged(&m.src)
	if conflict != "" {
		r.Warn(conflict, "differs between the exporters that recorded the run: read from none of them")
	}
	if md.agent != "" {
		m.runs = append(m.runs, agentRun{span: i, name: md.agent})
	}
	if md.node == "" || md.ns == "" {
		return
	}
	if topLevel(md.ns) {
		m.nodeRuns = append(m.nodeRuns, graphRun{span: i, node: md.node, ns: md.ns, named: sp.Name == md.node})
	} else if k := strings.IndexByte(md.ns, '|'); strings.IndexByte(md.ns[k+1:], '|') < 0 {
		m.inner = append(m.inner, innerRun{span: i, ns: md.ns})
	}
}
