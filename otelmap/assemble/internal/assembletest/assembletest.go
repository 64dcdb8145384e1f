// Package assembletest holds what the tests of trace assembly and of the
// convention families share: reading a live corpus capture (the committed
// one, or a fresh one under LIVE_CAPTURES), editing copies of spans, and
// reading what an assembly gave. Imported by tests only.
package assembletest

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/tracedata"
)

// LiveDir is the live corpus's folder (otelmap/assemble/testdata/live),
// wherever the test that asks runs.
func LiveDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "live")
}

// LiveCapture is the path of a program's capture file, named as it is
// committed (captures/run-1.otlp.json, captures-unnamed/run-1.otlp.json).
// With LIVE_CAPTURES=DIR it is the fresh one: run.sh -o DIR writes
// DIR/PROGRAM/run-N.otlp.json and DIR/PROGRAM/captures-VARIANT/run-N.otlp.json.
func LiveCapture(program, file string) string {
	if fresh := os.Getenv("LIVE_CAPTURES"); fresh != "" {
		return filepath.Join(fresh, program, strings.TrimPrefix(filepath.ToSlash(file), "captures/"))
	}
	return filepath.Join(LiveDir(), program, file)
}

// LoadLive reads one capture of the live corpus as spans of one trace
// (LiveCapture).
func LoadLive(t testing.TB, program, file string) (trace.TraceID, []otelmap.Span) {
	t.Helper()
	docs, err := otlpdecode.ReadOTLPJSONFile(LiveCapture(program, file))
	if err != nil {
		t.Fatal(err)
	}
	var spans []otelmap.Span
	for _, d := range docs {
		sp, warns := otlpdecode.SpansFromTraces(d, otelmap.SourceOTLP)
		if len(warns) > 0 {
			t.Fatalf("%s/%s: %v", program, file, warns)
		}
		spans = append(spans, sp...)
	}
	if len(spans) == 0 {
		t.Fatalf("%s/%s holds no spans", program, file)
	}
	return spans[0].TraceID, spans
}

// EditAttrs returns a copy of spans in which every span that keep selects
// has its attributes rewritten by edit (the capture itself is not touched).
func EditAttrs(spans []otelmap.Span, keep func(*otelmap.Span) bool, edit func([]attribute.KeyValue) []attribute.KeyValue) []otelmap.Span {
	out := slices.Clone(spans)
	for i := range out {
		if keep(&out[i]) {
			out[i].Attrs = edit(slices.Clone(out[i].Attrs))
		}
	}
	return out
}

// Without drops the attribute key.
func Without(key string) func([]attribute.KeyValue) []attribute.KeyValue {
	return func(attrs []attribute.KeyValue) []attribute.KeyValue {
		return slices.DeleteFunc(attrs, func(kv attribute.KeyValue) bool { return string(kv.Key) == key })
	}
}

// AttrIs selects the spans whose string attribute key is value.
func AttrIs(key, value string) func(*otelmap.Span) bool {
	return func(sp *otelmap.Span) bool {
		v, ok, _ := sp.StringAttr(attribute.Key(key))
		return ok && v == value
	}
}

// AgentNames are the names of the agents that are not virtual.
func AgentNames(td *tracedata.TraceData) []string {
	var names []string
	for _, a := range td.Agents {
		if !a.Virtual {
			names = append(names, a.Name)
		}
	}
	return names
}

// FindInteraction returns the interaction from -> to, nil if none.
func FindInteraction(td *tracedata.TraceData, from, to string) *tracedata.Interaction {
	for i := range td.Interactions {
		if td.Interactions[i].From == from && td.Interactions[i].To == to {
			return &td.Interactions[i]
		}
	}
	return nil
}

// Edges are the interactions as "from->to".
func Edges(td *tracedata.TraceData) []string {
	var out []string
	for _, in := range td.Interactions {
		out = append(out, in.From+"->"+in.To)
	}
	return out
}

// MustJSON encodes td.
func MustJSON(t testing.TB, td *tracedata.TraceData) string {
	t.Helper()
	b, err := json.Marshal(td)
	if err != nil {
		t.Fatalf("encode trace: %v", err)
	}
	return string(b)
}

// HasWarning reports whether a coverage warning contains substr.
func HasWarning(td *tracedata.TraceData, substr string) bool {
	return slices.ContainsFunc(td.Coverage.Warnings, func(w string) bool { return strings.Contains(w, substr) })
}

// AssertPermutationStable assembles shuffles of spans and checks each gives
// the same JSON as the spans in their given order.
func AssertPermutationStable(t testing.TB, id trace.TraceID, spans []otelmap.Span, rounds int) string {
	t.Helper()
	want := MustJSON(t, assemble.Trace(id, spans))
	rng := rand.New(rand.NewPCG(1, 2))
	for r := range rounds {
		perm := slices.Clone(spans)
		if r == 0 {
			slices.Reverse(perm)
		} else {
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
		if got := MustJSON(t, assemble.Trace(id, perm)); got != want {
			t.Fatalf("permutation %d gives another result:\n got %s\nwant %s", r, got, want)
		}
	}
	return want
}

// NSSpans returns a trace id and a maker of its spans, all of one process
// of the service given: span n, under span parent (0 for a root).
func NSSpans(service string) (trace.TraceID, func(n, parent byte, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) otelmap.Span) {
	id := trace.TraceID{0xd0}
	res := &otelmap.Resource{ServiceName: service}
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	return id, func(n, parent byte, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) otelmap.Span {
		sp := otelmap.Span{TraceID: id, SpanID: trace.SpanID{0xd0, n}, Name: name, Kind: kind,
			Start: t0.Add(time.Duration(n) * time.Millisecond), End: t0.Add(time.Second), Attrs: attrs, Resource: res}
		if parent != 0 {
			sp.ParentSpanID = trace.SpanID{0xd0, parent}
		}
		return sp
	}
}
