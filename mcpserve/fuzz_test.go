package mcpserve_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coordbench/coordbench/internal/mcptest"
	"github.com/coordbench/coordbench/mcpserve"
)

// toolsIn is a typed tool input (SciCode's tools take such).
type toolsIn struct {
	Code       string   `json:"code,omitempty"`
	Expression string   `json:"expression,omitempty"`
	Steps      []string `json:"steps,omitempty"`
	N          *int     `json:"n,omitempty"`
}

// fuzzServer has the kinds of tools the scenarios serve: typed input,
// untyped input, no input.
func fuzzServer() *mcp.Server {
	s := echoServer()
	mcp.AddTool(s, &mcp.Tool{Name: "typed", Description: "typed"}, func(_ context.Context, _ *mcp.CallToolRequest, in toolsIn) (*mcp.CallToolResult, toolsIn, error) {
		return nil, in, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "untyped", Description: "untyped"}, func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, map[string]any, error) {
		out := map[string]any{"keys": len(in)}
		return nil, out, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "none", Description: "no input"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, echoOut, error) {
		return nil, echoOut{Echo: "none"}, nil
	})
	return s
}

// fuzzTarget is one endpoint with an open session, and a log that must
// stay free of recovered panics.
type fuzzTarget struct {
	host   *mcpserve.Host
	client *mcptest.Client
	fresh  *mcptest.Client // no session
	logs   *lockedBuffer
}

var (
	fuzzOnce sync.Once
	fuzzT    *fuzzTarget
	fuzzErr  error
)

// sharedFuzzTarget serves one host for the whole fuzzing run: a server
// per input would measure the SDK's start-up, not its handling.
func sharedFuzzTarget() (*fuzzTarget, error) {
	fuzzOnce.Do(func() {
		logs := &lockedBuffer{}
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		h, err := mcpserve.New(mcpserve.Options{BaseURL: srv.URL + mcpserve.DefaultPath, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			fuzzErr = err
			return
		}
		mux.Handle(h.Path(), h)
		ep, _, err := h.Open(context.Background(), fuzzServer(), []string{"echo", "typed", "untyped", "none"})
		if err != nil {
			fuzzErr = err
			return
		}
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token, HTTP: srv.Client()}
		if err := c.Initialize(context.Background()); err != nil {
			fuzzErr = err
			return
		}
		fuzzT = &fuzzTarget{host: h, client: c, fresh: &mcptest.Client{URL: ep.URL, Token: ep.Token, HTTP: srv.Client()}, logs: logs}
	})
	return fuzzT, fuzzErr
}

// FuzzMCPBodies posts arbitrary bytes as a JSON-RPC body to a task's MCP
// endpoint, inside an initialized session and outside any: every answer
// is one a client can act on (mcptest.Check: never a 5xx, never an
// internal error, one response per request), nothing under the SDK
// panics, and the session still answers afterwards. Seeds: the battery of
// malformed messages and the shapes the MCP TypeScript, Python and Go SDKs
// send.
func FuzzMCPBodies(f *testing.F) {
	tools := map[string][]string{"echo": {"text"}, "typed": {"code", "expression", "steps", "n"}, "untyped": {"decision"}, "none": nil}
	for _, m := range mcptest.SDKShapes {
		f.Add(m.Body)
	}
	for i, m := range mcptest.Malformed(tools) {
		if i%15 == 0 { // a sample (TestMalformedMessages sends them all)
			f.Add(m.Body)
		}
	}
	for _, m := range mcptest.Envelopes {
		f.Add(m.Body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ft, err := sharedFuzzTarget()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*mcptest.Client{ft.client, {URL: ft.fresh.URL, Token: ft.fresh.Token, HTTP: ft.fresh.HTTP}} {
			a, err := c.Post(t.Context(), body)
			if err != nil {
				t.Fatalf("post %q: %v", body, err)
			}
			if err := mcptest.Check(body, a); err != nil {
				t.Fatalf("%q (session %t): %v", body, c == ft.client, err)
			}
		}
		if tools, err := ft.client.Tools(t.Context()); err != nil || len(tools) != 4 {
			t.Fatalf("after %q the session lists %v (%v)", body, tools, err)
		}
		if strings.Contains(ft.logs.String(), "panicked") {
			t.Fatalf("a panic was recovered after %q:\n%s", body, ft.logs.String())
		}
	})
}
