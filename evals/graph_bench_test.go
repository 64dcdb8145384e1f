package evals

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// benchTrace is a random trace of n agents with about degree×n distinct
// calls edges (no self-loops), as cmd/bench-graph builds them.
func benchTrace(n, degree int) *tracedata.TraceData {
	r := rand.New(rand.NewPCG(20260101, uint64(n)))
	tr := &tracedata.TraceData{}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%05d", i)
		tr.Agents = append(tr.Agents, tracedata.Agent{Name: names[i]})
	}
	m := min(degree*n, n*(n-1))
	seen := map[[2]int]bool{}
	for len(seen) < m {
		u, v := r.IntN(n), r.IntN(n)
		if u == v || seen[[2]int{u, v}] {
			continue
		}
		seen[[2]int{u, v}] = true
		tr.Interactions = append(tr.Interactions, tracedata.Interaction{From: names[u], To: names[v], Count: 1 + r.IntN(5)})
	}
	return tr
}

// BenchmarkGraphEvaluator times the full metric set on random graphs of
// 100, 1,000, 3,000 and 10,000 agents with ten calls edges per agent.
func BenchmarkGraphEvaluator(b *testing.B) {
	for _, n := range []int{100, 1000, 3000, 10000} {
		tr := benchTrace(n, 10)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EvaluateGraph(context.Background(), tr, Inputs{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
