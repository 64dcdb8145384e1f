package a2acall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// This file: the Messenger, its options, and Send, which drives one call
// through the other files' parts: the participant's client from the pool,
// the call spans, the transport, the reply collection.

// Messenger defaults. DefaultCallTimeout is also the default of a green
// assessment request's call_timeout_seconds.
const (
	DefaultCallTimeout = 300 * time.Second
	DefaultCardTimeout = 30 * time.Second
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
	// default; neither the green agent nor the base purple agent turns it off.
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
	// Credentials, when set, give the calls to participants that require
	// them a header (a bearer token, an API key): see Credentials. Agent
	// card fetches carry none.
	Credentials *Credentials
	// Allow, when set, is the only hosts the Messenger connects to: the
	// participant URLs, the URLs their cards name and the targets of
	// redirects are all held to it (allow.go). Nil allows every host.
	Allow *AllowList
	// Metadata, when set, is copied into every message's metadata: the
	// green agent hands participants its per-assessment ingest token this
	// way (docs/span-admission.md). SendRequest.Metadata adds to it per
	// call.
	Metadata map[string]any
	// Logger receives warnings (malformed extension payloads, close errors);
	// nil discards them.
	Logger *slog.Logger
}

// Messenger talks A2A to the participants: one client per participant URL,
// created from the agent's card on first use, reused across calls and
// closed by Close. It is safe for concurrent use.
type Messenger struct {
	opts   Options
	tracer trace.Tracer
	// noopTracer: tracer never records, so the Messenger makes no spans
	// (skipSpan).
	noopTracer bool
	// asClient starts a CLIENT span; made once, as every Start would
	// otherwise allocate it.
	asClient []trace.SpanStartOption
	store    SpanStore
	log      *slog.Logger

	// base is the connection pool of every client; Close empties it so no
	// keep-alive goroutine outlives the Messenger.
	base    pool
	factory *a2aclient.Factory
	// cardHTTP fetches agent cards without a span and without traceparent:
	// the fetch is the Messenger's bookkeeping, not a call, and a traced
	// GET would give the participant's server a second span paired with
	// the call.
	cardHTTP *http.Client

	// extensions is the Traceability Extension URI as a message's
	// extensions list, shared read-only by every message.
	extensions []string

	mu      sync.Mutex
	closed  bool
	clients map[string]*clientEntry
	// targets are the participant URLs as given, each parsed once.
	targets map[string]*target
	// calls are the calls under way, by a number of their own: Close
	// cancels each with ErrClosed. (A map entry per call costs no
	// allocation once the map has grown, where a context.AfterFunc on a
	// Close context cost three.)
	calls    map[uint64]context.CancelCauseFunc
	lastCall uint64
}

// SpanStore receives the spans rebuilt from the Traceability Extension
// steps participants return: the trace store (a *tracestore.Store), which
// the Messenger needs for nothing else.
type SpanStore interface {
	Add(spans []otelmap.Span) otelmap.AddResult
}

// New returns a Messenger whose spans are made by tp. store, when
// not nil, receives the spans rebuilt from the Traceability Extension steps
// participants return (the third road of spans); the Messenger's own spans
// reach the trace store through tp's processors. Pass a nil interface for
// no store, not a nil *tracestore.Store.
func New(tp trace.TracerProvider, store SpanStore, opts Options) *Messenger {
	return newMessenger(tp, store, opts, http.DefaultTransport.(*http.Transport).Clone())
}

// pool is the transport under every client: an *http.Transport, or a
// benchmark's stand-in.
type pool interface {
	http.RoundTripper
	CloseIdleConnections()
}

func newMessenger(tp trace.TracerProvider, store SpanStore, opts Options, base pool) *Messenger {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.CardTimeout <= 0 {
		opts.CardTimeout = DefaultCardTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := opts.Credentials.Validate(); err != nil {
		// Credentials a prefix of which cannot match are still usable for
		// the rest; ParseCredentials refuses them outright.
		opts.Logger.Warn("a2acall: credentials", "err", err)
	}
	client := &http.Client{Transport: newHTTPTransport(tp, base, opts.NoTransportSpans)}
	cardHTTP := &http.Client{Transport: base}
	applyAllowList(opts.Allow, base, client, cardHTTP)
	m := &Messenger{
		opts:       opts,
		tracer:     tp.Tracer(instrumentationName),
		asClient:   []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
		store:      store,
		log:        opts.Logger,
		base:       base,
		factory:    newClientFactory(client),
		cardHTTP:   cardHTTP,
		extensions: []string{tracedata.ExtensionURI},
		clients:    make(map[string]*clientEntry),
		targets:    make(map[string]*target),
		calls:      make(map[uint64]context.CancelCauseFunc),
	}
	m.noopTracer = isNoopTracer(m.tracer)
	return m
}

// SendRequest is one message to a participant.
type SendRequest struct {
	// URL is the participant's A2A URL (may carry a path).
	URL string
	// Text is the message's text part; Data, when set, adds a data part.
	Text string
	Data map[string]any
	// ExtraData are more data parts, after Data (an MCP endpoint,
	// docs/mcp.md); a "token" key in any data part is redacted from the
	// recorded content.
	ExtraData []map[string]any
	// ContextID keeps several messages in one A2A context; empty starts one.
	ContextID string
	// TaskID continues a task the participant left in input-required.
	TaskID string
	// Timeout bounds this call; zero means Options.CallTimeout.
	Timeout time.Duration
	// Metadata, when set, is added to this message's metadata over
	// Options.Metadata (a key in both takes this one's value): a purple
	// agent passes the ingest token its caller handed it on to its peers
	// this way.
	Metadata map[string]any
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
	tgt, err := m.target(req.URL)
	if err != nil {
		return nil, &CallError{URL: req.URL, Err: err}
	}
	base := tgt.base
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = m.opts.CallTimeout
	}
	ctx, cancel := m.callContext(ctx, timeout)
	defer cancel()

	// The attributes a sampler may want are given at the start (those of
	// the participant URL computed once per URL); the rest, the message
	// content above all, is computed only for a span that records, and set
	// in one go when it ends (late). Under a no-op tracer no span is made.
	// The span is named once the card is known; until then it is the bare
	// operation name, which is also what a call to an agent without a
	// readable card keeps.
	span := noopSpan
	if !skipSpan(m.noopTracer, ctx) {
		attrs := tgt.spanAttrs
		if req.ContextID != "" {
			attrs = append(attrs, otelmap.AttrGenAIConversationID.String(req.ContextID))
		}
		ctx, span = m.tracer.Start(ctx, otelmap.OpInvokeAgent, m.asClient[0], trace.WithAttributes(attrs...))
	}
	recording := span.IsRecording()
	capture := recording && !m.opts.DisableContentCapture
	var late []attribute.KeyValue
	if recording {
		late = make([]attribute.KeyValue, 0, 7)
	}
	if capture {
		late = append(late, otelmap.AttrGenAIInputMessages.String(GenAIContent("user", req.Text, dataParts(req.Data, req.ExtraData), "")))
	}
	errType := ""
	var agent string
	defer func() {
		if err != nil {
			if errType == "" {
				errType = classify(err)
			}
			if recording {
				late = append(late, failSpan(span, err, errType))
			}
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
		span.SetAttributes(late...)
		span.End()
	}()

	p, err := m.participant(ctx, base)
	if err != nil {
		errType = "agent_card"
		if c := classify(err); c == "timeout" || c == "canceled" || c == "not_allowed" {
			errType = c
		}
		return nil, err
	}
	agent = p.name
	if recording {
		span.SetName(otelmap.SpanInvokeAgentPrefix + p.name)
		late = append(late, otelmap.AttrGenAIAgentName.String(p.name), otelmap.AttrGenAIAgentID.String(p.id))
	}

	msg := a2a.NewMessage(a2a.MessageRoleUser)
	if req.Text != "" || (req.Data == nil && len(req.ExtraData) == 0) {
		msg.Parts = append(msg.Parts, a2a.NewTextPart(req.Text))
	}
	if req.Data != nil {
		msg.Parts = append(msg.Parts, a2a.NewDataPart(req.Data))
	}
	for _, d := range req.ExtraData {
		if d != nil {
			msg.Parts = append(msg.Parts, a2a.NewDataPart(d))
		}
	}
	msg.ContextID = req.ContextID
	msg.TaskID = a2a.TaskID(req.TaskID)
	// The extension headers (A2A-Extensions, X-A2A-Extensions) are set by
	// the HTTP transport, on every request.
	msg.Extensions = m.extensions
	if len(m.opts.Metadata) > 0 || len(req.Metadata) > 0 {
		msg.Metadata = make(map[string]any, len(m.opts.Metadata)+len(req.Metadata))
		maps.Copy(msg.Metadata, m.opts.Metadata)
		maps.Copy(msg.Metadata, req.Metadata)
	}

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
	reply.ExtensionSteps = m.recordExtension(ctx, p, col.metas)
	if recording && reply.ContextID != "" {
		late = append(late, otelmap.AttrGenAIConversationID.String(reply.ContextID))
	}
	if capture && (reply.Text != "" || len(reply.Data) > 0) {
		late = append(late, otelmap.AttrGenAIOutputMessages.String(GenAIContent("assistant", reply.Text, reply.Data, finishReason(col.state))))
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

// callContext bounds one call by timeout and by Close, which cancels it
// with the cause ErrClosed.
func (m *Messenger) callContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	ctx, cancelCause := context.WithCancelCause(ctx)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		cancelCause(ErrClosed)
		return ctx, cancel
	}
	m.lastCall++
	id := m.lastCall
	m.calls[id] = cancelCause
	m.mu.Unlock()
	return ctx, func() {
		m.mu.Lock()
		delete(m.calls, id)
		m.mu.Unlock()
		cancelCause(nil)
		cancel()
	}
}

// closedErr makes an error of a call that Close ended say so.
func closedErr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrClosed) && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}
