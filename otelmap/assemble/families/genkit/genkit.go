// Package genkit is the convention family of Genkit (JS), which writes no
// gen_ai.* attribute: "genkit" in coverage.recognized. Every span it makes
// carries its own genkit:* keys (a colon, not a dot), set by runInNewSpan
// in @genkit-ai/core lib/tracing/instrumentation.mjs (genkit 1.42.0, read
// in the live corpus's genkit program's node_modules, and checked on the
// captures of its genkit and genkit-agents programs): the labels
// genkit:type and, on actions, genkit:metadata:subtype (the action type),
// and at the span's end its metadata: genkit:name, genkit:path,
// genkit:input, genkit:output, genkit:state, genkit:isRoot.
//
//   - genkit:type=dotprompt is a prompt run: wrapInExecutablePrompt in
//     @genkit-ai/ai lib/prompt.mjs (and genkit lib/genkit.mjs for
//     streamed prompts) runs the prompt's generate loop under it, named by
//     genkit:name. A prompt is the named unit of model work in Genkit, what
//     an agent is: an agent span.
//   - genkit:type=action with subtype agent is an agent of genkit/beta's
//     defineAgent (@genkit-ai/ai lib/agent.mjs, actionType "agent"), named
//     by genkit:name: an agent span. Its turns are flowStep spans
//     (runTurn-N).
//   - subtype flow is a flow: the application's entry, an orchestration
//     (never an agent, no step): the agent it runs is called by the user.
//   - subtype model, background-model, embedder: a model call (LLM step);
//     tool, tool.v2, retriever, reranker, indexer, resource: a tool call.
//     A sub-agent run from a tool (a prompt or agent called in a tool's
//     function, genkit/beta's delegate_to_<agent> tools) nests its agent
//     span in the caller's tool span: the call caller -> sub-agent, read by
//     nesting.
//   - genkit:type=util named generate is a generate loop (@genkit-ai/ai
//     lib/generate/action.mjs; each next turn nests in the previous one).
//     Run by a prompt or an agent it is that agent's work. Run by anything
//     else (ai.generate() in a flow or a tool) it names no agent: counted
//     and warned about as an agent no attribute names (pass.go). A flow's
//     name is not taken for the agent: a flow is any function of the
//     application, and naming an agent after it would be a guess.
//   - the other types (promptTemplate, flowStep, userEngagement) and
//     action subtypes (prompt and executable-prompt, which only render,
//     util, evaluator, custom, ...) are neither steps nor calls; a type or
//     subtype this family does not know leaves the span unread.
//
// Genkit sets status Error with an exception event on failure, and none on
// success: read as every span's.
package genkit

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the Genkit family.
var Family recognize.Family = family{}

type family struct{}

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name:       "genkit",
		Keys:       []recognize.Key{recognize.Prefix("genkit:", 0)},
		Identities: []recognize.Identity{{Label: tracedata.IdentityGenkit, Tier: recognize.NameAttribute}},
		Unnamed:    "a Genkit generate run by no prompt or agent",
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// Genkit span types, from genkit:type.
const (
	typNone uint8 = iota
	typDotprompt
	typAction
	typUtil
	typKnown // promptTemplate, flowStep, userEngagement: read, nothing to say
	typOther // a type this family does not know
)

// reader is what the genkit:* attributes say of one span, and, across the
// spans of an assembly, the generate loops its pass looks at.
type reader struct {
	typ     uint8
	subtype string // genkit:metadata:subtype
	name    string // genkit:name

	generates []int32 // generate loops
}

func (g *reader) Reset() { g.typ, g.subtype, g.name = typNone, "", "" }

func (g *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, _ uint8) {
	switch kv.Key {
	case "genkit:type":
		r.Claim()
		switch recognize.Quiet(kv) {
		case "dotprompt":
			g.typ = typDotprompt
		case "action":
			g.typ = typAction
		case "util":
			g.typ = typUtil
		case "promptTemplate", "flowStep", "userEngagement":
			g.typ = typKnown
		default:
			g.typ = typOther
		}
	case "genkit:metadata:subtype":
		g.subtype = recognize.Quiet(kv)
	case otelmap.AttrGenkitName:
		g.name = recognize.Quiet(kv)
	}
}

// agent reports a span Genkit says is an agent's run: a prompt run or a
// defineAgent agent.
func (g *reader) agent() bool {
	return g.typ == typDotprompt || g.typ == typAction && g.subtype == "agent"
}

func (g *reader) Decide(r *recognize.Reading, _ *otelmap.Span) {
	if g.typ == typNone {
		return
	}
	if g.agent() {
		r.Name(0, g.name)
	}
	r.Say(recognize.TierFramework, g.word())
}

// word classifies the span.
func (g *reader) word() recognize.Word {
	w := recognize.Word{Understood: g.typ != typOther}
	switch {
	case g.agent():
		w.Op, w.Unnamed = recognize.OpInvoke, g.name == ""
	case g.typ != typAction:
	default:
		switch g.subtype {
		case "flow":
			w.Workflow = true
		case "model", "background-model", "embedder":
			w.Op = recognize.OpLLM
		case "tool", "tool.v2", "retriever", "reranker", "indexer", "resource":
			w.Op = recognize.OpTool
		case "custom", "dynamic-action-provider", "evaluator", "executable-prompt", "prompt", "util",
			"check-operation", "cancel-operation", "agent-snapshot", "agent-abort":
		default:
			w.Understood = false // an action type this family does not know
		}
	}
	return w
}
