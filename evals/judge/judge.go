package judge

// The judge evaluator asks an LLM to read the trace the way a reviewer would:
// numbers from the graph and latency evaluators say what happened, the judge
// says whether it was good coordination and names failures in the MAST
// taxonomy. An LLM is optional and fallible, so every path that does not end
// in a valid answer hands over to the rule-based judge (rules.go) and
// says so in the result and the log: a score is never silently made up.
//
// This file holds the configuration, the result and Evaluate; the prompt is
// built in prompt.go, and the chat call and its answer are handled in
// client.go.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/tracedata"
)

// Name is the judge's result key.
const Name = "judge"

// Defaults for the judge's own bounds (the endpoint's defaults are
// llmconfig's).
const (
	DefaultMaxPromptBytes = 48 << 10
	DefaultRetryDelay     = time.Second
	// MinPromptBytes is the smallest prompt bound honoured: below it the
	// fixed instructions alone would not fit.
	MinPromptBytes = 8 << 10
)

// judgeAttempts is one call plus exactly one retry: enough to ride out a
// rate limit or a flaky answer, few enough that a dead endpoint costs at
// most two timeouts before the rule-based judge answers.
const judgeAttempts = 2

// Values of Result.Source.
const (
	SourceLLM   = "llm"
	SourceRules = "rule-based"
)

// Config configures the judge: the endpoint it asks and its own bounds. The
// judge reads nothing else: whoever builds it reads the environment, once
// (llmconfig.FromEnv).
type Config struct {
	// LLM is the OpenAI-compatible endpoint; without an API key the
	// rule-based judge answers without any request. Its Timeout bounds
	// each attempt (not the two together).
	LLM llmconfig.Config
	// MaxPromptBytes bounds system plus user prompt; default
	// DefaultMaxPromptBytes, at least MinPromptBytes.
	MaxPromptBytes int
	// RetryDelay is the pause before the retry after a 429, a 5xx or a
	// transport error (a Retry-After header, capped at the LLM's Timeout,
	// wins); default DefaultRetryDelay. Timeouts and bad answers are retried
	// at once.
	RetryDelay time.Duration
}

// Validate reports a configuration the judge cannot use: an endpoint
// llmconfig rejects (a base URL that is not an http(s) URL, a negative
// timeout), or a negative bound. A judge built from such a configuration
// makes no request; the rule-based judge answers and its result gives this
// error as the reason. Zero fields are valid (defaults).
func (c Config) Validate() error {
	if err := c.LLM.Validate(); err != nil {
		return err
	}
	switch {
	case c.MaxPromptBytes < 0:
		return fmt.Errorf("judge: negative prompt bound %d", c.MaxPromptBytes)
	case c.RetryDelay < 0:
		return fmt.Errorf("judge: negative retry delay %v", c.RetryDelay)
	}
	return nil
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	c.LLM = c.LLM.WithDefaults()
	if c.MaxPromptBytes <= 0 {
		c.MaxPromptBytes = DefaultMaxPromptBytes
	}
	c.MaxPromptBytes = max(c.MaxPromptBytes, MinPromptBytes)
	if c.RetryDelay <= 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	return c
}

// Options configure New.
type Options struct {
	// Config is the endpoint and the bounds; the zero value has no API key,
	// so the rule-based judge answers.
	Config Config
	// ChatObserver, when set, wraps each chat call (the green agent records
	// each as a span).
	ChatObserver ChatObserver
	// Logger receives the warning each time the rule-based judge answers
	// instead of the LLM; nil discards it.
	Logger *slog.Logger
}

// ChatUsage is what one chat call consumed, for the observer's span.
type ChatUsage struct {
	InputTokens  int64
	OutputTokens int64
	// ResponseModel is the model the endpoint says answered; empty when no
	// answer came.
	ResponseModel string
}

// ChatObserver wraps each chat call of the judge, so the green agent can
// record it as a "chat {model}" TOOL span with token usage without evals
// importing OpenTelemetry. StartChat is called before each attempt and
// returns the context to send the request in and a function called once
// when the attempt ends, with the usage and the attempt's error (a transport
// or API error, or the reason the answer was rejected).
type ChatObserver interface {
	StartChat(ctx context.Context, model string) (context.Context, func(ChatUsage, error))
}

// Judge is the judge evaluator. Build it with New and hand it to
// evals.NewRegistry (Options.Judge);
// it is safe for concurrent use.
type Judge struct {
	cfg Config // with the defaults filled
	// invalid is cfg's Validate error: the reason no request is made.
	invalid  error
	observer ChatObserver
	log      *slog.Logger
}

// New returns a judge asking the endpoint opts.Config names, each chat
// call wrapped by opts.ChatObserver, logging to opts.Logger.
func New(opts Options) *Judge {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Judge{
		cfg:      opts.Config.withDefaults(),
		invalid:  opts.Config.Validate(),
		observer: opts.ChatObserver,
		log:      log,
	}
}

// Name implements evals.Evaluator.
func (j *Judge) Name() string { return Name }

// Tier implements evals.Evaluator: the judge runs after the graph (tier 1) and
// latency (tier 2) evaluators, so it can read the graph's findings and the
// latency numbers.
func (j *Judge) Tier() int { return 3 }

// MASTMode is one failure mode of the MAST taxonomy of multi-agent system
// failures (Cemri et al., "Why Do Multi-Agent LLM Systems Fail?", 2025).
type MASTMode struct {
	// Label is the value of FailureMode.Mode: code and name.
	Label string
	// Category is the taxonomy's top level.
	Category string
	// Definition is what the prompt tells the model.
	Definition string
}

// The MAST categories.
const (
	MASTSpecification = "specification issues"
	MASTMisalignment  = "inter-agent misalignment"
	MASTVerification  = "task verification"
)

// The failure mode labels, as the schema's enum and the results spell them.
const (
	ModeDisobeyTaskSpec      = "FM-1.1 disobey task specification"
	ModeDisobeyRoleSpec      = "FM-1.2 disobey role specification"
	ModeStepRepetition       = "FM-1.3 step repetition"
	ModeLossOfHistory        = "FM-1.4 loss of conversation history"
	ModeUnawareOfTermination = "FM-1.5 unaware of termination conditions"
	ModeConversationReset    = "FM-2.1 conversation reset"
	ModeFailToClarify        = "FM-2.2 fail to ask for clarification"
	ModeTaskDerailment       = "FM-2.3 task derailment"
	ModeInfoWithholding      = "FM-2.4 information withholding"
	ModeIgnoredInput         = "FM-2.5 ignored other agent's input"
	ModeReasoningAction      = "FM-2.6 reasoning-action mismatch"
	ModePrematureTermination = "FM-3.1 premature termination"
	ModeNoVerification       = "FM-3.2 no or incomplete verification"
	ModeIncorrectVerify      = "FM-3.3 incorrect verification"
)

var mastModes = []MASTMode{
	{ModeDisobeyTaskSpec, MASTSpecification, "an agent ignores the task's constraints or requirements"},
	{ModeDisobeyRoleSpec, MASTSpecification, "an agent acts outside its assigned role"},
	{ModeStepRepetition, MASTSpecification, "work or messages repeated without progress"},
	{ModeLossOfHistory, MASTSpecification, "context from earlier turns is lost or ignored"},
	{ModeUnawareOfTermination, MASTSpecification, "agents do not recognise when to stop, or keep going past it"},
	{ModeConversationReset, MASTMisalignment, "a dialogue restarts unexpectedly, losing progress"},
	{ModeFailToClarify, MASTMisalignment, "an agent proceeds on unclear input instead of asking"},
	{ModeTaskDerailment, MASTMisalignment, "the work drifts away from the task's objective"},
	{ModeInfoWithholding, MASTMisalignment, "an agent holds back information others needed, or takes no part"},
	{ModeIgnoredInput, MASTMisalignment, "an agent disregards what another agent told it"},
	{ModeReasoningAction, MASTMisalignment, "what an agent says it will do differs from what it does"},
	{ModePrematureTermination, MASTVerification, "the work ends before the task is done, e.g. a call fails or an agent never answers"},
	{ModeNoVerification, MASTVerification, "results go out unchecked or checked only in part"},
	{ModeIncorrectVerify, MASTVerification, "a check is made but is wrong"},
}

// MASTModes returns the failure modes the judge may name, in taxonomy order.
func MASTModes() []MASTMode { return slices.Clone(mastModes) }

// canonicalMode maps a mode as a model wrote it to its label: the exact
// label, or any text starting with a known code ("FM-3.1", "fm-3.1
// Premature Termination"), since endpoints without strict schema support
// paraphrase names. Unknown codes are rejected.
func canonicalMode(s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, m := range mastModes {
		code, _, _ := strings.Cut(m.Label, " ")
		if s == m.Label || strings.EqualFold(s, code) || judgeHasPrefixFold(s, code+" ") || judgeHasPrefixFold(s, code+":") {
			return m.Label, true
		}
	}
	return "", false
}

func judgeHasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// The coordination_quality values, best first.
var coordinationQualities = []string{"excellent", "good", "fair", "poor"}

// FailureMode is one MAST failure mode the judge saw, with what in the trace
// shows it.
type FailureMode struct {
	Mode     string `json:"mode"`
	Evidence string `json:"evidence"`
}

// Usage is the tokens the judge's LLM calls consumed, summed over
// attempts.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// PromptInfo says how much of the trace the prompt carried.
type PromptInfo struct {
	Bytes         int  `json:"bytes"`
	StepsIncluded int  `json:"steps_included"`
	StepsOmitted  int  `json:"steps_omitted"`
	Truncated     bool `json:"truncated"`
}

// ScoreAdjustment is one rule the rule-based judge applied.
type ScoreAdjustment struct {
	Rule   string  `json:"rule"`
	Delta  float64 `json:"delta"`
	Detail string  `json:"detail"`
}

// Result is the judge's verdict. The answer fields (overall_score to
// failure_modes) have the same meaning whichever judge answered; Source says
// which one did and FallbackReason why the LLM did not.
type Result struct {
	// Source is SourceLLM or SourceRules.
	Source string `json:"source"`
	// FallbackReason says why the rule-based judge answered, e.g. "no
	// AGENTBEATS_LLM_API_KEY" or "timeout after 1m0s".
	FallbackReason string `json:"fallback_reason,omitempty"`
	// Model is the model asked; empty when no request was made.
	Model string `json:"model,omitempty"`
	// ResponseModel is the model the endpoint says answered.
	ResponseModel string `json:"response_model,omitempty"`
	// Usage is the tokens consumed by all attempts, when any were reported.
	Usage *Usage `json:"usage,omitempty"`
	// Attempts counts the chat requests made (0, 1 or 2).
	Attempts int `json:"attempts"`
	// AttemptErrors says why each failed attempt failed, in order.
	AttemptErrors []string `json:"attempt_errors,omitempty"`
	// Prompt describes the prompt sent, when one was.
	Prompt *PromptInfo `json:"prompt,omitempty"`

	OverallScore        float64       `json:"overall_score"`
	CoordinationQuality string        `json:"coordination_quality"`
	Reasoning           string        `json:"reasoning"`
	Strengths           []string      `json:"strengths"`
	Weaknesses          []string      `json:"weaknesses"`
	FailureModes        []FailureMode `json:"failure_modes"`
	// Adjustments are the rule-based judge's score terms, in order applied.
	Adjustments []ScoreAdjustment `json:"adjustments,omitempty"`
}

// Headline implements evals.Result: the score, whether an LLM gave it (so a
// dashboard can tell the two apart), and how many failure modes were named.
func (r *Result) Headline() map[string]float64 {
	llm := 0.0
	if r.Source == SourceLLM {
		llm = 1
	}
	return map[string]float64{
		"overall_score": r.OverallScore,
		"llm":           llm,
		"failure_modes": float64(len(r.FailureModes)),
	}
}

// Evaluate implements evals.Evaluator. It asks the LLM when a key is configured
// and falls back to the rule-based judge otherwise; it fails only without a
// trace.
func (j *Judge) Evaluate(ctx context.Context, trace *tracedata.TraceData, in evals.Inputs) (evals.Result, error) {
	if trace == nil {
		return nil, errors.New("judge: no trace")
	}
	cfg := j.cfg
	res := &Result{}
	if !cfg.LLM.Enabled() {
		return j.fallback(ctx, trace, in, res, "no "+llmconfig.EnvAPIKey), nil
	}
	if j.invalid != nil {
		// A configuration error: no request could succeed, so none is made.
		return j.fallback(ctx, trace, in, res, j.invalid.Error()), nil
	}

	system, user, info := buildJudgePrompt(trace, in, cfg.MaxPromptBytes)
	res.Model = cfg.LLM.Model
	res.Prompt = &info
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.LLM.APIKey),
		option.WithBaseURL(cfg.LLM.BaseURL),
		// Retries are ours: exactly one, counted and observed.
		option.WithMaxRetries(0),
	}
	if cfg.LLM.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.LLM.HTTPClient))
	}
	// A bare service, not openai.NewClient: the client would also pick up
	// OPENAI_* variables, and the judge answers to its configuration only.
	chat := openai.NewChatCompletionService(opts...)
	params := judgeParams(cfg.LLM.Model, system, user)

	var reason string
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		ans, usage, fail := j.attempt(ctx, &chat, params)
		if usage.InputTokens != 0 || usage.OutputTokens != 0 {
			if res.Usage == nil {
				res.Usage = &Usage{}
			}
			res.Usage.InputTokens += usage.InputTokens
			res.Usage.OutputTokens += usage.OutputTokens
		}
		if fail == nil {
			res.Source = SourceLLM
			res.ResponseModel = usage.ResponseModel
			res.OverallScore = ans.OverallScore
			res.CoordinationQuality = ans.CoordinationQuality
			res.Reasoning = ans.Reasoning
			res.Strengths = ans.Strengths
			res.Weaknesses = ans.Weaknesses
			res.FailureModes = ans.FailureModes
			return res, nil
		}
		reason = fail.reason
		res.AttemptErrors = append(res.AttemptErrors, fail.reason)
		if !fail.retry || attempt == judgeAttempts {
			break
		}
		j.log.InfoContext(ctx, "judge: attempt failed, retrying", "trace_id", trace.TraceID,
			"attempt", attempt, "reason", fail.reason)
		if err := judgeSleep(ctx, fail.wait); err != nil {
			reason = judgeContextEnded(err)
			break
		}
	}
	return j.fallback(ctx, trace, in, res, reason), nil
}

// fallback fills res with the rule-based verdict and logs why.
func (j *Judge) fallback(ctx context.Context, trace *tracedata.TraceData, in evals.Inputs, res *Result, reason string) *Result {
	v := ruleJudge(trace, in)
	res.Source = SourceRules
	res.FallbackReason = reason
	res.OverallScore = v.Score
	res.CoordinationQuality = v.Quality
	res.Reasoning = v.Reasoning
	res.Strengths = v.Strengths
	res.Weaknesses = v.Weaknesses
	res.FailureModes = v.FailureModes
	res.Adjustments = v.Adjustments
	j.log.WarnContext(ctx, "judge: rule-based judge answers instead of the LLM", "trace_id", trace.TraceID,
		"reason", reason, "attempts", res.Attempts, "score", v.Score)
	return res
}
