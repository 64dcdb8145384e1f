package assemble

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/tracedata"
)

// MCP calls: tool servers in the graph (docs/trace-assembly.md#mcp-calls).
//
// Two shapes of evidence are read:
//
//  1. The OpenTelemetry MCP conventions (status Development,
//     https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/): a CLIENT
//     span on the caller and a SERVER span on the server per request, with
//     mcp.method.name (and mcp.session.id, jsonrpc.request.id,
//     gen_ai.tool.name on a tools/call), the server span a child of the
//     client span through the trace context in params._meta. coordbench's
//     own MCP server and client (mcpserve, mcpcall) emit these.
//  2. OpenInference's MCP instrumentation
//     (@arizeai/openinference-instrumentation-mcp, its Python twin), which
//     makes no span of its own: it carries the client's context in
//     params._meta so that the spans the server's tool handler makes are
//     children of the client's tool span, in another process. A span whose
//     parent is a tool step of another process, and which is no agent's
//     span nor has one below it, is the tool server's side of that call
//     (testdata/live/mcp-openinference-js).
//
// A tools/call is a call from the agent that made it to the tool server,
// a node with Role tool_server, never an agent: named by the server's
// address ("mcp://host:port", from server.address and server.port of
// either side), else by the server process's service.name. The other MCP
// requests (initialize, tools/list, notifications) are read, and are
// neither steps nor calls. The graph metrics leave tool servers out by
// default (tracedata.Agent.Measured).

// mcpSlots is what the MCP family reads.
type mcpSlots struct {
	method string // mcp.method.name
}

// methodToolsCall is the MCP method of a tool call.
const methodToolsCall = "tools/call"

// readMCP reads an mcp.* or jsonrpc.* attribute.
func (r *reading) readMCP(kv *attribute.KeyValue, key string) {
	r.claim(famMCP)
	if key == "mcp.method.name" {
		r.mcp.method = r.str(kv)
		// Every MCP request is understood, a step or not.
		r.kindRead = r.mcp.method != ""
	}
}

// mcpOperation is the operation of an MCP span: a tool call is a tool
// step; the protocol's other requests are no step.
func (s *mcpSlots) operation() uint8 {
	if s.method == methodToolsCall {
		return opTool
	}
	return opNone
}

// markToolServers flags the tool server's side of each tool call: an MCP
// server span, or (OpenInference's propagation) a span whose parent is a
// tool step in another process, no agent's span and none below it. It runs
// before identify, which names such a segment root's work the tool
// server's (toolServerIdent).
func (a *assembler) markToolServers() {
	for _, i := range a.order {
		n := &a.nodes[i]
		switch {
		case n.flags&fMCP != 0:
			if n.role == roleServer {
				n.flags |= fToolServer
			}
		case n.parent >= 0 && n.role != roleClient && n.flags&(fAgent|fAbove|fAgentLike) == 0:
			p := &a.nodes[n.parent]
			if p.proc != n.proc && p.op == opTool && p.flags&fMCP == 0 && n.segRoot == i {
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
	rank := rankServerAddr
	if name == "" {
		name, rank = a.procs[n.proc].service, rankService
	}
	if name == "" {
		name, rank = "mcp server", rankUnknown
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
		if n.flags&fToolServer == 0 || n.op != opTool && n.flags&fMCP != 0 {
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
			if pn.op == opTool {
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
			a.note(cl.caller, rankUnknown, true)
		default:
			cl.caller = a.intern(tracedata.UserAgent)
			a.note(cl.caller, rankUser, true)
		}
		n.call = a.addCall(cl)
	}
	for _, i := range a.order {
		n := &a.nodes[i]
		if n.flags&fMCP == 0 || n.role != roleClient || n.op != opTool || answered[i] {
			continue
		}
		callee := a.intern("mcp://" + serverAddress(a.span(i)))
		if serverAddress(a.span(i)) == "" {
			callee = a.intern("mcp server")
		}
		a.note(callee, rankServerAddr, true)
		a.idents[callee].tool = true
		n.call = a.addCall(call{caller: a.agentOf(i), callee: callee, callerSpan: n.agentSpan, calleeSpan: -1, class: classClient,
			failed: n.flags&fFailed != 0, start: n.start, key: n.id, latencyMS: durationMS(n)})
	}
}
