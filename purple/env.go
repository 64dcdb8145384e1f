package purple

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// Env is what a role may use while answering one request: the agent's identity,
// its peers, its LLM and its tracer. Every method records the spans of
// docs/design.md#one-call-in-spans, so a role written against Env is visible to
// coordbench without instrumenting anything itself.
type Env struct {
	// Name is the agent's name (its card's, and its spans' gen_ai.agent.name).
	Name string
	// Role is the role's name.
	Role string
	// Peers are the agents it may call; Delegation says how (Delegate*).
	Peers      []Peer
	Delegation string
	Logger     *slog.Logger

	s *Server
}

// PeerAnswer is one peer's answer to a delegated request.
type PeerAnswer struct {
	Peer  Peer
	Reply *a2acall.Reply
	// Review is the review read from the reply; nil when Err is set.
	Review *Review
	// Err is the call's error, or why the reply holds no review.
	Err error
}

// delegates reports whether the agent passes req on to its peers: it has
// peers, the caller did not only consult it, and the request has not
// already passed through it (a cycle of peers ends there).
func (e *Env) delegates(req *Request) bool {
	return len(e.Peers) > 0 && !req.Consult && !req.onPath(e.Name)
}

// Delegate calls the peers as the agent's delegation mode says and returns
// their answers in the order of Peers (DelegateHub: the first peer's only).
// It calls nobody, and returns nil, when the agent does not delegate req
// (see Request.Path and Request.Consult). A peer that fails, hangs past the
// peer timeout or answers without a review is a PeerAnswer with Err set;
// the role decides what that costs.
func (e *Env) Delegate(ctx context.Context, req *Request) []PeerAnswer {
	if !e.delegates(req) {
		return nil
	}
	peers := e.Peers
	consult := false
	switch e.Delegation {
	case DelegateHub:
		peers, consult = peers[:1], true
	case DelegateConsult:
		consult = true
	}
	out := make([]PeerAnswer, len(peers))
	if e.Delegation == DelegateChain {
		for i, p := range peers {
			out[i] = e.ask(ctx, p, req, false)
		}
		return out
	}
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() { out[i] = e.ask(ctx, p, req, consult) })
	}
	wg.Wait()
	return out
}

func (e *Env) ask(ctx context.Context, p Peer, req *Request, consult bool) (pa PeerAnswer) {
	pa = PeerAnswer{Peer: p}
	// Asks run in goroutines of their own (Delegate): a peer's answer
	// that makes reading it panic costs that answer, not the agent.
	defer func() {
		if r := recover(); r != nil {
			if e.Logger != nil {
				e.Logger.Error("asking a peer panicked", "peer", p.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
			pa.Err = fmt.Errorf("asking %s failed unexpectedly: %v", p.Name, r)
		}
	}()
	pa.Reply, pa.Err = e.Ask(ctx, p, req, consult)
	if pa.Err == nil {
		if pa.Review, pa.Err = ParseReview(pa.Reply); pa.Err != nil {
			pa.Err = fmt.Errorf("%w: %w", errNoReview, pa.Err)
		}
	}
	return pa
}

// Ask sends req on to peer (consult: for its opinion only) and returns its
// reply. The call is one invoke_agent figure of spans, bounded by the
// agent's peer timeout. The ingest token the agent's caller handed it for
// ctx's trace goes on to the peer, so that the peer's exports carry it too.
func (e *Env) Ask(ctx context.Context, peer Peer, req *Request, consult bool) (*a2acall.Reply, error) {
	send := req.forward(e.Name, consult)
	send.URL = peer.URL
	send.ContextID = ""
	send.Timeout = e.s.opts.PeerTimeout
	send.Metadata = e.s.ingestMetadata(ctx)
	reply, err := e.s.messenger.Send(ctx, send)
	if err != nil {
		return reply, fmt.Errorf("ask %s: %w", peer.Name, err)
	}
	return reply, nil
}

// LLM returns the agent's LLM client, nil when none is configured (no
// AGENTBEATS_LLM_API_KEY): roles then answer by rule.
func (e *Env) LLM() *LLM { return e.s.llm }

// Tracer is the agent's tracer, for spans of a role's own.
func (e *Env) Tracer() trace.Tracer { return e.s.tracer }

// Tool runs fn as the tool name, inside an `execute_tool <name>` span (a
// TOOL step), recording its arguments and its result text.
func (e *Env) Tool(ctx context.Context, name string, args map[string]any, fn func(context.Context) (string, error)) error {
	ctx, span := e.s.tracer.Start(ctx, otelmap.SpanExecuteToolPrefix+name,
		trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	span.SetAttributes(
		otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool),
		otelmap.AttrGenAIToolName.String(name),
		otelmap.AttrCallType.String(string(tracedata.CallTool)),
	)
	if len(args) > 0 {
		if b, err := json.Marshal(args); err == nil {
			span.SetAttributes(otelmap.AttrGenAIToolCallArgs.String(otelmap.TruncateContent(string(b))))
		}
	}
	out, err := fn(ctx)
	if err != nil {
		failSpan(span, err, "tool_error")
		return fmt.Errorf("tool %s: %w", name, err)
	}
	span.SetAttributes(otelmap.AttrGenAIOutputMessages.String(a2acall.GenAIContent("tool", out, nil, "stop")))
	return nil
}

// failSpan marks span failed with a low-cardinality error.type.
func failSpan(span trace.Span, err error, errType string) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(otelmap.AttrErrorType.String(errType))
}

// errStopped ends the work of an agent that is shutting down.
var errStopped = errors.New("the agent is shutting down")
