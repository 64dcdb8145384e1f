package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
func judgeTestConfig(f *judgeFakeLLM) JudgeConfig {
	return JudgeConfig{
		APIKey:     "test-key",
		BaseURL:    f.srv.URL,
		Model:      "judge-model",
		Timeout:    5 * time.Second,
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
func judgeGraphPrior(label string) map[string]Result {
	return map[string]Result{"graph": judgeFakeResult{
		"label": label,
		"findings": []any{map[string]any{
			"kind": "bottleneck", "agents": []any{"planner"}, "values": map[string]any{"planner": 0.67},
			"threshold": 0.5, "detail": "agent(s) on more than half of the shortest paths between other agents",
		}},
		"metrics": map[string]any{"density": 0.33},
	}}
}

func judgeInputs() Inputs {
	return Inputs{
		Prior:        judgeGraphPrior("bottleneck"),
		Outcome:      &Outcome{Success: true, Score: 0.8, Summary: "tests passed 4/5"},
		Participants: []string{"coder", "planner", "reviewer"},
	}
}

func judgeEval(t *testing.T, j *Judge, trace *tracedata.TraceData, in Inputs) *JudgeResult {
	t.Helper()
	res, err := j.Evaluate(context.Background(), trace, in)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	jr, ok := res.(*JudgeResult)
	if !ok {
		t.Fatalf("result is %T, want *JudgeResult", res)
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
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())

	if r.Source != JudgeSourceLLM || r.FallbackReason != "" {
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

// A trace far over the bound is cut to it, with the marker counting the
// steps left out.
func TestJudgePromptTruncatedOverTheBound(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	trace := judgeTrace()
	base := trace.Steps[3]
	for i := range 400 {
		s := base
		s.StepID = fmt.Sprintf("x%d", i)
		s.Input = strings.Repeat("long message ", 100)
		trace.Steps = append(trace.Steps, s)
	}
	cfg := judgeTestConfig(f)
	cfg.MaxPromptBytes = 16 << 10
	r := judgeEval(t, NewJudge(cfg), trace, judgeInputs())
	if r.Source != JudgeSourceLLM {
		t.Fatalf("source %q: %s", r.Source, r.FallbackReason)
	}
	body := f.body(0)
	user := judgeUserPrompt(t, body)
	system := body["messages"].([]any)[0].(map[string]any)["content"].(string)
	if total := len(system) + len(user); total > cfg.MaxPromptBytes {
		t.Errorf("prompt is %d bytes, bound %d", total, cfg.MaxPromptBytes)
	}
	p := r.Prompt
	if p == nil || !p.Truncated || p.StepsOmitted == 0 || p.StepsIncluded+p.StepsOmitted != len(trace.Steps) {
		t.Fatalf("prompt info = %+v", p)
	}
	marker := fmt.Sprintf("[truncated: %d more steps]", p.StepsOmitted)
	if !strings.HasSuffix(strings.TrimSpace(user), marker) {
		t.Errorf("prompt does not end with %q:\n...%s", marker, user[max(0, len(user)-300):])
	}
	// Each message is capped too, and says by how much.
	if !strings.Contains(user, "…[+900 bytes]") {
		t.Errorf("long message not capped with its size")
	}
}

// The bound holds whatever is big: many steps, huge evaluator results, many
// agents, a tiny bound.
func TestJudgePromptBound(t *testing.T) {
	big := judgeTrace()
	for i := range 300 {
		big.Agents = append(big.Agents, tracedata.Agent{Name: fmt.Sprintf("agent-%03d", i), Steps: 1})
		big.Interactions = append(big.Interactions, tracedata.Interaction{From: "planner", To: fmt.Sprintf("agent-%03d", i), Count: 1})
		big.Steps = append(big.Steps, tracedata.Step{StepID: fmt.Sprintf("b%d", i), CallType: tracedata.CallAgent,
			Name: "call", Agent: fmt.Sprintf("agent-%03d", i), Caller: "planner", Input: strings.Repeat("é", 500), Error: strings.Repeat("x", 1000)})
	}
	huge := judgeFakeResult{"blob": strings.Repeat("y", 200<<10)}
	for _, bound := range []int{MinJudgePromptBytes, 16 << 10, DefaultJudgeMaxPromptBytes} {
		in := judgeInputs()
		in.Prior["huge"] = huge
		system, user, info := buildJudgePrompt(big, in, bound)
		if got := len(system) + len(user); got > bound || info.Bytes != got {
			t.Errorf("bound %d: prompt %d bytes (info %d)", bound, got, info.Bytes)
		}
		if !info.Truncated || !strings.Contains(user, "more steps]") {
			t.Errorf("bound %d: no truncation marker (%+v)", bound, info)
		}
		for _, want := range []string{"more agents]", "more interactions]", "bytes of evaluator results]", "more failed steps]"} {
			if !strings.Contains(user, want) {
				t.Errorf("bound %d: no %q marker", bound, want)
			}
		}
		if strings.Contains(user, "prompt cut at") {
			t.Errorf("bound %d: sections overran their shares", bound)
		}
		if !strings.Contains(user, "# Trace trace-1") {
			t.Errorf("bound %d: header lost", bound)
		}
	}
	// A bound below the minimum is raised to it.
	if got := (JudgeConfig{MaxPromptBytes: 100}).withDefaults().MaxPromptBytes; got != MinJudgePromptBytes {
		t.Errorf("MaxPromptBytes 100 -> %d, want %d", got, MinJudgePromptBytes)
	}
}

// Content that is not JSON fails the schema, is retried once, and the
// rule-based judge answers; the tokens both attempts spent are counted.
func TestJudgeMalformedJSONFallsBack(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(`{"overall_score": 0.5, "reasoning": "cut off`))
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceRules {
		t.Fatalf("source %q, want rule-based", r.Source)
	}
	if !strings.HasPrefix(r.FallbackReason, "answer failed the schema: content is not a JSON object") {
		t.Errorf("reason = %q", r.FallbackReason)
	}
	if f.requests.Load() != 2 || r.Attempts != 2 || len(r.AttemptErrors) != 2 {
		t.Errorf("requests %d attempts %d errors %v, want 2", f.requests.Load(), r.Attempts, r.AttemptErrors)
	}
	if r.Usage == nil || r.Usage.InputTokens != 2400 || r.Usage.OutputTokens != 300 {
		t.Errorf("usage = %+v, want both attempts summed", r.Usage)
	}
	want := ruleJudge(judgeTrace(), judgeInputs())
	if r.OverallScore != want.Score || len(r.Adjustments) == 0 {
		t.Errorf("score %v, want the rule-based %v", r.OverallScore, want.Score)
	}
	if h := r.Headline(); h["llm"] != 0 {
		t.Errorf("headline llm = %v", h["llm"])
	}
}

func TestJudgeSchemaViolationFallsBack(t *testing.T) {
	bad := strings.NewReplacer(`"overall_score": 0.72`, `"overall_score": 1.7`,
		`"FM-3.1 premature termination"`, `"FM-9.9 bad vibes"`).Replace(judgeGoodAnswer)
	f := newJudgeFakeLLM(t, judgeOK(bad))
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceRules || f.requests.Load() != 2 {
		t.Fatalf("source %q after %d requests, want rule-based after 2", r.Source, f.requests.Load())
	}
	for _, want := range []string{"answer failed the schema: ", "overall_score 1.7 out of range [0,1]",
		`failure_modes[0].mode "FM-9.9 bad vibes" is not a MAST failure mode`} {
		if !strings.Contains(r.FallbackReason, want) {
			t.Errorf("reason %q lacks %q", r.FallbackReason, want)
		}
	}
}

// A bad first answer is retried, and a good second one is used.
func TestJudgeSchemaViolationThenGoodAnswer(t *testing.T) {
	f := newJudgeFakeLLM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		content := judgeGoodAnswer
		if n == 1 {
			content = `{"overall_score": 0.5}`
		}
		judgeWriteJSON(w, http.StatusOK, judgeCompletion(content, 100, 10))
	})
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceLLM || r.Attempts != 2 || len(r.AttemptErrors) != 1 {
		t.Fatalf("source %q attempts %d errors %v", r.Source, r.Attempts, r.AttemptErrors)
	}
	if !strings.Contains(r.AttemptErrors[0], "reasoning missing") {
		t.Errorf("attempt error = %q", r.AttemptErrors[0])
	}
}

func TestJudgeRetriesAfter429(t *testing.T) {
	f := newJudgeFakeLLM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			judgeWriteJSON(w, http.StatusTooManyRequests, judgeAPIError("Rate limit reached"))
			return
		}
		judgeWriteJSON(w, http.StatusOK, judgeCompletion(judgeGoodAnswer, 1200, 150))
	})
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceLLM {
		t.Fatalf("source %q: %s", r.Source, r.FallbackReason)
	}
	if f.requests.Load() != 2 || r.Attempts != 2 {
		t.Errorf("requests %d attempts %d, want 2", f.requests.Load(), r.Attempts)
	}
	if len(r.AttemptErrors) != 1 || r.AttemptErrors[0] != "API error: 429 Too Many Requests: Rate limit reached" {
		t.Errorf("attempt errors = %q", r.AttemptErrors)
	}
}

func TestJudge500TwiceFallsBack(t *testing.T) {
	f := newJudgeFakeLLM(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		judgeWriteJSON(w, http.StatusInternalServerError, judgeAPIError("boom"))
	})
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceRules || r.FallbackReason != "API error: 500 Internal Server Error: boom" {
		t.Fatalf("source %q reason %q", r.Source, r.FallbackReason)
	}
	if f.requests.Load() != 2 || r.Attempts != 2 {
		t.Errorf("requests %d attempts %d, want exactly one retry", f.requests.Load(), r.Attempts)
	}
	if r.Usage != nil {
		t.Errorf("usage %+v without any answer", r.Usage)
	}
}

// A rejected key will not get better: no retry, and the key never appears
// in the reason.
func TestJudge401NoRetry(t *testing.T) {
	f := newJudgeFakeLLM(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		judgeWriteJSON(w, http.StatusUnauthorized, judgeAPIError("Incorrect API key provided: test-key"))
	})
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceRules || f.requests.Load() != 1 {
		t.Fatalf("source %q after %d requests, want rule-based after 1", r.Source, f.requests.Load())
	}
	if r.FallbackReason != "API error: 401 Unauthorized: Incorrect API key provided: [redacted]" {
		t.Errorf("reason = %q", r.FallbackReason)
	}
}

// A server that never answers: each attempt ends at the timeout, the
// handler returns when the client gives up, and the rule-based judge answers.
func TestJudgeTimeoutFallsBack(t *testing.T) {
	released := make(chan struct{}, 4)
	f := newJudgeFakeLLM(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		released <- struct{}{}
	})
	cfg := judgeTestConfig(f)
	cfg.Timeout = 200 * time.Millisecond
	start := time.Now()
	r := judgeEval(t, NewJudge(cfg), judgeTrace(), judgeInputs())
	elapsed := time.Since(start)
	if r.Source != JudgeSourceRules || r.FallbackReason != "timeout after 200ms" {
		t.Fatalf("source %q reason %q", r.Source, r.FallbackReason)
	}
	if f.requests.Load() != 2 || r.Attempts != 2 {
		t.Errorf("requests %d attempts %d, want 2", f.requests.Load(), r.Attempts)
	}
	if elapsed < 400*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("took %v, want two 200ms timeouts", elapsed)
	}
	for i := range 2 {
		select {
		case <-released:
		case <-time.After(5 * time.Second):
			t.Fatalf("handler %d still blocked after the client gave up", i+1)
		}
	}
}

// Without a key no request is made, even to a reachable endpoint.
func TestJudgeNoKeyFallsBackWithoutRequest(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	t.Setenv(EnvLLMAPIKey, "")
	t.Setenv(EnvLLMBaseURL, f.srv.URL)
	j := judgeRegistered(t)
	r := judgeEval(t, j, judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceRules || r.FallbackReason != "no AGENTBEATS_LLM_API_KEY" {
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

// The registered judge reads the environment at each Evaluate.
func TestJudgeRegisteredReadsEnv(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	t.Setenv(EnvLLMAPIKey, "env-key")
	t.Setenv(EnvLLMBaseURL, f.srv.URL)
	t.Setenv(EnvLLMModel, "env-model")
	r := judgeEval(t, judgeRegistered(t), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceLLM || r.Model != "env-model" {
		t.Fatalf("source %q model %q: %s", r.Source, r.Model, r.FallbackReason)
	}
	if f.body(0)["model"] != "env-model" || f.headers[0].Get("Authorization") != "Bearer env-key" {
		t.Errorf("request model %v auth %q", f.body(0)["model"], f.headers[0].Get("Authorization"))
	}
	if c := JudgeConfigFromEnv(); c.APIKey != "env-key" || c.BaseURL != f.srv.URL || c.Model != "env-model" {
		t.Errorf("JudgeConfigFromEnv = %+v", c)
	}
	def := (JudgeConfig{}).withDefaults()
	if def.BaseURL != DefaultJudgeBaseURL || def.Model != "gpt-4o-mini" || def.Timeout != 60*time.Second || def.MaxPromptBytes != 48<<10 {
		t.Errorf("defaults = %+v", def)
	}
}

func judgeRegistered(t *testing.T) *Judge {
	t.Helper()
	for _, e := range Default.Evaluators() {
		if e.Name() == JudgeName {
			j, ok := e.(*Judge)
			if !ok || e.Tier() != 2 {
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
	cfg.HTTPClient = &http.Client{Transport: tr}
	j := NewJudge(cfg)
	j.Observer = rec
	r := judgeEval(t, j, judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceLLM {
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

// SetChatObserver covers judges without their own observer; a schema
// failure reaches the observer as the attempt's error.
func TestJudgeSetChatObserver(t *testing.T) {
	rec := &judgeRecorder{}
	SetChatObserver(rec)
	t.Cleanup(func() { SetChatObserver(nil) })
	f := newJudgeFakeLLM(t, judgeOK(`[]`))
	r := judgeEval(t, NewJudge(judgeTestConfig(f)), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceRules || len(rec.ended) != 2 {
		t.Fatalf("source %q observed %d", r.Source, len(rec.ended))
	}
	for _, o := range rec.ended {
		if o.err == nil || !strings.Contains(o.err.Error(), "answer failed the schema") || o.usage.InputTokens != 1200 {
			t.Errorf("observed %+v", o)
		}
	}
}

// A caller that gave up is not kept waiting for a retry; a base URL that
// cannot work costs no request.
func TestJudgeCancelledAndInvalidURL(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := NewJudge(judgeTestConfig(f)).Evaluate(ctx, judgeTrace(), judgeInputs())
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*JudgeResult)
	if r.Source != JudgeSourceRules || r.FallbackReason != "request context ended: context canceled" || r.Attempts != 1 {
		t.Errorf("source %q reason %q attempts %d", r.Source, r.FallbackReason, r.Attempts)
	}
	cfg := judgeTestConfig(f)
	cfg.BaseURL = "localhost:8080/v1"
	r = judgeEval(t, NewJudge(cfg), judgeTrace(), judgeInputs())
	if r.Source != JudgeSourceRules || r.FallbackReason != `invalid AGENTBEATS_LLM_BASE_URL "localhost:8080/v1"` || r.Attempts != 0 {
		t.Errorf("source %q reason %q attempts %d", r.Source, r.FallbackReason, r.Attempts)
	}
	if n := f.requests.Load(); n != 0 {
		t.Errorf("%d requests", n)
	}
}

func TestJudgeNilTrace(t *testing.T) {
	if _, err := NewJudge(JudgeConfig{}).Evaluate(context.Background(), nil, Inputs{}); err == nil {
		t.Error("nil trace accepted")
	}
}

func TestJudgeParseAnswer(t *testing.T) {
	cases := []struct {
		name, content, wantErr string
	}{
		{"good", judgeGoodAnswer, ""},
		{"fenced", "```json\n" + judgeGoodAnswer + "\n```", ""},
		{"code only and case", strings.Replace(strings.Replace(judgeGoodAnswer, `"FM-3.1 premature termination"`, `"fm-3.1"`, 1), `"good"`, `"Good"`, 1), ""},
		{"extra field", strings.Replace(judgeGoodAnswer, `"reasoning"`, `"extra": 1, "reasoning"`, 1), ""},
		{"empty", "", "empty content"},
		{"array", "[]", "not a JSON object"},
		{"missing", `{"overall_score": 0.5}`, "reasoning missing; coordination_quality missing; strengths missing"},
		{"null field", strings.Replace(judgeGoodAnswer, `"strengths": ["clear division of labour"]`, `"strengths": null`, 1), "strengths missing"},
		{"negative", strings.Replace(judgeGoodAnswer, "0.72", "-0.1", 1), "overall_score -0.1 out of range"},
		{"score string", strings.Replace(judgeGoodAnswer, "0.72", `"0.72"`, 1), "overall_score"},
		{"quality", strings.Replace(judgeGoodAnswer, `"good"`, `"superb"`, 1), `coordination_quality "superb"`},
		{"no evidence", strings.Replace(judgeGoodAnswer, `"planner -> coder failed: deadline exceeded"`, `" "`, 1), "failure_modes[0].evidence missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newJudgeFakeLLM(t, judgeOK(c.content))
			cfg := judgeTestConfig(f)
			r := judgeEval(t, NewJudge(cfg), judgeTrace(), judgeInputs())
			if c.wantErr == "" {
				if r.Source != JudgeSourceLLM {
					t.Fatalf("rejected: %s", r.FallbackReason)
				}
				if r.FailureModes[0].Mode != ModePrematureTermination || r.CoordinationQuality != "good" {
					t.Errorf("not normalised: %+v %q", r.FailureModes, r.CoordinationQuality)
				}
				return
			}
			if r.Source != JudgeSourceRules || !strings.Contains(r.FallbackReason, c.wantErr) {
				t.Errorf("source %q reason %q, want %q", r.Source, r.FallbackReason, c.wantErr)
			}
		})
	}
}

func TestJudgeCanonicalMode(t *testing.T) {
	for in, want := range map[string]string{
		ModeStepRepetition:                  ModeStepRepetition,
		"FM-1.3":                            ModeStepRepetition,
		"fm-2.4 Information Withholding":    ModeInfoWithholding,
		"FM-3.3: incorrect verification":    ModeIncorrectVerify,
		"FM-1.1 disobey task specification": ModeDisobeyTaskSpec,
		"FM-3.10 something":                 "",
		"FM-4.1":                            "",
		"premature termination":             "",
	} {
		got, ok := canonicalMode(in)
		if got != want || ok != (want != "") {
			t.Errorf("canonicalMode(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// --- the rule-based judge ---

func judgeRule(t *testing.T, trace *tracedata.TraceData, in Inputs) ruleVerdict {
	t.Helper()
	v := ruleJudge(trace, in)
	sum := 0.0
	for _, a := range v.Adjustments {
		sum += a.Delta
	}
	if want := judgeRound4(judgeClamp01(sum)); v.Score != want {
		t.Errorf("score %v is not the clamped sum of its adjustments %v", v.Score, want)
	}
	if v.Quality != judgeQualityFor(v.Score) {
		t.Errorf("quality %q for score %v", v.Quality, v.Score)
	}
	for _, fm := range v.FailureModes {
		if _, ok := canonicalMode(fm.Mode); !ok || fm.Evidence == "" {
			t.Errorf("failure mode %+v", fm)
		}
	}
	return v
}

func judgeModes(v ruleVerdict) []string {
	var out []string
	for _, fm := range v.FailureModes {
		out = append(out, fm.Mode)
	}
	return out
}

func judgeRules(v ruleVerdict) map[string]float64 {
	out := map[string]float64{}
	for _, a := range v.Adjustments {
		out[a.Rule] = a.Delta
	}
	return out
}

func judgeClose(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A healthy, fully observed, successful run scores its outcome.
func TestJudgeRulesHealthy(t *testing.T) {
	trace := judgeTrace()
	trace.Steps[2].Error = ""
	trace.Interactions[0].Errors = 0
	trace.Coverage.Complete = 1
	in := judgeInputs()
	in.Prior = judgeGraphPrior("healthy")
	in.Outcome = &Outcome{Success: true, Score: 1, Summary: "all tests passed"}
	v := judgeRule(t, trace, in)
	if v.Score != 1 || v.Quality != "excellent" || len(v.FailureModes) != 0 || len(v.Adjustments) != 1 {
		t.Errorf("verdict %+v", v)
	}
	joined := strings.Join(v.Strengths, " | ")
	for _, want := range []string{"the task succeeded (outcome score 1.00): all tests passed", "graph label healthy, density 0.33",
		"all 4 agent calls succeeded", "every call was observed from both sides", "all 3 agents took part"} {
		if !strings.Contains(joined, want) {
			t.Errorf("strengths %q lack %q", joined, want)
		}
	}
}

// The example trace: bottleneck, one of four calls failed, an absent
// participant, 75% coverage.
func TestJudgeRulesPenalties(t *testing.T) {
	in := judgeInputs()
	in.Participants = append(in.Participants, "tester")
	v := judgeRule(t, judgeTrace(), in)
	got := judgeRules(v)
	want := map[string]float64{"outcome": 0.8, "bottleneck": -0.15, "failed_calls": -0.075, "absent_agents": -0.1, "coverage": -0.025}
	if len(got) != len(want) {
		t.Errorf("adjustments %v, want %v", got, want)
	}
	for k, w := range want {
		if !judgeClose(got[k], w) {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	if v.Score != 0.45 || v.Quality != "fair" {
		t.Errorf("score %v %q, want 0.45 fair", v.Score, v.Quality)
	}
	if !slices.Equal(judgeModes(v), []string{ModePrematureTermination, ModeInfoWithholding}) {
		t.Fatalf("modes %v", judgeModes(v))
	}
	if ev := v.FailureModes[0].Evidence; !strings.Contains(ev, "planner -> coder (step s3) failed after 300ms: deadline exceeded") {
		t.Errorf("FM-3.1 evidence %q", ev)
	}
	if ev := v.FailureModes[1].Evidence; !strings.HasPrefix(ev, "tester was named as a participant") {
		t.Errorf("FM-2.4 evidence %q", ev)
	}
	joined := strings.Join(v.Weaknesses, " | ")
	if !strings.Contains(joined, "bottleneck [planner=0.67]: agent(s) on more than half") {
		t.Errorf("bottleneck weakness lacks the graph finding: %q", joined)
	}
	if !strings.HasPrefix(v.Reasoning, "Rule-based verdict: start 0.80 (task succeeded") || !strings.HasSuffix(v.Reasoning, "score 0.45 (fair).") {
		t.Errorf("reasoning %q", v.Reasoning)
	}
}

// No outcome and no calls: a neutral start minus the missing coordination.
func TestJudgeRulesNothingObserved(t *testing.T) {
	trace := &tracedata.TraceData{TraceID: "empty", Coverage: tracedata.Coverage{Complete: 1}}
	v := judgeRule(t, trace, Inputs{Participants: []string{"a", "b"}})
	got := judgeRules(v)
	if !judgeClose(got["outcome"], 0.5) || !judgeClose(got["no_interactions"], -0.3) || !judgeClose(got["absent_agents"], -0.2) {
		t.Errorf("adjustments %v", got)
	}
	if v.Score != 0 || v.Quality != "poor" {
		t.Errorf("score %v %q", v.Score, v.Quality)
	}
	if !slices.Equal(judgeModes(v), []string{ModeInfoWithholding, ModeInfoWithholding}) {
		t.Errorf("modes %v", judgeModes(v))
	}
	joined := strings.Join(v.Weaknesses, " | ")
	for _, want := range []string{"outcome is unknown", "no graph result", "no call between agents"} {
		if !strings.Contains(joined, want) {
			t.Errorf("weaknesses %q lack %q", joined, want)
		}
	}
	// The absent-agent penalty is capped.
	v = judgeRule(t, trace, Inputs{Participants: []string{"a", "b", "c", "d", "e"}})
	if !judgeClose(judgeRules(v)["absent_agents"], ruleAbsentMax) {
		t.Errorf("absent penalty %v, want the cap", judgeRules(v)["absent_agents"])
	}
}

// The same message sent three times is step repetition; a failed task with
// every call successful is missing verification.
func TestJudgeRulesRepetitionAndVerification(t *testing.T) {
	trace := judgeTrace()
	trace.Steps[2].Error = ""
	trace.Interactions[0].Errors = 0
	extra := trace.Steps[3]
	extra.StepID = "s6"
	trace.Steps = append(trace.Steps, extra)
	trace.Interactions[0].Count = 3
	trace.Coverage.Complete = 1
	in := judgeInputs()
	in.Prior = judgeGraphPrior("over-centralised")
	in.Outcome = &Outcome{Success: false, Score: 0.2, Summary: "2 of 5 tests failed"}
	v := judgeRule(t, trace, in)
	if !slices.Equal(judgeModes(v), []string{ModeStepRepetition, ModeNoVerification}) {
		t.Fatalf("modes %v", judgeModes(v))
	}
	if ev := v.FailureModes[0].Evidence; ev != `planner sent coder the same message 3 times: "implement merge sort"` {
		t.Errorf("FM-1.3 evidence %q", ev)
	}
	if ev := v.FailureModes[1].Evidence; !strings.HasSuffix(ev, "2 of 5 tests failed") {
		t.Errorf("FM-3.2 evidence %q", ev)
	}
	got := judgeRules(v)
	if !judgeClose(got["over_centralized"], -0.1) || !judgeClose(got["repetition"], -0.05) {
		t.Errorf("adjustments %v", got)
	}
	if v.Score != 0.05 || v.Quality != "poor" {
		t.Errorf("score %v %q", v.Score, v.Quality)
	}
}

// An isolated label with nobody absent (the agent talked only to the
// assessor) is scored once, with the graph's finding as evidence.
func TestJudgeRulesIsolatedLabel(t *testing.T) {
	in := judgeInputs()
	in.Prior = map[string]Result{"graph": judgeFakeResult{
		"label":    "isolated",
		"findings": []any{map[string]any{"kind": "isolated", "agents": []any{"reviewer"}, "detail": "1 agent(s) neither called nor were called by another measured agent"}},
	}}
	v := judgeRule(t, judgeTrace(), in)
	if !judgeClose(judgeRules(v)["isolated"], ruleIsolatedLabel) || judgeRules(v)["absent_agents"] != 0 {
		t.Errorf("adjustments %v", judgeRules(v))
	}
	var fm *FailureMode
	for i := range v.FailureModes {
		if v.FailureModes[i].Mode == ModeInfoWithholding {
			fm = &v.FailureModes[i]
		}
	}
	if fm == nil || !strings.Contains(fm.Evidence, "isolated [reviewer]: 1 agent(s) neither called") {
		t.Errorf("FM-2.4 = %+v", fm)
	}
}

type judgeUnencodable struct{ C chan int }

func (judgeUnencodable) Headline() map[string]float64 { return nil }

// The graph result is read defensively: any shape, or none.
func TestJudgeRulesGraphShapes(t *testing.T) {
	cases := []struct {
		name  string
		prior map[string]Result
		want  judgeGraphView
	}{
		{"none", nil, judgeGraphView{}},
		{"unencodable", map[string]Result{"graph": judgeUnencodable{}}, judgeGraphView{}},
		{"not an object", map[string]Result{"graph": judgeFakeResult(nil)}, judgeGraphView{}},
		{"string findings, top-level density", map[string]Result{"graph": judgeFakeResult{
			"label": "Over Centralized", "findings": []any{"planner in 80% of calls", 3.5}, "density": 0.1}},
			judgeGraphView{Present: true, Label: "over_centralized", Findings: []string{"planner in 80% of calls", "3.5"}, Density: 0.1, HasDensity: true}},
		{"keyed findings, density object, null metrics", map[string]Result{"graph": judgeFakeResult{
			"label": 7, "findings": map[string]any{"z": "last", "a": map[string]any{"agent": "x"}},
			"metrics": nil, "graph": map[string]any{"density": map[string]any{"value": 0.5}}}},
			judgeGraphView{Present: true, Findings: []string{"a: [x]", "z: last"}, Density: 0.5, HasDensity: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := judgeReadGraph(c.prior)
			if got.Present != c.want.Present || got.Label != c.want.Label || !slices.Equal(got.Findings, c.want.Findings) ||
				got.Density != c.want.Density || got.HasDensity != c.want.HasDensity {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			// Whatever the shape, the judge answers.
			in := judgeInputs()
			in.Prior = c.prior
			judgeRule(t, judgeTrace(), in)
		})
	}
}

// The graph evaluator's real result, when it is registered, is read too.
func TestJudgeRulesReadsGraphEvaluator(t *testing.T) {
	var graph Evaluator
	for _, e := range Default.Evaluators() {
		if e.Name() == "graph" {
			graph = e
		}
	}
	if graph == nil {
		t.Skip("graph evaluator not registered")
	}
	trace := judgeTrace()
	in := judgeInputs()
	res, err := graph.Evaluate(context.Background(), trace, in)
	if err != nil {
		t.Fatalf("graph: %v", err)
	}
	g := judgeReadGraph(map[string]Result{"graph": res})
	if !g.Present || g.Label == "" {
		t.Errorf("graph result read as %+v", g)
	}
}

func TestJudgeRulesDeterministic(t *testing.T) {
	in := judgeInputs()
	in.Participants = []string{"zed", "coder", "alpha", "planner", "reviewer"}
	j := NewJudge(JudgeConfig{})
	var first []byte
	for i := range 5 {
		r := judgeEval(t, j, judgeTrace(), in)
		b, _ := json.Marshal(r)
		if i == 0 {
			first = b
		} else if string(b) != string(first) {
			t.Fatalf("run %d differs:\n%s\n%s", i, b, first)
		}
	}
	var m map[string]any
	_ = json.Unmarshal(first, &m)
	if m["source"] != "rule-based" || m["fallback_reason"] != "no AGENTBEATS_LLM_API_KEY" {
		t.Errorf("result JSON %s", first)
	}
}
