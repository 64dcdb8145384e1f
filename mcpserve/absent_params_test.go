package mcpserve_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// rpc posts one JSON-RPC message to an endpoint with the task's token and
// the session, as a Streamable HTTP client does, and returns the status,
// the session id the server gave and the body.
func rpc(t *testing.T, url, token, session, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// TestMessagesWithoutParams: the MCP TypeScript SDK (1.32.2) sends
// notifications/initialized, tools/list and ping with no "params" member;
// the Go SDK hands middleware a typed nil pointer for them. The server
// answers each and the process lives (before the fix this panicked in the
// SDK's goroutine, ending the green agent).
func TestMessagesWithoutParams(t *testing.T) {
	h, _, _ := host(t)
	ep, closeEp, err := h.Open(t.Context(), echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEp()
	code, session, body := rpc(t, ep.URL, ep.Token, "",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ts","version":"1"}}}`)
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d session %q: %s", code, session, body)
	}
	if code, _, body := rpc(t, ep.URL, ep.Token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized without params: %d %s", code, body)
	}
	for _, method := range []string{"tools/list", "ping"} {
		code, _, body := rpc(t, ep.URL, ep.Token, session, `{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`)
		if code != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Fatalf("%s without params: %d %s", method, code, body)
		}
		if method == "tools/list" && !strings.Contains(body, `"echo"`) {
			t.Errorf("tools/list without params lists no echo: %s", body)
		}
	}
	// A tool call after those still works: the session is whole.
	code, _, body = rpc(t, ep.URL, ep.Token, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if code != http.StatusOK || !strings.Contains(body, "hi") {
		t.Fatalf("tools/call: %d %s", code, body)
	}
}
