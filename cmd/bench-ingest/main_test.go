package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/internal/testenv"
)

// TestPayload: the payload is the same bytes every time, decodes as OTLP
// protobuf, and holds the spans and traces its shape says, each trace
// whole, its spans spread over several requests.
func TestPayload(t *testing.T) {
	shape := payloadShape{requests: 6, spansPerRequest: 70, spansPerTrace: 40, openTraces: 4}
	p, err := generate(shape)
	if err != nil {
		t.Fatal(err)
	}
	again, err := generate(shape)
	if err != nil {
		t.Fatal(err)
	}
	if p.sha256 != again.sha256 {
		t.Errorf("two payloads of one shape differ: %s, %s", p.sha256, again.sha256)
	}
	perTrace := map[pcommon.TraceID]int{}
	requestsOf := map[pcommon.TraceID]map[int]bool{}
	spanIDs := map[pcommon.SpanID]bool{}
	for r, body := range p.bodies {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			t.Fatalf("request %d: %v", r, err)
		}
		td := req.Traces()
		if n := td.SpanCount(); n != shape.spansPerRequest {
			t.Errorf("request %d: %d spans", r, n)
		}
		for _, rs := range td.ResourceSpans().All() {
			if _, ok := rs.Resource().Attributes().Get("service.name"); !ok {
				t.Errorf("request %d: a resource without service.name", r)
			}
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					perTrace[s.TraceID()]++
					if requestsOf[s.TraceID()] == nil {
						requestsOf[s.TraceID()] = map[int]bool{}
					}
					requestsOf[s.TraceID()][r] = true
					if spanIDs[s.SpanID()] {
						t.Errorf("span ID %s twice", s.SpanID())
					}
					spanIDs[s.SpanID()] = true
				}
			}
		}
	}
	if len(perTrace) != shape.traces() {
		t.Errorf("%d traces, want %d", len(perTrace), shape.traces())
	}
	spread := 0
	for id, n := range perTrace {
		if n > shape.spansPerTrace {
			t.Errorf("trace %s: %d spans", id, n)
		}
		if len(requestsOf[id]) > 1 {
			spread++
		}
	}
	if spread == 0 {
		t.Error("no trace spans more than one request")
	}
	if n := perTrace[traceID(0)]; n != shape.spansPerTrace {
		t.Errorf("the first trace has %d spans, want %d (Jaeger's check reads it)", n, shape.spansPerTrace)
	}
}

// TestFlagsRefuseWhatGreenCannotHold: a payload of more traces than green
// holds is a usage error, not a benchmark of its rejections.
func TestFlagsRefuseWhatGreenCannotHold(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"--spans-per-trace", "10", "--jaeger", "none"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "traces") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestBenchIngestQuick runs the command end to end in its quick mode:
// green built from this tree, and Jaeger from bin/jaeger when `make
// jaeger-build` made it (CI does; elsewhere that part skips).
func TestBenchIngestQuick(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	root := testenv.ModuleRoot(t)
	green := filepath.Join(t.TempDir(), "green")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", green, "./cmd/green")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/green: %v\n%s", err, out)
	}
	t.Run("green", func(t *testing.T) {
		before := runtime.NumGoroutine()
		out := benchQuick(t, "--green", green, "--jaeger", "none")
		for _, want := range []string{"10,000 spans in 20", "1       green", "median  green"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
		if strings.Contains(out, "jaeger") {
			t.Errorf("jaeger ran:\n%s", out)
		}
		testenv.CheckNoGoroutineLeak(t, before)
	})
	t.Run("jaeger", func(t *testing.T) {
		jaeger := testenv.NeedFile(t, filepath.Join(root, "bin", "jaeger"))
		out := benchQuick(t, "--green", green, "--jaeger", jaeger, "--jaeger-config", testenv.RepoFile(t, "jaeger-config.yaml"))
		for _, want := range []string{"1       jaeger", "median  jaeger", "ratio   green/jaeger"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})
}

func benchQuick(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(t.Context(), append([]string{"--quick"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	t.Logf("\n%s", out.String())
	return out.String()
}
