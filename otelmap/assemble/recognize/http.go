package recognize

import (
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// Plain HTTP, as the HTTP client and server instrumentations record it
// (http.*, url.*, and ASGI's per-message asgi.* spans), in the current
// (url.full, url.path, http.route) and the older (http.url, http.target)
// shapes. A CLIENT/SERVER pair of HTTP spans is a call like any other
// (otelmap/assemble/calls.go); what this family adds is that fetching an
// A2A agent card (GET /.well-known/agent-card.json, or the older
// /.well-known/agent.json) is not a call between agents: both of its spans are read as INTERNAL, on
// the client side and on the server side. The card path is read from the
// URL attributes, or from the span name where a server names its spans
// "GET <route>".

// agentCardPaths are the paths an A2A agent card is served at.
var agentCardPaths = [...]string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// isAgentCardPath reports whether a URL, path or route names an agent card
// (a query or fragment after it is allowed).
func isAgentCardPath(s string) bool {
	w := strings.Index(s, "/.well-known/")
	if w < 0 {
		return false
	}
	s = s[w:]
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	for _, p := range agentCardPaths {
		if strings.HasSuffix(s, p) {
			return true
		}
	}
	return false
}

// readHTTP reads one http.* or url.* attribute.
func (r *Reading) readHTTP(kv *attribute.KeyValue, key string) {
	r.claimCore(claimHTTP)
	switch key {
	case "url.full", "url.path", "http.url", "http.target", "http.route":
		r.s.sawURL = true
		if isAgentCardPath(Quiet(kv)) {
			r.s.notCall = true
		}
	}
}

// readHTTPName recognizes an agent-card fetch by the span name of a server
// span ("GET /.well-known/agent-card.json").
func (r *Reading) readHTTPName(sp *otelmap.Span) {
	if strings.HasPrefix(sp.Name, "GET ") && isAgentCardPath(sp.Name) {
		r.claimCore(claimHTTP)
		r.s.notCall = true
	}
}

// Listener is where an HTTP server span was received: the local port
// (server.port, or the older net.host.port; 0 when neither is recorded)
// and, for an agent-card fetch, the card's base path (what precedes
// /.well-known/ in its path or route: "" for a card at the root,
// "/researcher" for one mounted under it).
type Listener struct {
	Port     int64
	Card     bool
	CardBase string
}

// ServerListener reads the listener of a SERVER span from its HTTP
// attributes; ok is false when the span is no SERVER span or records
// neither a port nor an agent-card path.
func ServerListener(sp *otelmap.Span) (l Listener, ok bool) {
	if sp.Kind != trace.SpanKindServer {
		return l, false
	}
	for i := range sp.Attrs {
		kv := &sp.Attrs[i]
		switch kv.Key {
		case "server.port", "net.host.port":
			if kv.Value.Type() == attribute.INT64 && l.Port == 0 {
				l.Port = kv.Value.AsInt64()
			}
		case "url.path", "http.target", "http.route", "url.full", "http.url":
			s := Quiet(kv)
			if !l.Card && isAgentCardPath(s) {
				l.Card = true
				base := s[:strings.Index(s, "/.well-known/")]
				if u, err := url.Parse(base); err == nil && u.Host != "" {
					base = u.Path // a full URL: its path only
				}
				l.CardBase = strings.TrimSuffix(base, "/")
			}
		}
	}
	if !l.Card && strings.HasPrefix(sp.Name, "GET ") && isAgentCardPath(sp.Name) {
		l.Card = true
		l.CardBase = strings.TrimSuffix(sp.Name[len("GET "):strings.Index(sp.Name, "/.well-known/")], "/")
	}
	return l, l.Port != 0 || l.Card
}
