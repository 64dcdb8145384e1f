package recognize

import (
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"go.opentelemetry.io/otel/attribute"
)

// OpenLLMetry (Traceloop), whose instrumentations for CrewAI, the OpenAI
// Agents SDK, LangChain and the LLM clients mark spans with
// traceloop.span.kind:
//
//   - workflow and task are orchestration: never an agent, not a step
//     (CrewAI's "crewai.workflow" and "<task>.task" spans carry
//     gen_ai.operation.name=invoke_agent without an agent name; the kind
//     says what they are);
//   - agent is an agent span, named by gen_ai.agent.name, else
//     traceloop.entity.name;
//   - tool is a tool call;
//   - handoff is a handoff from gen_ai.handoff.from_agent to
//     gen_ai.handoff.to_agent (the OpenAI Agents SDK sets the target after
//     the span starts, so it is often missing: handoff.go).
//
// The older LLM client spans carry llm.request.type (chat, completion,
// embedding, rerank) instead of gen_ai.operation.name: an LLM call.

// OpenLLMetry span kinds.
const (
	tlNone uint8 = iota
	tlWorkflow
	tlAgent
	tlTool
	tlHandoff
	tlOther
)

// traceloopSlots is what the OpenLLMetry attributes say.
type traceloopSlots struct {
	kind   uint8
	entity string // traceloop.entity.name
	llm    bool   // llm.request.type: an LLM call in the older shape
}

// readTraceloop reads one traceloop.* attribute or llm.request.type.
func (r *Reading) readTraceloop(kv *attribute.KeyValue, key string) {
	r.claim(famOpenLLMetry)
	t := &r.tl
	switch key {
	case "traceloop.span.kind":
		switch strings.ToLower(quiet(kv)) {
		case "workflow", "task":
			t.kind = tlWorkflow
		case "agent":
			t.kind = tlAgent
		case "tool":
			t.kind = tlTool
		case "handoff":
			t.kind = tlHandoff
		default:
			t.kind = tlOther
		}
	case string(otelmap.AttrTraceloopEntityName):
		t.entity = quiet(kv)
	case "llm.request.type":
		t.llm = quiet(kv) != ""
	}
}

// operation classifies traceloop.span.kind.
func (t *traceloopSlots) operation() (op Op, workflow bool) {
	switch t.kind {
	case tlWorkflow:
		return OpNone, true
	case tlAgent:
		return OpInvoke, false
	case tlTool:
		return OpTool, false
	}
	return OpNone, false
}
