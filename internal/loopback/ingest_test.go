package loopback

import (
	"testing"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/purple"
)

// TestStrictIngestWithPurpleTeam: a green agent with strict ingest
// (docs/span-admission.md) assesses a team of base purple agents that
// export to its receiver. The purple agents send back the ingest token the
// green agent handed them, the coordinator hands it on to the reviewers it
// asks, and every span is admitted: each call seen from both sides, on
// complete evidence. The control run turns the token off in the purple
// agents (purple.Options.NoIngestToken): strict ingest then refuses their
// spans, and the result says so.
func TestStrictIngestWithPurpleTeam(t *testing.T) {
	strict := tracestore.Limits{Admission: tracestore.AdmissionLimits{StrictIngest: true}}

	t.Run("token sent", func(t *testing.T) {
		h := admissionHarness(t, strict)
		assessWholeTeam(t, h)
		if st := h.Green().Store().Stats().Admission; st.RefusedStrict != 0 || st.RefusedToken != 0 {
			t.Errorf("admission %+v: spans refused", st)
		}
	})

	t.Run("token not sent", func(t *testing.T) {
		h := admissionHarness(t, strict)
		team := fanOutTeam(t, h, func(o *purple.Options) { o.FlushOnResponse = true; o.NoIngestToken = true })
		res := settleAssess(t, h, team, map[string]any{"num_tasks": 1, "settle_max_wait_ms": 2000})
		if len(res.Tasks) != 1 {
			t.Fatalf("%d tasks, want 1", len(res.Tasks))
		}
		task := res.Tasks[0]
		if task.RefusedSpans == 0 || task.Coverage.BothSides == 3 {
			t.Errorf("task %s: coverage %+v, %d refused spans: want the participants' spans refused", task.TaskID, task.Coverage, task.RefusedSpans)
		}
		if v := verdictOf(t, task); v.Evidence.Level == evals.EvidenceComplete {
			t.Errorf("task %s: evidence complete without the participants' spans", task.TaskID)
		}
		t.Logf("refused %d spans, coverage %+v", task.RefusedSpans, task.Coverage)
		if st := h.Green().Store().Stats().Admission; st.RefusedStrict == 0 {
			t.Errorf("admission %+v: no span refused by strict ingest", st)
		}
	})
}
