package tracestore

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// Settling (docs/participants.md#when-a-tasks-trace-is-complete): when is a
// trace complete enough to assemble? Its root must be held. With
// SettleOptions.Await, the trace then waits for evidence: every awaited call (a
// client chain: a CLIENT span and the CLIENT spans under it in its process, as
// assembly counts one call) must have been answered by a span of the callee's (a
// child of one of the chain's spans that is not itself part of the chain: the
// callee's SERVER span, an in-process agent span, spans rebuilt from the
// callee's Traceability Extension steps). Once every awaited call is answered,
// the spans of other roads than the in-process one must have stopped arriving
// for Quiet. MaxWait bounds it all; its default must cover exporters that batch
// for 5 s, the OpenTelemetry SDKs' default.

// SettleOptions say when a trace is complete enough to assemble.
type SettleOptions struct {
	// Root is the span whose end the trace waits for; if invalid, any span
	// without a parent will do.
	Root trace.SpanID
	// Quiet is how long no new span may arrive once the root is held and
	// every awaited call was answered. With Await set it counts from the
	// last span of another road than the in-process one (the assessor's
	// own spans are recorded as they end and say nothing of the
	// participants); without, from the last span.
	Quiet time.Duration
	// MaxWait bounds the whole wait.
	MaxWait time.Duration
	// Await, when set, names the calls whose answer the trace waits for.
	Await *Await
}

// Await names the calls of a trace that someone is expected to answer with
// spans: a call is awaited when it matches one of the rules below and did
// not fail before anyone answered it (every span of the chain without an
// HTTP status code, and one of them failed: a refused connection, say).
type Await struct {
	// Assessor awaits every agent call (a chain with a span Calls reads as
	// an agent call: an invoke_agent span, an a2a.* or
	// coordbench.call_type=AGENT attribute) made by a process whose
	// resource has coordbench.role=assessor: the assessor's own calls.
	Assessor bool
	// Agents awaits the agent calls whose callee (the agent Calls reads on
	// the chain, its top span's first) is one of these names: calls
	// between participants.
	Agents []string
	// Addresses awaits the calls, agent calls or plain HTTP, whose
	// server.address and server.port name one of these, as "host:port" or
	// as a URL (whose port defaults to the scheme's).
	Addresses []string
	// AllAgents awaits every agent call, whoever made it and whoever it
	// calls: where no assessor made the calls (a Collector connector
	// assessing production traffic), every call's server side is the
	// evidence a trace is whole.
	AllAgents bool
	// Except names callees (agent names, or "host:port") whose calls are
	// not awaited whatever the rules above say: participants known to
	// export nothing, say.
	Except []string
	// Calls is trace assembly's rule of what a span says of its call
	// (assemble.CallRule): whether it marks an agent call, and the callee
	// it names. The store does not import assembly, so the caller passes
	// the rule in; nil reads no span as an agent call, so that only
	// Addresses are awaited.
	Calls CallRule
}

// CallRule reads what one span says of the call it is a side of: whether
// it marks an agent call (rather than plain HTTP), and the agent it names
// as the callee ("" for none).
type CallRule func(sp *otelmap.Span) (agentCall bool, callee string)

// Call is an awaited call that was not answered.
type Call struct {
	// Caller is the service.name of the calling process; Callee the agent
	// name the chain gives, else its address, else "unknown".
	Caller string `json:"caller"`
	Callee string `json:"callee"`
	// SpanID is the chain's top span.
	SpanID string `json:"span_id"`
}

// Settlement is what a settle wait ended with.
type Settlement struct {
	// Spans are the trace's spans when the wait ended.
	Spans []otelmap.Span
	// Complete is true when the trace settled: root held, every awaited
	// call answered, quiet. It is false when MaxWait ended the wait.
	Complete bool
	// Awaited counts the awaited calls; Unanswered lists those not
	// answered when the wait ended (empty when Complete), sorted by caller,
	// callee and span id whatever order the spans came in, and Silent names
	// the callees (as Call.Callee) none of whose awaited calls was
	// answered, sorted.
	Awaited    int
	Unanswered []Call
	Silent     []string
	// Waited is how long the wait took.
	Waited time.Duration
}

// WaitSettled is Settle for callers that need only the spans and whether
// the trace settled.
func (s *Store) WaitSettled(ctx context.Context, id trace.TraceID, opts SettleOptions) (spans []otelmap.Span, settled bool, err error) {
	st, err := s.Settle(ctx, id, opts)
	return st.Spans, st.Complete, err
}

// Settle waits until trace id is complete by opts (see SettleOptions), or
// until opts.MaxWait passed, and returns its spans and how the wait ended.
// A trace that is not complete at MaxWait is returned all the same. Only
// ctx ending is an error; the Settlement then holds what was there.
func (s *Store) Settle(ctx context.Context, id trace.TraceID, opts SettleOptions) (Settlement, error) {
	started := time.Now()
	deadline := time.NewTimer(opts.MaxWait)
	defer deadline.Stop()
	rule := opts.Await.compile()
	// The calls are checked on a copy of the spans, outside the store's
	// lock, and at most once per checkSpacing times the last check's
	// duration: a large trace arriving in many batches costs the wait a
	// bounded share of a core, and never holds up the store.
	var calls callCheck
	checkedLen := -1
	var notBefore time.Time
	finish := func(complete bool) Settlement {
		st := Settlement{Spans: s.Spans(id), Complete: complete, Waited: time.Since(started)}
		if rule != nil {
			c := calls
			if len(st.Spans) != checkedLen {
				c = rule.check(st.Spans)
			}
			st.Awaited = c.awaited
			if !complete {
				st.Unanswered, st.Silent = c.unanswered, c.silent
			}
		}
		return st
	}
	for {
		s.mu.Lock()
		t := s.traces[id]
		var changed <-chan struct{}
		var quietLeft time.Duration
		var snapshot *packedSpans
		ready, throttled := false, false
		if t != nil {
			changed = t.changed
			ready = t.spans.hasRoot(opts.Root)
			if ready && rule != nil && t.spans.len() != checkedLen {
				if time.Now().Before(notBefore) {
					throttled = true
				} else {
					v := t.spans.view()
					snapshot = &v
				}
			}
			since := t.lastArrival
			if rule != nil {
				since = t.lastForeign
			}
			quietLeft = opts.Quiet - s.now().Sub(since)
		}
		s.mu.Unlock()

		if snapshot != nil {
			began := time.Now()
			calls, checkedLen = rule.check(snapshot.unpackAll(id)), snapshot.len()
			notBefore = time.Now().Add(checkSpacing * time.Since(began))
			continue // look again: spans may have come during the check
		}
		if rule != nil {
			ready = ready && !throttled && len(calls.unanswered) == 0
		}
		if ready && quietLeft <= 0 {
			return finish(true), nil
		}
		var quiet, recheck <-chan time.Time
		var quietTimer, recheckTimer *time.Timer
		if ready {
			quietTimer = time.NewTimer(quietLeft)
			quiet = quietTimer.C
		}
		if throttled {
			recheckTimer = time.NewTimer(time.Until(notBefore))
			recheck = recheckTimer.C
		}
		select {
		case <-ctx.Done():
			stopTimer(quietTimer)
			stopTimer(recheckTimer)
			return finish(false), fmt.Errorf("wait for trace %s: %w", id, ctx.Err())
		case <-deadline.C:
			stopTimer(quietTimer)
			stopTimer(recheckTimer)
			return finish(false), nil
		case <-changed: // nil channel when the trace is not held yet
		case <-quiet:
		case <-recheck:
		case <-pollTick(t == nil):
		}
		stopTimer(quietTimer)
		stopTimer(recheckTimer)
	}
}

// checkSpacing: a settle wait checks a trace's calls at most once per this
// many times the last check's duration, so checking takes at most about a
// fifth of a core however fast batches arrive.
const checkSpacing = 4

// pollTick lets a waiter for a trace that does not exist yet look again
// shortly, since there is no channel to wait on.
func pollTick(absent bool) <-chan time.Time {
	if !absent {
		return nil
	}
	return time.After(20 * time.Millisecond)
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// hasRoot tells whether the spans hold root or, when root is not valid,
// any span without a parent.
func (p *packedSpans) hasRoot(root trace.SpanID) bool {
	for i := range p.heads {
		if root.IsValid() {
			if p.heads[i].id == root {
				return true
			}
		} else if !p.heads[i].parent.IsValid() {
			return true
		}
	}
	return false
}
