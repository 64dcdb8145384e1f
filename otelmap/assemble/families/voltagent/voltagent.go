// Package voltagent is the convention family of VoltAgent
// (@voltagent/core), which writes no gen_ai.* attribute: its
// VoltAgentObservability records every agent run and workflow in its own
// namespaces; "voltagent" in coverage.recognized. Decided from its source,
// @voltagent/core 2.10.0 dist/index.mjs
// (src/agent/open-telemetry/trace-context.ts, the class AgentTraceContext;
// src/agent/subagent/index.ts, SubAgentManager; the workflow's
// WorkflowTraceContext), read in the live corpus's voltagent program's
// node_modules, and checked on the captures of its voltagent,
// voltagent-deep and voltagent-solo programs:
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
// another framework may use otherwise. A span.type this family does not
// know leaves the span unread (otelmap/assemble/namespaces.go counts its
// voltagent.*, subagent.*, llm.* ... keys, and its entity.* and span.*
// keys: Namespace). VoltAgent sets status OK or Error with an exception
// event and error.type: read as every span's.
package voltagent

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the VoltAgent family.
var Family recognize.Family = family{}

type family struct{}

// Identities.
const (
	idSubagent = iota // subagent.name
	idEntity          // entity.name
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "voltagent",
		Keys: []recognize.Key{
			recognize.Prefix("entity.", 0),
			recognize.Prefix("subagent.", 0),
			recognize.Exact("span.type", 0),
		},
		Identities: []recognize.Identity{
			idSubagent: {Label: tracedata.IdentityVoltAgentSubagent, Tier: recognize.NameAttribute},
			idEntity:   {Label: tracedata.IdentityVoltAgent, Tier: recognize.NameAttribute},
		},
		StepKeys: []recognize.StepKey{{Key: "llm.model", Is: recognize.StepModel}},
		Unnamed:  "a VoltAgent sub-agent run without subagent.name or subagent.id",
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// VoltAgent entities, from entity.type.
const (
	entityNone uint8 = iota
	entityAgent
	entityWorkflow
)

// reader is what VoltAgent's attributes say of one span.
type reader struct {
	entity       uint8
	entityName   string // entity.name (the root agent, on a sub-agent's spans)
	entityID     string // entity.id
	subagent     bool   // a subagent.* key: a sub-agent's run
	subagentName string // subagent.name
	subagentID   string // subagent.id
	spanType     string // span.type, "" when absent
}

func (v *reader) Reset() { *v = reader{} }

func (v *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, _ uint8) {
	switch kv.Key {
	case "entity.type":
		switch recognize.Quiet(kv) {
		case "agent":
			v.entity = entityAgent
		case "workflow":
			v.entity = entityWorkflow
		default:
			return
		}
		r.Claim()
	case "entity.name":
		v.entityName = recognize.Quiet(kv)
	case "entity.id":
		v.entityID = recognize.Quiet(kv)
	case "subagent.name":
		v.subagent, v.subagentName = true, recognize.Quiet(kv)
	case "subagent.id":
		v.subagent, v.subagentID = true, recognize.Quiet(kv)
	case "subagent.type":
		v.subagent = true
	case "span.type":
		v.spanType = recognize.Quiet(kv)
	}
}

// agent reports a span VoltAgent says is an agent's run.
func (v *reader) agent() bool { return v.entity == entityAgent && v.spanType == "" }

// name returns the agent an agent span names: the sub-agent's own name on
// a sub-agent's run, never the root in its entity.name.
func (v *reader) name() string {
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

func (v *reader) Decide(r *recognize.Reading, _ *otelmap.Span) {
	if v.entity == entityNone {
		return
	}
	if v.agent() {
		if v.subagent {
			r.Name(idSubagent, v.name())
		} else {
			r.Name(idEntity, v.name())
		}
	}
	r.Say(recognize.TierFramework, v.word())
}

// word classifies the span.
func (v *reader) word() recognize.Word {
	w := recognize.Word{Understood: true}
	switch v.spanType {
	case "":
		if v.entity == entityWorkflow {
			w.Workflow = true
			return w
		}
		w.Op, w.Unnamed = recognize.OpInvoke, v.name() == ""
	case "llm", "embedding":
		w.Op = recognize.OpLLM
	case "tool", "retriever":
		w.Op = recognize.OpTool
	case "memory", "vector", "guardrail", "middleware", "summary", "scorer", "workflow-step":
	default:
		w.Understood = false // a span type this family does not know
	}
	return w
}

// Namespace returns "entity.*" or "span.*" for VoltAgent's keys of those
// generic namespaces, on a span the family claimed, else "": counted as
// an agent namespace where the span was not understood.
func (v *reader) Namespace(key string) string {
	for _, ns := range [...]string{"entity.", "span."} {
		if len(key) > len(ns) && key[:len(ns)] == ns {
			return ns + "*"
		}
	}
	return ""
}
