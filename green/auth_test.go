package green

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
)

const (
	testA2AToken  = "a2a-Token.1"
	testOTLPToken = "otlp-Token.2"
)

// rawRPC posts one JSON-RPC body with the given headers and returns the
// status, the WWW-Authenticate header and the body.
func rawRPC(t *testing.T, url, body string, header map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// TestServerA2AAuth: with an A2A token, JSON-RPC of both protocol versions
// needs it (missing, wrong, the OTLP token: 401 naming the Bearer scheme),
// while the card and the health check stay public; the card declares the
// schemes so that a2a-go's own AuthInterceptor sends the token.
func TestServerA2AAuth(t *testing.T) {
	g := startGreen(t, ServerOptions{A2AToken: testA2AToken, OTLPToken: testOTLPToken})
	// A call that reaches the handler answers 200 with a JSON-RPC error
	// (no such task); one that does not answers 401.
	bodies := map[string]string{
		"1.0": `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"no-such-task"}}`,
		"0.3": `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"no-such-task"}}`,
	}
	for version, body := range bodies {
		for _, tc := range []struct {
			name   string
			header map[string]string
			status int
		}{
			{"missing", nil, 401},
			{"wrong", map[string]string{"Authorization": "Bearer nope"}, 401},
			{"the OTLP token", map[string]string{"Authorization": "Bearer " + testOTLPToken}, 401},
			{"a prefix of the token", map[string]string{a2aserve.APIKeyHeader: testA2AToken[:4]}, 401},
			{"bearer", map[string]string{"Authorization": "Bearer " + testA2AToken}, 200},
			{"API key", map[string]string{a2aserve.APIKeyHeader: testA2AToken}, 200},
		} {
			status, challenge, got := rawRPC(t, g.url, body, tc.header)
			if status != tc.status {
				t.Errorf("%s, %s: %d, want %d: %s", version, tc.name, status, tc.status, got)
				continue
			}
			if status == 401 && !strings.HasPrefix(challenge, `Bearer realm="coordbench-green"`) {
				t.Errorf("%s, %s: WWW-Authenticate %q", version, tc.name, challenge)
			}
			if status == 200 && !strings.Contains(got, `"error"`) {
				t.Errorf("%s, %s: %s, want a task-not-found error", version, tc.name, got)
			}
		}
	}
	for _, path := range []string{"", ".well-known/agent-card.json", "healthz"} {
		resp, err := http.Get(g.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /%s: %d, want 200", path, resp.StatusCode)
		}
	}

	// The card, as a2a-go's resolver reads it with either parser.
	var card *a2a.AgentCard
	for _, parse := range []agentcard.Parser{agentcard.DefaultCardParser, a2av0.NewAgentCardParser()} {
		c, err := (&agentcard.Resolver{CardParser: parse}).Resolve(t.Context(), g.url)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.SecuritySchemes[a2aserve.BearerSchemeName].(a2a.HTTPAuthSecurityScheme); !ok {
			t.Errorf("card schemes %v, want a bearer scheme", c.SecuritySchemes)
		}
		if len(c.SecurityRequirements) == 0 {
			t.Error("the card requires nothing")
		}
		card = c
	}

	// a2a-go's AuthInterceptor reads the card and sends the credential of
	// the scheme it requires.
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("session", a2aserve.BearerSchemeName, testA2AToken)
	for _, withToken := range []bool{false, true} {
		opts := []a2aclient.FactoryOption{a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(g.http)}
		if withToken {
			opts = append(opts, a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
		}
		c, err := a2aclient.NewFactory(opts...).CreateFromCard(t.Context(), card)
		if err != nil {
			t.Fatal(err)
		}
		ctx := a2aclient.AttachSessionID(t.Context(), "session")
		_, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
		_ = c.Destroy()
		switch {
		case withToken && !errors.Is(err, a2a.ErrTaskNotFound):
			t.Errorf("with a2a-go's AuthInterceptor: %v, want task not found", err)
		case !withToken && (err == nil || !strings.Contains(err.Error(), "401")):
			t.Errorf("without credentials: %v, want 401", err)
		}
	}
	if a2aRejected, _ := g.srv.Rejected(); a2aRejected != 9 {
		t.Errorf("A2A rejections %d, want 9", a2aRejected)
	}
}

// exportSpans sends spans to url with the real OTLP/HTTP exporter
// (protobuf), with headers, and returns its error.
func exportSpans(t *testing.T, url string, headers map[string]string, spans []sdktrace.ReadOnlySpan) error {
	t.Helper()
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(url),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
	}
	if headers != nil {
		opts = append(opts, otlptracehttp.WithHeaders(headers))
	}
	exp, err := otlptracehttp.New(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return exp.ExportSpans(ctx, spans)
}

// testSpans are two finished spans of one trace, made by the SDK.
func testSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	ctx, root := tp.Tracer("t").Start(t.Context(), "outsider")
	_, child := tp.Tracer("t").Start(ctx, "child")
	child.End()
	root.End()
	// Read before the shutdown, which empties the exporter.
	spans := mem.GetSpans().Snapshots()
	_ = tp.Shutdown(context.Background())
	if len(spans) != 2 {
		t.Fatalf("%d test spans", len(spans))
	}
	return spans
}

// TestServerOTLPAuth: with an OTLP token, an export without it, with a
// wrong one or with the A2A token is refused on the main listener and on
// the OTLP listener, and nothing of it reaches the store; with it, the
// spans arrive.
func TestServerOTLPAuth(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	otlpAddr := ln.Addr().String()
	_ = ln.Close()
	g := startGreen(t, ServerOptions{A2AToken: testA2AToken, OTLPToken: testOTLPToken, OTLPAddr: otlpAddr})
	spans := testSpans(t)
	urls := []string{g.url + strings.TrimPrefix(otlpreceiver.TracesPath, "/"), a2aserve.BaseURL(g.srv.OTLPAddr()) + otlpreceiver.TracesPath}
	for _, u := range urls {
		for _, bad := range []map[string]string{
			nil,
			{"Authorization": "Bearer wrong"},
			{"Authorization": "Bearer " + testA2AToken},
			{a2aserve.APIKeyHeader: testOTLPToken + "x"},
		} {
			before := g.srv.Store().Stats()
			err := exportSpans(t, u, bad, spans)
			if err == nil || !strings.Contains(err.Error(), "401") {
				t.Errorf("%s with %v: %v, want a 401", u, bad, err)
			}
			if after := g.srv.Store().Stats(); after.Spans != before.Spans || after.SpansAccepted != before.SpansAccepted {
				t.Errorf("%s with %v: the store went from %+v to %+v", u, bad, before, after)
			}
		}
	}
	seen := func() uint64 { st := g.srv.Store().Stats(); return st.SpansAccepted + st.SpansDuplicate }
	for i, u := range urls {
		before := seen()
		h := map[string]string{"Authorization": "Bearer " + testOTLPToken}
		if i == 1 {
			h = map[string]string{a2aserve.APIKeyHeader: testOTLPToken}
		}
		if err := exportSpans(t, u, h, spans); err != nil {
			t.Fatalf("%s with the token: %v", u, err)
		}
		// The same spans go to both URLs: the second time the store counts
		// them as duplicates.
		if after := seen(); after != before+uint64(len(spans)) {
			t.Errorf("%s with the token: the store saw %d spans, want %d", u, after-before, len(spans))
		}
	}
	if _, otlpRejected := g.srv.Rejected(); otlpRejected != 8 {
		t.Errorf("OTLP rejections %d, want 8", otlpRejected)
	}
}

// TestServerAuthOffByDefault: without tokens the card declares nothing and
// anyone may call and export, as before.
func TestServerAuthOffByDefault(t *testing.T) {
	g := startGreen(t, ServerOptions{})
	if c := g.srv.Card(); len(c.SecuritySchemes) != 0 || len(c.SecurityRequirements) != 0 {
		t.Errorf("the card declares %v %v", c.SecuritySchemes, c.SecurityRequirements)
	}
	resp, err := http.Get(g.url + ".well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, k := range []string{"securitySchemes", "securityRequirements", "security"} {
		if _, ok := raw[k]; ok {
			t.Errorf("the card has %s", k)
		}
	}
	if status, _, body := rawRPC(t, g.url, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, nil); status != 200 {
		t.Errorf("a call without a token: %d %s", status, body)
	}
	if err := exportSpans(t, g.url+strings.TrimPrefix(otlpreceiver.TracesPath, "/"), nil, testSpans(t)); err != nil {
		t.Errorf("an export without a token: %v", err)
	}
}

func TestServerRefusesBadToken(t *testing.T) {
	for _, opts := range []ServerOptions{{A2AToken: "has space"}, {OTLPToken: "new\nline"}} {
		opts.Host, opts.Getenv, opts.Logger = "127.0.0.1", func(string) string { return "" }, quietLogger
		if s, err := NewServer(t.Context(), opts); err == nil {
			_ = s.Close(t.Context())
			t.Errorf("%+v accepted", opts)
		} else if strings.Contains(err.Error(), "has space") || strings.Contains(err.Error(), "new\nline") {
			t.Errorf("the error repeats the token: %v", err)
		}
	}
}
