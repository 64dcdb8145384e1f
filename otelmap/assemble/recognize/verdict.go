package recognize

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/tracedata"
)

// Verdict is what a span is, as the families read it (decide, by the
// precedence in reading.go): all that assembly needs of the span's
// attributes to place it in calls, steps and agents.
type Verdict struct {
	Role Role // the side of a call the span records
	Op   Op   // the operation, by the first family that says one
	// Step is the call type of the step the span is, CallNone for no
	// step: coordbench.call_type when set, else an agent span's AGENT,
	// else TOOL for an LLM or tool operation.
	Step CallType
	// Agent: an agent span, an invoke_agent operation in any family or in
	// the user's convention map, or coordbench.call_type AGENT.
	Agent bool
	// Marker marks an agent call for a chain of client spans: an agent
	// span, or any a2a.* attribute.
	Marker bool

	AgentName string // the agent the span names ("" for none)
	AgentRank Rank   // the rule that named it
	AgentID   string // gen_ai.agent.id

	Failed  bool // error.type, a failed or rejected A2A task state
	Ext     bool // coordbench.source=extension: rebuilt from the Traceability Extension
	HasAddr bool // server.address
	MCP     bool // an MCP request's span (mcp.go)

	Workflow  bool // an orchestration: never an agent, not a step
	AgentLike bool // looks like an agent's work but names no agent
	// UnnamedAgent: an agent run by its framework's own word whose name no
	// attribute records (an AI SDK call without ai.telemetry.functionId, a
	// Genkit generate no prompt or agent ran): counted as unread even
	// inside another agent's work, where it is a sub-agent.
	UnnamedAgent bool

	Handoff     bool   // hands control to another agent (handoff.go)
	HandoffTo   string // the target, "" when not named
	HandoffFrom string // the agent handing off, when the span names it
	CallerBy    string // a caller named on the callee's span (graph.node.parent_id)
	// GenkitGenerate: a Genkit generate loop, an agent's work only when a
	// prompt or an agent runs it (genkit.go).
	GenkitGenerate bool

	Claimed Families // the families that read something on the span
}

// Role is the side of a call a span records. By default PRODUCER and
// CONSUMER spans take the client and server sides, as the Collector's
// servicegraph connector pairs them; UNSPECIFIED is taken as INTERNAL.
type Role uint8

// Span roles.
const (
	RoleInternal Role = iota
	RoleServer
	RoleClient
)

// SpanKindRole is the role a span's kind gives it before any family reads
// it.
func SpanKindRole(k trace.SpanKind) Role {
	switch k {
	case trace.SpanKindServer, trace.SpanKindConsumer:
		return RoleServer
	case trace.SpanKindClient, trace.SpanKindProducer:
		return RoleClient
	}
	return RoleInternal
}

// Op is a GenAI operation class.
type Op uint8

// Operations.
const (
	OpNone Op = iota
	OpInvoke
	OpLLM
	OpTool
)

// CallType is the call type of a step.
type CallType uint8

// Call types; CallNone is no step.
const (
	CallNone CallType = iota
	CallAgent
	CallTool
	CallHost
)

// Tracedata returns the tracedata call type, "" for CallNone.
func (c CallType) Tracedata() tracedata.CallType {
	switch c {
	case CallAgent:
		return tracedata.CallAgent
	case CallTool:
		return tracedata.CallTool
	case CallHost:
		return tracedata.CallHost
	}
	return ""
}

// Rank says how an agent was identified: identity ranks, best first, in
// the order docs/trace-assembly.md gives for identified_by. The lowest
// rank an identity was seen with says how it was identified. The reading
// names agents by the ranks up to RankSpanName and RankExtension;
// assembly names the others (a process's service, a server's address, the
// user, an unknown caller).
type Rank uint8

// Identity ranks.
const (
	RankAgentName Rank = iota
	RankOpenInference
	RankTraceloop
	RankVercelAI
	RankGenkit
	RankVoltAgentSub
	RankVoltAgent
	RankAx
	RankAgentID
	RankConventions
	RankSpanName
	RankService
	RankExtension
	RankServerAddr
	RankUser
	RankUnknown
	RankNone
)

// IdentifiedBy is the tracedata name of a rank (tracedata.Agent's
// IdentifiedBy), "" for RankNone.
func (r Rank) IdentifiedBy() string {
	switch r {
	case RankAgentName:
		return tracedata.IdentityAgentName
	case RankOpenInference:
		return tracedata.IdentityOpenInference
	case RankTraceloop:
		return tracedata.IdentityTraceloop
	case RankVercelAI:
		return tracedata.IdentityVercelAI
	case RankGenkit:
		return tracedata.IdentityGenkit
	case RankVoltAgentSub:
		return tracedata.IdentityVoltAgentSubagent
	case RankVoltAgent:
		return tracedata.IdentityVoltAgent
	case RankAx:
		return tracedata.IdentityAx
	case RankAgentID:
		return tracedata.IdentityAgentID
	case RankConventions:
		return tracedata.IdentityConventions
	case RankSpanName:
		return tracedata.IdentitySpanName
	case RankService:
		return tracedata.IdentityServiceName
	case RankExtension:
		return tracedata.IdentityExtension
	case RankServerAddr:
		return tracedata.IdentityServerAddr
	case RankUser:
		return tracedata.IdentityUser
	case RankUnknown:
		return tracedata.IdentityUnknown
	}
	return ""
}

// Family is a recognizer family: one convention of spans, read by a file
// of this package.
type Family uint8

// Recognizer families, in the order of their bits in Families and of
// familyNames.
const (
	famGenAI Family = iota
	famGenAIPrevious
	famOpenInference
	famOpenLLMetry
	famMessaging
	famLinks
	famA2A
	famHTTP
	famCoordbench
	famConventions
	famVercelAI
	famGenkit
	famVoltAgent
	famMCP
	famLangfuse
	famAx
	// NumFamilies is the number of families: a Family is below it.
	NumFamilies
)

// familyNames are the names Coverage.Recognized reports.
var familyNames = [NumFamilies]string{
	famGenAI:         "genai",
	famGenAIPrevious: "genai_previous",
	famOpenInference: "openinference",
	famOpenLLMetry:   "openllmetry",
	famMessaging:     "messaging",
	famLinks:         "links",
	famA2A:           "a2a",
	famHTTP:          "http",
	famCoordbench:    "coordbench",
	famConventions:   "conventions",
	famVercelAI:      "vercel_ai",
	famGenkit:        "genkit",
	famVoltAgent:     "voltagent",
	famMCP:           "mcp",
	famLangfuse:      "langfuse",
	famAx:            "ax",
}

// String is the family's name in Coverage.Recognized.
func (f Family) String() string {
	if f < NumFamilies {
		return familyNames[f]
	}
	return ""
}

// Families is a set of families: bit f for Family f.
type Families uint16

// Has reports whether f is in the set.
func (s Families) Has(f Family) bool { return s&(1<<f) != 0 }

// FrameworkFamily returns the family of a framework's own namespace called
// name ("vercel_ai", "genkit", "voltagent", "langfuse", "ax"), one
// Reader.Without can turn off; false for any other name.
func FrameworkFamily(name string) (Family, bool) {
	for _, f := range [...]Family{famVercelAI, famGenkit, famVoltAgent, famLangfuse, famAx} {
		if familyNames[f] == name {
			return f, true
		}
	}
	return 0, false
}

// Warning is an attribute of the wrong type or value on a span.
type Warning struct {
	Span     uint64 // the span id, big-endian
	Key, Msg string
}
