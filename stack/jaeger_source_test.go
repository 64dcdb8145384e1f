package stack

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/jaegerquery"
)

// `green assess --jaeger` against a real Jaeger v2 (bin/jaeger on
// jaeger-config.yaml): the traces are read where they rest and assessed
// as the same bytes saved to a file are. Two feeds: a real run of the demo
// team (`green demo`, exporting to Jaeger through
// OTEL_EXPORTER_OTLP_ENDPOINT, as docs/jaeger.md shows), and generated
// traces with chosen start times, which make a selection many pages long
// and a burst too dense to split.

// assessResult is the part of coordbench.result/v2 compared here.
type assessResult struct {
	Schema   string            `json:"schema"`
	Domain   string            `json:"domain"`
	Inputs   []string          `json:"inputs"`
	Warnings []string          `json:"warnings"`
	Tasks    []json.RawMessage `json:"tasks"`
}

// traceIDs are the tasks' trace ids, in the result's order.
func (r assessResult) traceIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, raw := range r.Tasks {
		var task struct {
			TraceID string `json:"trace_id"`
		}
		if err := json.Unmarshal(raw, &task); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TraceID)
	}
	return ids
}

// runGreen runs the green binary and returns its exit status, stdout and
// stderr.
func runGreen(t *testing.T, ctx context.Context, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	// A developer's OpenTelemetry settings reach neither the demo's
	// exporters nor the assessor.
	for _, kv := range scrubbedEnv() {
		if !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("green %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// assessWith runs `green assess ARGS` and decodes its result; it must
// succeed.
func assessWith(t *testing.T, ctx context.Context, bin string, args ...string) assessResult {
	t.Helper()
	code, stdout, stderr := runGreen(t, ctx, bin, []string{"AGENTBEATS_LLM_API_KEY="}, append([]string{"assess"}, args...)...)
	if code != 0 {
		t.Fatalf("green assess %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	var res assessResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("green assess %s: %v\n%.500s", strings.Join(args, " "), err, stdout)
	}
	return res
}

// sameTasks fails t unless a and b hold the same tasks, in the same order,
// and as many warnings (whose wording names the source: a file or a URL).
func sameTasks(t *testing.T, what string, a, b assessResult) {
	t.Helper()
	if a.Schema != b.Schema || a.Domain != b.Domain {
		t.Errorf("%s: schema/domain %s/%s and %s/%s", what, a.Schema, a.Domain, b.Schema, b.Domain)
	}
	if len(a.Tasks) != len(b.Tasks) {
		t.Fatalf("%s: %d tasks and %d", what, len(a.Tasks), len(b.Tasks))
	}
	for i := range a.Tasks {
		var x, y any
		if err := json.Unmarshal(a.Tasks[i], &x); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b.Tasks[i], &y); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(x, y) {
			t.Errorf("%s: task %d differs:\n%s\n%s", what, i, a.Tasks[i], b.Tasks[i])
		}
	}
	if len(a.Warnings) != len(b.Warnings) {
		t.Errorf("%s: warnings %q and %q", what, a.Warnings, b.Warnings)
	}
}

// saveGet saves the answer to GET url in dir/name, as `curl -o` would.
func saveGet(t *testing.T, url, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, httpGet(t, url), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestJaegerSourceDemoTeam(t *testing.T) {
	jaegerBin := toolBinary(t, "jaeger", "jaeger-build")
	greenBin := goBuild(t, "green")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	jg := startJaeger(t, jaegerBin)
	dir := t.TempDir()

	// The demo team's run, every span of it exported to Jaeger, as
	// docs/jaeger.md's "Jaeger alone" runs it: `make demo` with
	// OTEL_EXPORTER_OTLP_ENDPOINT. The demo stops its agents (flushing
	// their exporters) before it exits.
	demoOut := filepath.Join(dir, "demo.json")
	code, _, stderr := runGreen(t, ctx, greenBin, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + jg.otlpHTTPURL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"AGENTBEATS_LLM_API_KEY=",
	}, "demo", "--output", demoOut)
	if code != 0 {
		t.Fatalf("green demo: exit %d\n%s", code, stderr)
	}
	raw, err := os.ReadFile(demoOut)
	if err != nil {
		t.Fatal(err)
	}
	var demo assessResult
	if err := json.Unmarshal(raw, &demo); err != nil {
		t.Fatal(err)
	}
	ids := demo.traceIDs(t)
	if len(ids) != loopback.DemoTasks {
		t.Fatalf("the demo assessed %d tasks, want %d", len(ids), loopback.DemoTasks)
	}
	for _, id := range ids {
		waitJaegerTrace(t, jg, id, func(tr jaegerTrace) error {
			counts := tr.spansByService()
			for _, s := range []string{green.DefaultServiceName, loopback.DemoCoordinator, loopback.DemoReviewer1} {
				if counts[s] == 0 {
					return fmt.Errorf("no span of %s yet (%v): %w", s, counts, errNotYet)
				}
			}
			if !slices.ContainsFunc(tr.Spans, func(sp jaegerSpan) bool { return strings.HasPrefix(sp.OperationName, otelmap.SpanEvaluatorPrefix) }) {
				return fmt.Errorf("no evaluator span yet: %w", errNotYet)
			}
			return nil
		})
	}
	slices.Sort(ids)

	// By trace id: the same as Jaeger's answers for those ids saved to files.
	var files []string
	byID := []string{"--jaeger", jg.queryURL, "--workers", "2"}
	for i, id := range ids {
		files = append(files, saveGet(t, jg.queryURL+"/api/v3/traces/"+id, dir, "trace-"+strconv.Itoa(i)+".json"))
		byID = append(byID, "--trace-id", id)
	}
	fromJaeger := assessWith(t, ctx, greenBin, byID...)
	fromFiles := assessWith(t, ctx, greenBin, files...)
	sameTasks(t, "by trace id", fromJaeger, fromFiles)
	if got := fromJaeger.traceIDs(t); !slices.Equal(got, ids) {
		t.Errorf("by trace id: tasks of traces %v, want %v", got, ids)
	}
	t.Logf("by trace id: %d tasks, equal to the files'; inputs %v", len(fromJaeger.Tasks), fromJaeger.Inputs)

	// By service and time, in pages of two traces (so the three traces of
	// the coordinator take more than one request): the same as Jaeger's
	// answer to the whole search in one request, saved to a file.
	start := time.Now().Add(-time.Hour).UTC()
	end := time.Now().Add(time.Minute).UTC()
	search := assessWith(t, ctx, greenBin, "--jaeger", jg.queryURL, "--service", loopback.DemoCoordinator,
		"--start", start.Format(time.RFC3339Nano), "--end", end.Format(time.RFC3339Nano), "--page-size", "2")
	client, err := jaegerquery.New(jg.queryURL, jaegerquery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	whole := client.FindURL(jaegerquery.Query{Service: loopback.DemoCoordinator, Start: start, End: end, NumTraces: 100})
	searchFile := assessWith(t, ctx, greenBin, saveGet(t, whole, dir, "search.json"))
	sameTasks(t, "by service", search, searchFile)
	if got := search.traceIDs(t); !slices.Equal(got, ids) {
		t.Errorf("by service: tasks of traces %v, want the demo's %v", got, ids)
	}
	if len(search.Warnings) != 0 {
		t.Errorf("by service: warnings %q", search.Warnings)
	}

	// The green agent's service has the task traces and the assessment's
	// own trace: a limit of two stops the search and says so.
	limited := assessWith(t, ctx, greenBin, "--jaeger", jg.queryURL, "--service", green.DefaultServiceName, "--since", "1h", "--limit", "2", "--page-size", "3")
	if len(limited.Tasks) != 2 || !slices.ContainsFunc(limited.Warnings, func(w string) bool { return strings.Contains(w, "limit of 2 traces was reached") }) {
		t.Errorf("--limit 2: %d tasks, warnings %q", len(limited.Tasks), limited.Warnings)
	}

	// Jaeger's own refusals, as the user sees them.
	missing := "0af7651916cd43dd8448eb211c80319c"
	code, _, stderr = runGreen(t, ctx, greenBin, nil, "assess", "--jaeger", jg.queryURL, "--trace-id", ids[0], "--trace-id", missing)
	if msg := errorLine(stderr); code != 2 || !strings.Contains(msg, "not found") || !strings.Contains(msg, missing) || strings.Contains(msg, ids[0]) {
		t.Errorf("a missing trace: exit %d, error %q; want 2 naming only %s", code, msg, missing)
	}
	code, _, stderr = runGreen(t, ctx, greenBin, nil, "assess", "--jaeger", jg.queryURL, "--service", "no-such-service")
	if code != 2 || !strings.Contains(stderr, `no trace of service "no-such-service"`) {
		t.Errorf("an empty search: exit %d, stderr %q", code, stderr)
	}
	// A wrong base path is no answer about the trace: status 1, not "not
	// found".
	code, _, stderr = runGreen(t, ctx, greenBin, nil, "assess", "--jaeger", jg.queryURL+"/no-such-base", "--trace-id", ids[0])
	if code != 1 || !strings.Contains(errorLine(stderr), "base path") {
		t.Errorf("a wrong base path: exit %d, error %q; want 1", code, errorLine(stderr))
	}
	t.Logf("a wrong base path: %s", errorLine(stderr))
	// startJaeger keeps 1000 traces; Jaeger refuses a larger page.
	code, _, stderr = runGreen(t, ctx, greenBin, nil, "assess", "--jaeger", jg.queryURL, "--service", loopback.DemoCoordinator, "--page-size", "5000")
	if code != 1 || !strings.Contains(stderr, "max traces") {
		t.Errorf("a page over max_traces: exit %d, stderr %q; want 1 and Jaeger's message", code, stderr)
	}
}

// errorLine is the CLI's error message among its log lines.
func errorLine(stderr string) string {
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "green assess: ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// genTrace is a generated two-service trace: a CLIENT span of caller and
// the SERVER span of callee under it, starting at start, and extra
// INTERNAL spans of callee's work under that.
func genTrace(td ptrace.Traces, n int, caller, callee string, start time.Time, extra int) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], 0xc0de)
	binary.BigEndian.PutUint64(id[8:], uint64(n))
	span := func(service string, kind ptrace.SpanKind, sid, parent uint64, at time.Time, d time.Duration) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("coordbench/stack-test")
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(id)
		var b pcommon.SpanID
		binary.BigEndian.PutUint64(b[:], sid)
		sp.SetSpanID(b)
		if parent != 0 {
			var p pcommon.SpanID
			binary.BigEndian.PutUint64(p[:], parent)
			sp.SetParentSpanID(p)
		}
		sp.SetName("POST /work")
		sp.SetKind(kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(d)))
		sp.Attributes().PutStr("http.request.method", "POST")
		if kind == ptrace.SpanKindClient {
			sp.Attributes().PutStr("server.address", callee)
		}
	}
	base := uint64(n)*1024 + 1
	span(caller, ptrace.SpanKindClient, base, 0, start, time.Duration(40+n%7)*time.Millisecond)
	span(callee, ptrace.SpanKindServer, base+1, base, start.Add(time.Millisecond), time.Duration(30+n%5)*time.Millisecond)
	for i := range min(extra, 1000) {
		span(callee, ptrace.SpanKindInternal, base+2+uint64(i), base+1, start.Add(2*time.Millisecond), time.Millisecond)
	}
	return id
}

// waitTraces waits until Jaeger's answer to q holds n traces: what was
// sent is stored.
func waitTraces(t *testing.T, jg *jaeger, client *jaegerquery.Client, q jaegerquery.Query, n int) {
	t.Helper()
	waitFor(t, "generated traces in Jaeger", 120*time.Second, jg.proc, func(ctx context.Context) error {
		found, err := client.Find(ctx, q)
		if err != nil {
			return err
		}
		if len(found.TraceIDs) != n {
			return fmt.Errorf("%d of %d traces: %w", len(found.TraceIDs), n, errNotYet)
		}
		return nil
	})
}

// sendOTLP posts td to Jaeger's OTLP/HTTP receiver as protobuf.
func sendOTLP(t *testing.T, jg *jaeger, td ptrace.Traces) {
	t.Helper()
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(jg.otlpHTTPURL+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("OTLP export to Jaeger: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("OTLP export to Jaeger: %s", resp.Status)
	}
}

func TestJaegerSourcePagesLargeSelection(t *testing.T) {
	jaegerBin := toolBinary(t, "jaeger", "jaeger-build")
	greenBin := goBuild(t, "green")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	jg := startJaeger(t, jaegerBin)
	dir := t.TempDir()

	// 60 traces of gen-caller over an hour, one every minute, and a burst
	// of 5 traces of burst-caller all starting at the same instant.
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Second).UTC()
	const spread, burst = 60, 5
	td := ptrace.NewTraces()
	var want []string
	for i := range spread {
		want = append(want, genTrace(td, i, "gen-caller", "gen-callee", t0.Add(time.Duration(i)*time.Minute), 0).String())
	}
	burstAt := t0.Add(30*time.Minute + 500*time.Microsecond)
	for i := range burst {
		genTrace(td, 1000+i, "burst-caller", "gen-callee", burstAt, 0)
	}
	sendOTLP(t, jg, td)
	slices.Sort(want)

	client, err := jaegerquery.New(jg.queryURL, jaegerquery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start, end := t0.Add(-time.Minute), t0.Add(61*time.Minute)
	whole := jaegerquery.Query{Service: "gen-caller", Start: start, End: end, NumTraces: 1000}
	waitTraces(t, jg, client, whole, spread)

	// Pages of 7: the hour is halved until each window holds fewer than 7
	// traces, and every trace is assessed once.
	timeArgs := []string{"--start", start.Format(time.RFC3339Nano), "--end", end.Format(time.RFC3339Nano)}
	paged := assessWith(t, ctx, greenBin, append([]string{"--jaeger", jg.queryURL, "--service", "gen-caller", "--page-size", "7", "--limit", "1000", "--workers", "3"}, timeArgs...)...)
	if got := paged.traceIDs(t); !slices.Equal(got, want) {
		t.Fatalf("paged search: %d tasks of traces %v, want the %d generated", len(got), got, len(want))
	}
	if len(paged.Warnings) != 0 {
		t.Errorf("paged search: warnings %q", paged.Warnings)
	}
	oneAnswer := assessWith(t, ctx, greenBin, saveGet(t, client.FindURL(whole), dir, "whole.json"))
	sameTasks(t, "paged search and one answer", paged, oneAnswer)

	// The same through the library, counting requests: more than one page,
	// every trace once.
	s, err := client.NewSearch(whole, 7, 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for page, err := range s.Pages(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if len(page.TraceIDs) >= 7 {
			t.Errorf("page %s: %d new traces, a full page should have been split", page.Window, len(page.TraceIDs))
		}
		for _, id := range page.TraceIDs {
			seen[id.String()]++
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("trace %s yielded %d times", id, seen[id])
		}
	}
	t.Logf("%d traces in pages of 7: %d requests", len(seen), s.Requests)
	if s.LimitReached || len(s.Saturated) != 0 {
		t.Errorf("limit reached %v, saturated %v", s.LimitReached, s.Saturated)
	}

	// A limit smaller than the selection: that many tasks, and a warning.
	limited := assessWith(t, ctx, greenBin, append([]string{"--jaeger", jg.queryURL, "--service", "gen-caller", "--page-size", "7", "--limit", "10"}, timeArgs...)...)
	if got := limited.traceIDs(t); len(got) != 10 || !isSubset(got, want) {
		t.Errorf("--limit 10: tasks of %v", got)
	}
	if len(limited.Warnings) != 1 || !strings.Contains(limited.Warnings[0], "limit of 10 traces was reached") {
		t.Errorf("--limit 10: warnings %q", limited.Warnings)
	}

	// Five traces starting in the same microsecond cannot be split into
	// pages of three: three are read, and the result says the rest were not.
	dense := assessWith(t, ctx, greenBin, append([]string{"--jaeger", jg.queryURL, "--service", "burst-caller", "--page-size", "3"}, timeArgs...)...)
	if len(dense.Tasks) != 3 || len(dense.Warnings) != 1 || !strings.Contains(dense.Warnings[0], "too narrow to split") {
		t.Errorf("a burst over the page size: %d tasks, warnings %q", len(dense.Tasks), dense.Warnings)
	}
	all := assessWith(t, ctx, greenBin, append([]string{"--jaeger", jg.queryURL, "--service", "burst-caller", "--page-size", "6"}, timeArgs...)...)
	if len(all.Tasks) != burst || len(all.Warnings) != 0 {
		t.Errorf("the burst in pages of 6: %d tasks, warnings %q", len(all.Tasks), all.Warnings)
	}
}

func isSubset(sub, of []string) bool {
	for _, s := range sub {
		if !slices.Contains(of, s) {
			return false
		}
	}
	return true
}

// gcHeap reads a gctrace line's heap sizes: at start -> at end -> live.
var gcHeap = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB`)

// searchRequests reads green assess's log line at the end of a search.
var searchRequests = regexp.MustCompile(`jaeger: search done.* requests=(\d+)`)

var measureJaeger = flag.Bool("jaeger.measure", false, "run TestJaegerSourceMemory, a measurement (docs/performance.md)")

// TestJaegerSourceMemory measures what paging buys: the same 1000 traces
// (startJaeger keeps 1000) of 40 spans each, assessed from Jaeger in pages
// of 20 and in one answer, and from that answer saved to a file; each a
// fresh green process, its CPU time from the kernel and its peak Go heap
// from the runtime's own GC trace (GODEBUG=gctrace=1: the heap at each
// collection's start and end). Not its peak RSS: a child's ru_maxrss on
// Linux starts from its parent's at fork, here the test's own. A
// measurement, not a check: it runs only with -jaeger.measure, and logs
// the numbers docs/performance.md reports.
func TestJaegerSourceMemory(t *testing.T) {
	if !*measureJaeger {
		t.Skip("a measurement: run with -jaeger.measure")
	}
	jaegerBin := toolBinary(t, "jaeger", "jaeger-build")
	greenBin := goBuild(t, "green")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	jg := startJaeger(t, jaegerBin)
	const traces, extra = 1000, 38
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Second).UTC()
	for batch := range traces / 100 {
		td := ptrace.NewTraces()
		for i := range 100 {
			n := batch*100 + i
			genTrace(td, n, "mem-caller", "mem-callee", t0.Add(time.Duration(n)*time.Second), extra)
		}
		sendOTLP(t, jg, td)
	}
	client, err := jaegerquery.New(jg.queryURL, jaegerquery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start, end := t0.Add(-time.Minute), t0.Add(time.Hour)
	whole := jaegerquery.Query{Service: "mem-caller", Start: start, End: end, NumTraces: traces}
	waitTraces(t, jg, client, whole, traces)
	file := saveGet(t, client.FindURL(whole), t.TempDir(), "whole.json")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d traces of %d spans; one answer: %.1f MiB of OTLP JSON", traces, extra+2, float64(fi.Size())/(1<<20))
	timeArgs := []string{"--start", start.Format(time.RFC3339Nano), "--end", end.Format(time.RFC3339Nano)}
	config := []string{"--config", `{"evaluators": {"judge": false}}`}
	runs := []struct {
		name string
		args []string
	}{
		{"jaeger, pages of 20", append([]string{"--jaeger", jg.queryURL, "--service", "mem-caller", "--page-size", "20", "--limit", "1000"}, timeArgs...)},
		{"jaeger, pages of 100", append([]string{"--jaeger", jg.queryURL, "--service", "mem-caller", "--page-size", "100", "--limit", "1000"}, timeArgs...)},
		{"jaeger, one page of 1000", append([]string{"--jaeger", jg.queryURL, "--service", "mem-caller", "--page-size", "1000", "--limit", "1000"}, timeArgs...)},
		{"file, the same answer", []string{file}},
	}
	for round := range 2 {
		for _, r := range runs {
			cmd := exec.CommandContext(ctx, greenBin, append(append([]string{"assess"}, config...), r.args...)...)
			cmd.Env = append(os.Environ(), "AGENTBEATS_LLM_API_KEY=", "GODEBUG=gctrace=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			began := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", r.name, err, stderr.String())
			}
			wall := time.Since(began)
			peak, gcs := 0, 0
			for _, m := range gcHeap.FindAllStringSubmatch(stderr.String(), -1) {
				gcs++
				for _, v := range m[1:3] {
					n, _ := strconv.Atoi(v)
					peak = max(peak, n)
				}
			}
			requests := "-"
			if m := searchRequests.FindStringSubmatch(stderr.String()); m != nil {
				requests = m[1]
			}
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			t.Logf("round %d, %-26s peak heap %4d MB (%3d GCs), CPU %5.2fs, wall %5.2fs, %s requests, result %.1f MiB", round+1, r.name+":",
				peak, gcs, cpu.Seconds(), wall.Seconds(), requests, float64(stdout.Len())/(1<<20))
		}
	}
}
