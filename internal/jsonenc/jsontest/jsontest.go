// Package jsontest is for the tests of hand-written JSON encoders: it
// fills values of any type, every field, by reflection, and compares an
// encoder's bytes with encoding/json's. A field added to a type and not
// to its encoder then fails the test that fills the type.
package jsontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"time"
)

// Hostile are strings that need escaping, or HTML-escaping, or are not
// UTF-8.
var Hostile = []string{
	"plain", `"quoted" \back\`, "<b>&amp;</b>", "line\nbreak\ttab\r\b\f\x00\x1f", "\u2028\u2029",
	"\xff\xfeinvalid", "naïve 漢字 🙂", "trail\xe2\x82", "",
}

// Filler sets values at random, every field of a struct, recursively.
type Filler struct {
	R *rand.Rand
	// Interface, when set, gives a value for an interface type other
	// than any (ok false: leave it nil).
	Interface func(t reflect.Type, r *rand.Rand) (v reflect.Value, ok bool)
}

// Fill sets v (settable) to a random value; pointers, slices and maps
// are mostly non-nil, strings mostly non-empty, numbers of every scale.
func (f Filler) Fill(v reflect.Value) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		zones := []*time.Location{time.UTC, time.FixedZone("e", 5*3600+1800), time.FixedZone("w", -7*3600)}
		v.Set(reflect.ValueOf(time.Unix(f.R.Int64N(4e9), f.R.Int64N(1e9)).In(zones[f.R.IntN(len(zones))])))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(Hostile[f.R.IntN(len(Hostile)-1)] + Hostile[f.R.IntN(len(Hostile))])
	case reflect.Bool:
		v.SetBool(f.R.IntN(4) > 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		ints := []int64{1, -1, 7, 1 << 40, -(1 << 39), math.MaxInt32}
		v.SetInt(ints[f.R.IntN(len(ints))])
	case reflect.Float64:
		floats := []float64{0.1, 1e-7, 1.5e21, -3.25, 812.5, 1e6, 5e-324, math.MaxFloat64, 1.0 / 3, 0}
		v.SetFloat(floats[f.R.IntN(len(floats))])
	case reflect.Slice:
		if f.R.IntN(8) == 0 {
			return // nil
		}
		n := f.R.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.Fill(s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.Fill(v.Index(i))
		}
	case reflect.Map:
		if f.R.IntN(8) == 0 {
			return // nil
		}
		m := reflect.MakeMap(v.Type())
		for range f.R.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			f.Fill(k)
			e := reflect.New(v.Type().Elem()).Elem()
			f.Fill(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if f.R.IntN(6) == 0 {
			return // nil
		}
		p := reflect.New(v.Type().Elem())
		f.Fill(p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.Fill(v.Field(i))
			}
		}
	case reflect.Interface:
		if v.Type() == reflect.TypeFor[any]() {
			values := []any{"<s>", 2.5, int64(-3), true, nil, []any{"a", 1.0}, map[string]any{"z": 1, "a": "\u2028"}}
			if x := values[f.R.IntN(len(values))]; x != nil {
				v.Set(reflect.ValueOf(x))
			}
			return
		}
		if f.Interface != nil {
			if x, ok := f.Interface(v.Type(), f.R); ok {
				v.Set(x)
			}
		}
	default:
		panic("jsontest: no case for " + v.Type().String())
	}
}

// Equal reports whether enc's bytes for v are encoding/json's (and an
// error where encoding/json has one), with a description when not.
// enc must append to the prefix it is given.
func Equal(v any, enc func([]byte) ([]byte, error)) (string, bool) {
	want, wantErr := json.Marshal(v)
	got, err := enc([]byte("prefix"))
	switch {
	case (err != nil) != (wantErr != nil):
		return fmt.Sprintf("error %v, encoding/json's %v", err, wantErr), false
	case err != nil:
		return "", true
	case !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want):
		return fmt.Sprintf("differs from encoding/json\n got: %s\nwant: %s", got, want), false
	}
	return "", true
}

// EveryFieldZero calls check with v as filled, then with each of the
// struct v points to's fields set to its zero value in turn (omitempty
// and omitzero).
func EveryFieldZero(v any, check func()) {
	check()
	s := reflect.ValueOf(v).Elem()
	for i := range s.NumField() {
		if !s.Type().Field(i).IsExported() {
			continue
		}
		saved := reflect.New(s.Field(i).Type()).Elem()
		saved.Set(s.Field(i))
		s.Field(i).SetZero()
		check()
		s.Field(i).Set(saved)
	}
}
