package green

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// groundTruthTestPath is the repository's data/ground_truth.json.
func groundTruthTestPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "data", "ground_truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGroundTruthFileMatchesPeerRead checks every entry of
// data/ground_truth.json against the data set: the paper exists, and the
// title, decision, mean recommendation, scale, count and expected decision
// are what the loader computes.
func TestGroundTruthFileMatchesPeerRead(t *testing.T) {
	gt, err := LoadGroundTruth(groundTruthTestPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(gt.Scenarios) < 4 {
		t.Fatalf("%d scenarios, want at least 4", len(gt.Scenarios))
	}
	dir := peerReadTestDir(t)
	decisions := map[string]int{}
	for _, sc := range gt.Scenarios {
		p, err := LoadPaper(dir, sc.Paper.Venue, sc.Paper.Split, sc.Paper.ID)
		if err != nil {
			t.Errorf("%s: %v", sc.ID, err)
			continue
		}
		if err := checkPaperFacts(&sc, p); err != nil {
			t.Errorf("%s: %v", sc.ID, err)
		}
		// The file's numbers are the loader's, rounded to 4 decimals.
		if coordRound(p.MeanRecommendation, 4) != sc.Paper.MeanRecommendation ||
			coordRound(p.NormalizedRecommendation, 4) != sc.Paper.NormalizedRecommendation ||
			p.ScoredReviews != sc.Paper.ScoredReviews {
			t.Errorf("%s: file says mean %v (%v) over %d; loader computes %.4f (%.4f) over %d", sc.ID,
				sc.Paper.MeanRecommendation, sc.Paper.NormalizedRecommendation, sc.Paper.ScoredReviews,
				p.MeanRecommendation, p.NormalizedRecommendation, p.ScoredReviews)
		}
		if d, _, _ := p.ExpectedDecision(); d != sc.Expected.Decision {
			t.Errorf("%s: expected decision %q, loader derives %q", sc.ID, sc.Expected.Decision, d)
		}
		decisions[sc.Expected.Decision]++
	}
	if decisions[DecisionAccept] == 0 || decisions[DecisionReject] == 0 {
		t.Errorf("the ground truth should hold both decisions: %v", decisions)
	}
}

// TestGroundTruthTopologyLabels builds, for every entry, the graph in which
// each agent calls each of its peers once (plus the assessor's hand-off to
// the entry agent), runs the real graph evaluator on it, and checks the
// entry's expected label and findings: the labels in the file are what
// coordbench computes, not what someone expected it to compute.
func TestGroundTruthTopologyLabels(t *testing.T) {
	gt, err := LoadGroundTruth(groundTruthTestPath(t))
	if err != nil {
		t.Fatal(err)
	}
	const assessor = "coordbench-green"
	labels := map[string]bool{}
	for _, sc := range gt.Scenarios {
		td := &tracedata.TraceData{TraceID: sc.ID}
		td.Agents = append(td.Agents, tracedata.Agent{Name: assessor, Role: tracedata.RoleAssessor})
		td.Interactions = append(td.Interactions, tracedata.Interaction{From: assessor, To: sc.Topology.Entry, Count: 1, BothSides: 1})
		var names []string
		for _, a := range sc.Topology.Agents {
			names = append(names, a.Name)
			if a.ExportsSpans || a.ReturnsExtensionSteps {
				td.Agents = append(td.Agents, tracedata.Agent{Name: a.Name})
			}
			for _, peer := range a.Peers {
				td.Interactions = append(td.Interactions, tracedata.Interaction{From: a.Name, To: peer, Count: 1, BothSides: 1})
			}
		}
		res, err := evals.EvaluateGraph(context.Background(), td, evals.Inputs{Participants: names})
		if err != nil {
			t.Fatalf("%s: %v", sc.ID, err)
		}
		var kinds []string
		for _, f := range res.Findings {
			kinds = append(kinds, f.Kind)
		}
		if res.Label != sc.Expected.Label || !slices.Equal(kinds, sc.Expected.Findings) {
			t.Errorf("%s (%s): the graph evaluator gives label %q, findings %v; the file says %q, %v",
				sc.ID, sc.Topology.Pattern, res.Label, kinds, sc.Expected.Label, sc.Expected.Findings)
		}
		labels[res.Label] = true
	}
	if len(labels) < 4 {
		t.Errorf("the entries cover labels %v; want at least 4 different ones", labels)
	}
}

// coordValidGroundTruth returns a small, valid ground truth for mutation tests.
func coordValidGroundTruth() GroundTruth {
	accept := DecisionAccept
	return GroundTruth{Schema: GroundTruthSchema, Scenarios: []GroundTruthScenario{{
		ID: "a-1",
		Paper: GroundTruthPaper{Venue: "iclr_2017", Split: "test", ID: "1", Title: "T", Decision: &accept,
			MeanRecommendation: 7, RecommendationScale: RecommendationScale{Min: 1, Max: 10}, NormalizedRecommendation: 0.6667},
		Topology: Topology{Entry: "coordinator", Pattern: "fan_out", Agents: []TopologyAgent{
			{Name: "coordinator", Role: "coordinator", Peers: []string{"reviewer-1"}, ExportsSpans: true},
			{Name: "reviewer-1", Role: "reviewer"},
		}},
		Expected: Expectation{Decision: DecisionAccept, Label: "sparse", Findings: []string{}},
	}}}
}

func TestGroundTruthValidate(t *testing.T) {
	if g := coordValidGroundTruth(); g.Validate() != nil {
		t.Fatalf("the valid ground truth fails: %v", g.Validate())
	}
	reject := DecisionReject
	for _, tc := range []struct {
		name   string
		mutate func(g *GroundTruth)
		want   string
	}{
		{"schema", func(g *GroundTruth) { g.Schema = "v0" }, `schema "v0"`},
		{"empty", func(g *GroundTruth) { g.Scenarios = nil }, "no scenarios"},
		{"duplicate id", func(g *GroundTruth) { g.Scenarios = append(g.Scenarios, g.Scenarios[0]) }, `id "a-1" used twice`},
		{"id with comma", func(g *GroundTruth) { g.Scenarios[0].ID = "a,b" }, "without spaces or commas"},
		{"no title", func(g *GroundTruth) { g.Scenarios[0].Paper.Title = " " }, "title is required"},
		{"bad decision", func(g *GroundTruth) { s := "maybe"; g.Scenarios[0].Paper.Decision = &s }, `decision "maybe"`},
		{"expected differs from paper", func(g *GroundTruth) { g.Scenarios[0].Paper.Decision = &reject }, `paper's facts give "reject"`},
		{"derived decision", func(g *GroundTruth) {
			p := &g.Scenarios[0].Paper
			p.Decision, p.MeanRecommendation, p.NormalizedRecommendation = nil, 3, 2.0/9
		}, `paper's facts give "reject"`},
		{"mean off scale", func(g *GroundTruth) { g.Scenarios[0].Paper.MeanRecommendation = 11 }, "outside the scale"},
		{"normalised inconsistent", func(g *GroundTruth) { g.Scenarios[0].Paper.NormalizedRecommendation = 0.5 }, "normalized_recommendation 0.5"},
		{"bad label", func(g *GroundTruth) { g.Scenarios[0].Expected.Label = "chaos" }, `label "chaos"`},
		{"bad finding", func(g *GroundTruth) { g.Scenarios[0].Expected.Findings = []string{"star"} }, `finding "star"`},
		{"bad pattern", func(g *GroundTruth) { g.Scenarios[0].Topology.Pattern = "mesh" }, `pattern "mesh"`},
		{"unknown entry", func(g *GroundTruth) { g.Scenarios[0].Topology.Entry = "boss" }, `entry "boss"`},
		{"unknown peer", func(g *GroundTruth) { g.Scenarios[0].Topology.Agents[0].Peers = []string{"ghost"} }, `peer "ghost"`},
		{"self peer", func(g *GroundTruth) {
			g.Scenarios[0].Topology.Agents[0].Peers = []string{"coordinator"}
		}, "lists itself"},
		{"unobservable caller", func(g *GroundTruth) { g.Scenarios[0].Topology.Agents[0].ExportsSpans = false }, "cannot be seen"},
		{"bad role", func(g *GroundTruth) { g.Scenarios[0].Topology.Agents[1].Role = "critic" }, `role "critic"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := coordValidGroundTruth()
			tc.mutate(&g)
			err := g.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestGroundTruthLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadGroundTruth(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), EnvGroundTruth) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "coordbench.ground_truth/v1", "scenarios": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadGroundTruth(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("truncated file: %v", err)
	}
	// Unknown keys are ignored: later versions add them.
	g := coordValidGroundTruth()
	raw, _ := json.Marshal(g)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	m["generated_by"] = "a later issue"
	m["scenarios"].([]any)[0].(map[string]any)["expected"].(map[string]any)["metrics"] = map[string]any{"density": 0.5}
	raw, _ = json.Marshal(m)
	ext := filepath.Join(dir, "ext.json")
	if err := os.WriteFile(ext, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadGroundTruth(ext); err != nil {
		t.Errorf("a file with added keys: %v", err)
	}
}

// TestGroundTruthDefaultPath finds the repository's file from the package
// directory, honours the variable, and refuses a variable naming nothing.
func TestGroundTruthDefaultPath(t *testing.T) {
	t.Setenv(EnvGroundTruth, "")
	got, err := DefaultGroundTruthPath()
	if err != nil {
		t.Fatal(err)
	}
	if prEvalSymlinks(t, got) != prEvalSymlinks(t, groundTruthTestPath(t)) {
		t.Errorf("DefaultGroundTruthPath() = %s", got)
	}
	t.Setenv(EnvGroundTruth, filepath.Join(t.TempDir(), "gt.json"))
	if _, err := DefaultGroundTruthPath(); err == nil || !strings.Contains(err.Error(), EnvGroundTruth) {
		t.Errorf("a variable naming nothing: %v", err)
	}
}

// TestCoordinationRejectsOtherDataSet: a data set whose paper differs from
// the ground truth stops the scenario at start-up, naming the difference.
func TestCoordinationRejectsOtherDataSet(t *testing.T) {
	gt, err := LoadGroundTruth(groundTruthTestPath(t))
	if err != nil {
		t.Fatal(err)
	}
	src := peerReadTestDir(t)
	dir := t.TempDir()
	for i, sc := range gt.Scenarios {
		raw, err := os.ReadFile(PeerReadPath(src, sc.Paper.Venue, sc.Paper.Split, sc.Paper.ID))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			m["title"] = "Another Title"
			raw, _ = json.Marshal(m)
		}
		prWritePaper(t, dir, sc.Paper.Venue, sc.Paper.Split, sc.Paper.ID, string(raw))
	}
	_, err = NewCoordinationScenario(CoordinationOptions{GroundTruthPath: groundTruthTestPath(t), PeerReadDir: dir})
	if err == nil || !strings.Contains(err.Error(), `"Another Title"`) || !strings.Contains(err.Error(), gt.Scenarios[0].ID) {
		t.Errorf("a changed title: %v", err)
	}

	// A missing paper is named too.
	sc := gt.Scenarios[1]
	if err := os.Remove(PeerReadPath(dir, sc.Paper.Venue, sc.Paper.Split, sc.Paper.ID)); err != nil {
		t.Fatal(err)
	}
	_, err = NewCoordinationScenario(CoordinationOptions{GroundTruthPath: groundTruthTestPath(t), PeerReadDir: dir})
	if err == nil || !strings.Contains(err.Error(), sc.Paper.ID+".json") {
		t.Errorf("a missing paper: %v", err)
	}

	if _, err := NewCoordinationScenario(CoordinationOptions{GroundTruthPath: groundTruthTestPath(t), PeerReadDir: filepath.Join(dir, "nope")}); err == nil {
		t.Error("a PeerRead directory named but absent must fail")
	}
}

func newCoordForTest(t *testing.T, opts CoordinationOptions) *CoordinationScenario {
	t.Helper()
	if opts.GroundTruthPath == "" {
		opts.GroundTruthPath = groundTruthTestPath(t)
	}
	if opts.PeerReadDir == "" && !opts.TitlesOnly {
		opts.PeerReadDir = peerReadTestDir(t)
	}
	s, err := NewCoordinationScenario(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func coordTaskIDsOf(tasks []Task) []string {
	ids := []string{}
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

func TestCoordinationTasks(t *testing.T) {
	s := newCoordForTest(t, CoordinationOptions{TitlesOnly: true})
	if s.Name() != "coordination" {
		t.Errorf("Name() = %q", s.Name())
	}
	all := s.taskIDs()
	if len(all) < 4 {
		t.Fatalf("%d tasks", len(all))
	}
	one := map[string]string{"agent": "http://127.0.0.1:1/agent"}
	req := func(cfg RequestConfig) *Request { return &Request{Participants: one, Config: cfg} }

	for _, tc := range []struct {
		name string
		cfg  RequestConfig
		want []string
	}{
		{"all", RequestConfig{}, all},
		{"ids keep ground truth order", RequestConfig{TaskIDs: []string{all[3], all[1], all[3]}}, []string{all[1], all[3]}},
		{"num_tasks", RequestConfig{NumTasks: 2}, all[:2]},
		{"num_tasks beyond", RequestConfig{NumTasks: 100}, all},
		{"ids then num_tasks", RequestConfig{TaskIDs: []string{all[0], all[2], all[3]}, NumTasks: 2}, []string{all[0], all[2]}},
		{"shard 0 of 2", RequestConfig{NumShards: 2, ShardIndex: 0}, coordEveryNth(all, 0, 2)},
		{"shard 1 of 2", RequestConfig{NumShards: 2, ShardIndex: 1}, coordEveryNth(all, 1, 2)},
		{"shard after num_tasks", RequestConfig{NumTasks: 3, NumShards: 2, ShardIndex: 1}, []string{all[1]}},
		{"more shards than tasks", RequestConfig{NumShards: 50, ShardIndex: 49}, []string{}},
		{"one shard", RequestConfig{NumShards: 1}, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks, err := s.Tasks(req(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if got := coordTaskIDsOf(tasks); !slices.Equal(got, tc.want) {
				t.Errorf("tasks %v, want %v", got, tc.want)
			}
			for _, task := range tasks {
				ct, ok := task.Data.(*CoordinationTask)
				if !ok || ct.Scenario.ID != task.ID || task.Title != ct.Scenario.Paper.Title || task.Title == "" {
					t.Errorf("task %s: title %q, data %#v", task.ID, task.Title, task.Data)
				}
			}
		})
	}

	two := map[string]string{"reviewer": "http://127.0.0.1:1/r", "coordinator": "http://127.0.0.1:1/c"}
	for _, tc := range []struct {
		name string
		req  *Request
		want []string
	}{
		{"unknown id", req(RequestConfig{TaskIDs: []string{"nope", all[0]}}), []string{`"nope"`, "valid ids: " + strings.Join(all, ", ")}},
		{"shard out of range", req(RequestConfig{NumShards: 2, ShardIndex: 2}), []string{"shard_index 2", "0..1"}},
		{"shard without shards", req(RequestConfig{ShardIndex: 1}), []string{"shard_index 1"}},
		{"negative shard", req(RequestConfig{NumShards: 2, ShardIndex: -1}), []string{"shard_index -1"}},
		{"negative num_tasks", req(RequestConfig{NumTasks: -1}), []string{"num_tasks -1"}},
		{"negative num_shards", req(RequestConfig{NumShards: -2}), []string{"num_shards -2"}},
		{"no entry role", &Request{Participants: two}, []string{"coordinator, reviewer", "entry_role"}},
		{"entry role absent", &Request{Participants: two, Config: RequestConfig{EntryRole: "chair"}}, []string{`"chair"`, "coordinator, reviewer"}},
		{"no participants", &Request{}, []string{"no participant"}},
		{"nil request", nil, []string{"no request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Tasks(tc.req)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if tasks, err := s.Tasks(&Request{Participants: two, Config: RequestConfig{EntryRole: "coordinator", NumTasks: 1}}); err != nil || len(tasks) != 1 {
		t.Errorf("with entry_role: %v, %v", coordTaskIDsOf(tasks), err)
	}
}

func coordEveryNth(ids []string, from, n int) []string {
	out := []string{}
	for i := from; i < len(ids); i += n {
		out = append(out, ids[i])
	}
	return out
}

func TestCoordinationParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reply    Reply
		decision string
		rec      float64 // 0: none
		source   string
		err      string
	}{
		{name: "data part", reply: Reply{Text: "see data", Data: []map[string]any{
			{"note": "x"}, {"decision": "reject", "recommendation": 2.0, "scores": map[string]any{"clarity": 3.0}}}},
			decision: "reject", rec: 2, source: "data"},
		{name: "data part wrapped", reply: Reply{Data: []map[string]any{{"review": map[string]any{"decision": "Accept", "recommendation": "4"}}}},
			decision: "accept", rec: 4, source: "data"},
		{name: "data part without decision falls back to text", reply: Reply{Text: `{"decision": "reject"}`, Data: []map[string]any{{"x": 1.0}}},
			decision: "reject", source: "json"},
		{name: "JSON in text", reply: Reply{Text: `After discussion: {"decision": "accept", "recommendation": 5, "rationale": "solid"} -- the team`},
			decision: "accept", rec: 5, source: "json"},
		{name: "first JSON object with a decision", reply: Reply{Text: `notes {"votes": [1, 2]} then {"decision": "reject", "recommendation": 1} and {"decision": "accept"}`},
			decision: "reject", rec: 1, source: "json"},
		{name: "fenced", reply: Reply{Text: "Here it is:\n```json\n{\"decision\": \"reject\", \"recommendation\": 2}\n```\nThanks, {\"decision\": \"accept\"}"},
			decision: "reject", rec: 2, source: "fenced_json"},
		{name: "fence without language", reply: Reply{Text: "```\n{\"decision\": \"weak accept\", \"recommendation\": 3.5}\n```"},
			decision: "accept", rec: 3.5, source: "fenced_json"},
		{name: "python fence skipped", reply: Reply{Text: "```python\nx = {'decision': 'accept'}\n```\nverdict: {\"decision\": \"rejected\"}"},
			decision: "reject", source: "json"},
		{name: "recommendation off scale ignored", reply: Reply{Text: `{"decision": "accept", "recommendation": 8}`},
			decision: "accept", source: "json"},
		{name: "bare word", reply: Reply{Text: "After careful thought we would Reject this paper."}, decision: "reject", source: "word"},
		{name: "bare word accepted", reply: Reply{Text: "Accepted."}, decision: "accept", source: "word"},
		{name: "both words", reply: Reply{Text: "Could accept or reject, unsure."}, err: "both accept and reject"},
		{name: "acceptable is not accept", reply: Reply{Text: "The writing is acceptable."}, err: "neither"},
		{name: "garbage", reply: Reply{Text: "lorem ipsum {not json"}, err: "neither"},
		{name: "empty", reply: Reply{}, err: "empty"},
		{name: "decision not a string", reply: Reply{Text: `{"decision": true}`}, err: "not a string"},
		{name: "decision unknown", reply: Reply{Text: `{"decision": "maybe"}`}, err: `"maybe"`},
		{name: "the prompt echoed back", reply: Reply{Text: coordAnswerForm}, err: "both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans, err := parseCoordAnswer(&tc.reply)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q (answer %+v)", err, tc.err, ans)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ans.Decision != tc.decision || ans.Source != tc.source {
				t.Errorf("decision %q from %q, want %q from %q", ans.Decision, ans.Source, tc.decision, tc.source)
			}
			switch {
			case tc.rec == 0 && ans.Recommendation != nil:
				t.Errorf("recommendation %v, want none", *ans.Recommendation)
			case tc.rec != 0 && (ans.Recommendation == nil || *ans.Recommendation != tc.rec):
				t.Errorf("recommendation %v, want %v", ans.Recommendation, tc.rec)
			}
		})
	}
}

// coordFakeSender answers like a participant would, without A2A.
type coordFakeSender struct {
	mu    sync.Mutex
	reqs  []SendRequest
	reply *Reply
	err   error
}

func (f *coordFakeSender) Send(_ context.Context, req SendRequest) (*Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return f.reply, f.err
}

// coordTestTask returns the task of the ground truth entry for a paper.
func coordTestTask(t *testing.T, s *CoordinationScenario, venue, id string) (Task, *CoordinationTask) {
	t.Helper()
	tasks, err := s.Tasks(&Request{Participants: map[string]string{"a": "http://x"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ct := task.Data.(*CoordinationTask)
		if ct.Scenario.Paper.Venue == venue && ct.Scenario.Paper.ID == id {
			return task, ct
		}
	}
	t.Fatalf("no task for %s/%s", venue, id)
	return Task{}, nil
}

func TestCoordinationRunRequest(t *testing.T) {
	s := newCoordForTest(t, CoordinationOptions{MaxReviewChars: 300})
	task, ct := coordTestTask(t, s, "iclr_2017", "305")
	var progress []string
	env := &TaskEnv{
		Request: &Request{
			Participants: map[string]string{"coordinator": "http://127.0.0.1:9/coordinator", "reviewer": "http://127.0.0.1:9/r"},
			Config:       RequestConfig{EntryRole: "coordinator"},
		},
		Progress: func(s string) { progress = append(progress, s) },
	}
	f := &coordFakeSender{reply: &Reply{AgentName: "coordinator", State: "TASK_STATE_COMPLETED",
		Text: "```json\n{\"decision\": \"accept\", \"recommendation\": 4, \"scores\": {\"clarity\": 4}, \"rationale\": \"good\"}\n```"}}
	out, err := s.run(context.Background(), env, f, task)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.reqs) != 1 || f.reqs[0].URL != "http://127.0.0.1:9/coordinator" {
		t.Fatalf("requests %+v", f.reqs)
	}
	req := f.reqs[0]
	for _, want := range []string{`"decision": "accept" | "reject"`, `"recommendation"`, `"originality"`, `"soundness"`,
		ct.Scenario.Paper.Title, ct.Paper.Abstract[:60], "Review 1: Very good paper", task.ID} {
		if !strings.Contains(req.Text, want) {
			t.Errorf("request text lacks %q", want)
		}
	}
	// The committee's note states the decision; it must not be sent.
	committee := ct.Paper.Reviews[len(ct.Paper.Reviews)-1]
	if !committee.CommitteeDecision || strings.Contains(req.Text, committee.Comments[:40]) {
		t.Error("the committee's note leaked into the request")
	}
	if req.Data["task_id"] != task.ID || req.Data["title"] != ct.Scenario.Paper.Title || req.Data["abstract"] == "" {
		t.Errorf("data part %v", req.Data)
	}
	reviews, _ := req.Data["reviews"].([]any)
	if len(reviews) != 3 {
		t.Errorf("%d reviews in the data part, want 3", len(reviews))
	}
	for _, r := range reviews {
		c := r.(map[string]any)["comments"].(string)
		if len([]rune(c)) > 300+len([]rune("…[truncated]")) {
			t.Errorf("review comments not bounded: %d runes", len([]rune(c)))
		}
	}
	if _, err := json.Marshal(req.Data); err != nil {
		t.Errorf("data part does not encode: %v", err)
	}
	if len(progress) != 1 || !strings.Contains(progress[0], "coordinator") {
		t.Errorf("progress %v", progress)
	}

	// 305: accept, reviewers' mean 8.33 of 10 (0.8148); the answer: accept,
	// 4 of 5 (0.75). Score 0.7 + 0.3 * (1 - 0.0648).
	if !out.Success || out.Score != 0.9806 {
		t.Errorf("outcome %+v", out)
	}
	for k, want := range map[string]any{"expected_decision": "accept", "decision": "accept", "recommendation": 4.0,
		"answer_source": "fenced_json", "agent": "coordinator", "paper_mean_recommendation": 8.3333, "entry_role": "coordinator"} {
		if out.Details[k] != want {
			t.Errorf("details[%s] = %v, want %v", k, out.Details[k], want)
		}
	}
	if !strings.Contains(out.Summary, "expected accept") || !strings.Contains(out.Summary, "answered accept") {
		t.Errorf("summary %q", out.Summary)
	}
}

func TestCoordinationRunOutcomes(t *testing.T) {
	s := newCoordForTest(t, CoordinationOptions{})
	reject, _ := coordTestTask(t, s, "iclr_2017", "749") // reject, mean 3 of 10 (0.2222)
	derived, _ := coordTestTask(t, s, "acl_2017", "49")  // no decision; 4 of 5 (0.75) derives accept
	env := &TaskEnv{Request: &Request{Participants: map[string]string{"only": "http://127.0.0.1:9/"}}}

	for _, tc := range []struct {
		name    string
		task    Task
		reply   *Reply
		err     error
		success bool
		score   float64
		summary []string
	}{
		{"correct reject", reject, &Reply{Data: []map[string]any{{"decision": "reject", "recommendation": 2.0}}}, nil,
			true, 0.9917, []string{"expected reject", "answered reject"}},
		{"wrong decision keeps the recommendation term", reject, &Reply{Text: `{"decision": "accept", "recommendation": 5}`}, nil,
			false, 0.0667, []string{"answered accept"}},
		{"bare word, no recommendation", reject, &Reply{Text: "reject"}, nil, true, 0.7, []string{"no usable recommendation"}},
		{"derived decision", derived, &Reply{Text: `{"decision": "accept", "recommendation": 4}`}, nil, true, 1, []string{"expected accept"}},
		{"messenger error", reject, nil, errors.New("dial tcp 127.0.0.1:9: connection refused"), false, 0,
			[]string{"did not answer", "connection refused"}},
		{"failed task", reject, &Reply{State: "TASK_STATE_FAILED", Text: "LLM quota exceeded"}, nil, false, 0,
			[]string{"state failed", "LLM quota exceeded"}},
		{"garbage", reject, &Reply{State: "completed", Text: strings.Repeat("blah ", 500)}, nil, false, 0,
			[]string{"could not read a decision", "blah", "…[truncated]"}},
		{"nil reply", reject, nil, nil, false, 0, []string{"no reply"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.run(context.Background(), env, &coordFakeSender{reply: tc.reply, err: tc.err}, tc.task)
			if err != nil {
				t.Fatalf("a participant's failure is an outcome, not an error: %v", err)
			}
			if out.Success != tc.success || out.Score != tc.score {
				t.Errorf("success %v score %v, want %v %v (%s)", out.Success, out.Score, tc.success, tc.score, out.Summary)
			}
			for _, w := range tc.summary {
				if !strings.Contains(out.Summary, w) {
					t.Errorf("summary %q lacks %q", out.Summary, w)
				}
			}
			if !tc.success && tc.score == 0 && out.Details["error"] == nil {
				t.Errorf("failure without details.error: %v", out.Details)
			}
			if len(out.Summary) > 600 {
				t.Errorf("summary is %d bytes", len(out.Summary))
			}
		})
	}

	// Errors: what cannot be run at all.
	f := &coordFakeSender{}
	if _, err := s.run(context.Background(), env, f, Task{ID: "nope"}); err == nil || !strings.Contains(err.Error(), "valid ids") {
		t.Errorf("unknown task: %v", err)
	}
	two := &TaskEnv{Request: &Request{Participants: map[string]string{"a": "http://a", "b": "http://b"}}}
	if _, err := s.run(context.Background(), two, f, reject); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("two participants, no entry_role: %v", err)
	}
	if _, err := s.Run(context.Background(), &TaskEnv{Request: env.Request}, reject); err == nil {
		t.Error("Run without a messenger must fail")
	}
	if len(f.reqs) != 0 {
		t.Errorf("sent %d messages for tasks that could not run", len(f.reqs))
	}
}

func TestCoordinationTitlesOnly(t *testing.T) {
	s := newCoordForTest(t, CoordinationOptions{TitlesOnly: true})
	if s.PeerReadDir() != "" {
		t.Errorf("PeerReadDir() = %q", s.PeerReadDir())
	}
	task, ct := coordTestTask(t, s, "iclr_2017", "305")
	if ct.Paper != nil {
		t.Fatal("a paper was loaded")
	}
	f := &coordFakeSender{reply: &Reply{Text: `{"decision": "accept", "recommendation": 5}`}}
	env := &TaskEnv{Request: &Request{Participants: map[string]string{"a": "http://a"}}}
	out, err := s.run(context.Background(), env, f, task)
	if err != nil {
		t.Fatal(err)
	}
	req := f.reqs[0]
	if !strings.Contains(req.Text, "Only the title is available") || strings.Contains(req.Text, "Abstract:") ||
		req.Data["title_only"] != true || req.Data["abstract"] != nil {
		t.Errorf("title-only request: %q %v", req.Text, req.Data)
	}
	if !out.Success || out.Details["title_only"] != true {
		t.Errorf("outcome %+v", out)
	}
}

// TestCoordinationLoopback runs tasks against real A2A participants on
// loopback, through the real Messenger: a 1.0 team (a coordinator that asks
// two reviewers and answers with fenced JSON) for the fan_out entry, whose
// trace must then show the entry's expected label; a 0.3 agent answering
// with a data part; and an agent whose task fails.
func TestCoordinationLoopback(t *testing.T) {
	s := newCoordForTest(t, CoordinationOptions{})
	fanOut, ct := coordTestTask(t, s, "iclr_2017", "305") // accept; topology fan_out
	if ct.Scenario.Topology.Pattern != "fan_out" {
		t.Fatalf("entry %s is %s; the team below is a fan_out", fanOut.ID, ct.Scenario.Topology.Pattern)
	}
	g := newTestGreen(t, MessengerOptions{CallTimeout: 30 * time.Second})

	reviewer := func(name string, rec int) *testPurple {
		return startTestPurple(t, testPurpleOptions{Name: name, Store: g.store, Extension: name == "reviewer-2",
			ReplyFunc: func(_ context.Context, in testPurpleInput) (string, error) {
				if !strings.Contains(in.Text, ct.Scenario.Paper.Title) {
					return "", errors.New("the request did not reach the reviewer")
				}
				return fmt.Sprintf(`{"decision": "accept", "recommendation": %d}`, rec), nil
			}})
	}
	r1, r2 := reviewer("reviewer-1", 4), reviewer("reviewer-2", 5)
	var seenData []map[string]any
	coord := startTestPurple(t, testPurpleOptions{Name: "coordinator", Store: g.store, Path: "/coordinator",
		Peers: []string{r1.URL, r2.URL},
		ReplyFunc: func(_ context.Context, in testPurpleInput) (string, error) {
			seenData = in.Data
			sum := 0.0
			for _, r := range in.PeerReplies {
				ans, err := parseCoordAnswer(r)
				if err != nil {
					return "", err
				}
				sum += *ans.Recommendation
			}
			return fmt.Sprintf("The team agrees.\n```json\n{\"decision\": \"accept\", \"recommendation\": %g}\n```", sum/2), nil
		}})

	participants := map[string]string{"coordinator": coord.URL, "reviewer-1": r1.URL, "reviewer-2": r2.URL}
	env := &TaskEnv{Messenger: g.m, Request: &Request{Participants: participants, Config: RequestConfig{EntryRole: "coordinator"}}}
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
		otelmap.SettleOptions{Root: span.SpanContext().SpanID(), Quiet: 200 * time.Millisecond, MaxWait: 10 * time.Second})
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
	legacy := startTestPurple(t, testPurpleOptions{Name: "solo", Legacy: true, Reply: "see the data part",
		ReplyData: map[string]any{"decision": "reject", "recommendation": 1, "rationale": "weak"}})
	env = &TaskEnv{Messenger: g.m, Request: &Request{Participants: map[string]string{"solo": legacy.URL}}}
	out, err = s.Run(t.Context(), env, rejectTask)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Success || out.Details["answer_source"] != "data" || out.Details["rationale"] != "weak" {
		t.Errorf("0.3 outcome %+v", out)
	}

	// A participant whose task fails costs the task, not the assessment.
	failing := startTestPurple(t, testPurpleOptions{Name: "broken", Fault: faultFail})
	env = &TaskEnv{Messenger: g.m, Request: &Request{Participants: map[string]string{"broken": failing.URL}}}
	out, err = s.Run(t.Context(), env, rejectTask)
	if err != nil {
		t.Fatal(err)
	}
	if out.Success || out.Score != 0 || !strings.Contains(out.Summary, "deliberate failure") || !strings.Contains(out.Summary, "did not complete") {
		t.Errorf("failed participant: %+v", out)
	}
}
