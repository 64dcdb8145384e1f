// Package llamaindex is the convention family of LlamaIndex's
// AgentWorkflow (llama-index-core), read the same way whichever
// instrumentation recorded it: OpenInference's
// (openinference-instrumentation-llama-index 4.6.1) and OpenLLMetry's
// (opentelemetry-instrumentation-llamaindex 0.62.4, with traceloop-sdk),
// checked on the live corpus's llamaindex-agentworkflow-py and
// llamaindex-agentworkflow-openllmetry-py programs (llama-index-core
// 0.14.25). It claims no span: the spans are those instrumentations',
// counted there.
//
// Neither makes an agent span for an AgentWorkflow's FunctionAgents, and
// no attribute names one. The workflow's run is one span and each of its
// steps (init_run, setup_agent, run_agent_step, parse_agent_output,
// call_tool, aggregate_tool_results) a span directly under it, in the
// order they ran: OpenInference's CHAIN spans "<Workflow>.run" and
// "<Workflow>.<step>"; OpenLLMetry's workflow span "<Workflow>.workflow"
// and task spans (named "<Workflow>.task" or "<step>.task": its
// dispatcher_wrapper.py new_span). Which agent runs is the workflow's
// state, shown only in the events the steps take and give (AgentInput,
// AgentSetup: their field current_agent_name). OpenInference writes an
// event as its Python repr, in input.value (the JSON of the step's
// arguments: its "ev") and output.value; OpenLLMetry as the event's
// model_dump JSON, in traceloop.entity.input and traceloop.entity.output.
// One reading of both:
//
//   - a step names the current agent when its input's event, else its
//     output's, is an AgentInput or AgentSetup whose repr ends with the
//     field ", current_agent_name='<agent>')", or is a JSON object whose
//     own member current_agent_name is the agent. Only the field that ends
//     the repr, or the object's own member, is read: a message inside the
//     event that spells the field is text, not the field. A repr
//     OpenInference cut short ("...") names nobody;
//   - the run of an agent starts at the first step of the workflow's run
//     that names it while another agent (or none) was current: that step's
//     span becomes the agent's span, and every step after it until the
//     next agent's run is read as run by it (recognize.Tree.RunBy), so its
//     model and tool calls are its work. A setup_agent step (OpenInference
//     names it) that names no agent is an agent its framework ran with no
//     name recorded (unread, counted), and its steps are nobody's; so is a
//     workflow run none of whose steps names an agent;
//   - the handoff tool hands off to the agent its arguments name: the
//     FunctionTool "handoff" call (OpenInference's TOOL span
//     "FunctionTool.acall"/".call", input.value {"kwargs": {"to_agent":
//     ...}}), or OpenLLMetry's call_tool step, the task span on which it
//     writes the ToolCall event's tool.name and tool.arguments ({"to_agent":
//     ...}), which this family reads as the tool call it is. The edge is
//     made by the handoff rule every family shares
//     (otelmap/assemble/calls_evidence.go): to the first agent span after
//     it named as its target, from the agent doing its work.
//
// The workflow's run span is an orchestration (OpenLLMetry's word already;
// OpenInference's "<Workflow>.run" whose input, the workflow's initial
// state, lists the setup_agent and run_agent_step steps): agents no handoff
// wires under it are reported unwired. Steps are read only in the process
// of the run span they are directly under: a span of another process
// parented on it names no agent of the workflow.
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
	keyKind     uint8 = iota // openinference.span.kind
	keyTLKind                // traceloop.span.kind
	keyTool                  // tool.name
	keyToolArgs              // tool.arguments (OpenLLMetry's call_tool step)
	keyInput                 // input.value, traceloop.entity.input
	keyOutput                // output.value, traceloop.entity.output
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "llamaindex",
		Keys: []recognize.Key{
			recognize.Exact("openinference.span.kind", keyKind),
			recognize.Exact("traceloop.span.kind", keyTLKind),
			recognize.Exact("tool.name", keyTool),
			recognize.Exact("tool.arguments", keyToolArgs),
			recognize.Exact("input.value", keyInput),
			recognize.Exact("traceloop.entity.input", keyInput),
			recognize.Exact("output.value", keyOutput),
			recognize.Exact("traceloop.entity.output", keyOutput),
		},
		Identities: []recognize.Identity{{Label: "current_agent_name", Tier: recognize.NameAttribute}},
		// No Unnamed text: the unnamed-agent warning lists every family's,
		// whatever the trace holds, and a new one would change the
		// warning of traces that hold no LlamaIndex span.
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// reader is what one span says of an AgentWorkflow, and across an
// assembly the spans its pass looks at.
type reader struct {
	kind          string // openinference.span.kind
	tlKind        string // traceloop.span.kind
	tool          string // tool.name
	toolArgs      string // tool.arguments
	input, output string // the step's input and output, whichever instrumentation's

	runs  map[int32]string // workflow run spans: the workflow's class
	steps []step
}

// step is a span that may be a step of a workflow's run.
type step struct {
	span  int32
	class string // the workflow's class its name gives, "" when it gives none
	setup bool   // an OpenInference setup_agent step
	agent string // the agent its events name, "" when none
}

func (o *reader) Reset() {
	o.kind, o.tlKind, o.tool, o.toolArgs, o.input, o.output = "", "", "", "", "", ""
}

func (o *reader) Attr(_ *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keyKind:
		o.kind = recognize.Quiet(kv)
	case keyTLKind:
		o.tlKind = recognize.Quiet(kv)
	case keyTool:
		o.tool = recognize.Quiet(kv)
	case keyToolArgs:
		o.toolArgs = recognize.Quiet(kv)
	case keyInput:
		o.input = recognize.Quiet(kv)
	case keyOutput:
		o.output = recognize.Quiet(kv)
	}
}

// Decide reads an AgentWorkflow's run span, OpenLLMetry's call_tool step,
// and a handoff tool call's target.
func (o *reader) Decide(r *recognize.Reading, sp *otelmap.Span) {
	switch {
	case isWorkflowRun(o.kind, sp.Name, o.input):
		r.Say(recognize.TierInstrumentation, recognize.Word{Workflow: true, Understood: true})
	case o.tlKind == "task" && o.tool != "" && o.toolArgs != "" && strings.HasSuffix(sp.Name, ".task"):
		// OpenLLMetry's call_tool step: the ToolCall event's tool and
		// arguments, a tool call, where OpenLLMetry's kind says a task.
		r.Say(recognize.TierFramework, recognize.Word{Op: recognize.OpTool, Understood: true})
		r.ToolName(o.tool)
		if o.tool == "handoff" {
			if to := toAgent(o.toolArgs); to != "" {
				r.HandoffNamed(to)
			}
		}
	case o.tool == "handoff" && strings.EqualFold(o.kind, "TOOL") &&
		(sp.Name == "FunctionTool.acall" || sp.Name == "FunctionTool.call"):
		var args struct {
			Kwargs json.RawMessage `json:"kwargs"`
		}
		if json.Unmarshal([]byte(o.input), &args) == nil {
			if to := toAgent(string(args.Kwargs)); to != "" {
				r.HandoffNamed(to)
			}
		}
	}
}

// toAgent reads the handoff tool's to_agent argument from its JSON
// arguments.
func toAgent(args string) string {
	var a struct {
		ToAgent string `json:"to_agent"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		return ""
	}
	return a.ToAgent
}

// isWorkflowRun: an OpenInference CHAIN span "<Workflow>.run" whose input
// (the workflow's initial state, its config listing its steps) holds the
// AgentWorkflow's agent steps is an orchestration. The agents run beside
// each other under it: agents no handoff wires are reported as unwired,
// not read as a complete graph without edges.
func isWorkflowRun(kind, name, input string) bool {
	return strings.HasSuffix(name, ".run") && strings.EqualFold(kind, "CHAIN") &&
		strings.Contains(input, `"setup_agent"`) && strings.Contains(input, `"run_agent_step"`)
}

// workflowSteps are the step names of an AgentWorkflow's run.
var workflowSteps = [...]string{"init_run", "setup_agent", "run_agent_step", "parse_agent_output", "call_tool", "aggregate_tool_results"}

func (o *reader) Begin() {
	clear(o.runs)
	o.steps = o.steps[:0]
}

// Keep keeps the workflow run spans and the spans that may be their steps.
func (o *reader) Keep(_ *recognize.Reading, sp *otelmap.Span, i int32) {
	dot := strings.LastIndexByte(sp.Name, '.')
	if dot <= 0 {
		return
	}
	class, method := sp.Name[:dot], sp.Name[dot+1:]
	switch {
	case strings.EqualFold(o.kind, "CHAIN") && method == "run" && isWorkflowRun(o.kind, sp.Name, o.input),
		o.tlKind == "workflow" && method == "workflow":
		if o.runs == nil {
			o.runs = make(map[int32]string)
		}
		o.runs[i] = class
	case strings.EqualFold(o.kind, "CHAIN") && slices.Contains(workflowSteps[:], method):
		o.steps = append(o.steps, step{span: i, class: class, setup: method == "setup_agent", agent: o.stepAgent()})
	case o.tlKind == "task" && method == "task":
		o.steps = append(o.steps, step{span: i, agent: o.stepAgent()})
	}
}

// stepAgent is the agent a step's events name: its input's, else its
// output's.
func (o *reader) stepAgent() string {
	if a := eventAgent(o.input); a != "" {
		return a
	}
	return eventAgent(o.output)
}

// eventAgent reads the current agent an event names: OpenInference's
// arguments JSON ({"ev": "<repr>"}) or bare repr, or OpenLLMetry's JSON of
// the event (its own member current_agent_name).
func eventAgent(v string) string {
	if !strings.Contains(v, "current_agent_name") {
		return ""
	}
	if strings.HasPrefix(v, "{") {
		var ev struct {
			Ev      *string `json:"ev"`
			Current *string `json:"current_agent_name"`
		}
		if json.Unmarshal([]byte(v), &ev) != nil {
			return ""
		}
		switch {
		case ev.Ev != nil:
			return reprAgent(*ev.Ev)
		case ev.Current != nil && *ev.Current != "":
			return *ev.Current
		}
		return ""
	}
	return reprAgent(v)
}

// reprAgent returns the agent an AgentInput or AgentSetup repr names in
// the field that ends it, "...(..., current_agent_name='<agent>')", or "".
func reprAgent(repr string) string {
	const field = ", current_agent_name='"
	if !strings.HasPrefix(repr, "AgentInput(") && !strings.HasPrefix(repr, "AgentSetup(") || !strings.HasSuffix(repr, "')") {
		return ""
	}
	body := repr[:len(repr)-len("')")]
	i := strings.LastIndex(body, field)
	if i < 0 {
		return ""
	}
	if name := body[i+len(field):]; validName(name) {
		return name
	}
	return ""
}

// validName: a name Python's repr writes between single quotes whole.
func validName(name string) bool { return name != "" && !strings.ContainsAny(name, "'\\") }

// Resolve makes each agent's run of steps an agent span and its steps.
func (o *reader) Resolve(t recognize.Tree) {
	if len(o.runs) == 0 || len(o.steps) == 0 {
		return
	}
	byRun := make(map[int32][]step)
	var order []int32
	for _, s := range o.steps {
		p := t.Parent(s.span)
		class, ok := o.runs[p]
		if !ok || t.Process(p) != t.Process(s.span) || s.class != "" && s.class != class {
			continue
		}
		if _, seen := byRun[p]; !seen {
			order = append(order, p)
		}
		byRun[p] = append(byRun[p], s)
	}
	for _, p := range order {
		steps := byRun[p]
		slices.SortFunc(steps, func(x, y step) int {
			return cmp.Or(t.Span(x.span).Start.Compare(t.Span(y.span).Start), cmp.Compare(x.span, y.span))
		})
		if !slices.ContainsFunc(steps, func(s step) bool { return s.agent != "" }) {
			t.MarkUnnamed(steps[0].span)
			continue
		}
		cur, name := int32(-1), ""
		for _, s := range steps {
			switch {
			case s.setup && s.agent == "":
				t.MarkUnnamed(s.span)
				cur, name = -1, ""
			case s.agent != "" && s.agent != name:
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
