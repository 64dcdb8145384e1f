package otelmap

import (
	"bytes"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Late spans (DESIGN §3): once a trace has been assessed, the store
// forgets its spans but remembers which span ids it held, so that spans
// arriving for it afterwards (an exporter that batches longer than the
// assessor waited) are counted, per trace and in total, instead of
// becoming a trace nobody assesses. A span id that was assessed already
// (an exporter's retry) is not late; neither is a late span sent twice.
// The assessor's own spans are never late (assessorsOwn).

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
		a.held = make([]trace.SpanID, 0, len(t.ids))
		for sid := range t.ids {
			a.held = append(a.held, sid)
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

// assessorsOwn reports whether sp is the assessor's own span: recorded in
// process, or carrying the assessor's resource (coordbench.role=assessor)
// when its exporter sent it back through a collector.
func assessorsOwn(sp *Span) bool {
	return sp.Source == SourceInProcess || isAssessorResource(spanResource(sp))
}
