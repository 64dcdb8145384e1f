package green

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
)

// Attacks on the joining of fragments (joined.go; docs/trace-assembly.md,
// "A trace that begins with a received call"), on Semantic Kernel's
// captures, whose runtime starts a trace per message and links each
// delivery to where the message was created.

const skCaptures = "../otelmap/assemble/testdata/live/semantic-kernel-py/captures/"

// tasksByTrace assesses files together and returns each task's JSON by
// its trace id.
func tasksByTrace(t *testing.T, files ...string) map[string]report.TaskResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := AssessOTLPFiles(ctx, files, OfflineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]report.TaskResult{}
	for _, task := range res.Tasks {
		out[task.TraceID] = task
	}
	return out
}

func taskJSON(t *testing.T, task report.TaskResult) string {
	t.Helper()
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJoinedConversationsStayApart: two runs of the team in one
// assessment are two conversations whose traces must not be joined to
// each other: each task is byte for byte what its run alone gives.
func TestJoinedConversationsStayApart(t *testing.T) {
	one, two := skCaptures+"run-1.otlp.json", skCaptures+"run-2.otlp.json"
	alone := tasksByTrace(t, one)
	maps.Copy(alone, tasksByTrace(t, two))
	both := tasksByTrace(t, one, two)
	if len(both) != len(alone) || len(alone) != 8 {
		t.Fatalf("%d tasks from the two runs together, %d from each alone, want 8", len(both), len(alone))
	}
	for id, task := range both {
		if got, want := taskJSON(t, task), taskJSON(t, alone[id]); got != want {
			t.Errorf("trace %s: together\n%s\nalone\n%s", id, got, want)
		}
	}
}

// TestJoinedCallerLate: the fragments of a run arrive before the traces
// they continue (a second file). Alone they are reported: each says
// coverage.fragment and none is complete. With the traces they continue
// after them, the tasks are byte for byte those of the run read at once.
// (Fragments that continue one another are joined among themselves, and
// the task of each such group begins with a delivery from a trace not
// held.)
func TestJoinedCallerLate(t *testing.T) {
	whole := skCaptures + "run-1.otlp.json"
	want := tasksByTrace(t, whole)
	var joined []string
	for _, task := range want {
		joined = append(joined, task.Coverage.JoinedTraces...)
	}
	if len(joined) != 10 {
		t.Fatalf("%d traces joined to others in %s, want 10", len(joined), whole)
	}
	dir := t.TempDir()
	late := filepath.Join(dir, "callers.otlp.json")
	early := filepath.Join(dir, "fragments.otlp.json")
	splitOTLPJSON(t, whole, joined, early, late)

	fragments := tasksByTrace(t, early)
	traces := 0
	for _, task := range fragments {
		traces += 1 + len(task.Coverage.JoinedTraces) // fragments continuing one another still join
	}
	if traces != 10 || len(fragments) == 10 {
		t.Fatalf("%d traces in %d tasks from the fragments alone, want 10 in fewer", traces, len(fragments))
	}
	for id, task := range fragments {
		g, _ := task.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult)
		if task.Coverage.Fragment == "" || g == nil || g.Evidence == nil || g.Evidence.Level == evals.EvidenceComplete {
			t.Errorf("fragment %s alone: coverage.fragment %q, graph %+v", id, task.Coverage.Fragment, g)
		}
	}
	got := tasksByTrace(t, early, late)
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("tasks %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for id, task := range got {
		if g, w := taskJSON(t, task), taskJSON(t, want[id]); g != w {
			t.Errorf("trace %s: callers late\n%s\nat once\n%s", id, g, w)
		}
	}
}

// splitOTLPJSON writes the spans of the traces ids of an OTLP/JSON file to
// in, the others to out.
func splitOTLPJSON(t *testing.T, path string, ids []string, in, out string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type scope struct {
		Scope json.RawMessage   `json:"scope"`
		Spans []json.RawMessage `json:"spans"`
	}
	type resource struct {
		Resource   json.RawMessage `json:"resource"`
		ScopeSpans []scope         `json:"scopeSpans"`
	}
	var doc struct {
		ResourceSpans []resource `json:"resourceSpans"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	pick := func(want bool) []resource {
		var rs []resource
		for _, r := range doc.ResourceSpans {
			nr := resource{Resource: r.Resource}
			for _, s := range r.ScopeSpans {
				ns := scope{Scope: s.Scope}
				for _, sp := range s.Spans {
					var head struct {
						TraceID string `json:"traceId"`
					}
					if err := json.Unmarshal(sp, &head); err != nil {
						t.Fatal(err)
					}
					if slices.Contains(ids, head.TraceID) == want {
						ns.Spans = append(ns.Spans, sp)
					}
				}
				if len(ns.Spans) > 0 {
					nr.ScopeSpans = append(nr.ScopeSpans, ns)
				}
			}
			if len(nr.ScopeSpans) > 0 {
				rs = append(rs, nr)
			}
		}
		return rs
	}
	for file, want := range map[string]bool{in: true, out: false} {
		b, err := json.Marshal(map[string]any{"resourceSpans": pick(want)})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJoinedForgedLink: a trace whose top delivery links to another trace
// joins it only when the span the link names is held there. A link that
// names the trace but a span it does not hold (forged to merge one team's
// trace into another's, or to a span never exported) joins nothing: the
// linking trace stays a fragment of its own.
func TestJoinedForgedLink(t *testing.T) {
	a, b := trace.TraceID{0xa1}, trace.TraceID{0xb2}
	held := trace.SpanID{0xa1, 1}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res := &otelmap.Resource{ServiceName: "team"}
	spans := map[trace.TraceID][]otelmap.Span{
		a: {{TraceID: a, SpanID: held, Name: "create message", Kind: trace.SpanKindProducer, Start: t0, End: t0.Add(time.Second), Resource: res}},
	}
	delivery := func(to trace.SpanID) []otelmap.Span {
		return []otelmap.Span{{TraceID: b, SpanID: trace.SpanID{0xb2, 1}, Name: "process message", Kind: trace.SpanKindConsumer,
			Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Resource: res,
			Detail: &otelmap.SpanDetail{Links: []otelmap.Link{{TraceID: a, SpanID: to}}}}}
	}
	spansOf := func(id trace.TraceID) []otelmap.Span { return spans[id] }
	ids := []trace.TraceID{a, b}

	spans[b] = delivery(held)
	if g := joinGroups(ids, spansOf); len(g) != 1 || !slices.Equal(g[0], ids) {
		t.Errorf("a link to a span held: groups %v, want [[a b]]", g)
	}
	spans[b] = delivery(trace.SpanID{0xa1, 9})
	if g := joinGroups(ids, spansOf); len(g) != 2 {
		t.Errorf("a link to a span the trace does not hold: groups %v, want two", g)
	}
	td := OfflineOptions{}.assembleJoined([]trace.TraceID{b}, spansOf).td
	if td.Coverage.Fragment == "" || len(td.Coverage.JoinedTraces) != 0 {
		t.Errorf("the forged link's trace: coverage %+v, want a fragment joined to nothing", td.Coverage)
	}
}

// BenchmarkLiveFragments: what green serve pays per task to look for the
// traces that continue its trace (openTrace.fragments), with the store
// holding 1,000 other traces of 20 spans each, none linked to it.
func BenchmarkLiveFragments(b *testing.B) {
	store := tracestore.NewStore(tracestore.Limits{})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res := &otelmap.Resource{ServiceName: "other"}
	for n := range 1000 {
		tid := trace.TraceID{0xbe, byte(n >> 8), byte(n)}
		spans := make([]otelmap.Span, 20)
		for k := range spans {
			spans[k] = otelmap.Span{TraceID: tid, SpanID: trace.SpanID{1, byte(k + 1)}, Name: "work", Kind: trace.SpanKindInternal,
				Start: t0, End: t0.Add(time.Millisecond), Resource: res, Source: otelmap.SourceOTLP}
			if k > 0 {
				spans[k].ParentSpanID = spans[0].SpanID
			}
		}
		store.Add(spans)
	}
	task := []otelmap.Span{{TraceID: trace.TraceID{0x7a}, SpanID: trace.SpanID{0x7a}, Name: "task", Start: t0, End: t0.Add(time.Second), Resource: res}}
	o := &openTrace{tt: &taskTraces{store: store}, id: task[0].TraceID}
	b.ReportAllocs()
	for b.Loop() {
		if ids, _, _ := o.fragments(task); len(ids) != 0 {
			b.Fatal(ids)
		}
	}
}
