package recognize

import (
	"github.com/coordbench/coordbench/otelmap"
	"go.opentelemetry.io/otel/attribute"
)

// Genkit (JS), which writes no gen_ai.* attribute: every span it makes
// carries its own genkit:* keys (a colon, not a dot), set by runInNewSpan
// in @genkit-ai/core lib/tracing/instrumentation.mjs (genkit 1.42.0, read
// in the live corpus's genkit program's node_modules): the labels
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
//     and warned about as an agent no attribute names (resolveGenkit). A
//     flow's name is not taken for the agent: a flow is any function of the
//     application, and naming an agent after it would be a guess.
//   - the other types (promptTemplate, flowStep, userEngagement) and
//     action subtypes (prompt and executable-prompt, which only render,
//     util, evaluator, custom, ...) are neither steps nor calls.
//
// Genkit sets status Error with an exception event on failure, and none on
// success: read as every span's.

// Genkit span types, from genkit:type.
const (
	gkNone uint8 = iota
	gkDotprompt
	gkAction
	gkUtil
	gkKnown // promptTemplate, flowStep, userEngagement: read, nothing to say
	gkOther // a type this file does not know
)

// genkitSlots is what the genkit:* attributes say.
type genkitSlots struct {
	typ      uint8
	subtype  string // genkit:metadata:subtype
	name     string // genkit:name
	generate bool   // a generate loop (set by operation)
}

// readGenkit reads one genkit:* attribute.
func (r *Reading) readGenkit(kv *attribute.KeyValue, key string) {
	g := &r.gk
	switch key {
	case "genkit:type":
		r.claim(famGenkit)
		switch quiet(kv) {
		case "dotprompt":
			g.typ = gkDotprompt
		case "action":
			g.typ = gkAction
		case "util":
			g.typ = gkUtil
		case "promptTemplate", "flowStep", "userEngagement":
			g.typ = gkKnown
		default:
			g.typ = gkOther
		}
	case "genkit:metadata:subtype":
		g.subtype = quiet(kv)
	case string(otelmap.AttrGenkitName):
		g.name = quiet(kv)
	}
}

// agent reports a span Genkit says is an agent's run: a prompt run or a
// defineAgent agent.
func (g *genkitSlots) agent() bool {
	return g.typ == gkDotprompt || g.typ == gkAction && g.subtype == "agent"
}

// operation classifies the span for decide, and reports whether the
// family knew its kind.
func (g *genkitSlots) operation(r *Reading) (op Op, workflow bool) {
	r.kindRead = g.typ != gkOther
	switch {
	case g.agent():
		if g.name == "" {
			r.UnnamedAgent = true
		}
		return OpInvoke, false
	case g.typ == gkUtil && g.name == "generate":
		g.generate = true
	case g.typ != gkAction:
	default:
		switch g.subtype {
		case "flow":
			return OpNone, true
		case "model", "background-model", "embedder":
			return OpLLM, false
		case "tool", "tool.v2", "retriever", "reranker", "indexer", "resource":
			return OpTool, false
		case "custom", "dynamic-action-provider", "evaluator", "executable-prompt", "prompt", "util",
			"check-operation", "cancel-operation", "agent-snapshot", "agent-abort":
		default:
			r.kindRead = false // an action type this file does not know
		}
	}
	return OpNone, false
}

// GenkitFlowStep reports a Genkit flowStep span (genkit:type flowStep), a
// step of a flow, through which a generate loop looks for the prompt or
// agent that runs it.
func GenkitFlowStep(sp *otelmap.Span) bool {
	for k := range sp.Attrs {
		if sp.Attrs[k].Key == "genkit:type" {
			return quiet(&sp.Attrs[k]) == "flowStep"
		}
	}
	return false
}
