package green

import (
	"context"
	"math"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

const instrumentationName = "github.com/coordbench/coordbench/green"

// Metric and attribute names of the evaluation metrics.
const (
	MetricEvaluation = "coordbench.evaluation.value"
	attrMetric       = attribute.Key("coordbench.metric")
)

// EvalTelemetry turns evaluator runs into HOST spans and metric points.
type EvalTelemetry struct {
	tracer trace.Tracer
	gauge  metric.Float64Gauge
}

// NewEvalTelemetry uses the given providers; a nil meter provider records no
// metrics.
func NewEvalTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*EvalTelemetry, error) {
	t := &EvalTelemetry{tracer: tp.Tracer(instrumentationName)}
	if mp != nil {
		g, err := mp.Meter(instrumentationName).Float64Gauge(MetricEvaluation,
			metric.WithDescription("An evaluator's headline number for one task, by evaluator and metric."))
		if err != nil {
			return nil, err
		}
		t.gauge = g
	}
	return t, nil
}

// Observer returns an evals.Observer that runs each evaluator of one task
// inside a HOST span carrying its headline numbers, and records those numbers
// as gauge points with task, evaluator and metric attributes. Cardinality is
// bounded: an evaluator's headline keys are a fixed set, and tasks per
// assessment are few.
func (t *EvalTelemetry) Observer(taskID string) evals.Observer {
	return func(ctx context.Context, e evals.Evaluator) (context.Context, func(evals.Result, error)) {
		ctx, span := t.tracer.Start(ctx, otelmap.SpanEvaluatorPrefix+e.Name(),
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(
				otelmap.AttrCallType.String(string(tracedata.CallHost)),
				otelmap.AttrEvaluator.String(e.Name()),
				otelmap.AttrTaskID.String(taskID),
			))
		return ctx, func(res evals.Result, err error) {
			defer span.End()
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				return
			}
			if res == nil {
				return
			}
			headline := res.Headline()
			keys := make([]string, 0, len(headline))
			for k := range headline {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				v := headline[k]
				if math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				span.SetAttributes(attribute.Float64("coordbench."+e.Name()+"."+k, v))
				if t.gauge != nil {
					t.gauge.Record(ctx, v, metric.WithAttributes(
						otelmap.AttrEvaluator.String(e.Name()),
						attrMetric.String(k),
						otelmap.AttrTaskID.String(taskID),
					))
				}
			}
		}
	}
}

// ChatObserver records each LLM call of the judge as a `chat {model}` TOOL
// span with the GenAI token-usage attributes.
func (t *EvalTelemetry) ChatObserver() judge.ChatObserver { return chatObserver{t.tracer} }

type chatObserver struct{ tracer trace.Tracer }

func (c chatObserver) StartChat(ctx context.Context, model string) (context.Context, func(judge.ChatUsage, error)) {
	ctx, span := c.tracer.Start(ctx, otelmap.SpanChatPrefix+model,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			otelmap.AttrCallType.String(string(tracedata.CallTool)),
			otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
			otelmap.AttrGenAIRequestModel.String(model),
		))
	return ctx, func(u judge.ChatUsage, err error) {
		defer span.End()
		span.SetAttributes(
			otelmap.AttrGenAIInputTokens.Int64(u.InputTokens),
			otelmap.AttrGenAIOutputTokens.Int64(u.OutputTokens),
		)
		if u.ResponseModel != "" {
			span.SetAttributes(otelmap.AttrGenAIResponseModel.String(u.ResponseModel))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
}
