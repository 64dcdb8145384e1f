package evals

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/coordbench/coordbench/internal/jsonenc/jsontest"
)

// The rule: each built-in result's AppendJSON gives json.Marshal's bytes
// and fails where it fails. Attacked with results filled field by field
// by reflection (nil and empty maps and slices, nil pointers, scalars off,
// on and null, hostile strings, extreme floats), each field then left zero
// in turn, and with the non-finite numbers encoding/json refuses.

type appender interface {
	Result
	AppendJSON([]byte) ([]byte, error)
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	f := jsontest.Filler{R: rand.New(rand.NewPCG(3, 4))}
	for _, newResult := range []func() appender{
		func() appender { return new(GraphResult) },
		func() appender { return new(LatencyResult) },
		func() appender { return new(TextResult) },
	} {
		for range 300 {
			r := newResult()
			f.Fill(reflect.ValueOf(r).Elem())
			jsontest.EveryFieldZero(r, func() {
				if msg, ok := jsontest.Equal(r, r.AppendJSON); !ok {
					t.Fatalf("%T: %s", r, msg)
				}
			})
		}
	}
	for _, r := range []appender{(*GraphResult)(nil), (*LatencyResult)(nil), (*TextResult)(nil), &GraphResult{}, &LatencyResult{}, &TextResult{}} {
		if msg, ok := jsontest.Equal(r, r.AppendJSON); !ok {
			t.Errorf("%T %v: %s", r, r, msg)
		}
	}
}

func TestAppendJSONRefusesNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, r := range []appender{
		&GraphResult{Nodes: []GraphNode{{Name: "a", InteractionShare: nan}}},
		&GraphResult{Findings: []GraphFinding{{Value: &inf}}},
		&GraphResult{Metrics: GraphMetrics{PageRank: map[string]*float64{"a": &nan}}},
		&LatencyResult{Overall: &LatencyStats{P95MS: inf}},
		&LatencyResult{Agents: map[string]AgentLatency{"a": {ByCallType: map[string]LatencyStats{"AGENT": {MaxMS: nan}}}}},
		&LatencyResult{CriticalPath: &CriticalPath{Steps: []CriticalStep{{SelfMS: -inf}}}},
		&TextResult{Agents: map[string]TextAgent{"a": {Redundancy: &nan}}},
		&TextResult{Pairs: []TextPair{{Similarity: inf}}},
	} {
		msg, ok := jsontest.Equal(r, r.AppendJSON)
		if !ok {
			t.Errorf("%T: %s", r, msg)
		}
		if _, err := r.AppendJSON(nil); err == nil {
			t.Errorf("%T %+v: no error", r, r)
		}
	}
	// A non-finite scalar is null, not an error, in both.
	r := &GraphResult{Metrics: GraphMetrics{Density: Scalar{On: true, Value: nan}}}
	if msg, ok := jsontest.Equal(r, r.AppendJSON); !ok {
		t.Error(msg)
	}
}
