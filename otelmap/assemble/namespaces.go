package assemble

import (
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/agentns"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
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
//  1. a registry of the namespaces frameworks of agents and GenAI
//     instrumentations are known to write (agentns.Of), matched first
//     so that a framework's namespace inside a standard one
//     (gcp.vertex.agent) is found;
//  2. otherwise, a namespace that is not one of OpenTelemetry's standard
//     ones (OpenTelemetry's: http, db, user_agent, ...) and whose key
//     speaks of agents, models' prompts and completions or tools: one of
//     its words (split at dots, colons, underscores, dashes and camelCase)
//     is one of agentns's agent words. So "zeta.agent.id" of a framework nobody listed is
//     an agent namespace, "zeta.cache.hits" is not.
//
// Some frameworks write namespaces of generic names (entity.*, span.*:
// another library's entity.name may be a database table's): those count
// only on a span the framework's family claimed and could still not read
// (recognize.Namespacer, recognize.Reading.AgentNamespace).
//
// What the families understood is recognize.Reading.Understood.
// A span a family did read is not counted for the extra keys it
// carries: a GenAI agent span with a gen_ai.* key no rule looks at is
// still read, and what is unread is detail, not a missing part of the
// team.

// noteUnreadNamespaces counts node i's span once for each agent or GenAI
// namespace among its attributes; r is its reading.
func (a *assembler) noteUnreadNamespaces(i int32, sp *otelmap.Span, r *recognize.Reading) {
	var seen [8]string
	nSeen := 0
attrs:
	for k := range sp.Attrs {
		key := string(sp.Attrs[k].Key)
		ns := agentns.Of(key)
		if ns == "" {
			ns = r.AgentNamespace(key)
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
