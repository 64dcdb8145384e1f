package evals

import (
	"context"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// namedEvaluator is an evaluator that only has a name.
type namedEvaluator string

func (n namedEvaluator) Name() string { return string(n) }
func (namedEvaluator) Tier() int      { return 1 }
func (namedEvaluator) Evaluate(context.Context, *tracedata.TraceData, Inputs) (Result, error) {
	return nil, nil
}

// TestRegisterRefusesBadNames: an evaluator's name keys its result, so an
// empty, duplicate or non-identifier name is refused.
func TestRegisterRefusesBadNames(t *testing.T) {
	reg := &Registry{}
	for _, good := range []string{"graph", "text_sim", "m2"} {
		if err := reg.Register(namedEvaluator(good)); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
	for _, bad := range []string{"", "graph", "Graph", "2m", "_x", "a.b", "a-b", "a b", "é"} {
		if err := reg.Register(namedEvaluator(bad)); err == nil {
			t.Errorf("%q registered", bad)
		}
	}
	if got := len(reg.Names()); got != 3 {
		t.Errorf("%d evaluators registered, want 3", got)
	}
}
