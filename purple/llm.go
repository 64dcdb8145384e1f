package purple

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// The agent's LLM: any OpenAI-compatible chat-completions endpoint, named
// by the same configuration as the green agent's judge (internal/llmconfig,
// AGENTBEATS_LLM_*), so one key configures both. Kept small on purpose:
// one call per question, temperature 0, a JSON object asked for, and the
// rule answers whenever the LLM does not.

// LLM asks one model, each call a `chat <model>` span.
type LLM struct {
	cfg    llmconfig.Config // with the defaults filled
	chat   openai.ChatCompletionService
	tracer trace.Tracer
}

// newLLM returns nil without a key; a malformed base URL is an error, so
// a misconfigured agent does not start rather than answer by rule while
// its operator believes an LLM answers.
func newLLM(cfg llmconfig.Config, tracer trace.Tracer) (*LLM, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(1),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	// A bare service, not openai.NewClient, which would also read the
	// OPENAI_* variables.
	return &LLM{cfg: cfg, chat: openai.NewChatCompletionService(opts...), tracer: tracer}, nil
}

// Model is the model asked.
func (l *LLM) Model() string { return l.cfg.Model }

// Chat asks the model once, asking for a JSON object, and returns the
// answer's text. The call is a `chat <model>` CLIENT span (a TOOL step)
// with the GenAI request and usage attributes and, content capture being
// on for the base purple agent, the messages.
func (l *LLM) Chat(ctx context.Context, system, user string) (string, error) {
	ctx, span := l.tracer.Start(ctx, otelmap.SpanChatPrefix+l.cfg.Model, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	span.SetAttributes(
		otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
		otelmap.AttrGenAIProviderName.String("openai"),
		otelmap.AttrGenAIRequestModel.String(l.cfg.Model),
		otelmap.AttrCallType.String(string(tracedata.CallTool)),
		otelmap.AttrGenAIInputMessages.String(a2acall.GenAIContent("user", system+"\n\n"+user, nil, "")),
	)
	cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	resp, err := l.chat.New(cctx, openai.ChatCompletionNewParams{
		Model: shared.ChatModel(l.cfg.Model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(system),
			openai.UserMessage(user),
		},
		Temperature: openai.Float(0),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		},
	})
	if err != nil {
		errType := "_OTHER"
		var apiErr *openai.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			errType = "timeout"
		case errors.As(err, &apiErr):
			errType = fmt.Sprint(apiErr.StatusCode)
		}
		failSpan(span, err, errType)
		return "", fmt.Errorf("chat %s: %w", l.cfg.Model, err)
	}
	span.SetAttributes(
		otelmap.AttrGenAIResponseModel.String(resp.Model),
		otelmap.AttrGenAIInputTokens.Int64(resp.Usage.PromptTokens),
		otelmap.AttrGenAIOutputTokens.Int64(resp.Usage.CompletionTokens),
	)
	if len(resp.Choices) == 0 {
		err := errors.New("the answer has no choices")
		failSpan(span, err, "no_choices")
		return "", fmt.Errorf("chat %s: %w", l.cfg.Model, err)
	}
	text := resp.Choices[0].Message.Content
	span.SetAttributes(otelmap.AttrGenAIOutputMessages.String(a2acall.GenAIContent("assistant", text, nil, string(resp.Choices[0].FinishReason))))
	return text, nil
}
