package recognize

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// Ax (@ax-llm/ax), which writes no gen_ai.* attribute on its programs'
// spans (its provider calls, "AI Chat Request", carry the previous GenAI
// shape and are read by genai_previous.go). Decided from its source,
// @ax-llm/ax 24.0.21 (the TypeScript in index.js.map of the package:
// agent/agentInternal/pipelineForward.ts, dsp/functions.ts,
// dsp/generate.ts, agent/agentInternal/coordinator.ts), read in the live
// corpus's ax-functions program's node_modules, and checked on the
// captures of ax, ax-globals and ax-functions:
//
//   - An AxAgent's run is one INTERNAL span named AxAgent with
//     ax.program.type=AxAgent and ax.program.id = the agent's program id,
//     pipeline.getId() || "root" (pipelineForward.ts). That id is a path,
//     not a name the application gave: every agent run on its own is
//     "root", and an AxAgent parent calls its child agents "<parent
//     id>.<child>" (root.researcher). An AxGen given an agent through
//     getFunction() does not rename it: both children of one AxGen are
//     "root". So ax.program.id names no agent: the span is an agent's run
//     no attribute names (UnnamedAgent).
//   - What names an agent is the function Ax makes of it for a caller:
//     getFunction() returns {name: toCamelCase(agentIdentity.name), func}
//     whose func runs the agent's forward (coordinator.ts), and an AxGen
//     calls a native function in a `Tool: <name>` INTERNAL span with
//     tool.name=<name>, tool.mode=native and function.id (functions.ts,
//     startActiveSpan under the caller's span). The child's AxAgent span
//     starts under context.active(), which is that Tool span. So an AxAgent
//     span whose parent is an Ax native tool span is the run of the agent
//     that function names, called by the agent the tool span is in:
//     decided in otelmap/assemble/ax.go once the parents are known
//     (AxAgentRun, AxTool). An AxAgent anywhere else (at a trace's root, or
//     under a span that is not Ax's tool call) stays unnamed: a child
//     called from an AxAgent's JavaScript runtime has no tool span (../ax,
//     ../ax-globals: cut off from its caller, each its own trace).
//   - Ax's tool span is a tool call (OpTool) whether or not its body runs
//     an agent. The family claims it only on tool.mode=native with a
//     span named "Tool: " + tool.name: tool.mode and tool.name are generic
//     keys another library may write otherwise.
//   - ax.program.type values other than AxAgent are left unread (no
//     ax.program.type other than AxAgent is written by 24.0.21; a new one
//     is work this file does not know). AxFlow and the AxGen spans carry no
//     ax.* key: unrecognized, neither agent nor step, as they should be (an
//     AxGen is one generator call; as an agent it has no name).
//
// Ax sets status Error with an exception event on a failed run
// (pipelineForward.ts finish, generate.ts): read as every span's.

// axToolPrefix is the name Ax gives a native function call's span.
const axToolPrefix = "Tool: "

// axSlots is what Ax's attributes say.
type axSlots struct {
	programType string // ax.program.type
	programID   string // ax.program.id
	native      bool   // tool.mode=native
	tool        string // tool.name (also read by OpenInference)
}

// readAx reads one of Ax's keys (ax.*, tool.mode, tool.name).
func (r *Reading) readAx(kv *attribute.KeyValue, key string) {
	x := &r.ax
	switch key {
	case "ax.program.type":
		x.programType = quiet(kv)
		r.claim(famAx)
	case "ax.program.id":
		x.programID = quiet(kv)
	case "tool.mode":
		x.native = quiet(kv) == "native"
	case "tool.name":
		x.tool = quiet(kv)
	}
}

// decideAx settles an Ax span's operation; it reports false for a span Ax
// did not write.
func (r *Reading) decideAx(sp *otelmap.Span) bool {
	x := &r.ax
	switch {
	case x.programType == "AxAgent":
		r.Op, r.kindRead, r.UnnamedAgent = OpInvoke, true, true
		return true
	case x.programType != "":
		r.Op = OpNone // a program type this file does not know: unread
		return true
	case x.native && x.tool != "" && len(sp.Name) == len(axToolPrefix)+len(x.tool) &&
		sp.Name[:len(axToolPrefix)] == axToolPrefix && sp.Name[len(axToolPrefix):] == x.tool:
		r.claim(famAx)
		r.Op, r.kindRead = OpTool, true
		return true
	}
	x.native, x.tool = false, ""
	return false
}

// AxAgentRun reports whether the span is an AxAgent's run (named, if at
// all, by the Ax tool call it runs in: otelmap/assemble/ax.go).
func (r *Reading) AxAgentRun() bool { return r.ax.programType == "AxAgent" }

// AxTool returns the function an Ax native tool call calls, "" if the span
// is none.
func (r *Reading) AxTool() string {
	if r.Claimed.Has(famAx) && r.ax.programType == "" {
		return r.ax.tool
	}
	return ""
}
