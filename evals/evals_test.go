package evals

import (
	"context"
	"slices"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// tierThree stands for the judge (evals/judge), which this package cannot
// import: any tier-3 evaluator passed as Options.Judge.
type tierThree struct{ name string }

func (e tierThree) Name() string { return e.name }
func (tierThree) Tier() int      { return 3 }
func (tierThree) Evaluate(context.Context, *tracedata.TraceData, Inputs) (Result, error) {
	return nil, nil
}

// The standard registry runs graph, latency, the judge passed in, text: the
// judge sees the graph's and the latency evaluator's results, and the text
// evaluator everything before it. Without a judge the others still run.
func TestNewRegistryOrder(t *testing.T) {
	if got := NewRegistry(Options{}).Names(); !slices.Equal(got, []string{GraphEvaluatorName, "latency", "text"}) {
		t.Errorf("run order without a judge %v", got)
	}
	reg := NewRegistry(Options{Judge: tierThree{"judge"}})
	if got := reg.Names(); !slices.Equal(got, []string{GraphEvaluatorName, "latency", "judge", "text"}) {
		t.Errorf("run order %v", got)
	}
	if err := reg.Register(tierThree{"judge"}); err == nil {
		t.Error("a second judge was registered")
	}
}
