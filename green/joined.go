package green

import (
	"bytes"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// Fragments of one run joined by span links (docs/trace-assembly.md, "A
// trace that begins with a received call"): a runtime that starts a trace
// per message (Semantic Kernel's agent runtime) links each message's
// delivery to the span that created it, in another trace. A trace whose
// top is such a delivery (assemble.FragmentLinks) continues the trace it
// links to; traces joined so, transitively, are one task: assembled
// together (assemble.Options.Joined), named by the trace they began in.
// A link joins only when the span it names is held in the trace it names:
// a link to a trace id alone (forged, or to a span that trace never
// exported) joins nothing, and the trace stays a fragment, reported.

// joinGroups groups ids (sorted) into the traces span links join, in the
// order of each group's first trace; a trace no link joins is a group of
// its own. spansOf gives a trace's spans.
func joinGroups(ids []trace.TraceID, spansOf func(trace.TraceID) []otelmap.Span) [][]trace.TraceID {
	index := make(map[trace.TraceID]int, len(ids))
	for k, id := range ids {
		index[id] = k
	}
	parent := make([]int, len(ids))
	for k := range parent {
		parent[k] = k
	}
	find := func(k int) int {
		for parent[k] != k {
			parent[k] = parent[parent[k]]
			k = parent[k]
		}
		return k
	}
	continues := make([]bool, len(ids)) // its tops link to a trace held
	for k, id := range ids {
		for _, l := range assemble.FragmentLinks(spansOf(id)) {
			j, ok := index[l.TraceID]
			if !ok || !holdsSpan(spansOf(l.TraceID), l.SpanID) {
				continue // a link to a trace or span not held joins nothing
			}
			continues[k] = true
			if a, b := find(k), find(j); a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	byRoot := map[int][]int{}
	var roots []int
	for k := range ids {
		r := find(k)
		if _, ok := byRoot[r]; !ok {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], k)
	}
	groups := make([][]trace.TraceID, 0, len(roots))
	for _, r := range roots {
		members := byRoot[r]
		// The trace the run began in names the task: one whose tops
		// continue no trace held, the first such; else the first.
		first := members[0]
		for _, k := range members {
			if !continues[k] {
				first = k
				break
			}
		}
		g := []trace.TraceID{ids[first]}
		for _, k := range members {
			if k != first {
				g = append(g, ids[k])
			}
		}
		groups = append(groups, g)
	}
	return groups
}

// holdsSpan reports whether spans hold the span id.
func holdsSpan(spans []otelmap.Span, id trace.SpanID) bool {
	return slices.ContainsFunc(spans, func(sp otelmap.Span) bool { return sp.SpanID == id })
}

// assembleJoined assembles a group of joined traces (joinGroups) as one:
// the first names it, the others are joined. Spans cut off from a root
// are counted trace by trace, each trace's tops being its own.
func (opts OfflineOptions) assembleJoined(group []trace.TraceID, spansOf func(trace.TraceID) []otelmap.Span) assembledTrace {
	if len(group) == 1 {
		return opts.assembleTrace(group[0], spansOf(group[0]))
	}
	var all []otelmap.Span
	detached := 0
	for _, id := range group {
		spans := spansOf(id)
		detached += tracestore.DetachedSpans(spans)
		all = append(all, spans...)
	}
	joined := slices.Clone(group[1:])
	slices.SortFunc(joined, func(x, y trace.TraceID) int { return bytes.Compare(x[:], y[:]) })
	return assembledTrace{
		td:       assemble.TraceWith(group[0], all, assemble.Options{Conventions: opts.Conventions, Joined: joined}),
		convs:    conversationsOf(all),
		detached: detached,
	}
}

// maxLiveJoined bounds the traces green serve joins to one task's trace.
const maxLiveJoined = 64

// spanKey names a span across traces.
type spanKey struct {
	trace trace.TraceID
	span  trace.SpanID
}

// fragments returns the traces the store holds that continue the task's
// trace: whose top deliveries link to a span of spans (the task's trace's,
// settled) or of a trace already joined, transitively, as green assess
// joins them (joinGroups), with their spans. A trace holding a span the
// assessor recorded in process (another task's trace) is never joined. At
// most maxLiveJoined traces are joined; capped says more linked in. The
// traces joined are not waited for: what the store holds when the task's
// trace settled is read, and spans of theirs that come later are late
// (markJoined).
func (o *openTrace) fragments(spans []otelmap.Span) (ids []trace.TraceID, more []otelmap.Span, capped bool) {
	held := make(map[spanKey]bool, len(spans))
	for i := range spans {
		held[spanKey{spans[i].TraceID, spans[i].SpanID}] = true
	}
	var cands []trace.TraceID
	for _, id := range o.tt.store.TraceIDs() {
		if id != o.id {
			cands = append(cands, id)
		}
	}
	cache := make(map[trace.TraceID][]otelmap.Span)
	for changed := true; changed; {
		changed = false
		for k, id := range cands {
			if id == (trace.TraceID{}) {
				continue // joined, or another task's
			}
			fs, ok := cache[id]
			if !ok {
				fs = o.tt.store.Spans(id)
				cache[id] = fs
			}
			if slices.ContainsFunc(fs, func(sp otelmap.Span) bool { return sp.Source == otelmap.SourceInProcess }) {
				cands[k] = trace.TraceID{}
				continue
			}
			links := assemble.FragmentLinks(fs)
			if !slices.ContainsFunc(links, func(l otelmap.Link) bool { return held[spanKey{l.TraceID, l.SpanID}] }) {
				continue
			}
			if len(ids) == maxLiveJoined {
				return ids, more, true
			}
			ids = append(ids, id)
			more = append(more, fs...)
			for i := range fs {
				held[spanKey{fs[i].TraceID, fs[i].SpanID}] = true
			}
			cands[k] = trace.TraceID{}
			changed = true
		}
	}
	slices.SortFunc(ids, func(x, y trace.TraceID) int { return bytes.Compare(x[:], y[:]) })
	return ids, more, false
}

// markJoined has the store forget the traces joined to the task's trace
// and count their later spans as late (tracestore.Store.MarkAssessed).
func (o *openTrace) markJoined(ids []trace.TraceID) {
	for _, id := range ids {
		o.tt.store.MarkAssessed(id)
	}
}
