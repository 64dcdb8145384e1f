package assemble

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
func (r *reading) readGenkit(kv *attribute.KeyValue, key string) {
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
func (g *genkitSlots) operation(r *reading) (op uint8, workflow bool) {
	r.kindRead = g.typ != gkOther
	switch {
	case g.agent():
		if g.name == "" {
			r.unnamedAgent = true
		}
		return opInvoke, false
	case g.typ == gkUtil && g.name == "generate":
		g.generate = true
	case g.typ != gkAction:
	default:
		switch g.subtype {
		case "flow":
			return opNone, true
		case "model", "background-model", "embedder":
			return opLLM, false
		case "tool", "tool.v2", "retriever", "reranker", "indexer", "resource":
			return opTool, false
		case "custom", "dynamic-action-provider", "evaluator", "executable-prompt", "prompt", "util",
			"check-operation", "cancel-operation", "agent-snapshot", "agent-abort":
		default:
			r.kindRead = false // an action type this file does not know
		}
	}
	return opNone, false
}

// resolveGenkit marks the generate loops no prompt or agent ran as agents
// no attribute names: a generate whose parent, past flowStep spans, is not
// a Genkit agent span. A generate under a generate is the same loop's next
// turn and is not counted again. Called once the parents are known.
func (a *assembler) resolveGenkit() {
	if len(a.gkGenerates) == 0 {
		return
	}
	loop := make(map[int32]bool, len(a.gkGenerates))
	for _, i := range a.gkGenerates {
		loop[i] = true
	}
	for _, i := range a.gkGenerates {
		p := a.nodes[i].parent
		if p >= 0 && loop[p] {
			continue
		}
		for p >= 0 && a.nodes[p].proc == a.nodes[i].proc && genkitType(a.span(p).Attrs) == "flowStep" {
			p = a.nodes[p].parent
		}
		if p >= 0 && a.nodes[p].flags&fAgent != 0 && a.nodes[p].selfIdent >= 0 {
			continue // the prompt's or agent's own loop
		}
		n := &a.nodes[i]
		if n.flags&fAgentLike == 0 {
			n.flags |= fAgentLike
			a.agentLike++
		}
		n.flags |= fUnnamedAgent
	}
}

// genkitType returns a span's genkit:type, or "".
func genkitType(attrs []attribute.KeyValue) string {
	for k := range attrs {
		if attrs[k].Key == "genkit:type" {
			return quiet(&attrs[k])
		}
	}
	return ""
}
