package main

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/internal/tracegen"
)

func testShape(t *testing.T) payloadShape {
	return payloadShape{
		capturesDir: filepath.Join(testenv.ModuleRoot(t), "otelmap/assemble/testdata/frameworks"),
		copies:      3,
		generated:   tracegen.Shape{Requests: 4, SpansPerRequest: 100, SpansPerTrace: 50, OpenTraces: 4}, // two whole blocks of traces
	}
}

// TestPayload: the payload is the same bytes every time; it decodes as
// OTLP protobuf; every copy of a capture is a trace of its own with all
// the capture's spans; the generated traces are whole; the counts the
// command prints and checks against are those of the bytes.
func TestPayload(t *testing.T) {
	shape := testShape(t)
	p, err := buildPayload(shape)
	if err != nil {
		t.Fatal(err)
	}
	again, err := buildPayload(shape)
	if err != nil {
		t.Fatal(err)
	}
	if p.sha256 != again.sha256 {
		t.Errorf("two payloads of one shape differ")
	}
	perTrace := map[pcommon.TraceID]int{}
	spans, named := 0, 0
	// The pairs, counted from the server side: the distinct parents of
	// named SERVER and CONSUMER spans that are named CLIENT or PRODUCER
	// spans.
	type key struct {
		trace pcommon.TraceID
		span  pcommon.SpanID
	}
	callers := map[key]bool{}
	var answers []key
	for r, body := range p.bodies {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			t.Fatalf("request %d: %v", r, err)
		}
		for _, rs := range req.Traces().ResourceSpans().All() {
			_, hasName := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					perTrace[s.TraceID()]++
					spans++
					if !hasName {
						continue
					}
					named++
					switch s.Kind() {
					case ptrace.SpanKindClient, ptrace.SpanKindProducer:
						callers[key{s.TraceID(), s.SpanID()}] = true
					case ptrace.SpanKindServer, ptrace.SpanKindConsumer:
						answers = append(answers, key{s.TraceID(), s.ParentSpanID()})
					}
				}
			}
		}
	}
	if spans != p.spans || named != p.namedSpans || len(perTrace) != p.traces {
		t.Errorf("the bytes hold %d spans (%d named) of %d traces; the payload says %d (%d) of %d", spans, named, len(perTrace), p.spans, p.namedSpans, p.traces)
	}
	paired := map[key]bool{}
	for _, k := range answers {
		if callers[k] {
			paired[k] = true
		}
	}
	if len(paired) != p.pairs || p.pairs == 0 {
		t.Errorf("the bytes hold %d client/server pairs; the payload says %d", len(paired), p.pairs)
	}
	caps, err := loadCaptures(shape.capturesDir)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(caps)*shape.copies + shape.generated.Traces(); p.traces != want {
		t.Errorf("%d traces, want %d (each capture here is one trace)", p.traces, want)
	}
	if want := p.captureSpans*shape.copies + shape.generated.Spans(); p.spans != want {
		t.Errorf("%d spans, want %d", p.spans, want)
	}
	for _, c := range caps {
		id := c.td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
		for k := range shape.copies {
			if n := perTrace[copyID(c.name, k, id)]; n != c.td.SpanCount() {
				t.Errorf("%s copy %d: %d spans, want %d", c.name, k, n, c.td.SpanCount())
			}
		}
	}
	for g := range shape.generated.Traces() {
		if n := perTrace[tracegen.TraceID(g)]; n != shape.generated.SpansPerTrace {
			t.Errorf("generated trace %d: %d spans", g, n)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"--configs", "servicegraph"}, {"--configs", "coordbench,coordbench"}, {"--runs", "0"}, {"--copies", "-1"}, {"extra"}} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// TestBenchCollectorQuick runs the command end to end in its quick mode
// against bin/otelcol (`make otelcol`; without it the test skips, under
// CI=true it fails): every configuration processes the whole payload,
// coordbench assesses every trace exactly once; service_graph pairs every
// client/server pair. No figure is asserted.
func TestBenchCollectorQuick(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	root := testenv.ModuleRoot(t)
	otelcol := testenv.NeedTool(t, filepath.Join(root, "bin", "otelcol"), "run `make otelcol`")
	before := runtime.NumGoroutine()
	var out, errOut bytes.Buffer
	args := []string{"--quick", "--otelcol", otelcol, "--captures", filepath.Join(root, "otelmap/assemble/testdata/frameworks")}
	if code := run(t.Context(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{"1       baseline", "1       coordbench", "1       span_metrics", "1       service_graph", "median  coordbench", "coordbench / span_metrics:", "coordbench_metrics / service_graph:", "without the receiver's share"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the output", want)
		}
	}
	testenv.CheckNoGoroutineLeak(t, before)
}
