package a2acall

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/tracedata"
)

// TestHTTPSpanAsOtelhttp: the HTTP client span of the Messenger's transport
// is the span otelhttp's transport makes of the same request, configured as
// the Messenger configured it before (span named by the method): same
// name, kind, attributes and status, for an answer, an error status, a
// streamed answer read to its end, a refused connection, and a URL with
// credentials and a query.
func TestHTTPSpanAsOtelhttp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			http.Error(w, "no", http.StatusInternalServerError)
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		default:
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"1","result":{}}`)
		}
	}))
	defer srv.Close()
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		return "http://" + addr + "/"
	}()
	withUser := strings.Replace(srv.URL, "http://", "http://user:secret@", 1) + "/a?b=c"

	cases := []struct{ name, method, url string }{
		{"ok", http.MethodPost, srv.URL + "/"},
		{"error status", http.MethodPost, srv.URL + "/fail"},
		{"stream", http.MethodPost, srv.URL + "/stream"},
		{"get", http.MethodGet, srv.URL + "/"},
		{"credentials and query", http.MethodPost, withUser},
		{"refused", http.MethodPost, refused},
		{"lower-case method", "post", srv.URL + "/"},
		{"other method", "PURGE", srv.URL + "/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := oneSpan(t, tc.method, tc.url, func(tp trace.TracerProvider, base http.RoundTripper) http.RoundTripper {
				return otelhttp.NewTransport(base,
					otelhttp.WithTracerProvider(tp),
					otelhttp.WithPropagators(propagation.TraceContext{}),
					otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
			})
			got := oneSpan(t, tc.method, tc.url, func(tp trace.TracerProvider, base http.RoundTripper) http.RoundTripper {
				return newHTTPTransport(tp, base, false)
			})
			if got.Name() != want.Name() || got.SpanKind() != want.SpanKind() {
				t.Errorf("span %q %v, otelhttp's %q %v", got.Name(), got.SpanKind(), want.Name(), want.SpanKind())
			}
			if g, w := attrMap(got.Attributes()), attrMap(want.Attributes()); !mapsEqual(g, w) {
				t.Errorf("attributes\n got %v\nwant %v", g, w)
			}
			if got.Status() != want.Status() {
				t.Errorf("status %+v, otelhttp's %+v", got.Status(), want.Status())
			}
		})
	}
}

// oneSpan sends one request through the transport wrap makes and returns
// the one span it recorded, after the body was read and closed.
func oneSpan(t *testing.T, method, url string, wrap func(trace.TracerProvider, http.RoundTripper) http.RoundTripper) sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: wrap(tp, base)}
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":"1","method":"SendMessage"}`)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	return spans[0]
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]string {
	m := make(map[attribute.Key]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

func mapsEqual(a, b map[attribute.Key]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestHTTPTransportHeaders: every request carries the Traceability
// Extension under both header names, X-A2A-Extensions spelled so, merged
// with what the request already had; the caller's request is not changed;
// traceparent names the span of the context when no span is made, and is
// absent when there is no span at all.
func TestHTTPTransportHeaders(t *testing.T) {
	var seen []http.Header
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.Header)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	tr := newHTTPTransport(noop.NewTracerProvider(), rt, true)

	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if _, err := tr.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	h := seen[0]
	//lint:ignore SA1008 the transport writes the A2A spelling as it is, not canonicalized (httpclient.go)
	if got := h[HeaderExtensions]; !slices.Equal(got, []string{tracedata.ExtensionURI}) {
		t.Errorf("X-A2A-Extensions %q", got)
	}
	if got := h.Values("A2A-Extensions"); !slices.Equal(got, []string{tracedata.ExtensionURI}) {
		t.Errorf("A2A-Extensions %q", got)
	}
	if h.Get("Traceparent") != "" {
		t.Errorf("traceparent %q without a span", h.Get("Traceparent"))
	}
	if len(req.Header) != 1 {
		t.Errorf("the caller's request changed: %v", req.Header)
	}

	// Values a2a-go set (a 0.3 transport spells X-A2a-Extensions) are kept.
	req.Header.Add("X-A2A-Extensions", "urn:other, "+tracedata.ExtensionURI)
	req.Header.Add("A2A-Extensions", "urn:other")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	req = req.WithContext(trace.ContextWithSpanContext(context.Background(), sc))
	if _, err := tr.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	h = seen[1]
	//lint:ignore SA1008 as above
	if got := h[HeaderExtensions]; !slices.Equal(got, []string{"urn:other", tracedata.ExtensionURI}) {
		t.Errorf("merged X-A2A-Extensions %q", got)
	}
	if _, ok := h[headerKeyLegacy]; ok {
		t.Errorf("both spellings of X-A2A-Extensions: %v", h)
	}
	if got := h.Values("A2A-Extensions"); !slices.Equal(got, []string{"urn:other", tracedata.ExtensionURI}) {
		t.Errorf("merged A2A-Extensions %q", got)
	}
	if want := "00-01000000000000000000000000000000-0200000000000000-01"; h.Get("Traceparent") != want {
		t.Errorf("traceparent %q, want %q", h.Get("Traceparent"), want)
	}
	if headerKeyLegacy != http.CanonicalHeaderKey(HeaderExtensions) || headerKeyModern != http.CanonicalHeaderKey(a2a.SvcParamExtensions) {
		t.Errorf("header keys %q %q", headerKeyLegacy, headerKeyModern)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
