package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// Each appender must give encoding/json's bytes, on the named hard cases
// and on fuzzed input.

var stringCases = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"é ü 漢字 🙂", "\u2028 \u2029", "\xff\xfe invalid", "trail \xe2\x82", "\xed\xa0\x80 surrogate",
	"mixed <\xc3\x28> \u2029\x00", string([]byte{0xf4, 0x90, 0x80, 0x80}),
}

func TestStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringCases {
		checkString(t, s)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

func checkString(t *testing.T, s string) {
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := String([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Errorf("String(%q) = %s, encoding/json %s", s, got, want)
	}
}

var floatCases = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 1.0 / 3, 1e-6, 9.999999e-7, 1e-7, 1.5e-9, 1e20, 1e21, 123456789e13,
	-1e21, 1e-300, 5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64, 12.5, 1e6, 2.5e-100,
}

func TestFloat64MatchesEncodingJSON(t *testing.T) {
	for _, f := range floatCases {
		checkFloat(t, f)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, want := json.Marshal(f)
		if _, err := Float64(nil, f); err == nil || want == nil {
			t.Errorf("Float64(%v): error %v, encoding/json's %v", f, err, want)
		}
	}
}

func FuzzFloat64(f *testing.F) {
	for _, v := range floatCases {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		checkFloat(t, v)
	})
}

func checkFloat(t *testing.T, f float64) {
	want, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Float64([]byte("x"), f)
	if err != nil || !bytes.Equal(got[1:], want) {
		t.Errorf("Float64(%v) = %s, %v; encoding/json %s", f, got, err, want)
	}
}

func TestTimeMatchesEncodingJSON(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tm := range []time.Time{
		{}, time.Unix(0, 0).UTC(), time.Unix(1700000000, 123456789).UTC(), time.Unix(1700000000, 120000000).In(east),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(2024, 2, 29, 0, 0, 0, 1, time.FixedZone("w", -8*3600)),
	} {
		want, err := json.Marshal(tm)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Time([]byte("x"), tm)
		if err != nil || !bytes.Equal(got[1:], want) {
			t.Errorf("Time(%v) = %s, %v; encoding/json %s", tm, got, err, want)
		}
	}
	for _, tm := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		_, want := json.Marshal(tm)
		got, err := Time([]byte("x"), tm)
		if err == nil || want == nil || string(got) != "x" {
			t.Errorf("Time(%v) = %s, %v; encoding/json's error %v", tm, got, err, want)
		}
	}
}

func TestValue(t *testing.T) {
	v := map[string]any{"b": 1, "a": []any{"<x>", 2.5}}
	want, _ := json.Marshal(v)
	got, err := Value([]byte("x"), v)
	if err != nil || !bytes.Equal(got[1:], want) {
		t.Errorf("Value = %s, %v; want %s", got, err, want)
	}
	if _, err := Value(nil, map[string]any{"f": math.NaN()}); err == nil {
		t.Error("Value of a NaN: no error")
	}
}

// valueCases are JSON documents whose json.Unmarshal into an any Value
// must encode as json.Marshal does.
var valueCases = []string{
	`null`, `{}`, `[]`, `{"b":1,"a":[null,true,false,"<x>&",2.5e-7,1e21,-0,123456789012345678901]}`,
	`{"nested":{"z":{"y":[[],{}]},"":"empty key","\u00e9":"\ud83d\ude42"},"B":"\u2028"}`,
	`[{"k":"\u0000\u001f"},0.1,-1e-300,1.7976931348623157e308,"\ud800"]`,
}

func TestValueMatchesEncodingJSON(t *testing.T) {
	for _, doc := range valueCases {
		checkValue(t, doc)
	}
	// Typed values outside Unmarshal's set, alone and inside a map: the
	// integers of attributes, and what falls back to json.Marshal.
	for _, v := range []any{
		int64(-7), 42, []string{"<a>"}, []int64{1, 2}, []bool{true}, map[string]int{"b": 1, "a": 2},
		map[string]any{"i": int64(3), "s": []string{"x"}, "n": nil, "f": []float64{0.5}},
		[]any(nil), map[string]any(nil), struct{ A int }{1},
	} {
		want, werr := json.Marshal(v)
		got, err := Value([]byte("x"), v)
		if (err != nil) != (werr != nil) || (err == nil && !bytes.Equal(got[1:], want)) {
			t.Errorf("Value(%#v) = %s, %v; want %s, %v", v, got, err, want, werr)
		}
	}
	for _, v := range []any{math.Inf(1), []any{1.0, math.NaN()}, map[string]any{"a": map[string]any{"b": math.Inf(-1)}}, make(chan int)} {
		got, err := Value([]byte("x"), v)
		if err == nil || string(got) != "x" {
			t.Errorf("Value(%#v) = %q, %v; want an error and dst as it came", v, got, err)
		}
	}
}

func FuzzValue(f *testing.F) {
	for _, doc := range valueCases {
		f.Add(doc)
	}
	f.Fuzz(checkValue)
}

func checkValue(t *testing.T, doc string) {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return
	}
	want, werr := json.Marshal(v)
	got, err := Value(nil, v)
	if werr != nil || err != nil || !bytes.Equal(got, want) {
		t.Errorf("Value of %q = %s, %v; encoding/json %s, %v", doc, got, err, want, werr)
	}
}

// Strings, Slice and Map encode nil as null and empty as [] or {}, and
// order map keys as encoding/json does (bytewise).
func TestContainersMatchEncodingJSON(t *testing.T) {
	for _, s := range [][]string{nil, {}, {"<a>", "\xff"}} {
		want, _ := json.Marshal(s)
		if got := Strings(nil, s); !bytes.Equal(got, want) {
			t.Errorf("Strings(%#v) = %s, want %s", s, got, want)
		}
		got, err := Slice(nil, s, func(b []byte, v *string) ([]byte, error) { return String(b, *v), nil })
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Slice(%#v) = %s, want %s", s, got, want)
		}
	}
	for _, m := range []map[string]float64{nil, {}, {"b": 1, "a": 0.5, "B": 1e-7, "é": 2, "": 3}} {
		want, _ := json.Marshal(m)
		got, err := Map(nil, m, Float64)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Map(%#v) = %s, want %s", m, got, want)
		}
	}
	if _, err := Map(nil, map[string]float64{"x": math.NaN()}, Float64); err == nil {
		t.Error("Map of a NaN: no error")
	}
}
