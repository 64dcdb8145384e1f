package otelmap_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// TestPackedAttrRoundTrip: every attribute type, under keys and with
// string values on both sides of the one-byte length (127, 128 bytes) and
// empty, appended after bytes already written (so into a slice with and
// without room), reads back equal, whole attributes and values alone, and
// each read takes exactly the bytes its append wrote.
func TestPackedAttrRoundTrip(t *testing.T) {
	var keys []string
	for _, n := range []int{0, 1, 127, 128, 300} {
		keys = append(keys, strings.Repeat("k", n))
	}
	values := []attribute.Value{
		attribute.BoolValue(true), attribute.BoolValue(false),
		attribute.Int64Value(0), attribute.Int64Value(-1 << 62), attribute.Int64Value(1<<63 - 1),
		attribute.Float64Value(-0.5), attribute.Float64Value(1e300),
		attribute.StringValue(""), attribute.StringValue("v"),
		attribute.StringValue(strings.Repeat("s", 127)), attribute.StringValue(strings.Repeat("s", 128)),
		attribute.BoolSliceValue([]bool{true, false}), attribute.Int64SliceValue([]int64{-3, 0, 1 << 40}),
		attribute.Float64SliceValue([]float64{0.25, -8}), attribute.StringSliceValue([]string{"", "a", strings.Repeat("x", 200)}),
		attribute.StringSliceValue(nil),
	}
	for _, key := range keys {
		for _, v := range values {
			kv := attribute.KeyValue{Key: attribute.Key(key), Value: v}
			for _, prefix := range [][]byte{nil, []byte("xyz"), make([]byte, 5, 6)} {
				b := otelmap.AppendPackedAttr(append([]byte(nil), prefix...), kv)
				b = append(b, 0xee) // what follows must not be read
				got, n := otelmap.ReadPackedAttr(b[len(prefix):])
				if got != kv && !(got.Key == kv.Key && got.Value.String() == kv.Value.String() && got.Value.Type() == kv.Value.Type()) {
					t.Fatalf("key of %d bytes, %s %q: read back as %s %q", len(key), v.Type(), v.String(), got.Value.Type(), got.Value.String())
				}
				if n != len(b)-len(prefix)-1 {
					t.Fatalf("key of %d bytes, %s: read %d bytes of %d", len(key), v.Type(), n, len(b)-len(prefix)-1)
				}
				vb := otelmap.AppendPackedValue(append([]byte(nil), prefix...), v)
				gotV, n := otelmap.ReadPackedValue(attribute.Key(key), vb[len(prefix):])
				if gotV.Value.Type() != v.Type() || gotV.Value.String() != v.String() || n != len(vb)-len(prefix) {
					t.Fatalf("value %s %q alone: read back as %s %q, %d bytes of %d", v.Type(), v.String(), gotV.Value.Type(), gotV.Value.String(), n, len(vb)-len(prefix))
				}
			}
		}
	}
}
