package green

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPEndpointsMounted: a task's MCP endpoint is served at /mcp/<id>
// and under the card URL's prefix (a gateway that keeps it), needs the
// task's token and not the A2A token, and its URL is the card URL's.
func TestMCPEndpointsMounted(t *testing.T) {
	g := startGreen(t, ServerOptions{CardURL: "http://127.0.0.1:1/team/green/", A2AToken: "a2a-secret"})
	ep, closeEp, err := g.srv.MCP().Open(t.Context(), mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeEp()
	if !strings.HasPrefix(ep.URL, "http://127.0.0.1:1/team/green/mcp/") {
		t.Fatalf("endpoint URL %s", ep.URL)
	}
	id := ep.URL[strings.LastIndexByte(ep.URL, '/')+1:]
	post := func(path, token string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, strings.TrimSuffix(g.url, "/")+path,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := g.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/mcp/" + id, ep.Token, http.StatusOK},
		{"/team/green/mcp/" + id, ep.Token, http.StatusOK},
		{"/mcp/" + id, "", http.StatusUnauthorized},
		{"/mcp/" + id, "a2a-secret", http.StatusUnauthorized},
	} {
		if got := post(c.path, c.token); got != c.want {
			t.Errorf("POST %s with %q: %d, want %d", c.path, c.token, got, c.want)
		}
	}
}
