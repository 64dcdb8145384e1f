package assemble

import (
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// MCP calls: tool servers in the graph (docs/trace-assembly.md#mcp-calls).
// The MCP family (recognize/mcp.go, which describes the two shapes of
// evidence) reads which spans are MCP requests and which are tool calls;
// this file finds the tool server's side of each and makes the calls.

// markToolServers flags the tool server's side of each tool call: an MCP
// server span, or (a propagation that makes no span of its own) a span
// whose parent is a tool step in another process, no agent's span and none
// below it. It runs
// before identify, which names such a segment root's work the tool
// server's (toolServerIdent).
func (a *assembler) markToolServers() {
	for _, i := range a.order {
		n := &a.nodes[i]
		switch {
		case n.flags&fMCP != 0:
			if n.role == recognize.RoleServer {
				n.flags |= fToolServer
			}
		case n.parent >= 0 && n.role != recognize.RoleClient && n.flags&(fAgent|fAbove|fAgentLike) == 0:
			p := &a.nodes[n.parent]
			if p.proc != n.proc && p.op == recognize.OpTool && p.flags&fMCP == 0 && n.segRoot == i {
				n.flags |= fToolServer
			}
		}
	}
}

// toolServerIdent names the tool server whose side of a call span i is.
func (a *assembler) toolServerIdent(i int32) int32 {
	n := &a.nodes[i]
	name := ""
	if addr := serverAddress(a.span(i)); addr != "" && n.flags&fMCP != 0 {
		name = "mcp://" + addr
	} else if p := n.parent; p >= 0 && a.nodes[p].flags&fMCP != 0 {
		if addr := serverAddress(a.span(p)); addr != "" {
			name = "mcp://" + addr
		}
	}
	rank := recognize.RankServerAddr
	if name == "" {
		name, rank = a.procs[n.proc].service, recognize.RankService
	}
	if name == "" {
		name, rank = "mcp server", recognize.RankUnknown
	}
	ix := a.intern(name)
	a.note(ix, rank, false)
	a.idents[ix].tool = true
	return ix
}

// toolCalls makes one call per tool call to a tool server: from the
// server's side when its span is there (the caller is the agent of its
// parent, the latency the client's when the parent is the client's span),
// else from an MCP client span nobody answered.
func (a *assembler) toolCalls() {
	answered := map[int32]bool{}
	for _, i := range a.order {
		n := &a.nodes[i]
		if n.flags&fToolServer == 0 || n.op != recognize.OpTool && n.flags&fMCP != 0 {
			continue
		}
		if n.flags&fMCP == 0 && n.segRoot != i {
			continue
		}
		cl := call{callee: a.toolServerIdent(i), callerSpan: -1, calleeSpan: -1, class: classServer,
			failed: n.flags&fFailed != 0, start: n.start, key: n.id, latencyMS: durationMS(n)}
		switch p := n.parent; {
		case p >= 0:
			pn := &a.nodes[p]
			cl.caller, cl.callerSpan = a.agentOf(p), pn.agentSpan
			if pn.op == recognize.OpTool {
				// The caller's span of the call: its view of the latency.
				answered[p] = true
				cl.class, cl.latencyMS, cl.start, cl.key = classBoth, durationMS(pn), pn.start, pn.id
				cl.failed = cl.failed || pn.flags&fFailed != 0
				if pn.flags&fExt != 0 && n.flags&fExt != 0 {
					cl.class = classExtension
				}
			}
		case n.flags&fHasParentID != 0:
			cl.caller = a.intern(tracedata.UnknownAgent)
			a.note(cl.caller, recognize.RankUnknown, true)
		default:
			cl.caller = a.intern(tracedata.UserAgent)
			a.note(cl.caller, recognize.RankUser, true)
		}
		n.call = a.addCall(cl)
	}
	for _, i := range a.order {
		n := &a.nodes[i]
		if n.flags&fMCP == 0 || n.role != recognize.RoleClient || n.op != recognize.OpTool || answered[i] {
			continue
		}
		callee := a.intern("mcp://" + serverAddress(a.span(i)))
		if serverAddress(a.span(i)) == "" {
			callee = a.intern("mcp server")
		}
		a.note(callee, recognize.RankServerAddr, true)
		a.idents[callee].tool = true
		n.call = a.addCall(call{caller: a.agentOf(i), callee: callee, callerSpan: n.agentSpan, calleeSpan: -1, class: classClient,
			failed: n.flags&fFailed != 0, start: n.start, key: n.id, latencyMS: durationMS(n)})
	}
}
