package evals

import (
	"math"

	"github.com/coordbench/coordbench/internal/jsonenc"
)

// The built-in evaluators' results append their JSON without reflection,
// for a caller that encodes a result per trace (report.TaskResult's
// AppendJSON, the collector connector's log records). Each gives the very
// bytes json.Marshal gives, and fails where it fails; appendjson_test.go
// holds them to it on every field, filled by reflection, so a field added
// to a result type and not here fails the test.

// AppendJSON appends r's JSON; a nil r is null.
func (r *GraphResult) AppendJSON(b []byte) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"nodes":`...)
	if b, err = jsonenc.Slice(b, r.Nodes, appendGraphNode); err != nil {
		return b, err
	}
	b = append(b, `,"edges":`...)
	b, _ = jsonenc.Slice(b, r.Edges, appendGraphEdge)
	b = jsonenc.Bool(append(b, `,"include_virtual_nodes":`...), r.IncludeVirtualNodes)
	b = jsonenc.Int(append(b, `,"measured_nodes":`...), int64(r.MeasuredNodes))
	b = jsonenc.Int(append(b, `,"measured_edges":`...), int64(r.MeasuredEdges))
	b = jsonenc.Int(append(b, `,"interactions":`...), int64(r.Interactions))
	b = jsonenc.Bool(append(b, `,"empty":`...), r.Empty)
	if b, err = r.Metrics.appendJSON(append(b, `,"metrics":`...)); err != nil {
		return b, err
	}
	b = append(b, `,"findings":`...)
	if b, err = jsonenc.Slice(b, r.Findings, appendGraphFinding); err != nil {
		return b, err
	}
	b = jsonenc.String(append(b, `,"label":`...), r.Label)
	if r.Evidence != nil {
		b = r.Evidence.appendJSON(append(b, `,"evidence":`...))
	}
	if len(r.Warnings) > 0 {
		b = jsonenc.Strings(append(b, `,"warnings":`...), r.Warnings)
	}
	return append(b, '}'), nil
}

func appendGraphNode(b []byte, n *GraphNode) ([]byte, error) {
	b = jsonenc.String(append(b, `{"name":`...), n.Name)
	if n.Virtual {
		b = append(b, `,"virtual":true`...)
	}
	if n.Role != "" {
		b = jsonenc.String(append(b, `,"role":`...), n.Role)
	}
	if n.Participant {
		b = append(b, `,"participant":true`...)
	}
	if n.NoAgent {
		b = append(b, `,"no_agent":true`...)
	}
	b = jsonenc.Bool(append(b, `,"measured":`...), n.Measured)
	b = jsonenc.Int(append(b, `,"calls_out":`...), int64(n.CallsOut))
	b = jsonenc.Int(append(b, `,"calls_in":`...), int64(n.CallsIn))
	b, err := jsonenc.Float64(append(b, `,"interaction_share":`...), n.InteractionShare)
	return append(b, '}'), err
}

func appendGraphEdge(b []byte, e *GraphEdge) ([]byte, error) {
	b = jsonenc.String(append(b, `{"from":`...), e.From)
	b = jsonenc.String(append(b, `,"to":`...), e.To)
	b = jsonenc.Int(append(b, `,"weight":`...), int64(e.Weight))
	b = jsonenc.Bool(append(b, `,"measured":`...), e.Measured)
	return append(b, '}'), nil
}

func appendGraphFinding(b []byte, f *GraphFinding) ([]byte, error) {
	var err error
	b = jsonenc.String(append(b, `{"kind":`...), f.Kind)
	b = jsonenc.Strings(append(b, `,"agents":`...), f.Agents)
	if len(f.Values) > 0 {
		if b, err = jsonenc.Map(append(b, `,"values":`...), f.Values, jsonenc.Float64); err != nil {
			return b, err
		}
	}
	if f.Value != nil {
		if b, err = jsonenc.Float64(append(b, `,"value":`...), *f.Value); err != nil {
			return b, err
		}
	}
	if f.Threshold != 0 {
		if b, err = jsonenc.Float64(append(b, `,"threshold":`...), f.Threshold); err != nil {
			return b, err
		}
	}
	b = jsonenc.String(append(b, `,"detail":`...), f.Detail)
	return append(b, '}'), nil
}

func (e *Evidence) appendJSON(b []byte) []byte {
	b = jsonenc.String(append(b, `{"level":`...), e.Level)
	if len(e.Reasons) > 0 {
		b = jsonenc.Strings(append(b, `,"reasons":`...), e.Reasons)
	}
	if e.GraphLabel != "" {
		b = jsonenc.String(append(b, `,"graph_label":`...), e.GraphLabel)
	}
	return append(b, '}')
}

// appendJSON appends m's JSON: maps and pointers omitted when nil
// (omitzero, omitempty), scalars when off.
func (m *GraphMetrics) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(append(append(b, '"'), k...), `":`...)
	}
	var err error
	floats := func(k string, v map[string]float64) {
		if v != nil && err == nil {
			key(k)
			b, err = jsonenc.Map(b, v, jsonenc.Float64)
		}
	}
	floatPtrs := func(k string, v map[string]*float64) {
		if v != nil && err == nil {
			key(k)
			b, err = jsonenc.Map(b, v, jsonenc.FloatPtr)
		}
	}
	boolPtr := func(k string, v *bool) {
		if v != nil {
			key(k)
			b = jsonenc.Bool(b, *v)
		}
	}
	scalar := func(k string, s Scalar) {
		if s.On && err == nil {
			key(k)
			b, err = s.appendJSON(b)
		}
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			b = jsonenc.String(b, v)
		}
	}
	floats("degree_centrality", m.DegreeCentrality)
	floats("betweenness_centrality", m.BetweennessCentrality)
	floats("closeness_centrality", m.ClosenessCentrality)
	floatPtrs("eigenvector_centrality", m.EigenvectorCentrality)
	boolPtr("eigenvector_centrality_converged", m.EigenvectorCentralityConverged)
	floatPtrs("pagerank", m.PageRank)
	boolPtr("pagerank_converged", m.PageRankConverged)
	floats("clustering", m.Clustering)
	scalar("density", m.Density)
	scalar("average_clustering", m.AverageClustering)
	scalar("number_weakly_connected_components", m.NumberWeaklyConnectedComponents)
	scalar("number_strongly_connected_components", m.NumberStronglyConnectedComponents)
	scalar("average_shortest_path_length", m.AverageShortestPathLength)
	str("average_shortest_path_length_scope", m.AverageShortestPathLengthScope)
	scalar("diameter", m.Diameter)
	str("diameter_scope", m.DiameterScope)
	if len(m.LargestSCC) > 0 {
		key("largest_scc")
		b = jsonenc.Strings(b, m.LargestSCC)
	}
	return append(b, '}'), err
}

// appendJSON appends s's JSON (MarshalJSON's too).
func (s Scalar) appendJSON(b []byte) ([]byte, error) {
	if s.Null || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return append(b, "null"...), nil
	}
	return jsonenc.Float64(b, s.Value)
}

// AppendJSON appends r's JSON; a nil r is null.
func (r *LatencyResult) AppendJSON(b []byte) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = jsonenc.String(append(b, `{"note":`...), r.Note)
	s := &r.Steps
	b = jsonenc.Int(append(b, `,"steps":{"counted":`...), int64(s.Counted))
	b = jsonenc.Int(append(b, `,"same_call":`...), int64(s.SameCall))
	b = jsonenc.Int(append(b, `,"without_latency":`...), int64(s.WithoutLatency))
	b = jsonenc.Int(append(b, `,"without_agent":`...), int64(s.WithoutAgent))
	b = jsonenc.Int(append(b, `,"without_times":`...), int64(s.WithoutTimes))
	b = append(b, '}')
	if r.Overall != nil {
		b = append(b, `,"overall":{`...)
		if b, err = r.Overall.appendFields(b); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	if b, err = jsonenc.Map(append(b, `,"agents":`...), r.Agents, appendAgentLatency); err != nil {
		return b, err
	}
	if b, err = jsonenc.Slice(append(b, `,"edges":`...), r.Edges, appendEdgeLatency); err != nil {
		return b, err
	}
	if r.SlowestAgent != nil {
		b = jsonenc.String(append(b, `,"slowest_agent":{"name":`...), r.SlowestAgent.Name)
		if b, err = jsonenc.Float64(append(b, `,"p95_ms":`...), r.SlowestAgent.P95MS); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	if c := r.CriticalPath; c != nil {
		if b, err = jsonenc.Float64(append(b, `,"critical_path":{"duration_ms":`...), c.DurationMS); err != nil {
			return b, err
		}
		if b, err = jsonenc.Slice(append(b, `,"steps":`...), c.Steps, appendCriticalStep); err != nil {
			return b, err
		}
		if b, err = jsonenc.Map(append(b, `,"agent_share":`...), c.AgentShare, jsonenc.Float64); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendFields appends s's fields, without braces: LatencyStats is
// embedded in AgentLatency and EdgeLatency, whose JSON has them inline.
func (s *LatencyStats) appendFields(b []byte) ([]byte, error) {
	var err error
	b = jsonenc.Int(append(b, `"count":`...), int64(s.Count))
	for _, f := range [...]struct {
		key string
		v   float64
	}{{`,"avg_ms":`, s.AvgMS}, {`,"p50_ms":`, s.P50MS}, {`,"p95_ms":`, s.P95MS}, {`,"p99_ms":`, s.P99MS}, {`,"max_ms":`, s.MaxMS}} {
		if b, err = jsonenc.Float64(append(b, f.key...), f.v); err != nil {
			return b, err
		}
	}
	return b, nil
}

func appendLatencyStats(b []byte, s LatencyStats) ([]byte, error) {
	b, err := s.appendFields(append(b, '{'))
	return append(b, '}'), err
}

func appendAgentLatency(b []byte, a AgentLatency) ([]byte, error) {
	b, err := a.appendFields(append(b, '{'))
	if err != nil {
		return b, err
	}
	b = jsonenc.Bool(append(b, `,"measured":`...), a.Measured)
	b, err = jsonenc.Map(append(b, `,"by_call_type":`...), a.ByCallType, appendLatencyStats)
	return append(b, '}'), err
}

func appendEdgeLatency(b []byte, e *EdgeLatency) ([]byte, error) {
	b = jsonenc.String(append(b, `{"from":`...), e.From)
	b = jsonenc.String(append(b, `,"to":`...), e.To)
	b, err := e.appendFields(append(b, ','))
	return append(b, '}'), err
}

func appendCriticalStep(b []byte, s *CriticalStep) ([]byte, error) {
	var err error
	b = jsonenc.String(append(b, `{"step_id":`...), s.StepID)
	if s.Name != "" {
		b = jsonenc.String(append(b, `,"name":`...), s.Name)
	}
	if s.Agent != "" {
		b = jsonenc.String(append(b, `,"agent":`...), s.Agent)
	}
	if s.CallType != "" {
		b = jsonenc.String(append(b, `,"call_type":`...), s.CallType)
	}
	if b, err = jsonenc.Float64(append(b, `,"start_offset_ms":`...), s.StartOffsetMS); err != nil {
		return b, err
	}
	if b, err = jsonenc.Float64(append(b, `,"duration_ms":`...), s.DurationMS); err != nil {
		return b, err
	}
	b, err = jsonenc.Float64(append(b, `,"self_ms":`...), s.SelfMS)
	return append(b, '}'), err
}

// AppendJSON appends r's JSON; a nil r is null.
func (r *TextResult) AppendJSON(b []byte) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = jsonenc.Bool(append(b, `{"available":`...), r.Available)
	if r.Reason != "" {
		b = jsonenc.String(append(b, `,"reason":`...), r.Reason)
	}
	b = jsonenc.String(append(b, `,"method":`...), r.Method)
	b = jsonenc.Int(append(b, `,"content":{"steps_with_content":`...), int64(r.Content.StepsWithContent))
	b = jsonenc.Int(append(b, `,"steps_without_content":`...), int64(r.Content.StepsWithoutContent))
	if r.Content.StepsWithoutAgent != 0 {
		b = jsonenc.Int(append(b, `,"steps_without_agent":`...), int64(r.Content.StepsWithoutAgent))
	}
	b = append(b, '}')
	if r.Redundancy != nil {
		if b, err = jsonenc.Float64(append(b, `,"redundancy":`...), *r.Redundancy); err != nil {
			return b, err
		}
	}
	if r.Diversity != nil {
		if b, err = jsonenc.Float64(append(b, `,"diversity":`...), *r.Diversity); err != nil {
			return b, err
		}
	}
	if r.MostSimilar != nil {
		if b, err = appendTextPair(append(b, `,"most_similar_pair":`...), r.MostSimilar); err != nil {
			return b, err
		}
	}
	if b, err = jsonenc.Map(append(b, `,"agents":`...), r.Agents, appendTextAgent); err != nil {
		return b, err
	}
	if len(r.AgentsWithoutContent) > 0 {
		b = jsonenc.Strings(append(b, `,"agents_without_content":`...), r.AgentsWithoutContent)
	}
	if len(r.Pairs) > 0 {
		if b, err = jsonenc.Slice(append(b, `,"pairs":`...), r.Pairs, appendTextPair); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendTextAgent(b []byte, a TextAgent) ([]byte, error) {
	b = jsonenc.Int(append(b, `{"steps":`...), int64(a.Steps))
	b = jsonenc.Int(append(b, `,"messages":`...), int64(a.Messages))
	b = jsonenc.Int(append(b, `,"chars":`...), int64(a.Chars))
	b = jsonenc.Int(append(b, `,"terms":`...), int64(a.Terms))
	if a.Redundancy != nil {
		var err error
		if b, err = jsonenc.Float64(append(b, `,"redundancy":`...), *a.Redundancy); err != nil {
			return b, err
		}
	}
	b = jsonenc.String(append(b, `,"excerpt":`...), a.Excerpt)
	return append(b, '}'), nil
}

func appendTextPair(b []byte, p *TextPair) ([]byte, error) {
	b = jsonenc.String(append(b, `{"agents":[`...), p.Agents[0])
	b = jsonenc.String(append(b, ','), p.Agents[1])
	b, err := jsonenc.Float64(append(b, `],"similarity":`...), p.Similarity)
	return append(b, '}'), err
}
