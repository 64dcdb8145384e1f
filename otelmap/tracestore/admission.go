package tracestore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Span admission (docs/span-admission.md). The store holds at most
// Limits.MaxTraces traces, and the OTLP receiver is open to anyone who can
// reach it: before admission existed, one request with 10,000 traces'
// worth of spans filled the store, and the next assessment saw none of
// its spans and still scored. Three rules keep the traces that are being
// assessed out of reach of everything else:
//
//   - Reservations. The assessor reserves each task trace id it creates
//     (Reserve) before it calls anyone, and the reservation ends when the
//     trace is assessed (MarkAssessed) or given up (Release). Spans of a
//     reserved trace are always admitted: reserved traces have their own
//     room, outside MaxTraces, bounded by AdmissionLimits.MaxReserved
//     reservations of at most MaxSpansPerTrace spans each.
//   - A quota per source. A new trace that nobody reserved ("unsolicited")
//     counts against MaxTraces and against its source's quota,
//     AdmissionLimits.MaxTracesPerSource; a source is the exporter's
//     identity (ExporterIdentity, else the remote IP), so one exporter can
//     take at most that share of the room. Spans added in process or from
//     the Traceability Extension have no source and only count against
//     MaxTraces.
//   - Ingest tokens. A reservation may carry a per-assessment token that
//     the assessor hands to its participants with each call. A request
//     carrying a token some reservation holds (header IngestTokenHeader)
//     may only add spans to that token's traces (spans of other traces in
//     it are refused, except late ones of traces already assessed). With
//     AdmissionLimits.StrictIngest, spans of a reserved trace that carried
//     a token need that token. A request without a token, or with a token
//     nobody holds (its assessment ended), is admitted by the first two
//     rules, as foreign OTel SDKs know nothing of tokens.
//
// Spans that a reserved trace was refused anyway (its MaxSpansPerTrace, a
// token refusal) are counted per trace (RefusedSpans), so that the
// assessment can say so instead of scoring silently.

// AdmissionLimits bound reservations and unsolicited traces. Zero fields
// take the defaults.
type AdmissionLimits struct {
	// MaxTracesPerSource: a source's new unsolicited traces are refused
	// while it holds this many (default a quarter of MaxTraces).
	MaxTracesPerSource int
	// MaxReserved: Reserve fails while this many traces are reserved
	// (default DefaultMaxReserved).
	MaxReserved int
	// StrictIngest refuses spans of a trace reserved with a token unless
	// their request carries that token.
	StrictIngest bool
}

// DefaultMaxReserved is the default AdmissionLimits.MaxReserved: far more
// task traces than the assessments one server runs at once (each runs its
// tasks one at a time).
const DefaultMaxReserved = 1024

func (l AdmissionLimits) withDefaults(maxTraces int) AdmissionLimits {
	if l.MaxTracesPerSource <= 0 {
		l.MaxTracesPerSource = max(1, maxTraces/4)
	}
	if l.MaxReserved <= 0 {
		l.MaxReserved = DefaultMaxReserved
	}
	return l
}

// ErrReservationsFull is returned by Reserve when MaxReserved traces are
// reserved.
var ErrReservationsFull = errors.New("span store: reservations full")

// tokenKey is an ingest token's SHA-256: tokens are looked up by hash, so
// the lookup's timing says nothing about a token's bytes.
type tokenKey [sha256.Size]byte

// reservation is one reserved trace.
type reservation struct {
	token    tokenKey
	hasToken bool
	// refused counts the spans of the trace refused anyway.
	refused int
}

// admission is the Store's admission state, guarded by Store.mu.
type admission struct {
	limits   AdmissionLimits
	reserved map[trace.TraceID]*reservation
	// tokens counts the live reservations of each token.
	tokens map[tokenKey]int
	// owner is the source of every unsolicited trace held ("" for spans
	// added in process); perSource counts them by source.
	owner     map[trace.TraceID]string
	perSource map[string]int
	// The refusal reasons, formatted once rather than per span refused (a
	// flood is refused a span at a time): the trace limit's, and the quota's
	// for the source refused last.
	traceLimitReason               string
	quotaReasonSource, quotaReason string

	refusedQuota        atomic.Uint64
	refusedToken        atomic.Uint64
	refusedStrict       atomic.Uint64
	reservationsRefused atomic.Uint64
}

func newAdmission(l Limits) admission {
	return admission{
		traceLimitReason: fmt.Sprintf("trace limit reached (%d traces held)", l.MaxTraces),
		limits:           l.Admission.withDefaults(l.MaxTraces),
		reserved:         map[trace.TraceID]*reservation{},
		tokens:           map[tokenKey]int{},
		owner:            map[trace.TraceID]string{},
		perSource:        map[string]int{},
	}
}

// AdmissionStats are the admission counters (Stats.Admission).
type AdmissionStats struct {
	// Reserved is the number of traces reserved now; Unsolicited the
	// number of traces held that nobody reserved.
	Reserved    int `json:"reserved"`
	Unsolicited int `json:"unsolicited"`
	// Sources is the number of sources holding unsolicited traces.
	Sources int `json:"sources"`
	// RefusedQuota counts spans refused because their source held its
	// quota of traces; RefusedToken spans of a request with an ingest
	// token that were not of its traces; RefusedStrict spans of a reserved
	// trace without its token (StrictIngest).
	RefusedQuota  uint64 `json:"spans_refused_source_quota"`
	RefusedToken  uint64 `json:"spans_refused_token"`
	RefusedStrict uint64 `json:"spans_refused_strict"`
	// ReservationsRefused counts Reserve calls refused (MaxReserved).
	ReservationsRefused uint64 `json:"reservations_refused"`
}

func (s *Store) admissionStatsLocked() AdmissionStats {
	a := &s.adm
	return AdmissionStats{
		Reserved:            len(a.reserved),
		Unsolicited:         len(a.owner),
		Sources:             len(a.perSource),
		RefusedQuota:        a.refusedQuota.Load(),
		RefusedToken:        a.refusedToken.Load(),
		RefusedStrict:       a.refusedStrict.Load(),
		ReservationsRefused: a.reservationsRefused.Load(),
	}
}

// AdmissionLimits returns the admission limits in force, defaults filled.
func (s *Store) AdmissionLimits() AdmissionLimits { return s.adm.limits }

// Reserve reserves trace id for an assessment, so that its spans are
// admitted whatever else the store holds; token, when not empty, is the
// assessment's ingest token. A trace already held (spans came before the
// reservation) becomes reserved. Reserving a reserved trace again changes
// its token. Reserve fails with ErrReservationsFull at MaxReserved.
func (s *Store) Reserve(id trace.TraceID, token string) error {
	if !id.IsValid() {
		return fmt.Errorf("span store: reserve: invalid trace id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.adm
	r := a.reserved[id]
	if r == nil {
		if len(a.reserved) >= a.limits.MaxReserved {
			a.reservationsRefused.Add(1)
			return fmt.Errorf("%w (%d traces reserved)", ErrReservationsFull, a.limits.MaxReserved)
		}
		r = &reservation{}
		a.reserved[id] = r
		a.disownLocked(id)
	} else if r.hasToken {
		a.dropTokenLocked(r.token)
	}
	r.hasToken = token != ""
	if r.hasToken {
		r.token = sha256.Sum256([]byte(token))
		a.tokens[r.token]++
	}
	return nil
}

// Release ends trace id's reservation without assessing it (a task that
// was abandoned). Spans it holds stay until they expire, counted from now
// on as unsolicited spans without a source. Releasing twice, or a trace
// MarkAssessed released, is harmless.
func (s *Store) Release(id trace.TraceID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.adm
	if !a.releaseLocked(id) {
		return
	}
	if _, held := s.traces[id]; held {
		a.owner[id] = ""
		a.perSource[""]++
	}
}

// RefusedSpans returns how many spans reserved trace id was refused
// although it was reserved (0 once the reservation ended).
func (s *Store) RefusedSpans(id trace.TraceID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.adm.reserved[id]; r != nil {
		return r.refused
	}
	return 0
}

// releaseLocked drops id's reservation and reports whether there was one.
func (a *admission) releaseLocked(id trace.TraceID) bool {
	r := a.reserved[id]
	if r == nil {
		return false
	}
	if r.hasToken {
		a.dropTokenLocked(r.token)
	}
	delete(a.reserved, id)
	return true
}

func (a *admission) dropTokenLocked(k tokenKey) {
	if a.tokens[k]--; a.tokens[k] <= 0 {
		delete(a.tokens, k)
	}
}

// disownLocked forgets id as an unsolicited trace.
func (a *admission) disownLocked(id trace.TraceID) {
	src, ok := a.owner[id]
	if !ok {
		return
	}
	delete(a.owner, id)
	if a.perSource[src]--; a.perSource[src] <= 0 {
		delete(a.perSource, src)
	}
}

// forgetLocked is called wherever the store drops a trace: an unsolicited
// one frees its source's room; a reserved one ends its reservation when
// it was assessed (assessed true), and stays reserved when it only
// expired (its assessment is still running).
func (s *Store) forgetLocked(id trace.TraceID, assessed bool) {
	s.adm.disownLocked(id)
	if assessed {
		s.adm.releaseLocked(id)
	}
}

// admitNewLocked decides whether a span of trace id, which the store does
// not hold, may start it; the one admission decision of Store.Add. A
// reserved trace is always admitted. An unsolicited one needs room under
// MaxTraces (expired traces are swept once per Add when it is short) and
// under its source's quota; when admitted, it is recorded as the
// source's. On refusal, reason and counter say why.
func (s *Store) admitNewLocked(id trace.TraceID, source string, now time.Time, swept *bool) (ok bool, reason string, counter *atomic.Uint64) {
	a := &s.adm
	if a.reserved[id] != nil {
		return true, "", nil
	}
	if len(a.owner) >= s.limits.MaxTraces && !*swept {
		s.sweepLocked(now)
		*swept = true
	}
	if len(a.owner) >= s.limits.MaxTraces {
		return false, a.traceLimitReason, &s.rejectedTraces
	}
	if source != "" && a.perSource[source] >= a.limits.MaxTracesPerSource {
		if a.quotaReasonSource != source || a.quotaReason == "" {
			a.quotaReasonSource = source
			a.quotaReason = fmt.Sprintf("trace quota of the source reached (%d traces held for %s)", a.limits.MaxTracesPerSource, source)
		}
		return false, a.quotaReason, &a.refusedQuota
	}
	a.owner[id] = source
	a.perSource[source]++
	return true, "", nil
}

// refusedLocked counts a span of trace id the store refused, when the
// trace is reserved.
func (s *Store) refusedLocked(id trace.TraceID) {
	if r := s.adm.reserved[id]; r != nil {
		r.refused++
	}
}
