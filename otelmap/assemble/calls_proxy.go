package assemble

import (
	"slices"

	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Proxy agents. A remote agent's local stand-in (docs/trace-assembly.md,
// "Proxy agents") is an agent span in the caller's process whose only work
// is an A2A call answered by an agent in another process: to the user it is that remote agent, under a local name.
// Read literally, the remote agent would be split in two (root -> proxy in
// process, proxy -> remote across processes). An agent span P is a proxy
// when:
//
//   - one in-process call reaches it (nested in its caller's span, or
//     given by a handoff or a link);
//   - every call it makes is a call to another process (both sides or
//     client only), all to the same agent B, a real one (not a
//     server.address, "user" or "unknown" node), other than P's own agent;
//   - it does no work of its own: no LLM or tool step, no agent span of
//     its own process under it (the client agent span of the outgoing call
//     is the call, not work).
//
// Then the call into P and P's calls become calls from P's caller to B
// (each keeps the outgoing call's class and latency, and fails if either
// failed), P's own agent step is B's, and P's name is one of B's aliases,
// not a node.

// proxies merges proxy agent spans into the agents they stand for.
func (a *assembler) proxies() {
	type proxy struct {
		target int32 // the callee of every call out; -1 when they differ
		outs   []int32
	}
	var cands map[int32]*proxy
	var order []int32
	for k := range a.calls {
		c := &a.calls[k]
		p := c.callerSpan
		if p < 0 {
			continue
		}
		// The one in-process call into p is the call its node records.
		if in := a.nodes[p].call; in < 0 || a.calls[in].calleeSpan != p {
			continue
		}
		if cands == nil {
			cands = make(map[int32]*proxy)
		}
		x := cands[p]
		if x == nil {
			x = &proxy{target: c.callee}
			cands[p] = x
			order = append(order, p)
		}
		if c.class != classBoth && c.class != classClient || c.callee != x.target {
			x.target = -1
		}
		x.outs = append(x.outs, int32(k))
	}
	slices.SortFunc(order, a.compareStart)
	for _, p := range order {
		x := cands[p]
		b := x.target
		if b < 0 || b == a.nodes[p].selfIdent || (a.idents[b].virtual && !a.idents[b].real) || a.ownWork(p) {
			continue
		}
		in := &a.calls[a.nodes[p].call]
		for _, k := range x.outs {
			out := &a.calls[k]
			out.caller = in.caller
			out.failed = out.failed || in.failed
		}
		in.class = classDropped
		if a.proxyOf == nil {
			a.proxyOf = make(map[int32]int32)
		}
		a.proxyOf[p] = b
		name := a.idents[a.nodes[p].selfIdent].name
		if t := &a.idents[b]; !slices.Contains(t.aliases, name) {
			t.aliases = append(t.aliases, name)
		}
	}
}

// ownWork reports whether agent span p does work of its own: an LLM or tool
// step, or an agent span of its process, below it.
func (a *assembler) ownWork(p int32) bool {
	stack := append(a.scratch[:0], p)
	defer func() { a.scratch = stack[:0] }()
	pr := a.nodes[p].proc
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, k := range a.children(x) {
			kn := &a.nodes[k]
			if kn.parent != x || kn.proc != pr {
				continue
			}
			if kn.op == recognize.OpLLM || kn.op == recognize.OpTool || kn.isAgentSpan() {
				return true
			}
			stack = append(stack, k)
		}
	}
	return false
}

// stepAgent returns the agent a step of node n is attributed to: the
// agent doing its work, or, for work done by a proxy, the agent it stood
// for.
func (a *assembler) stepAgent(n *node) int32 {
	if a.proxyOf != nil && n.agentSpan >= 0 {
		if b, ok := a.proxyOf[n.agentSpan]; ok {
			return b
		}
	}
	return n.agent
}
