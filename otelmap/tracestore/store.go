package tracestore

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// Limits bound what the store holds. Zero fields take the defaults.
type Limits struct {
	// MaxSpansPerTrace: further spans of a full trace are rejected.
	MaxSpansPerTrace int
	// MaxBytesPerTrace bounds a trace's packed spans (packed.go: their
	// names, attributes and the rest, about 300 bytes for a GenAI span of
	// a few attributes): a span that would pass it is rejected as one over
	// MaxSpansPerTrace is. At most maxPackedBytes, the packed layout's own
	// bound.
	MaxBytesPerTrace int
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
	DefaultMaxBytesPerTrace = 1 << 30
	DefaultMaxTraces        = 10_000
	DefaultMaxAge           = time.Hour
)

func (l Limits) withDefaults() Limits {
	if l.MaxSpansPerTrace <= 0 {
		l.MaxSpansPerTrace = DefaultMaxSpansPerTrace
	}
	if l.MaxBytesPerTrace <= 0 {
		l.MaxBytesPerTrace = DefaultMaxBytesPerTrace
	}
	l.MaxBytesPerTrace = min(l.MaxBytesPerTrace, maxPackedBytes)
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
	// seed is the hash seed of the traces' span indexes (spanindex.go).
	seed maphash.Seed
	// scratch holds the records of the batch being added until they are
	// placed in their traces (packed.go); guarded by mu.
	scratch []byte

	accepted        atomic.Uint64
	duplicates      atomic.Uint64
	rejectedFull    atomic.Uint64
	rejectedTraces  atomic.Uint64
	rejectedInvalid atomic.Uint64
	evicted         atomic.Uint64
	late            atomic.Uint64
}

type storedTrace struct {
	// spans are the trace's spans, packed (packed.go).
	spans packedSpans
	// index finds spans by id (spanindex.go).
	index       spanIndex
	lastArrival time.Time
	// lastForeign is when the last span of another road than the
	// in-process one arrived: the assessor's own spans are recorded as they
	// end, so they say nothing about whether participants are done.
	lastForeign time.Time
	// changed is closed and replaced whenever a span arrives, to wake
	// waiters.
	changed chan struct{}
	// notify is set while a batch that changed the trace is being added.
	notify bool
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
		seed:     maphash.MakeSeed(),
	}
}

// Limits returns the limits in force.
func (s *Store) Limits() Limits { return s.limits }

// Add stores spans. Spans with an invalid trace or span id are rejected;
// so are spans over a limit. Spans already held are skipped. Spans of a
// trace already assessed are counted as late (AddResult.Late) and
// dropped, except the assessor's own (assessorsOwn: evaluator spans that
// end after assembly, recorded in process), which are stored as a trace of
// their own, as before it was assessed; spans of other roads with the
// assessor's resource are dropped without counting (late.go). The store
// keeps a packed copy of each span it accepts (packed.go), strings,
// resources, links and events included: the caller keeps its slice and
// everything it points at.
func (s *Store) Add(spans []otelmap.Span) otelmap.AddResult { return s.AddFrom("", spans) }

// AddFrom is Add for spans from source, an exporter's identity: its new
// traces that nobody reserved count against its quota (admission.go).
// Source "" (in process, the Traceability Extension, files) has none.
//
// Spans are taken in their order, each trace's in arrival order; Reason is
// the first reason met.
func (s *Store) AddFrom(source string, spans []otelmap.Span) otelmap.AddResult {
	return s.add(source, spans, nil, batchResources{})
}

// AddShared is Add for spans whose resources the caller never changes and
// keeps valid (the Recorder's, converted once per tracer provider): the
// store holds them as they are rather than copy them per batch.
func (s *Store) AddShared(spans []otelmap.Span) otelmap.AddResult {
	return s.add("", spans, nil, batchResources{shared: true})
}

// add stores spans; attrs, if not nil, are their attributes packed (the
// spans have no Attrs of their own).
func (s *Store) add(source string, spans []otelmap.Span, attrs *otelmap.PackedAttrs, resources batchResources) otelmap.AddResult {
	var res otelmap.AddResult
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	swept := false
	var touched []*storedTrace
	var t *storedTrace
	for i := range spans {
		sp := &spans[i]
		if t == nil || sp.TraceID != spans[i-1].TraceID {
			t = s.traces[sp.TraceID] // nil for a new trace, made by addLocked
		}
		var changed bool
		var a spanAttrs
		if attrs != nil {
			a.packed, a.count = attrs.Of(i)
			a.ok = true
		}
		if t, changed = s.addLocked(t, sp, a, source, now, &swept, &res, &resources, spans[i:]); changed && !t.notify {
			t.notify = true
			touched = append(touched, t)
		}
		if len(s.scratch) > maxScratch {
			s.placeLocked(touched)
		}
	}
	s.placeLocked(touched)
	if cap(s.scratch) > maxScratch {
		s.scratch = nil // a rare large batch's
	}
	s.accepted.Add(uint64(res.Accepted))
	for _, t := range touched {
		t.notify = false
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return res
}

// maxScratch bounds the records the store holds in its scratch before
// it places them in their traces (packed.go): a batch's records, up to a
// few tens of megabytes (and the 32-bit offsets of its records), and what
// it keeps between batches.
const maxScratch = 32 << 20

// placeLocked moves the records of the batch being added from the scratch
// into their traces, touched.
func (s *Store) placeLocked(touched []*storedTrace) {
	for _, t := range touched {
		t.spans.place(s.scratch)
	}
	s.scratch = s.scratch[:0]
}

// addLocked stores sp, of trace t (nil when the store holds no such trace
// yet), and returns the trace it is now in, if any, and whether the trace
// changed. rest is the batch from sp on.
func (s *Store) addLocked(t *storedTrace, sp *otelmap.Span, attrs spanAttrs, source string, now time.Time, swept *bool, res *otelmap.AddResult,
	resources *batchResources, rest []otelmap.Span) (*storedTrace, bool) {
	reject := func(reason string, counter *atomic.Uint64) {
		res.Rejected++
		counter.Add(1)
		if res.Reason == "" {
			res.Reason = reason
		}
	}
	if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
		reject("invalid trace or span id", &s.rejectedInvalid)
		return t, false
	}
	if a := s.assessed[sp.TraceID]; a != nil && !assessorsOwn(sp) {
		if a.lateSpan(sp) {
			res.Late++
			s.late.Add(1)
			if !res.LateTrace.IsValid() {
				res.LateTrace = sp.TraceID
			}
		}
		return t, false
	}
	if t == nil {
		var reason string
		var counter *atomic.Uint64
		run := 1 // the spans of this trace that follow it
		for run < len(rest) && rest[run].TraceID == sp.TraceID {
			run++
		}
		if t, reason, counter = s.newTraceLocked(sp.TraceID, source, now, swept, run); t == nil {
			reject(reason, counter)
			return nil, false
		}
	}
	if i := t.index.find(s.seed, t.spans.heads, sp.SpanID); i >= 0 {
		res.Duplicates++
		s.duplicates.Add(1)
		// A span rebuilt from the Traceability Extension gives way to the
		// same span as its own process recorded it, which says more.
		if sp.Source != otelmap.SourceExtension {
			if t.spans.sourceOf(i, s.scratch) == sourceExtension {
				if !t.spans.replace(i, sp, attrs, resources.copyOf(sp.Resource), s.limits.MaxBytesPerTrace, &s.scratch) {
					s.rejectFullLocked(sp, s.bytesLimitReason(), reject)
					return t, false
				}
				t.arrived(now, sp.Source)
				return t, true
			}
		}
		return t, false
	}
	if t.spans.len() >= s.limits.MaxSpansPerTrace {
		s.rejectFullLocked(sp, fmt.Sprintf("span limit per trace reached (%d spans)", s.limits.MaxSpansPerTrace), reject)
		return t, false
	}
	if !t.spans.add(sp, attrs, resources.copyOf(sp.Resource), s.limits.MaxBytesPerTrace, &s.scratch) {
		s.rejectFullLocked(sp, s.bytesLimitReason(), reject)
		return t, false
	}
	t.index.add(s.seed, t.spans.heads, t.spans.len()-1)
	t.arrived(now, sp.Source)
	res.Accepted++
	return t, true
}

// rejectFullLocked rejects sp, which its trace has no room for, for
// reason.
func (s *Store) rejectFullLocked(sp *otelmap.Span, reason string, reject func(string, *atomic.Uint64)) {
	reject(reason, &s.rejectedFull)
	s.refusedLocked(sp.TraceID)
}

func (s *Store) bytesLimitReason() string {
	return fmt.Sprintf("byte limit per trace reached (%d bytes of packed spans)", s.limits.MaxBytesPerTrace)
}

// batchResources are the store's copies of one batch's resources: a
// batch's spans share a few, and the store keeps one copy of each per
// batch (none when shared: see AddShared).
type batchResources struct {
	shared bool
	copies map[*otelmap.Resource]*otelmap.Resource
	// last is the resource last looked up, lastCopy its copy: a batch's
	// spans of one process come together.
	last, lastCopy *otelmap.Resource
}

// copyOf returns the store's copy of res for this batch.
func (b *batchResources) copyOf(res *otelmap.Resource) *otelmap.Resource {
	if b.shared {
		if res == nil {
			return otelmap.EmptyResource()
		}
		return res
	}
	if res == b.last && b.lastCopy != nil {
		return b.lastCopy
	}
	c, ok := b.copies[res]
	if !ok {
		if b.copies == nil {
			b.copies = make(map[*otelmap.Resource]*otelmap.Resource)
		}
		c = cloneResource(res)
		b.copies[res] = c
	}
	b.last, b.lastCopy = res, c
	return c
}

// newTraceLocked is the one place where the store decides whether a new
// trace may be held (admission.go decides): it returns the new trace,
// registered, or nil with the reason and the counter of the rejection.
// sizeHint is how many spans of it the batch has at most.
func (s *Store) newTraceLocked(id trace.TraceID, source string, now time.Time, swept *bool, sizeHint int) (*storedTrace, string, *atomic.Uint64) {
	if ok, reason, counter := s.admitNewLocked(id, source, now, swept); !ok {
		return nil, reason, counter
	}
	t := &storedTrace{changed: make(chan struct{})}
	t.index.reserve(s.seed, nil, min(sizeHint, initialIDs))
	t.spans.expect = min(sizeHint, initialIDs)
	s.traces[id] = t
	return t, "", nil
}

// initialIDs bounds the room a new trace's span-id set is made with.
const initialIDs = 1024

func (t *storedTrace) arrived(now time.Time, source string) {
	t.lastArrival = now
	if source != otelmap.SourceInProcess {
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
func (s *Store) Spans(id trace.TraceID) []otelmap.Span {
	s.mu.Lock()
	t := s.traces[id]
	if t == nil {
		s.mu.Unlock()
		return nil
	}
	v := t.spans.view()
	s.mu.Unlock()
	// Unpacking a large trace takes a while; the store goes on meanwhile.
	return v.unpackAll(id)
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
		st.Spans += t.spans.len()
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
