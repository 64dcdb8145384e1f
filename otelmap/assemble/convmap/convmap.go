// Package convmap loads and validates a convention map: the YAML file in
// which a user teaches trace assembly a framework no built-in family reads
// (docs/trace-assembly.md, "A convention map"), and matches its rules
// against spans. A loaded Map is a convention family like the built-in
// ones (recognize.Family, family.go): what a matched span means among the
// others is assembly's (otelmap/assemble).
package convmap

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
	yaml "go.yaml.in/yaml/v3"
)

// A convention map: what a user writes to teach assembly a framework no
// built-in family reads (docs/trace-assembly.md, "A convention map"). It
// is one more convention family, "conventions", and comes first in the
// precedence after coordbench.call_type: a rule that matches a span is the
// user's word on what their framework's span is. Spans no rule matches are
// read by the built-in families as before.
//
// The file is YAML (JSON is YAML too), read with go.yaml.in/yaml/v3, the
// YAML organisation's maintained line of gopkg.in/yaml.v3, already in the
// module graph: its node tree keeps each value's line and column, so every
// error names the line to fix. Unknown keys are errors, so a misspelt rule
// cannot silently do nothing.
//
//	name: vercel-ai-sdk
//	rules:                      # the first rule that matches a span wins
//	  - match:                  # every condition given must hold
//	      span_name: '^ai\.(generateText|streamText)$'   # RE2, on the span's name
//	      attribute: ai.telemetry.functionId             # the attribute is present
//	      value: '.'                                     # RE2, on its value (with attribute)
//	      kind: internal        # client, server, internal, producer, consumer
//	    is: agent               # agent, llm, tool, handoff, workflow or none
//	    agent: {attribute: ai.telemetry.functionId}      # the agent's name (is: agent)
//	  - match: {span_name: '^ai\.toolCall$', attribute: ai.toolCall.name, value: '^delegate$'}
//	    is: handoff
//	    target: {attribute: ai.toolCall.args, json: [agentName, agent_name]}
//	control_flow:               # an error status that is control flow, not a failure
//	  - exception_type: '^ParentCommand$'
//	  - status_message: '^Command'
//
// A name (agent, target) is read from an attribute (its string value, or
// the first member of json found in the JSON object it holds) or from the
// span's name (span_name: an RE2 with one group).

// Map is a loaded, validated convention map. A nil *Map reads nothing.
type Map struct {
	name  string
	rules []Rule
	flows []controlFlowRule
}

// Name is the map's name, as given in its file.
func (c *Map) Name() string { return c.name }

// Is is what a rule says a matching span is.
type Is uint8

// What a rule says a span is (the rule's is:).
const (
	None     Is = iota // none: a span of no step
	Agent              // agent: an agent's invocation
	LLM                // llm: a model call
	Tool               // tool: a tool call
	Handoff            // handoff: a tool call that hands control to Target
	Workflow           // workflow: a span around agents, no step of its own
)

// Rule is one rule: a span that matches is what the rule says.
type Rule struct {
	spanName  *regexp.Regexp
	attribute string
	value     *regexp.Regexp
	kind      trace.SpanKind // 0: any kind

	Is     Is
	Agent  *Value // where an agent rule reads the agent's name
	Target *Value // where a handoff rule reads its target's name
}

// Value says where a name is read.
type Value struct {
	attribute string
	json      []string
	spanName  *regexp.Regexp
}

// controlFlowRule is an error status that is control flow.
type controlFlowRule struct {
	statusMessage *regexp.Regexp
	exceptionType *regexp.Regexp
}

// Load reads and validates a convention map file.
func Load(path string) (*Map, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("convention map: %w", err)
	}
	return Parse(data, path)
}

// maxConventionsBytes bounds a convention map file: a map is a dozen
// lines; a megabyte is a mistake.
const maxConventionsBytes = 1 << 20

// Parse validates a convention map; source names it in errors
// ("conventions.yaml:7:5: ..."). All errors are reported, in line order.
func Parse(data []byte, source string) (*Map, error) {
	if len(data) > maxConventionsBytes {
		return nil, fmt.Errorf("%s: convention map is %d bytes, more than the %d allowed", source, len(data), maxConventionsBytes)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:1:1: convention map is empty", source)
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	p := &convParser{source: source}
	c := p.document(&doc)
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(x, y convError) int { return cmp.Or(cmp.Compare(x.line, y.line), cmp.Compare(x.col, y.col)) })
		errs := make([]error, len(p.errs))
		for i, e := range p.errs {
			errs[i] = fmt.Errorf("%s:%d:%d: %s", source, e.line, e.col, e.msg)
		}
		return nil, errors.Join(errs...)
	}
	return c, nil
}

type convError struct {
	line, col int
	msg       string
}

// convParser walks the YAML node tree, collecting errors with their
// positions.
type convParser struct {
	source string
	errs   []convError
}

func (p *convParser) errorf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, convError{line: n.Line, col: n.Column, msg: fmt.Sprintf(format, args...)})
}

// fields checks that n is a mapping with only the allowed keys and
// returns its values by key.
func (p *convParser) fields(n *yaml.Node, what string, allowed ...string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", what)
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(allowed, k.Value):
			p.errorf(k, "%s: unknown key %q (want one of %s)", what, k.Value, strings.Join(allowed, ", "))
		case out[k.Value] != nil:
			p.errorf(k, "%s: key %q given twice", what, k.Value)
		default:
			out[k.Value] = v
		}
	}
	return out
}

func (p *convParser) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!bool" {
		p.errorf(n, "%s must be a string", what)
		return ""
	}
	if n.Value == "" {
		p.errorf(n, "%s is empty", what)
	}
	return n.Value
}

func (p *convParser) regex(n *yaml.Node, what string) *regexp.Regexp {
	s := p.str(n, what)
	if s == "" {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		p.errorf(n, "%s: %v", what, err)
		return nil
	}
	return re
}

func (p *convParser) document(doc *yaml.Node) *Map {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.errs = append(p.errs, convError{line: 1, col: 1, msg: "convention map is empty"})
		return nil
	}
	top := p.fields(doc.Content[0], "convention map", "name", "rules", "control_flow")
	if top == nil {
		return nil
	}
	c := &Map{}
	if n := top["name"]; n != nil {
		c.name = p.str(n, "name")
	} else {
		p.errorf(doc.Content[0], "convention map: name is missing")
	}
	rules, flow := top["rules"], top["control_flow"]
	if rules == nil && flow == nil {
		p.errorf(doc.Content[0], "convention map: neither rules nor control_flow given: it would read nothing")
	}
	if rules != nil {
		if rules.Kind != yaml.SequenceNode {
			p.errorf(rules, "rules must be a list")
		} else {
			for i, r := range rules.Content {
				c.rules = append(c.rules, p.rule(r, fmt.Sprintf("rules[%d]", i)))
			}
		}
	}
	if flow != nil {
		if flow.Kind != yaml.SequenceNode {
			p.errorf(flow, "control_flow must be a list")
		} else {
			for i, f := range flow.Content {
				c.flows = append(c.flows, p.controlFlow(f, fmt.Sprintf("control_flow[%d]", i)))
			}
		}
	}
	return c
}

var convKinds = map[string]trace.SpanKind{
	"internal": trace.SpanKindInternal, "server": trace.SpanKindServer, "client": trace.SpanKindClient,
	"producer": trace.SpanKindProducer, "consumer": trace.SpanKindConsumer,
}

func (p *convParser) rule(n *yaml.Node, what string) Rule {
	var r Rule
	f := p.fields(n, what, "match", "is", "agent", "target")
	if f == nil {
		return r
	}
	if m := f["match"]; m != nil {
		mf := p.fields(m, what+".match", "span_name", "attribute", "value", "kind")
		if mf != nil {
			if len(mf) == 0 {
				p.errorf(m, "%s.match has no condition: it would match every span", what)
			}
			if v := mf["span_name"]; v != nil {
				r.spanName = p.regex(v, what+".match.span_name")
			}
			if v := mf["attribute"]; v != nil {
				r.attribute = p.str(v, what+".match.attribute")
			}
			if v := mf["value"]; v != nil {
				r.value = p.regex(v, what+".match.value")
				if mf["attribute"] == nil {
					p.errorf(v, "%s.match.value needs match.attribute: the value of which attribute?", what)
				}
			}
			if v := mf["kind"]; v != nil {
				k, ok := convKinds[strings.ToLower(v.Value)]
				if !ok {
					p.errorf(v, "%s.match.kind: %q is not one of client, server, internal, producer, consumer", what, v.Value)
				}
				r.kind = k
			}
		}
	} else {
		p.errorf(n, "%s: match is missing", what)
	}
	is := f["is"]
	if is == nil {
		p.errorf(n, "%s: is is missing (agent, llm, tool, handoff, workflow or none)", what)
		return r
	}
	switch p.str(is, what+".is") {
	case "agent":
		r.Is = Agent
		if f["agent"] == nil {
			p.errorf(is, "%s: an agent rule needs agent: where the agent's name is", what)
		}
	case "llm":
		r.Is = LLM
	case "tool":
		r.Is = Tool
	case "handoff":
		r.Is = Handoff
	case "workflow":
		r.Is = Workflow
	case "none":
	case "":
	default:
		p.errorf(is, "%s.is: %q is not one of agent, llm, tool, handoff, workflow, none", what, is.Value)
	}
	if v := f["agent"]; v != nil {
		if r.Is != Agent {
			p.errorf(v, "%s.agent is read only on an agent rule (is: agent)", what)
		}
		r.Agent = p.value(v, what+".agent")
	}
	if v := f["target"]; v != nil {
		if r.Is != Handoff {
			p.errorf(v, "%s.target is read only on a handoff rule (is: handoff)", what)
		}
		r.Target = p.value(v, what+".target")
	}
	return r
}

func (p *convParser) value(n *yaml.Node, what string) *Value {
	f := p.fields(n, what, "attribute", "json", "span_name")
	if f == nil {
		return nil
	}
	v := &Value{}
	attr, name := f["attribute"], f["span_name"]
	switch {
	case attr != nil && name != nil:
		p.errorf(n, "%s: give attribute or span_name, not both", what)
	case attr != nil:
		v.attribute = p.str(attr, what+".attribute")
	case name != nil:
		v.spanName = p.regex(name, what+".span_name")
		if v.spanName != nil && v.spanName.NumSubexp() != 1 {
			p.errorf(name, "%s.span_name must have exactly one group, the name (it has %d)", what, v.spanName.NumSubexp())
		}
	default:
		p.errorf(n, "%s: attribute or span_name is missing", what)
	}
	if j := f["json"]; j != nil {
		if attr == nil {
			p.errorf(j, "%s.json reads an attribute's JSON value: it needs attribute", what)
		}
		switch j.Kind {
		case yaml.ScalarNode:
			v.json = []string{p.str(j, what+".json")}
		case yaml.SequenceNode:
			for _, m := range j.Content {
				v.json = append(v.json, p.str(m, what+".json"))
			}
			if len(v.json) == 0 {
				p.errorf(j, "%s.json is an empty list", what)
			}
		default:
			p.errorf(j, "%s.json must be a member name or a list of them", what)
		}
	}
	return v
}

func (p *convParser) controlFlow(n *yaml.Node, what string) controlFlowRule {
	var r controlFlowRule
	f := p.fields(n, what, "status_message", "exception_type")
	if f == nil {
		return r
	}
	if v := f["status_message"]; v != nil {
		r.statusMessage = p.regex(v, what+".status_message")
	}
	if v := f["exception_type"]; v != nil {
		r.exceptionType = p.regex(v, what+".exception_type")
	}
	if len(f) == 0 {
		p.errorf(n, "%s: give status_message or exception_type", what)
	}
	return r
}
