package recognize

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// A Family is one family of span conventions: the attributes a framework,
// an instrumentation or a standard writes, and what they say a span is.
// Each built-in family is a package of its own (otelmap/assemble/families/
// <name>), listed in the registry (package families); a user's convention
// map (package convmap) is one too. A Family is safe for concurrent use:
// what it keeps while reading is its SpanReader's, one per assembly.
type Family interface {
	// Spec describes the family: its name, the keys it reads, how it names
	// agents. It is read once, when a Registry is made.
	Spec() Spec
	// NewReader returns a reader for one assembly at a time.
	NewReader() SpanReader
}

// Spec describes a family to the registry.
type Spec struct {
	// Name is the family's key in coverage.recognized and the name it is
	// turned off by (Registry.Without).
	Name string
	// Also are further keys of coverage.recognized the family claims spans
	// under (Reading.ClaimAs, Word.Claims): a second shape of its
	// conventions counted apart.
	Also []string
	// Keys are the attribute keys the family reads: Attr is called for
	// each attribute of a span whose key is one of them.
	Keys []Key
	// Identities are the rules by which the family names agents, one per
	// identified_by label it gives (Reading.Name names the index here).
	Identities []Identity
	// HandoffTools are tool names whose call hands control to the agent an
	// argument names (the rule for a tool call named transfer_to_<agent>
	// is everyone's: handoff.go).
	HandoffTools []HandoffTool
	// ArgumentKeys are attributes that hold a tool call's arguments, where
	// a handoff tool's target is looked for.
	ArgumentKeys []string
	// StepKeys are attributes that give a step's model and token counts
	// where the GenAI standard's are missing.
	StepKeys []StepKey
	// Unnamed says how an agent of the family runs with no name recorded,
	// for the warning that counts such agents ("" for none).
	Unnamed string
	// EverySpan: Decide is called for every span, whatever its keys (a
	// convention map's rule may match by a span's name alone).
	EverySpan bool
}

// Key is an attribute key a family reads: the key itself, or every key
// that starts with it. ID is the family's own number for it, handed back
// to Attr, so that the family need not match the key again.
type Key struct {
	Name   string
	Prefix bool
	ID     uint8
}

// Exact is the key name, with the family's number id.
func Exact(name string, id uint8) Key { return Key{Name: name, ID: id} }

// Prefix is every key that starts with prefix, with the family's number id.
func Prefix(prefix string, id uint8) Key { return Key{Name: prefix, Prefix: true, ID: id} }

// Identity is a rule by which a family names an agent: the identified_by
// label it gives (tracedata.Agent.IdentifiedBy) and its rank among all
// families' rules (NameTier). Two families may give one label (the
// name read from a span's name): they share its rank.
type Identity struct {
	Label string
	Tier  NameTier
}

// NameTier ranks the rules that name agents, best first. When a span
// names its agent by several rules, the best tier's name is taken; within
// a tier, the family listed first in the registry wins. An agent named by
// several rules across spans is identified by the best of them.
type NameTier uint8

// Name tiers, best first.
const (
	// NameStandard: the OpenTelemetry GenAI attribute made to name the
	// agent (gen_ai.agent.name). It alone names the callee on the client
	// span of an A2A call.
	NameStandard NameTier = iota
	// NameAttribute: an attribute a framework or an instrumentation writes
	// to name its agent.
	NameAttribute
	// NameID: an agent's id where nothing names it (gen_ai.agent.id).
	NameID
	// NameUser: the user's convention map.
	NameUser
	// NameSpanName: a name read from the span's name, where a framework
	// writes it nowhere else.
	NameSpanName
)

// StepKey is an attribute that gives one of a step's details.
type StepKey struct {
	Key string
	Is  StepDetail
}

// StepDetail is what a StepKey gives.
type StepDetail uint8

// Step details: a step's model, and its tokens in, out and in all. A
// standard's total comes before a family's, the sum of in and out after
// both.
const (
	StepNone StepDetail = iota
	StepModel
	StepInputTokens
	StepOutputTokens
	StepTotalTokens
)

// HandoffTool is a tool whose call hands control to the agent its
// arguments name (an argument named agent_name, agentName, agent_id or
// agentId). WithTarget: only a call that names one is a handoff (without,
// the same tool gives the final answer).
type HandoffTool struct {
	Name       string
	WithTarget bool
}

// Tier ranks what families say a span's operation is, strongest first.
// The strongest word settles it; between words of one tier, the family
// listed first in the registry.
type Tier uint8

// Tiers of a word on a span's operation, strongest first.
const (
	// TierUser: the user's convention map, their word on their own
	// framework.
	TierUser Tier = iota
	// TierProtocol: a protocol's request (MCP's mcp.method.name).
	TierProtocol
	// TierFramework: a framework's own namespace, its own word on what its
	// span is, which instrumentations layered on it translate only
	// approximately.
	TierFramework
	// TierInstrumentation: an instrumentation's own kind, over the
	// standard operation it writes beside it only approximately.
	TierInstrumentation
	// TierStandard: the OpenTelemetry GenAI conventions.
	TierStandard
	// TierCoarse: an instrumentation's kind that is coarser than the
	// standard's (set by a run's name rather than by what it is).
	TierCoarse
	// TierFallback: a shape read from whatever else the span carries,
	// where nothing says what the span is.
	TierFallback
)

// Word is what a family says a span is (Reading.Say).
type Word struct {
	Op       Op
	Workflow bool // an orchestration: never an agent, not a step, read as INTERNAL
	// Understood: the family knew the span's kind, even if it is neither
	// step nor call (Reading.Understood).
	Understood bool
	// Unnamed: an agent by the family's word whose name no attribute
	// records (Verdict.UnnamedAgent).
	Unnamed bool
	// Claims are the family's coverage keys (bit 0 its Name, bit k its
	// Also[k-1]) claimed only if this word is taken.
	Claims uint8
}

// SpanReader reads spans for one family, one span at a time, during one
// assembly: Reset, Attr for each of its keys on the span, Decide. It may
// keep what it read of earlier spans for its pass (TreePass).
type SpanReader interface {
	// Reset forgets the last span: called before the first attribute of a
	// span is handed to Attr (or before Decide, for EverySpan).
	Reset()
	// Attr reads one attribute whose key is one of Spec.Keys; id is that
	// Key's ID.
	Attr(r *Reading, kv *attribute.KeyValue, id uint8)
	// Decide says what the span is by the family's reading of it, through
	// r's methods (Say, Name, Claim, ...), after every attribute was read.
	// It is called only for a span with one of the family's keys (every
	// span, with Spec.EverySpan).
	Decide(r *Reading, sp *otelmap.Span)
}

// CallerNamer is a SpanReader that reads the callers an agent span names
// (a graph's edge recorded on its target): each is a call to the agent
// when no nesting, client span or handoff gives it one.
type CallerNamer interface {
	// Callers appends to out the callers sp names; r is its settled
	// reading, an agent span's.
	Callers(r *Reading, sp *otelmap.Span, out []Caller) []Caller
}

// Caller is an agent an agent span names as its caller.
type Caller struct {
	Name string
	Rank Rank
}

// Namespacer is a SpanReader that says which of a span's keys are an
// agent namespace on the spans it claimed: keys of names other libraries
// use too (entity.*), an agent's only where the family read the span.
type Namespacer interface {
	Namespace(key string) string
}

// ControlFlower is a Family that knows error statuses that move control
// rather than fail (an exception a framework raises to route to another
// node). types are the error types sp records (ErrorTypes).
type ControlFlower interface {
	ControlFlow(sp *otelmap.Span, types []string) bool
}

// TreePass is a SpanReader that also works on the assembled tree: what a
// family's spans mean is sometimes known only once their parents are (an
// agent named by the tool call it runs in, a model loop run by no agent).
type TreePass interface {
	// Begin starts an assembly: forget what was kept of the last one.
	Begin()
	// Keep is called after span sp, numbered i, was read (r its reading):
	// keep what the pass will need.
	Keep(r *Reading, sp *otelmap.Span, i int32)
	// Resolve runs once every span's parent and process are known, before
	// the calls are found.
	Resolve(t Tree)
}

// Finisher is a TreePass with a second pass, run once the calls' segments
// are known and the rule for agents called from outside any agent span
// has run, before the agents of spans are identified.
type Finisher interface {
	Finish(t Tree)
}

// Tree is the assembled trace as a family's pass sees it. Spans are
// numbered from 0 in assembly's order; -1 is none.
type Tree interface {
	Span(i int32) *otelmap.Span
	Parent(i int32) int32
	// Process numbers the process (resource) span i came from.
	Process(i int32) int32
	Op(i int32) Op
	// Agent: span i is an agent span. Named: and it names its agent.
	Agent(i int32) bool
	Named(i int32) bool
	// ServiceCall: span i is an agent span called by the unnamed agent its
	// trace root's service stands for (docs/trace-assembly.md, "An agent
	// called by an unnamed agent").
	ServiceCall(i int32) bool

	// MakeAgent makes span i the span of the agent name, identified by the
	// family's Identities[identity]: an agent step, INTERNAL, no longer
	// looking like an unread agent's work.
	MakeAgent(i int32, name string, identity int)
	// ForgetUnnamed: span i is no agent run without a name, nor the run
	// around agents the reading took it for.
	ForgetUnnamed(i int32)
	// MarkUnnamed: span i is an agent its framework ran with no name
	// recorded: counted and warned about (Verdict.UnnamedAgent).
	MarkUnnamed(i int32)
	// RunBy: span i was run by span p of its process, whatever parent it
	// records (an instrumentation that starts every agent span under the
	// trace's root rather than under the tool that ran it): assembly reads
	// p as its parent. Refused, false, for p in another process, or i
	// itself or a span under i.
	RunBy(i, p int32) bool
	// NameCaller: agent span i was called by the agent name, by the
	// family's Identities[identity]: an edge only a pass over several
	// spans finds (a group chat's turns), read as CallerNamer's are: a
	// call when no nesting, client span or handoff gives i a caller.
	NameCaller(i int32, name string, identity int)
}
