package purple

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// exportedSpan is one span an OTLP export request carried, with the
// request's ingest token header.
type exportedSpan struct {
	token, service, scope string
	traceID               trace.TraceID
}

// otlpRecorder is an OTLP/HTTP endpoint that decodes each protobuf export
// and keeps its spans with the request's Coordbench-Ingest-Token header.
type otlpRecorder struct {
	mu    sync.Mutex
	spans []exportedSpan
}

func (r *otlpRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	er := ptraceotlp.NewExportRequest()
	if err == nil {
		err = er.UnmarshalProto(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	token := req.Header.Get(otelmap.IngestTokenHeader)
	r.mu.Lock()
	rss := er.Traces().ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		svc, _ := rs.Resource().Attributes().Get(string(otelmap.AttrServiceName))
		for j := range rs.ScopeSpans().Len() {
			ss := rs.ScopeSpans().At(j)
			for k := range ss.Spans().Len() {
				r.spans = append(r.spans, exportedSpan{token: token, service: svc.Str(), scope: ss.Scope().Name(), traceID: trace.TraceID(ss.Spans().At(k).TraceID())})
			}
		}
	}
	r.mu.Unlock()
	resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	_, _ = w.Write(resp)
}

func (r *otlpRecorder) of(id trace.TraceID) []exportedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []exportedSpan
	for _, s := range r.spans {
		if s.traceID == id {
			out = append(out, s)
		}
	}
	return out
}

// TestIngestTokenOnExports: a coordinator that exports, a reviewer that
// exports and a reviewer that reports steps only. A call whose metadata
// carries an ingest token gets every span of its trace exported with the
// token header: the coordinator's own, the exporting reviewer's (the
// coordinator handed the token on) and the steps-only reviewer's that the
// coordinator forwards. A call without a token, one with a malformed
// token, and the same call to agents with NoIngestToken export without
// the header.
func TestIngestTokenOnExports(t *testing.T) {
	const token = "TOKENTOKENTOKENTOKENTOKEN7"
	ingestMD := map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": token, "otlp_header": otelmap.IngestTokenHeader}}
	for _, tc := range []struct {
		name     string
		md       map[string]any
		noIngest bool
		want     string
	}{
		{"token", ingestMD, false, token},
		{"no token", nil, false, ""},
		{"token in a reserved header", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": token, "otlp_header": "authorization"}}, false, ""},
		{"agents ignore tokens", ingestMD, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &otlpRecorder{}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			h := newHarness(t)
			exp := func(name string) Options {
				return Options{Name: name, OTLPEndpoint: srv.URL, NoExtension: true, FlushOnResponse: true, NoIngestToken: tc.noIngest}
			}
			coord := exp("coordinator")
			coord.Role, coord.NoExtension = RoleCoordinator, false
			sys := startSystem(t, h,
				AgentSpec{Options: coord, PeerNames: []string{"reviewer-1", "reviewer-2"}},
				AgentSpec{Options: exp("reviewer-1")},
				AgentSpec{Options: Options{Name: "reviewer-2"}}, // steps only
			)
			req := reviewRequest(sys.Agent("coordinator").URL(), "t-ingest")
			req.Metadata = tc.md
			ctx, task := h.tracer.Start(t.Context(), otelmap.SpanTask)
			if _, err := h.m.Send(ctx, req); err != nil {
				t.Fatal(err)
			}
			task.End()
			if err := sys.Stop(); err != nil { // flushes every exporter
				t.Fatal(err)
			}
			spans := rec.of(task.SpanContext().TraceID())
			services := map[string]bool{}
			for _, s := range spans {
				services[s.service+" "+s.scope] = true
				if s.token != tc.want {
					t.Errorf("span of %s (%s) exported with token %q, want %q", s.service, s.scope, s.token, tc.want)
				}
			}
			for _, want := range []string{"coordinator " + instrumentationName, "reviewer-1 " + instrumentationName, "reviewer-2 " + forwardScope.Name} {
				if !services[want] {
					t.Errorf("no span of %q exported; got %v", want, services)
				}
			}
		})
	}
}

func TestIngestFromMetadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   map[string]any
		want ingest
		ok   bool
	}{
		{"green's", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": "abc", "otlp_header": otelmap.IngestTokenHeader}}, ingest{"abc", otelmap.IngestTokenHeader}, true},
		{"default header", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": "abc"}}, ingest{"abc", otelmap.IngestTokenHeader}, true},
		{"header canonicalized", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": "abc", "otlp_header": "x-my-token"}}, ingest{"abc", "X-My-Token"}, true},
		{"none", map[string]any{"other": 1}, ingest{}, false},
		{"not an object", map[string]any{otelmap.IngestMetadataKey: "abc"}, ingest{}, false},
		{"no token", map[string]any{otelmap.IngestMetadataKey: map[string]any{"otlp_header": "X-A"}}, ingest{}, false},
		{"token with a newline", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": "a\r\nHost: evil"}}, ingest{}, false},
		{"token too long", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": strings.Repeat("a", ingestTokenMaxLen+1)}}, ingest{}, false},
		{"header not a name", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": "abc", "otlp_header": "X A"}}, ingest{}, false},
		{"reserved header", map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": "abc", "otlp_header": "content-type"}}, ingest{}, false},
	} {
		got, ok := ingestFromMetadata(tc.md)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestIngestTokensBounded: the tokens are forgotten beyond their count,
// least recently used first, and once unused for maxAge.
func TestIngestTokensBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	tokens := newIngestTokens(2, time.Minute)
	tokens.now = func() time.Time { return now }
	id := func(b byte) trace.TraceID { return trace.TraceID{0: b, 15: 1} }
	tokens.remember(id(1), ingest{"one", "H"})
	tokens.remember(id(2), ingest{"two", "H"})
	if _, ok := tokens.lookup(id(1)); !ok { // trace 1 is now the most recent
		t.Fatal("trace 1 forgotten")
	}
	tokens.remember(id(3), ingest{"three", "H"})
	if _, ok := tokens.lookup(id(2)); ok {
		t.Error("trace 2 kept beyond the bound")
	}
	if in, ok := tokens.lookup(id(1)); !ok || in.Token != "one" {
		t.Errorf("trace 1: %+v %v", in, ok)
	}
	now = now.Add(30 * time.Second)
	tokens.lookup(id(3)) // used: kept 1 minute more
	now = now.Add(45 * time.Second)
	if _, ok := tokens.lookup(id(1)); ok {
		t.Error("trace 1 kept after a minute unused")
	}
	if _, ok := tokens.lookup(id(3)); !ok {
		t.Error("trace 3 forgotten although used")
	}
	if n := tokens.len(); n != 1 {
		t.Errorf("%d tokens held, want 1", n)
	}
}

// TestIngestExporterBounded: one exporter per token, at most max of them;
// the least recently used is shut down to make room, and all are shut
// down with the exporter.
func TestIngestExporterBounded(t *testing.T) {
	tokens := newIngestTokens(100, time.Hour)
	var made []*tracetest.InMemoryExporter
	byToken := map[*tracetest.InMemoryExporter]string{}
	base := tracetest.NewInMemoryExporter()
	x := newIngestExporter(base, tokens, func(_ context.Context, in ingest) (sdktrace.SpanExporter, error) {
		e := tracetest.NewInMemoryExporter()
		made = append(made, e)
		byToken[e] = in.Token
		return e, nil
	}, quiet)
	x.max = 2
	span := func(b byte) sdktrace.ReadOnlySpan {
		return tracetest.SpanStub{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0: b, 15: 1}, SpanID: trace.SpanID{0: b, 7: 1}})}.Snapshot()
	}
	for b := byte(1); b <= 3; b++ {
		tokens.remember(trace.TraceID{0: b, 15: 1}, ingest{Token: string('a' + rune(b)), Header: "H"})
	}
	ctx := t.Context()
	if err := x.ExportSpans(ctx, []sdktrace.ReadOnlySpan{span(1), span(2), span(9), span(1)}); err != nil {
		t.Fatal(err)
	}
	if n := len(base.GetSpans()); n != 1 {
		t.Errorf("%d spans without a token, want 1", n)
	}
	if len(made) != 2 || x.exporters() != 2 {
		t.Fatalf("%d exporters made, %d kept; want 2", len(made), x.exporters())
	}
	if err := x.ExportSpans(ctx, []sdktrace.ReadOnlySpan{span(3)}); err != nil {
		t.Fatal(err)
	}
	if len(made) != 3 || x.exporters() != 2 {
		t.Fatalf("%d exporters made, %d kept; want 3 and 2", len(made), x.exporters())
	}
	// The first made, the least recently used, was shut down (which
	// clears an in-memory exporter); the others hold their spans (trace 1
	// had two in the batch, trace 2 and 3 one each).
	if n := len(made[0].GetSpans()); n != 0 {
		t.Errorf("exporter of token %s: %d spans after it was shut down", byToken[made[0]], n)
	}
	want := map[string]int{"b": 2, "c": 1, "d": 1}
	for _, e := range made[1:] {
		if n := len(e.GetSpans()); n != want[byToken[e]] {
			t.Errorf("exporter of token %s: %d spans, want %d", byToken[e], n, want[byToken[e]])
		}
	}
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if x.exporters() != 0 {
		t.Errorf("%d exporters kept after shutdown", x.exporters())
	}
}

// TestEnvHeaders: the SDK's reading of the header variables, which an
// exporter with a token header must repeat.
func TestEnvHeaders(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc, x-api-key = k ,bad,=v,in valid=1"}
	getenv := func(k string) string { return env[k] }
	got := envHeaders(getenv)
	if len(got) != 2 || got["authorization"] != "Bearer abc" || got["x-api-key"] != "k" {
		t.Errorf("headers %v", got)
	}
	env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = "x-traces=1"
	if got := envHeaders(getenv); len(got) != 1 || got["x-traces"] != "1" {
		t.Errorf("with the traces variable: %v, want it alone", got)
	}
	h := withIngestHeader(map[string]string{"coordbench-ingest-token": "old", "A": "b"}, ingest{"new", otelmap.IngestTokenHeader})
	if len(h) != 2 || h[otelmap.IngestTokenHeader] != "new" || h["A"] != "b" {
		t.Errorf("withIngestHeader: %v", h)
	}
}
