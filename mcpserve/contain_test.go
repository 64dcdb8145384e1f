package mcpserve_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// lockedBuffer is a log sink the SDK's goroutines may write to at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loggedHost is host with a logger whose output the test reads.
func loggedHost(t *testing.T) (*mcpserve.Host, *lockedBuffer, *tracetest.SpanRecorder) {
	t.Helper()
	logs := &lockedBuffer{}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h, err := mcpserve.New(mcpserve.Options{BaseURL: srv.URL + mcpserve.DefaultPath, TracerProvider: tp,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(h.Path(), h)
	return h, logs, rec
}

// panickingServer is echoServer with a tool that panics, and a receiving
// middleware (added before the host opens the server, as a scenario's
// would be) that panics on ping: our code failing inside the SDK's
// goroutine, through the SDK's own extension points.
func panickingServer() *mcp.Server {
	s := echoServer()
	mcp.AddTool(s, &mcp.Tool{Name: "boom", Description: "panics"}, func(context.Context, *mcp.CallToolRequest, echoIn) (*mcp.CallToolResult, echoOut, error) {
		var m map[string]int
		//lint:ignore SA5000 the panic under test
		m["a tool's bug"]++ // assignment to a nil map: a runtime panic
		return nil, echoOut{}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "ping" {
				panic("a middleware's bug")
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// TestPanicFailsOnlyItsRequest: a tool handler and a middleware that
// panic in the SDK's goroutine fail only their own request, answered with
// a JSON-RPC internal error and logged with the stack; the same session's
// next call, and another task's endpoint, still work; the server span of
// the failed call ends as an error. Before containPanics the first panic
// ended the test binary.
func TestPanicFailsOnlyItsRequest(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() { testenv.CheckNoGoroutineLeak(t, before) })
	h, logs, rec := loggedHost(t)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	bad, closeBad, err := h.Open(t.Context(), panickingServer(), []string{"echo", "boom"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeBad()
	good, closeGood, err := h.Open(t.Context(), echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeGood()
	client := &http.Client{Transport: transport}
	cs, err := mcpcall.Connect(t.Context(), bad, mcpcall.Options{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	other, err := mcpcall.Connect(t.Context(), good, mcpcall.Options{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	for round := range 3 {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "boom", Arguments: map[string]any{"text": "x"}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInternalError {
			t.Fatalf("round %d: panicking tool: %v, want a JSON-RPC internal error", round, err)
		}
		if err := cs.Ping(t.Context(), nil); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInternalError {
			t.Fatalf("round %d: panicking middleware: %v, want a JSON-RPC internal error", round, err)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
		if txt, terr := mcpcall.ToolText(res); err != nil || terr != nil || !strings.Contains(txt, "still here") {
			t.Fatalf("round %d: the same session after the panic: %q %v %v", round, txt, err, terr)
		}
		res, err = other.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "other task"}})
		if txt, terr := mcpcall.ToolText(res); err != nil || terr != nil || !strings.Contains(txt, "other task") {
			t.Fatalf("round %d: another task: %q %v %v", round, txt, err, terr)
		}
	}
	out := logs.String()
	for _, want := range []string{"MCP request panicked", "assignment to entry in nil map", "a middleware's bug",
		"method=tools/call", "method=ping", "stack=", "mcpserve_test.panickingServer.func1", "contain_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	failed := 0
	for _, s := range rec.Ended() {
		if s.SpanKind() != trace.SpanKindServer || s.Name() != "tools/call boom" {
			continue
		}
		failed++
		var errType string
		for _, kv := range s.Attributes() {
			if kv.Key == attribute.Key(mcpcall.AttrErrorType) {
				errType = kv.Value.String()
			}
		}
		if s.Status().Code != codes.Error || errType != "-32603" {
			t.Errorf("span of the panicked call: status %v, error.type %q", s.Status(), errType)
		}
	}
	if failed != 3 {
		t.Errorf("%d server spans of the panicked calls ended, want 3", failed)
	}
}
