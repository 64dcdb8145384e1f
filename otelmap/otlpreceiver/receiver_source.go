package otlpreceiver

import (
	"context"
	"net"
	"net/http"
)

// Who sent an export request: its source, for the consumer's quota per
// source (docs/span-admission.md).

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
