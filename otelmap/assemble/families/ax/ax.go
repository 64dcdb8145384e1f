// Package ax is the convention family of Ax (@ax-llm/ax), which writes no
// gen_ai.* attribute on its programs' spans (its provider calls, "AI Chat
// Request", carry the previous GenAI shape and are read by the genai
// family): "ax" in coverage.recognized. Decided from its source,
// @ax-llm/ax 24.0.21 (the TypeScript in index.js.map of the package:
// agent/agentInternal/pipelineForward.ts, dsp/functions.ts,
// dsp/generate.ts, agent/agentInternal/coordinator.ts), read in the live
// corpus's ax-functions program's node_modules, and checked on the
// captures of its ax, ax-globals and ax-functions programs:
//
//   - An AxAgent's run is one INTERNAL span named AxAgent with
//     ax.program.type=AxAgent and ax.program.id = the agent's program id,
//     pipeline.getId() || "root" (pipelineForward.ts). That id is a path,
//     not a name the application gave: every agent run on its own is
//     "root", and an AxAgent parent calls its child agents "<parent
//     id>.<child>" (root.researcher). An AxGen given an agent through
//     getFunction() does not rename it: both children of one AxGen are
//     "root". So ax.program.id names no agent: the span is an agent's run
//     no attribute names (Word.Unnamed).
//   - What names an agent is the function Ax makes of it for a caller:
//     getFunction() returns {name: toCamelCase(agentIdentity.name), func}
//     whose func runs the agent's forward (coordinator.ts), and an AxGen
//     calls a native function in a `Tool: <name>` INTERNAL span with
//     tool.name=<name>, tool.mode=native and function.id (functions.ts,
//     startActiveSpan under the caller's span). The child's AxAgent span
//     starts under context.active(), which is that Tool span. So an AxAgent
//     span whose parent is an Ax native tool span is the run of the agent
//     that function names, called by the agent the tool span is in:
//     decided once the parents are known (pass.go). An AxAgent anywhere
//     else (at a trace's root, or under a span that is not Ax's tool call)
//     stays unnamed: a child called from an AxAgent's JavaScript runtime
//     has no tool span (the ax and ax-globals programs: cut off from its
//     caller, each its own trace).
//   - Ax's tool span is a tool call (OpTool) whether or not its body runs
//     an agent. The family claims it only on tool.mode=native with a
//     span named "Tool: " + tool.name: tool.mode and tool.name are generic
//     keys another library may write otherwise.
//   - ax.program.type values other than AxAgent are left unread (no
//     ax.program.type other than AxAgent is written by 24.0.21; a new one
//     is work this family does not know). AxFlow and the AxGen spans carry
//     no ax.* key: unrecognized, neither agent nor step, as they should be
//     (an AxGen is one generator call; as an agent it has no name).
//
// Ax sets status Error with an exception event on a failed run
// (pipelineForward.ts finish, generate.ts): read as every span's.
package ax

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the Ax family.
var Family recognize.Family = family{}

type family struct{}

// Keys.
const (
	keyProgram  uint8 = iota // ax.*
	keyToolMode              // tool.mode
	keyToolName              // tool.name
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "ax",
		Keys: []recognize.Key{
			recognize.Prefix("ax.", keyProgram),
			recognize.Exact("tool.mode", keyToolMode),
			recognize.Exact("tool.name", keyToolName),
		},
		Identities: []recognize.Identity{{Label: tracedata.IdentityAx, Tier: recognize.NameAttribute}},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// toolPrefix is the name Ax gives a native function call's span.
const toolPrefix = "Tool: "

// reader is what Ax's attributes say of one span, and, across the spans of
// an assembly, what its pass looks at.
type reader struct {
	programType string // ax.program.type
	native      bool   // tool.mode=native
	tool        string // tool.name

	runs   []int32          // AxAgent runs
	tools  map[int32]string // Ax native tool calls: the function each calls
	bodies []int32          // AxAgent runs named by the tool call they run in
}

func (x *reader) Reset() { x.programType, x.native, x.tool = "", false, "" }

func (x *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keyProgram:
		if kv.Key == "ax.program.type" {
			x.programType = recognize.Quiet(kv)
			r.Claim()
		}
	case keyToolMode:
		x.native = recognize.Quiet(kv) == "native"
	case keyToolName:
		x.tool = recognize.Quiet(kv)
	}
}

func (x *reader) Decide(r *recognize.Reading, sp *otelmap.Span) {
	switch {
	case x.programType == "AxAgent":
		r.Say(recognize.TierFramework, recognize.Word{Op: recognize.OpInvoke, Understood: true, Unnamed: true})
	case x.programType != "":
		r.Say(recognize.TierFramework, recognize.Word{}) // a program type this family does not know: unread
	case x.native && x.tool != "" && len(sp.Name) == len(toolPrefix)+len(x.tool) &&
		sp.Name[:len(toolPrefix)] == toolPrefix && sp.Name[len(toolPrefix):] == x.tool:
		r.Say(recognize.TierFramework, recognize.Word{Op: recognize.OpTool, Understood: true, Claims: 1})
	}
}
