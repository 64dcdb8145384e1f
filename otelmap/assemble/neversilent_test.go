package assemble_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
)

// TestLiveCorpusNeverSilent: across every capture of the live corpus
// (misread or not), assessed as `green assess` does, no trace whose spans
// of an agent namespace went unread, or that holds an agent no rule could
// name, gets evidence complete (issue 22: "no capture in the corpus gets
// complete evidence while spans of an agent namespace were not read").
func TestLiveCorpusNeverSilent(t *testing.T) {
	captures, err := filepath.Glob(filepath.Join("testdata", "live", "*", "captures*", "*.otlp.json"))
	if err != nil || len(captures) == 0 {
		t.Fatalf("no live captures: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var traces, unread int
	for _, c := range captures {
		res, err := green.AssessOTLPFiles(ctx, []string{c}, green.OfflineOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		for _, task := range res.Tasks {
			traces++
			cov := task.Coverage
			if len(cov.UnreadNamespaces) == 0 && cov.UnreadAgentSpans == 0 {
				continue
			}
			unread++
			g, ok := task.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult)
			if !ok || g.Evidence == nil || g.Evidence.Level == evals.EvidenceComplete {
				t.Errorf("%s: trace %s has unread spans (%v, %d agent-like) yet evidence %+v", c, task.TraceID, cov.UnreadNamespaces, cov.UnreadAgentSpans, g)
			}
		}
	}
	t.Logf("%d captures, %d traces, %d with unread agent spans or namespaces, none complete", len(captures), traces, unread)
}
