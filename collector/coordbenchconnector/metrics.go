package coordbenchconnector

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/report"
)

// Metric names and attributes (README.md, docs/collector.md). They follow
// the OpenTelemetry naming rules: a namespace, dots between levels,
// counters of things pluralised with a {thing} unit, durations as
// histograms in seconds, and nothing unbounded (no trace id) as an
// attribute.
const (
	metricCalls      = "coordbench.agent.calls"
	metricCallErrors = "coordbench.agent.call.errors"
	metricCallDur    = "coordbench.agent.call.duration"
	metricTraces     = "coordbench.traces"

	attrCaller     = "coordbench.call.caller"
	attrCallee     = "coordbench.call.callee"
	attrRoad       = "coordbench.call.road"
	attrLabel      = "coordbench.graph.label"
	attrEvidence   = "coordbench.evidence.level"
	attrCompletion = "coordbench.trace.completion"
)

// unknown stands for a label or evidence level the trace has none of (the
// graph evaluator switched off or failed).
const unknown = "unknown"

type edgeKey struct{ caller, callee string }
type callKey struct {
	edgeKey
	road string
}
type traceKey struct{ label, evidence, completion string }

// histogram is one cumulative explicit-bucket histogram series.
type histogram struct {
	bounds   []float64
	counts   []uint64
	count    uint64
	sum      float64
	min, max float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1), min: math.Inf(1), max: math.Inf(-1)}
}

// add records v in the bucket whose upper bound is the first >= v, as the
// OpenTelemetry explicit-bucket histogram defines its buckets.
func (h *histogram) add(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.count++
	h.sum += v
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// graphMetric is one per-trace graph metric whose distribution is kept.
type graphMetric struct {
	name, unit, description string
	bounds                  []float64
	value                   func(*evals.GraphResult) (float64, bool)
}

var (
	ratioBounds  = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	degreeBounds = []float64{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2}
	countBounds  = []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 50, 100}
	callBounds   = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
)

func scalar(s evals.Scalar) (float64, bool) { return s.Value, s.Valid() }

func maxOf(m map[string]float64) (float64, bool) {
	if len(m) == 0 {
		return 0, false
	}
	best, first := 0.0, true
	for _, v := range m {
		// As slices.Max: a NaN wins.
		if first || v > best || math.IsNaN(v) {
			best, first = v, false
		}
		if math.IsNaN(best) {
			break
		}
	}
	return best, true
}

// graphMetrics are the per-trace graph metrics emitted as distributions;
// a trace whose graph has no value for one (networkx undefined, metric
// off) adds nothing to it.
var graphMetrics = []graphMetric{
	{"coordbench.trace.graph.agents", "{agent}", "Agents measured in a trace's coordination graph.", countBounds,
		func(g *evals.GraphResult) (float64, bool) { return float64(g.MeasuredNodes), true }},
	{"coordbench.trace.graph.calls", "{call}", "Calls along a trace's graph edges.", callBounds,
		func(g *evals.GraphResult) (float64, bool) { return float64(g.Interactions), true }},
	{"coordbench.trace.graph.density", "1", "Density of a trace's graph (nx.density).", ratioBounds,
		func(g *evals.GraphResult) (float64, bool) { return scalar(g.Metrics.Density) }},
	{"coordbench.trace.graph.average_clustering", "1", "Average clustering of a trace's graph (nx.average_clustering).", ratioBounds,
		func(g *evals.GraphResult) (float64, bool) { return scalar(g.Metrics.AverageClustering) }},
	{"coordbench.trace.graph.max_betweenness_centrality", "1", "Largest betweenness centrality of an agent in a trace (bottleneck > 0.5).", ratioBounds,
		func(g *evals.GraphResult) (float64, bool) { return maxOf(g.Metrics.BetweennessCentrality) }},
	{"coordbench.trace.graph.max_degree_centrality", "1", "Largest degree centrality of an agent in a trace (in + out, up to 2).", degreeBounds,
		func(g *evals.GraphResult) (float64, bool) { return maxOf(g.Metrics.DegreeCentrality) }},
	{"coordbench.trace.graph.max_interaction_share", "1", "Largest share of a trace's calls one agent takes part in (over-centralized > 0.7).", ratioBounds,
		func(g *evals.GraphResult) (float64, bool) {
			if g.Interactions == 0 {
				return 0, false
			}
			best := 0.0
			for _, n := range g.Nodes {
				best = max(best, n.InteractionShare)
			}
			return best, true
		}},
	{"coordbench.trace.graph.diameter", "{hop}", "Diameter of a trace's graph (largest strongly connected component when not strongly connected).", countBounds,
		func(g *evals.GraphResult) (float64, bool) { return scalar(g.Metrics.Diameter) }},
	{"coordbench.trace.graph.average_shortest_path_length", "{hop}", "Average shortest path length of a trace's graph.", countBounds,
		func(g *evals.GraphResult) (float64, bool) { return scalar(g.Metrics.AverageShortestPathLength) }},
	{"coordbench.trace.graph.weakly_connected_components", "{component}", "Weakly connected components of a trace's graph.", countBounds,
		func(g *evals.GraphResult) (float64, bool) { return scalar(g.Metrics.NumberWeaklyConnectedComponents) }},
}

// aggregate holds the cumulative metrics since the connector started.
type aggregate struct {
	tel       *telemetry
	maxSeries int
	bounds    []float64

	mu        sync.Mutex
	start     time.Time
	calls     map[callKey]uint64
	errors    map[edgeKey]uint64
	durations map[edgeKey]*histogram
	traces    map[traceKey]uint64
	graph     []*histogram // by graphMetrics index
	names     map[string]string
}

func newAggregate(cfg *Config, tel *telemetry) *aggregate {
	a := &aggregate{
		tel:       tel,
		maxSeries: cfg.MaxCallSeries,
		start:     time.Now(),
		calls:     map[callKey]uint64{},
		errors:    map[edgeKey]uint64{},
		durations: map[edgeKey]*histogram{},
		traces:    map[traceKey]uint64{},
		names:     map[string]string{},
	}
	for _, b := range cfg.CallDurationBuckets {
		a.bounds = append(a.bounds, b.Seconds())
	}
	for _, m := range graphMetrics {
		a.graph = append(a.graph, newHistogram(m.bounds))
	}
	return a
}

// graphOf is the graph evaluator's result of tr, nil when it did not run.
func graphOf(tr *report.TaskResult) *evals.GraphResult {
	g, _ := tr.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult)
	return g
}

// labelAndEvidence are tr's graph label and evidence level, "unknown"
// when the graph evaluator did not run.
func labelAndEvidence(tr *report.TaskResult) (label, evidence string) {
	label, evidence = unknown, unknown
	if g := graphOf(tr); g != nil {
		label = cmp.Or(g.Label, unknown)
		if g.Evidence != nil {
			evidence = cmp.Or(g.Evidence.Level, unknown)
		}
	}
	return label, evidence
}

// record adds one assessed trace.
func (a *aggregate) record(tr *report.TaskResult, completion string) {
	label, evidence := labelAndEvidence(tr)
	g := graphOf(tr)
	dropped := 0
	a.mu.Lock()
	defer func() {
		a.mu.Unlock()
		a.tel.seriesDropped(dropped)
	}()
	a.traces[traceKey{label, evidence, completion}]++
	for _, it := range tr.Interactions {
		edge := edgeKey{it.From, it.To}
		roads := [...]struct {
			road string
			n    int
		}{
			{"both_sides", it.BothSides}, {"client_only", it.ClientOnly}, {"server_only", it.ServerOnly},
			{"in_process", it.InProcess}, {"extension_only", it.ExtensionOnly},
		}
		kept := true
		for _, r := range roads {
			if r.n <= 0 {
				continue
			}
			k := callKey{edge, r.road}
			if _, ok := a.calls[k]; !ok {
				if len(a.calls) >= a.maxSeries {
					kept = false
					continue
				}
				k.edgeKey = a.own(edge)
			}
			a.calls[k] += uint64(r.n)
		}
		if !kept {
			dropped += it.Count
			continue
		}
		if it.Errors > 0 {
			if _, ok := a.errors[edge]; !ok {
				edge = a.own(edge)
			}
			a.errors[edge] += uint64(it.Errors)
		}
		h := a.durations[edge]
		if h == nil && len(it.LatenciesMS) > 0 {
			h = newHistogram(a.bounds)
			a.durations[a.own(edge)] = h
		}
		for _, ms := range it.LatenciesMS {
			h.add(ms / 1000)
		}
	}
	if g != nil {
		for i, m := range graphMetrics {
			if v, ok := m.value(g); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				a.graph[i].add(v)
			}
		}
	}
}

// own returns edge with the aggregate's copies of its names, for a new
// series: the names an assessment gives point into the trace's held
// spans, whose bytes a series kept for good must not keep. The copies are
// shared by every series that names them (as many as the series).
func (a *aggregate) own(edge edgeKey) edgeKey {
	name := func(s string) string {
		if c, ok := a.names[s]; ok {
			return c
		}
		c := strings.Clone(s)
		a.names[c] = c
		return c
	}
	return edgeKey{name(edge.caller), name(edge.callee)}
}

// metrics returns the cumulative metrics as of now; false when no trace
// was assessed yet.
func (a *aggregate) metrics(res pcommon.Resource, now time.Time) (pmetric.Metrics, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.traces) == 0 {
		return pmetric.Metrics{}, false
	}
	start, ts := pcommon.NewTimestampFromTime(a.start), pcommon.NewTimestampFromTime(now)
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	res.CopyTo(rm.Resource())
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)

	sum := func(name, unit, desc string) pmetric.NumberDataPointSlice {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		m.SetDescription(desc)
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		return s.DataPoints()
	}
	point := func(dps pmetric.NumberDataPointSlice, v uint64) pmetric.NumberDataPoint {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(ts)
		dp.SetIntValue(int64(v))
		return dp
	}
	hist := func(name, unit, desc string) pmetric.HistogramDataPointSlice {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		m.SetDescription(desc)
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		return h.DataPoints()
	}
	hpoint := func(dps pmetric.HistogramDataPointSlice, h *histogram) pmetric.HistogramDataPoint {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(ts)
		dp.ExplicitBounds().FromRaw(h.bounds)
		dp.BucketCounts().FromRaw(h.counts)
		dp.SetCount(h.count)
		dp.SetSum(h.sum)
		if h.count > 0 {
			dp.SetMin(h.min)
			dp.SetMax(h.max)
		}
		return dp
	}
	edge := func(a, b edgeKey) int {
		return cmp.Or(cmp.Compare(a.caller, b.caller), cmp.Compare(a.callee, b.callee))
	}

	dps := sum(metricCalls, "{call}", "Calls between agents, by caller, callee and how the call was observed (road).")
	for _, k := range slices.SortedFunc(maps.Keys(a.calls), func(x, y callKey) int { return cmp.Or(edge(x.edgeKey, y.edgeKey), cmp.Compare(x.road, y.road)) }) {
		dp := point(dps, a.calls[k])
		dp.Attributes().PutStr(attrCaller, k.caller)
		dp.Attributes().PutStr(attrCallee, k.callee)
		dp.Attributes().PutStr(attrRoad, k.road)
	}
	if len(a.errors) > 0 {
		dps := sum(metricCallErrors, "{call}", "Calls between agents that failed, by caller and callee.")
		for _, k := range slices.SortedFunc(maps.Keys(a.errors), edge) {
			dp := point(dps, a.errors[k])
			dp.Attributes().PutStr(attrCaller, k.caller)
			dp.Attributes().PutStr(attrCallee, k.callee)
		}
	}
	if len(a.durations) > 0 {
		dps := hist(metricCallDur, "s", "Duration of calls between agents, by caller and callee.")
		for _, k := range slices.SortedFunc(maps.Keys(a.durations), edge) {
			dp := hpoint(dps, a.durations[k])
			dp.Attributes().PutStr(attrCaller, k.caller)
			dp.Attributes().PutStr(attrCallee, k.callee)
		}
	}
	tdps := sum(metricTraces, "{trace}", "Traces assessed, by graph label, evidence level and how the trace's wait ended.")
	for _, k := range slices.SortedFunc(maps.Keys(a.traces), func(x, y traceKey) int {
		return cmp.Or(cmp.Compare(x.label, y.label), cmp.Compare(x.evidence, y.evidence), cmp.Compare(x.completion, y.completion))
	}) {
		dp := point(tdps, a.traces[k])
		dp.Attributes().PutStr(attrLabel, k.label)
		dp.Attributes().PutStr(attrEvidence, k.evidence)
		dp.Attributes().PutStr(attrCompletion, k.completion)
	}
	for i, m := range graphMetrics {
		hpoint(hist(m.name, m.unit, m.description), a.graph[i])
	}
	return md, true
}
