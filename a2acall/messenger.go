package a2acall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// Package a2acall is coordbench's instrumented A2A client: the Messenger
// that the green agent drives participants with and that the base purple
// agent calls its peers with. It lives apart from both so that their calls
// have one span shape (DESIGN §3) and purple need not import green. Every
// call is one figure of spans:
//
//	invoke_agent <card name>   CLIENT  the GenAI agent invocation
//	  SendMessage              CLIENT  the A2A method (or SendStreamingMessage, GetTask)
//	    POST                   CLIENT  otelhttp; carries traceparent and X-A2A-Extensions
//
// so the callee's SERVER spans pair with the POST span, and the steps it
// returns through the Traceability Extension hang under invoke_agent.
//
// It speaks A2A 1.0 through a2a-go and the 0.3 wire format through
// a2acompat/a2av0, chosen from the callee's agent card.

// instrumentationName is the tracer's instrumentation scope.
const instrumentationName = "github.com/coordbench/coordbench/a2acall"

// Messenger defaults. DefaultCallTimeout is also the default of a green
// assessment request's call_timeout_seconds.
const (
	DefaultCallTimeout = 300 * time.Second
	DefaultCardTimeout = 30 * time.Second
)

// HeaderExtensions is the A2A extension activation header as the spec and the
// 0.3 Python SDK spell it. a2a-go 1.0 sends the service parameter
// a2a.SvcParamExtensions ("A2A-Extensions") instead; the Messenger sends
// both, so that agents of either generation see the Traceability Extension
// requested.
const HeaderExtensions = "X-A2A-Extensions"

// Protocol versions a Reply reports.
const (
	Protocol10 = "1.0"
	Protocol03 = "0.3"
)

const (
	// maxCardBytes bounds an agent card; real cards are a few KiB.
	maxCardBytes = 1 << 20
	// pollMin and pollMax bound the interval between tasks/get calls when
	// a participant answers a blocking send, or ends a stream, before its
	// task is done.
	pollMin = 200 * time.Millisecond
	pollMax = 2 * time.Second
	// WellKnownCardPath is where an A2A agent serves its card, relative to
	// its URL (which may carry a path, as AgentBeats' gateway URLs do).
	WellKnownCardPath = "/.well-known/agent-card.json"
)

// Errors a Send can wrap; test them with errors.Is.
var (
	// ErrClosed: Send after Close.
	ErrClosed = errors.New("messenger is closed")
	// ErrTaskFailed: the participant answered, but its task ended failed,
	// rejected or canceled. Send returns the Reply as well.
	ErrTaskFailed = errors.New("participant's task did not complete")
	// ErrNoResult: the participant's answer ended without a message or a
	// task state that ends the call.
	ErrNoResult = errors.New("participant's answer ended without a result")
)

// Options configure a Messenger. The zero value is usable.
type Options struct {
	// CallTimeout bounds one call, card fetch and polling included
	// (default 300 s). SendRequest.Timeout overrides it for one call.
	CallTimeout time.Duration
	// CardTimeout bounds the agent card fetch within a call (default 30 s,
	// and never more than the call's own time left).
	CardTimeout time.Duration
	// DisableStreaming sends message/send even to agents whose card says
	// they stream.
	DisableStreaming bool
	// DisableContentCapture leaves message text off the invoke_agent spans
	// (gen_ai.input.messages, gen_ai.output.messages). Capture is on by
	// default for the green agent (DESIGN §3).
	DisableContentCapture bool
	// UseParticipantURL sends every call to the participant URL itself
	// rather than to the URL the agent's card names. By default the card's
	// URL is used, as A2A clients do, except when it is missing or names an
	// unspecified host (0.0.0.0), a common misconfiguration behind gateways.
	UseParticipantURL bool
	// NoTransportSpans leaves out the A2A method and HTTP client spans and
	// propagates the invoke_agent span's own context in traceparent. It is
	// for callers that report their work only as Traceability Extension
	// steps: transport spans are not steps, so nobody would ever see them,
	// and a callee that exports its spans must find its SERVER span's parent
	// among the steps the caller reports, or the call cannot be paired.
	NoTransportSpans bool
	// OnExtensionSpans, when set, receives the spans rebuilt from the
	// Traceability Extension steps of each answer (after they were stored),
	// so that a caller that exports its spans can forward its callees'
	// steps to its own backend.
	OnExtensionSpans func(ctx context.Context, spans []otelmap.Span)
	// Logger receives warnings (malformed extension payloads, close errors);
	// nil means slog.Default().
	Logger *slog.Logger
}

// Messenger talks A2A to the participants: one client per participant URL,
// created from the agent's card on first use, reused across calls and
// closed by Close. It is safe for concurrent use.
type Messenger struct {
	opts   Options
	tracer trace.Tracer
	store  *otelmap.Store
	log    *slog.Logger

	// base is the connection pool of every client; Close empties it so no
	// keep-alive goroutine outlives the Messenger.
	base    *http.Transport
	http    *http.Client
	factory *a2aclient.Factory
	// cardHTTP fetches agent cards without a span and without traceparent:
	// the fetch is the Messenger's bookkeeping, not a call, and a traced
	// GET would give the participant's server a second span paired with
	// the call.
	cardHTTP *http.Client

	// closing is canceled by Close, which so ends the calls under way.
	closing    context.Context
	closeCalls context.CancelFunc
	mu         sync.Mutex
	closed     bool
	clients    map[string]*clientEntry
}

// clientEntry is one participant URL's client. lock is held (a one-slot
// channel, so that waiting for it honours the caller's context) while the
// card is fetched, so concurrent first calls fetch it once; a failed fetch
// leaves p nil and the next call tries again, since a participant may come
// up late.
type clientEntry struct {
	lock chan struct{}
	p    *participant // guarded by Messenger.mu for writes and unlocked reads
}

// participant is what the Messenger knows of one agent.
type participant struct {
	url       string // the participant URL as normalized
	name      string // the card's name
	id        string // gen_ai.agent.id: the card's URL, else its name
	endpoint  string // where calls go
	protocol  string // the interface's protocol version, e.g. "1.0", "0.3.0"
	legacy    bool   // a 0.x protocol
	streaming bool
	extension bool // the card lists the Traceability Extension
	client    *a2aclient.Client
}

// AgentInfo describes a participant as its card does.
type AgentInfo struct {
	// Name is the card's name; it names the participant in spans and graphs.
	Name string
	// URL is the participant URL; Endpoint is where calls go.
	URL      string
	Endpoint string
	// Protocol is the A2A protocol version of the interface used ("1.0",
	// "0.3.0", ...).
	Protocol  string
	Streaming bool
	// Traceability is true when the card lists the Traceability Extension.
	Traceability bool
}

// New returns a Messenger whose spans are made by tp. store, when
// not nil, receives the spans rebuilt from the Traceability Extension steps
// participants return (the third road of spans); the Messenger's own spans
// reach the trace store through tp's processors.
func New(tp trace.TracerProvider, store *otelmap.Store, opts Options) *Messenger {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.CardTimeout <= 0 {
		opts.CardTimeout = DefaultCardTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	// No http.Client.Timeout: every call carries its own deadline, and a
	// streaming answer may legitimately last as long as the call.
	var transport http.RoundTripper = otelhttp.NewTransport(extensionHeaderTransport{base},
		otelhttp.WithTracerProvider(tp),
		// Set explicitly rather than taken from the global, so that the
		// Messenger propagates W3C trace context whatever the process
		// configured.
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
	if opts.NoTransportSpans {
		transport = extensionHeaderTransport{propagatingTransport{base}}
	}
	client := &http.Client{Transport: transport}
	m := &Messenger{
		opts:     opts,
		tracer:   tp.Tracer(instrumentationName),
		store:    store,
		log:      opts.Logger,
		base:     base,
		http:     client,
		cardHTTP: &http.Client{Transport: base},
		clients:  make(map[string]*clientEntry),
	}
	m.closing, m.closeCalls = context.WithCancel(context.Background())
	m.factory = a2aclient.NewFactory(
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithConfig(a2aclient.Config{
			PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON},
		}),
		a2aclient.WithJSONRPCTransport(client),
		a2aclient.WithRESTTransport(client),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: client}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: client}),
	)
	return m
}

// SendRequest is one message to a participant.
type SendRequest struct {
	// URL is the participant's A2A URL (may carry a path).
	URL string
	// Text is the message's text part; Data, when set, adds a data part.
	Text string
	Data map[string]any
	// ContextID keeps several messages in one A2A context; empty starts one.
	ContextID string
	// TaskID continues a task the participant left in input-required.
	TaskID string
	// Timeout bounds this call; zero means Options.CallTimeout.
	Timeout time.Duration
}

// Reply is what a participant answered.
type Reply struct {
	// AgentName is the participant's name from its agent card.
	AgentName string
	// Text joins the text parts of the final message or artifacts; Data
	// holds their data parts.
	Text string
	Data []map[string]any
	// State is the final A2A task state ("completed", "failed", ...).
	State     string
	ContextID string
	TaskID    string
	// ExtensionSteps counts the Traceability Extension steps the participant
	// returned, turned into spans of the caller's trace.
	ExtensionSteps int
	// Protocol is the A2A protocol version spoken ("1.0", "0.3.0", ...);
	// Streamed tells whether the answer came as a stream.
	Protocol string
	Streamed bool
}

// CallError is the error of a failed call. It names the participant, so a
// scenario can report it as is.
type CallError struct {
	// URL is the participant URL as given; Agent its card name when known.
	URL   string
	Agent string
	// State is the final task state when the participant answered with one.
	State string
	Err   error
}

func (e *CallError) Error() string {
	who := e.URL
	if e.Agent != "" {
		who = fmt.Sprintf("%s (%s)", e.URL, e.Agent)
	}
	return fmt.Sprintf("call participant %s: %v", who, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Agent returns what the participant's card says, fetching it (and creating
// the client) on first use.
func (m *Messenger) Agent(ctx context.Context, participantURL string) (AgentInfo, error) {
	base, err := normalizeURL(participantURL)
	if err != nil {
		return AgentInfo{}, &CallError{URL: participantURL, Err: err}
	}
	ctx, cancel := m.callContext(ctx, m.opts.CallTimeout)
	defer cancel()
	p, err := m.participant(ctx, base)
	if err != nil {
		return AgentInfo{}, &CallError{URL: participantURL, Err: closedErr(ctx, err)}
	}
	return p.info(), nil
}

func (p *participant) info() AgentInfo {
	return AgentInfo{Name: p.name, URL: p.url, Endpoint: p.endpoint, Protocol: p.protocol,
		Streaming: p.streaming, Traceability: p.extension}
}

// Send delivers one message and waits for the final answer: the stream's
// end when the agent streams, else the blocking message/send (then polling
// tasks/get if the agent answered before its task was done).
//
// Every error is a *CallError naming the URL, and the call's spans record
// it: no card, a refused connection, no answer within the timeout, a broken
// or garbled answer, Close (ErrClosed). A task that ends failed,
// rejected or canceled returns the Reply with an error wrapping
// ErrTaskFailed; other errors after the participant answered in part
// return what arrived as well (State tells how far it got).
func (m *Messenger) Send(ctx context.Context, req SendRequest) (reply *Reply, err error) {
	base, err := normalizeURL(req.URL)
	if err != nil {
		return nil, &CallError{URL: req.URL, Err: err}
	}
	if m.isClosed() {
		return nil, &CallError{URL: req.URL, Err: ErrClosed}
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = m.opts.CallTimeout
	}
	ctx, cancel := m.callContext(ctx, timeout)
	defer cancel()

	attrs := []attribute.KeyValue{
		otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
		otelmap.AttrCallType.String(string(tracedata.CallAgent)),
	}
	attrs = append(attrs, serverAttrs(base)...)
	if req.ContextID != "" {
		attrs = append(attrs, otelmap.AttrGenAIConversationID.String(req.ContextID))
	}
	if !m.opts.DisableContentCapture {
		attrs = append(attrs, otelmap.AttrGenAIInputMessages.String(GenAIContent("user", req.Text, dataParts(req.Data), "")))
	}
	// The span is named once the card is known; until then it is the bare
	// operation name, which is also what a call to an agent without a
	// readable card keeps.
	ctx, span := m.tracer.Start(ctx, otelmap.OpInvokeAgent, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	errType := ""
	var agent string
	defer func() {
		if err != nil {
			if errType == "" {
				errType = classify(err)
			}
			failSpan(span, err, errType)
			ce := &CallError{URL: req.URL, Agent: agent, Err: err}
			if reply != nil {
				ce.State = reply.State
			}
			switch {
			case errors.Is(context.Cause(ctx), ErrClosed):
				ce.Err = closedErr(ctx, err)
			case timeoutErr(err):
				ce.Err = fmt.Errorf("no answer within %v: %w", timeout, err)
			}
			err = ce
		}
		span.End()
	}()

	p, err := m.participant(ctx, base)
	if err != nil {
		errType = "agent_card"
		if c := classify(err); c == "timeout" || c == "canceled" {
			errType = c
		}
		return nil, err
	}
	agent = p.name
	span.SetName(otelmap.SpanInvokeAgentPrefix + p.name)
	span.SetAttributes(otelmap.AttrGenAIAgentName.String(p.name), otelmap.AttrGenAIAgentID.String(p.id))

	msg := a2a.NewMessage(a2a.MessageRoleUser)
	if req.Text != "" || req.Data == nil {
		msg.Parts = append(msg.Parts, a2a.NewTextPart(req.Text))
	}
	if req.Data != nil {
		msg.Parts = append(msg.Parts, a2a.NewDataPart(req.Data))
	}
	msg.ContextID = req.ContextID
	msg.TaskID = a2a.TaskID(req.TaskID)
	msg.Extensions = []string{tracedata.ExtensionURI}
	// a2a-go turns service parameters into headers: A2A-Extensions for
	// 1.0, X-A2A-Extensions for 0.3.
	ctx = a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{a2a.SvcParamExtensions: {tracedata.ExtensionURI}})

	col := &collector{}
	streamed := p.streaming && !m.opts.DisableStreaming
	if streamed {
		err = m.stream(ctx, p, msg, col)
	} else {
		err = m.block(ctx, p, msg, col)
	}
	if err == nil && !col.done() {
		err = m.poll(ctx, p, col)
	}

	reply = col.reply(p, streamed)
	reply.ExtensionSteps = m.recordExtension(ctx, span.SpanContext(), p, col.metas)
	if reply.ContextID != "" {
		span.SetAttributes(otelmap.AttrGenAIConversationID.String(reply.ContextID))
	}
	if !m.opts.DisableContentCapture && (reply.Text != "" || len(reply.Data) > 0) {
		span.SetAttributes(otelmap.AttrGenAIOutputMessages.String(GenAIContent("assistant", reply.Text, reply.Data, finishReason(col.state))))
	}
	if err != nil {
		if !col.seen {
			return nil, err
		}
		return reply, err
	}
	if failedState(col.state) {
		errType = "task_" + reply.State
		err = fmt.Errorf("%w: task %s ended %s%s", ErrTaskFailed, reply.TaskID, reply.State, excerpt(reply.Text))
		return reply, err
	}
	return reply, nil
}

// Close closes every client and the connections they kept. Calls under way
// fail; later calls return ErrClosed. Close is idempotent.
func (m *Messenger) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.closeCalls()
	entries := m.clients
	m.clients = map[string]*clientEntry{}
	var errs []error
	for u, e := range entries {
		if e.p == nil {
			continue
		}
		if err := e.p.client.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("close client of %s: %w", u, err))
		}
	}
	m.mu.Unlock()
	m.base.CloseIdleConnections()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("messenger close: %w", err)
	}
	return nil
}

// callContext bounds one call by timeout and by Close.
func (m *Messenger) callContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	stop := context.AfterFunc(m.closing, func() { cancelCause(ErrClosed) })
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() {
		cancel()
		stop()
		cancelCause(nil)
	}
}

// closedErr makes an error of a call that Close ended say so.
func closedErr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrClosed) && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

func (m *Messenger) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// participant returns the client of the participant at base, creating it
// from the agent's card on first use.
func (m *Messenger) participant(ctx context.Context, base string) (*participant, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	e := m.clients[base]
	if e == nil {
		e = &clientEntry{lock: make(chan struct{}, 1)}
		m.clients[base] = e
	}
	if p := e.p; p != nil {
		m.mu.Unlock()
		return p, nil
	}
	m.mu.Unlock()

	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the agent card: %w", ctx.Err())
	}
	defer func() { <-e.lock }()
	m.mu.Lock()
	p := e.p
	m.mu.Unlock()
	if p != nil { // another call fetched it while this one waited
		return p, nil
	}
	p, err := m.connect(ctx, base)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		_ = p.client.Destroy()
		return nil, ErrClosed
	}
	e.p = p
	return p, nil
}

// connect fetches the card at base and creates a client for the interface
// the Messenger speaks best: A2A 1.0 before 0.x, JSON-RPC before HTTP+JSON.
func (m *Messenger) connect(ctx context.Context, base string) (*participant, error) {
	cctx, cancel := context.WithTimeout(ctx, m.opts.CardTimeout)
	defer cancel()
	resolver := &agentcard.Resolver{Client: m.cardHTTP, CardParser: parseAgentCard}
	card, err := resolver.Resolve(cctx, base)
	if err != nil {
		return nil, fmt.Errorf("agent card at %s%s: %w", base, WellKnownCardPath, err)
	}
	iface := selectInterface(card.SupportedInterfaces)
	if iface == nil {
		return nil, fmt.Errorf("agent card at %s%s: no JSON-RPC or HTTP+JSON interface of A2A 0.x or 1.x among %s",
			base, WellKnownCardPath, describeInterfaces(card.SupportedInterfaces))
	}
	chosen := *iface
	chosen.URL = m.endpointURL(base, iface.URL)
	// The client is made from a copy of the card naming only the chosen
	// interface, so the protocol version used is the one the spans report.
	use := *card
	use.SupportedInterfaces = []*a2a.AgentInterface{&chosen}
	client, err := m.factory.CreateFromCard(ctx, &use)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", chosen.URL, err)
	}
	name := strings.TrimSpace(card.Name)
	if name == "" {
		name = hostPort(base)
	}
	id := iface.URL
	if id == "" {
		id = name
	}
	return &participant{
		url:       base,
		name:      name,
		id:        id,
		endpoint:  chosen.URL,
		protocol:  string(chosen.ProtocolVersion),
		legacy:    majorVersion(chosen.ProtocolVersion) == 0,
		streaming: card.Capabilities.Streaming,
		extension: slices.ContainsFunc(card.Capabilities.Extensions, func(x a2a.AgentExtension) bool { return x.URI == tracedata.ExtensionURI }),
		client:    client,
	}, nil
}

// endpointURL decides where calls go: the card's URL, made absolute against
// the participant URL, unless it names no usable host.
func (m *Messenger) endpointURL(base, cardURL string) string {
	if m.opts.UseParticipantURL || strings.TrimSpace(cardURL) == "" {
		return base
	}
	bu, err := url.Parse(base)
	if err != nil {
		return base
	}
	u, err := url.Parse(cardURL)
	if err != nil {
		return base
	}
	u = bu.ResolveReference(u)
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "" || (ip != nil && ip.IsUnspecified()) {
		return base
	}
	return u.String()
}

// block makes the blocking message/send.
func (m *Messenger) block(ctx context.Context, p *participant, msg *a2a.Message, col *collector) error {
	ctx, span := m.a2aSpan(ctx, "SendMessage", p, msg.ID, msg.ContextID)
	res, err := p.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err == nil {
		switch r := res.(type) {
		case *a2a.Message:
			col.message(r)
		case *a2a.Task:
			col.task(r)
		default:
			err = fmt.Errorf("message/send answered %T", res)
		}
	}
	m.endA2ASpan(span, p, col, err)
	if err != nil {
		return fmt.Errorf("message/send: %w", err)
	}
	return nil
}

// stream makes message/stream and reads events until one ends the call. A
// stream that ends early is left to poll.
func (m *Messenger) stream(ctx context.Context, p *participant, msg *a2a.Message, col *collector) (err error) {
	ctx, span := m.a2aSpan(ctx, "SendStreamingMessage", p, msg.ID, msg.ContextID)
	defer func() { m.endA2ASpan(span, p, col, err) }()
	for ev, err := range p.client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			return fmt.Errorf("message/stream: %w", err)
		}
		col.event(ev)
		if col.done() {
			// Leaving the loop closes the response body, so a participant
			// that keeps the stream open cannot hold the call.
			return nil
		}
	}
	if !col.seen {
		return fmt.Errorf("message/stream: %w (no event)", ErrNoResult)
	}
	return nil
}

// poll asks tasks/get until the task reaches a state that ends the call.
func (m *Messenger) poll(ctx context.Context, p *participant, col *collector) error {
	if col.taskID == "" {
		return fmt.Errorf("%w (state %s, no task id to follow)", ErrNoResult, stateName(col.state))
	}
	wait := pollMin
	for !col.done() {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("task %s still %s: %w", col.taskID, stateName(col.state), ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, pollMax)
		sctx, span := m.a2aSpan(ctx, "GetTask", p, "", col.contextID)
		task, err := p.client.GetTask(sctx, &a2a.GetTaskRequest{ID: a2a.TaskID(col.taskID)})
		if err == nil {
			col.task(task)
		}
		m.endA2ASpan(span, p, col, err)
		if err != nil {
			return fmt.Errorf("tasks/get %s: %w", col.taskID, err)
		}
	}
	return nil
}

// a2aSpan starts the A2A client span of one method; with NoTransportSpans
// it returns ctx as it is and a span that records nothing.
func (m *Messenger) a2aSpan(ctx context.Context, method string, p *participant, messageID, contextID string) (context.Context, trace.Span) {
	if m.opts.NoTransportSpans {
		return ctx, noopSpan
	}
	attrs := []attribute.KeyValue{
		otelmap.AttrA2AMethodName.String(method),
		otelmap.AttrA2AProtocolVersion.String(p.protocol),
	}
	if messageID != "" {
		attrs = append(attrs, otelmap.AttrA2AMessageID.String(messageID))
	}
	if contextID != "" {
		attrs = append(attrs, otelmap.AttrGenAIConversationID.String(contextID))
	}
	return m.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func (m *Messenger) endA2ASpan(span trace.Span, p *participant, col *collector, err error) {
	if col.taskID != "" {
		span.SetAttributes(otelmap.AttrA2ATaskID.String(col.taskID))
	}
	if col.state != a2a.TaskStateUnspecified {
		span.SetAttributes(otelmap.AttrA2ATaskState.String(wireState(col.state, p.legacy)))
	}
	if col.contextID != "" {
		span.SetAttributes(otelmap.AttrGenAIConversationID.String(col.contextID))
	}
	if err != nil {
		failSpan(span, err, classify(err))
	}
	span.End()
}

// recordExtension turns the Traceability Extension payloads of an answer
// into spans under the invoke_agent span and stores them. The payload is the
// participant's word, so a malformed one is logged and ignored: it costs the
// trace those steps, not the call.
func (m *Messenger) recordExtension(ctx context.Context, parent trace.SpanContext, p *participant, metas []map[string]any) int {
	seen := make(map[trace.SpanID]struct{})
	var spans []otelmap.Span
	for _, meta := range metas {
		rt, err := tracedata.ResponseTraceFromMetadata(meta)
		if err == nil && rt != nil {
			var got []otelmap.Span
			got, err = otelmap.SpansFromResponseTrace(rt, parent, p.name)
			for _, sp := range got {
				if _, dup := seen[sp.SpanID]; !dup {
					seen[sp.SpanID] = struct{}{}
					spans = append(spans, sp)
				}
			}
		}
		if err != nil {
			m.log.Warn("participant returned a malformed traceability extension payload; its steps are ignored",
				"participant", p.url, "agent", p.name, "err", err)
		}
	}
	if len(spans) == 0 {
		return 0
	}
	if m.store == nil {
		if m.opts.OnExtensionSpans != nil {
			m.opts.OnExtensionSpans(ctx, spans)
		} else {
			m.log.Debug("traceability extension steps dropped: the messenger has no store", "participant", p.url, "steps", len(spans))
		}
		return len(spans)
	}
	if res := m.store.Add(spans); res.Rejected > 0 {
		m.log.Warn("traceability extension spans not stored", "participant", p.url, "rejected", res.Rejected, "reason", res.Reason)
	}
	if m.opts.OnExtensionSpans != nil {
		m.opts.OnExtensionSpans(ctx, spans)
	}
	return len(spans)
}

// collector gathers an answer from a blocking result or a stream's events.
type collector struct {
	seen      bool
	final     *a2a.Message // a Message answer
	taskID    string
	contextID string
	state     a2a.TaskState
	statusMsg *a2a.Message
	artifacts []*a2a.Artifact // in order of first appearance
	metas     []map[string]any
}

// done reports whether the answer ends the call: a message, a terminal
// state, or a state that waits for the caller.
func (c *collector) done() bool {
	return c.final != nil || c.state.Terminal() || c.state == a2a.TaskStateInputRequired || c.state == a2a.TaskStateAuthRequired
}

func (c *collector) meta(m map[string]any) {
	if len(m) > 0 {
		c.metas = append(c.metas, m)
	}
}

func (c *collector) info(taskID a2a.TaskID, contextID string) {
	if taskID != "" {
		c.taskID = string(taskID)
	}
	if contextID != "" {
		c.contextID = contextID
	}
}

func (c *collector) message(msg *a2a.Message) {
	c.seen = true
	c.final = msg
	c.info(msg.TaskID, msg.ContextID)
	c.meta(msg.Metadata)
}

// task takes a whole task: it replaces the artifacts gathered so far.
func (c *collector) task(t *a2a.Task) {
	if t == nil {
		return
	}
	c.seen = true
	c.info(t.ID, t.ContextID)
	c.meta(t.Metadata)
	c.status(t.Status)
	if len(t.Artifacts) > 0 {
		c.artifacts = nil
		for _, a := range t.Artifacts {
			c.artifact(a, false)
		}
	}
	for _, h := range t.History {
		if h != nil && h.Role == a2a.MessageRoleAgent {
			c.meta(h.Metadata)
		}
	}
}

func (c *collector) status(s a2a.TaskStatus) {
	c.state = s.State
	if s.Message != nil {
		c.statusMsg = s.Message
		c.meta(s.Message.Metadata)
	}
}

// artifact adds a or, when appending, extends the artifact of the same id.
func (c *collector) artifact(a *a2a.Artifact, appendParts bool) {
	if a == nil {
		return
	}
	c.meta(a.Metadata)
	for i, old := range c.artifacts {
		if old.ID == a.ID && a.ID != "" {
			if appendParts {
				merged := *old
				merged.Parts = append(slices.Clone(old.Parts), a.Parts...)
				c.artifacts[i] = &merged
			} else {
				c.artifacts[i] = a
			}
			return
		}
	}
	c.artifacts = append(c.artifacts, a)
}

func (c *collector) event(ev a2a.Event) {
	switch e := ev.(type) {
	case *a2a.Message:
		c.message(e)
	case *a2a.Task:
		c.task(e)
	case *a2a.TaskStatusUpdateEvent:
		c.seen = true
		c.info(e.TaskID, e.ContextID)
		c.meta(e.Metadata)
		c.status(e.Status)
	case *a2a.TaskArtifactUpdateEvent:
		c.seen = true
		c.info(e.TaskID, e.ContextID)
		c.meta(e.Metadata)
		c.artifact(e.Artifact, e.Append)
	}
}

// reply builds the Reply: a Message answer's parts, else the artifacts'
// parts followed by the final status message's.
func (c *collector) reply(p *participant, streamed bool) *Reply {
	r := &Reply{AgentName: p.name, ContextID: c.contextID, TaskID: c.taskID, Protocol: p.protocol, Streamed: streamed}
	var texts []string
	addParts := func(parts []*a2a.Part) {
		for _, part := range parts {
			if part == nil {
				continue
			}
			switch v := part.Content.(type) {
			case a2a.Text:
				if s := string(v); s != "" {
					texts = append(texts, s)
				}
			case a2a.Data:
				if mv, ok := v.Value.(map[string]any); ok {
					r.Data = append(r.Data, mv)
				} else if v.Value != nil {
					r.Data = append(r.Data, map[string]any{"value": v.Value})
				}
			}
		}
	}
	if c.final != nil {
		addParts(c.final.Parts)
		r.State = "completed"
	} else {
		for _, a := range c.artifacts {
			addParts(a.Parts)
		}
		if c.statusMsg != nil {
			addParts(c.statusMsg.Parts)
		}
		r.State = stateName(c.state)
	}
	r.Text = strings.Join(texts, "\n")
	return r
}

// stateName spells a task state as A2A 0.3 and scenarios do: "completed",
// "input-required"; "unknown" when unset.
func stateName(s a2a.TaskState) string {
	if s == a2a.TaskStateUnspecified {
		return "unknown"
	}
	v := strings.TrimPrefix(string(s), "TASK_STATE_")
	return strings.ReplaceAll(strings.ToLower(v), "_", "-")
}

// wireState is the state as the protocol in use spells it, for a2a.task.state.
func wireState(s a2a.TaskState, legacy bool) string {
	if legacy {
		return stateName(s)
	}
	return string(s)
}

func failedState(s a2a.TaskState) bool {
	return s == a2a.TaskStateFailed || s == a2a.TaskStateRejected || s == a2a.TaskStateCanceled
}

func finishReason(s a2a.TaskState) string {
	if failedState(s) {
		return "error"
	}
	return "stop"
}

// parseAgentCard reads a card of either generation: a 1.0 card with
// supportedInterfaces, or a 0.3 card with url, protocolVersion and
// preferredTransport (JSON-RPC when absent, as 0.3 specifies).
func parseAgentCard(body []byte) (*a2a.AgentCard, error) {
	if len(body) > maxCardBytes {
		return nil, fmt.Errorf("agent card of %d bytes exceeds the limit of %d", len(body), maxCardBytes)
	}
	card, err := a2av0.NewAgentCardParser()(body)
	if err != nil {
		// a2av0's parser knows both forms; a card it refuses may still be
		// a plain 1.0 card with something it does not expect.
		var plain a2a.AgentCard
		if err2 := json.Unmarshal(body, &plain); err2 != nil {
			return nil, fmt.Errorf("not an A2A agent card: %w", err)
		}
		card = &plain
	}
	if len(card.SupportedInterfaces) == 0 {
		var legacy struct {
			URL             string `json:"url"`
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(body, &legacy) == nil && legacy.URL != "" {
			v := a2a.ProtocolVersion(legacy.ProtocolVersion)
			if v == "" {
				v = a2av0.Version
			}
			card.SupportedInterfaces = []*a2a.AgentInterface{{URL: legacy.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: v}}
		}
	}
	return card, nil
}

// selectInterface picks the interface to use, nil when none is spoken.
func selectInterface(ifaces []*a2a.AgentInterface) *a2a.AgentInterface {
	var best *a2a.AgentInterface
	rank := func(i *a2a.AgentInterface) int {
		r := 0
		if majorVersion(i.ProtocolVersion) == 1 {
			r += 2
		}
		if i.ProtocolBinding == a2a.TransportProtocolJSONRPC {
			r++
		}
		return r
	}
	for _, i := range ifaces {
		if i == nil || (i.ProtocolBinding != a2a.TransportProtocolJSONRPC && i.ProtocolBinding != a2a.TransportProtocolHTTPJSON) {
			continue
		}
		if mv := majorVersion(i.ProtocolVersion); mv != 0 && mv != 1 {
			continue
		}
		if best == nil || rank(i) > rank(best) {
			best = i
		}
	}
	return best
}

// majorVersion reads "1.0", "v0.3.0"; -1 when unreadable. An empty version
// is taken as 1.0, the version a card without one is written against.
func majorVersion(v a2a.ProtocolVersion) int {
	s := strings.TrimPrefix(strings.TrimSpace(string(v)), "v")
	if s == "" {
		return 1
	}
	major, _, _ := strings.Cut(s, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return -1
	}
	return n
}

func describeInterfaces(ifaces []*a2a.AgentInterface) string {
	if len(ifaces) == 0 {
		return "none"
	}
	out := make([]string, 0, len(ifaces))
	for _, i := range ifaces {
		if i != nil {
			out = append(out, fmt.Sprintf("%s %s at %q", i.ProtocolBinding, i.ProtocolVersion, i.URL))
		}
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// normalizeURL checks a participant URL and returns its base: an absolute
// http(s) URL without a trailing slash, query or fragment, and without a
// trailing /.well-known/agent-card.json should the card's own URL have been
// given.
func normalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("participant URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("participant URL %q: want an absolute http or https URL", raw)
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, WellKnownCardPath)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// serverAttrs are server.address and server.port of a participant URL, the
// port defaulting to the scheme's.
func serverAttrs(base string) []attribute.KeyValue {
	u, err := url.Parse(base)
	if err != nil {
		return nil
	}
	attrs := []attribute.KeyValue{otelmap.AttrServerAddress.String(u.Hostname())}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	return append(attrs, otelmap.AttrServerPort.Int(port))
}

func hostPort(base string) string {
	if u, err := url.Parse(base); err == nil {
		return u.Host
	}
	return base
}

// classify gives error.type a low-cardinality value.
func classify(err error) string {
	var opErr *net.OpError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case timeoutErr(err):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &opErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection"
	case errors.Is(err, ErrNoResult):
		return "no_result"
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		return "protocol"
	}
	return "_OTHER"
}

// failSpan marks span failed with the error.type the conventions ask of a
// failed operation.
func failSpan(span trace.Span, err error, errType string) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(otelmap.AttrErrorType.String(errType))
}

func timeoutErr(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// excerpt quotes the start of a failed task's text for its error.
func excerpt(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	const max = 200
	if len(text) > max {
		cut := max
		for cut > 0 && text[cut]&0xC0 == 0x80 {
			cut--
		}
		text = text[:cut] + "…"
	}
	return ": " + strconv.Quote(text)
}

// dataParts wraps one data map as the list genAIContent takes.
func dataParts(d map[string]any) []map[string]any {
	if d == nil {
		return nil
	}
	return []map[string]any{d}
}

// genAIContent renders a message as the GenAI conventions' JSON message
// list (gen_ai.input.messages / gen_ai.output.messages): the text as a text
// part and each data part JSON-encoded as one more, each bounded by
// otelmap.TruncateContent so the attribute stays valid JSON.
func GenAIContent(role, text string, data []map[string]any, finishReason string) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	msg := message{Role: role, Parts: []part{}, FinishReason: finishReason}
	if text != "" || len(data) == 0 {
		msg.Parts = append(msg.Parts, part{Type: "text", Content: otelmap.TruncateContent(text)})
	}
	for _, d := range data {
		b, err := json.Marshal(d)
		if err != nil {
			b = []byte(fmt.Sprint(d))
		}
		msg.Parts = append(msg.Parts, part{Type: "text", Content: otelmap.TruncateContent(string(b))})
	}
	b, err := json.Marshal([]message{msg})
	if err != nil { // strings only: cannot happen
		return ""
	}
	return string(b)
}

// extensionHeaderTransport puts the Traceability Extension on every
// request under both names agents read: X-A2A-Extensions, spelled so on the
// wire (the spec's header, which 0.3 Python agents read), and A2A-Extensions
// (a2a-go 1.0's service parameter). Values already set by a2a-go are kept,
// one header line per extension URI.
type extensionHeaderTransport struct{ base http.RoundTripper }

func (t extensionHeaderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := *r
	r2.Header = r.Header.Clone()
	if r2.Header == nil {
		r2.Header = http.Header{}
	}
	legacyKey := http.CanonicalHeaderKey(HeaderExtensions) // "X-A2a-Extensions"
	uris := mergeURIs(r2.Header.Values(legacyKey), []string{tracedata.ExtensionURI})
	delete(r2.Header, legacyKey)
	// A non-canonical key is written as is.
	r2.Header[HeaderExtensions] = uris
	modern := mergeURIs(r2.Header.Values(a2a.SvcParamExtensions), []string{tracedata.ExtensionURI})
	r2.Header.Del(a2a.SvcParamExtensions)
	for _, u := range modern {
		r2.Header.Add(a2a.SvcParamExtensions, u)
	}
	return t.base.RoundTrip(&r2)
}

// mergeURIs splits comma-separated header values and returns the URIs once
// each, in order.
func mergeURIs(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, v := range l {
			for _, u := range strings.Split(v, ",") {
				if u = strings.TrimSpace(u); u != "" && !slices.Contains(out, u) {
					out = append(out, u)
				}
			}
		}
	}
	return out
}

// propagatingTransport injects the W3C trace context of the request's
// context without making a span of its own (see Options.NoTransportSpans).
type propagatingTransport struct{ base http.RoundTripper }

func (t propagatingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := *r
	r2.Header = r.Header.Clone()
	if r2.Header == nil {
		r2.Header = http.Header{}
	}
	propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r2.Header))
	return t.base.RoundTrip(&r2)
}

// noopSpan stands in for the A2A method span a caller without transport
// spans does not make; ending it does nothing.
var noopSpan = trace.SpanFromContext(context.Background())
