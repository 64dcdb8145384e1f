// Package mcpserve is the green agent's MCP host (docs/mcp.md): it serves
// one MCP server per assessment task over streamable HTTP, each at a path
// of its own and behind a token of its own, for as long as the task runs.
// A scenario builds the task's server (its tools) and opens it here; the
// participant receives the endpoint in the A2A message (mcpcall.Endpoint).
// A request without the task's token, with another task's token, or for a
// task that has ended is refused before the MCP SDK sees it.
package mcpserve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/mcpcall"
)

// DefaultPath is where the host is mounted on the green agent's listener.
const DefaultPath = "/mcp/"

const (
	// DefaultMaxBodyBytes bounds one request: a submission carries one
	// step's code.
	DefaultMaxBodyBytes = 4 << 20
	// sessionTimeout closes a session its client forgot.
	sessionTimeout = 15 * time.Minute
)

// Options configure a Host.
type Options struct {
	// BaseURL is the host's URL as participants reach it, ending with the
	// mount path: "http://host:port/mcp/". Required.
	BaseURL string
	// Path is the mount path on the server's mux (default DefaultPath).
	Path string
	// TracerProvider makes the server spans of the MCP calls (default
	// none).
	TracerProvider trace.TracerProvider
	// OwnSpan reports whether a span is the green agent's own (its task
	// span, its A2A call to the participant): a traceparent naming one is
	// no client span of the participant's (parent.go). Default: only the
	// task's span is known as such.
	OwnSpan func(trace.SpanContext) bool
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxSessionsPerTask bounds the sessions open at once on one task's
	// endpoint (default DefaultMaxSessionsPerTask); a request for one more
	// is answered 429 (limits.go).
	MaxSessionsPerTask int
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

// Host serves the open tasks' MCP servers. It is an http.Handler for its
// Path, safe for concurrent use.
type Host struct {
	opts   Options
	tracer trace.Tracer

	mu    sync.Mutex
	tasks map[string]*task // by path id
}

type task struct {
	token   string
	server  *mcp.Server
	handler http.Handler

	mu      sync.Mutex
	opening int  // requests for a new session under way
	refused bool // a request for a session was refused (logged once)
}

// New checks opts and returns a Host.
func New(opts Options) (*Host, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("mcpserve: no base URL")
	}
	if !strings.HasSuffix(opts.BaseURL, "/") {
		opts.BaseURL += "/"
	}
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxSessionsPerTask <= 0 {
		opts.MaxSessionsPerTask = DefaultMaxSessionsPerTask
	}
	if opts.TracerProvider == nil {
		opts.TracerProvider = noop.NewTracerProvider()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Host{opts: opts, tracer: opts.TracerProvider.Tracer(instrumentationName), tasks: map[string]*task{}}, nil
}

// Path is the mount path.
func (h *Host) Path() string { return h.opts.Path }

// Open serves s until close is called, at a new path with a new token, and
// returns the endpoint to hand the participant. tools names s's tools for
// the endpoint's data part. close ends the task's sessions and the context
// of every request still under way; later requests get 404. ctx's span is
// the task's: the server span of every request to the endpoint is in its
// trace (parent.go).
func (h *Host) Open(ctx context.Context, s *mcp.Server, tools []string) (mcpcall.Endpoint, func(), error) {
	id, err := randomHex(16)
	if err != nil {
		return mcpcall.Endpoint{}, nil, fmt.Errorf("mcpserve: %w", err)
	}
	token, err := randomHex(32)
	if err != nil {
		return mcpcall.Endpoint{}, nil, fmt.Errorf("mcpserve: %w", err)
	}
	// The middleware added last is the outermost: containPanics covers
	// the others; every request's work ends with the task.
	taskCtx, endTask := context.WithCancelCause(context.Background())
	s.AddReceivingMiddleware(h.serverSpans(trace.SpanContextFromContext(ctx)))
	s.AddReceivingMiddleware(endWithTask(taskCtx))
	s.AddReceivingMiddleware(containPanics(h.opts.Logger, id))
	t := &task{token: token, server: s, handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Logger: h.opts.Logger, SessionTimeout: sessionTimeout, MaxRequestBodyBytes: h.opts.MaxBodyBytes})}
	h.mu.Lock()
	h.tasks[id] = t
	h.mu.Unlock()
	var once sync.Once
	closeFn := func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.tasks, id)
			h.mu.Unlock()
			endTask(errTaskEnded)
			for ss := range s.Sessions() {
				_ = ss.Close()
			}
		})
	}
	return mcpcall.Endpoint{URL: h.opts.BaseURL + id, Token: token, Tools: tools}, closeFn, nil
}

// OpenTasks is how many tasks' servers are open.
func (h *Host) OpenTasks() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.tasks)
}

// ServeHTTP routes a request to its task's server after checking the
// task's token.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The task's id is the path's last segment, wherever the host is
	// mounted (at Path, and under a gateway's prefix).
	id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	if id == "" {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	t := h.tasks[id]
	h.mu.Unlock()
	if t == nil {
		http.Error(w, "no such MCP endpoint (the task has ended, or never was)", http.StatusNotFound)
		return
	}
	// RFC 9110 §11.1: the scheme name is case-insensitive.
	scheme, got, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(t.token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="coordbench-mcp"`)
		http.Error(w, "this MCP endpoint needs the task's token as Authorization: Bearer <token> (docs/mcp.md)", http.StatusUnauthorized)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		// A POST outside any session asks for a new one.
		release, ok := t.admitSession(h.opts.MaxSessionsPerTask)
		if !ok {
			h.refuseSession(w, t)
			return
		}
		defer release()
	}
	h.withRequestInfo(t.handler).ServeHTTP(w, r)
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
