// Package openllmetry is the convention family of OpenLLMetry (Traceloop),
// whose instrumentations for CrewAI, the OpenAI Agents SDK, LangChain,
// LlamaIndex and the LLM clients mark spans with traceloop.span.kind:
// "openllmetry" in coverage.recognized. Checked on the live corpus's
// langchain-subagents-openllmetry-js (@traceloop/node-server-sdk 0.27.0),
// llamaindex (@traceloop/instrumentation-llamaindex 0.27.0) and laminar
// (its bundled @traceloop/instrumentation-openai 0.27.0) programs, and the
// crewai-hierarchical and openai-agents-openllmetry fixtures of
// otelmap/assemble/testdata/frameworks.
//
//   - workflow and task are orchestration: never an agent, not a step
//     (CrewAI's "crewai.workflow" and "<task>.task" spans carry
//     gen_ai.operation.name=invoke_agent without an agent name; the kind
//     says what they are, so it comes before the GenAI standard's
//     operation: recognize.TierInstrumentation);
//   - agent is an agent span, named by gen_ai.agent.name, else
//     traceloop.entity.name;
//   - tool is a tool call;
//   - handoff is a handoff from gen_ai.handoff.from_agent to
//     gen_ai.handoff.to_agent (the OpenAI Agents SDK sets the target after
//     the span starts, so it is often missing: the handoff then goes to the
//     next agent span).
//
// The older LLM client spans carry llm.request.type (chat, completion,
// embedding, rerank) instead of gen_ai.operation.name: an LLM call (read
// by the genai family's previous shapes; claimed here).
//
// Its OpenAI Agents SDK processor (opentelemetry-instrumentation-openai-
// agents 0.62.4, _hooks.py OpenTelemetryTracingProcessor.on_span_start)
// starts every agent span with the trace's workflow span as its parent,
// never the tool span that ran it (Agent.as_tool), so an agent run from
// another agent's tool is recorded beside its caller (runby.go: read on the
// live corpus's openai-agents-astool-openllmetry-py).
package openllmetry

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the OpenLLMetry family.
var Family recognize.Family = family{}

type family struct{}

// Keys.
const (
	keyTraceloop  uint8 = iota // traceloop.*
	keyLLMType                 // llm.request.type
	keyToolResult              // gen_ai.tool.call.result
	keyOutput                  // gen_ai.output.messages
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "openllmetry",
		Keys: []recognize.Key{
			recognize.Prefix("traceloop.", keyTraceloop),
			recognize.Exact("llm.request.type", keyLLMType),
			recognize.Exact("gen_ai.tool.call.result", keyToolResult),
			recognize.Exact("gen_ai.output.messages", keyOutput),
		},
		Identities: []recognize.Identity{{Label: tracedata.IdentityTraceloop, Tier: recognize.NameAttribute}},
		StepKeys:   []recognize.StepKey{{Key: "llm.usage.total_tokens", Is: recognize.StepTotalTokens}},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// OpenLLMetry span kinds.
const (
	kindNone uint8 = iota
	kindWorkflow
	kindAgent
	kindTool
	kindHandoff
	kindOther
)

// reader is what the OpenLLMetry attributes say of one span, and across
// the spans of an assembly what its pass needs (runby.go).
type reader struct {
	kind   uint8
	entity string // traceloop.entity.name
	result string // gen_ai.tool.call.result
	output string // gen_ai.output.messages

	pass runBy
}

func (t *reader) Reset() { t.kind, t.entity, t.result, t.output = kindNone, "", "", "" }

func (t *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keyToolResult:
		t.result = recognize.Quiet(kv)
		return
	case keyOutput:
		t.output = recognize.Quiet(kv)
		return
	}
	r.Claim()
	switch kv.Key {
	case "traceloop.span.kind":
		switch strings.ToLower(recognize.Quiet(kv)) {
		case "workflow", "task":
			t.kind = kindWorkflow
		case "agent":
			t.kind = kindAgent
		case "tool":
			t.kind = kindTool
		case "handoff":
			t.kind = kindHandoff
		default:
			t.kind = kindOther
		}
	case otelmap.AttrTraceloopEntityName:
		t.entity = recognize.Quiet(kv)
	}
}

func (t *reader) Decide(r *recognize.Reading, _ *otelmap.Span) {
	if t.kind == kindNone {
		return
	}
	r.Understand()
	op, workflow := t.operation()
	r.Say(recognize.TierInstrumentation, recognize.Word{Op: op, Workflow: workflow})
	switch t.kind {
	case kindAgent:
		r.KindAgent()
		r.Name(0, t.entity)
	case kindHandoff:
		r.HandoffKind()
	}
}

// operation classifies traceloop.span.kind.
func (t *reader) operation() (op recognize.Op, workflow bool) {
	switch t.kind {
	case kindWorkflow:
		return recognize.OpNone, true
	case kindAgent:
		return recognize.OpInvoke, false
	case kindTool:
		return recognize.OpTool, false
	}
	return recognize.OpNone, false
}
