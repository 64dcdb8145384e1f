package recognize

import (
	"go.opentelemetry.io/otel/attribute"
)

// Langfuse's JS/TS SDK v4/v5 (@langfuse/tracing), built on OpenTelemetry:
// an application wraps its own work in observations (startObservation,
// startActiveObservation, observe), each one span whose
// langfuse.observation.type is the type the application gave it (asType).
// The Python SDK was not read: whether it writes the same keys is
// unchecked. Decided from
// @langfuse/tracing and @langfuse/core 5.11.1 (dist/index.mjs,
// LangfuseOtelSpanAttributes; the observation types of
// LangfuseObservationType in dist/index.d.ts) and checked on the captures
// of the live corpus's langfuse program:
//
//   - agent is an agent's run. Langfuse names an observation by the span's
//     name and writes no attribute with it, so the span name names the
//     agent (RankSpanName); an agent observation named "" names no agent
//     (an unnamed agent: unread, never a step).
//   - generation and embedding are model calls (@langfuse/openai's
//     observeOpenAI makes a generation for every OpenAI client call);
//     tool and retriever are tool calls. A specialist run from the
//     coordinator's code is the specialist's agent observation nested in
//     the coordinator's (directly, or in one of its tool observations):
//     the call is read by nesting, as every in-process delegation is.
//   - span, chain, event, evaluator and guardrail are the application's
//     own work: neither step nor call.
//   - A type this file does not know leaves the span unread: its
//     langfuse.observation.* keys are then counted as an agent namespace
//     (internal/agentns), never silently dropped.
//
// The family claims a span only by langfuse.observation.type. The
// LangfuseSpanProcessor writes langfuse.environment, langfuse.release and
// the propagated langfuse.trace.* attributes on every span it sees, an
// HTTP or database span included: those say nothing of what the span is
// and are not read. Errors are the span's status, set by the SDK when the
// observation's level is ERROR (read as every span's).

// Langfuse observation kinds.
const (
	lfNone uint8 = iota
	lfAgent
	lfLLM
	lfTool
	lfWork  // the application's own work: span, chain, event, evaluator, guardrail
	lfOther // a type this file does not know
)

// readLangfuse reads langfuse.observation.type.
func (r *Reading) readLangfuse(kv *attribute.KeyValue) {
	r.claim(famLangfuse)
	switch quiet(kv) {
	case "agent":
		r.lf = lfAgent
	case "generation", "embedding":
		r.lf = lfLLM
	case "tool", "retriever":
		r.lf = lfTool
	case "span", "chain", "event", "evaluator", "guardrail":
		r.lf = lfWork
	default:
		r.lf = lfOther
	}
}

// langfuseOperation classifies the span's observation type for decide;
// an agent observation without a name is an unnamed agent.
func (r *Reading) langfuseOperation(name string) Op {
	r.kindRead = r.lf != lfOther
	switch r.lf {
	case lfAgent:
		if name == "" {
			r.UnnamedAgent = true
		}
		return OpInvoke
	case lfLLM:
		return OpLLM
	case lfTool:
		return OpTool
	}
	return OpNone
}
