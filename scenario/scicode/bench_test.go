package scicode_test

import (
	"testing"
	"time"

	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// benchSteps cover every form of test case in the validation split
// (np.allclose, cmp_tuple_or_list, == target, and/or, helpers defined in the
// test case, self-checking test cases without a target) and leave out the
// steps that take tens of seconds of CPU.
var benchSteps = []string{"1.1", "3.1", "4.1", "6.1", "10.1", "10.3", "10.6", "10.7", "19.2", "29.3", "38.3", "70.8", "78.1", "78.2"}

// BenchmarkSubStep measures the time to test one sub-step's reference code,
// from the request to the verdict, one step after the other: ms/substep
// (wall clock) and cpu-ms/substep (the sandbox's processes and the judge),
// the figures docs/scicode.md quotes.
func BenchmarkSubStep(b *testing.B) {
	s := newForTest(b, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	var reqs []scicode.TestRequest
	for _, p := range split.Problems {
		for k := range p.Steps {
			for _, n := range benchSteps {
				if p.Steps[k].Number == n {
					reqs = append(reqs, referenceRequest(split, p, k, p.Steps[k].Reference))
				}
			}
		}
	}
	if len(reqs) != len(benchSteps) {
		b.Fatalf("%d of %d steps found", len(reqs), len(benchSteps))
	}
	b.ResetTimer()
	start := time.Now()
	cpu, run, judge := 0.0, 0.0, 0.0
	for b.Loop() {
		for _, req := range reqs {
			v, err := s.Test(b.Context(), req)
			if err != nil || !v.Passed {
				b.Fatalf("step %s: %v %+v", req.Problem.Steps[req.Step].Number, err, v)
			}
			cpu += v.Run.CPUMS + v.JudgeCPUMS
			run += v.Run.DurationMS
			judge += v.JudgeMS
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N*len(reqs)), "ms/substep")
	// The CPU time of the sandbox's processes and the judge: on a shared
	// machine, where the wall clock says more about the neighbours.
	b.ReportMetric(cpu/float64(b.N*len(reqs)), "cpu-ms/substep")
	// The wall clock of the sandbox's run and of the judge.
	b.ReportMetric(run/float64(b.N*len(reqs)), "run-ms/substep")
	b.ReportMetric(judge/float64(b.N*len(reqs)), "judge-ms/substep")
}
