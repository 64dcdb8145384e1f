package coordbenchconnector

import "go.opentelemetry.io/otel/trace"

// recentIDs remembers the last n trace ids assessed, so spans that arrive
// for them later are counted as late rather than starting a second,
// partial assessment of the same trace.
type recentIDs struct {
	ring []trace.TraceID
	next int
	set  map[trace.TraceID]struct{}
}

func newRecentIDs(n int) recentIDs {
	return recentIDs{ring: make([]trace.TraceID, 0, n), set: make(map[trace.TraceID]struct{}, n)}
}

func (r *recentIDs) has(id trace.TraceID) bool {
	_, ok := r.set[id]
	return ok
}

func (r *recentIDs) add(id trace.TraceID) {
	if r.has(id) {
		return
	}
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % len(r.ring)
	}
	r.set[id] = struct{}{}
}
