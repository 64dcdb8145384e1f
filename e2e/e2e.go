// Package e2e holds coordbench's end-to-end benchmarks.
//
// The reconstruction benchmark (Run): for every scenario of
// the ground truth (groundtruth/ground_truth.json) it starts the scenario's purple topology on
// loopback (base purple agents from package purple, each a real HTTP server
// with its own tracer provider, exporting OTLP to the green agent's
// receiver or returning Traceability Extension steps only, as the topology
// says), asks a real green agent (green.NewServer) for the assessment of
// that one task through a real A2A client (both started by
// internal/loopback, as the demo's are), and compares what the green
// agent recovered from the spans alone (the graph evaluator's label,
// findings and metrics) with what the ground truth expects. The report
// gives per scenario the expected and found label, the coverage and the
// outcome, and the classification accuracy overall and per label.
//
// `make e2e-reconstruction` (alias `make e2e`, cmd/e2e) prints the
// report; the package's tests run it in `make test` and assert it.
//
// The validity benchmark (RunPerturb, perturb.go): the same topologies
// under perturbations, each case against the verdict the documented rules
// call for; `make e2e-perturb` (cmd/e2e -perturb) runs the whole matrix,
// `make test` a corner of it.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/tracedata"
)

// Defaults of Options.
const (
	DefaultParallel    = 4
	DefaultSettleQuiet = 400 * time.Millisecond
	// DefaultSettleMaxWait is short: every agent of the benchmark flushes
	// its spans before it answers, so whatever will come has come when a
	// task ends, and the wait only matters for agents that export nothing
	// (which a trace waits for until this bound, on the first task).
	DefaultSettleMaxWait = 3 * time.Second
	DefaultCallTimeout   = 60 * time.Second
	// assessmentTimeout bounds one scenario's assessment as the client
	// waits for it.
	assessmentTimeout = 3 * time.Minute
	// metricTolerance is how far a recovered metric may be from networkx's.
	metricTolerance = 1e-9
)

// Options configure Run. The zero value runs every scenario of the
// repository's ground truth, with the PeerRead papers when the data set is
// found (titles only otherwise), deterministically: no LLM, no judge, no
// OpenTelemetry environment.
type Options struct {
	// GroundTruth defaults to the built-in one (groundtruth.Default);
	// PeerReadDir to coordination.DefaultPeerReadDir.
	GroundTruth *groundtruth.GroundTruth
	PeerReadDir string
	// TaskIDs selects scenarios (all when empty).
	TaskIDs []string
	// Parallel is how many scenarios run at once (default 4).
	Parallel int
	// SettleQuiet and SettleMaxWait are the green agent's settle interval
	// and bound (defaults 400 ms and 3 s).
	SettleQuiet   time.Duration
	SettleMaxWait time.Duration
	// CallTimeout bounds the green agent's call to the entry agent and each
	// agent's call to a peer (default 60 s).
	CallTimeout time.Duration
	// Faults are injected into the purple agents: scenario id -> agent
	// name -> faults.
	Faults map[string]map[string]purple.Faults
	// Judge switches the LLM judge on (off by default: the labels do not
	// need it, and a developer's AGENTBEATS_LLM_API_KEY would make the
	// benchmark a paid, networked run).
	Judge bool
	// Getenv is the OpenTelemetry and LLM environment of the green and
	// purple agents; nil means none, so nothing leaves the process.
	Getenv func(string) string
	// Logger receives the agents' logs; nil discards them.
	Logger *slog.Logger
}

func (o *Options) withDefaults() {
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.SettleQuiet <= 0 {
		o.SettleQuiet = DefaultSettleQuiet
	}
	if o.SettleMaxWait <= 0 {
		o.SettleMaxWait = DefaultSettleMaxWait
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Report is the benchmark's result.
type Report struct {
	Scenarios []ScenarioResult `json:"scenarios"`
	// Correct counts the scenarios whose found label is the expected one;
	// Accuracy is Correct over the scenarios run.
	Correct  int     `json:"correct"`
	Accuracy float64 `json:"accuracy"`
	// PerLabel is the accuracy of each expected label.
	PerLabel map[string]LabelStat `json:"per_label"`
	// SpansBySource adds up the spans of every task by the road they came:
	// in_process (the green agent's own), otlp, extension.
	SpansBySource map[string]int `json:"spans_by_source"`
	Duration      time.Duration  `json:"duration_ns"`
}

// LabelStat is the accuracy of one label.
type LabelStat struct {
	Scenarios int     `json:"scenarios"`
	Correct   int     `json:"correct"`
	Accuracy  float64 `json:"accuracy"`
}

// ScenarioResult is one scenario: what was expected and what the green
// agent found.
type ScenarioResult struct {
	ID      string `json:"id"`
	Pattern string `json:"pattern"`
	// Roads says how the topology's agents report: "otlp", "steps",
	// "otlp+steps" or "none" per agent, in topology order.
	Roads []string `json:"roads"`

	ExpectedLabel    string   `json:"expected_label"`
	FoundLabel       string   `json:"found_label"`
	ExpectedFindings []string `json:"expected_findings"`
	FoundFindings    []string `json:"found_findings"`
	// MetricMismatches name the metrics the trace's graph gave differently
	// from the ground truth (networkx's values for the topology).
	MetricMismatches []string `json:"metric_mismatches,omitempty"`
	// EdgeMismatches name calls of the topology that the trace lacks, or
	// has a different number of, and calls it has that the topology does
	// not.
	EdgeMismatches []string `json:"edge_mismatches,omitempty"`

	// EvidenceLevel is the graph evaluator's evidence level (complete,
	// partial, insufficient).
	EvidenceLevel string `json:"evidence_level,omitempty"`

	TraceID      string                  `json:"trace_id"`
	Coverage     tracedata.Coverage      `json:"coverage"`
	Interactions []tracedata.Interaction `json:"interactions"`
	Outcome      *evals.Outcome          `json:"outcome,omitempty"`
	// Err is set when the scenario could not be assessed at all.
	Err string `json:"error,omitempty"`
}

// LabelCorrect reports whether the found label is the expected one.
func (r *ScenarioResult) LabelCorrect() bool {
	return r.Err == "" && r.FoundLabel == r.ExpectedLabel
}

// DelegationFor is how the agents of a topology pattern call their peers:
// in a chain everyone passes the task on; otherwise the coordinator fans
// out and a reviewer with peers consults them (a consulted agent answers by
// itself, and an agent the request already passed through, such as a hub's
// coordinator called back, does too).
func DelegationFor(pattern, role string) string {
	switch {
	case pattern == "chain":
		return purple.DelegateChain
	case role == purple.RoleCoordinator:
		return purple.DelegateFanOut
	default:
		return purple.DelegateConsult
	}
}

// Run runs the benchmark. Only a failure to start (no ground truth, no
// listener) or ctx ending is an error; a scenario that fails is reported
// as such.
func Run(ctx context.Context, opts Options) (*Report, error) {
	started := time.Now()
	opts.withDefaults()
	gt := opts.GroundTruth
	if gt == nil {
		var err error
		if gt, err = groundtruth.Default(); err != nil {
			return nil, fmt.Errorf("e2e: %w", err)
		}
	}
	scenarios := gt.Scenarios
	if len(opts.TaskIDs) > 0 {
		scenarios = nil
		for _, sc := range gt.Scenarios {
			if slices.Contains(opts.TaskIDs, sc.ID) {
				scenarios = append(scenarios, sc)
			}
		}
		if len(scenarios) != len(opts.TaskIDs) {
			return nil, fmt.Errorf("e2e: task ids %v: only %d found in the ground truth", opts.TaskIDs, len(scenarios))
		}
	}
	coord, err := coordination.New(coordination.Options{GroundTruth: gt, PeerReadDir: opts.PeerReadDir, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	h, err := startGreen(ctx, coord, &opts)
	if err != nil {
		return nil, err
	}
	defer stopGreen(h, &opts)

	rep := &Report{Scenarios: make([]ScenarioResult, len(scenarios))}
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	for i, sc := range scenarios {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				rep.Scenarios[i] = ScenarioResult{ID: sc.ID, Pattern: sc.Topology.Pattern, Err: ctx.Err().Error()}
				return
			}
			defer func() { <-sem }()
			rep.Scenarios[i] = runScenario(ctx, h, &opts, sc)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	rep.tally()
	rep.Duration = time.Since(started)
	return rep, nil
}

// startGreen starts the green agent on loopback, serving coord as the
// coordination scenario, with the client that asks it for assessments.
func startGreen(ctx context.Context, coord scenario.Scenario, opts *Options) (*loopback.Harness, error) {
	h, err := loopback.Start(ctx, loopback.Options{
		Green: green.ServerOptions{
			Scenarios: map[string]scenario.Scenario{scenario.Coordination: coord},
			Getenv:    opts.Getenv,
			Logger:    opts.Logger,
			Messenger: a2acall.Options{Logger: opts.Logger},
		},
		CallTimeout: assessmentTimeout,
		Logger:      opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	return h, nil
}

func stopGreen(h *loopback.Harness, opts *Options) {
	if err := h.Stop(); err != nil {
		opts.Logger.Warn("e2e: green agent shutdown", "err", err)
	}
}

// assess sends one assessment request and decodes the result artifact.
func assess(ctx context.Context, h *loopback.Harness, participants map[string]string, config map[string]any) (*report.Result, error) {
	raw, err := h.Assess(ctx, participants, config)
	if err != nil {
		return nil, err
	}
	res, err := report.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	return res, nil
}

// SystemSpecs are the purple agents of a topology: each exports OTLP to
// otlpEndpoint when the topology says it exports spans, returns extension
// steps when it says so, delegates as DelegationFor says, with the faults
// given for its name.
func SystemSpecs(top groundtruth.Topology, otlpEndpoint string, faults map[string]purple.Faults, base purple.Options) []purple.AgentSpec {
	specs := make([]purple.AgentSpec, 0, len(top.Agents))
	for _, a := range top.Agents {
		o := base
		o.Name, o.Role = a.Name, a.Role
		o.Delegation = DelegationFor(top.Pattern, a.Role)
		o.OTLPEndpoint = ""
		if a.ExportsSpans {
			o.OTLPEndpoint = otlpEndpoint
		}
		o.NoExtension = !a.ReturnsExtensionSteps
		o.Faults = faults[a.Name]
		specs = append(specs, purple.AgentSpec{Options: o, PeerNames: a.Peers})
	}
	return specs
}

// roads says how an agent reports its spans.
func roads(top groundtruth.Topology) []string {
	out := make([]string, len(top.Agents))
	for i, a := range top.Agents {
		switch {
		case a.ExportsSpans && a.ReturnsExtensionSteps:
			out[i] = "otlp+steps"
		case a.ExportsSpans:
			out[i] = "otlp"
		case a.ReturnsExtensionSteps:
			out[i] = "steps"
		default:
			out[i] = "none"
		}
	}
	return out
}

func runScenario(ctx context.Context, h *loopback.Harness, opts *Options, sc groundtruth.Entry) ScenarioResult {
	r := ScenarioResult{ID: sc.ID, Pattern: sc.Topology.Pattern, Roads: roads(sc.Topology),
		ExpectedLabel: sc.Expected.Label, ExpectedFindings: sc.Expected.Findings}
	return runCase(ctx, h, opts, sc, r, SystemSpecs(sc.Topology, h.URL(), opts.Faults[sc.ID], baseOptions(opts)), opts.SettleMaxWait)
}

// baseOptions are the purple agents' options before the topology's: no
// LLM, spans flushed before each response.
func baseOptions(opts *Options) purple.Options {
	return purple.Options{Getenv: opts.Getenv, Logger: opts.Logger, PeerTimeout: opts.CallTimeout,
		LLM: &llmconfig.Config{}, FlushOnResponse: true}
}

// runCase starts the team of specs, asks the green agent to assess the
// scenario's one task with the given maximum settle wait, and fills r
// with what it found.
func runCase(ctx context.Context, h *loopback.Harness, opts *Options, sc groundtruth.Entry, r ScenarioResult,
	specs []purple.AgentSpec, settleMaxWait time.Duration) ScenarioResult {
	fail := func(err error) ScenarioResult {
		r.Err = err.Error()
		opts.Logger.Warn("e2e: scenario failed", "scenario", sc.ID, "err", err)
		return r
	}
	sys, err := h.StartTeam(ctx, specs)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := sys.Stop(); err != nil {
			opts.Logger.Warn("e2e: purple system shutdown", "scenario", sc.ID, "err", err)
		}
	}()
	config := map[string]any{
		"scenario":             scenario.Coordination,
		"entry_role":           sc.Topology.Entry,
		"task_ids":             []string{sc.ID},
		"settle_quiet_ms":      opts.SettleQuiet.Milliseconds(),
		"settle_max_wait_ms":   settleMaxWait.Milliseconds(),
		"call_timeout_seconds": opts.CallTimeout.Seconds(),
		"evaluators":           map[string]bool{judge.Name: opts.Judge},
	}
	res, err := assess(ctx, h, sys.URLs(), config)
	if err != nil {
		return fail(err)
	}
	if len(res.Tasks) != 1 {
		return fail(fmt.Errorf("the result holds %d tasks, want 1", len(res.Tasks)))
	}
	t := res.Tasks[0]
	r.TraceID, r.Coverage, r.Interactions, r.Outcome = t.TraceID, t.Coverage, t.Interactions, t.Outcome
	graph, ok := t.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult)
	if !ok {
		return fail(errors.New("the result has no graph evaluation"))
	}
	r.FoundLabel = graph.Label
	if graph.Evidence != nil {
		r.EvidenceLevel = graph.Evidence.Level
	}
	r.FoundFindings = []string{}
	for _, f := range graph.Findings {
		r.FoundFindings = append(r.FoundFindings, f.Kind)
	}
	if m := sc.Expected.Metrics; m != nil {
		r.MetricMismatches = CompareMetrics(m, &graph.Metrics)
	}
	r.EdgeMismatches = compareEdges(sc.Topology, t.Interactions)
	return r
}

// CompareMetrics names the metrics got gives differently from want.
func CompareMetrics(want *groundtruth.ExpectedMetrics, got *evals.GraphMetrics) []string {
	var out []string
	scalar := func(name string, w float64, g evals.Scalar) {
		if !g.Valid() || math.Abs(g.Value-w) > metricTolerance {
			out = append(out, fmt.Sprintf("%s: want %g, got %s", name, w, scalarText(g)))
		}
	}
	scalar(evals.MetricDensity, want.Density, got.Density)
	scalar(evals.MetricAverageClustering, want.AverageClustering, got.AverageClustering)
	scalar(evals.MetricNumberWeaklyConnectedComponents, float64(want.NumberWeaklyConnectedComponents), got.NumberWeaklyConnectedComponents)
	scalar(evals.MetricNumberStronglyConnectedComponents, float64(want.NumberStronglyConnectedComponents), got.NumberStronglyConnectedComponents)
	perNode := func(name string, w, g map[string]float64) {
		for _, k := range unionKeys(w, g) {
			wv, wok := w[k]
			gv, gok := g[k]
			if !wok || !gok || math.Abs(wv-gv) > metricTolerance {
				out = append(out, fmt.Sprintf("%s[%s]: want %s, got %s", name, k, optNum(wv, wok), optNum(gv, gok)))
			}
		}
	}
	perNode(evals.MetricBetweennessCentrality, want.BetweennessCentrality, got.BetweennessCentrality)
	perNode(evals.MetricDegreeCentrality, want.DegreeCentrality, got.DegreeCentrality)
	return out
}

func scalarText(s evals.Scalar) string {
	switch {
	case !s.On:
		return "off"
	case s.Null:
		return "null"
	}
	return fmt.Sprint(s.Value)
}

func optNum(v float64, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprint(v)
}

func unionKeys(a, b map[string]float64) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareEdges checks the trace's calls between the topology's agents
// against the topology: each agent calls each of its peers once.
func compareEdges(top groundtruth.Topology, got []tracedata.Interaction) []string {
	agents := map[string]bool{}
	want := map[string]int{}
	for _, a := range top.Agents {
		agents[a.Name] = true
		for _, p := range a.Peers {
			want[a.Name+" -> "+p] = 1
		}
	}
	have := map[string]int{}
	for _, in := range got {
		if agents[in.From] && agents[in.To] {
			have[in.From+" -> "+in.To] += in.Count
		}
	}
	var out []string
	for k, n := range want {
		if have[k] != n {
			out = append(out, fmt.Sprintf("%s: want %d call(s), got %d", k, n, have[k]))
		}
	}
	for k, n := range have {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: %d call(s) the topology does not make", k, n))
		}
	}
	sort.Strings(out)
	return out
}

// tally fills the accuracy and the road counts.
func (r *Report) tally() {
	r.PerLabel = map[string]LabelStat{}
	r.SpansBySource = map[string]int{}
	r.Correct = 0
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		st := r.PerLabel[sc.ExpectedLabel]
		st.Scenarios++
		if sc.LabelCorrect() {
			st.Correct++
			r.Correct++
		}
		r.PerLabel[sc.ExpectedLabel] = st
		for src, n := range sc.Coverage.SpansBySource {
			r.SpansBySource[src] += n
		}
	}
	for k, st := range r.PerLabel {
		st.Accuracy = ratio(st.Correct, st.Scenarios)
		r.PerLabel[k] = st
	}
	r.Accuracy = ratio(r.Correct, len(r.Scenarios))
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(float64(a)/float64(b)*1e4) / 1e4
}

// WriteTable prints the report for people: one line per scenario, then
// the accuracy overall and per label, and the roads the spans came by.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-15s %-9s %-28s %-17s %-17s %-3s %-13s %-8s %s\n",
		"scenario", "pattern", "agents report by", "expected", "found", "ok", "coverage", "outcome", "notes")
	for _, sc := range r.Scenarios {
		ok := "yes"
		if !sc.LabelCorrect() {
			ok = "NO"
		}
		outcome := "-"
		if sc.Outcome != nil {
			outcome = "fail"
			if sc.Outcome.Success {
				outcome = "pass"
			}
		}
		cov := fmt.Sprintf("%d/%d both", sc.Coverage.BothSides+sc.Coverage.InProcess, sc.Coverage.Interactions)
		var notes []string
		if sc.Err != "" {
			notes = append(notes, "error: "+sc.Err)
		}
		if sc.Coverage.ExtensionOnly > 0 {
			notes = append(notes, fmt.Sprintf("%d extension-only", sc.Coverage.ExtensionOnly))
		}
		if sc.Coverage.ClientOnly > 0 {
			notes = append(notes, fmt.Sprintf("%d client-only", sc.Coverage.ClientOnly))
		}
		if len(sc.MetricMismatches) > 0 {
			notes = append(notes, "metrics differ: "+strings.Join(sc.MetricMismatches, "; "))
		}
		if len(sc.EdgeMismatches) > 0 {
			notes = append(notes, "calls differ: "+strings.Join(sc.EdgeMismatches, "; "))
		}
		fmt.Fprintf(&b, "%-15s %-9s %-28s %-17s %-17s %-3s %-13s %-8s %s\n", sc.ID, sc.Pattern,
			strings.Join(sc.Roads, ","), sc.ExpectedLabel, orDash(sc.FoundLabel), ok, cov, outcome, strings.Join(notes, "; "))
	}
	fmt.Fprintf(&b, "\nclassification accuracy: %d/%d = %.1f%%\n", r.Correct, len(r.Scenarios), 100*r.Accuracy)
	labels := make([]string, 0, len(r.PerLabel))
	for l := range r.PerLabel {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		st := r.PerLabel[l]
		fmt.Fprintf(&b, "  %-17s %d/%d = %.1f%%\n", l, st.Correct, st.Scenarios, 100*st.Accuracy)
	}
	passed := 0
	for _, sc := range r.Scenarios {
		if sc.Outcome != nil && sc.Outcome.Success {
			passed++
		}
	}
	fmt.Fprintf(&b, "review outcome (the rule-based purple agents' decisions against PeerRead): %d/%d passed\n", passed, len(r.Scenarios))
	fmt.Fprintf(&b, "spans by road: in_process %d, otlp %d, extension %d\n",
		r.SpansBySource[otelmap.SourceInProcess], r.SpansBySource[otelmap.SourceOTLP], r.SpansBySource[otelmap.SourceExtension])
	fmt.Fprintf(&b, "wall time: %s\n", r.Duration.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
