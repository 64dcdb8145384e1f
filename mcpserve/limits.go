package mcpserve

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DefaultMaxSessionsPerTask bounds the sessions open at once on one task's
// endpoint. A client needs one; some open one per tool call and close it
// (DELETE) after, and some forget to close theirs, which then live until
// their idle timeout (sessionTimeout). Each session holds a goroutine and
// its state for as long as it lives: without a bound, a participant
// opening sessions in a loop (2000 took 2000 goroutines and 16 MB) grew
// the green agent for every other task.
const DefaultMaxSessionsPerTask = 64

// admitSession counts a request for a new session in, unless the sessions
// open and being opened reach max; release counts it out once the SDK has
// answered it (the session it opened, if any, is then among the server's).
func (t *task) admitSession(max int) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	open := 0
	for range t.server.Sessions() {
		open++
	}
	if open+t.opening >= max {
		return nil, false
	}
	t.opening++
	return func() {
		t.mu.Lock()
		t.opening--
		t.mu.Unlock()
	}, true
}

// refuseSession answers a request for a session past the bound: 429 with a
// JSON-RPC error that says which limit and what to do, logged the first
// time for the task.
func (h *Host) refuseSession(w http.ResponseWriter, t *task) {
	t.mu.Lock()
	first := !t.refused
	t.refused = true
	t.mu.Unlock()
	max := h.opts.MaxSessionsPerTask
	if first {
		h.opts.Logger.Warn("MCP endpoint: a request for one more session refused", "max_sessions_per_task", max)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": jsonrpc.CodeInvalidRequest,
		"message": "this task's MCP endpoint has " + strconv.Itoa(max) + " sessions open, the most it allows: " +
			"reuse one, or close one you no longer need (DELETE with its Mcp-Session-Id) before opening another"}})
}
