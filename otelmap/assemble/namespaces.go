package assemble

import (
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/agentns"
)

// Never silent about what was not understood (docs/trace-assembly.md,
// "Spans no rule reads"). A span that carries attributes of an agent or
// GenAI namespace, yet that no recognizer could say anything of in agent
// terms (it is no step, names no agent, is no handoff, no orchestration,
// and no family read its kind), is evidence the trace holds agent work the
// graph does not show. Assembly counts such spans by namespace
// (Coverage.UnreadNamespaces), warns about each namespace, and a trace with
// any is never complete evidence (evals/evidence.go).
//
// Which namespaces are an agent's or GenAI's is decided by a principle,
// not by a list hoped complete:
//
//  1. a registry of the namespaces agent frameworks and GenAI
//     instrumentations are known to write (agentns.Of), matched first
//     so that a framework's namespace inside a standard one
//     (gcp.vertex.agent, Google ADK's) is found;
//  2. otherwise, a namespace that is not one of OpenTelemetry's standard
//     ones (OpenTelemetry's: http, db, user_agent, ...) and whose key
//     speaks of agents, models' prompts and completions or tools: one of
//     its words (split at dots, colons, underscores, dashes and camelCase)
//     is one of agentns's agent words. So "zeta.agent.id" of a framework nobody listed is
//     an agent namespace, "zeta.cache.hits" is not.
//
// VoltAgent's entity.* and span.* are generic names (another library's
// entity.name may be a database table's), so they count only on a span
// VoltAgent's family claimed (entity.type agent or workflow) and could
// still not read, a span.type it does not know: such a span of a root
// agent's run may carry no other key of an agent namespace
// (recognize_voltagent.go). Its other keys (subagent.*, agent.*, llm.*,
// voltagent.*, tool.*) are in the registry.
//
// A span a recognizer did read is not counted for the extra keys it
// carries: a GenAI agent span with a gen_ai.* key no rule looks at is
// still read, and what is unread is detail, not a missing part of the
// team.

// understood reports whether the recognizers said what the span is: a
// step, an agent span, a handoff, an orchestration, a kind a GenAI family
// read (gen_ai.operation.name, openinference.span.kind,
// traceloop.span.kind, coordbench.call_type, a framework's own kind:
// reading.kindRead), a rule of the user's convention map, or a side of a
// call (messaging, HTTP, A2A, a span link). A span of no convention that
// only looks like an agent's by its name is not read: inside a read agent
// the unread-agent rule (build.go) takes it for that agent's work, so it
// is counted here.
func (r *reading) understood(n *node) bool {
	const transport = 1<<famMessaging | 1<<famHTTP | 1<<famA2A | 1<<famLinks
	return n.flags&fStep != 0 || r.mapped != nil || r.handoff || r.agentName != "" || r.a2aAttr || r.ct != ctNone ||
		r.workflow || r.gen.op != "" || r.oi.kind != oiNone || r.tl.kind != tlNone ||
		r.kindRead || r.claimed&transport != 0
}

// noteUnreadNamespaces counts node i's span once for each agent or GenAI
// namespace among its attributes.
func (a *assembler) noteUnreadNamespaces(i int32, sp *otelmap.Span) {
	var seen [8]string
	nSeen := 0
	volt := a.reading.claimed&(1<<famVoltAgent) != 0 // a.reading is node i's (scan)
attrs:
	for k := range sp.Attrs {
		key := string(sp.Attrs[k].Key)
		ns := agentns.Of(key)
		if ns == "" && volt {
			ns = voltAgentNamespace(key)
		}
		if ns == "" {
			continue
		}
		for _, s := range seen[:nSeen] {
			if s == ns {
				continue attrs
			}
		}
		if nSeen < len(seen) {
			seen[nSeen] = ns
			nSeen++
		}
		a.unreadNS.Note(ns, a.nodes[i].id, sp.Name)
	}
}
