// Package crewai is the convention family of CrewAI's delegation ("crewai"
// in coverage.recognized): the coworker a crew's agent delegates to, where
// the instrumentation gives the coworker's run no span of its own.
//
// CrewAI gives an agent that may delegate (every agent of a hierarchical
// crew's manager, and any agent with allow_delegation) two tools, "Delegate
// work to coworker" and "Ask question to coworker" (their names in
// crewai 1.15.30's translations/en.json; the functions
// delegate_work_to_coworker and ask_question_to_coworker), whose argument
// coworker names the agent by its role; the tool runs that agent's
// execute_task in its own body (crewai/tools/agent_tools/base_agent_tools.py
// _execute, line 120, matching the role case-insensitively after trimming).
// OpenInference's CrewAI instrumentation (openinference-instrumentation-crewai
// 1.1.21) wraps Crew.kickoff, Task._execute_core and the tools' run, not
// Agent.execute_task: the coworker's run has no span, and its own tool
// calls sit directly under the delegation's TOOL span (the live corpus's
// crewai-hierarchical-py). The kickoff span lists the crew's agents in
// crew_agents (a JSON list of objects with their role).
//
// The rule: a TOOL span whose tool.name is one of the delegation tools and
// whose input.value (a JSON object) names a coworker is that coworker's run,
// an agent span named by the role (identified_by "crewai.coworker"): the
// spans under it are the coworker's work, and the delegation is a call from
// the agent whose run holds the tool span, by nesting. When the trace holds
// a crew's crew_agents, the coworker must be one of its roles (and takes the
// role's spelling): CrewAI answers a delegation to an unknown coworker with
// an error text, and no agent ran. Where the coworker's run has a span of its
// own (OpenLLMetry's CrewAI instrumentation wraps Agent.execute_task:
// crewai-openllmetry-py), it is nested in the delegation and is the same
// agent: no second call.
package crewai

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Family is the CrewAI family.
var Family recognize.Family = family{}

type family struct{}

const (
	keyToolName uint8 = iota
	keyInput
	keyCrewAgents
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "crewai",
		Keys: []recognize.Key{
			recognize.Exact("tool.name", keyToolName),
			recognize.Exact("input.value", keyInput),
			recognize.Exact("crew_agents", keyCrewAgents),
		},
		Identities: []recognize.Identity{{Label: "crewai.coworker", Tier: recognize.NameAttribute}},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// delegationTools are CrewAI's delegation tools, by their display and
// function names.
var delegationTools = map[string]bool{
	"Delegate work to coworker": true, "Ask question to coworker": true,
	"delegate_work_to_coworker": true, "ask_question_to_coworker": true,
}

// delegation is a delegation tool span and the coworker it names.
type delegation struct {
	span     int32
	coworker string
}

type reader struct {
	tool, input, crew string
	coworker          string   // the span's delegation's coworker (Decide)
	roles             []string // the span's crew_agents' roles (Decide)
	crew0             bool     // the span's crew_agents parsed

	delegations []delegation
	crewRoles   []string        // of every crew_agents in the trace
	crews       bool            // some span carried crew_agents
	crewAt      map[int32][]int // the spans with crew_agents: their roles, as [from, to) in crewRoles
}

func (c *reader) Reset() {
	c.tool, c.input, c.crew, c.coworker, c.roles, c.crew0 = "", "", "", "", c.roles[:0], false
}

func (c *reader) Attr(_ *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keyToolName:
		c.tool = recognize.Quiet(kv)
	case keyInput:
		c.input = recognize.Quiet(kv)
	case keyCrewAgents:
		c.crew = recognize.Quiet(kv)
	}
}

// Decide reads a delegation's coworker and a crew's roles, and claims the
// span that has either; what a delegation is is settled once the trace's
// crews are known (Resolve).
func (c *reader) Decide(r *recognize.Reading, _ *otelmap.Span) {
	if delegationTools[c.tool] && c.input != "" {
		var args struct {
			Coworker string `json:"coworker"`
		}
		if json.Unmarshal([]byte(c.input), &args) == nil {
			c.coworker = strings.TrimSpace(args.Coworker)
		}
	}
	if c.crew != "" {
		var agents []struct {
			Role string `json:"role"`
		}
		if json.Unmarshal([]byte(c.crew), &agents) == nil {
			c.crew0 = true
			for _, a := range agents {
				if role := strings.TrimSpace(a.Role); role != "" {
					c.roles = append(c.roles, role)
				}
			}
		}
	}
	if c.coworker != "" || c.crew0 {
		r.Claim()
	}
}

func (c *reader) Begin() {
	c.delegations, c.crewRoles, c.crews = c.delegations[:0], c.crewRoles[:0], false
	clear(c.crewAt)
}

// Keep keeps the delegations (tool spans of a delegation tool naming a
// coworker) and the crews' roles.
func (c *reader) Keep(r *recognize.Reading, _ *otelmap.Span, i int32) {
	if c.crew0 {
		c.crews = true
		if c.crewAt == nil {
			c.crewAt = make(map[int32][]int)
		}
		c.crewAt[i] = []int{len(c.crewRoles), len(c.crewRoles) + len(c.roles)}
		c.crewRoles = append(c.crewRoles, c.roles...)
	}
	if c.coworker != "" && r.Op == recognize.OpTool {
		c.delegations = append(c.delegations, delegation{span: i, coworker: c.coworker})
	}
}

// Resolve makes each delegation the coworker's run. The coworker must be a
// role of the crew whose kickoff holds the delegation (the nearest span
// above it with crew_agents), else, with no such span, of a crew of the
// trace: a crew beside it (another participant's, or one forged) does not
// lend it roles.
func (c *reader) Resolve(t recognize.Tree) {
	for _, d := range c.delegations {
		name := d.coworker
		if c.crews {
			roles := c.crewRoles
			for x := t.Parent(d.span); x >= 0; x = t.Parent(x) {
				if r, ok := c.crewAt[x]; ok {
					roles = c.crewRoles[r[0]:r[1]]
					break
				}
			}
			name = ""
			for _, role := range roles {
				if strings.EqualFold(role, d.coworker) {
					name = role
					break
				}
			}
		}
		if name != "" {
			t.MakeAgent(d.span, name, 0)
		}
	}
}
