package a2acall

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/tracedata"
)

// This file: the HTTP transport under every A2A call. It makes the HTTP
// CLIENT span (named by the method, "POST"), with the attributes otelhttp
// gives one (HTTP semantic conventions: http.request.method, url.full,
// server.address, server.port, network.protocol.version,
// http.response.status_code, error.type) and ended, as otelhttp ends it,
// when the answer's body is read to its end or closed; it carries
// traceparent and the Traceability Extension headers.
//
// It replaces otelhttp's client transport, which costs every call its
// attributes, a deep copy of the request and a metric record (to the global
// meter provider, which coordbench never sets) whether anyone listens or
// not. Here a span that does not record costs nothing but its start: no
// attributes, no body wrapper. Each request is copied once, shallowly, to
// carry the headers (a RoundTripper must not change the request it is
// given, and a2a-go cannot send them as written: its service parameters
// become canonical header keys, and its 0.3 transport renames
// A2A-Extensions).

// httpTransport is the RoundTripper of every A2A call. tracer is nil when
// it makes no span (Options.NoTransportSpans): it then only propagates the
// context's span.
type httpTransport struct {
	base     http.RoundTripper
	tracer   trace.Tracer
	asClient []trace.SpanStartOption
	// noopTracer: tracer never records (see skipSpan).
	noopTracer bool
	// urls keeps the URL attributes of the last URL requested.
	urls urlAttrCache
	// ext is the extension URI as a header value, shared read-only by
	// every request (its capacity is its length, so an append copies).
	ext []string
}

// newHTTPTransport is the transport of every A2A call: the HTTP client
// span, which traceparent names as the callee's parent, and the
// Traceability Extension headers; with noSpans, traceparent carries the
// context's span (see Options.NoTransportSpans). There is no
// http.Client.Timeout: every call carries its own deadline, and a
// streaming answer may legitimately last as long as the call.
func newHTTPTransport(tp trace.TracerProvider, base http.RoundTripper, noSpans bool) *httpTransport {
	t := &httpTransport{base: base, ext: []string{tracedata.ExtensionURI}}
	if !noSpans {
		t.tracer = tp.Tracer(instrumentationName)
		t.asClient = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
		t.noopTracer = isNoopTracer(t.tracer)
	}
	return t
}

// The extension headers' keys in an http.Header as Go spells them
// (http.CanonicalHeaderKey of HeaderExtensions and a2a.SvcParamExtensions),
// which is how a2a-go sets them.
const (
	headerKeyLegacy = "X-A2a-Extensions"
	headerKeyModern = "A2a-Extensions"
)

func (t *httpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	var span trace.Span
	if t.tracer != nil && !skipSpan(t.noopTracer, ctx) {
		ctx, span = t.tracer.Start(ctx, r.Method, t.asClient...)
	}
	r2 := r.WithContext(ctx)
	r2.Header = t.headers(r.Header)
	// The W3C trace context is set explicitly rather than taken from the
	// global propagator, so that calls carry it whatever the process
	// configured.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(r2.Header))
	if span == nil || !span.IsRecording() {
		if span != nil {
			span.End()
		}
		return t.base.RoundTrip(r2)
	}

	// The attributes are set in one go once the answer is known: the
	// span's attribute list then grows once.
	attrs := appendRequestAttrs(make([]attribute.KeyValue, 0, 10), r2, &t.urls)
	res, err := t.base.RoundTrip(r2)
	if err == nil && res == nil {
		err = errors.New("http: RoundTripper returned a nil *Response with a nil error")
	}
	if err != nil {
		span.SetAttributes(append(attrs, semconv.ErrorType(err))...)
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return res, err
	}
	span.SetAttributes(appendResponseAttrs(attrs, r2, res)...)
	if res.StatusCode < 100 || res.StatusCode >= 600 {
		span.SetStatus(codes.Error, "Invalid HTTP status code "+strconv.Itoa(res.StatusCode))
	} else if res.StatusCode >= 400 {
		span.SetStatus(codes.Error, "")
	}
	if res.Body == nil {
		span.End()
		return res, nil
	}
	res.Body = &spanBody{span: span, body: res.Body}
	return res, nil
}

// headers returns a copy of h (the map, not the values) with the
// Traceability Extension under both names agents read: X-A2A-Extensions,
// spelled so on the wire (the spec's header, which 0.3 Python agents read),
// and A2A-Extensions (a2a-go 1.0's service parameter). Values already
// there are kept, one header line per extension URI.
func (t *httpTransport) headers(h http.Header) http.Header {
	out := make(http.Header, len(h)+3)
	for k, v := range h {
		out[k] = v
	}
	legacy, hasLegacy := out[headerKeyLegacy]
	modern, hasModern := out[headerKeyModern]
	if !hasLegacy && !hasModern {
		out[HeaderExtensions] = t.ext
		out[headerKeyModern] = t.ext
		return out
	}
	delete(out, headerKeyLegacy)
	// A non-canonical key is written as is.
	out[HeaderExtensions] = mergeURIs(legacy, t.ext)
	out[headerKeyModern] = mergeURIs(modern, t.ext)
	return out
}

// appendRequestAttrs appends the HTTP client span's request attributes, as
// otelhttp (v0.72, HTTP semantic conventions 1.43) computes them; those of
// the URL come from urls when it holds them.
func appendRequestAttrs(attrs []attribute.KeyValue, r *http.Request, urls *urlAttrCache) []attribute.KeyValue {
	attrs = appendMethod(attrs, r.Method)
	attrs = urls.appendURLAttrs(attrs, r)
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	return appendProtocol(attrs, r.Proto)
}

// appendURLAttrs appends url.full, server.address and server.port (when
// it is not the scheme's default) of r.
func appendURLAttrs(attrs []attribute.KeyValue, r *http.Request) []attribute.KeyValue {
	var urlHost string
	if r.URL != nil {
		urlHost = r.URL.Host
	}
	host, port := splitHostPort(urlHost)
	if host == "" && port <= 0 {
		host, port = splitHostPort(r.Header.Get("Host"))
	}
	var full string
	if r.URL != nil {
		u := *r.URL
		u.User = nil
		full = u.String()
	}
	attrs = append(attrs, semconv.URLFull(full), semconv.ServerAddress(host))
	if https := r.URL != nil && r.URL.Scheme == "https"; port > 0 && ((https && port != 443) || (!https && port != 80)) {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	return attrs
}

// appendResponseAttrs appends the span's response attributes: the status
// code, the error.type of an error status, and the protocol version the
// response came in when it is not the one asked for.
func appendResponseAttrs(attrs []attribute.KeyValue, r *http.Request, res *http.Response) []attribute.KeyValue {
	if res.StatusCode > 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(res.StatusCode))
	}
	if res.StatusCode >= 400 || res.StatusCode < 100 {
		attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(res.StatusCode)))
	}
	if res.Proto != r.Proto {
		attrs = appendProtocol(attrs, res.Proto)
	}
	return attrs
}

// appendMethod appends http.request.method: "_OTHER" with the original
// for a method the conventions do not name.
func appendMethod(attrs []attribute.KeyValue, method string) []attribute.KeyValue {
	if method == "" {
		return append(attrs, semconv.HTTPRequestMethodOther)
	}
	if knownMethod(method) {
		return append(attrs, semconv.HTTPRequestMethodKey.String(method))
	}
	if upper := strings.ToUpper(method); knownMethod(upper) {
		return append(attrs, semconv.HTTPRequestMethodKey.String(upper), semconv.HTTPRequestMethodOriginal(method))
	}
	return append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(method))
}

func knownMethod(m string) bool {
	switch m {
	case http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions,
		http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace:
		return true
	}
	return false
}

// appendProtocol adds network.protocol.version of "HTTP/1.1" (and
// network.protocol.name when the protocol is not HTTP).
func appendProtocol(attrs []attribute.KeyValue, proto string) []attribute.KeyValue {
	name, version, _ := strings.Cut(proto, "/")
	switch name {
	case "HTTP", "":
	default:
		attrs = append(attrs, semconv.NetworkProtocolName(strings.ToLower(name)))
	}
	if version != "" {
		attrs = append(attrs, semconv.NetworkProtocolVersion(version))
	}
	return attrs
}

// splitHostPort splits "host:port", "[v6]:port", "host"; the port is -1
// when absent or unreadable.
func splitHostPort(hostport string) (host string, port int) {
	port = -1
	if strings.HasPrefix(hostport, "[") {
		end := strings.LastIndexByte(hostport, ']')
		if end < 0 {
			return "", port
		}
		host = hostport[1:end]
		rest := hostport[end+1:]
		if p, ok := strings.CutPrefix(rest, ":"); ok {
			if n, err := strconv.ParseUint(p, 10, 16); err == nil {
				port = int(n)
			}
		}
		return host, port
	}
	h, p, ok := strings.Cut(hostport, ":")
	if !ok {
		return hostport, port
	}
	if n, err := strconv.ParseUint(p, 10, 16); err == nil {
		port = int(n)
	}
	return h, port
}

// spanBody ends the HTTP client span when the answer's body is read to its
// end or closed, so that a streamed answer's span lasts as long as the
// stream; a read error other than EOF marks the span failed.
type spanBody struct {
	span  trace.Span
	body  io.ReadCloser
	ended atomic.Bool
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	switch err {
	case nil:
	case io.EOF:
		b.end()
	default:
		b.span.SetAttributes(semconv.ErrorType(err))
		b.span.SetStatus(codes.Error, err.Error())
	}
	return n, err
}

func (b *spanBody) Close() error {
	b.end()
	return b.body.Close()
}

func (b *spanBody) end() {
	if b.ended.CompareAndSwap(false, true) {
		b.span.End()
	}
}

// mergeURIs splits comma-separated header values and returns the URIs once
// each, in order.
func mergeURIs(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, v := range l {
			for _, u := range strings.Split(v, ",") {
				if u = strings.TrimSpace(u); u != "" && !slices.Contains(out, u) {
					out = append(out, u)
				}
			}
		}
	}
	return out
}
