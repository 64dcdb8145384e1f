// Package assemble turns the spans of one trace into a tracedata.TraceData:
// the steps, the agents (graph nodes), the interactions between them (graph
// edges, each call counted once however many spans record it) and the
// coverage that says how much of each call was seen. It is the one place
// where coordbench interprets OpenTelemetry data; the rules are in
// docs/trace-assembly.md (docs/design.md#from-spans-to-a-trace sums them up).
//
// Trace does the work in phases, one file each:
//
//	tree.go        index the spans by id (one per id), resolve parents,
//	               processes and times, order them parents first (cycles cut)
//	scan.go        read each span through the convention families (package
//	               recognize reads, package families lists them, one
//	               package each): its role in a call, its operation, the
//	               agent it names, whether it failed, whether it hands off;
//	               spans of agent namespaces no rule reads (namespaces.go);
//	               then the families' passes over the tree, once the parents
//	               are known (familytree.go), tool servers and links
//	               (toolservers.go, links.go)
//	calls.go       how spans sit in calls (segments, client chains, entries),
//	               then the calls: CLIENT/SERVER pairs, in-process agent
//	               nesting, unpaired clients, root servers; callers of agents
//	               run beside each other (calls_evidence.go: handoffs, named
//	               callers, span links) and proxy agents (calls_proxy.go)
//	identity.go    the agent doing the work of every span, and how each agent
//	               was identified (hosts of agents, routers)
//	steps.go       one step per agent, LLM/tool or HOST span
//	build.go       the TraceData: interactions, agents, coverage and warnings
//
// response.go answers a call through the Traceability Extension with the
// steps of one's own work on it. The span-id hash index and the GenAI
// message reader live under internal/, each with the measurement that
// justifies it.
package assemble

import (
	"encoding/binary"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/agentns"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/spanindex"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Trace rebuilds one trace from its spans: the steps, the agents (graph
// nodes), the interactions between them (graph edges, each call counted
// once however many spans record it) and the coverage, following
// docs/trace-assembly.md.
//
// The spans may come in any order, from any of the three roads, and may be
// broken: duplicate span ids, parents missing from the trace, cycles in the
// parent links, attributes of the wrong type, zero times, an end before the
// start. Trace never panics on such input; it builds what it can and says
// what was odd in Coverage.Warnings. The result depends only on the set of
// spans, not on their order: the same spans in any order give the same
// TraceData, byte for byte once JSON-encoded. Spans of another trace are left
// out.
//
// Trace does O(n) work plus the sorting of steps and calls, and allocates
// little beyond the steps themselves, so that the assessor keeps up with
// traces of a million spans.
func Trace(traceID trace.TraceID, spans []otelmap.Span) *tracedata.TraceData {
	return TraceWith(traceID, spans, Options{})
}

// TraceWith is Trace with options: the families to read with, a user's
// convention map read before them.
func TraceWith(traceID trace.TraceID, spans []otelmap.Span, opts Options) *tracedata.TraceData {
	a := newAssembler(traceID, opts, opts.registry()) // workspace.go
	defer a.release()
	a.index(spans)             // tree.go
	a.link()                   // tree.go, scan.go
	a.sortParentsFirst()       // tree.go; cuts parent cycles before the families walk up parents
	a.reader.Resolve(a.treeOf) // the families' passes (familytree.go)
	if a.reparented {
		a.resortParentsFirst() // tree.go
	}
	a.structure()             // calls.go: segments, client chains, entries
	a.serviceCallers()        // outside.go
	a.reader.Finish(a.treeOf) // the families' second passes
	a.markToolServers()       // toolservers.go
	a.identify()              // identity.go
	a.collectCalls()          // calls.go
	return a.build()          // build.go, steps.go
}

// Node flags.
const (
	fAgent         uint32 = 1 << iota // gen_ai.operation.name invoke_agent or call_type AGENT
	fMarker                           // an agent marker for a client chain: fAgent or any a2a.* attribute
	fFailed                           // status Error, error.type, or a failed/rejected A2A task
	fExt                              // rebuilt from the Traceability Extension
	fHasParentID                      // carries a valid parent span id
	fParentMissing                    // ... that is not in the trace
	fEntry                            // receives a call: see structure
	fStep                             // becomes a Step
	fHasAddr                          // carries server.address
	fSrvFailed                        // entries: a span of its server chain failed
	fSrvReal                          // entries: a span of its server chain is not from the extension
	fNested                           // an INTERNAL agent span that may be an in-process call
	fAgentLike                        // looks like an agent's work but names no agent
	fAbove                            // has an agent span below it
	fResolving                        // a segment root whose agent is being resolved (identity.go)
	fControlFlow                      // an error status that is control flow, not a failure (recognize.Registry.ControlFlow)
	fWorkflow                         // an orchestration: a workflow, graph, swarm or crew run (package recognize)
	fUnnamedAgent                     // an agent by its framework's word that no attribute names (package recognize)
	fMCP                              // an MCP request's span (recognize/mcp.go)
	fToolServer                       // the tool server's side of a tool call (toolservers.go)
	fServiceAgent                     // a trace root whose work outside agent spans is its service's unnamed agent (outside.go)
	fServiceCall                      // an agent span that unnamed agent called (outside.go)
	fClientMethod                     // a client library's method span inside a call (recognize.Verdict.ClientMethod)
	fReceivedBlind                    // a request received by a library that reads no trace context (recognize.Verdict.ReceivedBlind)
)

// node is assembly's working record of one span. Indexes are node indexes,
// -1 for none.
//
// A node holds no pointers, so the garbage collector need not scan the
// million of them a large trace has.
type node struct {
	id    uint64 // the span id, big-endian, so it orders like its hex form
	start int64  // Unix ns; 0 when unset
	end   int64

	parent    int32
	proc      int32
	depth     int32
	selfIdent int32 // identity named by gen_ai.agent.name / gen_ai.agent.id on the span
	segRoot   int32 // where a walk up for "the agent of" this span stops
	topClient int32 // client spans: the top span of their chain
	chain     int32 // top client spans: their chain
	clientAnc int32 // nearest client span above, within the segment, with no agent span between
	stepAnc   int32 // nearest ancestor that is a step
	entry     int32 // server spans: the entry span of their server chain
	agent     int32 // identity of the agent doing the work of this span
	agentSpan int32 // the agent span that agent came from; -1 when from the segment root
	call      int32 // the call this span receives or makes, when it is the call's span
	stepIx    int32 // position in the sorted steps

	sp       int32 // index of the span in the input
	flags    uint32
	role     recognize.Role
	op       recognize.Op
	callType recognize.CallType // recognize.CallNone for a span that is no step
}

// assembler holds one assembly's working state; Trace makes one per call.
type assembler struct {
	traceID trace.TraceID
	joined  []trace.TraceID     // other traces read as part of this one (Options.Joined)
	reg     *recognize.Registry // the families read by
	spans   []otelmap.Span
	nodes   []node
	byID    spanindex.Index

	procs    []proc
	procByRe map[*otelmap.Resource]int32
	procBySv map[string]int32
	lastRes  *otelmap.Resource
	lastProc int32

	idents  []identity
	identIx map[string]int32

	kidsOff []int32
	kids    []int32
	order   []int32

	chains  []chain
	entries []int32
	calls   []call
	// sortedCalls and startKeys are buildInteractions's: the calls in
	// order of start, and the keys it sorts them by.
	sortedCalls []call
	startKeys   []startKey

	reader            *recognize.Reader // reads each span (scan.go)
	tree              familyTree        // the tree a family's pass sees (familytree.go)
	scratch, scratch2 []int32
	callers           []recognize.Caller // scan's scratch

	// What a few spans carry, kept aside so that nodes stay small.
	handoffs    []handoff       // handoff spans (recognize/handoff.go)
	callerNames []namedCaller   // agent spans naming their caller (recognize.CallerNamer)
	linkOf      map[int32]int32 // a span's first link into the trace
	pending     []int32         // segment roots whose agent is their cause (identity.go)
	cause       map[int32]int32 // ... and who caused each (identity.go)
	depth       int             // how deep rootAgent is in resolving them
	loose       []int32         // agent spans no nesting or call gives a caller
	proxyOf     map[int32]int32 // proxy agent spans -> the agent they stood for

	// Coverage of the conventions.
	recognized   [64]int // by bit of recognize.Claims
	unrecognized int
	agentLike    int
	unreadNS     agentns.Counter // namespaces.go

	// Counters and notes for warnings.
	otherTrace, invalidID, dups    int
	missingParents, endBeforeStart int
	noTime, unknownCallers         int
	calleeUnknown, handoffsUnmet   int
	callersUnknown                 int // named callers no agent span runs as (calls_evidence.go)
	unknownService                 bool
	cycles                         []uint64
	reparented                     bool                // a family moved a span under another parent (Tree.RunBy)
	attrWarnings                   []recognize.Warning // steps.go's; the reader keeps its own

	withoutSteps bool // Options.WithoutSteps
}

// inTrace reports whether a span of trace id is read as part of this
// trace: the trace's own id, or one of the traces joined to it.
func (a *assembler) inTrace(id trace.TraceID) bool {
	return id == a.traceID || len(a.joined) > 0 && slices.Contains(a.joined, id)
}

// traceRank orders the traces read: the trace's own first, then the
// joined ones in the order given.
func (a *assembler) traceRank(id trace.TraceID) int {
	if id == a.traceID {
		return 0
	}
	return 1 + slices.Index(a.joined, id)
}

// heldSpan returns the node of the span of trace tid with span id sid, if
// the assembly holds it: a link names a span by both.
func (a *assembler) heldSpan(tid trace.TraceID, sid trace.SpanID) (int32, bool) {
	if !a.inTrace(tid) || !sid.IsValid() {
		return -1, false
	}
	j, ok := a.byID.Get(binary.BigEndian.Uint64(sid[:]))
	if !ok || a.span(j).TraceID != tid {
		return -1, false
	}
	return j, true
}

// span returns node i's span.
func (a *assembler) span(i int32) *otelmap.Span { return &a.spans[a.nodes[i].sp] }
