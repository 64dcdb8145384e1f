package tracestore

import (
	"context"
	"crypto/sha256"

	"github.com/coordbench/coordbench/otelmap"
)

// The store's side of an export request (admission.go): which
// assessment's traces its ingest token opens, then the quota of its
// source. ConsumeSpans is what the OTLP receiver hands its spans to.

// ConsumeSpans stores the spans of one export request from source (an
// exporter's identity) carrying ingestToken ("" when none): the ingest
// token's rules first (filterIngest), then AddFrom's. Spans the token
// rules refused count as rejected, with the first reason met. It makes
// the Store the OTLP receiver's consumer.
func (s *Store) ConsumeSpans(_ context.Context, source, ingestToken string, spans []otelmap.Span) otelmap.AddResult {
	kept, refused, why := s.filterIngest(ingestToken, spans, nil)
	res := s.AddFrom(source, kept)
	res.Rejected += refused
	if res.Reason == "" {
		res.Reason = why
	}
	return res
}

// ConsumePackedSpans is ConsumeSpans for spans whose attributes a decoder
// packed (otlpdecode.Decoder.DecodePacked): span i has none of its own,
// its attributes are attrs.Of(i), and the store keeps them as they are.
// It makes the Store the OTLP receiver's otlpreceiver.PackedConsumer.
func (s *Store) ConsumePackedSpans(_ context.Context, source, ingestToken string, spans []otelmap.Span, attrs *otelmap.PackedAttrs) otelmap.AddResult {
	var keep []int
	kept, refused, why := s.filterIngest(ingestToken, spans, &keep)
	if refused > 0 || len(kept) != len(spans) {
		attrs = attrs.Select(keep)
	}
	res := s.add(source, kept, attrs, batchResources{})
	res.Rejected += refused
	if res.Reason == "" {
		res.Reason = why
	}
	return res
}

// filterIngest applies the ingest-token rules to the spans of one export
// request: with a token some reservation holds, only that token's traces
// (and late spans of traces already assessed) are kept; without one, or
// with one nobody holds, everything is kept except, under StrictIngest,
// spans of traces reserved with a token. It returns the spans kept, how
// many were refused and the first reason; and, if keep is not nil and
// spans were refused, the positions of those kept in *keep.
func (s *Store) filterIngest(token string, spans []otelmap.Span, keep *[]int) (kept []otelmap.Span, refused int, reason string) {
	if token == "" && !s.adm.limits.StrictIngest {
		return spans, 0, ""
	}
	var key tokenKey
	if token != "" {
		key = sha256.Sum256([]byte(token))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.adm
	valid := token != "" && a.tokens[key] > 0
	if !valid && !a.limits.StrictIngest {
		return spans, 0, ""
	}
	kept = make([]otelmap.Span, 0, len(spans))
	for i := range spans {
		sp := &spans[i]
		r := a.reserved[sp.TraceID]
		switch {
		case valid && r != nil && r.hasToken && r.token == key:
		case valid && s.assessed[sp.TraceID] != nil:
			// Late: Add counts it.
		case valid:
			refused++
			a.refusedToken.Add(1)
			if reason == "" {
				reason = "span of a trace the request's ingest token does not open"
			}
			if r != nil {
				r.refused++
			}
			continue
		case r != nil && r.hasToken:
			refused++
			a.refusedStrict.Add(1)
			if reason == "" {
				reason = "span of a reserved trace without its ingest token (strict ingest)"
			}
			r.refused++
			continue
		}
		kept = append(kept, *sp)
		if keep != nil {
			*keep = append(*keep, i)
		}
	}
	return kept, refused, reason
}
