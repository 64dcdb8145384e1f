package main

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/purple"
)

// reviewer is a minimal A2A 1.0 participant of the coordination scenario:
// it accepts every paper.
type reviewer struct{}

func (reviewer) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(`{"decision": "accept", "recommendation": 4}`))
		msg.ContextID = ec.ContextID
		yield(msg, nil)
	}
}

func (reviewer) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func startReviewer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/"
	srv.Config.Handler = reviewerMux(url)
	srv.Start()
	t.Cleanup(srv.Close)
	return url
}

func reviewerMux(url string) *http.ServeMux {
	card := &a2a.AgentCard{
		Name: "cli-reviewer", Description: "accepts everything", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{},
	}
	m := http.NewServeMux()
	m.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	m.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(reviewer{})))
	return m
}

func runGreen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv(llmconfig.EnvAPIKey, "")
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRunCommand(t *testing.T) {
	url := startReviewer(t)
	out := filepath.Join(t.TempDir(), "results.json")
	code, stdout, stderr := runGreen(t, "run", "--participant", "reviewer="+url, "--titles-only",
		// The reviewer exports no spans: no task needs to wait long for them.
		"--config", `{"task_ids": ["iclr2017-305", "iclr2017-749"], "settle_quiet_ms": 50, "settle_max_wait_ms": 500}`, "--output", out)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	// Summary on stderr, JSON on stdout.
	if !strings.Contains(stderr, "# coordbench result: coordination") || !strings.Contains(stderr, "```mermaid") {
		t.Errorf("stderr lacks the summary:\n%s", stderr)
	}
	var res struct {
		Schema   string  `json:"schema"`
		Domain   string  `json:"domain"`
		Score    float64 `json:"score"`
		PassRate float64 `json:"pass_rate"`
		Tasks    []struct {
			TaskID  string `json:"task_id"`
			Outcome struct {
				Success bool `json:"success"`
			} `json:"outcome"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	if res.Schema != "coordbench.result/v2" || res.Domain != "coordination" || len(res.Tasks) != 2 || res.PassRate != 0.5 {
		t.Errorf("result = %+v", res)
	}
	if !res.Tasks[0].Outcome.Success || res.Tasks[1].Outcome.Success {
		t.Errorf("outcomes = %+v (the reviewer accepts; 305 was accepted, 749 rejected)", res.Tasks)
	}

	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Participants map[string]string `json:"participants"`
		Results      []map[string]any  `json:"results"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if file.Participants["reviewer"] != url || len(file.Results) != 1 || file.Results[0]["schema"] != "coordbench.result/v2" {
		t.Errorf("results file = %s", raw)
	}
}

// TestRunCommandWaitsForBatchedSpans: a participant exporting by OTLP to
// `green run`'s receiver through the SDK's batch span processor at its
// default 5 s delay. The run keeps its receiver open while it waits for
// the participant's side of its call, so the trace is whole.
func TestRunCommandWaitsForBatchedSpans(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	otlpAddr := ln.Addr().String()
	ln.Close()
	sys, err := purple.StartSystem(t.Context(), "127.0.0.1", []purple.AgentSpec{{Options: purple.Options{
		Name: "batcher", Role: purple.RoleReviewer, OTLPEndpoint: "http://" + otlpAddr, NoExtension: true,
		ExportInterval: sdktrace.DefaultScheduleDelay * time.Millisecond,
		LLM:            &llmconfig.Config{}, Getenv: func(string) string { return "" },
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	code, stdout, stderr := runGreen(t, "run", "--participant", "reviewer="+sys.Agent("batcher").URL(), "--titles-only",
		"--otlp-addr", otlpAddr, "--config", `{"task_ids": ["iclr2017-305"]}`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	var res struct {
		Tasks []struct {
			Coverage struct {
				BothSides int     `json:"both_sides"`
				Complete  float64 `json:"complete"`
			} `json:"coverage"`
			LateSpans int `json:"late_spans"`
		} `json:"tasks"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].Coverage.BothSides != 1 || res.Tasks[0].Coverage.Complete != 1 || len(res.Warnings) > 0 {
		t.Errorf("result %+v: want the call seen from both sides, no warning", res)
	}
}

func TestRunCommandBadInput(t *testing.T) {
	// Without its data set the SciCode scenario is unavailable, and a request
	// for it is bad input.
	t.Setenv("COORDBENCH_SCICODE_DIR", filepath.Join(t.TempDir(), "no-scicode-here"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "no --participant"},
		{[]string{"run", "--participant", "noequals"}, "want ROLE=URL"},
		{[]string{"run", "--participant", "a=ftp://x"}, "not an http:// or https:// URL"},
		{[]string{"run", "--participant", "a=http://127.0.0.1:1/", "--config", "[1]"}, "config must be a JSON object"},
		{[]string{"run", "--participant", "a=http://127.0.0.1:1/", "--config", `{"scenario": "scicode"}`}, "scenario scicode is not available"},
		{[]string{"run", "--scicode-dir", "/no/such/scicode", "--participant", "a=http://127.0.0.1:1/", "--config", `{"scenario": "scicode"}`}, "/no/such/scicode"},
		{[]string{"run", "--participant", "a=http://127.0.0.1:1/", "--config", "@/no/such/file"}, "read config"},
		{[]string{"run", "--allow-participants", "10.0.0.0/8", "--participant", "a=http://127.0.0.1:1/"}, `participant "a": host "127.0.0.1" is not among the allowed participants`},
		{[]string{"run", "--allow-participants", "10.0.0.0/33", "--participant", "a=http://127.0.0.1:1/"}, "not a CIDR prefix"},
	} {
		code, _, stderr := runGreen(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr lacks %q:\n%s", tc.args, code, tc.want, stderr)
		}
	}
}
