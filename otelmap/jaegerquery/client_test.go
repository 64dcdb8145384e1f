package jaegerquery

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/coordbench/coordbench/internal/testenv"
)

// These tests hold the client to what it must do with answers a real
// Jaeger gives only in trouble: a refused connection, silence, an error
// body, a body that is not OTLP. Each server below plays one such answer
// on loopback; Jaeger's own answers (a trace, a search, its 404) are read
// from a real bin/jaeger in stack/jaeger_source_test.go.

// fixtureTrace is an OTLP JSON export request (the SDK's exporter wrote
// it) and the one trace id it holds.
func fixtureTrace(t *testing.T) ([]byte, pcommon.TraceID) {
	t.Helper()
	raw, err := os.ReadFile("../testdata/sdk_export.otlp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	return line, traceID(t, "5f217555df03ac9c72635ad901d10c67")
}

func traceID(t *testing.T, h string) pcommon.TraceID {
	t.Helper()
	var id pcommon.TraceID
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 16 {
		t.Fatalf("trace id %q: %v", h, err)
	}
	copy(id[:], b)
	return id
}

// wrap puts an OTLP document in Jaeger's API v3 envelope
// (api_v3.GRPCGatewayWrapper: {"result": ...}).
func wrap(doc []byte) []byte {
	return append(append([]byte(`{"result":`), doc...), '}')
}

// serve starts a loopback server with handler and a client of it; both
// end with the test, which also checks that no goroutine is left.
func serve(t *testing.T, handler http.HandlerFunc, opts Options) (*Client, *httptest.Server) {
	t.Helper()
	before := runtime.NumGoroutine()
	srv := httptest.NewServer(handler)
	c, err := New(srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if tr, ok := c.hc.Transport.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		testenv.CheckNoGoroutineLeak(t, before)
	})
	return c, srv
}

func TestTraceReadsJaegerEnvelope(t *testing.T) {
	doc, id := fixtureTrace(t)
	var gotPath string
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.Path
		w.Write(wrap(doc))
	}, Options{})
	traces, err := c.Trace(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "/api/v3/traces/5f217555df03ac9c72635ad901d10c67" {
		t.Errorf("asked for %s", gotPath)
	}
	n := 0
	for _, td := range traces {
		n += td.SpanCount()
	}
	if n == 0 {
		t.Fatal("no spans")
	}
	if ids := TraceIDs(traces); len(ids) != 1 || ids[0] != id {
		t.Errorf("trace ids %v, want [%v]", ids, id)
	}
}

func TestTraceOfAnotherIDIsMalformed(t *testing.T) {
	doc, _ := fixtureTrace(t)
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(wrap(doc)) }, Options{})
	other := traceID(t, "0123456789abcdef0123456789abcdef")
	_, err := c.Trace(t.Context(), other)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "5f217555df03ac9c72635ad901d10c67") {
		t.Fatalf("err %v, want ErrMalformed naming the foreign trace", err)
	}
}

// jaegerError writes an error as Jaeger's HTTP gateway does
// (http_gateway.go, tryHandleError and returnTraces: http.Error with the
// JSON of api_v3.GRPCGatewayError).
func jaegerError(w http.ResponseWriter, code int, msg string) {
	http.Error(w, `{"error":{"httpCode":`+strconv.Itoa(code)+`,"message":"`+msg+`"}}`, code)
}

func TestNotFound(t *testing.T) {
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		jaegerError(w, http.StatusNotFound, "No traces found")
	}, Options{})
	_, err := c.Trace(t.Context(), traceID(t, "0123456789abcdef0123456789abcdef"))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "No traces found") {
		t.Fatalf("trace: err %v, want ErrNotFound with Jaeger's message", err)
	}
	// A search that finds nothing is an empty answer, not a failure.
	found, err := c.Find(t.Context(), Query{Service: "x", Start: time.Unix(0, 0), End: time.Unix(10, 0), NumTraces: 5})
	if err != nil || len(found.TraceIDs) != 0 {
		t.Fatalf("find: %v, %d traces", err, len(found.TraceIDs))
	}
}

func TestForeign404IsNotNotFound(t *testing.T) {
	// A 404 that is not Jaeger's (net/http's and gorilla/mux's own page, as
	// a wrong base path or a proxy gives it) must not read as "no such
	// trace", nor a search's as "nothing matched".
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, Options{})
	_, err := c.Trace(t.Context(), traceID(t, "0123456789abcdef0123456789abcdef"))
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "404 page not found") || !strings.Contains(err.Error(), "query service?") {
		t.Fatalf("trace: err %v, want a 404 that is not ErrNotFound", err)
	}
	_, err = c.Find(t.Context(), Query{Service: "x", Start: time.Unix(0, 0), End: time.Unix(10, 0), NumTraces: 5})
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("find: err %v, want a failure, not an empty answer", err)
	}
}

func TestServerErrorCarriesJaegerMessage(t *testing.T) {
	// What Jaeger's in-memory store answers to query.num_traces above its
	// max_traces (internal/storage/v2/memory/memory.go).
	const msg = "search depth must be greater than 0 and less than max traces"
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		jaegerError(w, http.StatusInternalServerError, msg)
	}, Options{})
	_, err := c.Find(t.Context(), Query{Service: "x", Start: time.Unix(0, 0), End: time.Unix(10, 0), NumTraces: 5})
	if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("err %v, want the status and Jaeger's message", err)
	}
	for _, kind := range []error{ErrNotFound, ErrMalformed, ErrUnreachable} {
		if errors.Is(err, kind) {
			t.Errorf("err %v is %v", err, kind)
		}
	}
}

func TestMalformedAnswers(t *testing.T) {
	doc, id := fixtureTrace(t)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"the UI's page", "<!doctype html><html><body>Jaeger UI</body></html>", "an HTML page"},
		{"HTML sent as text", "<html><body>a proxy's login page</body></html>", "invalid JSON"},
		{"the v1 API's answer", `{"data":[{"traceID":"5f217555df03ac9c72635ad901d10c67","spans":[]}]}`, "/api/v3/traces"},
		{"cut short", string(wrap(doc))[:len(doc)/2], "invalid JSON"},
		{"empty", "", "empty"},
		{"no spans", `{"result":{"resourceSpans":[]}}`, "no spans"},
		{"an error with status 200", `{"error":{"httpCode":500,"message":"boom"}}`, "boom"},
		{"an array", `[1,2,3]`, "array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.name != "HTML sent as text" {
					// net/http sniffs the type, as Jaeger's gateway lets it.
					w.Header().Del("Content-Type")
				} else {
					w.Header().Set("Content-Type", "text/plain")
				}
				w.Write([]byte(tc.body))
			}, Options{})
			_, err := c.Trace(t.Context(), id)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrMalformed saying %q", err, tc.want)
			}
		})
	}
}

func TestAnswerOverLimit(t *testing.T) {
	doc, id := fixtureTrace(t)
	body := wrap(doc)
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(body) }, Options{MaxResponseBytes: int64(len(body) - 1)})
	_, err := c.Trace(t.Context(), id)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "larger than the limit") {
		t.Fatalf("err %v, want the size limit", err)
	}
	// At the limit exactly it is read.
	c2, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(body) }, Options{MaxResponseBytes: int64(len(body))})
	if _, err := c2.Trace(t.Context(), id); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := New("http://"+addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Trace(t.Context(), traceID(t, "0123456789abcdef0123456789abcdef"))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err %v, want ErrUnreachable naming %s", err, addr)
	}
}

func TestSilentServerMeetsDeadline(t *testing.T) {
	// The server sends headers and then nothing: the deadline must end the
	// read of the body too, not only the wait for headers.
	for _, headers := range []bool{false, true} {
		c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if headers {
				w.WriteHeader(http.StatusOK)
				w.Write([]byte(`{"result":`))
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
		}, Options{RequestTimeout: 300 * time.Millisecond})
		_, err := c.Trace(t.Context(), traceID(t, "0123456789abcdef0123456789abcdef"))
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "no answer within") {
			t.Fatalf("headers sent %v: err %v, want ErrUnreachable for the deadline", headers, err)
		}
	}
}

func TestCallerCancellationIsNotUnreachable(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	}, Options{})
	_, err := c.Trace(ctx, traceID(t, "0123456789abcdef0123456789abcdef"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnreachable) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestURLs(t *testing.T) {
	id := traceID(t, "00000000000000000123456789abcdef")
	for _, base := range []string{"http://jaeger:16686", "http://jaeger:16686/", "http://jaeger:16686/api/v3", "http://jaeger:16686/api/v3/traces/"} {
		c, err := New(base, Options{})
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if got, want := c.TraceURL(id), "http://jaeger:16686/api/v3/traces/00000000000000000123456789abcdef"; got != want {
			t.Errorf("%s: trace URL %s, want %s", base, got, want)
		}
	}
	// Behind Jaeger's base path (query.base_path).
	c, err := New("https://example.org/jaeger/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := Query{Service: "coordinator agent", Operation: "invoke_agent x", Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		End: time.Date(2026, 1, 2, 4, 4, 5, 0, time.FixedZone("x", 3600)), NumTraces: 7}
	u, err := url.Parse(c.FindURL(q))
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/jaeger/api/v3/traces" {
		t.Errorf("path %s", u.Path)
	}
	want := map[string]string{
		"query.service_name":   "coordinator agent",
		"query.operation_name": "invoke_agent x",
		"query.start_time_min": "2026-01-02T03:04:05.000000006Z",
		"query.start_time_max": "2026-01-02T03:04:05Z",
		"query.num_traces":     "7",
	}
	for k, v := range want {
		if got := u.Query().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if len(u.Query()) != len(want) {
		t.Errorf("parameters %v, want exactly %v", u.Query(), want)
	}
	for _, bad := range []string{"", "127.0.0.1:16686", "ftp://h/", "http://", "http://h:16686/?x=1", "http://h/#f", "http://[::1"} {
		if _, err := New(bad, Options{}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

func TestQueryValidate(t *testing.T) {
	t0 := time.Unix(100, 0)
	for _, q := range []Query{
		{Start: t0, End: t0, NumTraces: 1},
		{Service: "s", End: t0, NumTraces: 1},
		{Service: "s", Start: t0, NumTraces: 1},
		{Service: "s", Start: t0, End: t0.Add(-time.Nanosecond), NumTraces: 1},
		{Service: "s", Start: t0, End: t0},
	} {
		if err := q.Validate(); err == nil {
			t.Errorf("%+v: accepted", q)
		}
	}
	if err := (Query{Service: "s", Start: t0, End: t0, NumTraces: 1}).Validate(); err != nil {
		t.Errorf("an instant: %v", err)
	}
}
