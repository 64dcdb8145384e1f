package a2acall

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestURLAttrCache: a transport that posts to the same URL again, to
// another and back gives each POST span the attributes a fresh transport
// gives it (the URL attributes are then computed anew).
func TestURLAttrCache(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	urls := []string{
		srv.URL + "/a", srv.URL + "/a", other + "/a", srv.URL + "/a",
		strings.Replace(srv.URL, "http://", "http://user:pw@", 1) + "/a", srv.URL + "/a?x=1", srv.URL + "/a",
	}
	post := func(rt http.RoundTripper, u string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
	base := srv.Client().Transport
	rec := tracetest.NewSpanRecorder()
	shared := newHTTPTransport(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), base, false)
	for _, u := range urls {
		post(shared, u)
	}
	got := rec.Ended()
	if len(got) != len(urls) {
		t.Fatalf("%d spans for %d requests", len(got), len(urls))
	}
	for i, u := range urls {
		fresh := tracetest.NewSpanRecorder()
		post(newHTTPTransport(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(fresh)), base, false), u)
		want := fresh.Ended()[0].Attributes()
		if have := got[i].Attributes(); !reflect.DeepEqual(have, want) {
			t.Errorf("request %d (%s): attributes\n%v\nwant (a fresh transport's)\n%v", i, u, have, want)
		}
	}
}
