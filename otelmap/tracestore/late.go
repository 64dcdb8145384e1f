package tracestore

import (
	"bytes"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// Late spans (docs/participants.md#late-spans): once a trace has been assessed,
// the store forgets its spans but remembers which span ids it held, so that
// spans arriving for it afterwards (an exporter that batches longer than the
// assessor waited) are counted, per trace and in total, instead of becoming a
// trace nobody assesses. A span id that was assessed already (an exporter's
// retry) is not late; neither is a late span sent twice. The assessor's own
// spans are never late (assessorsOwn), nor are spans of other roads that carry
// its resource (lateSpan).

// assessedTrace is what the store remembers of an assessed trace.
type assessedTrace struct {
	at time.Time
	// held are the span ids assembled, sorted.
	held []trace.SpanID
	// lateIDs are the late spans seen, to count each once.
	lateIDs map[trace.SpanID]struct{}
}

// late records span id as late and reports whether it is new.
func (a *assessedTrace) late(id trace.SpanID) bool {
	if _, found := slices.BinarySearchFunc(a.held, id, compareSpanIDs); found {
		return false
	}
	if _, dup := a.lateIDs[id]; dup {
		return false
	}
	if a.lateIDs == nil {
		a.lateIDs = make(map[trace.SpanID]struct{})
	}
	a.lateIDs[id] = struct{}{}
	return true
}

func compareSpanIDs(a, b trace.SpanID) int { return bytes.Compare(a[:], b[:]) }

// MarkAssessed forgets trace id's spans, as Remove does, and remembers
// that it was assessed: spans that arrive for it later are counted as
// late (LateSpans, Stats.SpansLate, AddResult.Late) and dropped. The store
// remembers at most Limits.MaxTraces assessed traces, each for at most
// Limits.MaxAge.
func (s *Store) MarkAssessed(id trace.TraceID) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &assessedTrace{at: now}
	if t := s.traces[id]; t != nil {
		a.held = make([]trace.SpanID, len(t.spans.heads))
		for i, h := range t.spans.heads {
			a.held[i] = h.id
		}
		slices.SortFunc(a.held, compareSpanIDs)
		delete(s.traces, id)
	}
	s.forgetLocked(id, true)
	if _, again := s.assessed[id]; !again {
		s.assessedOrder = append(s.assessedOrder, id)
	}
	s.assessed[id] = a
	for len(s.assessedOrder) > s.limits.MaxTraces {
		delete(s.assessed, s.assessedOrder[0])
		s.assessedOrder = s.assessedOrder[1:]
	}
}

// LateSpans returns how many spans arrived for trace id after it was
// assessed (0 for a trace not marked assessed, or forgotten since).
func (s *Store) LateSpans(id trace.TraceID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.assessed[id]; a != nil {
		return len(a.lateIDs)
	}
	return 0
}

// lateSpan records span sp, of another road than the in-process one, as
// late and reports whether it counts: a new span id, not held when the
// trace was assessed, and not one with the assessor's resource. Those come
// back when the assessor exports its own spans to a collector that also
// feeds the receiver (collector-config.yaml: the evaluator spans that end
// after assembly), or are forged; either way they say nothing about the
// participants, so they are dropped without being counted late. They are
// never stored either: only the in-process road speaks for the assessor
// (provenance.go).
func (a *assessedTrace) lateSpan(sp *otelmap.Span) bool {
	if isAssessorResource(spanResource(sp)) {
		return false
	}
	return a.late(sp.SpanID)
}

// assessorsOwn reports whether sp is the assessor's own span: recorded in
// process. A span of another road is never the assessor's, whatever
// resource it names (see lateSpan and provenance.go).
func assessorsOwn(sp *otelmap.Span) bool {
	return sp.Source == otelmap.SourceInProcess
}
