package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// assessOutput is the part of the result the CLI tests read.
type assessOutput struct {
	Schema string `json:"schema"`
	Tasks  []struct {
		TraceID      string `json:"trace_id"`
		Agents       []struct{ Name string }
		Interactions []struct {
			From, To string
			Count    int
		}
		Steps    []json.RawMessage `json:"steps"`
		Coverage struct {
			Interactions int `json:"interactions"`
			BothSides    int `json:"both_sides"`
		} `json:"coverage"`
		Evaluations struct {
			Graph   map[string]any `json:"graph"`
			Latency map[string]any `json:"latency"`
			Text    map[string]any `json:"text"`
			Judge   map[string]any `json:"judge"`
		} `json:"evaluations"`
	} `json:"tasks"`
}

func assessCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("AGENTBEATS_LLM_API_KEY", "")
	var out, errOut bytes.Buffer
	code = run(append([]string{"assess"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAssessSDKExportedFile(t *testing.T) {
	// Written by the OpenTelemetry SDK's OTLP exporter in its JSON form, one
	// export request per line: two services, coordinator -> reviewer.
	code, stdout, stderr := assessCmd(t, "--otlp", "../../otelmap/testdata/sdk_export.otlp.jsonl")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var res assessOutput
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the result JSON: %v\n%s", err, stdout)
	}
	if res.Schema != "coordbench.result/v2" || len(res.Tasks) == 0 {
		t.Fatalf("schema %q, %d tasks", res.Schema, len(res.Tasks))
	}
	task := res.Tasks[0]
	found := false
	for _, in := range task.Interactions {
		if in.From == "coordinator" && in.To == "reviewer" && in.Count >= 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("no coordinator -> reviewer interaction in %+v", task.Interactions)
	}
	if task.Coverage.BothSides == 0 {
		t.Errorf("coverage %+v: want the call seen from both sides", task.Coverage)
	}
	for name, v := range map[string]map[string]any{"graph": task.Evaluations.Graph, "latency": task.Evaluations.Latency, "text": task.Evaluations.Text, "judge": task.Evaluations.Judge} {
		if v == nil {
			t.Errorf("task has no %s result", name)
		}
	}
	if task.Evaluations.Judge["source"] != "rule-based" {
		t.Errorf("judge source %v, want rule-based without a key", task.Evaluations.Judge["source"])
	}
}

func TestAssessSeveralFilesAndConfig(t *testing.T) {
	code, stdout, stderr := assessCmd(t,
		"--config", `{"evaluators": {"judge": false, "text": false}}`,
		"--otlp", "../../otelmap/testdata/two_agents.otlp.json",
		"../../otelmap/testdata/sdk_export.otlp.jsonl")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var res assessOutput
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) < 2 {
		t.Fatalf("%d tasks, want one per trace of both files", len(res.Tasks))
	}
	for _, task := range res.Tasks {
		if task.Evaluations.Judge != nil || task.Evaluations.Text != nil {
			t.Errorf("task %s: switched-off evaluators still ran", task.TraceID)
		}
		if task.Evaluations.Graph == nil {
			t.Errorf("task %s: graph missing", task.TraceID)
		}
	}
}

func TestAssessOutputFileIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	var outputs []string
	for i := range 2 {
		path := filepath.Join(dir, "out"+string(rune('a'+i))+".json")
		if code, _, stderr := assessCmd(t, "--output", path, "--otlp", "../../otelmap/testdata/two_agents.otlp.json"); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, string(b))
	}
	if outputs[0] != outputs[1] {
		t.Error("the same spans gave different bytes")
	}
}

func TestAssessBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "01"}]}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no files", nil, "no OTLP files"},
		{"missing file", []string{"--otlp", filepath.Join(dir, "nope.json")}, "nope.json"},
		{"invalid id", []string{"--otlp", bad}, "bad.json"},
		{"empty file", []string{"--otlp", empty}, "empty.json"},
		{"bad config", []string{"--config", "{", "--otlp", bad}, "config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := assessCmd(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr: %s", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty on bad input, got %q", stdout)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr, tc.want)
			}
		})
	}
}

// TestAssessConventions: --conventions teaches `green assess` a framework
// no built-in recognizer reads. The framework is VoltAgent's run for real in
// the live corpus with its namespaces renamed (entity.* to acme.*,
// subagent.* to acme_sub.*, span.type to acme.kind): VoltAgent itself is
// built in now, and a framework we never heard of is what a map is for.
// Without the map the capture has no agent; with the map of the live
// corpus's VoltAgent walkthrough, renamed the same way, the team and its two
// delegations. A map with an error stops the command with the error's line,
// before any file is assessed.
func TestAssessConventions(t *testing.T) {
	rename := strings.NewReplacer(`"entity.`, `"acme.`, `"subagent.`, `"acme_sub.`, `"span.type"`, `"acme.kind"`)
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dir := t.TempDir()
	capture := filepath.Join(dir, "acme.otlp.json")
	conv := filepath.Join(dir, "acme.yaml")
	renamedMap := strings.NewReplacer("entity.", "acme.", "subagent.", "acme_sub.", "span.type", "acme.kind").
		Replace(read("../../otelmap/assemble/testdata/conventions/voltagent.yaml"))
	if err := os.WriteFile(capture, []byte(rename.Replace(read("../../otelmap/assemble/testdata/live/voltagent/captures/run-1.otlp.json"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conv, []byte(renamedMap), 0o600); err != nil {
		t.Fatal(err)
	}
	edgesOf := func(stdout string) []string {
		t.Helper()
		var res assessOutput
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Tasks) != 1 {
			t.Fatalf("result: %v, %d tasks\n%s", err, len(res.Tasks), stdout)
		}
		var out []string
		for _, in := range res.Tasks[0].Interactions {
			out = append(out, in.From+"->"+in.To)
		}
		return out
	}
	code, stdout, stderr := assessCmd(t, "--otlp", capture)
	if code != 0 {
		t.Fatalf("without the map: exit %d\n%s", code, stderr)
	}
	if e := edgesOf(stdout); len(e) != 0 {
		t.Errorf("without the map: interactions %v, want none", e)
	}
	code, stdout, stderr = assessCmd(t, "--conventions", conv, "--otlp", capture)
	if code != 0 {
		t.Fatalf("with the map: exit %d\n%s", code, stderr)
	}
	if e := strings.Join(edgesOf(stdout), " "); e != "supervisor->researcher supervisor->writer" {
		t.Errorf("with the map: interactions %s", e)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nrules:\n  - match: {span_name: a}\n    is: agnet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = assessCmd(t, "--conventions", bad, "--otlp", capture)
	if code != 2 || stdout != "" || !strings.Contains(stderr, bad+`:4:9: rules[0].is: "agnet" is not one of`) {
		t.Errorf("bad map: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
