package assemble

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// This file finds the calls, each counted once. structure works out how
// spans sit in calls (segments, client chains, entries, what pairs with
// what); after identify has named the agents, collectCalls turns that into
// calls: CLIENT/SERVER pairs across processes, agents run in-process under
// a client span, invoke_agent nesting in one process, client calls nobody
// answered, and server spans no client accounts for (root servers).

// chain is one client-side call: a top client span and its client
// descendants in the same process (invoke_agent -> SendMessage -> POST).
type chain struct {
	top      int32
	server   int32 // the first entry paired with the chain
	servers  int32 // how many entries it is paired with (a message delivered to several consumers)
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

// classDropped marks a call merged into another (calls_proxy.go).
const classDropped uint8 = 255

// call is one interaction, counted once.
type call struct {
	caller, callee int32
	// callerSpan is the agent span that made the call, calleeSpan the one
	// that received it in process; -1 when not known.
	callerSpan, calleeSpan int32
	class                  uint8
	failed                 bool
	start                  int64
	key                    uint64 // span id of the call's span, to order calls that start together
	latencyMS              float64
}

// chainOf returns the chain of client span c.
func (a *assembler) chainOf(c int32) *chain {
	return &a.chains[a.nodes[a.nodes[c].topClient].chain]
}

// structure computes, parents first, how each span sits in the calls: the
// segments a walk for "the agent of" a span stops at, the client chains, the
// entries (spans that receive a call) and what pairs with what.
//
// An entry is a SERVER span whose parent is remote or absent: a root, a
// span whose parent is in another process, or one under a CLIENT span (a
// call within one process); a SERVER span under an INTERNAL span of its own
// process is not a call received but work mis-kinded (the A2A SDK's
// EventQueue spans under an agent's LLM call) and is read as INTERNAL, and
// one under a SERVER span of its own process is part of the same received
// call (POST SERVER -> SendMessage SERVER). An INTERNAL span whose parent
// is a CLIENT span of another process is an entry too (an agent that took
// the call without server instrumentation). A segment starts at a root, at
// a span whose parent is in another process, and at an entry.
//
// Two more corrections need the parent: a CLIENT agent span with an LLM or
// tool step of its own process directly under it does the agent's work
// itself (a framework that opens a CLIENT invoke_agent around its own
// loop) and is read as INTERNAL; an LLM call directly under an LLM call of
// its process is the same call recorded by a second instrumentation (an
// agent SDK's and its model client's) and is not a step of its own
// (docs/trace-assembly.md, "Interactions").
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
		switch {
		case n.role == recognize.RoleServer && same && pn.role == recognize.RoleInternal:
			n.role = recognize.RoleInternal
		case n.role == recognize.RoleClient && n.flags&fAgent != 0 && a.ownStepBelow(i):
			n.role = recognize.RoleInternal
		}
		if same && n.op == recognize.OpLLM && pn.op == recognize.OpLLM && n.flags&fStep != 0 && n.callType == recognize.CallTool {
			n.flags &^= fStep
			n.callType = recognize.CallNone
		}
		if n.isAgentSpan() {
			pr := &a.procs[n.proc]
			switch {
			case pr.agent < 0:
				pr.agent = n.selfIdent
			case pr.agent != n.selfIdent:
				pr.manyAgents = true
			}
		}
		switch n.role {
		case recognize.RoleServer:
			if !same || pn.role != recognize.RoleServer {
				n.flags |= fEntry
			}
		case recognize.RoleInternal:
			if pn != nil && !same && pn.role == recognize.RoleClient {
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
				// A model call is never answered by an agent: the agents
				// under an LLM client span (a framework's bridge may write
				// its whole tool loop as one CLIENT "chat <model>" span:
				// docs/trace-assembly.md, Interactions) are the enclosing
				// agent's own calls, read by nesting, not the model call's
				// other side.
				switch {
				case pn.role == recognize.RoleClient && pn.op != recognize.OpLLM:
					n.clientAnc = p
				case pn.flags&fAgent != 0 && pn.selfIdent >= 0:
				default:
					n.clientAnc = pn.clientAnc
				}
			}
		}
		ext := n.flags&fExt != 0
		switch n.role {
		case recognize.RoleClient:
			if same && pn.role == recognize.RoleClient {
				n.topClient = pn.topClient
			} else {
				n.topClient = i
				n.chain = int32(len(a.chains))
				a.chains = append(a.chains, chain{top: i, server: -1, inproc: -1, nameSpan: -1, addrSpan: -1, call: -1})
			}
			ch := a.chainOf(i)
			ch.marker = ch.marker || n.flags&fMarker != 0
			ch.failed = ch.failed || n.flags&fFailed != 0
			ch.real = ch.real || !ext
			if n.selfIdent >= 0 && (ch.nameSpan < 0 || a.higher(i, ch.nameSpan)) {
				ch.nameSpan = i
			}
			if n.flags&fHasAddr != 0 && (ch.addrSpan < 0 || a.higher(i, ch.addrSpan)) {
				ch.addrSpan = i
			}
		case recognize.RoleServer:
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
			if n.role == recognize.RoleInternal {
				if n.flags&fFailed != 0 {
					n.flags |= fSrvFailed
				}
				if !ext {
					n.flags |= fSrvReal
				}
			}
			if pn != nil && pn.role == recognize.RoleClient {
				ch := a.chainOf(p)
				ch.servers++
				if ch.server < 0 || a.earlier(i, ch.server) {
					ch.server = i
				}
			}
		}
		if n.role == recognize.RoleInternal && n.flags&fAgent != 0 && n.selfIdent >= 0 && n.segRoot != i {
			if n.clientAnc >= 0 {
				// An agent run in-process under a client span: the client
				// chain's call, seen from both sides.
				ch := a.chainOf(n.clientAnc)
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

// ownStepBelow reports whether client span c has an LLM or tool step of its
// own process directly under it.
func (a *assembler) ownStepBelow(c int32) bool {
	for _, k := range a.children(c) {
		kn := &a.nodes[k]
		if kn.parent == c && kn.proc == a.nodes[c].proc && (kn.op == recognize.OpLLM || kn.op == recognize.OpTool) {
			return true
		}
	}
	return false
}

// collectCalls turns the structure into calls, each counted once: client
// chains that are paired or carry an agent marker, entries no chain
// accounts for, and agent spans nested in another agent's work in one
// process.
func (a *assembler) collectCalls() {
	for _, e := range a.entries {
		n := &a.nodes[e]
		if p := n.parent; p >= 0 && a.nodes[p].role == recognize.RoleClient {
			ch := a.chainOf(p)
			ch.failed = ch.failed || n.flags&fSrvFailed != 0
			ch.real = ch.real || n.flags&fSrvReal != 0
		}
	}
	a.toolCalls() // toolservers.go
	a.chainCalls()
	a.entryCalls()
	a.nestedCalls()
	a.evidenceCalls() // calls_evidence.go
	a.proxies()       // calls_proxy.go
}

// chainCalls makes the calls of client chains: paired with a server
// (both sides), completed by an agent run in-process under them, or, when
// they carry an agent marker, seen from the client only, unless a call
// made through a client library below them answers them
// (answeredBelow).
func (a *assembler) chainCalls() {
	a.agentDeliveries()
	below := a.answeredBelow()
	for c := range a.chains {
		ch := &a.chains[c]
		if ch.server < 0 && ch.inproc < 0 && !ch.marker {
			continue // e.g. an HTTP call to an LLM API: not an interaction
		}
		if _, ok := below[int32(c)]; ok {
			continue // its call is the chain's below it, made next
		}
		if a.nodes[ch.top].flags&fMCP != 0 {
			continue // a tool call: toolCalls
		}
		top := &a.nodes[ch.top]
		cl := call{caller: a.chainCaller(ch), callerSpan: top.agentSpan, calleeSpan: -1,
			failed: ch.failed, start: top.start, key: top.id, latencyMS: durationMS(top)}
		if l := a.linked(ch.top); l >= 0 {
			cl.callerSpan = a.nodes[l].agentSpan
		}
		switch {
		case ch.server >= 0:
			cl.class = classBoth
			cl.callee = a.agentOf(ch.server)
		case ch.inproc >= 0:
			cl.class = classInProcess
			cl.callee = a.nodes[ch.inproc].selfIdent
			cl.calleeSpan = ch.inproc
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
	for o, c := range below {
		ch := &a.chains[o]
		ch.call = a.chains[c].call
		a.nodes[ch.top].call = ch.call
		// The agent call span's error is the call's, whatever its request said.
		a.calls[ch.call].failed = a.calls[ch.call].failed || ch.failed
	}
}

// agentDeliveries makes the server of a chain paired with several entries
// (a message published to a topic and delivered to each subscriber) the
// first entry under which an agent span runs, if one does: the delivery
// the message was for, where the others are the runtime's bookkeeping (a
// subscriber caching it). The other entries answer the same call.
func (a *assembler) agentDeliveries() {
	for _, e := range a.entries {
		p := a.nodes[e].parent
		if p < 0 || a.nodes[p].role != recognize.RoleClient {
			continue
		}
		ch := a.chainOf(p)
		if ch.servers < 2 || ch.server == e {
			continue
		}
		if a.firstAgentBelow(e) >= 0 && (a.firstAgentBelow(ch.server) < 0 || a.earlier(e, ch.server)) {
			ch.server = e
		}
	}
}

// entryCalls gives each entry its call: its client chain's, or, for an
// entry no chain accounts for, a server-only call from the agent of its
// parent, from "unknown" (parent missing) or from "user" (a root).
func (a *assembler) entryCalls() {
	for _, e := range a.entries {
		n := &a.nodes[e]
		if p := n.parent; p >= 0 && a.nodes[p].role == recognize.RoleClient {
			n.call = a.chainOf(p).call
			continue
		}
		if n.flags&fToolServer != 0 {
			continue // toolCalls
		}
		cl := call{callee: a.agentOf(e), callerSpan: -1, calleeSpan: -1, class: classServer, failed: n.flags&fSrvFailed != 0,
			start: n.start, key: n.id, latencyMS: durationMS(n)}
		switch l := a.linked(e); {
		case l >= 0:
			// A message consumed with a link to where it was sent.
			cl.caller = a.senderOf(l)
		case n.parent >= 0:
			// Called from a span that is not a client span: the caller is
			// known, but its side of the call was not recorded as one.
			cl.caller = a.agentOf(n.parent)
		case n.flags&fHasParentID != 0:
			if n.flags&fParentMissing != 0 {
				a.unknownCallers++
			}
			cl.caller = a.intern(tracedata.UnknownAgent)
			a.note(cl.caller, recognize.RankUnknown, true)
		default:
			cl.caller = a.intern(tracedata.UserAgent)
			a.note(cl.caller, recognize.RankUser, true)
		}
		if n.flags&fSrvReal == 0 {
			cl.class = classExtension
		}
		n.call = a.addCall(cl)
	}
}

// nestedCalls resolves agents run in-process under a client span to their
// chain's call, and makes a call of each agent span nested in another
// agent's work in one process. An agent span that is neither, and not the
// work of a received call, is loose: calls_evidence.go looks for its
// caller elsewhere.
func (a *assembler) nestedCalls() {
	for i := range a.nodes {
		n := &a.nodes[i]
		switch {
		case n.call == -2:
			n.call = a.chainOf(n.clientAnc).call
		case n.flags&fNested != 0:
			caller := a.nodes[n.parent].agentSpan
			var from int32
			switch {
			case caller >= 0:
				from = a.nodes[caller].agent
			case n.flags&fServiceCall != 0:
				// outside.go: called by its service's unnamed agent, whose
				// work is its segment root's; no agent span made the call.
				from = a.nodes[n.segRoot].agent
			case a.nodes[n.segRoot].flags&fEntry == 0:
				a.loose = append(a.loose, int32(i))
				continue
			default:
				continue // the work of a received call
			}
			if from == n.selfIdent {
				continue // an agent nested in itself
			}
			cl := call{caller: from, callee: n.selfIdent, callerSpan: caller, calleeSpan: int32(i),
				class: classInProcess, failed: n.flags&fFailed != 0, start: n.start, key: n.id, latencyMS: durationMS(n)}
			if n.flags&fExt != 0 {
				cl.class = classExtension
			}
			n.call = a.addCall(cl)
		case n.isAgentSpan() && n.segRoot == int32(i) && n.flags&fEntry == 0 && n.role == recognize.RoleInternal:
			a.loose = append(a.loose, int32(i))
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
		ix := a.internAddress(a.span(ch.addrSpan))
		a.note(ix, recognize.RankServerAddr, true)
		return ix
	}
	a.calleeUnknown++
	ix := a.intern(tracedata.UnknownAgent)
	a.note(ix, recognize.RankUnknown, true)
	return ix
}

// serverAddress returns server.address, with server.port when there is one.
func serverAddress(sp *otelmap.Span) string {
	host, port := serverHostPort(sp)
	if port <= 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10))
}

// serverHostPort returns server.address and server.port (an integer, or
// a string of one), 0 when there is none.
func serverHostPort(sp *otelmap.Span) (host string, port int64) {
	host, _, _ = sp.StringAttr(otelmap.AttrServerAddress)
	port, ok := sp.IntAttr(otelmap.AttrServerPort)
	if !ok {
		if s, ok2, _ := sp.StringAttr(otelmap.AttrServerPort); ok2 {
			if p, err := strconv.ParseInt(s, 10, 32); err == nil {
				port, ok = p, true
			}
		}
	}
	if !ok {
		return host, 0
	}
	return host, port
}

// internAddress interns serverAddress(sp), written into a buffer of the
// stack and made a string only for an identity not seen before: every
// unanswered call to an address names it.
func (a *assembler) internAddress(sp *otelmap.Span) int32 {
	host, port := serverHostPort(sp)
	if port <= 0 {
		return a.intern(host)
	}
	var buf [64]byte
	b := buf[:0]
	if strings.IndexByte(host, ':') >= 0 { // as net.JoinHostPort writes it
		b = append(append(append(b, '['), host...), ']')
	} else {
		b = append(b, host...)
	}
	b = strconv.AppendInt(append(b, ':'), port, 10)
	if ix, ok := a.identIx[string(b)]; ok {
		return ix
	}
	return a.intern(string(b))
}

func durationMS(n *node) float64 {
	if n.start == 0 || n.end < n.start {
		return 0
	}
	return float64(n.end-n.start) / float64(time.Millisecond)
}

// answeredBelow maps each unanswered agent call chain to the chain that
// makes the call it stands for. A client library may open method spans of
// its own between a caller's agent call span and the HTTP request (the
// A2A Python SDK 1.x: invoke_agent CLIENT -> a2a.client...send_message ->
// _send_request -> POST, with a _check_jsonrpc_response beside the POST);
// they are no side of a call, so the POST starts a chain of its own. That
// chain, paired with a server (or completed by an agent run in process),
// is the call the chain above it names, not a second one, when every span
// between them is such a method span of their process and the agent it
// reaches is the one the chain above names (when it names one) and not the
// caller itself. Of several, the earliest; each of them stays a call of its
// own (two messages sent under one agent call span are two calls).
func (a *assembler) answeredBelow() map[int32]int32 {
	var out map[int32]int32
	for c := range a.chains {
		in := &a.chains[c]
		if in.server < 0 && in.inproc < 0 {
			continue
		}
		pr := a.nodes[in.top].proc
		p := a.nodes[in.top].parent
		if p < 0 || a.nodes[p].flags&fClientMethod == 0 {
			continue
		}
		for p >= 0 && a.nodes[p].proc == pr && a.nodes[p].flags&fClientMethod != 0 {
			p = a.nodes[p].parent
		}
		if p < 0 || a.nodes[p].proc != pr || a.nodes[p].role != recognize.RoleClient {
			continue
		}
		o := a.nodes[a.nodes[p].topClient].chain
		outer := &a.chains[o]
		if outer.server >= 0 || outer.inproc >= 0 || !outer.marker {
			continue
		}
		callee := int32(-1)
		if in.server >= 0 {
			callee = a.agentOf(in.server)
		} else {
			callee = a.nodes[in.inproc].selfIdent
		}
		if outer.nameSpan >= 0 && a.nodes[outer.nameSpan].selfIdent != callee {
			continue
		}
		if callee == a.chainCaller(outer) {
			// The caller answering its own request is no answer to the
			// call it made (it would make the call a self-call, dropped,
			// and its failure with it).
			continue
		}
		if b, ok := out[o]; ok && !a.earlier(in.top, a.chains[b].top) {
			continue
		}
		if out == nil {
			out = make(map[int32]int32)
		}
		out[o] = int32(c)
	}
	return out
}
