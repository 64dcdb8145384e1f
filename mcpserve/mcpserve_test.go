package mcpserve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/mcpserve"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}
type echoOut struct {
	Echo string `json:"echo"`
}

func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
		if in.Text == "fail" {
			return nil, echoOut{}, errors.New("asked to fail")
		}
		return nil, echoOut{Echo: in.Text}, nil
	})
	return s
}

// host serves a Host on loopback with spans recorded.
func host(t *testing.T) (*mcpserve.Host, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h, err := mcpserve.New(mcpserve.Options{BaseURL: srv.URL + mcpserve.DefaultPath, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(h.Path(), h)
	return h, rec, tp
}

func post(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTokenRequired: a request without the task's token, with a wrong one,
// with another task's, or for a closed task is refused before the MCP
// server; the right token gets through.
func TestTokenRequired(t *testing.T) {
	h, _, _ := host(t)
	a, closeA, err := h.Open(t.Context(), echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	b, closeB, err := h.Open(t.Context(), echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeB()
	if a.URL == b.URL || a.Token == b.Token {
		t.Fatalf("two tasks share an endpoint: %+v %+v", a, b)
	}
	for name, c := range map[string]struct {
		url, token string
		want       int
	}{
		"no token":           {a.URL, "", http.StatusUnauthorized},
		"wrong token":        {a.URL, "0000", http.StatusUnauthorized},
		"other task's token": {a.URL, b.Token, http.StatusUnauthorized},
		"token as prefix":    {a.URL, a.Token[:10], http.StatusUnauthorized},
		"token plus more":    {a.URL, a.Token + "x", http.StatusUnauthorized},
		"unknown path":       {a.URL + "x", a.Token, http.StatusNotFound},
		"sub path":           {a.URL + "/x", a.Token, http.StatusNotFound},
		"right token":        {a.URL, a.Token, http.StatusOK},
	} {
		if got := post(t, c.url, c.token); got != c.want {
			t.Errorf("%s: status %d, want %d", name, got, c.want)
		}
	}
	closeA()
	if got := post(t, a.URL, a.Token); got != http.StatusNotFound {
		t.Errorf("closed task: status %d, want 404", got)
	}
	if n := h.OpenTasks(); n != 1 {
		t.Errorf("%d tasks open, want 1", n)
	}
}

// TestToolCallSpans: a tool call through mcpcall makes a CLIENT span and a
// SERVER span by the MCP conventions, the server's a child of the client's
// through params._meta; a failing tool is an error on both.
func TestToolCallSpans(t *testing.T) {
	before := runtime.NumGoroutine()
	// Runs last, after the server has closed.
	t.Cleanup(func() { testenv.CheckNoGoroutineLeak(t, before) })
	h, rec, tp := host(t)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	ep, closeEp, err := h.Open(t.Context(), echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("test").Start(t.Context(), "root")
	cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{HTTPClient: &http.Client{Transport: transport},
		Middleware: []mcp.Middleware{mcpcall.ClientSpans(tp, ep.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt, err := mcpcall.ToolText(res); err != nil || !strings.Contains(txt, "hi") {
		t.Fatalf("echo: %q %v", txt, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "fail"}})
	if err != nil || !res.IsError {
		t.Fatalf("failing tool: %+v %v", res, err)
	}
	root.End()
	cs.Close()
	closeEp()

	var client, server []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != "tools/call echo" {
			continue
		}
		switch s.SpanKind() {
		case trace.SpanKindClient:
			client = append(client, s)
		case trace.SpanKindServer:
			server = append(server, s)
		}
	}
	if len(client) != 2 || len(server) != 2 {
		t.Fatalf("%d client and %d server tool spans, want 2 and 2", len(client), len(server))
	}
	for i := range 2 {
		c, s := client[i], server[i]
		if s.Parent().SpanID() != c.SpanContext().SpanID() || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("call %d: server span's parent %s, client span %s", i, s.Parent().SpanID(), c.SpanContext().SpanID())
		}
		for _, sp := range []sdktrace.ReadOnlySpan{c, s} {
			attrs := map[attribute.Key]string{}
			for _, kv := range sp.Attributes() {
				attrs[kv.Key] = kv.Value.String()
			}
			for k, want := range map[attribute.Key]string{mcpcall.AttrMethodName: "tools/call", mcpcall.AttrToolName: "echo", mcpcall.AttrOperationName: "execute_tool"} {
				if attrs[k] != want {
					t.Errorf("%s span: %s = %q, want %q", sp.SpanKind(), k, attrs[k], want)
				}
			}
			for _, k := range []attribute.Key{mcpcall.AttrSessionID, mcpcall.AttrProtocolVersion} {
				if attrs[k] == "" {
					t.Errorf("%s span: no %s", sp.SpanKind(), k)
				}
			}
			if sp.SpanKind() == trace.SpanKindServer && attrs[mcpcall.AttrRequestID] == "" {
				t.Errorf("server span: no %s", mcpcall.AttrRequestID)
			}
			failed := sp.Status().Code == codes.Error
			if failed != (i == 1) || (i == 1 && attrs[mcpcall.AttrErrorType] != mcpcall.ErrorTypeTool) {
				t.Errorf("call %d %s span: status %v, error.type %q", i, sp.SpanKind(), sp.Status(), attrs[mcpcall.AttrErrorType])
			}
		}
	}
}
