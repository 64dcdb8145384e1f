package evals

import (
	"encoding/json"
	"math"
	"testing"
)

// A Scalar that holds a number encodes as encoding/json encodes the
// float64 (Scalar.MarshalJSON formats it without a second Marshal).
func TestScalarEncodesAsFloat64(t *testing.T) {
	for _, f := range []float64{0, 1, -2.5, 1.0 / 3, 1e-6, 9.99e-7, 1e-9, 1e20, 1e21, 5e-324, math.MaxFloat64, math.Copysign(0, -1)} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(Scalar{On: true, Value: f})
		if err != nil || string(got) != string(want) {
			t.Errorf("Scalar %v encodes as %s (%v), float64 as %s", f, got, err, want)
		}
	}
	for _, s := range []Scalar{{On: true, Null: true, Value: 3}, {On: true, Value: math.NaN()}, {On: true, Value: math.Inf(-1)}} {
		if got, err := json.Marshal(s); err != nil || string(got) != "null" {
			t.Errorf("%+v encodes as %s (%v), want null", s, got, err)
		}
	}
}
