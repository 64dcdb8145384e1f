// Package tracedata is coordbench's model of one interaction trace: the steps
// (agent calls, LLM and tool calls, the assessor's own work), the agents that
// took part, the interactions between them, and how much of the trace was
// observed. Evaluators read only this model, so they know nothing of
// OpenTelemetry or A2A. The Step type doubles as the step of the A2A
// Traceability Extension, so a ResponseTrace encodes and decodes with
// encoding/json.
//
// This package imports nothing of coordbench's.
package tracedata

import (
	"time"
)

// CallType says what kind of operation a step is, as the Traceability
// Extension names them.
type CallType string

// The call types of the Traceability Extension.
const (
	CallAgent CallType = "AGENT" // a call to or from an agent
	CallTool  CallType = "TOOL"  // an LLM or tool call
	CallHost  CallType = "HOST"  // the host (assessor) application's own work
)

// Valid reports whether c is one of the known call types.
func (c CallType) Valid() bool {
	return c == CallAgent || c == CallTool || c == CallHost
}

// TraceData is one trace rebuilt from its spans.
type TraceData struct {
	TraceID string `json:"trace_id"`
	// Start and End span the earliest start and latest end of all steps.
	Start time.Time `json:"start_time"`
	End   time.Time `json:"end_time"`
	// DurationMS is End-Start in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Steps are ordered by start time, then step id.
	Steps []Step `json:"steps"`
	// Agents are the graph's nodes, ordered by name.
	Agents []Agent `json:"agents"`
	// Interactions are the graph's edges (caller -> callee), ordered by
	// (From, To).
	Interactions []Interaction `json:"interactions"`
	Coverage     Coverage      `json:"coverage"`
}

// Agent is one node of the agent graph.
type Agent struct {
	Name string `json:"name"`
	// ID is gen_ai.agent.id where a span carried one.
	ID string `json:"id,omitempty"`
	// Aliases are other names the agent went by in the trace, sorted: the
	// name of an in-process proxy that stood for it (an agent span whose
	// only work was to call this agent in another process, such as Google
	// ADK's RemoteA2aAgent), which is not a node of its own.
	Aliases []string `json:"aliases,omitempty"`
	// IdentifiedBy says which rule named the agent: one of the Identity
	// constants.
	IdentifiedBy string `json:"identified_by"`
	// Virtual marks a node known only by an address or a placeholder: the
	// server.address of an unpaired client span that names no agent, "user"
	// for a root server span, "unknown" for a server span whose caller's
	// spans are missing. A callee named by gen_ai.agent.name is not virtual
	// even if it emitted nothing: it is a participant, and counts.
	Virtual bool `json:"virtual,omitempty"`
	// Role is "assessor" for the green agent's own node, which like virtual
	// nodes is drawn but left out of graph metrics by default.
	Role string `json:"role,omitempty"`
	// Steps counts the steps attributed to this agent.
	Steps int `json:"steps"`
	// Errors counts those of its steps that ended in error.
	Errors int `json:"errors"`
}

// How an agent was identified, in the order the rules are tried.
const (
	IdentityAgentName = "gen_ai.agent.name"
	// IdentityOpenInference: OpenInference's agent.name, else its
	// graph.node.id, on an AGENT span.
	IdentityOpenInference = "agent.name"
	// IdentityTraceloop: OpenLLMetry's traceloop.entity.name on an agent
	// span.
	IdentityTraceloop = "traceloop.entity.name"
	// IdentityVercelAI: the Vercel AI SDK's ai.telemetry.functionId on an
	// ai.generateText, ai.streamText, ai.generateObject or ai.streamObject
	// span.
	IdentityVercelAI = "ai.telemetry.functionId"
	// IdentityGenkit: Genkit's genkit:name on a prompt (genkit:type
	// dotprompt) or agent (genkit:metadata:subtype agent) span.
	IdentityGenkit = "genkit:name"
	// IdentityVoltAgentSubagent: VoltAgent's subagent.name (else
	// subagent.id) on a sub-agent's run.
	IdentityVoltAgentSubagent = "subagent.name"
	// IdentityVoltAgent: VoltAgent's entity.name (else entity.id) on the
	// run of an agent the application started.
	IdentityVoltAgent = "entity.name"
	// IdentityAx: the function name (tool.name) of the Ax native tool call
	// an AxAgent's run is the body of (Ax names a child agent
	// toCamelCase(agentIdentity.name) when it is handed over by
	// getFunction()).
	IdentityAx      = "tool.name"
	IdentityAgentID = "gen_ai.agent.id"
	// IdentityConventions: a rule of the user's convention map
	// (otelmap/assemble, docs/trace-assembly.md).
	IdentityConventions = "conventions"
	// IdentitySpanName: the agent's name read from span names where a
	// framework names agents nowhere else (smolagents' "<agent>.run",
	// LangGraph's graph node runs).
	IdentitySpanName    = "span.name"
	IdentityServiceName = "service.name"
	IdentityServerAddr  = "server.address"
	IdentityUser        = "user"
	IdentityExtension   = "extension"
	// IdentityUnknown names an agent no rule could name: spans of a
	// resource without service.name, the caller of a server span whose
	// parent is missing, the callee of a client span naming no agent and
	// no address.
	IdentityUnknown = "unknown"
)

// RoleAssessor is Agent.Role of the assessor's node.
const RoleAssessor = "assessor"

// RoleToolServer is Agent.Role of a tool server's node: an MCP server (or a
// process that ran a tool for an agent in another process), reached by
// tool calls, not an agent (docs/trace-assembly.md#mcp-calls).
const RoleToolServer = "tool_server"

// Measured reports whether graph metrics include the agent by default: real
// participants, not virtual nodes, the assessor or tool servers (drawn and
// reported beside the agents; docs/evaluators.md).
func (a *Agent) Measured() bool {
	return !a.Virtual && a.Role != RoleAssessor && a.Role != RoleToolServer
}

// UserAgent is the virtual caller of a root server span.
const UserAgent = "user"

// UnknownAgent is the name of an agent no rule could name (see
// IdentityUnknown).
const UnknownAgent = "unknown"

// Interaction is one edge of the agent graph: every call From made to To.
type Interaction struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Count  int    `json:"count"`
	Errors int    `json:"errors"`
	// LatenciesMS holds one latency per call, in call start order.
	LatenciesMS []float64 `json:"latencies_ms"`
	// How the calls were observed; the counts add up to Count.
	BothSides     int `json:"both_sides"`
	ClientOnly    int `json:"client_only"`
	ServerOnly    int `json:"server_only"`
	InProcess     int `json:"in_process"`
	ExtensionOnly int `json:"extension_only"`
}

// Coverage states how much of the trace's interactions was observed, so a
// graph built from half the spans says so.
type Coverage struct {
	// Interactions is the number of calls (the sum of Interaction.Count).
	Interactions  int `json:"interactions"`
	BothSides     int `json:"both_sides"`
	ClientOnly    int `json:"client_only"`
	ServerOnly    int `json:"server_only"`
	InProcess     int `json:"in_process"`
	ExtensionOnly int `json:"extension_only"`
	// Complete is the share of interactions observed in full (both sides or
	// in process), 0..1. A trace with no interactions is complete (1) only
	// when it has an agent named by a span of its own (not only by
	// service.name) and no span that looks like an agent's, nor any of an
	// agent namespace (UnreadNamespaces), went unread; otherwise it is no
	// evidence (NoEvidence) and Complete is 0.
	Complete float64 `json:"complete"`
	// NoEvidence says the trace shows no interaction and cannot be taken to
	// show that there was none: it has no agent at all, or spans that look
	// like an agent's work that no rule could read (UnreadAgentSpans). An
	// empty graph is then "no evidence", never "complete".
	NoEvidence bool `json:"no_evidence,omitempty"`
	// Recognized counts, by convention family, the spans whose conventions
	// assembly read ("genai", "openinference", "openllmetry", ...: see
	// docs/trace-assembly.md); a span carrying several families counts in
	// each. Unrecognized counts the spans no family recognized: they are
	// placed in the tree but say nothing about agents.
	Recognized   map[string]int `json:"recognized"`
	Unrecognized int            `json:"unrecognized"`
	// UnreadAgentSpans counts spans that look like an agent's work (an
	// AGENT span kind, an invoke_agent operation, "agent" in the name of a
	// span nothing else recognized) but name no agent any rule reads, and
	// sit neither inside nor above a span that does: whatever they did is
	// missing from the graph. A warning names the first of them.
	UnreadAgentSpans int `json:"unread_agent_spans"`
	// UnreadNamespaces counts, by agent or GenAI namespace ("ai.*",
	// "mastra.*", "genkit:*", "gen_ai.*"), the spans that carry attributes
	// of that namespace yet that no rule could read as anything (no step,
	// no agent, no handoff, no orchestration): agent work the graph may
	// lack. A trace with any is never complete evidence; with no
	// interaction it is no evidence (NoEvidence). Absent when there are
	// none.
	UnreadNamespaces map[string]int `json:"unread_namespaces,omitempty"`
	// UnwiredAgents counts the agents that share the trace with another
	// agent and that no call reaches (no call, handoff, nesting or message
	// the rules read): the tops of the graph, when there are several, or
	// one beside an agent called from outside the team. The trace joins
	// them and no span says how control passed: the graph lacks those
	// edges. A trace with any is never complete evidence; a warning names
	// them and the span that holds them all (docs/trace-assembly.md,
	// "Agents that share a trace").
	UnwiredAgents int `json:"unwired_agents,omitempty"`
	// Fragment, when set, says why the trace is a fragment: it begins with
	// a call received from a caller it does not hold (a server span whose
	// instrumentation reads no trace context, a message consumed, a span
	// linked to a span of another trace). A fragment is never complete
	// evidence (docs/trace-assembly.md, "A trace that begins with a
	// received call").
	Fragment string `json:"fragment,omitempty"`
	// JoinedTraces lists, sorted, the other traces read as part of this
	// one: fragments of one run joined by span links.
	JoinedTraces []string `json:"joined_traces,omitempty"`
	// SharedServices lists, by service.name, the endpoints of each process
	// that names no agent on its spans (its service.name is its agent) yet
	// received calls at several local ports or served A2A agent cards from
	// several bases: it hosts several agents, which the graph merges into
	// one. A trace with any is no evidence of the team's structure. A
	// warning names each. Absent when there are none.
	SharedServices map[string][]string `json:"shared_services,omitempty"`
	// Spans counts the spans the trace was built from, by the road they came:
	// "in_process", "otlp", "extension".
	Spans         int            `json:"spans"`
	SpansBySource map[string]int `json:"spans_by_source"`
	// Services lists the distinct service.name values seen, sorted.
	Services []string `json:"services"`
	// Warnings name what was odd in the input (missing parents, wrong
	// attribute types), deduplicated and sorted.
	Warnings []string `json:"warnings,omitempty"`
}

// Step is one operation of a trace. Its JSON form is the Step of the A2A
// Traceability Extension; the fields marked "coordbench" are additions that
// other consumers ignore.
type Step struct {
	StepID       string   `json:"step_id"`
	TraceID      string   `json:"trace_id"`
	ParentStepID string   `json:"parent_step_id,omitempty"`
	CallType     CallType `json:"call_type"`
	Name         string   `json:"name,omitempty"`
	// Parameters are a tool call's arguments.
	Parameters map[string]any `json:"parameters,omitempty"`
	// Requests is what an agent call sent.
	Requests map[string]any `json:"requests,omitempty"`
	// StepType is free text such as "tool_call" or "agent_call".
	StepType             string         `json:"step_type,omitempty"`
	Cost                 float64        `json:"cost,omitempty"`
	TotalTokens          int64          `json:"total_tokens,omitempty"`
	AdditionalAttributes map[string]any `json:"additional_attributes,omitempty"`
	// Latency is EndTime-StartTime in whole milliseconds, as the extension
	// defines it; LatencyMS keeps the fraction.
	Latency   int64     `json:"latency"`
	StartTime time.Time `json:"start_time"`
	EndTime   time.Time `json:"end_time"`
	Error     string    `json:"error,omitempty"`

	// coordbench: the agent that did the work of this step (for an agent
	// call, the callee), and for an agent call the caller.
	Agent  string `json:"agent,omitempty"`
	Caller string `json:"caller,omitempty"`
	// coordbench: LatencyMS with sub-millisecond precision.
	LatencyMS float64 `json:"latency_ms,omitempty"`
	// coordbench: message text sent and received, where content was captured.
	Input  string `json:"input,omitempty"`
	Output string `json:"output,omitempty"`
	// coordbench: the model of an LLM call.
	Model string `json:"model,omitempty"`
}

// Failed reports whether the step ended in error.
func (s *Step) Failed() bool { return s.Error != "" }

// Duration returns EndTime-StartTime, never negative.
func (s *Step) Duration() time.Duration {
	if d := s.EndTime.Sub(s.StartTime); d > 0 {
		return d
	}
	return 0
}

// AgentNames returns the names of the agents, in the trace's order.
func (t *TraceData) AgentNames() []string {
	names := make([]string, len(t.Agents))
	for i, a := range t.Agents {
		names[i] = a.Name
	}
	return names
}

// Agent returns the agent called name, or nil.
func (t *TraceData) Agent(name string) *Agent {
	for i := range t.Agents {
		if t.Agents[i].Name == name {
			return &t.Agents[i]
		}
	}
	return nil
}
