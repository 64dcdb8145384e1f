package assemble

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Services that host several agents.
//
// In a process whose spans name no agent, the agent is its service.name
// (identity.go): one process, one agent. Plain HTTP spans between A2A
// services (each agent a service, nothing but the HTTP instrumentation
// recording them) are read so, and read exactly while each agent runs in a
// process of its own. A Node or Python service that hosts several A2A
// agents breaks the rule silently: their calls merge into one node named by
// the service, and the graph is wrong in its shape while every call is seen
// from both sides.
//
// The spans themselves show when a process is more than one server: it
// received calls at two or more local ports, or served agent cards from two
// or more bases (two ports, or one port with agents mounted under
// /researcher and /writer). Such a process's service.name does not name
// one agent, and no rule can tell its agents apart: sharedServices reports
// it, with the endpoints seen, and the graph evaluator holds the trace to be
// no evidence of the team's structure (evals/evidence.go). Routes are not
// counted: one HTTP service answers many, and one A2A agent has one
// JSON-RPC URL but many REST paths.

// sharedServices returns, by service.name, the endpoints of each process
// that names no agent yet received calls at several ports or served agent
// cards from several bases, and a warning per service.
func (a *assembler) sharedServices() (map[string][]string, []string) {
	type seen struct{ ports, cards map[string]bool }
	var byProc map[int32]*seen
	for _, i := range a.order {
		n := &a.nodes[i]
		pr := &a.procs[n.proc]
		if pr.agent >= 0 || pr.service == "" || pr.assessor {
			continue
		}
		entry := n.flags&fEntry != 0 && n.role == recognize.RoleServer
		l, ok := recognize.ServerListener(a.span(i))
		if !ok || !entry && !l.Card {
			continue
		}
		if byProc == nil {
			byProc = map[int32]*seen{}
		}
		s := byProc[n.proc]
		if s == nil {
			s = &seen{ports: map[string]bool{}, cards: map[string]bool{}}
			byProc[n.proc] = s
		}
		port := ""
		if l.Port != 0 {
			port = fmt.Sprintf(":%d", l.Port)
		}
		if entry && l.Port != 0 {
			s.ports[port] = true
		}
		if l.Card {
			s.cards[port+l.CardBase+"/"] = true
		}
	}
	var out map[string][]string
	var warnings []string
	for _, p := range slices.Sorted(maps.Keys(byProc)) {
		s := byProc[p]
		var eps []string
		switch {
		case len(s.cards) > 1:
			eps = slices.Sorted(maps.Keys(s.cards))
		case len(s.ports) > 1:
			eps = slices.Sorted(maps.Keys(s.ports))
		default:
			continue
		}
		svc := a.procs[p].service
		if out == nil {
			out = map[string][]string{}
		}
		out[svc] = eps
		what := "received calls at"
		if len(s.cards) > 1 {
			what = "served agent cards at"
		}
		warnings = append(warnings, fmt.Sprintf(
			"service %q %s %d endpoints (%s) and no span names an agent: its service.name stands for every agent it hosts, merged into one in the graph; name each agent on its spans (gen_ai.agent.name) or run each in a service of its own",
			svc, what, len(eps), strings.Join(eps, ", ")))
	}
	return out, warnings
}
