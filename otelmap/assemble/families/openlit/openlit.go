// Package openlit is the convention family of OpenLIT (openlit, Python),
// whose instrumentations write the GenAI conventions (read by the genai
// family) and mark every span they make with telemetry.sdk.name=openlit as
// a span attribute. It claims no span. Checked on the live corpus's
// agno-team-openlit-py (openlit 1.45.0, agno 3.1.10) and
// smolagents-managed-openlit-py (smolagents 1.26.0) programs.
//
// OpenLIT's Agno instrumentation records a Team's run as
// "invoke_workflow <team>" (gen_ai.operation.name=invoke_workflow,
// gen_ai.workflow.name, and the members' names as the JSON list
// gen_ai.agno.team.agents), though a Team has a leader: the team's own
// model, whose model calls and tool calls (delegate_task_to_member) are
// the workflow span's own children, beside the members' invoke_agent
// spans. It records an Agno Workflow's run the same way but without the
// member list (openlit 1.45.0, openlit/instrumentation/agno/utils.py:
// _set_team_attributes for the "team_" endpoints, _set_workflow_attributes
// for the "workflow_" ones). So an OpenLIT invoke_workflow span is a team
// leader's run, an agent named by gen_ai.workflow.name whose members'
// spans nested in it are its calls, when it carries the member list and
// has, as direct children in its own process, both a model call and an
// agent span (or a team leader's run: a team led by a team). Otherwise it
// stays an orchestration: a Workflow whose step calls a model is a
// pipeline, not a leader; a team span without a model call of its own
// only runs its agents; spans of another process parented on it say
// nothing of it. A leader named like an agent that ran under it would be
// its own caller: refused.
package openlit

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Family is the OpenLIT family.
var Family recognize.Family = family{}

type family struct{}

// Keys.
const (
	keySDK      uint8 = iota // telemetry.sdk.name, on OpenLIT's spans
	keyOp                    // gen_ai.operation.name
	keyWorkflow              // gen_ai.workflow.name
	keyTeam                  // gen_ai.agno.team.agents, on a Team's run only
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "openlit",
		Keys: []recognize.Key{
			recognize.Exact("telemetry.sdk.name", keySDK),
			recognize.Exact(string(otelmap.AttrGenAIOperationName), keyOp),
			recognize.Exact("gen_ai.workflow.name", keyWorkflow),
			recognize.Exact("gen_ai.agno.team.agents", keyTeam),
		},
		Identities: []recognize.Identity{{Label: "gen_ai.workflow.name", Tier: recognize.NameAttribute}},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// reader is what one span says of OpenLIT, and across an assembly the
// spans its pass looks at.
type reader struct {
	openlit  bool
	workflow bool   // gen_ai.operation.name=invoke_workflow
	name     string // gen_ai.workflow.name
	team     bool   // gen_ai.agno.team.agents is set

	leaders []leader // OpenLIT workflow spans with a name
	kids    []kid    // OpenLIT spans that are model calls or agent spans
}

// kid is an OpenLIT model call or agent span, with the agent's name.
type kid struct {
	span int32
	name string
}

// leader is an OpenLIT workflow span, a candidate team leader's run.
type leader struct {
	span int32
	name string
}

func (o *reader) Reset() { o.openlit, o.workflow, o.name, o.team = false, false, "", false }

func (o *reader) Attr(_ *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keySDK:
		o.openlit = recognize.Quiet(kv) == "openlit"
	case keyOp:
		o.workflow = recognize.Quiet(kv) == "invoke_workflow"
	case keyWorkflow:
		o.name = recognize.Quiet(kv)
	case keyTeam:
		o.team = recognize.Quiet(kv) != ""
	}
}

func (o *reader) Decide(*recognize.Reading, *otelmap.Span) {}

func (o *reader) Begin() { o.leaders, o.kids = o.leaders[:0], o.kids[:0] }

func (o *reader) Keep(r *recognize.Reading, _ *otelmap.Span, i int32) {
	if !o.openlit {
		return
	}
	switch {
	case o.workflow && o.team && o.name != "":
		o.leaders = append(o.leaders, leader{span: i, name: o.name})
	case r.Op == recognize.OpLLM || r.Op == recognize.OpInvoke:
		o.kids = append(o.kids, kid{span: i, name: r.AgentName})
	}
}

// Resolve makes agent spans of the team spans that are a team leader's
// run: a model call of their own and an agent span (or a leader's run) as
// direct children in their process. A team led by a team is known only
// once the inner one is, so it goes round until nothing changes.
func (o *reader) Resolve(t recognize.Tree) {
	if len(o.leaders) == 0 {
		return
	}
	type seen struct {
		model, agent bool
		made         bool
		under        map[string]bool // names of the agents below it
	}
	at := make(map[int32]*seen, len(o.leaders))
	for _, l := range o.leaders {
		at[l.span] = &seen{}
	}
	// The leader of a span: the nearest team span above it in its process.
	above := func(i int32) (int32, *seen) {
		for p := t.Parent(i); p >= 0 && t.Process(p) == t.Process(i); p = t.Parent(p) {
			if s := at[p]; s != nil {
				return p, s
			}
		}
		return -1, nil
	}
	for _, kd := range o.kids {
		k := kd.span
		p := t.Parent(k)
		if s := at[p]; s != nil && t.Process(p) == t.Process(k) {
			switch {
			case t.Op(k) == recognize.OpLLM:
				s.model = true
			case t.Agent(k) && t.Named(k):
				s.agent = true
			}
		}
		if !t.Agent(k) || !t.Named(k) || kd.name == "" {
			continue
		}
		// Every team span above the agent, in its process, ran it.
		for q, s := above(k); s != nil; q, s = above(q) {
			if s.under == nil {
				s.under = map[string]bool{}
			}
			s.under[kd.name] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, l := range o.leaders {
			s := at[l.span]
			if s.made || !s.model || !s.agent || s.under[l.name] || t.Agent(l.span) {
				continue
			}
			t.ForgetUnnamed(l.span)
			t.MakeAgent(l.span, l.name, 0)
			s.made, changed = true, true
			if p := t.Parent(l.span); p >= 0 && t.Process(p) == t.Process(l.span) && at[p] != nil {
				at[p].agent = true
			}
			for q, s := above(l.span); s != nil; q, s = above(q) {
				if s.under == nil {
					s.under = map[string]bool{}
				}
				s.under[l.name] = true
			}
		}
	}
}
