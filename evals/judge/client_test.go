package judge

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Content that is not JSON fails the schema, is retried once, and the
// rule-based judge answers; the tokens both attempts spent are counted.
func TestJudgeMalformedJSONFallsBack(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(`{"overall_score": 0.5, "reasoning": "cut off`))
	r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), judgeInputs())
	if r.Source != SourceRules {
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
	r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), judgeInputs())
	if r.Source != SourceRules || f.requests.Load() != 2 {
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
	r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), judgeInputs())
	if r.Source != SourceLLM || r.Attempts != 2 || len(r.AttemptErrors) != 1 {
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
	r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), judgeInputs())
	if r.Source != SourceLLM {
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
	r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), judgeInputs())
	if r.Source != SourceRules || r.FallbackReason != "API error: 500 Internal Server Error: boom" {
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
	r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), judgeInputs())
	if r.Source != SourceRules || f.requests.Load() != 1 {
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
	// Long enough for each request to reach the server at a tenth of a
	// core; the server's silence, not the machine, ends each attempt.
	cfg.LLM.Timeout = 2 * time.Second
	start := time.Now()
	r := judgeEval(t, New(Options{Config: cfg}), judgeTrace(), judgeInputs())
	elapsed := time.Since(start)
	if r.Source != SourceRules || r.FallbackReason != "timeout after 2s" {
		t.Fatalf("source %q reason %q", r.Source, r.FallbackReason)
	}
	if f.requests.Load() != 2 || r.Attempts != 2 {
		t.Errorf("requests %d attempts %d, want 2", f.requests.Load(), r.Attempts)
	}
	// Each attempt waited its whole timeout: a floor only, which no
	// machine's speed can break.
	if elapsed < 2*cfg.LLM.Timeout {
		t.Errorf("took %v, want two %v timeouts", elapsed, cfg.LLM.Timeout)
	}
	for i := range 2 {
		select {
		case <-released:
		case <-time.After(time.Minute):
			t.Fatalf("handler %d still blocked after the client gave up", i+1)
		}
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
			r := judgeEval(t, New(Options{Config: cfg}), judgeTrace(), judgeInputs())
			if c.wantErr == "" {
				if r.Source != SourceLLM {
					t.Fatalf("rejected: %s", r.FallbackReason)
				}
				if r.FailureModes[0].Mode != ModePrematureTermination || r.CoordinationQuality != "good" {
					t.Errorf("not normalised: %+v %q", r.FailureModes, r.CoordinationQuality)
				}
				return
			}
			if r.Source != SourceRules || !strings.Contains(r.FallbackReason, c.wantErr) {
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
