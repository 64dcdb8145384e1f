package coordination

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/scenario"
)

// TestGroundTruthFileMatchesPeerRead checks every entry of
// groundtruth/ground_truth.json against the data set: the paper exists, and the
// title, decision, mean recommendation, scale, count and expected decision
// are what the loader computes.
func TestGroundTruthFileMatchesPeerRead(t *testing.T) {
	gt, err := groundtruth.Default()
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
	if decisions[groundtruth.DecisionAccept] == 0 || decisions[groundtruth.DecisionReject] == 0 {
		t.Errorf("the ground truth should hold both decisions: %v", decisions)
	}
}

// TestCoordinationRejectsOtherDataSet: a data set whose paper differs from
// the ground truth stops the scenario at start-up, naming the difference.
func TestCoordinationRejectsOtherDataSet(t *testing.T) {
	gt, err := groundtruth.Default()
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
	_, err = New(Options{PeerReadDir: dir})
	if err == nil || !strings.Contains(err.Error(), `"Another Title"`) || !strings.Contains(err.Error(), gt.Scenarios[0].ID) {
		t.Errorf("a changed title: %v", err)
	}

	// A missing paper is named too.
	sc := gt.Scenarios[1]
	if err := os.Remove(PeerReadPath(dir, sc.Paper.Venue, sc.Paper.Split, sc.Paper.ID)); err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{PeerReadDir: dir})
	if err == nil || !strings.Contains(err.Error(), sc.Paper.ID+".json") {
		t.Errorf("a missing paper: %v", err)
	}

	if _, err := New(Options{PeerReadDir: filepath.Join(dir, "nope")}); err == nil {
		t.Error("a PeerRead directory named but absent must fail")
	}
}

func newCoordForTest(t *testing.T, opts Options) *Scenario {
	t.Helper()
	if opts.PeerReadDir == "" && !opts.TitlesOnly {
		opts.PeerReadDir = peerReadTestDir(t)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func coordTaskIDsOf(tasks []scenario.Task) []string {
	ids := []string{}
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

func TestCoordinationTasks(t *testing.T) {
	s := newCoordForTest(t, Options{TitlesOnly: true})
	if s.Name() != "coordination" {
		t.Errorf("Name() = %q", s.Name())
	}
	all := s.taskIDs()
	if len(all) < 4 {
		t.Fatalf("%d tasks", len(all))
	}
	one := map[string]string{"agent": "http://127.0.0.1:1/agent"}
	req := func(cfg scenario.RequestConfig) *scenario.Request {
		return &scenario.Request{Participants: one, Config: cfg}
	}

	for _, tc := range []struct {
		name string
		cfg  scenario.RequestConfig
		want []string
	}{
		{"all", scenario.RequestConfig{}, all},
		{"ids keep ground truth order", scenario.RequestConfig{TaskIDs: []string{all[3], all[1], all[3]}}, []string{all[1], all[3]}},
		{"num_tasks", scenario.RequestConfig{NumTasks: 2}, all[:2]},
		{"num_tasks beyond", scenario.RequestConfig{NumTasks: 100}, all},
		{"ids then num_tasks", scenario.RequestConfig{TaskIDs: []string{all[0], all[2], all[3]}, NumTasks: 2}, []string{all[0], all[2]}},
		{"shard 0 of 2", scenario.RequestConfig{NumShards: 2, ShardIndex: 0}, coordEveryNth(all, 0, 2)},
		{"shard 1 of 2", scenario.RequestConfig{NumShards: 2, ShardIndex: 1}, coordEveryNth(all, 1, 2)},
		{"shard after num_tasks", scenario.RequestConfig{NumTasks: 3, NumShards: 2, ShardIndex: 1}, []string{all[1]}},
		{"more shards than tasks", scenario.RequestConfig{NumShards: 50, ShardIndex: 49}, []string{}},
		{"one shard", scenario.RequestConfig{NumShards: 1}, all},
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
				ct, ok := task.Data.(*Task)
				if !ok || ct.Scenario.ID != task.ID || task.Title != ct.Scenario.Paper.Title || task.Title == "" {
					t.Errorf("task %s: title %q, data %#v", task.ID, task.Title, task.Data)
				}
			}
		})
	}

	two := map[string]string{"reviewer": "http://127.0.0.1:1/r", "coordinator": "http://127.0.0.1:1/c"}
	for _, tc := range []struct {
		name string
		req  *scenario.Request
		want []string
	}{
		{"unknown id", req(scenario.RequestConfig{TaskIDs: []string{"nope", all[0]}}), []string{`"nope"`, "valid ids: " + strings.Join(all, ", ")}},
		{"shard out of range", req(scenario.RequestConfig{NumShards: 2, ShardIndex: 2}), []string{"shard_index 2", "0..1"}},
		{"shard without shards", req(scenario.RequestConfig{ShardIndex: 1}), []string{"shard_index 1"}},
		{"negative shard", req(scenario.RequestConfig{NumShards: 2, ShardIndex: -1}), []string{"shard_index -1"}},
		{"negative num_tasks", req(scenario.RequestConfig{NumTasks: -1}), []string{"num_tasks -1"}},
		{"negative num_shards", req(scenario.RequestConfig{NumShards: -2}), []string{"num_shards -2"}},
		{"no entry role", &scenario.Request{Participants: two}, []string{"coordinator, reviewer", "entry_role"}},
		{"entry role absent", &scenario.Request{Participants: two, Config: scenario.RequestConfig{EntryRole: "chair"}}, []string{`"chair"`, "coordinator, reviewer"}},
		{"no participants", &scenario.Request{}, []string{"no participant"}},
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
	if tasks, err := s.Tasks(&scenario.Request{Participants: two, Config: scenario.RequestConfig{EntryRole: "coordinator", NumTasks: 1}}); err != nil || len(tasks) != 1 {
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
		reply    a2acall.Reply
		decision string
		rec      float64 // 0: none
		source   string
		err      string
	}{
		{name: "data part", reply: a2acall.Reply{Text: "see data", Data: []map[string]any{
			{"note": "x"}, {"decision": "reject", "recommendation": 2.0, "scores": map[string]any{"clarity": 3.0}}}},
			decision: "reject", rec: 2, source: "data"},
		{name: "data part wrapped", reply: a2acall.Reply{Data: []map[string]any{{"review": map[string]any{"decision": "Accept", "recommendation": "4"}}}},
			decision: "accept", rec: 4, source: "data"},
		{name: "data part without decision falls back to text", reply: a2acall.Reply{Text: `{"decision": "reject"}`, Data: []map[string]any{{"x": 1.0}}},
			decision: "reject", source: "json"},
		{name: "JSON in text", reply: a2acall.Reply{Text: `After discussion: {"decision": "accept", "recommendation": 5, "rationale": "solid"} -- the team`},
			decision: "accept", rec: 5, source: "json"},
		{name: "first JSON object with a decision", reply: a2acall.Reply{Text: `notes {"votes": [1, 2]} then {"decision": "reject", "recommendation": 1} and {"decision": "accept"}`},
			decision: "reject", rec: 1, source: "json"},
		{name: "fenced", reply: a2acall.Reply{Text: "Here it is:\n```json\n{\"decision\": \"reject\", \"recommendation\": 2}\n```\nThanks, {\"decision\": \"accept\"}"},
			decision: "reject", rec: 2, source: "fenced_json"},
		{name: "fence without language", reply: a2acall.Reply{Text: "```\n{\"decision\": \"weak accept\", \"recommendation\": 3.5}\n```"},
			decision: "accept", rec: 3.5, source: "fenced_json"},
		{name: "python fence skipped", reply: a2acall.Reply{Text: "```python\nx = {'decision': 'accept'}\n```\nverdict: {\"decision\": \"rejected\"}"},
			decision: "reject", source: "json"},
		{name: "recommendation off scale ignored", reply: a2acall.Reply{Text: `{"decision": "accept", "recommendation": 8}`},
			decision: "accept", source: "json"},
		{name: "bare word", reply: a2acall.Reply{Text: "After careful thought we would Reject this paper."}, decision: "reject", source: "word"},
		{name: "bare word accepted", reply: a2acall.Reply{Text: "Accepted."}, decision: "accept", source: "word"},
		{name: "both words", reply: a2acall.Reply{Text: "Could accept or reject, unsure."}, err: "both accept and reject"},
		{name: "acceptable is not accept", reply: a2acall.Reply{Text: "The writing is acceptable."}, err: "neither"},
		{name: "garbage", reply: a2acall.Reply{Text: "lorem ipsum {not json"}, err: "neither"},
		{name: "empty", reply: a2acall.Reply{}, err: "empty"},
		{name: "decision not a string", reply: a2acall.Reply{Text: `{"decision": true}`}, err: "not a string"},
		{name: "decision unknown", reply: a2acall.Reply{Text: `{"decision": "maybe"}`}, err: `"maybe"`},
		{name: "the prompt echoed back", reply: a2acall.Reply{Text: coordAnswerForm}, err: "both"},
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
	reqs  []a2acall.SendRequest
	reply *a2acall.Reply
	err   error
}

func (f *coordFakeSender) Send(_ context.Context, req a2acall.SendRequest) (*a2acall.Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return f.reply, f.err
}

// coordTestTask returns the task of the ground truth entry for a paper.
func coordTestTask(t *testing.T, s *Scenario, venue, id string) (scenario.Task, *Task) {
	t.Helper()
	tasks, err := s.Tasks(&scenario.Request{Participants: map[string]string{"a": "http://x"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ct := task.Data.(*Task)
		if ct.Scenario.Paper.Venue == venue && ct.Scenario.Paper.ID == id {
			return task, ct
		}
	}
	t.Fatalf("no task for %s/%s", venue, id)
	return scenario.Task{}, nil
}

func TestCoordinationRunRequest(t *testing.T) {
	s := newCoordForTest(t, Options{MaxReviewChars: 300})
	task, ct := coordTestTask(t, s, "iclr_2017", "305")
	var progress []string
	env := &scenario.TaskEnv{
		Request: &scenario.Request{
			Participants: map[string]string{"coordinator": "http://127.0.0.1:9/coordinator", "reviewer": "http://127.0.0.1:9/r"},
			Config:       scenario.RequestConfig{EntryRole: "coordinator"},
		},
		Progress: func(s string) { progress = append(progress, s) },
	}
	f := &coordFakeSender{reply: &a2acall.Reply{AgentName: "coordinator", State: "TASK_STATE_COMPLETED",
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
	s := newCoordForTest(t, Options{})
	reject, _ := coordTestTask(t, s, "iclr_2017", "749") // reject, mean 3 of 10 (0.2222)
	derived, _ := coordTestTask(t, s, "acl_2017", "49")  // no decision; 4 of 5 (0.75) derives accept
	env := &scenario.TaskEnv{Request: &scenario.Request{Participants: map[string]string{"only": "http://127.0.0.1:9/"}}}

	for _, tc := range []struct {
		name    string
		task    scenario.Task
		reply   *a2acall.Reply
		err     error
		success bool
		score   float64
		summary []string
	}{
		{"correct reject", reject, &a2acall.Reply{Data: []map[string]any{{"decision": "reject", "recommendation": 2.0}}}, nil,
			true, 0.9917, []string{"expected reject", "answered reject"}},
		{"wrong decision keeps the recommendation term", reject, &a2acall.Reply{Text: `{"decision": "accept", "recommendation": 5}`}, nil,
			false, 0.0667, []string{"answered accept"}},
		{"bare word, no recommendation", reject, &a2acall.Reply{Text: "reject"}, nil, true, 0.7, []string{"no usable recommendation"}},
		{"derived decision", derived, &a2acall.Reply{Text: `{"decision": "accept", "recommendation": 4}`}, nil, true, 1, []string{"expected accept"}},
		{"messenger error", reject, nil, errors.New("dial tcp 127.0.0.1:9: connection refused"), false, 0,
			[]string{"did not answer", "connection refused"}},
		{"failed task", reject, &a2acall.Reply{State: "TASK_STATE_FAILED", Text: "LLM quota exceeded"}, nil, false, 0,
			[]string{"state failed", "LLM quota exceeded"}},
		{"garbage", reject, &a2acall.Reply{State: "completed", Text: strings.Repeat("blah ", 500)}, nil, false, 0,
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
	if _, err := s.run(context.Background(), env, f, scenario.Task{ID: "nope"}); err == nil || !strings.Contains(err.Error(), "valid ids") {
		t.Errorf("unknown task: %v", err)
	}
	two := &scenario.TaskEnv{Request: &scenario.Request{Participants: map[string]string{"a": "http://a", "b": "http://b"}}}
	if _, err := s.run(context.Background(), two, f, reject); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("two participants, no entry_role: %v", err)
	}
	if _, err := s.Run(context.Background(), &scenario.TaskEnv{Request: env.Request}, reject); err == nil {
		t.Error("Run without a messenger must fail")
	}
	if len(f.reqs) != 0 {
		t.Errorf("sent %d messages for tasks that could not run", len(f.reqs))
	}
}

func TestCoordinationTitlesOnly(t *testing.T) {
	s := newCoordForTest(t, Options{TitlesOnly: true})
	if s.PeerReadDir() != "" {
		t.Errorf("PeerReadDir() = %q", s.PeerReadDir())
	}
	task, ct := coordTestTask(t, s, "iclr_2017", "305")
	if ct.Paper != nil {
		t.Fatal("a paper was loaded")
	}
	f := &coordFakeSender{reply: &a2acall.Reply{Text: `{"decision": "accept", "recommendation": 5}`}}
	env := &scenario.TaskEnv{Request: &scenario.Request{Participants: map[string]string{"a": "http://a"}}}
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

// TestNewWithPapers: papers given in memory (Options.Papers) are checked
// as PeerRead's are: a paper that says otherwise than its entry, an entry
// without a paper, or an entry the ground truth's rules refuse is an error.
func TestNewWithPapers(t *testing.T) {
	builtIn, err := groundtruth.Default()
	if err != nil {
		t.Fatal(err)
	}
	sc := builtIn.Scenarios[0]
	one := func(e groundtruth.Entry) *groundtruth.GroundTruth {
		return &groundtruth.GroundTruth{Schema: groundtruth.Schema, Scenarios: []groundtruth.Entry{e}}
	}
	accepted := sc.Paper.Decision != nil && *sc.Paper.Decision == groundtruth.DecisionAccept
	paper := func(title string) map[string]*Paper {
		return map[string]*Paper{sc.ID: {Venue: sc.Paper.Venue, Split: sc.Paper.Split, ID: sc.Paper.ID, Title: title, Abstract: "An abstract.",
			Accepted: &accepted, Scale: sc.Paper.RecommendationScale, MeanRecommendation: sc.Paper.MeanRecommendation,
			NormalizedRecommendation: sc.Paper.NormalizedRecommendation, ScoredReviews: sc.Paper.ScoredReviews}}
	}
	s, err := New(Options{GroundTruth: one(sc), Papers: paper(sc.Paper.Title)})
	if err != nil {
		t.Fatalf("a paper that matches its entry: %v", err)
	}
	_, task := coordTestTask(t, s, sc.Paper.Venue, sc.Paper.ID)
	if task.Paper == nil || s.PeerReadDir() != "" {
		t.Errorf("task %+v, PeerRead dir %q", task, s.PeerReadDir())
	}
	if text, _ := s.ReviewRequest(task); !strings.Contains(text, "An abstract.") {
		t.Errorf("the request does not carry the abstract:\n%s", text)
	}
	if _, err := New(Options{GroundTruth: one(sc), Papers: paper("Another Title")}); err == nil || !strings.Contains(err.Error(), "Another Title") {
		t.Errorf("a paper with another title: %v", err)
	}
	if _, err := New(Options{GroundTruth: one(sc), Papers: map[string]*Paper{}}); err == nil || !strings.Contains(err.Error(), "no paper given") {
		t.Errorf("an entry without a paper: %v", err)
	}
	bad := sc
	bad.Topology.Entry = "nobody"
	if _, err := New(Options{GroundTruth: one(bad), Papers: paper(sc.Paper.Title)}); err == nil {
		t.Error("an entry agent outside the topology was accepted")
	}
}
