package stack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// The Collector pipeline of collector-config.yaml, checked with the
// distribution tools/otelcol builds (the same components, the same
// versions): `otelcol validate` on the file, then the collector run for
// real on loopback with its exporters pointed at two OTLP receivers of our
// own (standing in for Jaeger and the green agent), spans sent through it
// by the OpenTelemetry SDK's OTLP/HTTP exporter.

// collectorComponents are the components collector-config.yaml and
// collector-coordbench.yaml use, plus the contrib span_metrics and
// servicegraph connectors, the peers `make bench-collector` measures
// coordbench's against (their configs are cmd/bench-collector's); the
// distribution must have exactly these (tools/otelcol/components.go).
var collectorComponents = map[string][]string{
	"receivers":  {"otlp"},
	"processors": {"batch", "memory_limiter"},
	"exporters":  {"debug", "otlp_http"},
	"connectors": {"coordbench", "service_graph", "span_metrics"},
	"extensions": {},
}

func TestCollectorConfigValidates(t *testing.T) {
	bin := toolBinary(t, "otelcol", "otelcol")
	config := repoFile(t, "collector-config.yaml")

	// With the defaults (those of docker-compose-local.yaml) and with the
	// loopback endpoints a local run sets.
	for _, env := range [][]string{nil, newCollector(t, "http://127.0.0.1:1", "http://127.0.0.1:2/v1/traces").env} {
		cmd := exec.Command(bin, "validate", "--config", config)
		cmd.Env = append(scrubbedEnv(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("otelcol validate (env %q): %v\n%s", env, err, out)
		}
		// A deprecated name (an alias the Collector still takes) is a
		// rename waiting to break the file at the next release.
		if strings.Contains(string(out), "deprecated") {
			t.Errorf("otelcol validate (env %q) warns:\n%s", env, out)
		}
	}

	// validate is not vacuous: a pipeline naming a component the
	// distribution lacks is refused.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(raw), "exporters: [debug]", "exporters: [prometheus]", 1)
	if broken == string(raw) {
		t.Fatal("collector-config.yaml no longer has `exporters: [debug]` in its metrics pipeline; update this test")
	}
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate", "--config", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "prometheus") {
		t.Fatalf("otelcol validate accepted an unknown exporter (err %v):\n%s", err, out)
	}
}

// TestCollectorComponents: the distribution holds exactly the components
// the config uses, nothing the builder manifest does not list.
func TestCollectorComponents(t *testing.T) {
	bin := toolBinary(t, "otelcol", "otelcol")
	out, err := exec.Command(bin, "components").CombinedOutput()
	if err != nil {
		t.Fatalf("otelcol components: %v\n%s", err, out)
	}
	got := parseComponents(string(out))
	for kind, want := range collectorComponents {
		have := got[kind]
		slices.Sort(have)
		if !slices.Equal(have, want) {
			t.Errorf("%s: distribution has %v, want exactly %v", kind, have, want)
		}
	}
	// The connector is this repository's, not a namesake.
	if !strings.Contains(string(out), "module: github.com/coordbench/coordbench/collector/coordbenchconnector ") {
		t.Errorf("otelcol components does not name the coordbench connector's module:\n%s", out)
	}
}

// parseComponents reads `otelcol components` (YAML: a list per kind, each
// entry with `- name: X`) without a YAML library.
func parseComponents(out string) map[string][]string {
	got := map[string][]string{}
	kind := ""
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			kind = strings.TrimSuffix(line, ":")
			continue
		}
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- name: "); ok && kind != "" {
			got[kind] = append(got[kind], name)
		}
	}
	return got
}

func TestCollectorForwardsSpansAndMetrics(t *testing.T) {
	bin := toolBinary(t, "otelcol", "otelcol")

	// Two receivers of our own: one where Jaeger would be, one where the
	// green agent's /v1/traces would be. Both must get every span.
	jaegerStore, greenStore := tracestore.NewStore(tracestore.Limits{}), tracestore.NewStore(tracestore.Limits{})
	jaegerMux := http.NewServeMux()
	jaegerMux.Handle(otlpreceiver.TracesPath, otlpreceiver.NewReceiver(jaegerStore, otlpreceiver.ReceiverLimits{}))
	jaegerSrv := httptest.NewServer(jaegerMux)
	t.Cleanup(jaegerSrv.Close)
	greenMux := http.NewServeMux()
	greenMux.Handle(otlpreceiver.TracesPath, otlpreceiver.NewReceiver(greenStore, otlpreceiver.ReceiverLimits{}))
	greenSrv := httptest.NewServer(greenMux)
	t.Cleanup(greenSrv.Close)

	col := newCollector(t, jaegerSrv.URL, greenSrv.URL+otlpreceiver.TracesPath, "OTELCOL_METRICS_VERBOSITY=detailed")
	col.start(t, bin)

	// The gRPC receiver listens too.
	conn, err := net.DialTimeout("tcp", col.grpcAddr, 2*time.Second)
	if err != nil {
		t.Fatalf("OTLP/gRPC receiver: %v", err)
	}
	conn.Close()

	// An agent's spans, sent as an agent would: the SDK's batching OTLP/HTTP
	// exporter, to the collector only.
	ctx := t.Context()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(col.httpURL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "stack-test-agent"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(50*time.Millisecond)))
	tracer := tp.Tracer("coordbench/stack")
	rootCtx, root := tracer.Start(ctx, "invoke_agent reviewer", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "reviewer")))
	_, child := tracer.Start(rootCtx, "SendMessage", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("a2a.method.name", "SendMessage")))
	child.End()
	root.End()
	traceID := root.SpanContext().TraceID()
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatalf("export to the collector: %v", err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	for name, store := range map[string]*tracestore.Store{"jaeger": jaegerStore, "green": greenStore} {
		var spans []otelmap.Span
		waitFor(t, "spans at "+name, 30*time.Second, col.proc, func(context.Context) error {
			if spans = store.Spans(traceID); len(spans) < 2 {
				return fmt.Errorf("%d of 2 spans: %w", len(spans), errNotYet)
			}
			return nil
		})
		byName := map[string]otelmap.Span{}
		for _, sp := range spans {
			byName[sp.Name] = sp
			if sp.Resource.ServiceName != "stack-test-agent" {
				t.Errorf("%s: span %q has service.name %q", name, sp.Name, sp.Resource.ServiceName)
			}
			if sp.Source != otelmap.SourceOTLP {
				t.Errorf("%s: span %q came by %q, want OTLP", name, sp.Name, sp.Source)
			}
		}
		r, c := byName["invoke_agent reviewer"], byName["SendMessage"]
		if r.SpanID != root.SpanContext().SpanID() || c.ParentSpanID != r.SpanID || c.Kind != trace.SpanKindClient {
			t.Errorf("%s: span tree not kept: %+v", name, spans)
		}
		if v, _, _ := r.StringAttr("gen_ai.agent.name"); v != "reviewer" {
			t.Errorf("%s: gen_ai.agent.name = %q", name, v)
		}
	}

	// The metrics pipeline takes OTLP metrics and hands them to the debug
	// exporter (detailed verbosity prints the metric's name).
	mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(col.httpURL+"/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
	gauge, err := mp.Meter("coordbench/stack").Float64Gauge("coordbench.stack.test_score")
	if err != nil {
		t.Fatal(err)
	}
	gauge.Record(ctx, 0.75)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	if err := mexp.Export(ctx, &rm); err != nil {
		t.Fatalf("export metrics to the collector: %v", err)
	}
	waitFor(t, "metrics at the debug exporter", 30*time.Second, col.proc, func(context.Context) error {
		if !strings.Contains(col.proc.out.String(), "coordbench.stack.test_score") {
			return errNotYet
		}
		return nil
	})
}

// collector is bin/otelcol on collector-config.yaml, on loopback.
type collector struct {
	env      []string
	proc     *process
	httpURL  string // http://127.0.0.1:PORT, the OTLP/HTTP receiver
	grpcAddr string // 127.0.0.1:PORT, the OTLP/gRPC receiver
}

// newCollector picks the collector's loopback ports and points its two
// exporters at jaegerOTLP (a base URL) and greenTraces (a /v1/traces URL);
// start runs it. The two steps are apart so an agent can be given the
// collector's address before the collector is given the agent's.
func newCollector(t *testing.T, jaegerOTLP, greenTraces string, extraEnv ...string) *collector {
	t.Helper()
	c := &collector{
		httpURL:  "http://127.0.0.1:" + strconv.Itoa(freePort(t)),
		grpcAddr: "127.0.0.1:" + strconv.Itoa(freePort(t)),
	}
	c.env = append([]string{
		"OTELCOL_GRPC_ENDPOINT=" + c.grpcAddr,
		"OTELCOL_HTTP_ENDPOINT=" + strings.TrimPrefix(c.httpURL, "http://"),
		"OTELCOL_TELEMETRY_HOST=127.0.0.1",
		"OTELCOL_TELEMETRY_PORT=" + strconv.Itoa(freePort(t)),
		"JAEGER_OTLP_ENDPOINT=" + jaegerOTLP,
		"GREEN_OTLP_TRACES_ENDPOINT=" + greenTraces,
	}, extraEnv...)
	return c
}

// start runs the collector and waits until its OTLP/HTTP receiver answers.
func (c *collector) start(t *testing.T, bin string) {
	t.Helper()
	c.proc = startProcess(t, "otelcol", bin, []string{"--config", repoFile(t, "collector-config.yaml")}, c.env, "")
	waitFor(t, "collector", 60*time.Second, c.proc, otlpReady(c.httpURL+"/v1/traces"))
}

// scrubbedEnv is the test's environment without the variables the stack's
// files read (collector-config.yaml's, the LLM settings the compose file
// passes on), so a developer's settings change neither what is checked nor
// what a failure prints.
func scrubbedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OTELCOL_") || strings.HasPrefix(name, "AGENTBEATS_LLM_") ||
			name == "JAEGER_OTLP_ENDPOINT" || name == "GREEN_OTLP_TRACES_ENDPOINT" {
			continue
		}
		env = append(env, kv)
	}
	return env
}
