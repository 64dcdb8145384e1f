package recognize

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"

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
	r.claim(famHTTP)
	switch key {
	case "url.full", "url.path", "http.url", "http.target", "http.route":
		r.sawURL = true
		if isAgentCardPath(quiet(kv)) {
			r.notCall = true
		}
	}
}

// readHTTPName recognizes an agent-card fetch by the span name of a server
// span ("GET /.well-known/agent-card.json").
func (r *Reading) readHTTPName(sp *otelmap.Span) {
	if strings.HasPrefix(sp.Name, "GET ") && isAgentCardPath(sp.Name) {
		r.claim(famHTTP)
		r.notCall = true
	}
}
