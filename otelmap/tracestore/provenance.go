package tracestore

import (
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// Provenance (docs/trace-assembly.md, "Provenance"): the spans of a task's
// trace come from three roads, and only one of them can speak for the
// assessor. The OTLP receiver and the Traceability Extension carry what
// participants, or anyone who learned the trace id, chose to send; the
// in-process road carries the spans the assessor's own tracer recorded.
// Before a task's trace is assembled, Vouch keeps:
//
//   - every span recorded in process (the assessor's own: the task span,
//     its calls);
//   - every other span that descends, by parent id or by a span link (within
//     the trace, or from a trace joined to it to a span of the trace), from
//     a CLIENT or PRODUCER span recorded in process: the work the
//     assessor's calls caused, as far as context propagated;
//
// and sets aside, to be reported rather than counted, every span of another
// road that claims the assessor's identity (Impersonating) and every other
// span outside those subtrees (Outside). A participant whose own spans lost
// their parent (a parent its process never exported, an agent between it
// and the assessor that exports nothing) loses them here: they are
// reported, with the names they carried, so that the loss is visible
// rather than silent.

// MaxSetAsideNames bounds the names tracedata.SetAside.Claimed lists; maxClaimedChars
// bounds each name.
const (
	MaxSetAsideNames = 20
	maxClaimedChars  = 80
)

// Vouch splits the spans of one task's trace into those the assessor can
// vouch for (kept, in input order; spans itself when nothing is set aside)
// and those it sets aside (see the comment at the top of this file). root
// is the task's own span: its service.name names the assessor even when its
// resource lacks coordbench.role. Spans are taken as the store holds them,
// one per span id.
func Vouch(spans []otelmap.Span, root trace.SpanID) (kept []otelmap.Span, aside tracedata.SetAside) {
	names := assessorNames(spans, root)
	find := spanFinder(spans)
	// The edges from a span to the spans of other roads that hang from it
	// (their parent, or a span of the trace they link to), as one array
	// sliced by source span (first[i]..first[i+1]), so that a trace of 100k
	// spans costs a few allocations, not one per parent.
	impersonating := make([]bool, len(spans))
	var queue []int32
	type edge struct{ from, to int32 }
	var edges []edge
	for i := range spans {
		sp := &spans[i]
		if sp.Source == otelmap.SourceInProcess {
			if isClientKind(sp.Kind) {
				queue = append(queue, int32(i))
			}
			continue
		}
		if claimsAssessor(sp, names) {
			impersonating[i] = true
			continue
		}
		if p, ok := find(sp.TraceID, sp.ParentSpanID); ok && sp.ParentSpanID.IsValid() {
			edges = append(edges, edge{p, int32(i)})
		}
		for _, l := range sp.Links() {
			if !l.SpanID.IsValid() {
				continue
			}
			// A link to a span of the spans given, of its own trace or of
			// one joined to it (a fragment's delivery linked to where the
			// message was created: green serve's joined traces).
			if p, ok := find(l.TraceID, l.SpanID); ok {
				edges = append(edges, edge{p, int32(i)})
			}
		}
	}
	first := make([]int32, len(spans)+1)
	for _, e := range edges {
		first[e.from+1]++
	}
	for i := range spans {
		first[i+1] += first[i]
	}
	to := make([]int32, len(edges))
	fill := slices.Clone(first[:len(spans)])
	for _, e := range edges {
		to[fill[e.from]] = e.to
		fill[e.from]++
	}
	vouched := make([]bool, len(spans))
	for len(queue) > 0 {
		i := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, j := range to[first[i]:first[i+1]] {
			if !vouched[j] {
				vouched[j] = true
				queue = append(queue, j)
			}
		}
	}

	keep := func(i int) bool { return spans[i].Source == otelmap.SourceInProcess || vouched[i] }
	claimed := make(map[string]struct{})
	for i := range spans {
		if keep(i) {
			continue
		}
		sp := &spans[i]
		if impersonating[i] {
			aside.Impersonating++
		} else {
			aside.Outside++
			if _, ok := find(sp.TraceID, sp.ParentSpanID); sp.ParentSpanID.IsValid() && !ok {
				aside.ParentMissing++
			}
		}
		aside.Spans++
		claimedNames(sp, claimed)
	}
	if aside.Spans == 0 {
		return spans, aside
	}
	kept = make([]otelmap.Span, 0, len(spans)-aside.Spans)
	for i := range spans {
		if keep(i) {
			kept = append(kept, spans[i])
		}
	}
	aside.Claimed = make([]string, 0, min(len(claimed), MaxSetAsideNames))
	for n := range claimed {
		aside.Claimed = append(aside.Claimed, n)
	}
	slices.Sort(aside.Claimed)
	if len(aside.Claimed) > MaxSetAsideNames {
		aside.ClaimedMore = len(aside.Claimed) - MaxSetAsideNames
		aside.Claimed = aside.Claimed[:MaxSetAsideNames]
	}
	return kept, aside
}

// assessorNames are the service.names of the in-process spans that are the
// assessor's: those of a resource with coordbench.role=assessor, and the
// root's.
func assessorNames(spans []otelmap.Span, root trace.SpanID) map[string]bool {
	names := make(map[string]bool)
	for i := range spans {
		sp := &spans[i]
		if sp.Source != otelmap.SourceInProcess {
			continue
		}
		r := spanResource(sp)
		if r.ServiceName != "" && (sp.SpanID == root || isAssessorResource(r)) {
			names[r.ServiceName] = true
		}
	}
	return names
}

// claimsAssessor reports whether sp, a span of another road than the
// in-process one, speaks for the assessor.
func claimsAssessor(sp *otelmap.Span, names map[string]bool) bool {
	r := spanResource(sp)
	if isAssessorResource(r) || names[r.ServiceName] {
		return true
	}
	for n := range names {
		if nameMentions(sp.Name, n) {
			return true
		}
	}
	for _, kv := range sp.Attrs {
		switch kv.Key {
		case otelmap.AttrRole, otelmap.AttrAssessmentID, otelmap.AttrEvaluator:
			return true
		}
		if kv.Value.Type() == attribute.STRING && names[kv.Value.AsString()] && otelmap.NamesAgent(kv.Key) {
			return true
		}
	}
	return false
}

// nameMentions reports whether span name mentions agent as a word of its
// own: assembly reads agent names from span names where a framework gives
// no attribute (smolagents' "<name>.run", LangGraph's node runs), and an
// "invoke_agent <name>" span names its agent.
func nameMentions(name, agent string) bool {
	boundary := func(b byte) bool { return b == ' ' || b == '.' || b == '/' || b == ':' }
	for from := 0; from < len(name); {
		i := strings.Index(name[from:], agent)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(agent)
		if (start == 0 || boundary(name[start-1])) && (end == len(name) || boundary(name[end])) {
			return true
		}
		from = start + 1
	}
	return false
}

// claimedNames adds the service and agent names sp carries to into.
func claimedNames(sp *otelmap.Span, into map[string]struct{}) {
	add := func(s string) {
		if s == "" {
			return
		}
		if len(s) > maxClaimedChars {
			cut := maxClaimedChars
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s = s[:cut] + "…"
		}
		into[s] = struct{}{}
	}
	add(spanResource(sp).ServiceName)
	for _, kv := range sp.Attrs {
		if kv.Value.Type() == attribute.STRING && otelmap.NamesAgent(kv.Key) {
			add(kv.Value.AsString())
		}
	}
}

// spanFinder returns a lookup of spans by trace and span id. The spans of
// one trace (a task's, the usual case) are indexed by span id alone; the
// spans of several (a task's trace and the traces joined to it) by both,
// so that a span id repeated in another trace (by chance, or forged) finds
// only its own trace's span.
func spanFinder(spans []otelmap.Span) func(trace.TraceID, trace.SpanID) (int32, bool) {
	multi := slices.ContainsFunc(spans, func(sp otelmap.Span) bool { return sp.TraceID != spans[0].TraceID })
	if !multi {
		index := make(map[trace.SpanID]int32, len(spans))
		for i := range spans {
			index[spans[i].SpanID] = int32(i)
		}
		return func(t trace.TraceID, s trace.SpanID) (int32, bool) {
			p, ok := index[s]
			return p, ok && spans[p].TraceID == t
		}
	}
	type key struct {
		t trace.TraceID
		s trace.SpanID
	}
	index := make(map[key]int32, len(spans))
	for i := range spans {
		index[key{spans[i].TraceID, spans[i].SpanID}] = int32(i)
	}
	return func(t trace.TraceID, s trace.SpanID) (int32, bool) {
		p, ok := index[key{t, s}]
		return p, ok
	}
}
