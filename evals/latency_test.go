package evals

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/tracedata"
)

// latT0 is the time origin of the test traces; offsets are in ms.
var latT0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// latStep builds a timed step [start, end] ms after latT0.
func latStep(id, parent, agent string, ct tracedata.CallType, start, end float64) tracedata.Step {
	s := tracedata.Step{
		StepID: id, ParentStepID: parent, Agent: agent, CallType: ct, Name: "step " + id,
		StartTime: latT0.Add(time.Duration(start * float64(time.Millisecond))),
		EndTime:   latT0.Add(time.Duration(end * float64(time.Millisecond))),
	}
	s.LatencyMS = end - start
	return s
}

func latEval(t *testing.T, trace *tracedata.TraceData, in Inputs) *LatencyResult {
	t.Helper()
	r, err := latencyEvaluator{}.Evaluate(context.Background(), trace, in)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	res := r.(*LatencyResult)
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("result does not encode: %v", err)
	}
	return res
}

func latClose(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// Hand-computed with rank = p/100*(n-1), interpolating between the two
// nearest sorted values (numpy's default); numpy prints the same numbers.
func TestLatencyPercentileHand(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, sorted by the code under test
	}
	cases := []struct {
		name          string
		v             []float64
		p50, p95, p99 float64
		avg, max      float64
	}{
		// n=1: every rank is 0.
		{"n1", []float64{7}, 7, 7, 7, 7, 7},
		// n=2: ranks 0.5, 0.95, 0.99 between 10 and 20.
		{"n2", []float64{20, 10}, 15, 19.5, 19.9, 15, 20},
		// n=5: ranks 2, 3.8, 3.96 over 1..5.
		{"n5", []float64{3, 1, 5, 2, 4}, 3, 4.8, 4.96, 3, 5},
		// n=100: ranks 49.5, 94.05, 98.01 over 1..100.
		{"n100", hundred, 50.5, 95.05, 99.01, 50.5, 100},
	}
	for _, c := range cases {
		st := latSummarise(slices.Clone(c.v))
		if st.Count != len(c.v) {
			t.Errorf("%s count = %d", c.name, st.Count)
		}
		latClose(t, c.name+" p50", st.P50MS, c.p50)
		latClose(t, c.name+" p95", st.P95MS, c.p95)
		latClose(t, c.name+" p99", st.P99MS, c.p99)
		latClose(t, c.name+" avg", st.AvgMS, c.avg)
		latClose(t, c.name+" max", st.MaxMS, c.max)
	}
	if got := latPercentile(nil, 95); got != 0 {
		t.Errorf("empty percentile = %v, want 0", got)
	}
}

// TestLatencyPercentileNumpy compares with numpy.percentile itself, bit for
// bit, on odd sizes and awkward values. Without numpy it skips, unless
// CI=true, where a missing oracle is a failure.
func TestLatencyPercentileNumpy(t *testing.T) {
	testenv.NeedPython(t, "numpy")
	rng := rand.New(rand.NewPCG(1, 2))
	var sets [][]float64
	for _, n := range []int{1, 2, 3, 5, 7, 10, 20, 21, 99, 100, 101, 1000} {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Round(rng.ExpFloat64()*250*1e3) / 1e3
		}
		sets = append(sets, v)
	}
	sets = append(sets, []float64{0, 0, 0}, []float64{0.1, 0.2, 0.3, 1e9}, []float64{5, 5, 5, 5, 6})
	in, _ := json.Marshal(sets)
	ps := []float64{50, 95, 99}
	const script = `
import json, sys, numpy as np
sets = json.load(sys.stdin)
print(json.dumps([[float(np.percentile(np.array(v, dtype=np.float64), p)) for p in (50, 95, 99)] for v in sets]))
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want [][]float64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	for i, v := range sets {
		sorted := slices.Sorted(slices.Values(v))
		for k, p := range ps {
			if got := latPercentile(sorted, p); got != want[i][k] {
				t.Errorf("set %d (n=%d) p%v = %v, numpy %v", i, len(v), p, got, want[i][k])
			}
		}
	}
}

// A fan-out: the orchestrator starts three workers; b ends last, so the path
// goes through b and into b's own last-ending child, not into the longest
// (a) or first-listed branch.
func TestLatencyCriticalPathFanOut(t *testing.T) {
	trace := &tracedata.TraceData{Steps: []tracedata.Step{
		latStep("r", "", "orch", tracedata.CallHost, 0, 100),
		latStep("a", "r", "a", tracedata.CallAgent, 5, 70), // longest branch
		latStep("b", "r", "b", tracedata.CallAgent, 10, 90),
		latStep("c", "r", "c", tracedata.CallAgent, 20, 60),
		latStep("b1", "b", "b", tracedata.CallTool, 15, 40),
		latStep("b2", "b", "b", tracedata.CallTool, 30, 80),
	}}
	cp := latEval(t, trace, Inputs{}).CriticalPath
	if cp == nil {
		t.Fatal("no critical path")
	}
	var ids []string
	for _, s := range cp.Steps {
		ids = append(ids, s.StepID)
	}
	if !slices.Equal(ids, []string{"r", "b", "b2"}) {
		t.Fatalf("path = %v, want [r b b2]", ids)
	}
	// r covers 100 of which b covers 80: self 20; b covers 80 of which b2
	// covers 50: self 30; b2 is a leaf: self 50. 20+30+50 = 100.
	for k, want := range []float64{20, 30, 50} {
		latClose(t, "self "+ids[k], cp.Steps[k].SelfMS, want)
	}
	latClose(t, "b start offset", cp.Steps[1].StartOffsetMS, 10)
	latClose(t, "b duration", cp.Steps[1].DurationMS, 80)
	latClose(t, "path", cp.DurationMS, 100)
	if len(cp.AgentShare) != 2 {
		t.Errorf("shares = %v", cp.AgentShare)
	}
	latClose(t, "orch share", cp.AgentShare["orch"], 0.2)
	latClose(t, "b share", cp.AgentShare["b"], 0.8)
}

// A chain: each step has one child, so the path is the whole chain and the
// self times are the gaps between nested steps.
func TestLatencyCriticalPathChain(t *testing.T) {
	trace := &tracedata.TraceData{Steps: []tracedata.Step{
		latStep("t", "s", "y", tracedata.CallTool, 20, 50),
		latStep("s", "r", "y", tracedata.CallAgent, 10, 90),
		latStep("r", "", "x", tracedata.CallAgent, 0, 100),
	}}
	cp := latEval(t, trace, Inputs{}).CriticalPath
	if len(cp.Steps) != 3 || cp.Steps[0].StepID != "r" || cp.Steps[2].StepID != "t" {
		t.Fatalf("path = %+v", cp.Steps)
	}
	// r: 100-80 = 20; s: 80-30 = 50; t: 30.
	for k, want := range []float64{20, 50, 30} {
		latClose(t, "self "+cp.Steps[k].StepID, cp.Steps[k].SelfMS, want)
	}
	latClose(t, "x share", cp.AgentShare["x"], 0.2)
	latClose(t, "y share", cp.AgentShare["y"], 0.8)
	if h := latEval(t, trace, Inputs{}).Headline(); h[LatencyKeyCriticalPath] != 100 {
		t.Errorf("headline = %v", h)
	}
}

// Concurrent children: among children ending together the one that started
// first is followed, then the lower id; with several roots the last-ending
// root wins; a child that outlives its parent is clipped in the parent's
// self time.
func TestLatencyCriticalPathConcurrent(t *testing.T) {
	trace := &tracedata.TraceData{Steps: []tracedata.Step{
		latStep("early-root", "", "u", tracedata.CallHost, 0, 50),
		latStep("root", "", "o", tracedata.CallAgent, 0, 100),
		latStep("y", "root", "p", tracedata.CallAgent, 20, 90),
		latStep("x", "root", "q", tracedata.CallAgent, 10, 90), // same end, earlier start
		latStep("x2", "x", "w", tracedata.CallAgent, 30, 60),
		latStep("x1", "x", "v", tracedata.CallAgent, 30, 60), // identical times: lower id wins
	}}
	cp := latEval(t, trace, Inputs{}).CriticalPath
	var ids []string
	for _, s := range cp.Steps {
		ids = append(ids, s.StepID)
	}
	if !slices.Equal(ids, []string{"root", "x", "x1"}) {
		t.Fatalf("path = %v, want [root x x1]", ids)
	}

	async := &tracedata.TraceData{Steps: []tracedata.Step{
		latStep("r", "", "o", tracedata.CallAgent, 0, 100),
		latStep("d", "r", "d", tracedata.CallAgent, 50, 130), // outlives r
		latStep("e", "r", "e", tracedata.CallAgent, 0, 99),
	}}
	cp = latEval(t, async, Inputs{}).CriticalPath
	if len(cp.Steps) != 2 || cp.Steps[1].StepID != "d" {
		t.Fatalf("path = %+v", cp.Steps)
	}
	// r: 100 - overlap(r, d) 50 = 50; d: 80; the path spans 0..130.
	latClose(t, "r self", cp.Steps[0].SelfMS, 50)
	latClose(t, "d self", cp.Steps[1].SelfMS, 80)
	latClose(t, "path", cp.DurationMS, 130)
	latClose(t, "o share", cp.AgentShare["o"], 50.0/130)
}

func TestLatencyAgentsAndEdges(t *testing.T) {
	trace := &tracedata.TraceData{
		Agents: []tracedata.Agent{
			{Name: "green", Role: tracedata.RoleAssessor},
			{Name: "alpha"}, {Name: "beta"}, {Name: "idle"},
			{Name: "ghost", Virtual: true},
		},
		Steps: []tracedata.Step{
			latStep("task", "", "green", tracedata.CallHost, 0, 1000),
			// One call green -> alpha seen on both sides: counted once, as
			// the caller saw it (400 ms).
			latStep("c1", "task", "alpha", tracedata.CallAgent, 0, 400),
			latStep("s1", "c1", "alpha", tracedata.CallAgent, 10, 390),
			latStep("llm1", "s1", "alpha", tracedata.CallTool, 20, 120),
			// alpha -> beta twice.
			latStep("c2", "s1", "beta", tracedata.CallAgent, 130, 330),
			latStep("c3", "task", "beta", tracedata.CallAgent, 500, 900),
			// A call to an uninstrumented peer: a virtual callee.
			latStep("c4", "task", "ghost", tracedata.CallAgent, 900, 990),
			{StepID: "nolat", ParentStepID: "task", Agent: "beta", CallType: tracedata.CallTool},
			{StepID: "noagent", ParentStepID: "task", CallType: tracedata.CallTool, LatencyMS: 3},
		},
		Interactions: []tracedata.Interaction{
			{From: "green", To: "alpha", Count: 1, LatenciesMS: []float64{400}},
			{From: "alpha", To: "beta", Count: 2, LatenciesMS: []float64{200, 400}},
			{From: "green", To: "ghost", Count: 1, LatenciesMS: []float64{math.NaN()}},
		},
	}
	res := latEval(t, trace, Inputs{})
	want := LatencySteps{Counted: 6, SameCall: 1, WithoutLatency: 1, WithoutAgent: 1, WithoutTimes: 2}
	if res.Steps != want {
		t.Errorf("steps = %+v, want %+v", res.Steps, want)
	}
	alpha := res.Agents["alpha"]
	if alpha.Count != 2 || alpha.MaxMS != 400 || !alpha.Measured {
		t.Errorf("alpha = %+v", alpha)
	}
	if alpha.ByCallType["AGENT"].Count != 1 || alpha.ByCallType["TOOL"].MaxMS != 100 {
		t.Errorf("alpha by call type = %+v", alpha.ByCallType)
	}
	if g := res.Agents["green"]; g.Measured || g.Count != 1 {
		t.Errorf("green = %+v", g)
	}
	if _, ok := res.Agents["idle"]; ok {
		t.Error("an agent without steps is listed")
	}
	// beta: 200 and 400 -> p95 = 200 + 0.95*200 = 390, the highest among
	// measured agents (alpha: 100 and 400 -> 385); green (1000) and the
	// virtual ghost do not compete.
	if res.SlowestAgent == nil || res.SlowestAgent.Name != "beta" {
		t.Fatalf("slowest = %+v", res.SlowestAgent)
	}
	latClose(t, "beta p95", res.SlowestAgent.P95MS, 390)
	// Overall: measured agents' steps only: 400, 100, 200, 400.
	if res.Overall == nil || res.Overall.Count != 4 {
		t.Fatalf("overall = %+v", res.Overall)
	}
	latClose(t, "overall avg", res.Overall.AvgMS, 275)
	if len(res.Edges) != 2 || res.Edges[0].From != "alpha" || res.Edges[1].To != "alpha" {
		t.Fatalf("edges = %+v", res.Edges)
	}
	latClose(t, "alpha->beta p50", res.Edges[0].P50MS, 300)
	h := res.Headline()
	wantKeys := []string{LatencyKeyCriticalPath, LatencyKeyP50, LatencyKeyP95, LatencyKeySlowestP95, LatencyKeySteps}
	if keys := slices.Sorted(maps.Keys(h)); !slices.Equal(keys, wantKeys) {
		t.Errorf("headline keys = %v, want %v", keys, wantKeys)
	}
	if h[LatencyKeySlowestP95] != res.SlowestAgent.P95MS || h[LatencyKeyCriticalPath] != 1000 {
		t.Errorf("headline = %v", h)
	}

	// With virtual nodes included the assessor competes (and wins).
	res = latEval(t, trace, Inputs{Config: Config{IncludeVirtualNodes: true}})
	if res.SlowestAgent.Name != "green" {
		t.Errorf("slowest with virtual nodes = %+v", res.SlowestAgent)
	}

	// Ties on p95 go to the first name.
	tie := &tracedata.TraceData{Steps: []tracedata.Step{
		latStep("1", "", "zed", tracedata.CallAgent, 0, 10),
		latStep("2", "", "amy", tracedata.CallAgent, 0, 10),
	}}
	if s := latEval(t, tie, Inputs{}).SlowestAgent; s.Name != "amy" {
		t.Errorf("tie slowest = %+v", s)
	}
}

// Empty, degenerate and malformed traces give a result, never a panic or a
// value JSON cannot hold.
func TestLatencyOddTraces(t *testing.T) {
	for name, trace := range map[string]*tracedata.TraceData{
		"nil":   nil,
		"empty": {},
		"untimed": {Steps: []tracedata.Step{
			{StepID: "a", Agent: "x", CallType: tracedata.CallAgent},
			{StepID: "b", Agent: "x", CallType: tracedata.CallAgent, LatencyMS: math.NaN()},
			{StepID: "c", Agent: "x", CallType: tracedata.CallAgent, LatencyMS: math.Inf(1)},
			{StepID: "d", Agent: "x", StartTime: latT0, EndTime: latT0.Add(-time.Second)},
		}},
	} {
		res := latEval(t, trace, Inputs{})
		if res.Note != LatencyNote || res.CriticalPath != nil || res.Overall != nil || res.SlowestAgent != nil {
			t.Errorf("%s: %+v", name, res)
		}
		if h := res.Headline(); len(h) != 1 || h[LatencyKeySteps] != 0 {
			t.Errorf("%s headline = %v", name, h)
		}
		b, _ := json.Marshal(res)
		if !strings.Contains(string(b), `"note":"latency values compare only within one run on one machine"`) ||
			!strings.Contains(string(b), `"edges":[]`) {
			t.Errorf("%s json = %s", name, b)
		}
	}

	// Zero durations: counted as 0 ms; the path has no length and no shares.
	zero := &tracedata.TraceData{Steps: []tracedata.Step{
		latStep("r", "", "x", tracedata.CallAgent, 5, 5),
		latStep("c", "r", "y", tracedata.CallAgent, 5, 5),
	}}
	res := latEval(t, zero, Inputs{})
	if res.Steps.Counted != 2 || res.Overall.MaxMS != 0 {
		t.Errorf("zero steps = %+v overall %+v", res.Steps, res.Overall)
	}
	if cp := res.CriticalPath; cp == nil || len(cp.Steps) != 2 || cp.DurationMS != 0 || len(cp.AgentShare) != 0 {
		t.Errorf("zero path = %+v", cp)
	}

	// Missing times: latency from LatencyMS or the whole-ms Latency still
	// counts per agent; the critical path skips the untimed step and takes
	// its timed child as a root. A parent cycle and a self-parent terminate.
	mixed := &tracedata.TraceData{Steps: []tracedata.Step{
		{StepID: "u", Agent: "x", CallType: tracedata.CallAgent, LatencyMS: 12.5},
		{StepID: "v", Agent: "x", CallType: tracedata.CallAgent, Latency: 7},
		latStep("w", "u", "z", tracedata.CallTool, 0, 30),
		latStep("self", "self", "z", tracedata.CallTool, 0, 10),
		latStep("cy1", "cy2", "z", tracedata.CallTool, 0, 500),
		latStep("cy2", "cy1", "z", tracedata.CallTool, 0, 500),
	}}
	res = latEval(t, mixed, Inputs{})
	if x := res.Agents["x"]; x.Count != 2 || x.MaxMS != 12.5 || x.P50MS != 9.75 {
		t.Errorf("x = %+v", x)
	}
	if cp := res.CriticalPath; cp == nil || cp.Steps[0].StepID != "w" || len(cp.Steps) != 1 {
		t.Errorf("mixed path = %+v", cp)
	}
	if res.Steps.WithoutTimes != 2 {
		t.Errorf("without times = %d", res.Steps.WithoutTimes)
	}
}

// The same trace with its steps in any order gives the same JSON.
func TestLatencyDeterministic(t *testing.T) {
	base := []tracedata.Step{
		latStep("r", "", "o", tracedata.CallHost, 0, 100),
		latStep("a", "r", "a", tracedata.CallAgent, 1, 90.3),
		latStep("b", "r", "b", tracedata.CallAgent, 2, 90.3),
		latStep("a1", "a", "a", tracedata.CallTool, 3, 33.3),
		latStep("a2", "a", "a", tracedata.CallTool, 4, 44.4),
		latStep("b1", "b", "b", tracedata.CallTool, 5, 55.5),
		latStep("b2", "b", "c", tracedata.CallAgent, 6, 66.6),
	}
	encode := func(steps []tracedata.Step) string {
		res := latEval(t, &tracedata.TraceData{Steps: steps, Interactions: []tracedata.Interaction{
			{From: "o", To: "a", LatenciesMS: []float64{89.3, 1.1, 7}},
		}}, Inputs{})
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := encode(base)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		steps := slices.Clone(base)
		rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		if got := encode(steps); got != want {
			t.Fatalf("order changed the result:\n%s\n%s", got, want)
		}
	}
}

func TestLatencyTextRegistered(t *testing.T) {
	tiers := map[string]int{}
	for _, e := range NewRegistry(Options{}).Evaluators() {
		tiers[e.Name()] = e.Tier()
	}
	if tiers["latency"] != 2 || tiers["text"] != 3 {
		t.Errorf("tiers = %v", tiers)
	}
	// A registry of its own, so the test does not depend on the other
	// evaluators.
	reg := &Registry{}
	for _, e := range []Evaluator{textEvaluator{}, latencyEvaluator{}} {
		if err := reg.Register(e); err != nil {
			t.Fatal(err)
		}
	}
	if names := reg.Names(); !slices.Equal(names, []string{"latency", "text"}) {
		t.Errorf("run order = %v", names)
	}
	rep := reg.Run(context.Background(), &tracedata.TraceData{}, Inputs{Config: Config{
		Evaluators: map[string]bool{"text": false},
	}}, nil)
	if _, ok := rep.Results["text"]; ok {
		t.Error("text ran although switched off")
	}
	if _, ok := rep.Results["latency"]; !ok {
		t.Errorf("latency did not run: %v", rep.Errors)
	}
}
