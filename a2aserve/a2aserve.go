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
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
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
	// checks requests against.
	Card *a2a.AgentCard
	// Executor runs the agent's work.
	Executor a2asrv.AgentExecutor
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
	// Intercept, when set, sees each JSON-RPC body before it is routed and
	// may answer the request itself by returning true (the purple agent's
	// crash fault does).
	Intercept func(w http.ResponseWriter, r *http.Request, body []byte) bool
	// TaskStore keeps the tasks; nil means a2a-go's in-memory store, which
	// keeps every task for the life of the process.
	TaskStore taskstore.Store
}

type protocolKey struct{}

// ProtocolVersion returns the A2A protocol version ("1.0" or "0.3") of the
// request whose context ctx is, or "" outside one.
func ProtocolVersion(ctx context.Context) string {
	v, _ := ctx.Value(protocolKey{}).(string)
	return v
}

// NewHandler returns a mux that serves the agent card (at the well-known
// paths, below a path prefix, and at the root for a browser), a health check,
// and JSON-RPC of both protocol versions at every other path, so a gateway
// may mount the agent under http://host/<role>/. Callers may add routes to
// the mux. Only the JSON-RPC POSTs are traced.
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
	// The 0.3 encoding of the card also holds the 1.0 fields, so one
	// document serves both kinds of client.
	cardJSON, err := a2av0.NewStaticAgentCardProducer(opts.Card).(a2asrv.AgentCardJSONProducer).CardJSON(context.Background())
	if err != nil {
		return nil, fmt.Errorf("a2aserve: agent card: %w", err)
	}
	card := a2asrv.NewAgentCardHandler(staticCardJSON(cardJSON))
	handlerOpts := []a2asrv.RequestHandlerOption{
		a2asrv.WithLogger(opts.Logger),
		a2asrv.WithCapabilityChecks(&opts.Card.Capabilities),
	}
	if opts.TaskStore != nil {
		handlerOpts = append(handlerOpts, a2asrv.WithTaskStore(opts.TaskStore))
	}
	handler := a2asrv.NewHandler(opts.Executor, handlerOpts...)
	var transport []a2asrv.TransportOption
	if opts.SSEKeepAlive > 0 {
		transport = append(transport, a2asrv.WithTransportKeepAlive(opts.SSEKeepAlive))
	}
	rpc := &dispatch{
		v1:        a2asrv.NewJSONRPCHandler(handler, transport...),
		v03:       a2av0.NewJSONRPCHandler(handler, transport...),
		card:      card,
		maxBody:   opts.MaxBodyBytes,
		intercept: opts.Intercept,
	}
	traceOpts := []otelhttp.Option{
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.Method == http.MethodPost }),
	}
	if opts.TracerProvider != nil {
		traceOpts = append(traceOpts, otelhttp.WithTracerProvider(opts.TracerProvider))
	}
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, card)
	mux.Handle(LegacyCardPath, card)
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/", otelhttp.NewHandler(rpc, "a2a", traceOpts...))
	return mux, nil
}

// staticCardJSON serves a card already encoded.
type staticCardJSON []byte

func (c staticCardJSON) Card(context.Context) (*a2a.AgentCard, error) {
	return nil, errors.New("staticCardJSON serves JSON only")
}

func (c staticCardJSON) CardJSON(context.Context) ([]byte, error) { return c, nil }

// dispatch sends each JSON-RPC request to the handler of its protocol
// version. A2A 0.3 methods are paths ("message/send", "tasks/get"); A2A 1.0
// methods are names ("SendMessage", "GetTask").
type dispatch struct {
	v1, v03   http.Handler
	card      http.Handler
	maxBody   int64
	intercept func(http.ResponseWriter, *http.Request, []byte) bool
}

func (d *dispatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, a2asrv.WellKnownAgentCardPath) || r.URL.Path == "/") {
		// The card also answers below a path prefix (a gateway's
		// http://host/<role>/) and at the root, for people with a browser.
		d.card.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		d.v1.ServeHTTP(w, r) // answers with a JSON-RPC invalid-request error
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, d.maxBody))
	_ = r.Body.Close()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, -32600, fmt.Sprintf("request body larger than %d bytes", d.maxBody))
			return
		}
		writeRPCError(w, http.StatusBadRequest, -32700, "read request: "+err.Error())
		return
	}
	if d.intercept != nil && d.intercept(w, r, body) {
		return
	}
	var probe struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &probe) // a body that does not decode goes to v1, which answers a parse error
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	version, next := string(a2a.Version), d.v1
	if strings.Contains(probe.Method, "/") {
		version, next = string(a2av0.Version), d.v03
	}
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() && probe.Method != "" {
		span.SetAttributes(
			otelmap.AttrA2AMethodName.String(probe.Method),
			otelmap.AttrA2AProtocolVersion.String(version),
		)
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
