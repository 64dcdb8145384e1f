// Package llamaindex is the convention family of LlamaIndex's
// AgentWorkflow (llama-index-core) as OpenInference's LlamaIndex
// instrumentation records it (openinference-instrumentation-llama-index
// 4.6.1, checked on the live corpus's llamaindex-agentworkflow-py program,
// llama-index-core 0.14.25). It claims no span: the spans are
// OpenInference's, counted there.
//
// The instrumentation makes no AGENT span for an AgentWorkflow's
// FunctionAgents and no attribute names one. The workflow's run is a CHAIN
// span "<Workflow>.run" and each of its steps a CHAIN span
// "<Workflow>.<step>" directly under it (init_run, setup_agent,
// run_agent_step, parse_agent_output, call_tool, aggregate_tool_results),
// in the order they ran. Which agent runs is the workflow's state, shown
// only in the repr of the events its steps take and give: setup_agent
// takes an AgentInput and gives an AgentSetup, both ending
// ", current_agent_name='<agent>')". So:
//
//   - the agent of a setup_agent step is the current_agent_name that ends
//     its input's AgentInput repr (input.value, the JSON of the step's
//     arguments: its "ev"), else its output's AgentSetup repr
//     (output.value). Only the field that ends the repr is read: a message
//     inside the event that spells current_agent_name='...' is text, not
//     the field. A repr OpenInference cut short names no agent: the step
//     is then an agent its framework ran with no name recorded (unread,
//     counted), and its steps are nobody's;
//   - each run of steps from a setup_agent to the next setup_agent of
//     another agent is that agent's run: the first setup_agent span of the
//     run becomes the agent's span, and the run's other steps are read as
//     run by it (recognize.Tree.RunBy), so its model and tool calls are its
//     work;
//   - a tool call named handoff (LlamaIndex's FunctionTool "handoff",
//     OpenInference TOOL span "FunctionTool.acall" or "FunctionTool.call")
//     is a handoff to the agent its arguments name: input.value
//     {"kwargs": {"to_agent": "<agent>", ...}}. The edge is made by the
//     handoff rule every family shares (otelmap/assemble/calls_evidence.go):
//     to the first agent span after it named as its target, from the agent
//     doing its work.
//
// The workflow's run span, "<Workflow>.run" whose input (its initial
// state's config) lists the setup_agent and run_agent_step steps, is an
// orchestration: agents no handoff wires under it are reported unwired.
// Steps are read only in the process of the span they run under: a span of
// another process parented on it names no agent of the workflow.
package llamaindex

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Family is the LlamaIndex AgentWorkflow family.
var Family recognize.Family = family{}

type family struct{}

// Keys.
const (
	keyKind   uint8 = iota // openinference.span.kind
	keyTool                // tool.name
	keyInput               // input.value
	keyOutput              // output.value
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "llamaindex",
		Keys: []recognize.Key{
			recognize.Exact("openinference.span.kind", keyKind),
			recognize.Exact("tool.name", keyTool),
			recognize.Exact("input.value", keyInput),
			recognize.Exact("output.value", keyOutput),
		},
		Identities: []recognize.Identity{{Label: "current_agent_name", Tier: recognize.NameAttribute}},
		// No Unnamed text: the unnamed-agent warning lists every family's,
		// whatever the trace holds, and a new one would change the
		// warning of traces that hold no LlamaIndex span.
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// reader is what one span says of an AgentWorkflow, and across an
// assembly the steps its pass looks at.
type reader struct {
	kind          string // openinference.span.kind
	tool          string // tool.name
	input, output string // input.value, output.value

	steps []step
}

// step is a CHAIN span of an AgentWorkflow step.
type step struct {
	span  int32
	class string // what precedes ".<step>" in the span's name: the workflow's class
	setup bool   // a setup_agent step
	agent string // a setup_agent step's agent, "" when not shown
}

func (o *reader) Reset() { o.kind, o.tool, o.input, o.output = "", "", "", "" }

func (o *reader) Attr(_ *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keyKind:
		o.kind = recognize.Quiet(kv)
	case keyTool:
		o.tool = recognize.Quiet(kv)
	case keyInput:
		o.input = recognize.Quiet(kv)
	case keyOutput:
		o.output = recognize.Quiet(kv)
	}
}

// Decide reads an AgentWorkflow's run span and a handoff tool call's
// target.
func (o *reader) Decide(r *recognize.Reading, sp *otelmap.Span) {
	if isWorkflowRun(o.kind, sp.Name, o.input) {
		r.Say(recognize.TierInstrumentation, recognize.Word{Workflow: true, Understood: true})
		return
	}
	if o.tool != "handoff" || !strings.EqualFold(o.kind, "TOOL") ||
		(sp.Name != "FunctionTool.acall" && sp.Name != "FunctionTool.call") {
		return
	}
	var args struct {
		Kwargs struct {
			ToAgent string `json:"to_agent"`
		} `json:"kwargs"`
	}
	if json.Unmarshal([]byte(o.input), &args) == nil && args.Kwargs.ToAgent != "" {
		r.HandoffNamed(args.Kwargs.ToAgent)
	}
}

// isWorkflowRun: a CHAIN span "<Workflow>.run" whose input (the
// workflow's initial state, its config listing its steps) holds the
// AgentWorkflow's agent steps is an orchestration. The agents run beside
// each other under it: agents no handoff wires are reported as unwired,
// not read as a complete graph without edges.
func isWorkflowRun(kind, name, input string) bool {
	return strings.HasSuffix(name, ".run") && strings.EqualFold(kind, "CHAIN") &&
		strings.Contains(input, `"setup_agent"`) && strings.Contains(input, `"run_agent_step"`)
}

// workflowSteps are the step names of an AgentWorkflow's run.
var workflowSteps = [...]string{"init_run", "setup_agent", "run_agent_step", "parse_agent_output", "call_tool", "aggregate_tool_results"}

func (o *reader) Begin() { o.steps = o.steps[:0] }

func (o *reader) Keep(_ *recognize.Reading, sp *otelmap.Span, i int32) {
	if !strings.EqualFold(o.kind, "CHAIN") {
		return
	}
	dot := strings.LastIndexByte(sp.Name, '.')
	if dot <= 0 || !slices.Contains(workflowSteps[:], sp.Name[dot+1:]) {
		return
	}
	s := step{span: i, class: sp.Name[:dot], setup: sp.Name[dot+1:] == "setup_agent"}
	if s.setup {
		s.agent = eventAgent(o.input, "AgentInput(")
		if s.agent == "" {
			s.agent = currentAgent(o.output, "AgentSetup(")
		}
	}
	o.steps = append(o.steps, s)
}

// eventAgent reads the agent of the event a step took: input.value is
// the JSON of the step's arguments, the event its "ev" repr.
func eventAgent(input, event string) string {
	if !strings.Contains(input, event) {
		return ""
	}
	var args struct {
		Ev string `json:"ev"`
	}
	if json.Unmarshal([]byte(input), &args) != nil {
		return ""
	}
	return currentAgent(args.Ev, event)
}

// currentAgent returns the agent an event's repr names in the field that
// ends it, "<event>..., current_agent_name='<agent>')", or "".
func currentAgent(repr, event string) string {
	const field = ", current_agent_name='"
	if !strings.HasPrefix(repr, event) || !strings.HasSuffix(repr, "')") {
		return ""
	}
	body := repr[:len(repr)-len("')")]
	i := strings.LastIndex(body, field)
	if i < 0 {
		return ""
	}
	name := body[i+len(field):]
	if name == "" || strings.ContainsAny(name, "'\\") {
		return ""
	}
	return name
}

// Resolve makes each agent's run of steps an agent span and its steps.
func (o *reader) Resolve(t recognize.Tree) {
	if len(o.steps) == 0 {
		return
	}
	type group struct {
		parent int32
		class  string
	}
	runs := make(map[group][]step)
	var order []group
	for _, s := range o.steps {
		p := t.Parent(s.span)
		if p < 0 || t.Process(p) != t.Process(s.span) {
			continue
		}
		g := group{p, s.class}
		if _, ok := runs[g]; !ok {
			order = append(order, g)
		}
		runs[g] = append(runs[g], s)
	}
	for _, g := range order {
		steps := runs[g]
		if !slices.ContainsFunc(steps, func(s step) bool { return s.setup }) {
			continue
		}
		slices.SortFunc(steps, func(x, y step) int {
			return cmp.Or(t.Span(x.span).Start.Compare(t.Span(y.span).Start), cmp.Compare(x.span, y.span))
		})
		cur, name := int32(-1), ""
		for _, s := range steps {
			switch {
			case s.setup && s.agent == "":
				t.MarkUnnamed(s.span)
				cur, name = -1, ""
			case s.setup && s.agent == name:
				t.RunBy(s.span, cur)
			case s.setup:
				if t.Agent(s.span) {
					cur, name = -1, "" // another family's word on it stands
					continue
				}
				t.MakeAgent(s.span, s.agent, 0)
				cur, name = s.span, s.agent
			case cur >= 0:
				t.RunBy(s.span, cur)
			}
		}
	}
}
