// Package langfuse is the convention family of Langfuse's JS/TS SDK v4/v5
// (@langfuse/tracing), built on OpenTelemetry: an application wraps its
// own work in observations (startObservation, startActiveObservation,
// observe), each one span whose langfuse.observation.type is the type the
// application gave it (asType); "langfuse" in coverage.recognized. The
// Python SDK was not read: whether it writes the same keys is unchecked.
// Decided from @langfuse/tracing and @langfuse/core 5.11.1
// (dist/index.mjs, LangfuseOtelSpanAttributes; the observation types of
// LangfuseObservationType in dist/index.d.ts) and checked on the captures
// of the live corpus's langfuse program (@langfuse/openai 5.11.1,
// @langfuse/otel 5.11.1):
//
//   - agent is an agent's run. Langfuse names an observation by the span's
//     name and writes no attribute with it, so the span name names the
//     agent (span.name); an agent observation named "" names no agent
//     (an unnamed agent: unread, never a step).
//   - generation and embedding are model calls (@langfuse/openai's
//     observeOpenAI makes a generation for every OpenAI client call);
//     tool and retriever are tool calls. A specialist run from the
//     coordinator's code is the specialist's agent observation nested in
//     the coordinator's (directly, or in one of its tool observations):
//     the call is read by nesting, as every in-process delegation is.
//   - span, chain, event, evaluator and guardrail are the application's
//     own work: neither step nor call.
//   - A type this family does not know leaves the span unread: its
//     langfuse.observation.* keys are then counted as an agent namespace
//     (internal/agentns), never silently dropped.
//
// The family claims a span only by langfuse.observation.type. The
// LangfuseSpanProcessor writes langfuse.environment, langfuse.release and
// the propagated langfuse.trace.* attributes on every span it sees, an
// HTTP or database span included: those say nothing of what the span is
// and are not read. Errors are the span's status, set by the SDK when the
// observation's level is ERROR (read as every span's).
package langfuse

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the Langfuse family.
var Family recognize.Family = family{}

type family struct{}

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name:       "langfuse",
		Keys:       []recognize.Key{recognize.Exact("langfuse.observation.type", 0)},
		Identities: []recognize.Identity{{Label: tracedata.IdentitySpanName, Tier: recognize.NameSpanName}},
		Unnamed:    "a Langfuse agent observation with an empty name",
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// Langfuse observation kinds.
const (
	kindNone uint8 = iota
	kindAgent
	kindLLM
	kindTool
	kindWork  // the application's own work: span, chain, event, evaluator, guardrail
	kindOther // a type this family does not know
)

// reader is the observation kind of one span.
type reader struct{ kind uint8 }

func (l *reader) Reset() { l.kind = kindNone }

func (l *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, _ uint8) {
	r.Claim()
	switch recognize.Quiet(kv) {
	case "agent":
		l.kind = kindAgent
	case "generation", "embedding":
		l.kind = kindLLM
	case "tool", "retriever":
		l.kind = kindTool
	case "span", "chain", "event", "evaluator", "guardrail":
		l.kind = kindWork
	default:
		l.kind = kindOther
	}
}

func (l *reader) Decide(r *recognize.Reading, sp *otelmap.Span) {
	w := recognize.Word{Understood: l.kind != kindOther}
	switch l.kind {
	case kindAgent:
		w.Op, w.Unnamed = recognize.OpInvoke, sp.Name == ""
		r.Name(0, sp.Name)
	case kindLLM:
		w.Op = recognize.OpLLM
	case kindTool:
		w.Op = recognize.OpTool
	}
	r.Say(recognize.TierFramework, w)
}
