package main

import (
	"fmt"
	"math"

	"github.com/coordbench/coordbench/evals"
)

// compare checks every metric networkx reported against the Go side's, both
// as JSON decodes them: the largest absolute difference, or the first
// disagreement.
func compare(got, want map[string]any) string {
	if got == nil {
		return "no Go metrics"
	}
	var worst float64
	for _, name := range evals.GraphMetricNames {
		g, w := got[name], want[name]
		d, ok := diff(g, w)
		if !ok {
			return "DIFFER: " + name
		}
		worst = max(worst, d)
	}
	for _, flag := range []string{"eigenvector_centrality_converged", "pagerank_converged", "average_shortest_path_length_scope", "diameter_scope"} {
		if got[flag] != want[flag] {
			return "DIFFER: " + flag
		}
	}
	if worst > 1e-6 {
		return fmt.Sprintf("DIFFER: max |Δ| %.2g", worst)
	}
	return fmt.Sprintf("agree, max |Δ| %.1g", worst)
}

// diff is the largest absolute difference between two decoded metric
// values (numbers, nulls or maps of them); false when their shapes differ.
func diff(a, b any) (float64, bool) {
	switch av := a.(type) {
	case nil:
		if bm, ok := b.(map[string]any); ok {
			// Go reports a failed iteration as null per node.
			for _, v := range bm {
				if v != nil {
					return 0, false
				}
			}
			return 0, true
		}
		return 0, b == nil
	case float64:
		bv, ok := b.(float64)
		return math.Abs(av - bv), ok
	case map[string]any:
		if b == nil {
			for _, v := range av {
				if v != nil {
					return 0, false
				}
			}
			return 0, true
		}
		bm, ok := b.(map[string]any)
		if !ok || len(bm) != len(av) {
			return 0, false
		}
		var worst float64
		for k, v := range av {
			d, ok := diff(v, bm[k])
			if !ok {
				return 0, false
			}
			worst = max(worst, d)
		}
		return worst, true
	}
	return 0, false
}
