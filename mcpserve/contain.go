package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"

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

// errTaskEnded is the cause of a request's context ended by its task's.
var errTaskEnded = errors.New("the task this MCP endpoint served has ended")

// endWithTask is the receiving middleware that ends each request's context
// when its task ends (the close function Open returns): a tool call racing
// the task's end, or one its client left without cancelling it (which the
// MCP specification says is no cancellation: "Disconnection SHOULD NOT be
// interpreted as the client cancelling its request", basic/transports,
// 2025-06-18), works on no longer than its task, whatever the scenario's
// tool does with its context.
func endWithTask(task context.Context) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancelCause(ctx)
			stop := context.AfterFunc(task, func() { cancel(context.Cause(task)) })
			defer func() { stop(); cancel(nil) }()
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

// maxExactID is the largest integer a JSON number holds exactly in every
// client (2^53).
const maxExactID = 1 << 53

// unanswerableID is why the request ids of a body (one message or a
// batch) cannot be answered, "" when they can. The SDK reads a numeric id
// as a float64 and answers with its int64 conversion (go-sdk v1.8.0,
// internal/jsonrpc2 messages.go MakeID): a request with id 1.5 was
// answered as id 1, which a client may have used for another request, and
// one with id 1e300 with an id the conversion makes up. Such a body is
// refused before the SDK sees it.
func unanswerableID(body []byte) string {
	body = bytes.TrimSpace(body)
	var ids []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		var batch []struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &batch) != nil {
			return ""
		}
		for _, m := range batch {
			ids = append(ids, m.ID)
		}
	} else {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &msg) != nil {
			return "" // the SDK answers what is not JSON-RPC
		}
		ids = append(ids, msg.ID)
	}
	for _, id := range ids {
		if len(id) == 0 || id[0] == '"' || string(id) == "null" || id[0] == '{' || id[0] == '[' || id[0] == 't' || id[0] == 'f' {
			continue // absent, a string, or no number: the SDK's to judge
		}
		n, err := strconv.ParseFloat(string(id), 64)
		if err != nil || n != math.Trunc(n) || math.Abs(n) > maxExactID {
			return fmt.Sprintf("request id %s is not an integer of at most 2^53 in magnitude: it could not be answered with the same id", clipID(id))
		}
	}
	return ""
}

func clipID(id json.RawMessage) string {
	if len(id) > 40 {
		return string(id[:40]) + "…"
	}
	return string(id)
}

// writeInvalidRequest answers a body refused before the SDK saw it with a
// JSON-RPC Invalid Request error (-32600), id null as JSON-RPC 2.0 §5
// wants when the id cannot be read.
func writeInvalidRequest(w http.ResponseWriter, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": jsonrpc.CodeInvalidRequest, "message": reason}})
}
