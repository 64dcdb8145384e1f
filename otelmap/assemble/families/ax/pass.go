package ax

import (
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

func (x *reader) Begin() {
	x.runs, x.bodies = x.runs[:0], x.bodies[:0]
	clear(x.tools)
}

// Keep keeps the AxAgent runs, and the native tool calls the family
// claimed with the function each calls.
func (x *reader) Keep(r *recognize.Reading, _ *otelmap.Span, i int32) {
	switch {
	case x.programType == "AxAgent":
		x.runs = append(x.runs, i)
	case r.Claims() && x.programType == "" && x.tool != "":
		if x.tools == nil {
			x.tools = make(map[int32]string)
		}
		x.tools[i] = x.tool
	}
}

// Resolve makes agent spans of the AxAgent runs whose parent, in the same
// process, is an Ax native tool call: the agent is the one that function
// names, called by whoever made the tool call (by nesting, like any
// sub-agent run from a tool). Every other AxAgent run stays an agent no
// attribute names: at a trace's root it is cut off from its caller (a
// child called from an AxAgent's JavaScript runtime) or the top of the
// run, and its ax.program.id ("root", "root.researcher") is a path, not a
// name.
func (x *reader) Resolve(t recognize.Tree) {
	for _, i := range x.runs {
		p := t.Parent(i)
		if p < 0 || t.Process(p) != t.Process(i) {
			continue
		}
		name, ok := x.tools[p]
		if !ok {
			continue
		}
		t.MakeAgent(i, name, 0)
		t.ForgetUnnamed(i)
		x.bodies = append(x.bodies, i)
	}
}

// Finish counts the caller of an Ax native tool call that ran an agent as
// an unnamed agent (the AxGen: Ax records no name for it) when the call is
// in no agent's run and its service does not stand for it
// (Tree.ServiceCall): that call has no caller, so the graph is not called
// complete without it.
func (x *reader) Finish(t recognize.Tree) {
	for _, b := range x.bodies {
		if t.ServiceCall(b) {
			continue
		}
		tool := t.Parent(b)
		p := t.Parent(tool)
		for p >= 0 && t.Process(p) == t.Process(tool) && !t.Agent(p) {
			p = t.Parent(p)
		}
		if p >= 0 && t.Agent(p) {
			continue
		}
		g := tool
		if q := t.Parent(tool); q >= 0 && t.Process(q) == t.Process(tool) {
			g = q
		}
		t.MarkUnnamed(g)
	}
}
