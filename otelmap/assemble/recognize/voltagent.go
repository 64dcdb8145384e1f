package recognize

import (
	"go.opentelemetry.io/otel/attribute"
)

// VoltAgent (@voltagent/core), which writes no gen_ai.* attribute: its
// VoltAgentObservability records every agent run and workflow in its own
// namespaces. Decided from its source, @voltagent/core 2.10.0
// dist/index.mjs (src/agent/open-telemetry/trace-context.ts, the class
// AgentTraceContext; src/agent/subagent/index.ts, SubAgentManager; the
// workflow's WorkflowTraceContext), read in the live corpus's voltagent
// program's node_modules, and checked on its captures:
//
//   - An agent's run is one INTERNAL span (AgentTraceContext's root span)
//     with entity.type=agent and no span.type. Every span of the run copies
//     the run's common attributes, entity.type=agent included; its work is
//     the child spans createChildSpan makes, each with a span.type. So an
//     agent span is entity.type=agent without span.type.
//   - Which agent: a sub-agent's run (isSubagent: started under a span of
//     an agent, with a parent agent id) is named subagent:<name> and carries
//     subagent.id and subagent.name, while entity.id and entity.name are set
//     to its parent's, taken from the parent span's entity.* (getAgentInfo),
//     which on a sub-agent's spans already name the root agent: on every
//     span of a sub-agent's run entity.name names the root supervisor, at
//     any depth. So subagent.name (else subagent.id) names a sub-agent and
//     entity.* is never read on its spans; entity.name (else entity.id)
//     names an agent the application ran. An agent's id defaults to its
//     name (Agent's constructor: options.id || options.name).
//   - A delegation is the caller's delegate_task tool (createDelegateTool,
//     a tool.execution:delegate_task span) running each target with that
//     tool span as parentSpan: the sub-agent's span nests in the caller's
//     tool span, inside the caller's agent span, and the call is read by
//     nesting, the caller being the nearest enclosing agent span. Nothing
//     else is needed, and agent.parent.name is not read: it is the parent
//     span's entity.name, the root agent, wrong from three deep (a
//     sub-agent's sub-agent gets agent.parent.id of its real caller and
//     agent.parent.name of the root). delegate_task catches its
//     sub-agents' errors and returns them, so a failed sub-agent fails its
//     own span (status Error, error.type), not the tool's.
//   - span.type says what a child span is: llm (llm:<operation>, one span
//     per generateText/streamText call, all its steps) and embedding
//     (embedding.generate, tool.search.embedding:*) model calls; tool
//     (tool.execution:<tool>, tool.search.selection:*) and retriever
//     (retriever.search) tool calls; memory, vector, guardrail, middleware,
//     summary, scorer and workflow-step neither steps nor calls.
//   - A workflow's run is entity.type=workflow without span.type: an
//     orchestration, never an agent. An agent run in a step of it is no
//     sub-agent (isWorkflowParent): its spans name it in entity.name.
//
// The family claims a span only when entity.type is agent or workflow, the
// two values VoltAgent writes: entity.* and span.type are generic names
// another framework may use otherwise. A span.type or entity.type value
// this file does not know leaves the span unread
// (otelmap/assemble/namespaces.go counts its voltagent.*, subagent.*,
// llm.* ... keys). VoltAgent sets status OK or
// Error with an exception event and error.type: read as every span's.

// VoltAgent entities, from entity.type.
const (
	voNone uint8 = iota
	voAgent
	voWorkflow
)

// voltSlots is what VoltAgent's attributes say.
type voltSlots struct {
	entity       uint8
	entityName   string // entity.name (the root agent, on a sub-agent's spans)
	entityID     string // entity.id
	subagent     bool   // a subagent.* key: a sub-agent's run
	subagentName string // subagent.name
	subagentID   string // subagent.id
	spanType     string // span.type, "" when absent
}

// readVoltAgent reads one of VoltAgent's keys (entity.*, subagent.*,
// span.type).
func (r *Reading) readVoltAgent(kv *attribute.KeyValue, key string) {
	v := &r.vo
	switch key {
	case "entity.type":
		switch quiet(kv) {
		case "agent":
			v.entity = voAgent
		case "workflow":
			v.entity = voWorkflow
		default:
			return
		}
		r.claim(famVoltAgent)
	case "entity.name":
		v.entityName = quiet(kv)
	case "entity.id":
		v.entityID = quiet(kv)
	case "subagent.name":
		v.subagent, v.subagentName = true, quiet(kv)
	case "subagent.id":
		v.subagent, v.subagentID = true, quiet(kv)
	case "subagent.type":
		v.subagent = true
	case "span.type":
		v.spanType = quiet(kv)
	}
}

// agent reports a span VoltAgent says is an agent's run.
func (v *voltSlots) agent() bool { return v.entity == voAgent && v.spanType == "" }

// name returns the agent an agent span names: the sub-agent's own name on
// a sub-agent's run, never the root in its entity.name.
func (v *voltSlots) name() string {
	if v.subagent {
		if v.subagentName != "" {
			return v.subagentName
		}
		return v.subagentID
	}
	if v.entityName != "" {
		return v.entityName
	}
	return v.entityID
}

// operation classifies the span for decide, and reports whether the
// family knew its kind.
func (v *voltSlots) operation(r *Reading) (op Op, workflow bool) {
	r.kindRead = true
	switch v.spanType {
	case "":
		if v.entity == voWorkflow {
			return OpNone, true
		}
		if v.name() == "" {
			r.UnnamedAgent = true
		}
		return OpInvoke, false
	case "llm", "embedding":
		return OpLLM, false
	case "tool", "retriever":
		return OpTool, false
	case "memory", "vector", "guardrail", "middleware", "summary", "scorer", "workflow-step":
		return OpNone, false
	}
	r.kindRead = false // a span type this file does not know
	return OpNone, false
}

// voltAgentNamespace returns "entity.*" or "span.*" for VoltAgent's keys
// of those generic namespaces, else "": counted as an agent namespace only
// on a span VoltAgent's family claimed (otelmap/assemble/namespaces.go).
func voltAgentNamespace(key string) string {
	for _, ns := range [...]string{"entity.", "span."} {
		if len(key) > len(ns) && key[:len(ns)] == ns {
			return ns + "*"
		}
	}
	return ""
}
