package jaegerquery

import (
	"context"
	"fmt"
	"iter"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// MinWindow is the narrowest time window Search splits down to. Jaeger
// keeps span times to the microsecond in several of its stores.
const MinWindow = time.Microsecond

// Search pages a selection of Jaeger's traces: Jaeger's API v3 has no
// cursor, and its answer to a search is built whole, so a selection larger
// than one page is cut by time instead. A search of a window asks for at
// most PageSize traces; an answer with fewer holds every trace of the
// window, and its traces make a page; a full answer means the window may
// hold more, so the window is halved and each half searched in turn, the
// newer first. A trace whose spans start in several windows is taken once
// (the search remembers the ids it yielded, at most Limit of them). It
// stops at Limit traces.
//
// What holds each trace's spans is the one answer in hand: at most
// PageSize traces at a time, and at most MaxResponseBytes of JSON.
type Search struct {
	c        *Client
	q        Query
	pageSize int
	limit    int

	seen map[pcommon.TraceID]struct{}

	// Requests is how many searches were sent.
	Requests int
	// LimitReached is set when the search stopped at Limit traces with
	// more of the selection left unread.
	LimitReached bool
	// Saturated lists the windows of MinWindow that held PageSize
	// traces or more: traces of those windows beyond the first PageSize
	// were not read.
	Saturated []Window
}

// Window is a span of start times, both ends included.
type Window struct{ Start, End time.Time }

func (w Window) String() string {
	return w.Start.UTC().Format(time.RFC3339Nano) + " .. " + w.End.UTC().Format(time.RFC3339Nano)
}

// Page is a window's traces that the search had not yet yielded.
type Page struct {
	Window Window
	// Traces is Jaeger's answer for the window, as decoded; it may hold
	// traces already yielded by an earlier page (whose spans also start
	// in this window), which TraceIDs leaves out.
	Traces []ptrace.Traces
	// TraceIDs are the page's new traces, in the answer's order.
	TraceIDs []pcommon.TraceID
}

// NewSearch prepares a search of q (its NumTraces is ignored), pageSize
// traces a request, limit traces in all.
func (c *Client) NewSearch(q Query, pageSize, limit int) (*Search, error) {
	q.NumTraces = pageSize
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("jaeger search: %w", err)
	}
	if limit < 1 {
		return nil, fmt.Errorf("jaeger search: limit %d: want at least 1", limit)
	}
	return &Search{c: c, q: q, pageSize: pageSize, limit: limit, seen: map[pcommon.TraceID]struct{}{}}, nil
}

// URL is the selection as one search, with the limit as its num_traces:
// what the result names as its input.
func (s *Search) URL() string {
	q := s.q
	q.NumTraces = s.limit
	return s.c.FindURL(q)
}

// Pages yields the selection's pages, newest window first, until the
// windows are exhausted or Limit traces were yielded. An error ends the
// sequence. Pages is meant to be ranged over once.
func (s *Search) Pages(ctx context.Context) iter.Seq2[Page, error] {
	return func(yield func(Page, error) bool) {
		// The windows left to search, the newest last.
		stack := []Window{{Start: s.q.Start, End: s.q.End}}
		for len(stack) > 0 {
			if len(s.seen) >= s.limit {
				s.LimitReached = true
				return
			}
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			q := s.q
			q.Start, q.End = w.Start, w.End
			s.Requests++
			found, err := s.c.Find(ctx, q)
			if err != nil {
				yield(Page{}, err)
				return
			}
			left := s.limit - len(s.seen)
			fresh := s.fresh(found.TraceIDs)
			full := len(found.TraceIDs) >= s.pageSize
			if full && len(fresh) < left && w.End.Sub(w.Start) >= 2*MinWindow {
				// The window may hold more than one page: search its halves.
				// (A full page that alone reaches the limit is taken as it
				// is: which traces of it Jaeger picked is Jaeger's choice.)
				mid := w.Start.Add(w.End.Sub(w.Start) / 2)
				// The halves share their boundary instant, so no store's
				// rounding of start times loses a span between them.
				stack = append(stack, Window{Start: w.Start, End: mid}, Window{Start: mid, End: w.End})
				continue
			}
			if full && len(fresh) < left {
				s.Saturated = append(s.Saturated, w)
			}
			if len(fresh) > left || (len(fresh) == left && full) {
				// More of the selection is left than the limit takes.
				s.LimitReached = true
				fresh = fresh[:left]
			}
			for _, id := range fresh {
				s.seen[id] = struct{}{}
			}
			if len(fresh) == 0 {
				continue
			}
			if !yield(Page{Window: w, Traces: found.Traces, TraceIDs: fresh}, nil) {
				return
			}
		}
	}
}

// fresh keeps the ids not yielded yet.
func (s *Search) fresh(ids []pcommon.TraceID) []pcommon.TraceID {
	var out []pcommon.TraceID
	for _, id := range ids {
		if _, ok := s.seen[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}
