package purple

import (
	"container/list"
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// This file: the bound on the agent's own span store. The store keeps the
// spans of storeMaxTraces traces for the agent's extension answers; on its
// own it refuses a new trace while that many are held (the green agent's
// rule: what it holds is being assessed), so an agent called more than
// storeMaxTraces times within storeMaxAge silently stopped returning steps.
// For the agent the oldest traces are the least useful ones: their calls
// were answered long ago. traceLRU, a span processor that runs before the
// store's recorder, makes room for every new trace by forgetting the least
// recently active one.

// storeMaxTraces is how many traces the agent keeps for its extension
// answers.
const storeMaxTraces = 1000

// traceLRU tracks the traces the agent's spans belong to, most recently
// started span last, and removes the least recent from store when a new
// trace would exceed max. Every trace in the store has a span of the
// agent's own started first (the SERVER span of the call it answers; the
// peers' steps hang under its CLIENT spans), so room is made before the
// store is asked to hold the trace.
type traceLRU struct {
	store *tracestore.Store
	max   int

	mu    sync.Mutex
	order *list.List // of trace.TraceID, least recent first
	at    map[trace.TraceID]*list.Element
	// evicted counts the traces forgotten to make room, for tests.
	evicted int
}

func newTraceLRU(store *tracestore.Store, max int) *traceLRU {
	return &traceLRU{store: store, max: max, order: list.New(), at: make(map[trace.TraceID]*list.Element)}
}

// OnStart marks the span's trace as the most recent, evicting the least
// recent trace when a new one would exceed max.
func (l *traceLRU) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	id := s.SpanContext().TraceID()
	var evict []trace.TraceID
	l.mu.Lock()
	if e := l.at[id]; e != nil {
		l.order.MoveToBack(e)
		l.mu.Unlock()
		return
	}
	for l.order.Len() >= l.max {
		oldest := l.order.Front()
		old := l.order.Remove(oldest).(trace.TraceID)
		delete(l.at, old)
		evict = append(evict, old)
		l.evicted++
	}
	l.at[id] = l.order.PushBack(id)
	l.mu.Unlock()
	// Outside l.mu: the store has a lock of its own.
	for _, old := range evict {
		l.store.Remove(old)
	}
}

func (l *traceLRU) evictedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.evicted
}

func (*traceLRU) OnEnd(sdktrace.ReadOnlySpan)      {}
func (*traceLRU) Shutdown(context.Context) error   { return nil }
func (*traceLRU) ForceFlush(context.Context) error { return nil }
