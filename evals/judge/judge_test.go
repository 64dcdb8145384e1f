package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/tracedata"
)

// judgeFakeLLM is an OpenAI-compatible chat-completions endpoint: it records
// each request's decoded JSON body and answers with the reply function.
type judgeFakeLLM struct {
	srv      *httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	headers  []http.Header
	paths    []string
	requests atomic.Int32
	active   atomic.Int32
	reply    func(n int, w http.ResponseWriter, r *http.Request)
}

func newJudgeFakeLLM(t *testing.T, reply func(n int, w http.ResponseWriter, r *http.Request)) *judgeFakeLLM {
	t.Helper()
	f := &judgeFakeLLM{reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.active.Add(1)
		defer f.active.Add(-1)
		n := int(f.requests.Add(1))
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read request body: %v", err)
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, raw)
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.paths = append(f.paths, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		f.reply(n, w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *judgeFakeLLM) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

// judgeCompletion is a real chat.completion object as OpenAI sends it.
func judgeCompletion(content string, promptTokens, completionTokens int) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{
  "id": "chatcmpl-judgetest",
  "object": "chat.completion",
  "created": 1767225600,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": %s, "refusal": null, "annotations": []},
    "logprobs": null,
    "finish_reason": "stop"
  }],
  "usage": {
    "prompt_tokens": %d, "completion_tokens": %d, "total_tokens": %d,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_judgetest"
}`, c, promptTokens, completionTokens, promptTokens+completionTokens)
}

const judgeGoodAnswer = `{
  "reasoning": "planner split the work between coder and reviewer; one call to coder failed and was retried.",
  "strengths": ["clear division of labour"],
  "weaknesses": ["planner is a hub"],
  "failure_modes": [{"mode": "FM-3.1 premature termination", "evidence": "planner -> coder failed: deadline exceeded"}],
  "coordination_quality": "good",
  "overall_score": 0.72
}`

func judgeWriteJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func judgeOK(content string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		judgeWriteJSON(w, http.StatusOK, judgeCompletion(content, 1200, 150))
	}
}

func judgeAPIError(msg string) string {
	return fmt.Sprintf(`{"error": {"message": %q, "type": "server_error", "param": null, "code": null}}`, msg)
}

// judgeTestConfig points a judge at f with test-sized timeouts.
func judgeTestConfig(f *judgeFakeLLM) Config {
	return Config{
		LLM:        llmconfig.Config{APIKey: "test-key", BaseURL: f.srv.URL, Model: "judge-model", Timeout: 5 * time.Second},
		RetryDelay: time.Millisecond,
	}
}

// judgeTrace is a small trace: user -> planner, planner -> coder twice
// (one failed), planner -> reviewer.
func judgeTrace() *tracedata.TraceData {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	step := func(id, parent string, ct tracedata.CallType, name, caller, agent string, startMS, endMS float64, in, out, errText string) tracedata.Step {
		s, e := t0.Add(time.Duration(startMS*float64(time.Millisecond))), t0.Add(time.Duration(endMS*float64(time.Millisecond)))
		return tracedata.Step{
			StepID: id, TraceID: "trace-1", ParentStepID: parent, CallType: ct, Name: name,
			Caller: caller, Agent: agent, StartTime: s, EndTime: e,
			Latency: int64(endMS - startMS), LatencyMS: endMS - startMS,
			Input: in, Output: out, Error: errText,
		}
	}
	return &tracedata.TraceData{
		TraceID: "trace-1", Start: t0, End: t0.Add(900 * time.Millisecond), DurationMS: 900,
		Steps: []tracedata.Step{
			step("s1", "", tracedata.CallAgent, "a2a message/send", "user", "planner", 0, 900, "Write a sorting function", "Done: merge sort", ""),
			step("s2", "s1", tracedata.CallTool, "chat gpt-4o", "", "planner", 10, 110, "plan the work", "coder writes, reviewer checks", ""),
			step("s3", "s1", tracedata.CallAgent, "a2a message/send", "planner", "coder", 120, 420, "implement merge sort", "", "deadline exceeded"),
			step("s4", "s1", tracedata.CallAgent, "a2a message/send", "planner", "coder", 430, 630, "implement merge sort", "func mergeSort(...)", ""),
			step("s5", "s1", tracedata.CallAgent, "a2a message/send", "planner", "reviewer", 640, 880, "review mergeSort", "looks correct", ""),
		},
		Agents: []tracedata.Agent{
			{Name: "coder", IdentifiedBy: tracedata.IdentityAgentName, Steps: 2, Errors: 1},
			{Name: "planner", IdentifiedBy: tracedata.IdentityAgentName, Steps: 2},
			{Name: "reviewer", IdentifiedBy: tracedata.IdentityAgentName, Steps: 1},
			{Name: "user", IdentifiedBy: tracedata.IdentityUser, Virtual: true},
		},
		Interactions: []tracedata.Interaction{
			{From: "planner", To: "coder", Count: 2, Errors: 1, LatenciesMS: []float64{300, 200}, BothSides: 2},
			{From: "planner", To: "reviewer", Count: 1, LatenciesMS: []float64{240}, BothSides: 1},
			{From: "user", To: "planner", Count: 1, LatenciesMS: []float64{900}, ServerOnly: 1},
		},
		Coverage: tracedata.Coverage{Interactions: 4, BothSides: 3, ServerOnly: 1, Complete: 0.75, Spans: 9},
	}
}

// judgeFakeResult stands in for another evaluator's result: its JSON is the
// map.
type judgeFakeResult map[string]any

func (judgeFakeResult) Headline() map[string]float64 { return map[string]float64{} }

// judgeGraphPrior is shaped like the graph evaluator's JSON.
func judgeGraphPrior(label string) map[string]evals.Result {
	return map[string]evals.Result{"graph": judgeFakeResult{
		"label": label,
		"findings": []any{map[string]any{
			"kind": "bottleneck", "agents": []any{"planner"}, "values": map[string]any{"planner": 0.67},
			"threshold": 0.5, "detail": "agent(s) on more than half of the shortest paths between other agents",
		}},
		"metrics": map[string]any{"density": 0.33},
	}}
}

func judgeInputs() evals.Inputs {
	return evals.Inputs{
		Prior:        judgeGraphPrior("bottleneck"),
		Outcome:      &evals.Outcome{Success: true, Score: 0.8, Summary: "tests passed 4/5"},
		Participants: []string{"coder", "planner", "reviewer"},
	}
}

func judgeEval(t *testing.T, j *Judge, trace *tracedata.TraceData, in evals.Inputs) *Result {
	t.Helper()
	res, err := j.Evaluate(context.Background(), trace, in)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	jr, ok := res.(*Result)
	if !ok {
		t.Fatalf("result is %T, want *Result", res)
	}
	if _, err := json.Marshal(jr); err != nil {
		t.Fatalf("result does not encode: %v", err)
	}
	return jr
}

func judgeUserPrompt(t *testing.T, body map[string]any) string {
	t.Helper()
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages = %v, want system and user", body["messages"])
	}
	var user string
	for i, want := range []string{"system", "user"} {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != want {
			t.Fatalf("messages[%d].role = %v, want %s", i, m["role"], want)
		}
		if i == 1 {
			user, _ = m["content"].(string)
		}
	}
	return user
}

func TestJudgeLLMGoodAnswer(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), judgeInputs())

	if r.Source != SourceLLM || r.FallbackReason != "" {
		t.Fatalf("source %q reason %q, want llm", r.Source, r.FallbackReason)
	}
	if r.Model != "judge-model" || r.ResponseModel != "gpt-4o-mini-2024-07-18" {
		t.Errorf("model %q response model %q", r.Model, r.ResponseModel)
	}
	if r.Usage == nil || r.Usage.InputTokens != 1200 || r.Usage.OutputTokens != 150 {
		t.Errorf("usage = %+v, want 1200/150", r.Usage)
	}
	if r.Attempts != 1 || f.requests.Load() != 1 {
		t.Errorf("attempts %d requests %d, want 1", r.Attempts, f.requests.Load())
	}
	if r.OverallScore != 0.72 || r.CoordinationQuality != "good" || !strings.Contains(r.Reasoning, "planner split") {
		t.Errorf("answer = %v %q %q", r.OverallScore, r.CoordinationQuality, r.Reasoning)
	}
	if len(r.FailureModes) != 1 || r.FailureModes[0].Mode != ModePrematureTermination {
		t.Errorf("failure modes = %+v", r.FailureModes)
	}
	if r.Adjustments != nil {
		t.Errorf("LLM verdict carries rule adjustments: %+v", r.Adjustments)
	}
	h := r.Headline()
	if h["overall_score"] != 0.72 || h["llm"] != 1 || h["failure_modes"] != 1 || len(h) != 3 {
		t.Errorf("headline = %v", h)
	}

	// The request as it went over the wire.
	if f.paths[0] != "POST /chat/completions" {
		t.Errorf("request %q, want POST /chat/completions", f.paths[0])
	}
	if got := f.headers[0].Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	body := f.body(0)
	if body["model"] != "judge-model" {
		t.Errorf("model = %v", body["model"])
	}
	if temp, ok := body["temperature"]; !ok || temp != 0.0 {
		t.Errorf("temperature = %v (present %v), want 0", temp, ok)
	}
	rf, _ := body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || js["name"] != "coordination_verdict" {
		t.Fatalf("response_format = %v", body["response_format"])
	}
	schema, _ := js["schema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for _, k := range []string{"overall_score", "reasoning", "coordination_quality", "strengths", "weaknesses", "failure_modes"} {
		if _, ok := props[k]; !ok {
			t.Errorf("schema lacks %s", k)
		}
	}
	if schema["additionalProperties"] != false {
		t.Errorf("schema allows additional properties")
	}
	modeEnum := props["failure_modes"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)["mode"].(map[string]any)["enum"].([]any)
	if len(modeEnum) != 14 || modeEnum[0] != ModeDisobeyTaskSpec || modeEnum[13] != ModeIncorrectVerify {
		t.Errorf("mode enum = %v", modeEnum)
	}

	user := judgeUserPrompt(t, body)
	for _, want := range []string{
		"# Trace trace-1",
		"success: true, score: 0.80", `"tests passed 4/5"`,
		"- planner -> coder: calls=2 errors=1 avg_ms=250.0 max_ms=300.0",
		"- user (virtual: emitted no span): steps=0 errors=0",
		"complete=0.75",
		`"label":"bottleneck"`, `"planner":0.67`,
		`## Failed steps (1)`, `"deadline exceeded"`,
		`[AGENT] "a2a message/send" planner -> coder | 300.0ms | error="deadline exceeded"`,
		`in: "implement merge sort"`, `out: "func mergeSort(...)"`,
	} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if strings.Contains(user, "[truncated:") {
		t.Errorf("small trace was truncated:\n%s", user)
	}
}

// Without a key no request is made, even to a reachable endpoint.
func TestJudgeNoKeyFallsBackWithoutRequest(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	j := judgeRegistered(t, evals.NewRegistry(evals.Options{Judge: New(Options{Config: Config{LLM: llmconfig.Config{BaseURL: f.srv.URL}}})}))
	r := judgeEval(t, j, judgeTrace(), judgeInputs())
	if r.Source != SourceRules || r.FallbackReason != "no AGENTBEATS_LLM_API_KEY" {
		t.Fatalf("source %q reason %q", r.Source, r.FallbackReason)
	}
	if f.requests.Load() != 0 || r.Attempts != 0 || r.Model != "" || r.Prompt != nil || r.Usage != nil {
		t.Errorf("requests %d attempts %d model %q prompt %v usage %v, want none",
			f.requests.Load(), r.Attempts, r.Model, r.Prompt, r.Usage)
	}
	if r.Reasoning == "" || r.CoordinationQuality == "" || r.Strengths == nil || r.FailureModes == nil {
		t.Errorf("incomplete rule-based verdict: %+v", r)
	}
}

// The registry's judge asks what the configuration llmconfig.FromEnv read
// names; the process environment is not read.
func TestJudgeConfigFromEnv(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	t.Setenv(llmconfig.EnvAPIKey, "process-key")
	env := map[string]string{llmconfig.EnvAPIKey: " env-key ", llmconfig.EnvBaseURL: f.srv.URL, llmconfig.EnvModel: "env-model"}
	cfg := Config{LLM: llmconfig.FromEnv(func(k string) string { return env[k] })}
	r := judgeEval(t, judgeRegistered(t, evals.NewRegistry(evals.Options{Judge: New(Options{Config: cfg})})), judgeTrace(), judgeInputs())
	if r.Source != SourceLLM || r.Model != "env-model" {
		t.Fatalf("source %q model %q: %s", r.Source, r.Model, r.FallbackReason)
	}
	if f.body(0)["model"] != "env-model" || f.headers[0].Get("Authorization") != "Bearer env-key" {
		t.Errorf("request model %v auth %q", f.body(0)["model"], f.headers[0].Get("Authorization"))
	}
	def := (Config{}).withDefaults()
	if def.LLM.BaseURL != llmconfig.DefaultBaseURL || def.LLM.Model != "gpt-4o-mini" || def.LLM.Timeout != 60*time.Second || def.MaxPromptBytes != 48<<10 {
		t.Errorf("defaults = %+v", def)
	}
}

func TestJudgeConfigValidate(t *testing.T) {
	good := []Config{
		{},
		{LLM: llmconfig.Config{APIKey: "k", BaseURL: "http://localhost:8000/v1", Model: "m", Timeout: time.Second}, MaxPromptBytes: 1, RetryDelay: time.Millisecond},
		{LLM: llmconfig.Config{BaseURL: llmconfig.DefaultBaseURL}},
	}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	bad := map[string]Config{
		`invalid AGENTBEATS_LLM_BASE_URL "localhost:8080/v1"`: {LLM: llmconfig.Config{BaseURL: "localhost:8080/v1"}},
		`invalid AGENTBEATS_LLM_BASE_URL "ftp://host/"`:       {LLM: llmconfig.Config{BaseURL: "ftp://host/"}},
		`invalid AGENTBEATS_LLM_BASE_URL "http://"`:           {LLM: llmconfig.Config{BaseURL: "http://"}},
		"negative timeout":     {LLM: llmconfig.Config{Timeout: -time.Second}},
		"negative prompt":      {MaxPromptBytes: -1},
		"negative retry delay": {RetryDelay: -time.Second},
	}
	for want, c := range bad {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v, want %q", c, err, want)
		}
	}
}

// judgeRegistered is the judge reg holds.
func judgeRegistered(t *testing.T, reg *evals.Registry) *Judge {
	t.Helper()
	for _, e := range reg.Evaluators() {
		if e.Name() == Name {
			j, ok := e.(*Judge)
			if !ok || e.Tier() != 3 {
				t.Fatalf("registered judge is %T tier %d", e, e.Tier())
			}
			return j
		}
	}
	t.Fatal("judge not registered")
	return nil
}

type judgeCtxKey struct{}

type judgeObserved struct {
	model string
	usage ChatUsage
	err   error
}

// judgeRecorder is a ChatObserver that tags the context it returns, so the
// test can check the request was sent in it.
type judgeRecorder struct {
	mu      sync.Mutex
	started int
	ended   []judgeObserved
}

func (o *judgeRecorder) StartChat(ctx context.Context, model string) (context.Context, func(ChatUsage, error)) {
	o.mu.Lock()
	o.started++
	n := o.started
	o.mu.Unlock()
	return context.WithValue(ctx, judgeCtxKey{}, n), func(u ChatUsage, err error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.ended = append(o.ended, judgeObserved{model, u, err})
	}
}

type judgeCtxTransport struct {
	mu   sync.Mutex
	seen []any
}

func (tr *judgeCtxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tr.mu.Lock()
	tr.seen = append(tr.seen, r.Context().Value(judgeCtxKey{}))
	tr.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// The observer sees each attempt once, with its usage and error, and the
// request runs in the context it returned, through the configured client.
func TestJudgeObserverPerAttempt(t *testing.T) {
	f := newJudgeFakeLLM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			judgeWriteJSON(w, http.StatusServiceUnavailable, judgeAPIError("overloaded"))
			return
		}
		judgeWriteJSON(w, http.StatusOK, judgeCompletion(judgeGoodAnswer, 1200, 150))
	})
	rec := &judgeRecorder{}
	tr := &judgeCtxTransport{}
	cfg := judgeTestConfig(f)
	cfg.LLM.HTTPClient = &http.Client{Transport: tr}
	j := New(Options{Config: cfg, ChatObserver: rec})
	r := judgeEval(t, j, judgeTrace(), judgeInputs())
	if r.Source != SourceLLM {
		t.Fatalf("source %q: %s", r.Source, r.FallbackReason)
	}
	if rec.started != 2 || len(rec.ended) != 2 {
		t.Fatalf("observer started %d ended %d, want 2 each", rec.started, len(rec.ended))
	}
	first, second := rec.ended[0], rec.ended[1]
	if first.model != "judge-model" || first.err == nil || !strings.Contains(first.err.Error(), "503") || first.usage != (ChatUsage{}) {
		t.Errorf("first attempt observed %+v", first)
	}
	want := ChatUsage{InputTokens: 1200, OutputTokens: 150, ResponseModel: "gpt-4o-mini-2024-07-18"}
	if second.err != nil || second.usage != want {
		t.Errorf("second attempt observed %+v, want usage %+v", second, want)
	}
	if !slices.Equal(tr.seen, []any{1, 2}) {
		t.Errorf("requests ran in contexts %v, want the observer's 1 and 2", tr.seen)
	}
}

// Each registry's judge reports to the observer it was built with, so two
// executors in one process keep their chat calls apart; a schema failure
// reaches the observer as the attempt's error.
func TestJudgeObserverPerRegistry(t *testing.T) {
	recA, recB := &judgeRecorder{}, &judgeRecorder{}
	f := newJudgeFakeLLM(t, judgeOK(`[]`))
	regA := evals.NewRegistry(evals.Options{Judge: New(Options{Config: judgeTestConfig(f), ChatObserver: recA})})
	regB := evals.NewRegistry(evals.Options{Judge: New(Options{Config: judgeTestConfig(f), ChatObserver: recB})})
	r := judgeEval(t, judgeRegistered(t, regA), judgeTrace(), judgeInputs())
	if r.Source != SourceRules || len(recA.ended) != 2 || len(recB.ended) != 0 {
		t.Fatalf("source %q observed A %d B %d, want 2 and 0", r.Source, len(recA.ended), len(recB.ended))
	}
	for _, o := range recA.ended {
		if o.err == nil || !strings.Contains(o.err.Error(), "answer failed the schema") || o.usage.InputTokens != 1200 {
			t.Errorf("observed %+v", o)
		}
	}
	judgeEval(t, judgeRegistered(t, regB), judgeTrace(), judgeInputs())
	if len(recA.ended) != 2 || len(recB.ended) != 2 {
		t.Errorf("observed A %d B %d after B ran, want 2 each", len(recA.ended), len(recB.ended))
	}
}

// The judge and the registry log to the logger they were given: the retry
// and the fallback of the judge, and an evaluator that failed.
func TestJudgeLogsToItsLogger(t *testing.T) {
	var buf bytes.Buffer // the judge logs from the calling goroutine only
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := newJudgeFakeLLM(t, judgeOK(`[]`))
	reg := evals.NewRegistry(evals.Options{Judge: New(Options{Config: judgeTestConfig(f), Logger: log}), Logger: log})
	reg.Run(context.Background(), judgeTrace(), evals.Inputs{Config: evals.Config{Evaluators: map[string]bool{"graph": false, "latency": false, "text": false}}}, nil)
	for _, want := range []string{"judge: attempt failed, retrying", "judge: rule-based judge answers instead of the LLM"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	failing := &evals.Registry{}
	if err := failing.Register(judgeFailingEvaluator{}); err != nil {
		t.Fatal(err)
	}
	failing.Run(context.Background(), nil, evals.Inputs{}, nil) // no logger: discarded, no panic on a nil trace
	reg = evals.NewRegistry(evals.Options{Logger: log})
	if err := reg.Register(judgeFailingEvaluator{}); err != nil {
		t.Fatal(err)
	}
	rep := reg.Run(context.Background(), judgeTrace(), evals.Inputs{Config: evals.Config{Evaluators: map[string]bool{"graph": false, "latency": false, "text": false, Name: false}}}, nil)
	if rep.Errors["failing"] != "always" || !strings.Contains(buf.String(), "evaluator failed") {
		t.Errorf("errors %v, log:\n%s", rep.Errors, buf.String())
	}
}

type judgeFailingEvaluator struct{}

func (judgeFailingEvaluator) Name() string { return "failing" }
func (judgeFailingEvaluator) Tier() int    { return 9 }
func (judgeFailingEvaluator) Evaluate(context.Context, *tracedata.TraceData, evals.Inputs) (evals.Result, error) {
	return nil, errors.New("always")
}

// A caller that gave up is not kept waiting for a retry; a base URL that
// cannot work costs no request.
func TestJudgeCancelledAndInvalidURL(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := New(Options{Config: judgeTestConfig(f)}).Evaluate(ctx, judgeTrace(), judgeInputs())
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	if r.Source != SourceRules || r.FallbackReason != "request context ended: context canceled" || r.Attempts != 1 {
		t.Errorf("source %q reason %q attempts %d", r.Source, r.FallbackReason, r.Attempts)
	}
	cfg := judgeTestConfig(f)
	cfg.LLM.BaseURL = "localhost:8080/v1"
	r = judgeEval(t, New(Options{Config: cfg}), judgeTrace(), judgeInputs())
	if r.Source != SourceRules || r.FallbackReason != `invalid AGENTBEATS_LLM_BASE_URL "localhost:8080/v1"` || r.Attempts != 0 {
		t.Errorf("source %q reason %q attempts %d", r.Source, r.FallbackReason, r.Attempts)
	}
	if n := f.requests.Load(); n != 0 {
		t.Errorf("%d requests", n)
	}
}

func TestJudgeNilTrace(t *testing.T) {
	if _, err := New(Options{Config: Config{}}).Evaluate(context.Background(), nil, evals.Inputs{}); err == nil {
		t.Error("nil trace accepted")
	}
}
