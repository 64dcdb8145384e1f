package recognize

import (
	"math"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// TestErrorTypes: an exception event's type and the name its message
// starts with are read, with a dotted name's last part; a value that is
// no string is read as OpenTelemetry writes it as text, so a float slice
// holding NaN names no error (the deprecated Emit wrote it "invalid: ...",
// read as the error "invalid").
func TestErrorTypes(t *testing.T) {
	event := func(attrs ...attribute.KeyValue) *otelmap.Span {
		return &otelmap.Span{Detail: &otelmap.SpanDetail{Events: []otelmap.Event{{Name: "exception", Attrs: attrs}}}}
	}
	cases := []struct {
		sp   *otelmap.Span
		want []string
	}{
		{event(attribute.String("exception.type", "openai.RateLimitError")), []string{"openai.RateLimitError", "RateLimitError"}},
		{event(attribute.String("exception.message", "ValueError: bad input")), []string{"ValueError"}},
		{event(attribute.Float64Slice("exception.type", []float64{math.NaN()})), nil},
		{event(attribute.Float64Slice("exception.message", []float64{math.Inf(1)})), nil},
		{&otelmap.Span{StatusMessage: "\n\nTypeError\n    at f (a.js:1:1)"}, []string{"TypeError"}},
	}
	for i, c := range cases {
		if got := ErrorTypes(c.sp); !slices.Equal(got, c.want) {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
}
