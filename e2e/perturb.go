package e2e

// The validity benchmark: a perturbation matrix over the ground-truth
// topologies. Each perturbation changes how a topology's purple team
// behaves or reports (late batches, duplicate roads, a silent or failing
// reviewer, a dropped exporter, a skewed clock...) and states, before it
// runs, the verdict the documented rules (docs/participants.md's evidence
// table, docs/evaluators.md's labels, docs/purple-agent.md's delegation)
// call for: the topology's own label, insufficient_evidence, or a recorded
// failure. The benchmark then checks the green agent gives it.

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/scenario/coordination"
)

// Expected verdict kinds.
const (
	// ExpectSameLabel: the label of the unperturbed ground truth.
	ExpectSameLabel = "same_label"
	// ExpectInsufficient: the label insufficient_evidence.
	ExpectInsufficient = "insufficient_evidence"
	// ExpectFailure: the task's outcome is a recorded failure (not
	// success, with the error the entry agent's task ended with).
	ExpectFailure = "failure"
)

// DefaultPerturbSettleMaxWait is the green agent's own default maximum
// settle wait (docs/participants.md): the perturbation matrix runs with
// the defaults a requester gets, not the reconstruction benchmark's short
// bound.
const DefaultPerturbSettleMaxWait = 15 * time.Second

// skewOffset is how far the clock-skew proxy shifts a reviewer's spans.
const skewOffset = 90 * time.Second

// Perturbation is one column of the matrix.
type Perturbation struct {
	Name string
	// Expect is the verdict kind the documented rules call for.
	Expect string
	// Why says which rule gives Expect.
	Why string
	// Skip, when set, is why the perturbation is not run at all.
	Skip string
	// apply changes the team's specs (already built from the topology);
	// it returns a reason when the perturbation does not apply to this
	// topology.
	apply func(env *perturbEnv, top groundtruth.Topology, specs []purple.AgentSpec) (notApplicable string, err error)
}

// perturbEnv is what a perturbation may use: the green agent's OTLP URL,
// and cleanups (proxies) to run after the case.
type perturbEnv struct {
	ctx      context.Context
	greenURL string
	settle   time.Duration
	cleanups []func()
}

// Perturbations are the matrix's columns, in order.
func Perturbations() []Perturbation {
	return []Perturbation{
		{Name: "none", Expect: ExpectSameLabel, Why: "the reconstruction case, at the default wait",
			apply: func(*perturbEnv, groundtruth.Topology, []purple.AgentSpec) (string, error) { return "", nil }},
		{Name: "retry", Expect: ExpectSameLabel,
			Skip: "the purple agents never retry a failed peer call (docs/purple-agent.md), so a retried call cannot be produced"},
		{Name: "duplicate_export", Expect: ExpectSameLabel,
			Why: "every reporting agent sends its spans both by OTLP and as extension steps; assembly deduplicates by span id",
			apply: func(env *perturbEnv, top groundtruth.Topology, specs []purple.AgentSpec) (string, error) {
				for i, a := range top.Agents {
					if a.ExportsSpans || a.ReturnsExtensionSteps {
						specs[i].Options.OTLPEndpoint = env.greenURL
						specs[i].Options.NoExtension = false
					}
				}
				return "", nil
			}},
		{Name: "late_export_5s", Expect: ExpectSameLabel,
			Why: "SDK-default batching (5 s, no flush on response): the trace settles on evidence within settle_max_wait_ms (15 s)",
			apply: func(_ *perturbEnv, _ groundtruth.Topology, specs []purple.AgentSpec) (string, error) {
				for i := range specs {
					specs[i].Options.ExportInterval = 5 * time.Second
					specs[i].Options.FlushOnResponse = false
				}
				return "", nil
			}},
		{Name: "silent_reviewer", Expect: ExpectSameLabel,
			Why: "a called leaf reviewer exports nothing: its calls are client_only (partial evidence) and the caller's client span still names it",
			apply: onLeaf(func(_ *perturbEnv, s *purple.AgentSpec) error {
				s.Options.Faults.NoSpans = true
				return nil
			})},
		{Name: "silent_entry", Expect: ExpectInsufficient,
			Why: "the agent the assessor called answered none of its calls with a span: insufficient",
			apply: func(_ *perturbEnv, top groundtruth.Topology, specs []purple.AgentSpec) (string, error) {
				i := slices.IndexFunc(top.Agents, func(a groundtruth.TopologyAgent) bool { return a.Role == top.Entry || a.Name == top.Entry })
				if i < 0 {
					return "no entry agent", nil
				}
				specs[i].Options.Faults.NoSpans = true
				return "", nil
			}},
		{Name: "dropped_exporter", Expect: ExpectSameLabel,
			Why: "a leaf reviewer's OTLP endpoint refuses connections (no extension steps): as a silent reviewer, partial evidence",
			apply: onLeaf(func(env *perturbEnv, s *purple.AgentSpec) error {
				addr, err := closedPort()
				if err != nil {
					return err
				}
				s.Options.OTLPEndpoint = "http://" + addr
				s.Options.NoExtension = true
				return nil
			})},
		{Name: "clock_skew_+90s", Expect: ExpectSameLabel,
			Why: "a reviewer's span times (a leaf's if there is one) are shifted by +90 s on the way (an OTLP proxy): the graph comes from parentage, not times",
			apply: onCalled(func(env *perturbEnv, s *purple.AgentSpec) error {
				url, stop, err := startSkewProxy(env.ctx, env.greenURL, skewOffset)
				if err != nil {
					return err
				}
				env.cleanups = append(env.cleanups, stop)
				s.Options.OTLPEndpoint = url
				s.Options.NoExtension = true
				return nil
			})},
		{Name: "slow_reviewer_2s", Expect: ExpectSameLabel,
			Why: "a reviewer (a leaf if there is one) waits 2 s before working: timing changes, calls do not",
			apply: onCalled(func(_ *perturbEnv, s *purple.AgentSpec) error {
				s.Options.Faults.Delay = 2 * time.Second
				return nil
			})},
		{Name: "failing_reviewer", Expect: ExpectSameLabel,
			Why: "a leaf reviewer's task fails (FailureRate 1); it still answered the call with its server span, and its caller decides from the others",
			apply: onLeaf(func(_ *perturbEnv, s *purple.AgentSpec) error {
				s.Options.Faults.FailureRate = 1
				return nil
			})},
		{Name: "failing_all_peers", Expect: ExpectFailure,
			Why: "every peer of the entry coordinator fails: it fails the task when none of its peers answered (docs/purple-agent.md)",
			apply: func(_ *perturbEnv, top groundtruth.Topology, specs []purple.AgentSpec) (string, error) {
				i := slices.IndexFunc(top.Agents, func(a groundtruth.TopologyAgent) bool { return a.Role == top.Entry || a.Name == top.Entry })
				if i < 0 || len(top.Agents[i].Peers) == 0 {
					return "the entry has no peers", nil
				}
				for _, p := range top.Agents[i].Peers {
					j := slices.IndexFunc(top.Agents, func(a groundtruth.TopologyAgent) bool { return a.Name == p })
					specs[j].Options.Faults.FailureRate = 1
				}
				return "", nil
			}},
	}
}

// onLeaf applies f to the topology's first leaf reviewer: an agent some
// other agent calls, with no peers of its own, that reports its spans by
// some road. Topologies without one (a hub, whose reviewers call back)
// are not applicable: silencing or failing a reviewer that calls others
// hides calls, which the rules do not pin to one label.
func onLeaf(f func(env *perturbEnv, s *purple.AgentSpec) error) func(*perturbEnv, groundtruth.Topology, []purple.AgentSpec) (string, error) {
	return onReviewer(true, f)
}

// onCalled applies f to the first leaf reviewer, else to the first called
// reviewer that reports its spans: for perturbations that change when
// spans arrive or what times they carry, not which calls are made.
func onCalled(f func(env *perturbEnv, s *purple.AgentSpec) error) func(*perturbEnv, groundtruth.Topology, []purple.AgentSpec) (string, error) {
	return func(env *perturbEnv, top groundtruth.Topology, specs []purple.AgentSpec) (string, error) {
		if na, err := onReviewer(true, f)(env, top, specs); na == "" {
			return "", err
		}
		return onReviewer(false, f)(env, top, specs)
	}
}

func onReviewer(leafOnly bool, f func(env *perturbEnv, s *purple.AgentSpec) error) func(*perturbEnv, groundtruth.Topology, []purple.AgentSpec) (string, error) {
	return func(env *perturbEnv, top groundtruth.Topology, specs []purple.AgentSpec) (string, error) {
		called := map[string]bool{}
		for _, a := range top.Agents {
			for _, p := range a.Peers {
				called[p] = true
			}
		}
		for i, a := range top.Agents {
			if called[a.Name] && (!leafOnly || len(a.Peers) == 0) && a.Name != top.Entry && a.Role != top.Entry &&
				(a.ExportsSpans || a.ReturnsExtensionSteps) {
				return "", f(env, &specs[i])
			}
		}
		if leafOnly {
			return "no leaf reviewer that reports spans", nil
		}
		return "no called reviewer that reports spans", nil
	}
}

// closedPort is a loopback address nothing listens on any more.
func closedPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("closed port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("closed port: %w", err)
	}
	return addr, nil
}

// PerturbOptions configure RunPerturb.
type PerturbOptions struct {
	Options
	// Perturbations select columns by name (all when empty).
	Perturbations []string
	// PerPattern keeps the first scenario of each topology pattern only
	// (when TaskIDs is empty).
	PerPattern bool
	// SettleMaxWait of the perturbed runs (default
	// DefaultPerturbSettleMaxWait, the green agent's own default).
	PerturbSettleMaxWait time.Duration
}

// Cell is one (topology, perturbation) case.
type Cell struct {
	Scenario     string `json:"scenario"`
	Pattern      string `json:"pattern"`
	Perturbation string `json:"perturbation"`
	// Expected is the verdict the rules call for: a label, or "failure".
	Expected string `json:"expected"`
	// Got is the label found, or "failure" when the outcome recorded one
	// and a failure was expected.
	Got string `json:"got"`
	OK  bool   `json:"ok"`
	// Skipped says why the cell did not run (then OK is meaningless).
	Skipped  string         `json:"skipped,omitempty"`
	Evidence string         `json:"evidence,omitempty"`
	Outcome  string         `json:"outcome,omitempty"`
	Result   ScenarioResult `json:"result"`
}

// PerturbReport is the matrix's result.
type PerturbReport struct {
	Cells    []Cell        `json:"cells"`
	Run      int           `json:"run"`
	Correct  int           `json:"correct"`
	Accuracy float64       `json:"accuracy"`
	Skipped  []string      `json:"skipped"`
	Duration time.Duration `json:"duration_ns"`
}

// RunPerturb runs the perturbation matrix.
func RunPerturb(ctx context.Context, po PerturbOptions) (*PerturbReport, error) {
	started := time.Now()
	opts := po.Options
	opts.withDefaults()
	if po.PerturbSettleMaxWait <= 0 {
		po.PerturbSettleMaxWait = DefaultPerturbSettleMaxWait
	}
	gt := opts.GroundTruth
	if gt == nil {
		var err error
		if gt, err = groundtruth.Default(); err != nil {
			return nil, fmt.Errorf("perturb: %w", err)
		}
	}
	var scenarios []groundtruth.Entry
	seen := map[string]bool{}
	for _, sc := range gt.Scenarios {
		switch {
		case len(opts.TaskIDs) > 0:
			if !slices.Contains(opts.TaskIDs, sc.ID) {
				continue
			}
		case po.PerPattern:
			if seen[sc.Topology.Pattern] {
				continue
			}
			seen[sc.Topology.Pattern] = true
		}
		scenarios = append(scenarios, sc)
	}
	if len(opts.TaskIDs) > 0 && len(scenarios) != len(opts.TaskIDs) {
		return nil, fmt.Errorf("perturb: task ids %v: only %d found in the ground truth", opts.TaskIDs, len(scenarios))
	}
	var perts []Perturbation
	for _, p := range Perturbations() {
		if len(po.Perturbations) == 0 || slices.Contains(po.Perturbations, p.Name) {
			perts = append(perts, p)
		}
	}
	if len(po.Perturbations) > 0 && len(perts) != len(po.Perturbations) {
		return nil, fmt.Errorf("perturb: perturbations %v: only %d known", po.Perturbations, len(perts))
	}
	coord, err := coordination.New(coordination.Options{GroundTruth: gt, PeerReadDir: opts.PeerReadDir, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("perturb: %w", err)
	}
	h, err := startGreen(ctx, coord, &opts)
	if err != nil {
		return nil, err
	}
	defer stopGreen(h, &opts)

	rep := &PerturbReport{}
	for _, p := range perts {
		if p.Skip != "" {
			rep.Skipped = append(rep.Skipped, p.Name+": "+p.Skip)
		}
	}
	type job struct {
		sc groundtruth.Entry
		p  Perturbation
	}
	var jobs []job
	for _, sc := range scenarios {
		for _, p := range perts {
			if p.Skip == "" {
				jobs = append(jobs, job{sc, p})
			}
		}
	}
	rep.Cells = make([]Cell, len(jobs))
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				rep.Cells[i] = Cell{Scenario: j.sc.ID, Pattern: j.sc.Topology.Pattern, Perturbation: j.p.Name, Skipped: ctx.Err().Error()}
				return
			}
			defer func() { <-sem }()
			rep.Cells[i] = runCell(ctx, h, &opts, j.sc, j.p, po.PerturbSettleMaxWait)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("perturb: %w", err)
	}
	for _, c := range rep.Cells {
		if c.Skipped != "" {
			continue
		}
		rep.Run++
		if c.OK {
			rep.Correct++
		}
	}
	rep.Accuracy = ratio(rep.Correct, rep.Run)
	rep.Duration = time.Since(started)
	return rep, nil
}

// runCell runs one case and judges it against the expected verdict.
func runCell(ctx context.Context, h *loopback.Harness, opts *Options, sc groundtruth.Entry, p Perturbation, settle time.Duration) Cell {
	c := Cell{Scenario: sc.ID, Pattern: sc.Topology.Pattern, Perturbation: p.Name}
	switch p.Expect {
	case ExpectSameLabel:
		c.Expected = sc.Expected.Label
	default:
		c.Expected = p.Expect
	}
	env := &perturbEnv{ctx: ctx, greenURL: h.URL(), settle: settle}
	defer func() {
		for _, f := range env.cleanups {
			f()
		}
	}()
	specs := SystemSpecs(sc.Topology, h.URL(), nil, baseOptions(opts))
	na, err := p.apply(env, sc.Topology, specs)
	if na != "" {
		c.Skipped = na
		return c
	}
	r := ScenarioResult{ID: sc.ID, Pattern: sc.Topology.Pattern, Roads: roads(sc.Topology),
		ExpectedLabel: c.Expected, ExpectedFindings: sc.Expected.Findings}
	if err != nil {
		r.Err = err.Error()
	} else {
		r = runCase(ctx, h, opts, sc, r, specs, settle)
	}
	c.Result = r
	c.Got = r.FoundLabel
	c.Evidence = r.EvidenceLevel
	if r.Outcome != nil {
		c.Outcome = "pass"
		if !r.Outcome.Success {
			c.Outcome = "fail"
		}
	}
	failed := r.Outcome != nil && !r.Outcome.Success && r.Outcome.Details["error"] != nil
	switch {
	case r.Err != "":
		c.Got = "error"
	case p.Expect == ExpectFailure:
		if failed {
			c.Got = ExpectFailure
		}
		c.OK = failed
	default:
		// The label is about coordination: a task that failed at the
		// entry may still carry the expected label.
		c.OK = r.FoundLabel == c.Expected
	}
	return c
}

// WriteTable prints the matrix: one line per case, then the accuracy and
// what was skipped.
func (r *PerturbReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	line := "%-14s %-9s %-18s %-22s %-22s %-4s %-12s %-7s %s\n"
	fmt.Fprintf(&b, line, "scenario", "pattern", "perturbation", "expected", "got", "ok", "evidence", "outcome", "notes")
	for _, c := range r.Cells {
		ok := "yes"
		if c.Skipped != "" {
			ok = "n/a"
		} else if !c.OK {
			ok = "NO"
		}
		var notes []string
		if c.Skipped != "" {
			notes = append(notes, "not applicable: "+c.Skipped)
		}
		if c.Result.Err != "" {
			notes = append(notes, "error: "+c.Result.Err)
		}
		if c.Result.Outcome != nil && !c.Result.Outcome.Success {
			if e, ok := c.Result.Outcome.Details["error"].(string); ok {
				notes = append(notes, "entry failed: "+e)
			}
		}
		fmt.Fprintf(&b, line, c.Scenario, c.Pattern, c.Perturbation, c.Expected, orDash(c.Got), ok,
			orDash(c.Evidence), orDash(c.Outcome), strings.Join(notes, "; "))
	}
	fmt.Fprintf(&b, "\nvalidity accuracy: %d/%d = %.1f%%\n", r.Correct, r.Run, 100*r.Accuracy)
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "skipped %s\n", s)
	}
	fmt.Fprintf(&b, "wall time: %s\n", r.Duration.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}
