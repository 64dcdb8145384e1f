package green

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/tracedata"
	"go.opentelemetry.io/otel/trace"
)

// TestCoordinationLoopback runs tasks against real A2A participants on
// loopback, through the real Messenger: a 1.0 team (a coordinator that asks
// two reviewers and answers with fenced JSON) for the fan_out entry, whose
// trace must then show the entry's expected label; a 0.3 agent answering
// with a data part; and an agent whose task fails.
func TestCoordinationLoopback(t *testing.T) {
	s, err := coordination.New(coordination.Options{PeerReadDir: peerReadTestDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	fanOut, ct := coordTestTask(t, s, "iclr_2017", "305") // accept; topology fan_out
	if ct.Scenario.Topology.Pattern != "fan_out" {
		t.Fatalf("entry %s is %s; the team below is a fan_out", fanOut.ID, ct.Scenario.Topology.Pattern)
	}
	g := newTestGreen(t, a2acall.Options{CallTimeout: 30 * time.Second})

	reviewer := func(name string, rec int) *a2atest.Agent {
		return a2atest.Start(t, a2atest.Options{Name: name, Store: g.store, Extension: name == "reviewer-2",
			ReplyFunc: func(_ context.Context, in a2atest.Input) (string, error) {
				if !strings.Contains(in.Text, ct.Scenario.Paper.Title) {
					return "", errors.New("the request did not reach the reviewer")
				}
				return fmt.Sprintf(`{"decision": "accept", "recommendation": %d}`, rec), nil
			}})
	}
	r1, r2 := reviewer("reviewer-1", 4), reviewer("reviewer-2", 5)
	var seenData []map[string]any
	coord := a2atest.Start(t, a2atest.Options{Name: "coordinator", Store: g.store, Path: "/coordinator",
		Peers: []string{r1.URL, r2.URL},
		ReplyFunc: func(_ context.Context, in a2atest.Input) (string, error) {
			seenData = in.Data
			sum := 0.0
			for _, r := range in.PeerReplies {
				var ans struct{ Recommendation float64 }
				if err := json.Unmarshal([]byte(r.Text), &ans); err != nil {
					return "", fmt.Errorf("a reviewer's answer %q: %w", r.Text, err)
				}
				sum += ans.Recommendation
			}
			return fmt.Sprintf("The team agrees.\n```json\n{\"decision\": \"accept\", \"recommendation\": %g}\n```", sum/2), nil
		}})

	participants := map[string]string{"coordinator": coord.URL, "reviewer-1": r1.URL, "reviewer-2": r2.URL}
	env := &scenario.TaskEnv{Messenger: g.m, Request: &scenario.Request{Participants: participants, Config: scenario.RequestConfig{EntryRole: "coordinator"}}}
	ctx, span := g.tracer.Start(t.Context(), otelmap.SpanTask, trace.WithAttributes(otelmap.AttrCallType.String(string(tracedata.CallHost))))
	out, err := s.Run(ctx, env, fanOut)
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	// accept, 4.5 of 5 (0.875) against 0.8148: 0.7 + 0.3 * (1 - 0.0602).
	if !out.Success || out.Score != 0.9819 || out.Details["agent"] != "coordinator" || out.Details["answer_source"] != "fenced_json" {
		t.Errorf("outcome %+v", out)
	}
	if len(seenData) != 1 || seenData[0]["task_id"] != fanOut.ID || seenData[0]["abstract"] != ct.Paper.Abstract {
		t.Errorf("the coordinator got data parts %v", seenData)
	}

	// The trace: the green agent's, the team's and reviewer-2's extension
	// spans, assembled, must show the label the ground truth names.
	spans, settled, err := g.store.WaitSettled(t.Context(), span.SpanContext().TraceID(),
		tracestore.SettleOptions{Root: span.SpanContext().SpanID(), Quiet: 200 * time.Millisecond, MaxWait: 10 * time.Second})
	if err != nil || !settled {
		t.Fatalf("trace did not settle: %v", err)
	}
	td := assemble.Trace(span.SpanContext().TraceID(), spans)
	res, err := evals.EvaluateGraph(t.Context(), td, evals.Inputs{Participants: []string{"coordinator", "reviewer-1", "reviewer-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Label != ct.Scenario.Expected.Label {
		t.Errorf("label %q from the spans, ground truth %q; interactions %+v", res.Label, ct.Scenario.Expected.Label, td.Interactions)
	}

	// A 0.3 agent (the Python SDK's wire format) answering with a data part.
	rejectTask, _ := coordTestTask(t, s, "iclr_2017", "749")
	legacy := a2atest.Start(t, a2atest.Options{Name: "solo", Legacy: true, Reply: "see the data part",
		ReplyData: map[string]any{"decision": "reject", "recommendation": 1, "rationale": "weak"}})
	env = &scenario.TaskEnv{Messenger: g.m, Request: &scenario.Request{Participants: map[string]string{"solo": legacy.URL}}}
	out, err = s.Run(t.Context(), env, rejectTask)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Success || out.Details["answer_source"] != "data" || out.Details["rationale"] != "weak" {
		t.Errorf("0.3 outcome %+v", out)
	}

	// A participant whose task fails costs the task, not the assessment.
	failing := a2atest.Start(t, a2atest.Options{Name: "broken", Fault: a2atest.FaultFail})
	env = &scenario.TaskEnv{Messenger: g.m, Request: &scenario.Request{Participants: map[string]string{"broken": failing.URL}}}
	out, err = s.Run(t.Context(), env, rejectTask)
	if err != nil {
		t.Fatal(err)
	}
	if out.Success || out.Score != 0 || !strings.Contains(out.Summary, "deliberate failure") || !strings.Contains(out.Summary, "did not complete") {
		t.Errorf("failed participant: %+v", out)
	}
}

// coordTestTask is the coordination task of PeerRead paper venue/id.
func coordTestTask(t *testing.T, s *coordination.Scenario, venue, id string) (scenario.Task, *coordination.Task) {
	t.Helper()
	tasks, err := s.Tasks(&scenario.Request{Participants: map[string]string{"a": "http://x"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ct := task.Data.(*coordination.Task)
		if ct.Scenario.Paper.Venue == venue && ct.Scenario.Paper.ID == id {
			return task, ct
		}
	}
	t.Fatalf("no task for %s/%s", venue, id)
	return scenario.Task{}, nil
}

// peerReadTestDir is the shared copy of PeerRead.
func peerReadTestDir(t *testing.T) string {
	t.Helper()
	dir, err := coordination.DefaultPeerReadDir()
	if err != nil {
		testenv.Missing(t, "PeerRead data set: %v", err)
	}
	return dir
}
