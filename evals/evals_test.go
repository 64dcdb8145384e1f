package evals

import (
	"slices"
	"testing"
)

// The standard registry runs graph, judge, latency, text: the judge sees
// the graph's result, and the text evaluator everything before it.
func TestNewRegistryOrder(t *testing.T) {
	reg := NewRegistry(Options{})
	if got := reg.Names(); !slices.Equal(got, []string{GraphEvaluatorName, JudgeName, "latency", "text"}) {
		t.Errorf("run order %v", got)
	}
	if err := reg.Register(NewJudge(Options{})); err == nil {
		t.Error("a second judge was registered")
	}
}
