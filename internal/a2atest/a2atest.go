// Package a2atest is the one A2A test agent of the repository's tests: a
// real A2A server on loopback, served by a2aserve (A2A 1.0 and 0.3
// JSON-RPC on one listener) around an a2a-go executor. With Legacy the card
// is a 0.3 card as a 0.3 agent writes it (url, protocolVersion,
// preferredTransport; no supportedInterfaces), so a client speaks the 0.3
// wire format (message/send, message/stream) that AgentBeats' Python agents
// speak. Each agent has its own tracer provider, can return its steps
// through the Traceability Extension, export its spans by OTLP, delegate
// to peers with a Messenger of its own (a two-level team), answer what a
// test computes, and misbehave on demand. Every request it receives is
// recorded, headers and raw bytes, so tests can see what was on the wire.
//
// Tests only: the packages that call or assess A2A agents (a2acall, green)
// import it from their tests.
package a2atest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// Fault makes a test agent misbehave.
type Fault int

const (
	// NoFault: the agent behaves.
	NoFault Fault = iota
	// FaultHang: the agent never answers (it waits until it is closed);
	// a streaming agent first says submitted and working.
	FaultHang
	// FaultFail: the task ends in state failed, with a status message
	// (ErrDeliberate's text).
	FaultFail
	// FaultGarbage: the A2A endpoint answers HTTP 200 with bytes that are
	// not JSON-RPC (the card is fine).
	FaultGarbage
	// FaultCrash: the A2A endpoint starts a response and closes the
	// connection in the middle of it.
	FaultCrash
)

// ErrDeliberate is the failure FaultFail answers with.
var ErrDeliberate = errors.New("deliberate failure of the test agent")

// Options configure Start. The zero value is a 1.0 agent named "purple"
// that answers "<name> answers: <request text>" with a completed task.
type Options struct {
	// Name is the card's name and the service.name of its spans.
	Name string
	// Legacy serves a 0.3 card, so clients speak A2A 0.3.
	Legacy bool
	// Streaming sets capabilities.streaming on the card.
	Streaming bool
	// Path serves the agent under a path, as AgentBeats' gateway does
	// ("/solver"); the URL returned includes it.
	Path string
	// Reply is a fixed answer text; ReplyFunc computes one (it wins). The
	// default is "<name> answers: <request text>", followed by the peers'
	// answers, one a line.
	Reply     string
	ReplyFunc func(ctx context.Context, in Input) (string, error)
	// ReplyData adds a data part to the answer.
	ReplyData map[string]any
	// Chunked sends the data part in a second artifact event that appends
	// to the first.
	Chunked bool
	// AsMessage answers with a Message rather than a task.
	AsMessage bool
	// Progress, when set, is the text of a working status message sent
	// before the answer (whose final status carries no message).
	Progress string
	// AskFirst, when set, ends a new task input-required with this
	// question; the answer comes when the caller continues the task.
	AskFirst string
	// Extension lists the Traceability Extension on the card and, when a
	// request activates it, returns the agent's steps in the answer's
	// metadata (on the artifact, the message, or a failed task's status
	// message).
	Extension bool
	// ExtensionPayload, when set, is returned under the extension's
	// metadata key instead of the real steps (to test malformed payloads).
	ExtensionPayload any
	// Chat adds a `chat test-model` TOOL span to the agent's work.
	Chat bool
	// Peers are participant URLs the agent asks, in order, with the request
	// text, before answering.
	Peers []string
	// Delay is how long the agent works before answering.
	Delay time.Duration
	Fault Fault
	// Store, when set, also receives every span the agent records, as if
	// it exported them by OTLP to the caller.
	Store *tracestore.Store
	// OTLP, when set, is a traces URL to which the agent exports every span
	// as it ends, with the real OTLP/HTTP exporter.
	OTLP string
	// Token, when set, is required on every A2A call (a2aserve.TokenAuth);
	// the card stays public.
	Token string
}

// Input is what ReplyFunc sees.
type Input struct {
	Text      string
	Data      []map[string]any
	ContextID string
	TaskID    string
	// PeerReplies are the peers' answers, in the order of Peers.
	PeerReplies []*a2acall.Reply
	// Metadata is the request message's metadata.
	Metadata map[string]any
}

// Request is one HTTP request a test agent received.
type Request struct {
	Method string
	Path   string
	Header http.Header
}

// Agent is a running test agent.
type Agent struct {
	// URL is the participant URL to call (with Path).
	URL  string
	Name string

	opts      Options
	srv       *httptest.Server
	tp        *sdktrace.TracerProvider
	tracer    trace.Tracer
	store     *tracestore.Store  // the agent's own spans, for its extension answers
	messenger *a2acall.Messenger // to its peers
	stop      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	requests []Request
	wire     bytes.Buffer
}

// maxWireLog bounds the raw bytes a test agent keeps.
const maxWireLog = 1 << 20

// quietLogger drops a2a-go's and the Messenger's logs.
var quietLogger = slog.New(slog.DiscardHandler)

// Start starts a test agent on loopback; it is closed at the end of the
// test.
func Start(t testing.TB, opts Options) *Agent {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "purple"
	}
	opts.Path = strings.TrimRight(opts.Path, "/")
	if opts.Path != "" && !strings.HasPrefix(opts.Path, "/") {
		opts.Path = "/" + opts.Path
	}
	p := &Agent{Name: opts.Name, opts: opts, store: tracestore.NewStore(tracestore.Limits{}), stop: make(chan struct{})}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String(opts.Name))),
		sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(p.store)),
	}
	if opts.Store != nil {
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(opts.Store)))
	}
	if opts.OTLP != "" {
		exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(opts.OTLP))
		if err != nil {
			t.Fatalf("a2atest: OTLP exporter: %v", err)
		}
		tpOpts = append(tpOpts, sdktrace.WithSyncer(exp))
	}
	p.tp = sdktrace.NewTracerProvider(tpOpts...)
	p.tracer = p.tp.Tracer("coordbench/internal/a2atest")
	if len(opts.Peers) > 0 {
		p.messenger = a2acall.New(p.tp, p.store, a2acall.Options{CallTimeout: 30 * time.Second, Logger: quietLogger})
	}

	p.srv = httptest.NewUnstartedServer(nil)
	p.srv.Listener = &wireListener{Listener: p.srv.Listener, p: p}
	p.URL = "http://" + p.srv.Listener.Addr().String() + opts.Path

	var auth *a2aserve.TokenAuth
	if opts.Token != "" {
		var err error
		if auth, err = a2aserve.NewTokenAuth(opts.Token, opts.Name); err != nil {
			t.Fatalf("a2atest: %v", err)
		}
	}
	card := p.card()
	auth.Declare(card)
	mux, err := a2aserve.NewHandler(a2aserve.Options{
		Card:           card,
		Executor:       &executor{p: p},
		TracerProvider: p.tp,
		Logger:         quietLogger,
		Intercept:      p.intercept,
	})
	if err != nil {
		t.Fatalf("a2atest: %v", err)
	}
	h := auth.RequireA2A(mux)
	if opts.Legacy {
		if h, err = p.legacyCard(h); err != nil {
			t.Fatalf("a2atest: %v", err)
		}
	}
	p.srv.Config.Handler = p.recordRequests(h)
	// The crash fault makes the server complain about hijacked writes.
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.srv.Start()
	t.Cleanup(p.Close)
	return p
}

// Close stops the agent: work in progress (a hang, a delay) ends, the
// server closes, and its tracer provider shuts down. It is idempotent.
func (p *Agent) Close() {
	p.closeOnce.Do(func() {
		close(p.stop)
		if p.messenger != nil {
			_ = p.messenger.Close()
		}
		p.srv.CloseClientConnections()
		p.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.tp.Shutdown(ctx)
	})
}

// Requests returns the HTTP requests received so far.
func (p *Agent) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Calls returns the A2A calls (POSTs) received so far.
func (p *Agent) Calls() []Request {
	var out []Request
	for _, r := range p.Requests() {
		if r.Method == http.MethodPost {
			out = append(out, r)
		}
	}
	return out
}

// CardFetches counts the agent card requests received so far.
func (p *Agent) CardFetches() int {
	n := 0
	for _, r := range p.Requests() {
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, a2acall.WellKnownCardPath) {
			n++
		}
	}
	return n
}

// Wire returns the raw bytes the agent received (at most 1 MiB).
func (p *Agent) Wire() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wire.String()
}

// Spans returns the spans the agent recorded of one trace.
func (p *Agent) Spans(id trace.TraceID) []otelmap.Span { return p.store.Spans(id) }

func (p *Agent) recordRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()})
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (p *Agent) card() *a2a.AgentCard {
	var exts []a2a.AgentExtension
	if p.opts.Extension {
		exts = []a2a.AgentExtension{{URI: tracedata.ExtensionURI, Description: "returns its steps"}}
	}
	return &a2a.AgentCard{
		Name:        p.Name,
		Description: "coordbench test agent " + p.Name,
		Version:     "1.0.0",
		// Both versions, as a2aserve serves them; the Messenger picks 1.0.
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: p.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: p.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: p.opts.Streaming, Extensions: exts},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{},
	}
}

// legacyCard serves the card as a 0.3 agent writes it, naming one 0.3
// interface, in front of next.
func (p *Agent) legacyCard(next http.Handler) (http.Handler, error) {
	capabilities := map[string]any{"streaming": p.opts.Streaming}
	if p.opts.Extension {
		capabilities["extensions"] = []map[string]any{{"uri": tracedata.ExtensionURI}}
	}
	card, err := json.Marshal(map[string]any{
		"name":               p.Name,
		"description":        "coordbench test agent " + p.Name,
		"url":                p.URL,
		"version":            "1.0.0",
		"protocolVersion":    "0.3.0",
		"preferredTransport": "JSONRPC",
		"capabilities":       capabilities,
		"defaultInputModes":  []string{"text"},
		"defaultOutputModes": []string{"text"},
		"skills":             []any{},
	})
	if err != nil {
		return nil, fmt.Errorf("0.3 card: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, a2acall.WellKnownCardPath) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(card)
	}), nil
}

// intercept answers the A2A calls of the garbage and crash faults.
func (p *Agent) intercept(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
	switch p.opts.Fault {
	case FaultGarbage:
		ct := "text/html"
		if p.opts.Streaming {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		_, _ = io.WriteString(w, "<html><body>502 this is not JSON-RPC</body></html>\n")
		return true
	case FaultCrash:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return true
		}
		ct := "application/json"
		body := `{"jsonrpc":"2.0","result":{"task":{"id":"t`
		if p.opts.Streaming {
			// One good event, then the connection dies in a keep-alive
			// comment.
			ct = "text/event-stream"
			status := `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`
			if p.opts.Legacy {
				status = `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"working"},"final":false}`
			}
			body = `data: {"jsonrpc":"2.0","id":"1","result":` + status + "}\n\n: keep-al"
		}
		// A chunk announced longer than what follows, then the connection
		// closes: the client reads an unexpected EOF.
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s", ct, 4096, body)
		_ = conn.Close()
		return true
	}
	return false
}
