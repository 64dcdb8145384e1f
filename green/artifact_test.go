package green

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/tracedata"
)

// artifactTestResult is a small result with one assessed task and one
// that did not run.
func artifactTestResult() *report.Result {
	score, maxScore, pass, used := 50.0, 100.0, 0.5, 1.25
	return &report.Result{
		Schema: report.Schema, Domain: "coordination",
		Score: &score, MaxScore: &maxScore, PassRate: &pass, TimeUsed: &used,
		Inputs: []string{"agent=http://127.0.0.1:9019/"},
		Tasks: []report.TaskResult{
			{
				TaskID:  "paper-1",
				TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
				Agents: []tracedata.Agent{
					{Name: "coordbench-green", Role: tracedata.RoleAssessor},
					{Name: "coordinator"}, {Name: "reviewer <1>"},
				},
				Interactions: []tracedata.Interaction{
					{From: "coordbench-green", To: "coordinator", Count: 1},
					{From: "coordinator", To: "reviewer <1>", Count: 2, Errors: 1},
				},
				Steps:   []tracedata.Step{},
				Outcome: &evals.Outcome{Success: true, Score: 1, Summary: "expected accept, answered accept"},
			},
			notRun(scenario.Task{ID: "paper-2"}, errNotRunForTest),
		},
		Warnings: []string{"a <warning> & more"},
	}
}

var errNotRunForTest = &scenario.RequestError{Err: errString("the assessment deadline of 1s passed")}

type errString string

func (e errString) Error() string { return string(e) }

func TestResultArtifact(t *testing.T) {
	res := artifactTestResult()
	art, err := ResultArtifact(res)
	if err != nil {
		t.Fatalf("ResultArtifact: %v", err)
	}
	if art.Name != ResultArtifactName || art.ID == "" || len(art.Parts) != 2 {
		t.Fatalf("artifact = %+v", art)
	}
	md := art.Parts[0].Text()
	if md == "" || json.Valid([]byte(md)) || art.Parts[0].MediaType != MediaTypeMarkdown {
		t.Errorf("first part is not Markdown: %q", md)
	}
	for _, want := range []string{"# coordbench result: coordination", "**Score: 50 / 100**", "```mermaid", `n_coordinator -->|"2 calls, 1 error"| n_reviewer__1_`, "not run"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	data, ok := art.Parts[1].Data().(map[string]any)
	if !ok || art.Parts[1].MediaType != MediaTypeJSON {
		t.Fatalf("second part = %T %q", art.Parts[1].Data(), art.Parts[1].MediaType)
	}
	want, _ := json.Marshal(res)
	got, _ := json.Marshal(data)
	var a, b any
	_ = json.Unmarshal(want, &a)
	_ = json.Unmarshal(got, &b)
	wantJSON, _ := json.Marshal(a)
	gotJSON, _ := json.Marshal(b)
	if string(wantJSON) != string(gotJSON) {
		t.Errorf("data part differs from the result's JSON:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	for _, k := range []string{"schema", "domain", "score", "max_score", "pass_rate", "time_used", "tasks"} {
		if _, ok := data[k]; !ok {
			t.Errorf("data lacks %q", k)
		}
	}

	// What a 0.3 client receives: a text part and a data part holding an
	// object, as the Python SDK's DataPart requires.
	legacy := a2av0.FromV1Artifact(art)
	raw, err := json.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Name  string `json:"name"`
		Parts []struct {
			Kind string         `json:"kind"`
			Text string         `json:"text"`
			Data map[string]any `json:"data"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatalf("0.3 artifact: %v: %s", err, raw)
	}
	if wire.Name != ResultArtifactName || len(wire.Parts) != 2 || wire.Parts[0].Kind != "text" || wire.Parts[1].Kind != "data" || wire.Parts[1].Data["schema"] != report.Schema {
		t.Errorf("0.3 artifact = %s", raw)
	}

	ev, err := ResultArtifactEvent(a2a.TaskInfo{TaskID: "t1", ContextID: "c1"}, res)
	if err != nil || ev.TaskID != "t1" || ev.ContextID != "c1" || !ev.LastChunk || ev.Append || ev.Artifact.Name != ResultArtifactName {
		t.Errorf("event = %+v, %v", ev, err)
	}
	if _, err := ResultArtifact(nil); err == nil {
		t.Error("a nil result made an artifact")
	}
}

func TestAgentBeatsResultsFile(t *testing.T) {
	file := AgentBeatsResults{Participants: map[string]string{"agent": "http://127.0.0.1:9019/"}, Results: []*report.Result{artifactTestResult()}}
	raw, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Participants map[string]string `json:"participants"`
		Results      []map[string]any  `json:"results"`
	}
	if err := json.Unmarshal(raw, &back); err != nil || back.Participants["agent"] == "" || len(back.Results) != 1 || back.Results[0]["score"] != 50.0 {
		t.Errorf("results file = %s (%v)", raw, err)
	}
}

func TestScoreResult(t *testing.T) {
	res := &report.Result{Tasks: []report.TaskResult{
		{Outcome: &evals.Outcome{Success: true, Score: 1}},
		{Outcome: &evals.Outcome{Success: false, Score: 0.35}},
		{Outcome: &evals.Outcome{Success: false, Score: 7}}, // clamped to 1
		{},
	}}
	scoreResult(res, timeNowForTest())
	if *res.Score != round(100*(1+0.35+1)/4, 2) || *res.PassRate != 0.25 || *res.MaxScore != 100 || *res.TimeUsed < 0 {
		t.Errorf("score %v pass %v max %v time %v", *res.Score, *res.PassRate, *res.MaxScore, *res.TimeUsed)
	}
}

func TestNewAgentCardURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://green:9009":          "http://green:9009/",
		"http://green:9009/":         "http://green:9009/",
		"https://gw.example/green":   "https://gw.example/green",
		"https://gw.example/green/a": "https://gw.example/green/a",
	} {
		card := NewAgentCard(CardOptions{URL: in})
		for _, iface := range card.SupportedInterfaces {
			if iface.URL != want {
				t.Errorf("%s: interface URL %q, want %q", in, iface.URL, want)
			}
		}
		if card.Name != DefaultAgentName || card.Version != Version || !card.Capabilities.Streaming {
			t.Errorf("card = %+v", card)
		}
	}
}

func timeNowForTest() time.Time { return time.Now() }
