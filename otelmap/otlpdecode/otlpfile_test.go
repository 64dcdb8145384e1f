package otlpdecode

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
)

var updateOTLPFixtures = flag.Bool("update-otlp-fixtures", false, "rewrite otelmap/testdata/sdk_export.otlp.jsonl from the real SDK")

const (
	twoAgentsFixture = "../testdata/two_agents.otlp.json"
	sdkFixture       = "../testdata/sdk_export.otlp.jsonl"
)

func readFixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func spanTotal(tds []ptrace.Traces) int {
	n := 0
	for _, td := range tds {
		n += td.SpanCount()
	}
	return n
}

// compactJSON is the fixture as one line, the way pdata writes it.
func compactJSON(t *testing.T, pretty []byte) []byte {
	t.Helper()
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(pretty)
	if err != nil {
		t.Fatal(err)
	}
	return otlptest.JSON(t, td)
}

func TestReadOTLPJSONSingleDocument(t *testing.T) {
	pretty := readFixture(t, twoAgentsFixture)
	for name, in := range map[string][]byte{
		"pretty":                  pretty,
		"compact":                 compactJSON(t, pretty),
		"compact, no final EOL":   bytes.TrimSpace(compactJSON(t, pretty)),
		"pretty, BOM, blank head": append([]byte("\uFEFF\n\n"), pretty...),
	} {
		tds, err := ReadOTLPJSON(bytes.NewReader(in), "two_agents.json")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(tds) != 1 || tds[0].ResourceSpans().Len() != 2 || spanTotal(tds) != 4 {
			t.Fatalf("%s: %d documents, %d spans; want 1 document of 2 resources, 4 spans", name, len(tds), spanTotal(tds))
		}
	}
}

func TestReadOTLPJSONLines(t *testing.T) {
	line := compactJSON(t, readFixture(t, twoAgentsFixture))
	line = bytes.TrimSpace(line)
	in := bytes.Join([][]byte{line, line, {}, line}, []byte("\r\n"))
	tds, err := ReadOTLPJSON(bytes.NewReader(in), "spans.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(tds) != 3 || spanTotal(tds) != 12 {
		t.Fatalf("%d documents, %d spans; want 3 and 12", len(tds), spanTotal(tds))
	}
}

// TestReadOTLPJSONJaegerV3 reads Jaeger's /api/v3/traces answer, pretty and
// compact, once or once per line, and with its key not first.
func TestReadOTLPJSONJaegerV3(t *testing.T) {
	pretty := readFixture(t, twoAgentsFixture)
	compact := bytes.TrimSpace(compactJSON(t, pretty))
	wrapped := append(append([]byte(`{"result":`), compact...), '}')
	for _, tc := range []struct {
		name      string
		in        []byte
		wantDocs  int
		wantSpans int
	}{
		{"pretty", append(append([]byte("{\n  \"result\": "), pretty...), []byte("\n}\n")...), 1, 4},
		{"compact", wrapped, 1, 4},
		{"one per line (streamed)", bytes.Join([][]byte{wrapped, wrapped}, []byte("\n")), 2, 8},
		{"result not first", append(append([]byte(`{"kind":"traces","result":`), compact...), '}'), 1, 4},
	} {
		tds, err := ReadOTLPJSON(bytes.NewReader(tc.in), "jaeger.json")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(tds) != tc.wantDocs || spanTotal(tds) != tc.wantSpans {
			t.Fatalf("%s: %d documents, %d spans; want %d, %d", tc.name, len(tds), spanTotal(tds), tc.wantDocs, tc.wantSpans)
		}
	}
}

// lineOf is the 1-based line of the first occurrence of s in text.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	i := strings.Index(text, s)
	if i < 0 {
		t.Fatalf("%q not in text", s)
	}
	return 1 + strings.Count(text[:i], "\n")
}

// TestReadOTLPJSONErrors: each bad file gets an error that names it, the
// line where it can, and what is wrong.
func TestReadOTLPJSONErrors(t *testing.T) {
	pretty := string(readFixture(t, twoAgentsFixture))
	line := string(bytes.TrimSpace(compactJSON(t, []byte(pretty))))
	badLine := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708","name":"bad"}]}]}]}`
	prettyBadSpanID := strings.Replace(pretty, `"spanId": "53995c3f42cd8ad8"`, `"spanId": "53995c3f42cd8a"`, 1)
	prettyBadSyntax := strings.Replace(pretty, `"name": "POST",`, `"name": "POST" "oops",`, 1)
	jaegerBadID := "{\n  \"result\": " + prettyBadSpanID + "\n}\n"
	for _, tc := range []struct {
		name, file, in string
		want           string
	}{
		{"empty", "trace.json", "", "trace.json: empty file"},
		{"blank", "trace.json", "\n  \n\t\n", "trace.json: empty file"},
		{"bad id on line 3", "trace.json", line + "\n" + line + "\n" + badLine + "\n" + line + "\n",
			`trace.json line 3: invalid trace id "zz" in span "bad": want 32 hex digits`},
		{"bad JSON on line 2", "t.jsonl", line + "\n{\"resourceSpans\": [\n", "t.jsonl line 2: invalid JSON"},
		{"bad span id in a pretty document", "p.json", prettyBadSpanID,
			`p.json line ` + strconv.Itoa(lineOf(t, prettyBadSpanID, `"53995c3f42cd8a"`)) + `: invalid span id "53995c3f42cd8a" in span "POST": want 16 hex digits`},
		{"bad span id in a pretty Jaeger answer", "j.json", jaegerBadID,
			`j.json line ` + strconv.Itoa(lineOf(t, jaegerBadID, `"53995c3f42cd8a"`)) + `: invalid span id`},
		{"syntax error in a pretty document", "p.json", prettyBadSyntax,
			`p.json line ` + strconv.Itoa(lineOf(t, prettyBadSyntax, `"oops"`)) + `: invalid JSON`},
		{"base64 ids", "b.json", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"Hh12U4y9/tlmRYfpsJQItA==","spanId":"i0XRoVdArS0="}]}]}]}`,
			`b.json line 1: invalid trace id "Hh12U4y9/tlmRYfpsJQItA==" in span "": want 32 hex digits; this looks base64-encoded`},
		{"bad id, snake_case", "s.json", `{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"01","name":"x"}]}]}]}`,
			`s.json line 1: invalid span id "01" in span "x": want 16 hex digits`},
		{"bad span kind", "k.json", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"0102030405060708","kind":"SPAN_KIND_BOGUS"}]}]}]}`,
			"k.json line 1: invalid OTLP JSON: ReadEnumValue: unknown string value"},
		{"Jaeger v1 API", "j.json", `{"data":[{"traceID":"4bf92f3577b34da6","spans":[]}],"total":0}`,
			`j.json line 1: not OTLP JSON: no resourceSpans (top-level keys "data", "total"); this looks like Jaeger's /api/traces answer, which is not OTLP: fetch /api/v3/traces instead`},
		{"Jaeger error", "j.json", `{"error":{"grpcCode":5,"httpCode":404,"message":"trace not found","httpStatus":"Not Found"}}`,
			"j.json line 1: Jaeger answered with an error, not traces: trace not found (HTTP 404)"},
		{"no spans", "e.json", `{"resourceSpans":[]}` + "\n{}\n" + `{"resource_spans":[]}` + "\n", "e.json: no spans found"},
		{"an array", "a.json", `[1, 2]`, "a.json line 1: expected a JSON object holding resourceSpans"},
		{"trailing garbage", "g.json", line + " x", "g.json line 1: invalid JSON"},
	} {
		_, err := ReadOTLPJSON(strings.NewReader(tc.in), tc.file)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n got  %v\n want %s…", tc.name, err, tc.want)
		}
	}
}

func TestReadOTLPJSONLimits(t *testing.T) {
	line := string(bytes.TrimSpace(compactJSON(t, readFixture(t, twoAgentsFixture))))
	in := line + "\n" + line + "\n"
	if _, err := readOTLPJSON(strings.NewReader(in), "big.jsonl", int64(len(line))+10, 1<<20); err == nil ||
		!strings.Contains(err.Error(), "big.jsonl: larger than the limit of") {
		t.Errorf("file limit: %v", err)
	}
	if _, err := readOTLPJSON(strings.NewReader("{}\n"+in), "long.jsonl", 1<<20, int64(len(line))-1); err == nil ||
		!strings.Contains(err.Error(), "long.jsonl line 2: line too long") {
		t.Errorf("line limit: %v", err)
	}
	if tds, err := readOTLPJSON(strings.NewReader(in), "ok.jsonl", int64(len(in)), int64(len(line))); err != nil || len(tds) != 2 {
		t.Errorf("at the limits: %d documents, %v", len(tds), err)
	}
}

func TestReadOTLPJSONFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	_, err := ReadOTLPJSONFile(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOTLPJSONFile(empty); err == nil || !strings.HasPrefix(err.Error(), empty+": empty file") {
		t.Fatalf("empty file: %v", err)
	}
}

// TestReadOTLPJSONSDKFixture reads what the real SDK exporter sent for two
// services calling each other, saved as JSON Lines (one export request per
// line, as the Collector's file exporter writes). Regenerate with
// go test ./otelmap/otlpdecode -run TestReadOTLPJSONSDKFixture -update-otlp-fixtures.
func TestReadOTLPJSONSDKFixture(t *testing.T) {
	if *updateOTLPFixtures {
		writeSDKFixture(t)
	}
	tds, err := ReadOTLPJSONFile(sdkFixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(tds) != 2 {
		t.Fatalf("%d documents, want 2 (one export per service)", len(tds))
	}
	byService := map[string]map[string]otelmap.Span{}
	var traceID trace.TraceID
	for _, td := range tds {
		spans, warnings := SpansFromTraces(td, otelmap.SourceOTLP)
		if len(warnings) > 0 {
			t.Fatalf("warnings: %q", warnings)
		}
		for _, sp := range spans {
			svc := sp.Resource.ServiceName
			if byService[svc] == nil {
				byService[svc] = map[string]otelmap.Span{}
			}
			byService[svc][sp.Name+"/"+sp.Kind.String()] = sp
			if traceID.IsValid() && sp.TraceID != traceID {
				t.Fatalf("span %q in trace %s, want one trace %s", sp.Name, sp.TraceID, traceID)
			}
			traceID = sp.TraceID
		}
	}
	invoke := byService["coordinator"]["invoke_agent reviewer/client"]
	post := byService["coordinator"]["POST/client"]
	srv := byService["reviewer"]["POST/server"]
	work := byService["reviewer"]["invoke_agent reviewer/internal"]
	chat := byService["reviewer"]["chat gpt-4o/client"]
	for name, sp := range map[string]otelmap.Span{"invoke": invoke, "post": post, "server": srv, "work": work, "chat": chat} {
		if !sp.SpanID.IsValid() {
			t.Fatalf("%s span missing; have %v", name, byService)
		}
	}
	if post.ParentSpanID != invoke.SpanID || srv.ParentSpanID != post.SpanID || work.ParentSpanID != srv.SpanID || chat.ParentSpanID != work.SpanID {
		t.Error("the fixture's parent links are not invoke_agent -> POST -> POST(server) -> invoke_agent -> chat")
	}
	if v, _, _ := invoke.StringAttr(otelmap.AttrGenAIAgentName); v != "reviewer" {
		t.Errorf("gen_ai.agent.name = %q", v)
	}
	if tok, ok := chat.IntAttr(otelmap.AttrGenAIInputTokens); !ok || tok != 42 {
		t.Errorf("chat input tokens = %d %v", tok, ok)
	}
}

// writeSDKFixture records two services with the real SDK, sends each one's
// spans through the real OTLP/HTTP exporter to a server that keeps the
// decoded requests, and writes them as OTLP JSON Lines.
func writeSDKFixture(t *testing.T) {
	var mu sync.Mutex
	var lines [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(req.Traces())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		w.Header().Set("Content-Type", ContentTypeProtobuf)
	}))
	t.Cleanup(srv.Close)

	provider := func(service string) *sdktrace.TracerProvider {
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
			sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String(service))))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	coord, rev := provider("coordinator"), provider("reviewer")
	ctx := context.Background()

	ctx, invoke := coord.Tracer("coordbench/fixture").Start(ctx, "invoke_agent reviewer",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("reviewer")))
	ctx, post := coord.Tracer("coordbench/fixture").Start(ctx, "POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(otelmap.AttrServerAddress.String("reviewer.local"), otelmap.AttrServerPort.Int(9010)))
	// The call crosses processes as a traceparent header.
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	sctx := propagation.TraceContext{}.Extract(context.Background(), carrier)
	sctx, server := rev.Tracer("coordbench/fixture").Start(sctx, "POST", trace.WithSpanKind(trace.SpanKindServer))
	sctx, work := rev.Tracer("coordbench/fixture").Start(sctx, "invoke_agent reviewer",
		trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("reviewer")))
	_, chat := rev.Tracer("coordbench/fixture").Start(sctx, "chat gpt-4o", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrGenAIRequestModel.String("gpt-4o"), otelmap.AttrGenAIInputTokens.Int(42)))
	chat.End()
	work.End()
	server.End()
	post.End()
	invoke.End()
	for _, tp := range []*sdktrace.TracerProvider{coord, rev} {
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 2 {
		t.Fatalf("captured %d export requests, want 2", len(lines))
	}
	if err := os.WriteFile(sdkFixture, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
