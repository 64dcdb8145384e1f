package openllmetry

import (
	"encoding/json"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// runBy finds the tool span that ran an agent recorded under the
// workflow. OpenLLMetry's OpenAI Agents SDK processor starts every agent
// span with the trace's "Agent Workflow" span as parent (_hooks.py
// on_span_start, 0.62.4), so an agent an as_tool tool runs lies beside the
// caller's agent span instead of inside its tool span. An agent span B
// whose parent is an OpenLLMetry workflow span was run by an OpenLLMetry
// tool span T of its process when T is no span of B's own run, is under
// another agent's span, holds B's whole time, and:
//
//   - T is the only such tool span, and the text does not contradict it
//     (T's gen_ai.tool.call.result, where recorded, is B's answer: the text
//     of its last model call's gen_ai.output.messages, where recorded); or
//   - of several such tool spans (tools run in parallel), T is the only one
//     whose result is B's answer.
//
// Otherwise B stays where it was recorded, a loose agent span whose missing
// wiring the evidence reports. Start order alone is never read as a call.
type runBy struct {
	workflows map[int32]bool
	agents    []int32
	tools     []toolRun
	outputs   []output
}

// toolRun is an OpenLLMetry tool span and its result.
type toolRun struct {
	span   int32
	result string
}

// output is a model call's output messages.
type output struct {
	span int32
	json string
}

func (t *reader) Begin() {
	p := &t.pass
	clear(p.workflows)
	p.agents, p.tools, p.outputs = p.agents[:0], p.tools[:0], p.outputs[:0]
}

func (t *reader) Keep(r *recognize.Reading, _ *otelmap.Span, i int32) {
	p := &t.pass
	switch t.kind {
	case kindWorkflow:
		if p.workflows == nil {
			p.workflows = make(map[int32]bool)
		}
		p.workflows[i] = true
	case kindAgent:
		p.agents = append(p.agents, i)
	case kindTool:
		p.tools = append(p.tools, toolRun{span: i, result: t.result})
	}
	if t.output != "" && r.Op == recognize.OpLLM {
		p.outputs = append(p.outputs, output{span: i, json: t.output})
	}
}

// Resolve reparents each agent span run by a tool span (runBy).
func (t *reader) Resolve(tr recognize.Tree) {
	p := &t.pass
	if len(p.workflows) == 0 || len(p.agents) == 0 || len(p.tools) == 0 {
		return
	}
	for _, b := range p.agents {
		if !p.workflows[tr.Parent(b)] || !tr.Named(b) {
			continue
		}
		answer, known := p.answer(tr, b)
		var holders, matching []int32
		for _, tool := range p.tools {
			if !p.holds(tr, tool.span, b) {
				continue
			}
			holders = append(holders, tool.span)
			if known && tool.result != "" && strings.TrimSpace(tool.result) == answer {
				matching = append(matching, tool.span)
			}
		}
		switch {
		case len(holders) == 1 && (len(matching) == 1 || !known || p.resultOf(holders[0]) == ""):
			tr.RunBy(b, holders[0])
		case len(holders) > 1 && len(matching) == 1:
			tr.RunBy(b, matching[0])
		}
	}
}

// holds reports whether tool span x could have run agent span b: same
// process, not under b, under another agent's span, and b's time within
// x's.
func (p *runBy) holds(tr recognize.Tree, x, b int32) bool {
	if tr.Process(x) != tr.Process(b) {
		return false
	}
	underAgent := false
	for a := tr.Parent(x); a >= 0; a = tr.Parent(a) {
		if a == b {
			return false
		}
		if tr.Agent(a) && tr.Named(a) {
			underAgent = true
			break
		}
	}
	if !underAgent {
		return false
	}
	xs, bs := tr.Span(x), tr.Span(b)
	return !xs.Start.After(bs.Start) && !xs.End.Before(bs.End) && !bs.End.IsZero()
}

// resultOf returns tool span x's recorded result.
func (p *runBy) resultOf(x int32) string {
	for _, tool := range p.tools {
		if tool.span == x {
			return tool.result
		}
	}
	return ""
}

// answer returns agent span b's answer: the text of the last-ending model
// call directly under it, and whether one was recorded.
func (p *runBy) answer(tr recognize.Tree, b int32) (string, bool) {
	last := int32(-1)
	for _, o := range p.outputs {
		if tr.Parent(o.span) != b {
			continue
		}
		if last < 0 || tr.Span(o.span).End.After(tr.Span(last).End) {
			last = o.span
		}
	}
	if last < 0 {
		return "", false
	}
	for _, o := range p.outputs {
		if o.span == last {
			text := messageText(o.json)
			return text, text != ""
		}
	}
	return "", false
}

// messageText returns the text parts of the last message of GenAI output
// messages JSON ([{"role", "parts": [{"type": "text", "content"}]}]),
// joined by newlines.
func messageText(v string) string {
	var msgs []struct {
		Parts []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
		} `json:"parts"`
	}
	if json.Unmarshal([]byte(v), &msgs) != nil || len(msgs) == 0 {
		return ""
	}
	var texts []string
	for _, part := range msgs[len(msgs)-1].Parts {
		if s, ok := part.Content.(string); ok && part.Type == "text" {
			texts = append(texts, s)
		}
	}
	return strings.TrimSpace(strings.Join(texts, "\n"))
}
