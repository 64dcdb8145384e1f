package green

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/tracedata"
)

// TestDecodeResult: a result encodes, decodes and encodes again to the same
// bytes, evaluations included; other documents are refused.
func TestDecodeResult(t *testing.T) {
	score := 50.0
	res := &Result{Schema: ResultSchema, Domain: "coordination", Score: &score, Tasks: []TaskResult{{
		TaskID: "t", TraceID: "abc", Agents: []tracedata.Agent{{Name: "a", IdentifiedBy: tracedata.IdentityAgentName}},
		Interactions: []tracedata.Interaction{}, Steps: []tracedata.Step{},
		Outcome: &evals.Outcome{Success: true, Score: 0.5, Summary: "ok"},
		Evaluations: map[string]evals.Result{
			"graph": &evals.GraphResult{Label: evals.LabelSparse, Nodes: []evals.GraphNode{}, Edges: []evals.GraphEdge{}, Findings: []evals.GraphFinding{}},
			"zeta":  RawEvaluation(`{"x":1}`),
		},
	}}}
	first, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeResult(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("round trip changed the result:\n%s\n%s", first, second)
	}
	if len(back.Tasks[0].Evaluations) != 2 || !strings.Contains(Summary(back), "sparse") {
		t.Errorf("evaluations %v", back.Tasks[0].Evaluations)
	}
	for _, bad := range []string{`{"schema":"other/v1","tasks":[]}`, `[]`, `{"schema":`} {
		if _, err := DecodeResult([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
