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
	Op   Op   // the operation, by the strongest word (Tier)
	// Step is the call type of the step the span is, CallNone for no
	// step: coordbench.call_type when set, else an agent span's AGENT,
	// else TOOL for an LLM or tool operation.
	Step CallType
	// Agent: an agent span, an agent's invocation by the word that settled
	// the operation, or coordbench.call_type AGENT.
	Agent bool
	// Marker marks an agent call for a chain of client spans: an agent
	// span, or any a2a.* attribute.
	Marker bool

	AgentName string // the agent the span names ("" for none)
	AgentRank Rank   // the rule that named it
	AgentID   string // the agent's id, where a family reads one (Reading.AgentID)

	Failed  bool // error.type, a failed or rejected A2A task state
	Ext     bool // coordbench.source=extension: rebuilt from the Traceability Extension
	HasAddr bool // server.address
	MCP     bool // an MCP request's span (mcp.go)
	// ClientMethod: a client library's method span (the A2A Python SDK's
	// a2a.client.* spans, a2a.go): not a side of a call, but inside the
	// call a client span above it in its process makes.
	ClientMethod bool
	// ReceivedBlind: the server side of a request received by a
	// protocol's library that reads no trace context from it (the A2A
	// Python SDK's request handler): at a trace's top, nothing says
	// whether its caller was traced elsewhere (docs/trace-assembly.md, "A
	// trace that begins with a received call").
	ReceivedBlind bool

	Workflow  bool // an orchestration: never an agent, not a step
	AgentLike bool // looks like an agent's work but names no agent
	// UnnamedAgent: an agent run by its framework's own word whose name no
	// attribute records (Word.Unnamed): counted as unread even inside
	// another agent's work, where it is a sub-agent.
	UnnamedAgent bool

	Handoff     bool   // hands control to another agent (handoff.go)
	HandoffTo   string // the target, "" when not named
	HandoffFrom string // the agent handing off, when the span names it
	// HandoffFromRank is the rank of the rule that named HandoffFrom.
	HandoffFromRank Rank

	Claimed Claims // the keys of coverage.recognized the span was claimed under
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
// rank an identity was seen with says how it was identified. The ranks of
// the rules families name agents by are their Registry's (Identity,
// NameTier; Registry.IdentifiedBy); assembly names the others, ranked
// after them: a process's service, the extension, a server's address, the
// user, an unknown caller.
type Rank uint8

// Identity ranks assembly gives, after every family's.
const (
	RankService Rank = iota + 250
	RankExtension
	RankServerAddr
	RankUser
	RankUnknown
	// RankNone: not identified.
	RankNone
)

// maxFamilyRanks bounds the ranks families' rules take, below RankService.
const maxFamilyRanks = int(RankService)

// coreLabels are the identified_by labels of the ranks from RankService,
// in their order.
var coreLabels = [...]string{
	tracedata.IdentityServiceName,
	tracedata.IdentityExtension,
	tracedata.IdentityServerAddr,
	tracedata.IdentityUser,
	tracedata.IdentityUnknown,
}

// Claims is a set of the keys of coverage.recognized a span was claimed
// under: bit k for its Registry's k-th (Registry.CoverageName).
type Claims uint64

// Has reports whether bit k is in the set.
func (c Claims) Has(k int) bool { return c&(1<<k) != 0 }

// Warning is an attribute of the wrong type or value on a span.
type Warning struct {
	Span     uint64 // the span id, big-endian
	Key, Msg string
}
