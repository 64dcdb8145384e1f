package convmap

import (
	"math"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// TestValueAsText: a rule's value expression and a name read from an
// attribute see a value that is not a string as OpenTelemetry writes it
// for protocols other than OTLP (docs/trace-assembly.md, "The format"):
// JSON literals and arrays, NaN and infinities by name.
func TestValueAsText(t *testing.T) {
	m, err := Parse([]byte(`
name: texts
rules:
  - match: {attribute: fw.flags, value: '^\[true,false\]$'}
    is: agent
    agent: {attribute: fw.id}
  - match: {attribute: fw.score, value: '^Infinity$'}
    is: tool
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		attrs []attribute.KeyValue
		rule  int // -1: none
		name  string
	}{
		{[]attribute.KeyValue{attribute.BoolSlice("fw.flags", []bool{true, false}), attribute.Int64Slice("fw.id", []int64{1, 2})}, 0, "[1,2]"},
		{[]attribute.KeyValue{attribute.BoolSlice("fw.flags", []bool{true, false}), attribute.Bool("fw.id", true)}, 0, "true"},
		{[]attribute.KeyValue{attribute.Float64("fw.score", math.Inf(1))}, 1, ""},
		{[]attribute.KeyValue{attribute.Float64("fw.score", 1)}, -1, ""},
		{[]attribute.KeyValue{attribute.String("fw.flags", "[true false]")}, -1, ""},
	}
	for i, c := range cases {
		sp := &otelmap.Span{Name: "s", Attrs: c.attrs}
		r := m.Match(sp)
		got := -1
		for k := range m.rules {
			if r == &m.rules[k] {
				got = k
			}
		}
		if got != c.rule {
			t.Errorf("case %d: rule %d, want %d", i, got, c.rule)
			continue
		}
		if r != nil && r.Agent.Read(sp) != c.name {
			t.Errorf("case %d: name %q, want %q", i, r.Agent.Read(sp), c.name)
		}
	}
}
