package assemble

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/agentns"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// This file writes the TraceData: the trace's times, the steps (steps.go),
// the interactions (calls aggregated by caller and callee), the agents and
// the coverage with its warnings.

// maxAttrWarnings caps the attribute warnings listed one by one.
const maxAttrWarnings = 20

// startKey orders steps and calls by start time, then span id (unique among
// steps, and among calls, so the order is total).
//
// slices.SortFunc sorts them. A radix sort on the start time was measured
// against it on the assembly benchmark's million-span trace (2-core AMD
// EPYC, Go 1.26, shared machine): 13-14 ms against 44-47 ms for its 450,000
// steps, about 3% of the assembly, within the benchmark's noise, so the
// standard library's sort is used.
type startKey struct {
	t  int64 // Unix ns; 0 (unset) sorts first
	id uint64
	ix int32
}

func compareStart(x, y startKey) int {
	if x.t != y.t {
		return cmp.Compare(x.t, y.t)
	}
	return cmp.Compare(x.id, y.id)
}

// build writes the TraceData.
func (a *assembler) build() *tracedata.TraceData {
	td := &tracedata.TraceData{
		TraceID:      a.traceID.String(),
		Steps:        []tracedata.Step{},
		Agents:       []tracedata.Agent{},
		Interactions: []tracedata.Interaction{},
	}
	td.Coverage.SpansBySource = map[string]int{}
	td.Coverage.Services = []string{}
	td.Coverage.Spans = len(a.nodes)

	anyAssessor := false
	for _, p := range a.procs {
		anyAssessor = anyAssessor || p.assessor
	}
	var start, end int64
	var nSteps int
	var bySource [3]int
	for i := range a.nodes {
		n := &a.nodes[i]
		if n.flags&fStep != 0 {
			nSteps++
		}
		if n.start != 0 && n.end >= n.start {
			if start == 0 || n.start < start {
				start = n.start
			}
			end = max(end, n.end)
		}
		switch {
		case n.flags&fExt != 0:
			bySource[2]++
		case a.spans[n.sp].Source == otelmap.SourceInProcess:
			bySource[0]++
		case a.spans[n.sp].Source == otelmap.SourceOTLP:
			bySource[1]++
		default:
			src := a.spans[n.sp].Source
			if src == "" {
				src = "unknown"
			}
			td.Coverage.SpansBySource[src]++
		}
		if anyAssessor && a.procs[n.proc].assessor && n.flags&fExt == 0 {
			a.idents[n.agent].assessor = true
		}
	}
	for k, src := range [3]string{otelmap.SourceInProcess, otelmap.SourceOTLP, otelmap.SourceExtension} {
		if bySource[k] > 0 {
			td.Coverage.SpansBySource[src] += bySource[k]
		}
	}
	if start != 0 {
		td.Start, td.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
		td.DurationMS = float64(end-start) / float64(time.Millisecond)
	}

	if a.withoutSteps {
		a.markStepAgents()
	} else {
		a.buildSteps(td, nSteps)
	}
	a.buildInteractions(td)
	a.buildAgents(td)
	a.buildCoverage(td)
	a.buildEvidence(td)
	return td
}

// pairScan is the most interactions buildInteractions finds by a scan.
const pairScan = 16

// interactionKey keys an interaction by its identities.
func interactionKey(from, to int32) uint64 { return uint64(uint32(from))<<32 | uint64(uint32(to)) }

// buildInteractions sorts the calls by start and aggregates them by
// (caller, callee) into td.Interactions, counting coverage as it goes;
// self-calls are dropped.
func (a *assembler) buildInteractions(td *tracedata.TraceData) {
	// The keys and the sorted calls are the workspace's (workspace.go):
	// the calls sorted take the place of the calls, and the calls's array
	// is the next trace's sortedCalls.
	keys := slices.Grow(a.startKeys[:0], len(a.calls))[:len(a.calls)]
	for k, c := range a.calls {
		keys[k] = startKey{t: c.start, id: c.key, ix: int32(k)}
	}
	slices.SortFunc(keys, compareStart)
	sorted := slices.Grow(a.sortedCalls[:0], len(a.calls))[:len(a.calls)]
	for k, key := range keys {
		sorted[k] = a.calls[key.ix]
	}
	a.startKeys = keys[:0]
	a.calls, a.sortedCalls = sorted, a.calls[:0]
	// The interactions of a pair are found by a scan of the few a trace
	// has, by a map past pairScan of them.
	var pairBuf [pairScan]uint64
	pairs := pairBuf[:0] // each interaction's key
	var byPair map[uint64]int
	find := func(key uint64) (int, bool) {
		if byPair != nil {
			ix, ok := byPair[key]
			return ix, ok
		}
		for ix, k := range pairs {
			if k == key {
				return ix, true
			}
		}
		return 0, false
	}
	// The interactions' array is made once at its size: the pairs are
	// counted first, by a scan of up to pairScan of them.
	n := 0
	for k := range a.calls {
		c := &a.calls[k]
		if c.class == classDropped || c.caller == c.callee {
			continue
		}
		if key := interactionKey(c.caller, c.callee); !slices.Contains(pairs, key) {
			if len(pairs) == pairScan {
				n = 2 * pairScan // many: append grows it past that
				break
			}
			pairs = append(pairs, key)
		}
	}
	if n == 0 {
		n = len(pairs)
	}
	pairs = pairs[:0]
	cov := &td.Coverage
	for k := range a.calls {
		c := &a.calls[k]
		if c.class == classDropped {
			continue
		}
		if c.caller == c.callee {
			continue // a call to oneself makes no node: it did no step of its own
		}
		a.idents[c.caller].used = true
		a.idents[c.callee].used = true
		key := interactionKey(c.caller, c.callee)
		ix, ok := find(key)
		if !ok {
			ix = len(td.Interactions)
			switch {
			case byPair != nil:
				byPair[key] = ix
			case len(pairs) < pairScan:
				pairs = append(pairs, key)
			default:
				byPair = make(map[uint64]int, 2*pairScan)
				for k, p := range pairs {
					byPair[p] = k
				}
				byPair[key] = ix
			}
			if len(td.Interactions) == 0 {
				td.Interactions = make([]tracedata.Interaction, 0, n)
			}
			td.Interactions = append(td.Interactions, tracedata.Interaction{
				From: a.idents[c.caller].name, To: a.idents[c.callee].name,
			})
		}
		in := &td.Interactions[ix]
		in.Count++
		cov.Interactions++
		if c.failed {
			in.Errors++
		}
		in.LatenciesMS = append(in.LatenciesMS, c.latencyMS)
		switch c.class {
		case classBoth:
			in.BothSides++
			cov.BothSides++
		case classClient:
			in.ClientOnly++
			cov.ClientOnly++
		case classServer:
			in.ServerOnly++
			cov.ServerOnly++
		case classInProcess:
			in.InProcess++
			cov.InProcess++
		case classExtension:
			in.ExtensionOnly++
			cov.ExtensionOnly++
		}
	}
	slices.SortFunc(td.Interactions, func(x, y tracedata.Interaction) int {
		return cmp.Or(strings.Compare(x.From, y.From), strings.Compare(x.To, y.To))
	})
	if cov.Interactions > 0 {
		cov.Complete = float64(cov.BothSides+cov.InProcess) / float64(cov.Interactions)
	}
}

// buildAgents writes the agents that did a step or took part in a call.
func (a *assembler) buildAgents(td *tracedata.TraceData) {
	n := 0
	for k := range a.idents {
		if a.idents[k].used {
			n++
		}
	}
	if n > 0 {
		td.Agents = make([]tracedata.Agent, 0, n)
	}
	for k := range a.idents {
		x := &a.idents[k]
		if !x.used {
			continue
		}
		ag := tracedata.Agent{
			Name:    x.name,
			ID:      x.id,
			Virtual: x.virtual && !x.real,
			Steps:   x.steps,
			Errors:  x.errors,
		}
		if len(x.aliases) > 0 {
			ag.Aliases = slices.Sorted(slices.Values(x.aliases))
		}
		ag.IdentifiedBy = a.reg.IdentifiedBy(x.rank)
		switch {
		case x.tool:
			ag.Role = tracedata.RoleToolServer
		case x.assessor:
			ag.Role = tracedata.RoleAssessor
		}
		td.Agents = append(td.Agents, ag)
	}
	slices.SortFunc(td.Agents, func(x, y tracedata.Agent) int { return strings.Compare(x.Name, y.Name) })
}

// buildCoverage writes the services and the warnings, sorted and capped.
func (a *assembler) buildCoverage(td *tracedata.TraceData) {
	cov := &td.Coverage
	seen := map[string]bool{}
	for _, p := range a.procs {
		if p.service != "" && !seen[p.service] {
			seen[p.service] = true
			cov.Services = append(cov.Services, p.service)
		}
	}
	slices.Sort(cov.Services)

	var w []string
	count := func(n int, format string) {
		if n > 0 {
			w = append(w, fmt.Sprintf(format, n))
		}
	}
	count(a.otherTrace, "%d spans belong to another trace and were left out")
	count(a.invalidID, "%d spans have an invalid span id and were left out")
	count(a.dups, "%d spans repeat a span id already in the trace; one span was kept per id")
	count(a.missingParents, "%d spans have parents missing from the trace")
	count(a.unknownCallers, "%d server spans have parents missing from the trace; their caller is \"unknown\"")
	count(a.calleeUnknown, "%d client calls name no agent and no server.address; their callee is \"unknown\"")
	count(a.handoffsUnmet, "%d handoffs name an agent with no agent span after them; they are not calls")
	count(a.callersUnknown, "%d agent spans name a caller no agent span of the trace runs as; they are not calls")
	count(a.endBeforeStart, "%d spans have end before start")
	count(a.noTime, "%d spans have no start or end time")
	if a.unknownService {
		w = append(w, "spans of a resource without service.name, outside any agent span, are attributed to \"unknown\"")
	}
	slices.Sort(a.cycles)
	for k, id := range a.cycles {
		if k == maxAttrWarnings {
			w = append(w, fmt.Sprintf("%d more parent cycles", len(a.cycles)-k))
			break
		}
		w = append(w, fmt.Sprintf("parent links form a cycle; cut above span %016x", id))
	}
	// The attribute warnings, the reader's and the steps', are sorted and
	// capped so a broken producer cannot flood the report.
	aws := append(a.attrWarnings, a.reader.Warnings()...)
	slices.SortFunc(aws, func(x, y recognize.Warning) int {
		return cmp.Or(cmp.Compare(x.Span, y.Span), strings.Compare(x.Key, y.Key), strings.Compare(x.Msg, y.Msg))
	})
	aws = slices.Compact(aws)
	for k, aw := range aws {
		if k == maxAttrWarnings {
			w = append(w, fmt.Sprintf("%d more attributes of the wrong type or value", len(aws)-k))
			break
		}
		w = append(w, fmt.Sprintf("attribute %s on span %016x %s", aw.Key, aw.Span, aw.Msg))
	}
	slices.Sort(w)
	cov.Warnings = slices.Compact(w)
}

// buildEvidence writes what the recognizers claimed, the spans left unread
// that look like an agent's, and whether the graph is evidence at all: a
// trace with no interaction is complete only when it has an agent and no
// such span (Coverage.NoEvidence).
func (a *assembler) buildEvidence(td *tracedata.TraceData) {
	cov := &td.Coverage
	claimed := 0 // the map sized for the few claims a trace has, not every claim there is
	for _, c := range a.recognized[:a.reg.NumClaims()] {
		if c > 0 {
			claimed++
		}
	}
	cov.Recognized = make(map[string]int, claimed)
	for k, c := range a.recognized[:a.reg.NumClaims()] {
		if c > 0 {
			cov.Recognized[a.reg.ClaimName(k)] = c
		}
	}
	cov.Unrecognized = a.unrecognized
	var first int32
	cov.UnreadAgentSpans, first = a.unreadAgentSpans()
	if first >= 0 {
		cov.Warnings = append(cov.Warnings, fmt.Sprintf(
			"%d spans look like an agent's work but name no agent any rule reads (the first: span %016x %q); what they did is not in the graph",
			cov.UnreadAgentSpans, a.nodes[first].id, a.span(first).Name))
		if n := a.unnamedAgents(); n > 0 {
			cov.Warnings = append(cov.Warnings, fmt.Sprintf(
				"%d %s an agent its framework ran with no name recorded (%s): that agent and its calls are missing from the graph; give each agent a name",
				n, agentns.Plural(n, "span is", "spans are"), strings.Join(a.reg.Unnamed(), ", ")))
		}
	}
	var nsWarnings []string
	cov.UnreadNamespaces, nsWarnings = a.unreadNS.Warnings()
	cov.Warnings = append(cov.Warnings, nsWarnings...)
	var wiring []string
	cov.UnwiredAgents, wiring = a.unwiredAgents()
	cov.Warnings = append(cov.Warnings, wiring...)
	cov.Fragment = a.fragment()
	if len(a.joined) > 0 {
		cov.JoinedTraces = make([]string, 0, len(a.joined))
		for _, id := range a.joined {
			if id != a.traceID {
				cov.JoinedTraces = append(cov.JoinedTraces, id.String())
			}
		}
		slices.Sort(cov.JoinedTraces)
		cov.JoinedTraces = slices.Compact(cov.JoinedTraces)
	}
	var shared []string
	cov.SharedServices, shared = a.sharedServices()
	cov.Warnings = append(cov.Warnings, shared...)
	if cov.Interactions == 0 {
		real, named := false, false
		for _, ag := range td.Agents {
			real = real || !ag.Virtual
			named = named || !ag.Virtual && ag.IdentifiedBy != tracedata.IdentityServiceName && ag.IdentifiedBy != tracedata.IdentityUnknown
		}
		switch {
		case named && cov.UnreadAgentSpans == 0 && len(cov.UnreadNamespaces) == 0 && cov.UnwiredAgents == 0:
			cov.Complete = 1
		case real && !named:
			// Flat spans (model calls, tools) with no agent span: the
			// process could host one agent or a team; nothing shows which.
			cov.NoEvidence = true
			cov.Warnings = append(cov.Warnings, "no span names an agent (agents only from service.name), so the spans cannot show a team or its absence: no evidence of coordination")
		default:
			cov.NoEvidence = true
			cov.Warnings = append(cov.Warnings, "no interaction found, and the trace cannot show there was none: no evidence of coordination")
		}
	}
	slices.Sort(cov.Warnings)
	cov.Warnings = slices.Compact(cov.Warnings)
}

// unreadAgentSpans counts the spans that look like an agent's work
// (fAgentLike) but are neither inside an agent span nor above one, and
// the first of them by span id, -1 if none. An agent its framework marks
// as one but does not name (fUnnamedAgent) counts wherever it is: inside
// another agent's work it is a sub-agent whose call the graph misses.
func (a *assembler) unreadAgentSpans() (int, int32) {
	if a.agentLike == 0 {
		return 0, -1
	}
	for k := len(a.order) - 1; k >= 0; k-- {
		n := &a.nodes[a.order[k]]
		if p := n.parent; p >= 0 && (n.isAgentSpan() || n.flags&fAbove != 0) {
			a.nodes[p].flags |= fAbove
		}
	}
	first := int32(-1)
	count := 0
	for i := range a.nodes {
		n := &a.nodes[i]
		if n.flags&fAgentLike == 0 || n.isAgentSpan() {
			continue
		}
		if n.flags&fUnnamedAgent == 0 && (n.agentSpan >= 0 || n.flags&fAbove != 0) {
			continue // an agent's own work, or around agents
		}
		count++
		if first < 0 || n.id < a.nodes[first].id {
			first = int32(i)
		}
	}
	return count, first
}

// unnamedAgents counts the spans marked fUnnamedAgent (all of which
// unreadAgentSpans counted).
func (a *assembler) unnamedAgents() int {
	count := 0
	for i := range a.nodes {
		if a.nodes[i].flags&(fUnnamedAgent|fAgentLike) == fUnnamedAgent|fAgentLike && !a.nodes[i].isAgentSpan() {
			count++
		}
	}
	return count
}
