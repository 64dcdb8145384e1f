package mcpserve

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP SDK's boundary (docs/operations.md#code-we-hand-a-library). The
// SDK runs every message a client sends in a goroutine of its own
// (internal/jsonrpc2 handleAsync, go-sdk v1.8.0), through the server's
// receiving middleware to the method handler (our tool handlers included);
// nothing there recovers, so a panic in any of it ended the green agent and
// every assessment it ran. containPanics is installed outermost on every
// task's server: a panic in our middleware, a scenario's tool or the SDK's
// own handler becomes a JSON-RPC internal error (-32603) for that one
// request, logged with its stack; the session, the task and the process go
// on.

// errInternal is what the client is told; the panic and its stack are in
// the server's log only.
var errInternal = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
	Message: "internal error: the server failed on this request (it is logged); the session stays open"}

// containPanics is the receiving middleware that turns a panic under it
// into errInternal. endpoint names the task's endpoint in the log.
func containPanics(log *slog.Logger, endpoint string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			defer func() {
				if r := recover(); r != nil {
					log.Error("MCP request panicked; answered with an internal error",
						"endpoint", endpoint, "method", method, "session", sessionID(req),
						"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					res, err = nil, errInternal
				}
			}()
			return next(ctx, method, req)
		}
	}
}

// sessionID is the request's session id, "" when it has none; it never
// panics (it runs while one is being handled).
func sessionID(req mcp.Request) (id string) {
	defer func() { _ = recover() }()
	if req == nil {
		return ""
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		return ss.ID()
	}
	return ""
}
