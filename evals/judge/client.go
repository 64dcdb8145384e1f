package judge

// The judge's chat call: one attempt under its own timeout, observed, the
// failure classified for the retry, and the answer checked against the schema.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/coordbench/coordbench/internal/textutil"
)

// attemptFailure is why one attempt produced no usable answer.
type attemptFailure struct {
	reason string
	// retry says whether the second attempt may do better.
	retry bool
	// wait is the pause before that retry.
	wait time.Duration
}

// judgeAnswer is a validated answer.
type judgeAnswer struct {
	OverallScore        float64
	CoordinationQuality string
	Reasoning           string
	Strengths           []string
	Weaknesses          []string
	FailureModes        []FailureMode
}

// attempt makes one chat call under its own timeout, observed, and
// validates the answer.
func (j *Judge) attempt(ctx context.Context, chat *openai.ChatCompletionService, params openai.ChatCompletionNewParams) (judgeAnswer, ChatUsage, *attemptFailure) {
	done := func(ChatUsage, error) {}
	callCtx := ctx
	if j.observer != nil {
		callCtx, done = j.observer.StartChat(ctx, j.cfg.LLM.Model)
	}
	attemptCtx, cancel := context.WithTimeout(callCtx, j.cfg.LLM.Timeout)
	defer cancel()

	var usage ChatUsage
	resp, err := chat.New(attemptCtx, params)
	if err != nil {
		fail := classifyChatError(ctx, attemptCtx, err, j.cfg)
		done(usage, fmt.Errorf("judge: chat completion: %w", err))
		return judgeAnswer{}, usage, fail
	}
	usage = ChatUsage{
		InputTokens:   resp.Usage.PromptTokens,
		OutputTokens:  resp.Usage.CompletionTokens,
		ResponseModel: resp.Model,
	}
	ans, err := parseJudgeAnswer(resp)
	if err != nil {
		err = fmt.Errorf("answer failed the schema: %w", err)
		done(usage, err)
		return judgeAnswer{}, usage, &attemptFailure{reason: err.Error(), retry: true}
	}
	done(usage, nil)
	return ans, usage, nil
}

// classifyChatError turns a failed call into a fallback reason and decides
// whether it is worth the retry: timeouts, transport errors, 408, 409, 429
// and 5xx are; other 4xx (a bad key, a bad request) will not improve, and a
// caller that gave up must not be kept waiting.
func classifyChatError(parent, attemptCtx context.Context, err error, cfg Config) *attemptFailure {
	if parent.Err() != nil {
		return &attemptFailure{reason: judgeContextEnded(parent.Err())}
	}
	var netErr net.Error
	if errors.Is(attemptCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &netErr) && netErr.Timeout() {
		return &attemptFailure{reason: "timeout after " + cfg.LLM.Timeout.String(), retry: true}
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		reason := "API error: " + strconv.Itoa(apiErr.StatusCode)
		if text := http.StatusText(apiErr.StatusCode); text != "" {
			reason += " " + text
		}
		if msg := judgeRedact(strings.TrimSpace(apiErr.Message), cfg.LLM.APIKey); msg != "" {
			reason += ": " + judgeTruncate(msg, 300)
		}
		code := apiErr.StatusCode
		retry := code == http.StatusRequestTimeout || code == http.StatusConflict ||
			code == http.StatusTooManyRequests || code >= 500
		wait := cfg.RetryDelay
		if apiErr.Response != nil {
			if d, ok := judgeRetryAfter(apiErr.Response.Header.Get("Retry-After")); ok {
				wait = min(d, cfg.LLM.Timeout)
			}
		}
		return &attemptFailure{reason: reason, retry: retry, wait: wait}
	}
	return &attemptFailure{
		reason: "transport error: " + judgeTruncate(judgeRedact(err.Error(), cfg.LLM.APIKey), 300),
		retry:  true,
		wait:   cfg.RetryDelay,
	}
}

// judgeContextEnded is the fallback reason when the caller's context ended.
func judgeContextEnded(err error) string { return "request context ended: " + err.Error() }

// judgeRetryAfter parses a Retry-After header given in seconds.
func judgeRetryAfter(h string) (time.Duration, bool) {
	secs, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// judgeRedact keeps the API key out of reasons, which end up in results and logs.
func judgeRedact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

func judgeSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// judgeSchema is the answer's JSON schema, in OpenAI's strict subset: every
// property required, no additional properties, and no numeric bounds (not
// every compatible endpoint accepts them; parseJudgeAnswer checks the range).
// Properties are ordered reasoning first and score last because strict
// decoding emits them in schema order, so the model argues before it scores.
var judgeSchema = mustJudgeSchema()

func mustJudgeSchema() json.RawMessage {
	labels := make([]string, len(mastModes))
	for i, m := range mastModes {
		labels[i] = m.Label
	}
	modes, _ := json.Marshal(labels)
	qualities, _ := json.Marshal(coordinationQualities)
	s := `{"type":"object","additionalProperties":false,
"required":["reasoning","strengths","weaknesses","failure_modes","coordination_quality","overall_score"],
"properties":{
 "reasoning":{"type":"string","description":"how the agents coordinated and why the score, citing the trace"},
 "strengths":{"type":"array","items":{"type":"string"}},
 "weaknesses":{"type":"array","items":{"type":"string"}},
 "failure_modes":{"type":"array","items":{"type":"object","additionalProperties":false,
  "required":["mode","evidence"],
  "properties":{"mode":{"type":"string","enum":` + string(modes) + `},
   "evidence":{"type":"string","description":"what in the trace shows it: agents, steps, errors"}}}},
 "coordination_quality":{"type":"string","enum":` + string(qualities) + `},
 "overall_score":{"type":"number","description":"0 (no useful coordination) to 1 (excellent)"}}}`
	raw := json.RawMessage(s)
	if !json.Valid(raw) {
		panic("judge: invalid answer schema")
	}
	return raw
}

// judgeParams is the chat request: temperature 0 for repeatable verdicts,
// the strict schema for a parseable answer.
func judgeParams(model, system, user string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: shared.ChatModel(model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(system),
			openai.UserMessage(user),
		},
		Temperature: openai.Float(0),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:        "coordination_verdict",
					Description: openai.String("A verdict on how well the agents in one trace coordinated."),
					Strict:      openai.Bool(true),
					Schema:      judgeSchema,
				},
			},
		},
	}
}

// rawJudgeAnswer tells absent fields from zero ones.
type rawJudgeAnswer struct {
	OverallScore        *float64 `json:"overall_score"`
	Reasoning           *string  `json:"reasoning"`
	CoordinationQuality *string  `json:"coordination_quality"`
	Strengths           []string `json:"strengths"`
	Weaknesses          []string `json:"weaknesses"`
	FailureModes        []struct {
		Mode     *string `json:"mode"`
		Evidence *string `json:"evidence"`
	} `json:"failure_modes"`
}

// parseJudgeAnswer checks the answer against the schema ourselves: a
// compatible endpoint may ignore strict mode, and even OpenAI's strict mode
// leaves the score's range to us. Unknown extra fields are ignored; a
// markdown code fence around the JSON is tolerated.
func parseJudgeAnswer(resp *openai.ChatCompletion) (judgeAnswer, error) {
	if len(resp.Choices) == 0 {
		return judgeAnswer{}, errors.New("no choices in the response")
	}
	msg := resp.Choices[0].Message
	if msg.Refusal != "" {
		return judgeAnswer{}, fmt.Errorf("the model refused: %s", judgeTruncate(msg.Refusal, 200))
	}
	content := judgeStripFence(msg.Content)
	if content == "" {
		return judgeAnswer{}, fmt.Errorf("empty content (finish_reason %q)", resp.Choices[0].FinishReason)
	}
	if !strings.HasPrefix(content, "{") {
		return judgeAnswer{}, fmt.Errorf("content is not a JSON object: starts with %q", judgeTruncate(content, 20))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &raw); err != nil {
		return judgeAnswer{}, fmt.Errorf("content is not a JSON object: %w", err)
	}
	var problems []string
	for _, k := range []string{"overall_score", "reasoning", "coordination_quality", "strengths", "weaknesses", "failure_modes"} {
		if v, ok := raw[k]; !ok || string(v) == "null" {
			problems = append(problems, k+" missing")
		}
	}
	var a rawJudgeAnswer
	if err := json.Unmarshal([]byte(content), &a); err != nil {
		problems = append(problems, err.Error())
		return judgeAnswer{}, errors.New(strings.Join(problems, "; "))
	}
	out := judgeAnswer{
		Strengths:    judgeNonNil(a.Strengths),
		Weaknesses:   judgeNonNil(a.Weaknesses),
		FailureModes: []FailureMode{},
	}
	if s := a.OverallScore; s != nil {
		if math.IsNaN(*s) || *s < 0 || *s > 1 {
			problems = append(problems, fmt.Sprintf("overall_score %g out of range [0,1]", *s))
		}
		out.OverallScore = *s
	}
	if a.Reasoning != nil {
		out.Reasoning = strings.TrimSpace(*a.Reasoning)
		if out.Reasoning == "" {
			problems = append(problems, "reasoning empty")
		}
	}
	if q := a.CoordinationQuality; q != nil {
		out.CoordinationQuality = strings.ToLower(strings.TrimSpace(*q))
		if !slices.Contains(coordinationQualities, out.CoordinationQuality) {
			problems = append(problems, fmt.Sprintf("coordination_quality %q not one of %s", *q, strings.Join(coordinationQualities, ", ")))
		}
	}
	for i, fm := range a.FailureModes {
		var f FailureMode
		switch {
		case fm.Mode == nil:
			problems = append(problems, fmt.Sprintf("failure_modes[%d].mode missing", i))
		default:
			label, ok := canonicalMode(*fm.Mode)
			if !ok {
				problems = append(problems, fmt.Sprintf("failure_modes[%d].mode %q is not a MAST failure mode", i, *fm.Mode))
			}
			f.Mode = label
		}
		if fm.Evidence == nil || strings.TrimSpace(*fm.Evidence) == "" {
			problems = append(problems, fmt.Sprintf("failure_modes[%d].evidence missing", i))
		} else {
			f.Evidence = strings.TrimSpace(*fm.Evidence)
		}
		out.FailureModes = append(out.FailureModes, f)
	}
	if len(problems) > 0 {
		return judgeAnswer{}, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

func judgeNonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// judgeStripFence removes a ```json ... ``` wrapper some endpoints add when
// they do not support response_format.
func judgeStripFence(s string) string {
	if body, ok := textutil.Unfence(s); ok {
		return body
	}
	return strings.TrimSpace(s)
}
