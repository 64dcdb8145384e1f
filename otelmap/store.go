package otelmap

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Limits bound what the store holds. Zero fields take the defaults.
type Limits struct {
	// MaxSpansPerTrace: further spans of a full trace are rejected.
	MaxSpansPerTrace int
	// MaxTraces: spans of a new trace are rejected while this many are held
	// (after expired traces are dropped).
	MaxTraces int
	// MaxAge: a trace that received no span for this long is dropped.
	MaxAge time.Duration
}

// Default limits.
const (
	DefaultMaxSpansPerTrace = 100_000
	DefaultMaxTraces        = 10_000
	DefaultMaxAge           = time.Hour
)

func (l Limits) withDefaults() Limits {
	if l.MaxSpansPerTrace <= 0 {
		l.MaxSpansPerTrace = DefaultMaxSpansPerTrace
	}
	if l.MaxTraces <= 0 {
		l.MaxTraces = DefaultMaxTraces
	}
	if l.MaxAge <= 0 {
		l.MaxAge = DefaultMaxAge
	}
	return l
}

// Store holds spans keyed by trace id. All three roads of spans write into
// one Store; it is safe for concurrent use.
type Store struct {
	limits Limits
	now    func() time.Time

	mu     sync.Mutex
	traces map[trace.TraceID]*storedTrace

	accepted        atomic.Uint64
	duplicates      atomic.Uint64
	rejectedFull    atomic.Uint64
	rejectedTraces  atomic.Uint64
	rejectedInvalid atomic.Uint64
	evicted         atomic.Uint64
}

type storedTrace struct {
	spans       []Span
	ids         map[trace.SpanID]struct{}
	lastArrival time.Time
	// changed is closed and replaced whenever a span arrives, to wake
	// waiters.
	changed chan struct{}
}

func (t *storedTrace) index(id trace.SpanID) int {
	for i := range t.spans {
		if t.spans[i].SpanID == id {
			return i
		}
	}
	return -1
}

// NewStore returns an empty store with the given limits.
func NewStore(limits Limits) *Store {
	return &Store{
		limits: limits.withDefaults(),
		now:    time.Now,
		traces: make(map[trace.TraceID]*storedTrace),
	}
}

// Limits returns the limits in force.
func (s *Store) Limits() Limits { return s.limits }

// AddResult tells what became of the spans given to Add.
type AddResult struct {
	Accepted int
	// Duplicates were already held (same trace and span id) and were
	// dropped; they are not errors.
	Duplicates int
	// Rejected spans were not stored; Reason says why (the first reason
	// met).
	Rejected int
	Reason   string
}

// Add stores spans. Spans with an invalid trace or span id are rejected;
// so are spans over a limit. Spans already held are skipped.
func (s *Store) Add(spans []Span) AddResult {
	var res AddResult
	reject := func(reason string, counter *atomic.Uint64) {
		res.Rejected++
		counter.Add(1)
		if res.Reason == "" {
			res.Reason = reason
		}
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	swept := false
	touched := make(map[*storedTrace]struct{})
	for i := range spans {
		sp := &spans[i]
		if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
			reject("invalid trace or span id", &s.rejectedInvalid)
			continue
		}
		t := s.traces[sp.TraceID]
		if t == nil {
			if len(s.traces) >= s.limits.MaxTraces && !swept {
				s.sweepLocked(now)
				swept = true
			}
			if len(s.traces) >= s.limits.MaxTraces {
				reject(fmt.Sprintf("trace limit reached (%d traces held)", s.limits.MaxTraces), &s.rejectedTraces)
				continue
			}
			t = &storedTrace{ids: make(map[trace.SpanID]struct{}), changed: make(chan struct{})}
			s.traces[sp.TraceID] = t
		}
		if _, dup := t.ids[sp.SpanID]; dup {
			res.Duplicates++
			s.duplicates.Add(1)
			// A span rebuilt from the Traceability Extension gives way to the
			// same span as its own process recorded it, which says more.
			if sp.Source != SourceExtension {
				if i := t.index(sp.SpanID); i >= 0 && t.spans[i].Source == SourceExtension {
					replaced := *sp
					if replaced.Resource == nil {
						replaced.Resource = emptyResource
					}
					t.spans[i] = replaced
					t.lastArrival = now
					touched[t] = struct{}{}
				}
			}
			continue
		}
		if len(t.spans) >= s.limits.MaxSpansPerTrace {
			reject(fmt.Sprintf("span limit per trace reached (%d spans)", s.limits.MaxSpansPerTrace), &s.rejectedFull)
			continue
		}
		stored := *sp
		if stored.Resource == nil {
			stored.Resource = emptyResource
		}
		t.spans = append(t.spans, stored)
		t.ids[sp.SpanID] = struct{}{}
		t.lastArrival = now
		touched[t] = struct{}{}
		res.Accepted++
	}
	s.accepted.Add(uint64(res.Accepted))
	for t := range touched {
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return res
}

// sweepLocked drops traces that received nothing for MaxAge.
func (s *Store) sweepLocked(now time.Time) {
	for id, t := range s.traces {
		if now.Sub(t.lastArrival) > s.limits.MaxAge {
			delete(s.traces, id)
			s.evicted.Add(1)
		}
	}
}

// Sweep drops expired traces now.
func (s *Store) Sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(s.now())
}

// Spans returns a copy of the spans held for id, in arrival order.
func (s *Store) Spans(id trace.TraceID) []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.traces[id]
	if t == nil {
		return nil
	}
	return slices.Clone(t.spans)
}

// TraceIDs returns the ids of the traces held, sorted.
func (s *Store) TraceIDs() []trace.TraceID {
	s.mu.Lock()
	ids := make([]trace.TraceID, 0, len(s.traces))
	for id := range s.traces {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	slices.SortFunc(ids, func(a, b trace.TraceID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// Remove forgets a trace, once it has been assessed.
func (s *Store) Remove(id trace.TraceID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.traces, id)
}

// Stats are the store's counters, for logs, reports and metrics.
type Stats struct {
	Traces            int    `json:"traces"`
	Spans             int    `json:"spans"`
	SpansAccepted     uint64 `json:"spans_accepted"`
	SpansDuplicate    uint64 `json:"spans_duplicate"`
	RejectedTraceFull uint64 `json:"spans_rejected_trace_full"`
	RejectedMaxTraces uint64 `json:"spans_rejected_max_traces"`
	RejectedInvalid   uint64 `json:"spans_rejected_invalid"`
	TracesEvicted     uint64 `json:"traces_evicted"`
}

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	st := Stats{Traces: len(s.traces)}
	for _, t := range s.traces {
		st.Spans += len(t.spans)
	}
	s.mu.Unlock()
	st.SpansAccepted = s.accepted.Load()
	st.SpansDuplicate = s.duplicates.Load()
	st.RejectedTraceFull = s.rejectedFull.Load()
	st.RejectedMaxTraces = s.rejectedTraces.Load()
	st.RejectedInvalid = s.rejectedInvalid.Load()
	st.TracesEvicted = s.evicted.Load()
	return st
}

// SettleOptions say when a trace is complete enough to assemble.
type SettleOptions struct {
	// Root is the span whose end the trace waits for; if invalid, any span
	// without a parent will do.
	Root trace.SpanID
	// Quiet is how long no new span may arrive after the root has ended.
	Quiet time.Duration
	// MaxWait bounds the whole wait.
	MaxWait time.Duration
}

// WaitSettled waits until trace id's root span is held and no span arrived
// for opts.Quiet, or until opts.MaxWait passed, and returns its spans.
// settled is false when the wait ended at MaxWait; the spans held then are
// returned all the same. Only ctx ending is an error.
func (s *Store) WaitSettled(ctx context.Context, id trace.TraceID, opts SettleOptions) (spans []Span, settled bool, err error) {
	deadline := time.NewTimer(opts.MaxWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		t := s.traces[id]
		var changed <-chan struct{}
		var quietLeft time.Duration
		rootSeen := false
		if t != nil {
			changed = t.changed
			quietLeft = opts.Quiet - s.now().Sub(t.lastArrival)
			rootSeen = hasRoot(t.spans, opts.Root)
		}
		s.mu.Unlock()

		if rootSeen && quietLeft <= 0 {
			return s.Spans(id), true, nil
		}
		var quiet <-chan time.Time
		var quietTimer *time.Timer
		if rootSeen {
			quietTimer = time.NewTimer(quietLeft)
			quiet = quietTimer.C
		}
		select {
		case <-ctx.Done():
			stopTimer(quietTimer)
			return s.Spans(id), false, fmt.Errorf("wait for trace %s: %w", id, ctx.Err())
		case <-deadline.C:
			stopTimer(quietTimer)
			return s.Spans(id), false, nil
		case <-changed: // nil channel when the trace is not held yet
		case <-quiet:
		case <-pollTick(t == nil):
		}
		stopTimer(quietTimer)
	}
}

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

func hasRoot(spans []Span, root trace.SpanID) bool {
	for i := range spans {
		if root.IsValid() {
			if spans[i].SpanID == root {
				return true
			}
		} else if !spans[i].ParentSpanID.IsValid() {
			return true
		}
	}
	return false
}
