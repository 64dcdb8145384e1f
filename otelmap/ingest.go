package otelmap

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
)

// The receiver's side of span admission (admission.go): who sent a
// request (its source, for the quota per source) and which assessment's
// traces its ingest token opens.

type exporterIdentityKey struct{}

// WithExporterIdentity returns ctx carrying the identity of the exporter
// that sent an OTLP request, e.g. the principal an authentication
// middleware established. The receiver uses it as the request's source
// for the quota per source; without it the source is the remote IP.
func WithExporterIdentity(ctx context.Context, identity string) context.Context {
	return context.WithValue(ctx, exporterIdentityKey{}, identity)
}

// requestSource is the source of an export request: the exporter identity
// in its context, else the host of its remote address ("ip:" prefixed, so
// that the two cannot collide).
func requestSource(req *http.Request) string {
	if id, ok := req.Context().Value(exporterIdentityKey{}).(string); ok && id != "" {
		return "id:" + id
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	return "ip:" + host
}

// filterIngest applies the ingest-token rules to the spans of one export
// request: with a token some reservation holds, only that token's traces
// (and late spans of traces already assessed) are kept; without one, or
// with one nobody holds, everything is kept except, under StrictIngest,
// spans of traces reserved with a token. It returns the spans kept, how
// many were refused and the first reason.
func (s *Store) filterIngest(token string, spans []Span) (kept []Span, refused int, reason string) {
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
	kept = make([]Span, 0, len(spans))
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
	}
	return kept, refused, reason
}
