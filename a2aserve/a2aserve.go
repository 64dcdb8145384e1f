// Package a2aserve serves one A2A agent executor to clients of both protocol
// versions on one listener: A2A 1.0 JSON-RPC (a2a-go's own handler) and the
// 0.3 wire format that AgentBeats' Python a2a-sdk clients speak (through
// a2acompat/a2av0), plus the agent card in a form both read; and Serve, the
// one serve-and-shut-down loop. The green agent and the base purple agent
// serve through it, so both answer the same way, record the same server
// spans and stop the same way.
package a2aserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// Paths served besides JSON-RPC.
const (
	// LegacyCardPath is where A2A 0.2 clients look for the card.
	LegacyCardPath = "/.well-known/agent.json"
	// HealthPath answers "ok" to a GET, for container health checks that
	// do not want to parse the card.
	HealthPath = "/healthz"
)

// DefaultMaxBodyBytes bounds one JSON-RPC request body.
const DefaultMaxBodyBytes = 4 << 20

// Options configure NewHandler.
type Options struct {
	// Card is the agent card; its Capabilities are also what the handler
	// checks requests against, and the paths of its interfaces' URLs are
	// where JSON-RPC is served besides "/".
	Card *a2a.AgentCard
	// Executor runs the agent's work.
	Executor a2asrv.AgentExecutor
	// TaskStore keeps the tasks; nil is a TaskStore with the default
	// limits. Pass one to choose its limits or read its Stats.
	TaskStore *TaskStore
	// TracerProvider records the SERVER span of each JSON-RPC request
	// (otelhttp, with the A2A method and protocol version added).
	TracerProvider trace.TracerProvider
	// Logger receives a2a-go's server logs; nil discards them.
	Logger *slog.Logger
	// SSEKeepAlive, when positive, sends SSE keep-alive comments on streams
	// at this interval.
	SSEKeepAlive time.Duration
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Push, when set, serves push notifications (push.go); the card must
	// then declare Capabilities.PushNotifications, and without it must
	// not. A Push serves one handler.
	Push *Push
	// Intercept, when set, sees each JSON-RPC body before it is routed and
	// may answer the request itself by returning true (the purple agent's
	// crash fault does).
	Intercept func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

type protocolKey struct{}

// ProtocolVersion returns the A2A protocol version ("1.0" or "0.3") of the
// request whose context ctx is, or "" outside one.
func ProtocolVersion(ctx context.Context) string {
	v, _ := ctx.Value(protocolKey{}).(string)
	return v
}

// NewHandler returns a mux that serves the agent card (at the well-known
// paths, below a path prefix, and at the root for a browser), a health
// check, and JSON-RPC of both protocol versions at "/" and at the path of
// each interface URL the card names, so a gateway may mount the agent under
// http://host/<role>/ (with --card-url naming that URL). Other paths answer
// 404, other methods 405. Callers may add routes to the mux. Only the
// JSON-RPC POSTs are traced.
func NewHandler(opts Options) (*http.ServeMux, error) {
	if opts.Card == nil || opts.Executor == nil {
		return nil, errors.New("a2aserve: a card and an executor are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.TaskStore == nil {
		store, err := NewTaskStore(TaskStoreLimits{})
		if err != nil {
			return nil, err
		}
		opts.TaskStore = store
	}
	if opts.Card.Capabilities.PushNotifications != (opts.Push != nil) {
		return nil, fmt.Errorf("a2aserve: the card declares pushNotifications %t, but Options.Push is %s",
			opts.Card.Capabilities.PushNotifications, map[bool]string{true: "set", false: "nil"}[opts.Push != nil])
	}
	// Everything of ours a2a-go calls goes through contain.go.
	c := containment{log: opts.Logger}
	handlerOpts := []a2asrv.RequestHandlerOption{
		a2asrv.WithLogger(opts.Logger),
		a2asrv.WithCapabilityChecks(&opts.Card.Capabilities),
		a2asrv.WithTaskStore(containedStore{next: opts.TaskStore, c: c}),
		a2asrv.WithExecutionPanicHandler(c.executionPanic),
	}
	if opts.Push != nil {
		if err := opts.Push.attach(opts.TaskStore); err != nil {
			return nil, err
		}
		p := containedPush{next: opts.Push, c: c}
		handlerOpts = append(handlerOpts, a2asrv.WithPushNotifications(p, p))
	}
	// The 0.3 encoding of the card also holds the 1.0 fields, so one
	// document serves both kinds of client.
	cardJSON, err := a2av0.NewStaticAgentCardProducer(opts.Card).(a2asrv.AgentCardJSONProducer).CardJSON(context.Background())
	if err != nil {
		return nil, fmt.Errorf("a2aserve: agent card: %w", err)
	}
	if cardJSON, err = withSchemesOfBothVersions(cardJSON, opts.Card); err != nil { // auth.go
		return nil, fmt.Errorf("a2aserve: agent card: %w", err)
	}
	handler := &terminalAware{
		RequestHandler: a2asrv.NewHandler(containedExecutor{next: opts.Executor, c: c}, handlerOpts...),
		store:          opts.TaskStore,
		push:           opts.Push,
	}
	transport := []a2asrv.TransportOption{a2asrv.WithTransportPanicHandler(c.transportPanic)}
	if opts.SSEKeepAlive > 0 {
		transport = append(transport, a2asrv.WithTransportKeepAlive(opts.SSEKeepAlive))
	}
	rpc := &dispatch{
		v1:        a2asrv.NewJSONRPCHandler(handler, transport...),
		v03:       a2av0.NewJSONRPCHandler(handler, transport...),
		maxBody:   opts.MaxBodyBytes,
		intercept: opts.Intercept,
	}
	traceOpts := []otelhttp.Option{
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	}
	if opts.TracerProvider != nil {
		traceOpts = append(traceOpts, otelhttp.WithTracerProvider(opts.TracerProvider))
	}
	mux := http.NewServeMux()
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/", &router{
		card:     newCardHandler(cardJSON, time.Now()),
		rpc:      otelhttp.NewHandler(rpc, "a2a", traceOpts...),
		rpcPaths: rpcPaths(opts.Card),
	})
	return mux, nil
}

// rpcPaths are the paths JSON-RPC is served at: "/" and the path of each
// interface URL of the card, with and without a trailing slash.
func rpcPaths(card *a2a.AgentCard) map[string]bool {
	paths := map[string]bool{"/": true}
	for _, iface := range card.SupportedInterfaces {
		if iface == nil {
			continue
		}
		u, err := url.Parse(iface.URL)
		if err != nil || u.Path == "" {
			continue
		}
		p := strings.TrimSuffix(u.Path, "/")
		if p != "" {
			paths[p] = true
			paths[p+"/"] = true
		}
	}
	return paths
}

// router sends each request to the card or to JSON-RPC by its path and
// method, and answers the rest 404 or 405. a2a-go's JSON-RPC handler
// answers any method at any path it is mounted on with a JSON-RPC error and
// 200 OK (PUT / was "invalid request", POST /v1/metrics "parse error"); an
// HTTP client that used a wrong method or path is told so in HTTP.
type router struct {
	card     http.Handler
	rpc      http.Handler
	rpcPaths map[string]bool
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, a2asrv.WellKnownAgentCardPath) || strings.HasSuffix(p, LegacyCardPath):
		// The card also answers below a path prefix (a gateway's
		// http://host/<role>/).
		rt.card.ServeHTTP(w, r)
	case rt.rpcPaths[p]:
		switch r.Method {
		case http.MethodPost:
			rt.rpc.ServeHTTP(w, r)
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			rt.card.ServeHTTP(w, r) // for people with a browser
		default:
			methodNotAllowed(w, "GET, HEAD, OPTIONS, POST")
		}
	default:
		http.NotFound(w, r)
	}
}

// dispatch sends each JSON-RPC request to the handler of its protocol
// version, after the checks a2a-go v2.3.1 does not make: the A2A-Version the
// request names (checkVersion) and whether its params decode (checkParams).
// A2A 0.3 methods are paths ("message/send", "tasks/get"); A2A 1.0 methods
// are names ("SendMessage", "GetTask").
type dispatch struct {
	v1, v03   http.Handler
	maxBody   int64
	intercept func(http.ResponseWriter, *http.Request, []byte) bool
}

func (d *dispatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, d.maxBody))
	_ = r.Body.Close()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, codeInvalidRequest, fmt.Sprintf("request body larger than %d bytes", d.maxBody))
			return
		}
		writeRPCError(w, http.StatusBadRequest, codeParseError, "read request: "+err.Error())
		return
	}
	if d.intercept != nil && d.intercept(w, r, body) {
		return
	}
	body = withJSONNames(body) // rpc.go
	var req envelope
	// A body that is not a JSON-RPC request object goes on to a2a-go,
	// which answers a parse error or an invalid request.
	wellFormed := json.Unmarshal(body, &req) == nil && validID(req.ID) && req.JSONRPC == "2.0"
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	version, next := version1, d.v1
	if strings.Contains(req.Method, "/") {
		version, next = version03, d.v03
	}
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() && req.Method != "" {
		span.SetAttributes(
			otelmap.AttrA2AMethodName.String(req.Method),
			otelmap.AttrA2AProtocolVersion.String(version),
		)
	}
	if wellFormed {
		rpcErr := checkVersion(r, version)
		if rpcErr == nil {
			rpcErr = checkParams(req.Method, req.Params)
		}
		if rpcErr != nil {
			rpcErr.write(w, req.Method, req.ID)
			return
		}
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), protocolKey{}, version)))
}

// writeRPCError answers a request that never reached a protocol handler.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg},
	})
}

// BaseURL is http://host:port of a listener, without a trailing slash, with
// a loopback address for a listener on every interface, whose bound address
// names no host a client could use.
func BaseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
