package evals

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/coordbench/coordbench/tracedata"
)

// LatencyNote travels with every latency result: wall-clock latencies depend
// on the machine, its load and the network, so they rank agents within one
// run and mean little across runs or machines.
const LatencyNote = "latency values compare only within one run on one machine"

// latencyEvaluator measures how long agents and calls took and which chain of
// steps bounded the trace's end-to-end time.
//
// What is counted per agent: every step whose Step.Agent names it, whatever
// its call type (its LLM and tool calls, its HOST work, and the agent calls
// made to it, since an agent-call step belongs to its callee). One call is
// often recorded several times: the caller's invoke_agent span, the A2A
// client and server spans, the callee's own invoke_agent span, each an
// AGENT step of the same callee nested in the previous one. Such an AGENT
// step whose parent step is an AGENT step of the same agent is the same call
// seen further down, and is not counted again; the outermost step counts,
// so a call is timed as its caller saw it, network included. The interaction
// edges (Interaction.LatenciesMS) are one latency per call already and are
// taken as they are.
type latencyEvaluator struct{}

func (latencyEvaluator) Name() string { return "latency" }
func (latencyEvaluator) Tier() int    { return 2 }

// LatencyStats summarises a set of latencies in milliseconds. Percentiles
// use numpy's default ("linear") method, so they can be checked against
// numpy.percentile.
type LatencyStats struct {
	Count int     `json:"count"`
	AvgMS float64 `json:"avg_ms"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

// AgentLatency is one agent's latency summary.
type AgentLatency struct {
	LatencyStats
	// Measured is false for the assessor and virtual nodes, which are shown
	// but neither compete for slowest agent nor enter the overall numbers
	// (unless the request's include_virtual_nodes says otherwise).
	Measured bool `json:"measured"`
	// ByCallType splits the counted steps by call type (AGENT, TOOL, HOST),
	// because an agent's LLM calls and the calls made to it differ in kind.
	ByCallType map[string]LatencyStats `json:"by_call_type"`
}

// EdgeLatency is the latency of the calls along one interaction edge.
type EdgeLatency struct {
	From string `json:"from"`
	To   string `json:"to"`
	LatencyStats
}

// SlowestAgent names the measured agent with the highest p95.
type SlowestAgent struct {
	Name  string  `json:"name"`
	P95MS float64 `json:"p95_ms"`
}

// CriticalStep is one step of the critical path.
type CriticalStep struct {
	StepID   string `json:"step_id"`
	Name     string `json:"name,omitempty"`
	Agent    string `json:"agent,omitempty"`
	CallType string `json:"call_type,omitempty"`
	// StartOffsetMS is the step's start relative to the path's root step.
	StartOffsetMS float64 `json:"start_offset_ms"`
	DurationMS    float64 `json:"duration_ms"`
	// SelfMS is DurationMS minus the part of it covered by the next step on
	// the path: the time this step itself kept the path busy.
	SelfMS float64 `json:"self_ms"`
}

// CriticalPath is the chain of steps that bounded the trace's end-to-end
// time, found by the walk described at criticalPath.
type CriticalPath struct {
	// DurationMS is the sum of the self times: the root step's duration when
	// every step lies within its parent, as spans normally do.
	DurationMS float64        `json:"duration_ms"`
	Steps      []CriticalStep `json:"steps"`
	// AgentShare is each agent's self time on the path over DurationMS;
	// the shares add up to 1. Steps without an agent count as "(none)". It
	// is empty when DurationMS is 0.
	AgentShare map[string]float64 `json:"agent_share"`
}

// LatencySteps counts how the trace's steps were used.
type LatencySteps struct {
	// Counted steps entered the per-agent numbers.
	Counted int `json:"counted"`
	// SameCall steps are agent-call steps nested in an agent-call step of
	// the same agent: the same call recorded again, not counted twice.
	SameCall int `json:"same_call"`
	// WithoutLatency steps had neither a latency nor usable times.
	WithoutLatency int `json:"without_latency"`
	// WithoutAgent steps named no agent.
	WithoutAgent int `json:"without_agent"`
	// WithoutTimes steps lacked a start or end time (or ended before they
	// started) and could not take part in the critical path.
	WithoutTimes int `json:"without_times"`
}

// LatencyResult is the latency evaluator's result.
type LatencyResult struct {
	Note  string       `json:"note"`
	Steps LatencySteps `json:"steps"`
	// Overall summarises the counted steps of the measured agents.
	Overall *LatencyStats `json:"overall,omitempty"`
	// Agents holds every agent with at least one counted step, by name.
	Agents map[string]AgentLatency `json:"agents"`
	// Edges holds the interaction edges with at least one valid latency, in
	// (from, to) order.
	Edges        []EdgeLatency `json:"edges"`
	SlowestAgent *SlowestAgent `json:"slowest_agent,omitempty"`
	CriticalPath *CriticalPath `json:"critical_path,omitempty"`
}

// Headline keys of the latency result. The set is fixed; a number that does
// not exist for a trace (no timed step, no measured agent) is left out rather
// than reported as a zero that a dashboard would average in.
const (
	LatencyKeySteps        = "steps"
	LatencyKeyP50          = "p50_ms"
	LatencyKeyP95          = "p95_ms"
	LatencyKeyCriticalPath = "critical_path_ms"
	LatencyKeySlowestP95   = "slowest_agent_p95_ms"
)

// Headline returns the counted steps, the overall p50 and p95, the critical
// path's duration and the slowest agent's p95.
func (r *LatencyResult) Headline() map[string]float64 {
	h := map[string]float64{LatencyKeySteps: float64(r.Steps.Counted)}
	if r.Overall != nil {
		h[LatencyKeyP50] = r.Overall.P50MS
		h[LatencyKeyP95] = r.Overall.P95MS
	}
	if r.CriticalPath != nil {
		h[LatencyKeyCriticalPath] = r.CriticalPath.DurationMS
	}
	if r.SlowestAgent != nil {
		h[LatencyKeySlowestP95] = r.SlowestAgent.P95MS
	}
	return h
}

// Evaluate never fails on odd data: what cannot be measured is counted and
// left out.
func (latencyEvaluator) Evaluate(_ context.Context, trace *tracedata.TraceData, in Inputs) (Result, error) {
	res := &LatencyResult{Note: LatencyNote, Agents: map[string]AgentLatency{}, Edges: []EdgeLatency{}}
	if trace == nil {
		return res, nil
	}
	steps := trace.Steps
	index := latStepIndex(steps)

	// The samples in one slice, grouped by agent and call type below
	// (latSummarise sorts its values, so their order does not matter): a
	// map of slices per agent grew by doubling, thousands of times a
	// trace.
	type sample struct {
		agent, callType string
		ms              float64
	}
	samples := make([]sample, 0, len(steps))
	var overall []float64
	isMeasured := map[string]bool{}
	for i := range trace.Agents {
		isMeasured[trace.Agents[i].Name] = trace.Agents[i].Measured()
	}
	measured := func(name string) bool {
		m, known := isMeasured[name]
		// An agent named only on steps is taken at its word: measured.
		return in.Config.IncludeVirtualNodes || !known || m
	}
	for i := range steps {
		s := &steps[i]
		if s.Agent == "" {
			res.Steps.WithoutAgent++
			continue
		}
		if p, ok := index[s.ParentStepID]; ok && p != i && s.CallType == tracedata.CallAgent &&
			steps[p].CallType == tracedata.CallAgent && steps[p].Agent == s.Agent {
			res.Steps.SameCall++
			continue
		}
		ms, ok := latStepMS(s)
		if !ok {
			res.Steps.WithoutLatency++
			continue
		}
		res.Steps.Counted++
		ct := string(s.CallType)
		if ct == "" {
			ct = "UNKNOWN"
		}
		samples = append(samples, sample{agent: s.Agent, callType: ct, ms: ms})
		if measured(s.Agent) {
			if overall == nil {
				overall = make([]float64, 0, len(steps)-i)
			}
			overall = append(overall, ms)
		}
	}
	slices.SortFunc(samples, func(a, b sample) int {
		return cmp.Or(cmp.Compare(a.agent, b.agent), cmp.Compare(a.callType, b.callType))
	})
	values := make([]float64, len(samples))
	for k := range samples {
		values[k] = samples[k].ms
	}
	for a := 0; a < len(samples); {
		name := samples[a].agent
		al := AgentLatency{Measured: measured(name), ByCallType: map[string]LatencyStats{}}
		b := a
		for b < len(samples) && samples[b].agent == name {
			c := b
			for c < len(samples) && samples[c].agent == name && samples[c].callType == samples[b].callType {
				c++
			}
			al.ByCallType[samples[b].callType] = latSummarise(values[b:c])
			b = c
		}
		// After the call types': latSummarise sorts the agent's values in
		// place.
		al.LatencyStats = latSummarise(values[a:b])
		res.Agents[name] = al
		a = b
	}
	if len(overall) > 0 {
		st := latSummarise(overall)
		res.Overall = &st
	}
	names := make([]string, 0, len(res.Agents))
	for name := range res.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := res.Agents[name]
		// Strictly greater keeps the first name in order on a tie.
		if a.Measured && (res.SlowestAgent == nil || a.P95MS > res.SlowestAgent.P95MS) {
			res.SlowestAgent = &SlowestAgent{Name: name, P95MS: a.P95MS}
		}
	}

	for _, it := range trace.Interactions {
		var v []float64
		for _, ms := range it.LatenciesMS {
			if latValid(ms) {
				v = append(v, ms)
			}
		}
		if len(v) > 0 {
			res.Edges = append(res.Edges, EdgeLatency{From: it.From, To: it.To, LatencyStats: latSummarise(v)})
		}
	}
	slices.SortStableFunc(res.Edges, func(a, b EdgeLatency) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})

	for i := range steps {
		if !latTimed(&steps[i]) {
			res.Steps.WithoutTimes++
		}
	}
	res.CriticalPath = latCriticalPath(steps, index)
	return res, nil
}

// latStepIndex maps step ids to their first position, so a duplicated id
// cannot make the parent lookups ambiguous.
func latStepIndex(steps []tracedata.Step) map[string]int {
	index := make(map[string]int, len(steps))
	for i := range steps {
		if id := steps[i].StepID; id != "" {
			if _, dup := index[id]; !dup {
				index[id] = i
			}
		}
	}
	return index
}

func latValid(ms float64) bool { return ms >= 0 && !math.IsInf(ms, 0) && !math.IsNaN(ms) }

// latStepMS returns a step's latency in ms: LatencyMS, else its times, else
// the extension's whole-millisecond Latency. A zero LatencyMS is read as
// "not recorded" (the JSON field is omitted when zero), so the times decide
// whether the step really took no time.
func latStepMS(s *tracedata.Step) (float64, bool) {
	if s.LatencyMS > 0 && latValid(s.LatencyMS) {
		return s.LatencyMS, true
	}
	if latTimed(s) {
		return latMS(s.EndTime.Sub(s.StartTime)), true
	}
	if s.Latency > 0 {
		return float64(s.Latency), true
	}
	return 0, false
}

// latTimed reports whether a step has both times, in order.
func latTimed(s *tracedata.Step) bool {
	return !s.StartTime.IsZero() && !s.EndTime.IsZero() && !s.EndTime.Before(s.StartTime)
}

func latMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latSummarise summarises v (which it sorts); v must not be empty.
func latSummarise(v []float64) LatencyStats {
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	return LatencyStats{
		Count: len(v),
		AvgMS: sum / float64(len(v)),
		P50MS: latPercentile(v, 50),
		P95MS: latPercentile(v, 95),
		P99MS: latPercentile(v, 99),
		MaxMS: v[len(v)-1],
	}
}

// latPercentile is numpy.percentile(v, p) with the default method "linear"
// on sorted v: the rank (n-1)*p/100 falls between two sorted values and the
// result interpolates between them. It reproduces numpy's arithmetic
// (numpy's _lerp, which interpolates from the upper value when the fraction
// is at least one half) so results agree to the last bit. It returns 0 for
// an empty v.
func latPercentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := float64(n-1) * (p / 100)
	lo := math.Floor(rank)
	i := int(lo)
	if i < 0 {
		return sorted[0]
	}
	if i >= n-1 {
		return sorted[n-1]
	}
	a, b, t := sorted[i], sorted[i+1], rank-lo
	diff := b - a
	if t >= 0.5 {
		return b - diff*(1-t)
	}
	return a + diff*t
}

// latCriticalPath finds the chain of steps that bounded the trace's end:
// the standard critical-path walk over a span tree. It starts at the root
// step that ended last (a root is a step without a parent among the timed
// steps: no parent id, a parent that is absent, itself, or has no times)
// and repeatedly descends into the child that ended last, because that
// child is what the parent was still waiting for when it ended. Children
// may overlap or run concurrently; only the one ending last is followed,
// and ties go to the child that started first (it covers more of the
// parent), then to the lower step id, so the walk is deterministic. Each
// step's self time is its duration minus its overlap with the next step on
// the path, which clips a child that outlives its parent. Steps without
// times cannot be placed and are skipped. It returns nil when no step has
// times.
func latCriticalPath(steps []tracedata.Step, index map[string]int) *CriticalPath {
	// The children of the step at position p (index's first position of
	// an id, so a duplicated id's steps share them) are
	// kids[start[p]:start[p+1]], in step order: a map of slices allocated
	// once per parent, and these traces have thousands of steps.
	parent := make([]int, len(steps))
	start := make([]int, len(steps)+1)
	var roots []int
	for i := range steps {
		parent[i] = -1
		s := &steps[i]
		if !latTimed(s) {
			continue
		}
		p, ok := index[s.ParentStepID]
		if s.ParentStepID == "" || !ok || p == i || s.ParentStepID == s.StepID || !latTimed(&steps[p]) {
			roots = append(roots, i)
			continue
		}
		parent[i] = p
		start[p+1]++
	}
	if len(roots) == 0 {
		return nil
	}
	for p := range steps {
		start[p+1] += start[p]
	}
	kids := make([]int, start[len(steps)])
	next := slices.Clone(start[:len(steps)])
	for i, p := range parent {
		if p >= 0 {
			kids[next[p]] = i
			next[p]++
		}
	}
	children := func(id string) []int {
		p, ok := index[id]
		if !ok {
			return nil
		}
		return kids[start[p]:start[p+1]]
	}
	last := func(cands []int, visited map[int]bool) int {
		best := -1
		for _, c := range cands {
			if visited[c] {
				continue
			}
			if best < 0 || latEndsLater(&steps[c], &steps[best]) {
				best = c
			}
		}
		return best
	}
	visited := map[int]bool{}
	var path []int
	for cur := last(roots, visited); cur >= 0; cur = last(children(steps[cur].StepID), visited) {
		visited[cur] = true
		path = append(path, cur)
	}

	cp := &CriticalPath{Steps: make([]CriticalStep, 0, len(path)), AgentShare: map[string]float64{}}
	origin := steps[path[0]].StartTime
	// Sums are kept in float64 nanoseconds: exact for any realistic trace
	// (below 2^53 ns, about 104 days) and free of overflow for absurd times.
	selfByAgent := map[string]float64{}
	var total float64
	for k, i := range path {
		s := &steps[i]
		d := s.EndTime.Sub(s.StartTime)
		self := d
		if k+1 < len(path) {
			n := &steps[path[k+1]]
			lo, hi := s.StartTime, s.EndTime
			if n.StartTime.After(lo) {
				lo = n.StartTime
			}
			if n.EndTime.Before(hi) {
				hi = n.EndTime
			}
			if hi.After(lo) {
				self -= hi.Sub(lo)
			}
		}
		total += float64(self)
		agent := s.Agent
		if agent == "" {
			agent = "(none)"
		}
		selfByAgent[agent] += float64(self)
		cp.Steps = append(cp.Steps, CriticalStep{
			StepID: s.StepID, Name: s.Name, Agent: s.Agent, CallType: string(s.CallType),
			StartOffsetMS: latMS(s.StartTime.Sub(origin)), DurationMS: latMS(d), SelfMS: latMS(self),
		})
	}
	cp.DurationMS = total / float64(time.Millisecond)
	if total > 0 {
		for agent, self := range selfByAgent {
			cp.AgentShare[agent] = self / total
		}
	}
	return cp
}

// latEndsLater orders candidates for the critical path: later end first,
// then earlier start, then lower step id.
func latEndsLater(a, b *tracedata.Step) bool {
	if !a.EndTime.Equal(b.EndTime) {
		return a.EndTime.After(b.EndTime)
	}
	if !a.StartTime.Equal(b.StartTime) {
		return a.StartTime.Before(b.StartTime)
	}
	return a.StepID < b.StepID
}
