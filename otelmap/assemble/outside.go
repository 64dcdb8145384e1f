package assemble

import "github.com/coordbench/coordbench/otelmap/assemble/recognize"

// Agents called from outside any agent span (docs/trace-assembly.md, "An
// agent called by an unnamed agent"). A model-driven program that no span
// names as an agent (a framework's generator with native functions, a
// hand-written tool loop) can still call agents: its model chooses a tool, and the
// tool's body runs an agent. Its process's service.name then stands for
// it, as it does for a process whose spans name no agent at all.

// serviceCallers marks the segment roots whose work outside any agent span
// is an unnamed agent's (fServiceAgent) and the agent spans that agent
// calls (fServiceCall). All of these must hold, so that no caller is
// invented:
//
//   - the segment's root is a root of the trace: no parent id at all. A
//     received call (an entry under another process's span) names its
//     callee by the first agent below it, and a root whose parent is
//     missing is a fragment of someone else's work: its caller may be an
//     agent span that was not exported;
//   - its process has a service.name (no "unknown" caller is made up);
//   - the root is one run of that program: the LLM call and the tool call
//     are its direct children, the LLM call started no later than the tool
//     call, and the tool call's body, in the same process with no agent
//     span between, is an agent span: a model chose the tool that ran the
//     agent, so an agent made the call, and no span names it;
//   - no span from the root down to the agent span is an agent its
//     framework marked but did not name, or a span that looks like an
//     agent's (fUnnamedAgent, fAgentLike: a generation loop its framework
//     ran with no name recorded): that agent is counted as unnamed, and
//     the service does not stand in for it;
//   - the process has one such root in the trace: two runs would be read
//     as one agent.
//
// A root that holds no such call keeps its identity (rootIdentity). Runs
// once the segments are known (structure), before identify.
func (a *assembler) serviceCallers() {
	nodes := a.nodes
	// outside: the span is in its segment's work outside any agent span;
	// tool: ... and is, or is inside, a tool call there (the earliest).
	outside := make([]bool, len(nodes))
	tool := make([]int32, len(nodes))
	firstLLM := make(map[int32]int64) // segment root -> earliest outside LLM start
	var bodies []int32
	for _, i := range a.order {
		n := &nodes[i]
		tool[i] = -1
		r := n.segRoot
		rn := &nodes[r]
		if rn.flags&(fHasParentID|fToolServer) != 0 || a.procs[n.proc].service == "" {
			continue
		}
		inside := i == r || outside[n.parent]
		if !inside || n.flags&(fAgentLike|fUnnamedAgent) != 0 {
			continue
		}
		if n.isAgentSpan() {
			if i != r && n.flags&fNested != 0 && tool[n.parent] >= 0 {
				bodies = append(bodies, i)
			}
			continue
		}
		outside[i] = true
		if i != r {
			tool[i] = tool[n.parent]
		}
		if n.flags&fStep == 0 {
			continue
		}
		if n.parent != r {
			continue
		}
		switch n.op {
		case recognize.OpLLM:
			if s, ok := firstLLM[r]; !ok || n.start < s {
				firstLLM[r] = n.start
			}
		case recognize.OpTool:
			if tool[i] < 0 {
				tool[i] = i
			}
		}
	}
	rootOf := make(map[int32]int32) // process -> its one such root, -1 for several
	var called []int32
	for _, b := range bodies {
		n := &nodes[b]
		r := n.segRoot
		s, ok := firstLLM[r]
		if !ok || nodes[tool[n.parent]].start < s {
			continue
		}
		if x, seen := rootOf[n.proc]; seen && x != r {
			rootOf[n.proc] = -1
		} else if !seen {
			rootOf[n.proc] = r
		}
		called = append(called, b)
	}
	for _, b := range called {
		n := &nodes[b]
		if rootOf[n.proc] != n.segRoot {
			continue
		}
		n.flags |= fServiceCall
		nodes[n.segRoot].flags |= fServiceAgent
	}
}
