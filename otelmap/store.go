package otelmap

import (
	"bytes"
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
	// (after expired traces are dropped). Reserved traces do not count
	// (admission.go).
	MaxTraces int
	// Admission bounds reservations and each source's share of MaxTraces.
	Admission AdmissionLimits
	// MaxAge: a trace that received no span for this long is dropped, and
	// so is the memory of a trace assessed this long ago.
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
	// assessed remembers the traces that were assessed and forgotten, so
	// spans that arrive for them later are counted rather than held;
	// assessedOrder is their order of assessment, oldest first.
	assessed      map[trace.TraceID]*assessedTrace
	assessedOrder []trace.TraceID

	// adm is span admission's state (admission.go), guarded by mu.
	adm admission

	accepted        atomic.Uint64
	duplicates      atomic.Uint64
	rejectedFull    atomic.Uint64
	rejectedTraces  atomic.Uint64
	rejectedInvalid atomic.Uint64
	evicted         atomic.Uint64
	late            atomic.Uint64
}

type storedTrace struct {
	spans       []Span
	ids         map[trace.SpanID]struct{}
	lastArrival time.Time
	// lastForeign is when the last span of another road than the
	// in-process one arrived: the assessor's own spans are recorded as they
	// end, so they say nothing about whether participants are done.
	lastForeign time.Time
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
	limits = limits.withDefaults()
	return &Store{
		limits:   limits,
		now:      time.Now,
		traces:   make(map[trace.TraceID]*storedTrace),
		assessed: make(map[trace.TraceID]*assessedTrace),
		adm:      newAdmission(limits),
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
	// Late spans arrived for a trace that was already assessed
	// (MarkAssessed); they are counted, not stored. LateTrace is the first
	// such trace, for a log line.
	Late      int
	LateTrace trace.TraceID
}

// Add stores spans. Spans with an invalid trace or span id are rejected;
// so are spans over a limit. Spans already held are skipped. Spans of a
// trace already assessed are counted as late (AddResult.Late) and
// dropped, except the assessor's own (assessorsOwn: evaluator spans that
// end after assembly, recorded in process), which are stored as a trace of
// their own, as before it was assessed; spans of other roads with the
// assessor's resource are dropped without counting (late.go). Add copies
// spans; the caller keeps its slice.
func (s *Store) Add(spans []Span) AddResult { return s.AddOwnedFrom("", slices.Clone(spans)) }

// AddFrom is Add for spans from source, an exporter's identity: its new
// traces that nobody reserved count against its quota (admission.go).
// Source "" (in process, the Traceability Extension, files) has none.
func (s *Store) AddFrom(source string, spans []Span) AddResult {
	return s.AddOwnedFrom(source, slices.Clone(spans))
}

// AddOwned is AddOwnedFrom without a source.
func (s *Store) AddOwned(spans []Span) AddResult { return s.AddOwnedFrom("", spans) }

// AddOwnedFrom is AddFrom for a batch the store may keep: it reorders spans in
// place, grouping them per trace (in order of first appearance, each
// trace's spans in their order), and a trace new in this batch keeps its
// group as its span slice, so a span is not copied at all; spans of a
// trace already held are appended to it once per batch. The caller must
// not use spans afterwards. A trace kept longer than the others of its
// batch keeps the whole batch's array alive (184 bytes a span): the
// receiver's batches are one export request each.
//
// Limits, duplicates, late spans and the extension replacement work as in
// Add, span by span, in the grouped order: Reason is the first reason met
// in that order.
func (s *Store) AddOwnedFrom(source string, spans []Span) AddResult {
	var res AddResult
	groups := groupByTrace(spans)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	swept := false
	var touched []*storedTrace
	for start := 0; start < len(spans); {
		end := start + int(groups[start])
		if t := s.addGroupLocked(spans[start:end], source, now, &swept, &res); t != nil {
			touched = append(touched, t)
		}
		start = end
	}
	s.accepted.Add(uint64(res.Accepted))
	for _, t := range touched {
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return res
}

// addGroupLocked stores group, spans of one trace id, and returns the
// trace it changed, if any. Accepted spans are compacted to the front of
// group, which becomes the trace's span slice when the trace is new.
func (s *Store) addGroupLocked(group []Span, source string, now time.Time, swept *bool, res *AddResult) *storedTrace {
	reject := func(reason string, counter *atomic.Uint64) {
		res.Rejected++
		counter.Add(1)
		if res.Reason == "" {
			res.Reason = reason
		}
	}
	var t *storedTrace
	changed := false
	kept := group[:0] // accepted, not yet in t.spans
	for i := range group {
		sp := &group[i]
		if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
			reject("invalid trace or span id", &s.rejectedInvalid)
			continue
		}
		if a := s.assessed[sp.TraceID]; a != nil && !assessorsOwn(sp) {
			if a.lateSpan(sp) {
				res.Late++
				s.late.Add(1)
				if !res.LateTrace.IsValid() {
					res.LateTrace = sp.TraceID
				}
			}
			continue
		}
		if t == nil {
			t = s.traces[sp.TraceID]
		}
		if t == nil {
			var reason string
			var counter *atomic.Uint64
			if t, reason, counter = s.newTraceLocked(sp.TraceID, source, now, swept, len(group)-i); t == nil {
				reject(reason, counter)
				continue
			}
		}
		if _, dup := t.ids[sp.SpanID]; dup {
			res.Duplicates++
			s.duplicates.Add(1)
			// A span rebuilt from the Traceability Extension gives way to the
			// same span as its own process recorded it, which says more.
			if sp.Source != SourceExtension {
				if held := t.find(kept, sp.SpanID); held != nil && held.Source == SourceExtension {
					replaced := *sp
					if replaced.Resource == nil {
						replaced.Resource = emptyResource
					}
					*held = replaced
					t.arrived(now, sp.Source)
					changed = true
				}
			}
			continue
		}
		if len(t.spans)+len(kept) >= s.limits.MaxSpansPerTrace {
			reject(fmt.Sprintf("span limit per trace reached (%d spans)", s.limits.MaxSpansPerTrace), &s.rejectedFull)
			s.refusedLocked(sp.TraceID)
			continue
		}
		if sp.Resource == nil {
			sp.Resource = emptyResource
		}
		// kept never passes i; while nothing was dropped the span is
		// already where kept puts it, and copying 184 bytes of pointers
		// onto themselves would only cost write barriers while the
		// collector runs.
		if len(kept) == i {
			kept = kept[:i+1]
		} else {
			kept = append(kept, *sp)
		}
		t.ids[sp.SpanID] = struct{}{}
		t.arrived(now, sp.Source)
		changed = true
		res.Accepted++
	}
	if len(kept) > 0 {
		if t.spans == nil {
			t.spans = kept[:len(kept):len(kept)] // an append copies
		} else {
			t.spans = append(t.spans, kept...)
		}
	}
	if !changed {
		return nil
	}
	return t
}

// newTraceLocked is the one place where the store decides whether a new
// trace may be held (admission.go decides): it returns the new trace,
// registered, or nil with the reason and the counter of the rejection.
// sizeHint is how many spans of it the batch has at most.
func (s *Store) newTraceLocked(id trace.TraceID, source string, now time.Time, swept *bool, sizeHint int) (*storedTrace, string, *atomic.Uint64) {
	if ok, reason, counter := s.admitNewLocked(id, source, now, swept); !ok {
		return nil, reason, counter
	}
	t := &storedTrace{ids: make(map[trace.SpanID]struct{}, sizeHint), changed: make(chan struct{})}
	s.traces[id] = t
	return t, "", nil
}

// find returns the held span with id: in t.spans or among pending, the
// spans of this batch accepted but not yet appended.
func (t *storedTrace) find(pending []Span, id trace.SpanID) *Span {
	if i := t.index(id); i >= 0 {
		return &t.spans[i]
	}
	for i := range pending {
		if pending[i].SpanID == id {
			return &pending[i]
		}
	}
	return nil
}

// groupByTrace reorders spans in place so that each trace's spans are
// contiguous, traces in order of first appearance and each trace's spans
// in their order, and returns, at the index of each group's first span,
// the group's length.
func groupByTrace(spans []Span) []int32 {
	n := len(spans)
	sizes := make([]int32, n)
	if n == 0 {
		return sizes
	}
	// Common cases first: one trace, or traces already contiguous.
	contiguous := true
	seen := map[trace.TraceID]int{} // trace -> group number
	var firsts []int                // group number -> index of first span
	group := make([]int32, n)
	for i := range spans {
		id := spans[i].TraceID
		if i > 0 && id == spans[i-1].TraceID { // the common run of one trace
			group[i] = group[i-1]
			continue
		}
		g, ok := seen[id]
		if !ok {
			g = len(firsts)
			seen[id] = g
			firsts = append(firsts, i)
		} else if g != int(group[i-1]) {
			contiguous = false
		}
		group[i] = int32(g)
	}
	counts := make([]int, len(firsts))
	for _, g := range group {
		counts[g]++
	}
	if contiguous {
		for _, f := range firsts {
			sizes[f] = int32(counts[group[f]])
		}
		return sizes
	}
	// Where each group starts once grouped, then each span's place.
	offset := make([]int, len(counts))
	at := 0
	for g, c := range counts {
		offset[g] = at
		sizes[at] = int32(c)
		at += c
	}
	dest := group // reused: span i goes to dest[i]
	for i, g := range group {
		dest[i] = int32(offset[g])
		offset[g]++
	}
	// Follow the permutation's cycles: each swap puts one span in place.
	for i := range spans {
		for int(dest[i]) != i {
			j := dest[i]
			spans[i], spans[j] = spans[j], spans[i]
			dest[i], dest[j] = dest[j], dest[i]
		}
	}
	return sizes
}

func (t *storedTrace) arrived(now time.Time, source string) {
	t.lastArrival = now
	if source != SourceInProcess {
		t.lastForeign = now
	}
}

// sweepLocked drops traces that received nothing for MaxAge, and the
// memory of traces assessed more than MaxAge ago.
func (s *Store) sweepLocked(now time.Time) {
	for id, t := range s.traces {
		if now.Sub(t.lastArrival) > s.limits.MaxAge {
			delete(s.traces, id)
			s.forgetLocked(id, false)
			s.evicted.Add(1)
		}
	}
	for len(s.assessedOrder) > 0 {
		id := s.assessedOrder[0]
		if a := s.assessed[id]; a != nil && now.Sub(a.at) <= s.limits.MaxAge {
			break
		}
		delete(s.assessed, id)
		s.assessedOrder = s.assessedOrder[1:]
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

// Remove forgets a trace.
func (s *Store) Remove(id trace.TraceID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.traces, id)
	s.forgetLocked(id, false)
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
	// SpansLate arrived for traces already assessed (see MarkAssessed).
	SpansLate uint64 `json:"spans_late"`

	// Admission: reservations and refusals of span admission.
	Admission AdmissionStats `json:"admission"`
}

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	st := Stats{Traces: len(s.traces)}
	for _, t := range s.traces {
		st.Spans += len(t.spans)
	}
	st.Admission = s.admissionStatsLocked()
	s.mu.Unlock()
	st.SpansAccepted = s.accepted.Load()
	st.SpansDuplicate = s.duplicates.Load()
	st.RejectedTraceFull = s.rejectedFull.Load()
	st.RejectedMaxTraces = s.rejectedTraces.Load()
	st.RejectedInvalid = s.rejectedInvalid.Load()
	st.TracesEvicted = s.evicted.Load()
	st.SpansLate = s.late.Load()
	return st
}
