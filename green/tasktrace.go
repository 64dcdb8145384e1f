package green

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// A task's trace lives through one lifecycle, and these types are its only
// way through the store and the recorder, in the order they allow:
//
//	taskTraces.open     reserve the trace for the assessment's ingest
//	                    token, and record the assessor's spans of it
//	openTrace.settle    wait for it to settle; read the spans it was
//	                    refused while the reservation still counts them
//	settledTrace.markAssessed
//	                    stop recording it, forget its spans, count the
//	                    late ones (this ends the reservation)
//	openTrace.close     release the reservation and stop recording, for
//	                    a task that never got that far (deferred; a no-op
//	                    after markAssessed)
//
// markAssessed exists only on what settle returns, so nothing can mark a
// trace assessed before it settled, nor read its refused spans after.

// taskTraces opens the traces of an executor's tasks.
type taskTraces struct {
	store *tracestore.Store
	// recorder, when set, records the assessor's own spans of open traces
	// (the in-process road); nil records nothing (tests, offline).
	recorder *TaskTraceRecorder
}

// openTrace is one task's trace from open to close.
type openTrace struct {
	tt   *taskTraces
	id   trace.TraceID
	root trace.SpanID
	// Reserved is nil when the trace was reserved, else why not: the task
	// still runs, its trace competing with unsolicited ones.
	Reserved error
}

// open starts task's trace, whose root is task's span, for the
// assessment's ingest token. Close it when the task is done with it.
func (tt *taskTraces) open(task trace.Span, ingestToken string) *openTrace {
	sc := task.SpanContext()
	o := &openTrace{tt: tt, id: sc.TraceID(), root: sc.SpanID()}
	tt.recorder.track(o.id)
	o.Reserved = tt.store.Reserve(o.id, ingestToken)
	return o
}

// close releases what open took; it is safe after markAssessed and twice.
func (o *openTrace) close() {
	o.tt.recorder.untrack(o.id)
	o.tt.store.Release(o.id)
}

// settledTrace is a trace whose settle wait ended.
type settledTrace struct {
	tracestore.Settlement
	// Refused counts the spans the store refused the trace (its span
	// limit, the ingest token's rules).
	Refused int
	o       *openTrace
}

// settle waits for the trace to settle (tracestore.Store.Settle, with the
// trace's root), at most opts.MaxWait. Only ctx ending is an error.
func (o *openTrace) settle(ctx context.Context, opts tracestore.SettleOptions) (*settledTrace, error) {
	opts.Root = o.root
	st, err := o.tt.store.Settle(ctx, o.id, opts)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", o.id, err)
	}
	// Read before markAssessed ends the reservation that counts them.
	return &settledTrace{Settlement: st, Refused: o.tt.store.RefusedSpans(o.id), o: o}, nil
}

// markAssessed stops recording the trace and has the store forget its
// spans and count those that arrive later (tracestore.Store.MarkAssessed).
// The settled spans stay in s.
func (s *settledTrace) markAssessed() {
	s.o.tt.recorder.untrack(s.o.id)
	s.o.tt.store.MarkAssessed(s.o.id)
}
