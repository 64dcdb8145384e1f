package otelmap

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/tracedata"
)

// Assemble rebuilds one trace from its spans: the steps, the agents (graph
// nodes), the interactions between them (graph edges, each call counted
// once however many spans record it) and the coverage, following DESIGN §3
// and docs/trace-assembly.md.
//
// The spans may come in any order, from any of the three roads, and may be
// broken: duplicate span ids, parents missing from the trace, cycles in the
// parent links, attributes of the wrong type, zero times, an end before the
// start. Assemble never panics on such input; it builds what it can and says
// what was odd in Coverage.Warnings. The result depends only on the set of
// spans, not on their order: the same spans in any order give the same
// TraceData, byte for byte once JSON-encoded. Spans of another trace are left
// out.
//
// Assemble does O(n) work plus the sorting of steps and calls, and allocates
// little beyond the steps themselves, so that the assessor keeps up with
// traces of a million spans.
func Assemble(traceID trace.TraceID, spans []Span) *tracedata.TraceData {
	a := &assembler{traceID: traceID}
	a.index(spans)
	a.link()
	a.sortParentsFirst()
	a.structure()
	a.identify()
	a.collectCalls()
	return a.build()
}

// Span roles: the side of a call a span records. PRODUCER and CONSUMER spans
// take the client and server sides, as the Collector's servicegraph
// connector pairs them; UNSPECIFIED is taken as INTERNAL.
const (
	roleInternal uint8 = iota
	roleServer
	roleClient
)

// GenAI operation classes.
const (
	opNone uint8 = iota
	opInvoke
	opLLM
	opTool
)

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
	role     uint8
	op       uint8
	callType uint8 // index into callTypes; 0 for a span that is no step
}

// callTypes are the values of node.callType.
var callTypes = [...]tracedata.CallType{"", tracedata.CallAgent, tracedata.CallTool, tracedata.CallHost}

const (
	ctNone uint8 = iota
	ctAgent
	ctTool
	ctHost
)

// proc is one process: spans of one resource, or of resources with the same
// non-empty service.name.
type proc struct {
	service  string
	assessor bool
}

// Identity ranks, in DESIGN §3's order: the lowest rank an identity was
// seen with says how it was identified.
const (
	rankAgentName uint8 = iota
	rankAgentID
	rankService
	rankExtension
	rankServerAddr
	rankUser
	rankUnknown
	rankNone
)

var rankNames = [...]string{
	rankAgentName:  tracedata.IdentityAgentName,
	rankAgentID:    tracedata.IdentityAgentID,
	rankService:    tracedata.IdentityServiceName,
	rankExtension:  tracedata.IdentityExtension,
	rankServerAddr: tracedata.IdentityServerAddr,
	rankUser:       tracedata.IdentityUser,
	rankUnknown:    tracedata.IdentityUnknown,
}

// identity is one agent name, a candidate graph node.
type identity struct {
	name     string
	id       string // smallest gen_ai.agent.id seen with the name
	rank     uint8
	real     bool // seen on a route that proves it emitted spans or was named by one
	virtual  bool // seen as server.address, "user" or "unknown" caller
	assessor bool
	used     bool
	steps    int
	errors   int
}

// chain is one client-side call: a top client span and its client
// descendants in the same process (invoke_agent -> SendMessage -> POST).
type chain struct {
	top      int32
	server   int32 // the first entry paired with the chain
	inproc   int32 // the first INTERNAL agent span run under the chain in-process
	nameSpan int32 // the highest chain span with gen_ai.agent.name/id
	addrSpan int32 // the highest chain span with server.address
	marker   bool
	failed   bool
	real     bool // some span of the call is not from the extension
	call     int32
}

// Call classes.
const (
	classBoth uint8 = iota
	classClient
	classServer
	classInProcess
	classExtension
)

// call is one interaction, counted once.
type call struct {
	caller, callee int32
	class          uint8
	failed         bool
	start          int64
	key            uint64 // span id of the call's span, to order calls that start together
	latencyMS      float64
}

// attrWarning is an attribute of the wrong type or value; they are sorted
// and capped so a broken producer cannot flood the report.
type attrWarning struct {
	id  uint64
	key string
	msg string
}

// maxAttrWarnings caps the attribute warnings listed one by one.
const maxAttrWarnings = 20

type assembler struct {
	traceID trace.TraceID
	spans   []Span
	nodes   []node
	byID    idIndex

	procs    []proc
	procByRe map[*Resource]int32
	procBySv map[string]int32
	lastRes  *Resource
	lastProc int32

	idents  []identity
	identIx map[string]int32

	kidsOff []int32
	kids    []int32
	order   []int32

	chains  []chain
	entries []int32
	calls   []call

	scratch, scratch2 []int32

	// Counters and notes for warnings.
	otherTrace, invalidID, dups    int
	missingParents, endBeforeStart int
	noTime, unknownCallers         int
	calleeUnknown                  int
	unknownService                 bool
	cycles                         []uint64
	attrWarnings                   []attrWarning
}

// index keeps the spans of the trace, one per span id. Of duplicates it
// keeps the one spanLess puts first, whatever the input order.
func (a *assembler) index(spans []Span) {
	a.spans = spans
	a.nodes = make([]node, 0, len(spans))
	a.byID = newIDIndex(len(spans))
	for i := range spans {
		sp := &spans[i]
		if sp.TraceID != a.traceID {
			a.otherTrace++
			continue
		}
		if !sp.SpanID.IsValid() {
			a.invalidID++
			continue
		}
		id := binary.BigEndian.Uint64(sp.SpanID[:])
		if j, dup := a.byID.put(id, int32(len(a.nodes))); dup {
			a.dups++
			if spanLess(sp, a.span(j)) {
				a.nodes[j].sp = int32(i)
			}
			continue
		}
		a.nodes = append(a.nodes, node{sp: int32(i), id: id})
	}
}

// span returns node i's span.
func (a *assembler) span(i int32) *Span { return &a.spans[a.nodes[i].sp] }

// spanLess orders two spans with the same id, so the one kept does not
// depend on arrival order. A span its own process recorded beats one rebuilt
// from the extension, as in the store; past that the order is arbitrary but
// total.
func spanLess(x, y *Span) bool {
	if c := cmp.Compare(sourceRank(x), sourceRank(y)); c != 0 {
		return c < 0
	}
	if c := x.Start.Compare(y.Start); c != 0 {
		return c < 0
	}
	if c := x.End.Compare(y.End); c != 0 {
		return c < 0
	}
	if c := strings.Compare(x.Name, y.Name); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(x.Kind, y.Kind); c != 0 {
		return c < 0
	}
	if c := slices.Compare(x.ParentSpanID[:], y.ParentSpanID[:]); c != 0 {
		return c < 0
	}
	if x.StatusError != y.StatusError {
		return x.StatusError
	}
	if c := strings.Compare(x.StatusMessage, y.StatusMessage); c != 0 {
		return c < 0
	}
	if c := strings.Compare(x.Source, y.Source); c != 0 {
		return c < 0
	}
	if c := strings.Compare(resourceOf(x).ServiceName, resourceOf(y).ServiceName); c != 0 {
		return c < 0
	}
	if c := compareAttrs(x.Attrs, y.Attrs); c != 0 {
		return c < 0
	}
	return compareAttrs(resourceOf(x).Attrs, resourceOf(y).Attrs) < 0
}

func sourceRank(s *Span) int {
	if isExtension(s) {
		return 1
	}
	return 0
}

func compareAttrs(x, y []attribute.KeyValue) int {
	for i := 0; i < len(x) && i < len(y); i++ {
		if c := strings.Compare(string(x[i].Key), string(y[i].Key)); c != 0 {
			return c
		}
		if c := cmp.Compare(x[i].Value.Type(), y[i].Value.Type()); c != 0 {
			return c
		}
		if c := strings.Compare(x[i].Value.String(), y[i].Value.String()); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(x), len(y))
}

func resourceOf(s *Span) *Resource {
	if s.Resource == nil {
		return emptyResource
	}
	return s.Resource
}

// isExtension reports whether a span was rebuilt from the Traceability
// Extension: by the road it came (the store's Source) or by the
// coordbench.source attribute, which survives a re-export through OTLP.
func isExtension(s *Span) bool {
	if s.Source == SourceExtension {
		return true
	}
	for i := range s.Attrs {
		if s.Attrs[i].Key == AttrSource {
			return s.Attrs[i].Value.Type() == attribute.STRING && s.Attrs[i].Value.AsString() == SourceExtension
		}
	}
	return false
}

// link resolves parents, processes and times, and reads the attributes that
// assembly decides by.
func (a *assembler) link() {
	a.procByRe = make(map[*Resource]int32)
	a.procBySv = make(map[string]int32)
	a.identIx = make(map[string]int32)
	for i := range a.nodes {
		n := &a.nodes[i]
		sp := a.span(int32(i))
		n.parent, n.selfIdent, n.segRoot, n.topClient, n.chain = -1, -1, -1, -1, -1
		n.clientAnc, n.stepAnc, n.entry, n.agent, n.agentSpan, n.call, n.stepIx = -1, -1, -1, -1, -1, -1, -1
		n.depth = -1
		if sp.ParentSpanID.IsValid() {
			n.flags |= fHasParentID
			if j, ok := a.byID.get(binary.BigEndian.Uint64(sp.ParentSpanID[:])); ok {
				n.parent = j
			} else {
				n.flags |= fParentMissing
				a.missingParents++
			}
		}
		n.start, n.end = unixNano(sp.Start), unixNano(sp.End)
		switch {
		case n.start == 0 || n.end == 0:
			a.noTime++
		case n.end < n.start:
			a.endBeforeStart++
		}
		switch sp.Kind {
		case trace.SpanKindServer, trace.SpanKindConsumer:
			n.role = roleServer
		case trace.SpanKindClient, trace.SpanKindProducer:
			n.role = roleClient
		}
		if sp.StatusError {
			n.flags |= fFailed
		}
		if sp.Source == SourceExtension {
			n.flags |= fExt
		}
		n.proc = a.procOf(resourceOf(sp))
		a.scan(int32(i))
	}
}

// Times outside what UnixNano can hold, and the Unix epoch itself (what a
// zero OTLP timestamp decodes to), count as unset.
var (
	minTime = time.Unix(0, 0)
	maxTime = time.Unix(0, math.MaxInt64)
)

func unixNano(t time.Time) int64 {
	if !t.After(minTime) || !t.Before(maxTime) {
		return 0
	}
	return t.UnixNano()
}

// procOf returns the process of a resource: resources are compared by
// pointer (the spans of one batch share one), then by service.name, since
// the spans of one process arrive in many batches and by several roads.
func (a *assembler) procOf(r *Resource) int32 {
	if r == a.lastRes {
		return a.lastProc
	}
	p, ok := a.procByRe[r]
	if !ok {
		if r.ServiceName != "" {
			p, ok = a.procBySv[r.ServiceName]
		}
		if !ok {
			p = int32(len(a.procs))
			a.procs = append(a.procs, proc{service: r.ServiceName})
			if r.ServiceName != "" {
				a.procBySv[r.ServiceName] = p
			}
		}
		a.procByRe[r] = p
		for _, kv := range r.Attrs {
			if kv.Key == AttrRole && kv.Value.Type() == attribute.STRING && kv.Value.AsString() == RoleAssessor {
				a.procs[p].assessor = true
			}
		}
	}
	a.lastRes, a.lastProc = r, p
	return p
}

// scan reads, in one pass over a span's attributes, what structure and
// identity depend on.
func (a *assembler) scan(i int32) {
	n := &a.nodes[i]
	var name, id string
	var ct uint8
	attrs := a.span(i).Attrs
	for k := range attrs {
		kv := &attrs[k]
		key := string(kv.Key)
		if len(key) < 4 {
			continue
		}
		switch key[0] {
		case 'g':
			switch kv.Key {
			case AttrGenAIOperationName:
				switch a.str(i, kv) {
				case OpInvokeAgent:
					n.op = opInvoke
				case OpChat, "text_completion", "generate_content", "embeddings":
					n.op = opLLM
				case OpExecuteTool, "retrieval":
					n.op = opTool
				}
			case AttrGenAIAgentName:
				name = a.str(i, kv)
			case AttrGenAIAgentID:
				id = a.str(i, kv)
			}
		case 'c':
			switch kv.Key {
			case AttrCallType:
				v := a.str(i, kv)
				switch {
				case v == "":
				case strings.EqualFold(v, string(tracedata.CallAgent)):
					ct = ctAgent
				case strings.EqualFold(v, string(tracedata.CallTool)):
					ct = ctTool
				case strings.EqualFold(v, string(tracedata.CallHost)):
					ct = ctHost
				default:
					a.attrWarn(i, key, fmt.Sprintf("has value %q, want AGENT, TOOL or HOST", v))
				}
			case AttrSource:
				if a.str(i, kv) == SourceExtension {
					n.flags |= fExt
				}
			}
		case 'a':
			if strings.HasPrefix(key, "a2a.") {
				n.flags |= fMarker
				if kv.Key == AttrA2ATaskState && a2aFailed(a.str(i, kv)) {
					n.flags |= fFailed
				}
			}
		case 'e':
			if kv.Key == AttrErrorType && a.str(i, kv) != "" {
				n.flags |= fFailed
			}
		case 's':
			if kv.Key == AttrServerAddress && a.str(i, kv) != "" {
				n.flags |= fHasAddr
			}
		}
	}
	if n.op == opInvoke || ct == ctAgent {
		n.flags |= fAgent | fMarker
	}
	switch {
	case ct != ctNone:
		n.callType = ct
	case n.flags&fAgent != 0:
		n.callType = ctAgent
	case n.op == opLLM || n.op == opTool:
		n.callType = ctTool
	}
	if n.callType != ctNone {
		n.flags |= fStep
	}
	rank := rankAgentName
	if name == "" {
		name, rank = id, rankAgentID
	}
	if name != "" {
		if n.flags&fExt != 0 {
			rank = rankExtension
		}
		n.selfIdent = a.intern(name)
		a.note(n.selfIdent, rank, false)
		if id != "" {
			if x := &a.idents[n.selfIdent]; x.id == "" || id < x.id {
				x.id = id
			}
		}
	}
}

// a2aFailed reports an A2A task state that ends a call in error, in the 0.3
// ("failed") and the 1.0 ("TASK_STATE_FAILED") spellings.
func a2aFailed(state string) bool {
	if len(state) > len("TASK_STATE_") && strings.EqualFold(state[:len("TASK_STATE_")], "TASK_STATE_") {
		state = state[len("TASK_STATE_"):]
	}
	return strings.EqualFold(state, "failed") || strings.EqualFold(state, "rejected")
}

// str returns a string attribute's value, noting a value of another type.
func (a *assembler) str(i int32, kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		a.attrWarn(i, string(kv.Key), fmt.Sprintf("is %s, want string", kv.Value.Type()))
		return ""
	}
	return kv.Value.AsString()
}

func (a *assembler) attrWarn(i int32, key, what string) {
	a.attrWarnings = append(a.attrWarnings, attrWarning{id: a.nodes[i].id, key: key, msg: what})
}

func (a *assembler) intern(name string) int32 {
	if ix, ok := a.identIx[name]; ok {
		return ix
	}
	ix := int32(len(a.idents))
	a.idents = append(a.idents, identity{name: name, rank: rankNone})
	a.identIx[name] = ix
	return ix
}

// note records a route by which an identity was named.
func (a *assembler) note(ix int32, rank uint8, virtual bool) {
	x := &a.idents[ix]
	x.rank = min(x.rank, rank)
	if virtual {
		x.virtual = true
	} else {
		x.real = true
	}
}

// sortParentsFirst builds the children lists and a parents-first order of all spans.
// Parent links that form cycles are cut at the cycle's smallest span id, so
// the cut does not depend on input order either.
func (a *assembler) sortParentsFirst() {
	m := len(a.nodes)
	a.kidsOff = make([]int32, m+1)
	for i := range a.nodes {
		if p := a.nodes[i].parent; p >= 0 {
			a.kidsOff[p+1]++
		}
	}
	for i := 1; i <= m; i++ {
		a.kidsOff[i] += a.kidsOff[i-1]
	}
	a.kids = make([]int32, a.kidsOff[m])
	fill := slices.Clone(a.kidsOff[:m])
	for i := range a.nodes {
		if p := a.nodes[i].parent; p >= 0 {
			a.kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
	a.order = make([]int32, 0, m)
	for i := range a.nodes {
		if a.nodes[i].parent < 0 {
			a.nodes[i].depth = 0
			a.order = append(a.order, int32(i))
		}
	}
	a.bfs(0)
	if len(a.order) < m {
		a.cutCycles()
	}
}

// bfs extends a.order from position h with the descendants of the nodes in
// it. A child whose parent link was cut is not its old parent's child.
func (a *assembler) bfs(h int) {
	for ; h < len(a.order); h++ {
		x := a.order[h]
		d := a.nodes[x].depth + 1
		for _, k := range a.kids[a.kidsOff[x]:a.kidsOff[x+1]] {
			if a.nodes[k].parent == x && a.nodes[k].depth < 0 {
				a.nodes[k].depth = d
				a.order = append(a.order, k)
			}
		}
	}
}

// cutCycles finds the cycles among the spans bfs did not reach (in a graph
// where every node has at most one parent, only nodes on or below a cycle
// are unreachable from a root) and cuts each at its smallest span id.
func (a *assembler) cutCycles() {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(a.nodes))
	var path []int32
	for u := range a.nodes {
		if a.nodes[u].depth >= 0 || state[u] != unseen {
			continue
		}
		path = path[:0]
		x := int32(u)
		for x >= 0 && a.nodes[x].depth < 0 && state[x] == unseen {
			state[x] = onPath
			path = append(path, x)
			x = a.nodes[x].parent
		}
		if x >= 0 && state[x] == onPath {
			cyc := path[slices.Index(path, x):]
			cut := cyc[0]
			for _, c := range cyc {
				if a.nodes[c].id < a.nodes[cut].id {
					cut = c
				}
			}
			a.nodes[cut].parent = -1
			a.nodes[cut].depth = 0
			a.cycles = append(a.cycles, a.nodes[cut].id)
			h := len(a.order)
			a.order = append(a.order, cut)
			a.bfs(h)
		}
		for _, p := range path {
			state[p] = done
		}
	}
}

// structure computes, parents first, how each span sits in the calls: the
// segments a walk for "the agent of" a span stops at, the client chains, the
// entries (spans that receive a call) and what pairs with what.
//
// An entry is a SERVER span not directly under a SERVER span of its own
// process (POST SERVER -> SendMessage SERVER is one received call), or an
// INTERNAL span whose parent is a CLIENT span of another process (an agent
// that took the call without server instrumentation). A segment starts at a
// root, at a span whose parent is in another process, and at an entry.
func (a *assembler) structure() {
	nodes := a.nodes
	for _, i := range a.order {
		n := &nodes[i]
		p := n.parent
		var pn *node
		same := false
		if p >= 0 {
			pn = &nodes[p]
			same = pn.proc == n.proc
		}
		switch n.role {
		case roleServer:
			if !same || pn.role != roleServer {
				n.flags |= fEntry
			}
		case roleInternal:
			if pn != nil && !same && pn.role == roleClient {
				n.flags |= fEntry
			}
		}
		if pn == nil || !same || n.flags&fEntry != 0 {
			n.segRoot = i
		} else {
			n.segRoot = pn.segRoot
		}
		if pn != nil {
			if pn.flags&fStep != 0 {
				n.stepAnc = p
			} else {
				n.stepAnc = pn.stepAnc
			}
			if n.segRoot != i {
				switch {
				case pn.role == roleClient:
					n.clientAnc = p
				case pn.flags&fAgent != 0 && pn.selfIdent >= 0:
				default:
					n.clientAnc = pn.clientAnc
				}
			}
		}
		ext := n.flags&fExt != 0
		switch n.role {
		case roleClient:
			if same && pn.role == roleClient {
				n.topClient = pn.topClient
			} else {
				n.topClient = i
				n.chain = int32(len(a.chains))
				a.chains = append(a.chains, chain{top: i, server: -1, inproc: -1, nameSpan: -1, addrSpan: -1, call: -1})
			}
			ch := &a.chains[nodes[n.topClient].chain]
			ch.marker = ch.marker || n.flags&fMarker != 0
			ch.failed = ch.failed || n.flags&fFailed != 0
			ch.real = ch.real || !ext
			if n.selfIdent >= 0 && (ch.nameSpan < 0 || a.higher(i, ch.nameSpan)) {
				ch.nameSpan = i
			}
			if n.flags&fHasAddr != 0 && (ch.addrSpan < 0 || a.higher(i, ch.addrSpan)) {
				ch.addrSpan = i
			}
		case roleServer:
			if n.flags&fEntry != 0 {
				n.entry = i
			} else {
				n.entry = pn.entry
			}
			e := &nodes[n.entry]
			if n.flags&fFailed != 0 {
				e.flags |= fSrvFailed
			}
			if !ext {
				e.flags |= fSrvReal
			}
		}
		if n.flags&fEntry != 0 {
			a.entries = append(a.entries, i)
			if n.role == roleInternal {
				if n.flags&fFailed != 0 {
					n.flags |= fSrvFailed
				}
				if !ext {
					n.flags |= fSrvReal
				}
			}
			if pn != nil && pn.role == roleClient {
				ch := &a.chains[nodes[pn.topClient].chain]
				if ch.server < 0 || a.earlier(i, ch.server) {
					ch.server = i
				}
			}
		}
		if n.role == roleInternal && n.flags&fAgent != 0 && n.selfIdent >= 0 && n.segRoot != i {
			if n.clientAnc >= 0 {
				// An agent run in-process under a client span: the client
				// chain's call, seen from both sides.
				ch := &a.chains[nodes[nodes[n.clientAnc].topClient].chain]
				if ch.inproc < 0 || a.earlier(i, ch.inproc) {
					ch.inproc = i
				}
				ch.failed = ch.failed || n.flags&fFailed != 0
				ch.real = ch.real || !ext
				n.call = -2 // resolved to the chain's call in collectCalls
			} else {
				n.flags |= fNested
			}
		}
	}
}

// earlier orders spans by start, then span id.
func (a *assembler) earlier(i, j int32) bool {
	x, y := &a.nodes[i], &a.nodes[j]
	if x.start != y.start {
		return x.start < y.start
	}
	return x.id < y.id
}

// higher orders spans by depth, then start, then span id.
func (a *assembler) higher(i, j int32) bool {
	if di, dj := a.nodes[i].depth, a.nodes[j].depth; di != dj {
		return di < dj
	}
	return a.earlier(i, j)
}

// isAgentSpan reports an INTERNAL or SERVER agent span that names its
// agent: the agent doing the work below it. A CLIENT agent span names its
// callee instead.
func (n *node) isAgentSpan() bool {
	return n.role != roleClient && n.flags&fAgent != 0 && n.selfIdent >= 0
}

// identify names the agent doing the work of every span: the nearest
// INTERNAL or SERVER agent span at or above it within its segment, else the
// identity of the segment's root.
func (a *assembler) identify() {
	for _, i := range a.order {
		n := &a.nodes[i]
		switch {
		case n.isAgentSpan():
			n.agent, n.agentSpan = n.selfIdent, i
		case n.segRoot == i:
			n.agent = a.rootIdentity(i)
		default:
			p := &a.nodes[n.parent]
			n.agent, n.agentSpan = p.agent, p.agentSpan
		}
	}
}

// rootIdentity names the agent of a segment root that is not itself an
// agent span. An entry is the server side of a call, named as the callee of
// a paired call is: the first agent span below it in its process
// (breadth-first, earliest start), else the agent the client chain named.
// Otherwise, and failing those, the process's service.name, else "unknown".
func (a *assembler) rootIdentity(r int32) int32 {
	n := &a.nodes[r]
	if n.flags&fEntry != 0 {
		if b := a.firstAgentBelow(r); b >= 0 {
			return a.nodes[b].selfIdent
		}
		if p := n.parent; p >= 0 && a.nodes[p].role == roleClient {
			if s := a.chains[a.nodes[a.nodes[p].topClient].chain].nameSpan; s >= 0 {
				return a.nodes[s].selfIdent
			}
		}
	}
	if svc := a.procs[n.proc].service; svc != "" {
		ix := a.intern(svc)
		rank := rankService
		if n.flags&fExt != 0 {
			rank = rankExtension
		}
		a.note(ix, rank, false)
		return ix
	}
	a.unknownService = true
	ix := a.intern(tracedata.UnknownAgent)
	a.note(ix, rankUnknown, false)
	return ix
}

// firstAgentBelow searches r's segment breadth-first for an agent span,
// taking the earliest start (then smallest span id) of the first level
// that has one. It does not enter client chains, whose agent spans name
// callees, nor other entries.
func (a *assembler) firstAgentBelow(r int32) int32 {
	pr := a.nodes[r].proc
	level := append(a.scratch[:0], r)
	next := a.scratch2[:0]
	best := int32(-1)
	for len(level) > 0 && best < 0 {
		next = next[:0]
		for _, x := range level {
			if a.nodes[x].role == roleClient {
				continue
			}
			for _, k := range a.kids[a.kidsOff[x]:a.kidsOff[x+1]] {
				kn := &a.nodes[k]
				if kn.parent != x || kn.proc != pr || kn.flags&fEntry != 0 {
					continue
				}
				if kn.isAgentSpan() && (best < 0 || a.earlier(k, best)) {
					best = k
				}
				next = append(next, k)
			}
		}
		level, next = next, level
	}
	a.scratch, a.scratch2 = level[:0], next[:0]
	return best
}

// collectCalls turns the structure into calls, each counted once: client
// chains that are paired or carry an agent marker, entries no chain
// accounts for, and agent spans nested in another agent's work in one
// process.
func (a *assembler) collectCalls() {
	for _, e := range a.entries {
		n := &a.nodes[e]
		if p := n.parent; p >= 0 && a.nodes[p].role == roleClient {
			ch := &a.chains[a.nodes[a.nodes[p].topClient].chain]
			ch.failed = ch.failed || n.flags&fSrvFailed != 0
			ch.real = ch.real || n.flags&fSrvReal != 0
		}
	}
	for c := range a.chains {
		ch := &a.chains[c]
		if ch.server < 0 && ch.inproc < 0 && !ch.marker {
			continue // e.g. an HTTP call to an LLM API: not an interaction
		}
		top := &a.nodes[ch.top]
		cl := call{caller: top.agent, failed: ch.failed, start: top.start, key: top.id, latencyMS: durationMS(top)}
		switch {
		case ch.server >= 0:
			cl.class = classBoth
			cl.callee = a.nodes[ch.server].agent
		case ch.inproc >= 0:
			cl.class = classInProcess
			cl.callee = a.nodes[ch.inproc].selfIdent
		default:
			cl.class = classClient
			cl.callee = a.unpairedCallee(ch)
		}
		if !ch.real {
			cl.class = classExtension
		}
		ch.call = a.addCall(cl)
		top.call = ch.call
	}
	for _, e := range a.entries {
		n := &a.nodes[e]
		if p := n.parent; p >= 0 && a.nodes[p].role == roleClient {
			n.call = a.chains[a.nodes[a.nodes[p].topClient].chain].call
			continue
		}
		cl := call{callee: n.agent, class: classServer, failed: n.flags&fSrvFailed != 0,
			start: n.start, key: n.id, latencyMS: durationMS(n)}
		switch {
		case n.parent >= 0:
			// Called from a span that is not a client span: the caller is
			// known, but its side of the call was not recorded as one.
			cl.caller = a.nodes[n.parent].agent
		case n.flags&fHasParentID != 0:
			if n.flags&fParentMissing != 0 {
				a.unknownCallers++
			}
			cl.caller = a.intern(tracedata.UnknownAgent)
			a.note(cl.caller, rankUnknown, true)
		default:
			cl.caller = a.intern(tracedata.UserAgent)
			a.note(cl.caller, rankUser, true)
		}
		if n.flags&fSrvReal == 0 {
			cl.class = classExtension
		}
		n.call = a.addCall(cl)
	}
	for i := range a.nodes {
		n := &a.nodes[i]
		switch {
		case n.call == -2:
			n.call = a.chains[a.nodes[a.nodes[n.clientAnc].topClient].chain].call
		case n.flags&fNested != 0:
			caller := a.nodes[n.parent].agentSpan
			if caller < 0 || a.nodes[caller].agent == n.selfIdent {
				continue // the work of a received call, or an agent nested in itself
			}
			cl := call{caller: a.nodes[caller].agent, callee: n.selfIdent, class: classInProcess,
				failed: n.flags&fFailed != 0, start: n.start, key: n.id, latencyMS: durationMS(n)}
			if n.flags&fExt != 0 {
				cl.class = classExtension
			}
			n.call = a.addCall(cl)
		}
	}
}

func (a *assembler) addCall(c call) int32 {
	a.calls = append(a.calls, c)
	return int32(len(a.calls) - 1)
}

// unpairedCallee names the callee of a client chain nobody answered: the
// agent the chain names, else the server address as a virtual node.
func (a *assembler) unpairedCallee(ch *chain) int32 {
	if ch.nameSpan >= 0 {
		return a.nodes[ch.nameSpan].selfIdent
	}
	if ch.addrSpan >= 0 {
		ix := a.intern(serverAddress(a.span(ch.addrSpan)))
		a.note(ix, rankServerAddr, true)
		return ix
	}
	a.calleeUnknown++
	ix := a.intern(tracedata.UnknownAgent)
	a.note(ix, rankUnknown, true)
	return ix
}

// serverAddress returns server.address, with server.port when there is one.
func serverAddress(sp *Span) string {
	host, _, _ := sp.StringAttr(AttrServerAddress)
	port, ok := sp.IntAttr(AttrServerPort)
	if !ok {
		if s, ok2, _ := sp.StringAttr(AttrServerPort); ok2 {
			if p, err := strconv.ParseInt(s, 10, 32); err == nil {
				port, ok = p, true
			}
		}
	}
	if !ok || port <= 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10))
}

func durationMS(n *node) float64 {
	if n.start == 0 || n.end < n.start {
		return 0
	}
	return float64(n.end-n.start) / float64(time.Millisecond)
}

// sortKey orders steps and calls by start time, then span id.
type sortKey struct {
	t  int64 // Unix ns; 0 (unset) sorts first
	id uint64
	ix int32
}

func compareKeys(x, y sortKey) int {
	if x.t != y.t {
		return cmp.Compare(x.t, y.t)
	}
	return cmp.Compare(x.id, y.id)
}

// sortKeys sorts by (t, id). A trace of a million spans has hundreds of
// thousands of steps, so it sorts by t with a radix sort, linear where a
// comparison sort is not, over the bits the trace's time range needs; runs
// of equal t are then sorted by id.
func sortKeys(keys []sortKey) {
	if len(keys) < 512 {
		slices.SortFunc(keys, compareKeys)
		return
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, k := range keys {
		if k.t != 0 {
			lo, hi = min(lo, k.t), max(hi, k.t)
		}
	}
	width := 0
	if hi >= lo {
		width = bits.Len64(uint64(hi-lo) + 1)
	}
	digit := func(k sortKey, shift int) int {
		if k.t == 0 {
			return 0
		}
		return int((uint64(k.t-lo) + 1) >> shift & radixMask)
	}
	src, dst := keys, make([]sortKey, len(keys))
	var count [radixSize + 1]int
	for shift := 0; shift < width; shift += radixBits {
		clear(count[:])
		for _, k := range src {
			count[digit(k, shift)+1]++
		}
		for d := 1; d <= radixSize; d++ {
			count[d] += count[d-1]
		}
		for _, k := range src {
			d := digit(k, shift)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].t == keys[i].t {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(keys[i:j], compareKeys)
		}
		i = j
	}
}

const (
	radixBits = 11
	radixSize = 1 << radixBits
	radixMask = radixSize - 1
)

// idIndex maps span ids to node indexes: open addressing with linear
// probing in a power-of-two table sized once, at most half full. It does
// what a map would at a fraction of the cost, which matters at a million
// spans. Span ids are mixed with a random seed, so ids chosen to collide
// (span ids come from untrusted producers) cannot be.
type idIndex struct {
	keys []uint64 // 0: empty (a valid span id is never 0)
	vals []int32
	mask uint64
	seed uint64
}

func newIDIndex(n int) idIndex {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	return idIndex{keys: make([]uint64, size), vals: make([]int32, size), mask: uint64(size - 1), seed: rand.Uint64()}
}

func (x *idIndex) slot(k uint64) uint64 {
	h := k ^ x.seed
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h & x.mask
}

// put stores k -> v unless k is there; then it returns the value held.
func (x *idIndex) put(k uint64, v int32) (held int32, dup bool) {
	for i := x.slot(k); ; i = (i + 1) & x.mask {
		switch x.keys[i] {
		case k:
			return x.vals[i], true
		case 0:
			x.keys[i], x.vals[i] = k, v
			return 0, false
		}
	}
}

func (x *idIndex) get(k uint64) (int32, bool) {
	for i := x.slot(k); ; i = (i + 1) & x.mask {
		switch x.keys[i] {
		case k:
			return x.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// build writes the TraceData.
func (a *assembler) build() *tracedata.TraceData {
	td := &tracedata.TraceData{
		TraceID:      a.traceID.String(),
		Steps:        []tracedata.Step{},
		Agents:       []tracedata.Agent{},
		Interactions: []tracedata.Interaction{},
	}
	td.Coverage.SpansBySource = map[string]int{}
	td.Coverage.Services = []string{}
	td.Coverage.Spans = len(a.nodes)

	anyAssessor := false
	for _, p := range a.procs {
		anyAssessor = anyAssessor || p.assessor
	}
	var start, end int64
	var nSteps int
	var bySource [3]int
	for i := range a.nodes {
		n := &a.nodes[i]
		if n.flags&fStep != 0 {
			nSteps++
		}
		if n.start != 0 && n.end >= n.start {
			if start == 0 || n.start < start {
				start = n.start
			}
			end = max(end, n.end)
		}
		switch {
		case n.flags&fExt != 0:
			bySource[2]++
		case a.spans[n.sp].Source == SourceInProcess:
			bySource[0]++
		case a.spans[n.sp].Source == SourceOTLP:
			bySource[1]++
		default:
			src := a.spans[n.sp].Source
			if src == "" {
				src = "unknown"
			}
			td.Coverage.SpansBySource[src]++
		}
		if anyAssessor && a.procs[n.proc].assessor && n.flags&fExt == 0 {
			a.idents[n.agent].assessor = true
		}
	}
	for k, src := range [3]string{SourceInProcess, SourceOTLP, SourceExtension} {
		if bySource[k] > 0 {
			td.Coverage.SpansBySource[src] += bySource[k]
		}
	}
	if start != 0 {
		td.Start, td.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
		td.DurationMS = float64(end-start) / float64(time.Millisecond)
	}

	a.buildSteps(td, nSteps)
	a.buildInteractions(td)
	a.buildAgents(td)
	a.buildCoverage(td)
	return td
}

func (a *assembler) buildSteps(td *tracedata.TraceData, nSteps int) {
	keys := make([]sortKey, 0, nSteps)
	for i := range a.nodes {
		if n := &a.nodes[i]; n.flags&fStep != 0 {
			keys = append(keys, sortKey{t: n.start, id: n.id, ix: int32(i)})
		}
	}
	sortKeys(keys)
	// All step ids live in one string, so a step costs no allocation for
	// its id or its parent's.
	buf := make([]byte, 16*len(keys))
	var idb [8]byte
	for k, key := range keys {
		a.nodes[key.ix].stepIx = int32(k)
		binary.BigEndian.PutUint64(idb[:], key.id)
		hex.Encode(buf[16*k:], idb[:])
	}
	ids := string(buf)
	traceHex := td.TraceID
	td.Steps = make([]tracedata.Step, len(keys))
	// Nodes are visited in input order, which reads the spans in memory
	// order; the writes go to the steps' sorted places.
	for i := range a.nodes {
		n := &a.nodes[i]
		if n.flags&fStep == 0 {
			continue
		}
		k := n.stepIx
		st := &td.Steps[k]
		st.StepID = ids[16*k : 16*k+16]
		st.TraceID = traceHex
		if p := n.stepAnc; p >= 0 {
			j := a.nodes[p].stepIx
			st.ParentStepID = ids[16*j : 16*j+16]
		}
		st.CallType = callTypes[n.callType]
		st.Name = a.spans[n.sp].Name
		if n.start != 0 {
			st.StartTime = time.Unix(0, n.start).UTC()
		}
		if n.end != 0 {
			st.EndTime = time.Unix(0, n.end).UTC()
		}
		if n.start != 0 && n.end >= n.start {
			st.LatencyMS = float64(n.end-n.start) / float64(time.Millisecond)
			st.Latency = int64(math.Round(st.LatencyMS))
		}
		agent, caller := a.stepAgents(n)
		st.Agent = a.idents[agent].name
		if caller >= 0 {
			st.Caller = a.idents[caller].name
		}
		a.stepDetails(int32(i), st)
		x := &a.idents[agent]
		x.used = true
		x.steps++
		if st.Error != "" {
			x.errors++
		}
	}
}

// stepAgents returns the agent a step is attributed to and, for an agent
// call, its caller (-1 if none). A client agent span names the callee of
// its call; an agent span that receives or is a call has that call's
// caller; an agent span doing the work of a received call has the caller
// of that call.
func (a *assembler) stepAgents(n *node) (agent, caller int32) {
	agent, caller = n.agent, -1
	if n.flags&fAgent == 0 {
		return agent, caller
	}
	c := n.call
	switch {
	case n.role == roleClient:
		c = a.chains[a.nodes[n.topClient].chain].call
		if c >= 0 {
			agent = a.calls[c].callee
		} else if n.selfIdent >= 0 {
			agent = n.selfIdent
		}
	case c < 0:
		if r := &a.nodes[n.segRoot]; r.flags&fEntry != 0 && r.call >= 0 && a.calls[r.call].callee == agent {
			c = r.call
		}
	}
	if c >= 0 {
		caller = a.calls[c].caller
	}
	return agent, caller
}

// stepDetails reads the attributes only steps need.
func (a *assembler) stepDetails(i int32, st *tracedata.Step) {
	sp := a.span(i)
	var errType, taskState, reqModel, respModel string
	var inTok, outTok int64
	var haveTotal bool
	var toolArgs string
	for k := range sp.Attrs {
		kv := &sp.Attrs[k]
		key := string(kv.Key)
		switch {
		case strings.HasPrefix(key, "gen_ai."):
			switch kv.Key {
			case AttrGenAIInputMessages:
				st.Input = messagesText(kv.Value)
			case AttrGenAIOutputMessages:
				st.Output = messagesText(kv.Value)
			case AttrGenAIRequestModel:
				reqModel = a.str(i, kv)
			case AttrGenAIResponseModel:
				respModel = a.str(i, kv)
			case AttrGenAIInputTokens:
				inTok = a.integer(i, kv)
			case AttrGenAIOutputTokens:
				outTok = a.integer(i, kv)
			case AttrGenAIToolCallArgs:
				if kv.Value.Type() == attribute.STRING {
					toolArgs = kv.Value.AsString()
				}
			}
		case strings.HasPrefix(key, "coordbench."):
			switch {
			case kv.Key == AttrTotalTokens:
				st.TotalTokens, haveTotal = a.integer(i, kv), true
			case kv.Key == AttrCost:
				st.Cost = a.float(i, kv)
			case kv.Key == AttrStepType:
				st.StepType = a.str(i, kv)
			case strings.HasPrefix(key, AttrParametersPrefix):
				st.Parameters = putAttr(st.Parameters, key[len(AttrParametersPrefix):], kv.Value)
			case strings.HasPrefix(key, AttrRequestsPrefix):
				st.Requests = putAttr(st.Requests, key[len(AttrRequestsPrefix):], kv.Value)
			case strings.HasPrefix(key, AttrExtraPrefix):
				st.AdditionalAttributes = putAttr(st.AdditionalAttributes, key[len(AttrExtraPrefix):], kv.Value)
			}
		case kv.Key == AttrErrorType:
			if kv.Value.Type() == attribute.STRING {
				errType = kv.Value.AsString()
			}
		case kv.Key == AttrA2ATaskState:
			if kv.Value.Type() == attribute.STRING {
				taskState = kv.Value.AsString()
			}
		}
	}
	st.Model = cmp.Or(reqModel, respModel)
	if !haveTotal {
		st.TotalTokens = inTok + outTok
	}
	if st.Parameters == nil && toolArgs != "" {
		// A tool call's arguments, as GenAI records them, are the
		// extension's parameters.
		var args map[string]any
		if json.Unmarshal([]byte(toolArgs), &args) == nil {
			st.Parameters = args
		}
	}
	switch {
	case sp.StatusError:
		st.Error = cmp.Or(sp.StatusMessage, errType, "error")
	case errType != "":
		st.Error = errType
	case a2aFailed(taskState):
		st.Error = "a2a task " + taskState
	}
	if st.StepType == "" {
		n := &a.nodes[i]
		switch {
		case n.callType == ctAgent:
			st.StepType = "agent_call"
		case n.callType == ctHost:
			st.StepType = "host"
		case n.op == opLLM:
			st.StepType = "llm_call"
		default:
			st.StepType = "tool_call"
		}
	}
}

// integer returns an integer attribute, noting a value of another type.
func (a *assembler) integer(i int32, kv *attribute.KeyValue) int64 {
	switch kv.Value.Type() {
	case attribute.INT64:
		return kv.Value.AsInt64()
	case attribute.FLOAT64:
		if f := kv.Value.AsFloat64(); f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			return int64(f)
		}
	case attribute.STRING:
		if v, err := strconv.ParseInt(kv.Value.AsString(), 10, 64); err == nil {
			return v
		}
	}
	a.attrWarn(i, string(kv.Key), fmt.Sprintf("is %s %s, want an integer", kv.Value.Type(), kv.Value.String()))
	return 0
}

// float returns a number attribute, noting a value of another type.
func (a *assembler) float(i int32, kv *attribute.KeyValue) float64 {
	var f float64
	switch kv.Value.Type() {
	case attribute.INT64:
		return float64(kv.Value.AsInt64())
	case attribute.FLOAT64:
		f = kv.Value.AsFloat64()
	case attribute.STRING:
		v, err := strconv.ParseFloat(kv.Value.AsString(), 64)
		if err != nil {
			f = math.NaN()
		} else {
			f = v
		}
	default:
		f = math.NaN()
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		a.attrWarn(i, string(kv.Key), fmt.Sprintf("is %s %s, want a finite number", kv.Value.Type(), kv.Value.String()))
		return 0
	}
	return f
}

func putAttr(m map[string]any, key string, v attribute.Value) map[string]any {
	if m == nil {
		m = make(map[string]any)
	}
	m[key] = jsonValue(v)
	return m
}

// jsonValue converts an attribute value to a value encoding/json can
// always encode: non-finite floats become strings.
func jsonValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.FLOAT64:
		return finite(v.AsFloat64())
	case attribute.FLOAT64SLICE:
		fs := v.AsFloat64Slice()
		out := make([]any, len(fs))
		for i, f := range fs {
			out[i] = finite(f)
		}
		return out
	case attribute.EMPTY:
		return nil
	default:
		return v.AsInterface()
	}
}

func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return f
}

// messagesText returns the text of GenAI messages (gen_ai.input.messages,
// gen_ai.output.messages): [{"role": .., "parts": [{"type": "text",
// "content": ..}]}], or the older [{"role": .., "content": ".."}], a single
// message object accepted too. Text parts are joined with newlines. A value
// that is not such JSON, or holds no text, is returned as it is.
//
// It is a small hand-written reader rather than encoding/json because every
// agent span may carry messages and assembly must stay near a million spans
// a second: a message with one plain text part costs no allocation.
func messagesText(v attribute.Value) string {
	if v.Type() != attribute.STRING {
		return v.String()
	}
	s := v.AsString()
	r := msgReader{s: s}
	r.ws()
	ok := false
	switch r.peek() {
	case '[':
		ok = r.array(func() bool { return r.message() })
	case '{':
		ok = r.message()
	}
	if r.ws(); !ok || r.i != len(s) || r.n == 0 {
		return s
	}
	if r.n == 1 {
		if r.first.esc {
			return unescapeJSON(r.first.raw)
		}
		return r.first.raw
	}
	var b strings.Builder
	for k, t := range r.texts {
		if k > 0 {
			b.WriteByte('\n')
		}
		if t.esc {
			b.WriteString(unescapeJSON(t.raw))
		} else {
			b.WriteString(t.raw)
		}
	}
	return b.String()
}

// jsonText is the raw body of a JSON string, esc when it holds escapes.
type jsonText struct {
	raw string
	esc bool
}

// msgReader reads GenAI messages from JSON text, collecting the text parts.
type msgReader struct {
	s     string
	i     int
	n     int
	first jsonText
	texts []jsonText // from the second text on
}

func (r *msgReader) addText(t jsonText) {
	if t.raw == "" {
		return
	}
	r.n++
	switch r.n {
	case 1:
		r.first = t
	case 2:
		r.texts = append(r.texts, r.first, t)
	default:
		r.texts = append(r.texts, t)
	}
}

func (r *msgReader) ws() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *msgReader) peek() byte {
	if r.i < len(r.s) {
		return r.s[r.i]
	}
	return 0
}

// str reads a string (r at its opening quote).
func (r *msgReader) str() (jsonText, bool) {
	if r.peek() != '"' {
		return jsonText{}, false
	}
	r.i++
	start, esc := r.i, false
	for r.i < len(r.s) {
		switch c := r.s[r.i]; {
		case c == '"':
			t := jsonText{raw: r.s[start:r.i], esc: esc}
			r.i++
			return t, true
		case c == '\\':
			esc = true
			if r.i+1 >= len(r.s) {
				return jsonText{}, false
			}
			switch r.s[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			case 'u':
				if _, ok := hex4(r.s, r.i+2); !ok {
					return jsonText{}, false
				}
				r.i += 6
			default:
				return jsonText{}, false
			}
		case c < 0x20:
			return jsonText{}, false
		default:
			r.i++
		}
	}
	return jsonText{}, false
}

// array reads an array, calling elem at each element.
func (r *msgReader) array(elem func() bool) bool {
	r.i++ // '['
	r.ws()
	if r.peek() == ']' {
		r.i++
		return true
	}
	for {
		r.ws()
		if !elem() {
			return false
		}
		r.ws()
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return true
		default:
			return false
		}
	}
}

// object reads an object, calling field at each value (r at the value).
func (r *msgReader) object(field func(key string) bool) bool {
	r.i++ // '{'
	r.ws()
	if r.peek() == '}' {
		r.i++
		return true
	}
	for {
		r.ws()
		key, ok := r.str()
		if !ok {
			return false
		}
		r.ws()
		if r.peek() != ':' {
			return false
		}
		r.i++
		r.ws()
		if !field(key.raw) {
			return false
		}
		r.ws()
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// message reads one message; anything but an object is skipped.
func (r *msgReader) message() bool {
	if r.peek() != '{' {
		return r.skip()
	}
	return r.object(func(key string) bool {
		switch {
		case key == "content" && r.peek() == '"':
			t, ok := r.str()
			r.addText(t)
			return ok
		case key == "parts" && r.peek() == '[':
			return r.array(r.part)
		default:
			return r.skip()
		}
	})
}

// part reads one part, keeping its content if it is text.
func (r *msgReader) part() bool {
	if r.peek() != '{' {
		return r.skip()
	}
	var typ, content jsonText
	hasContent := false
	ok := r.object(func(key string) bool {
		switch {
		case key == "type" && r.peek() == '"':
			var ok bool
			typ, ok = r.str()
			return ok
		case key == "content" && r.peek() == '"':
			var ok bool
			content, ok = r.str()
			hasContent = true
			return ok
		default:
			return r.skip()
		}
	})
	if ok && hasContent && (typ.raw == "text" || typ.raw == "") {
		r.addText(content)
	}
	return ok
}

// skip reads any value.
func (r *msgReader) skip() bool {
	switch c := r.peek(); {
	case c == '"':
		_, ok := r.str()
		return ok
	case c == '[':
		return r.array(r.skip)
	case c == '{':
		return r.object(func(string) bool { return r.skip() })
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return r.number()
	default:
		return false
	}
}

// number reads a number as JSON spells it:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *msgReader) number() bool {
	if r.peek() == '-' {
		r.i++
	}
	switch c := r.peek(); {
	case c == '0':
		r.i++
	case c >= '1' && c <= '9':
		r.digits()
	default:
		return false
	}
	if r.peek() == '.' {
		r.i++
		if !r.digits() {
			return false
		}
	}
	if c := r.peek(); c == 'e' || c == 'E' {
		r.i++
		if c := r.peek(); c == '+' || c == '-' {
			r.i++
		}
		if !r.digits() {
			return false
		}
	}
	return true
}

func (r *msgReader) digits() bool {
	start := r.i
	for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
		r.i++
	}
	return r.i > start
}

func (r *msgReader) literal(lit string) bool {
	if !strings.HasPrefix(r.s[r.i:], lit) {
		return false
	}
	r.i += len(lit)
	return true
}

// unescapeJSON decodes the body of a JSON string that holds escapes.
func unescapeJSON(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			b.WriteByte(c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r1, ok := hex4(raw, i+1)
			if !ok {
				b.WriteRune(utf8.RuneError)
				continue
			}
			i += 4
			if utf16.IsSurrogate(r1) {
				if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if r2, ok := hex4(raw, i+3); ok {
						if dec := utf16.DecodeRune(r1, r2); dec != utf8.RuneError {
							b.WriteRune(dec)
							i += 6
							continue
						}
					}
				}
				r1 = utf8.RuneError
			}
			b.WriteRune(r1)
		default: // '"', '\\', '/'
			b.WriteByte(raw[i])
		}
	}
	return b.String()
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 32)
	return rune(v), err == nil
}

// interactionKey keys an interaction by its identities.
func interactionKey(from, to int32) uint64 { return uint64(uint32(from))<<32 | uint64(uint32(to)) }

func (a *assembler) buildInteractions(td *tracedata.TraceData) {
	keys := make([]sortKey, len(a.calls))
	for k, c := range a.calls {
		keys[k] = sortKey{t: c.start, id: c.key, ix: int32(k)}
	}
	sortKeys(keys)
	sorted := make([]call, len(a.calls))
	for k, key := range keys {
		sorted[k] = a.calls[key.ix]
	}
	a.calls = sorted
	byPair := make(map[uint64]int)
	cov := &td.Coverage
	for k := range a.calls {
		c := &a.calls[k]
		a.idents[c.caller].used = true
		a.idents[c.callee].used = true
		if c.caller == c.callee {
			continue
		}
		key := interactionKey(c.caller, c.callee)
		ix, ok := byPair[key]
		if !ok {
			ix = len(td.Interactions)
			byPair[key] = ix
			td.Interactions = append(td.Interactions, tracedata.Interaction{
				From: a.idents[c.caller].name, To: a.idents[c.callee].name,
			})
		}
		in := &td.Interactions[ix]
		in.Count++
		cov.Interactions++
		if c.failed {
			in.Errors++
		}
		in.LatenciesMS = append(in.LatenciesMS, c.latencyMS)
		switch c.class {
		case classBoth:
			in.BothSides++
			cov.BothSides++
		case classClient:
			in.ClientOnly++
			cov.ClientOnly++
		case classServer:
			in.ServerOnly++
			cov.ServerOnly++
		case classInProcess:
			in.InProcess++
			cov.InProcess++
		case classExtension:
			in.ExtensionOnly++
			cov.ExtensionOnly++
		}
	}
	slices.SortFunc(td.Interactions, func(x, y tracedata.Interaction) int {
		return cmp.Or(strings.Compare(x.From, y.From), strings.Compare(x.To, y.To))
	})
	cov.Complete = 1
	if cov.Interactions > 0 {
		cov.Complete = float64(cov.BothSides+cov.InProcess) / float64(cov.Interactions)
	}
}

func (a *assembler) buildAgents(td *tracedata.TraceData) {
	for k := range a.idents {
		x := &a.idents[k]
		if !x.used {
			continue
		}
		ag := tracedata.Agent{
			Name:    x.name,
			ID:      x.id,
			Virtual: x.virtual && !x.real,
			Steps:   x.steps,
			Errors:  x.errors,
		}
		if int(x.rank) < len(rankNames) {
			ag.IdentifiedBy = rankNames[x.rank]
		}
		if x.assessor {
			ag.Role = tracedata.RoleAssessor
		}
		td.Agents = append(td.Agents, ag)
	}
	slices.SortFunc(td.Agents, func(x, y tracedata.Agent) int { return strings.Compare(x.Name, y.Name) })
}

func (a *assembler) buildCoverage(td *tracedata.TraceData) {
	cov := &td.Coverage
	seen := map[string]bool{}
	for _, p := range a.procs {
		if p.service != "" && !seen[p.service] {
			seen[p.service] = true
			cov.Services = append(cov.Services, p.service)
		}
	}
	slices.Sort(cov.Services)

	var w []string
	count := func(n int, format string) {
		if n > 0 {
			w = append(w, fmt.Sprintf(format, n))
		}
	}
	count(a.otherTrace, "%d spans belong to another trace and were left out")
	count(a.invalidID, "%d spans have an invalid span id and were left out")
	count(a.dups, "%d spans repeat a span id already in the trace; one span was kept per id")
	count(a.missingParents, "%d spans have parents missing from the trace")
	count(a.unknownCallers, "%d server spans have parents missing from the trace; their caller is \"unknown\"")
	count(a.calleeUnknown, "%d client calls name no agent and no server.address; their callee is \"unknown\"")
	count(a.endBeforeStart, "%d spans have end before start")
	count(a.noTime, "%d spans have no start or end time")
	if a.unknownService {
		w = append(w, "spans of a resource without service.name, outside any agent span, are attributed to \"unknown\"")
	}
	slices.Sort(a.cycles)
	for k, id := range a.cycles {
		if k == maxAttrWarnings {
			w = append(w, fmt.Sprintf("%d more parent cycles", len(a.cycles)-k))
			break
		}
		w = append(w, fmt.Sprintf("parent links form a cycle; cut above span %016x", id))
	}
	slices.SortFunc(a.attrWarnings, func(x, y attrWarning) int {
		return cmp.Or(cmp.Compare(x.id, y.id), strings.Compare(x.key, y.key), strings.Compare(x.msg, y.msg))
	})
	a.attrWarnings = slices.Compact(a.attrWarnings)
	for k, aw := range a.attrWarnings {
		if k == maxAttrWarnings {
			w = append(w, fmt.Sprintf("%d more attributes of the wrong type or value", len(a.attrWarnings)-k))
			break
		}
		w = append(w, fmt.Sprintf("attribute %s on span %016x %s", aw.key, aw.id, aw.msg))
	}
	slices.Sort(w)
	cov.Warnings = slices.Compact(w)
}
