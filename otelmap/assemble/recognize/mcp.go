package recognize

import "go.opentelemetry.io/otel/attribute"

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
//  2. An instrumentation that makes no span of its own but carries the
//     client's context in params._meta, so that the spans the server's
//     tool handler makes are children of the client's tool span, in
//     another process (docs/trace-assembly.md#mcp-calls names it). A span
//     whose parent is a tool step of another process, and which is no
//     agent's span nor has one below it, is the tool server's side of that
//     call.
//
// A tools/call is a call from the agent that made it to the tool server,
// a node with Role tool_server, never an agent: named by the server's
// address ("mcp://host:port", from server.address and server.port of
// either side), else by the server process's service.name. The other MCP
// requests (initialize, tools/list, notifications) are read, and are
// neither steps nor calls. The graph metrics leave tool servers out by
// default (tracedata.Agent.Measured). The tool servers and their calls are
// assembly's (otelmap/assemble/toolservers.go).

// methodToolsCall is the MCP method of a tool call.
const methodToolsCall = "tools/call"

// readMCP reads an mcp.* or jsonrpc.* attribute.
func (r *Reading) readMCP(kv *attribute.KeyValue, key string) {
	r.claimCore(claimMCP)
	if key == "mcp.method.name" {
		r.s.mcpMethod = r.Str(kv)
		// Every MCP request is understood, a step or not.
		r.s.understood = r.s.mcpMethod != ""
	}
}

// mcpOperation is the operation of an MCP span: a tool call is a tool
// step; the protocol's other requests are no step.
func mcpOperation(method string) Op {
	if method == methodToolsCall {
		return OpTool
	}
	return OpNone
}
