package loopback

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
)

// The demo: `green demo` runs the whole system on loopback with nothing
// configured. A small purple team of base purple agents (package purple: a
// coordinator that fans the task out to two reviewers, each a real A2A
// server with its own tracer provider) and the green agent (package green's
// A2A server) start on free ports; a plain A2A client asks the green agent
// for a three-paper assessment of the coordination scenario, as AgentBeats
// would, and the result arrives as the Result artifact.
//
// The coordinator and reviewer-1 export their spans by OTLP to the green
// agent's receiver; reviewer-2 reports its work only as Traceability
// Extension steps, which the coordinator passes on. So all three roads of
// spans (the green agent's own, OTLP, extension steps), W3C propagation
// across processes and CLIENT/SERVER pairing are exercised, without a data
// set (the tasks are then three built-in paper stubs), an LLM, a collector
// or a key. With OTEL_EXPORTER_OTLP_ENDPOINT set, the green agent and the
// exporting agents also send the run's spans there, so any OTLP backend
// shows the same traces.

// Names of the demo's agents.
const (
	DemoGreenService = green.DefaultServiceName
	DemoCoordinator  = "coordinator"
	DemoReviewer1    = "reviewer-1"
	DemoReviewer2    = "reviewer-2"
)

// Demo defaults.
const (
	DefaultDemoTimeout = 60 * time.Second
	// DefaultDemoSettleQuiet is short: the green agent waits for the
	// server side of every call (settling on evidence), and the demo's
	// agents flush their spans as they answer, so nothing is left to come
	// once every call was answered.
	DefaultDemoSettleQuiet   = 100 * time.Millisecond
	DefaultDemoSettleMaxWait = 10 * time.Second
	// DemoTasks is how many tasks the demo assesses.
	DemoTasks = 3
	// demoStopTimeout bounds the shutdown of each side.
	demoStopTimeout = 10 * time.Second
)

// DemoOptions configure RunDemo. The zero value runs the demo as
// `green demo` does.
type DemoOptions struct {
	// Evaluators default to the standard ones, built by the green agent's
	// executor; Config switches them (it becomes the request's config).
	Evaluators *evals.Registry
	Config     evals.Config
	// Timeout bounds the whole demo (default 60 s).
	Timeout time.Duration
	// SettleQuiet and SettleMaxWait say when a task's trace is complete:
	// every call answered by a span of the callee's, then no participant
	// span for SettleQuiet (default 100 ms); at most SettleMaxWait
	// (default 10 s).
	SettleQuiet   time.Duration
	SettleMaxWait time.Duration
	// GroundTruth and PeerReadDir are the coordination scenario's data
	// (defaults as coordination.New's). Without the data set, or with
	// StubPapers, the tasks are the built-in paper stubs.
	GroundTruth *groundtruth.GroundTruth
	PeerReadDir string
	StubPapers  bool
	// Getenv reads the OpenTelemetry and LLM environment of the green
	// agent's and the purple agents' providers; nil means the process's.
	// Tests pin it so a developer's environment does not change what they
	// see. The judge's AGENTBEATS_LLM_* are read through it too.
	Getenv func(string) string
	// Logger receives the demo's and the agents' logs; nil discards them.
	Logger *slog.Logger
}

func (o DemoOptions) withDefaults() DemoOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultDemoTimeout
	}
	if o.SettleQuiet <= 0 {
		o.SettleQuiet = DefaultDemoSettleQuiet
	}
	if o.SettleMaxWait <= 0 {
		o.SettleMaxWait = DefaultDemoSettleMaxWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// RunDemo runs the demo end to end and returns the green agent's result
// as an A2A client received it (see the comment at the top of this file).
// Everything it starts is stopped before it returns. Only a failure to
// start, or the deadline, is an error: a task whose call fails is a
// recorded failure.
func RunDemo(ctx context.Context, opts DemoOptions) (*report.Result, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	log := opts.Logger

	sc, papers, err := demoScenario(opts)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	h, err := Start(ctx, Options{
		Green: green.ServerOptions{
			Scenarios:       map[string]scenario.Scenario{scenario.Coordination: sc},
			Evaluators:      opts.Evaluators,
			Getenv:          opts.Getenv,
			Logger:          log,
			ShutdownTimeout: demoStopTimeout,
		},
		CallTimeout: opts.Timeout,
		Logger:      log,
	})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	var warnings []string
	defer func() {
		if err := h.Stop(); err != nil {
			log.Warn("demo: green agent shutdown", "err", err)
		}
	}()

	team, err := h.StartTeam(ctx, demoTeam(h.URL(), opts, log))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	teamStopped := false
	stopTeam := func() {
		if teamStopped {
			return
		}
		teamStopped = true
		if err := team.Stop(); err != nil {
			log.Warn("demo: purple team shutdown", "err", err)
			warnings = append(warnings, "purple team shutdown: "+err.Error())
		}
	}
	defer stopTeam()
	log.Info("demo: agents up", "green", h.URL(), "coordinator", team.Agent(DemoCoordinator).URL(),
		"papers", papers, "otlp_receiver", strings.TrimSuffix(h.URL(), "/")+otlpreceiver.TracesPath)

	res, err := demoAssess(ctx, h, team.URLs(), opts)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// Stopping the team flushes its spans; the tasks are assessed already,
	// so this only matters to an external backend.
	stopTeam()
	res.Warnings = append(res.Warnings, warnings...)
	return res, nil
}

// demoTeam is the purple team: the coordinator fans out to both
// reviewers; it and reviewer-1 export OTLP to the green agent (and to the
// environment's endpoint, if any), reviewer-2 returns extension steps only
// and exports nothing, whatever the environment says, so that its steps
// reach every backend through the coordinator once.
func demoTeam(greenURL string, opts DemoOptions, log *slog.Logger) []purple.AgentSpec {
	base := purple.Options{Getenv: opts.Getenv, Logger: log, FlushOnResponse: true}
	coord := base
	coord.Name, coord.Role, coord.OTLPEndpoint, coord.NoExtension = DemoCoordinator, purple.RoleCoordinator, greenURL, true
	r1 := base
	r1.Name, r1.Role, r1.OTLPEndpoint, r1.NoExtension = DemoReviewer1, purple.RoleReviewer, greenURL, true
	r2 := base
	r2.Name, r2.Role = DemoReviewer2, purple.RoleReviewer
	// Only the LLM variables reach reviewer-2.
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	r2.Getenv = func(k string) string {
		if strings.HasPrefix(k, "AGENTBEATS_LLM_") {
			return getenv(k)
		}
		return ""
	}
	return []purple.AgentSpec{
		{Options: r1}, {Options: r2},
		{Options: coord, PeerNames: []string{DemoReviewer1, DemoReviewer2}},
	}
}

// demoAssess asks the green agent for the assessment through A2A and
// decodes the Result artifact's JSON.
func demoAssess(ctx context.Context, h *Harness, participants map[string]string, opts DemoOptions) (*report.Result, error) {
	config := map[string]any{}
	raw, err := json.Marshal(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("encode evaluator config: %w", err)
	}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, fmt.Errorf("encode evaluator config: %w", err)
	}
	config["scenario"] = scenario.Coordination
	config["entry_role"] = DemoCoordinator
	config["num_tasks"] = DemoTasks
	config["settle_quiet_ms"] = opts.SettleQuiet.Milliseconds()
	config["settle_max_wait_ms"] = opts.SettleMaxWait.Milliseconds()
	if dl, ok := ctx.Deadline(); ok {
		config["deadline_seconds"] = max(1, time.Until(dl).Seconds()-5)
	}
	res, err := h.Assess(ctx, participants, config)
	if err != nil {
		return nil, err
	}
	return report.Decode(res)
}

// demoScenario is the coordination scenario over the first DemoTasks
// ground-truth papers when the data set is here, else over the built-in
// stubs. papers says which.
func demoScenario(opts DemoOptions) (*coordination.Scenario, string, error) {
	if !opts.StubPapers {
		s, err := coordination.New(coordination.Options{GroundTruth: opts.GroundTruth, PeerReadDir: opts.PeerReadDir, Logger: opts.Logger})
		switch {
		case err != nil:
			opts.Logger.Info("demo: the coordination scenario's data is not available; using the built-in paper stubs", "reason", err)
		case s.PeerReadDir() == "":
			opts.Logger.Info("demo: PeerRead not found; using the built-in paper stubs")
		default:
			return s, "PeerRead (the first ground-truth tasks)", nil
		}
	}
	s, err := stubCoordinationScenario()
	if err != nil {
		return nil, "", fmt.Errorf("built-in papers: %w", err)
	}
	return s, "built-in stubs", nil
}

// demoPaper is one built-in task: a paper written for the demo, and the
// decision a programme committee would have taken.
type demoPaper struct {
	ID       string
	Title    string
	Abstract string
	Expected string
	// Mean is the imagined reviewers' mean recommendation, on 1–5.
	Mean float64
}

// demoPapers are the stubs. The third is a trap: modest in tone (many
// negative cue words for the reviewers' rule, purple.ReviewByRule) but
// accepted, so the rule-based team gets it wrong and the outcome evaluator
// has a failure to report.
var demoPapers = []demoPaper{
	{
		ID:    "paper-1",
		Title: "Sparse Routing for Mixture-of-Experts Translation",
		Abstract: "We present a novel sparse routing scheme that outperforms dense baselines on four language pairs, " +
			"with a rigorous and thorough ablation of every component. The paper is clearly written, the results " +
			"are significant and state-of-the-art, and the method is simple to implement.",
		Expected: groundtruth.DecisionAccept,
		Mean:     4.5,
	},
	{
		ID:    "paper-2",
		Title: "A Preliminary Look at Prompt Length in Dialogue Agents",
		Abstract: "This preliminary study reports anecdotal evidence from a small pilot with a single model. " +
			"The contribution is incremental, the evaluation protocol is unclear and vague, and the analysis lacks baselines.",
		Expected: groundtruth.DecisionReject,
		Mean:     1.5,
	},
	{
		ID:    "paper-3",
		Title: "Curriculum Ordering Revisited",
		Abstract: "We revisit a known curriculum heuristic in a narrow setting and find that it matters more than reported. " +
			"Although the study is limited to small models and the gains are marginal on two of three tasks, the " +
			"analysis is careful and the effect is robust.",
		Expected: groundtruth.DecisionAccept,
		Mean:     3.75,
	},
}

// StubCoordinationScenario is the coordination scenario over the demo's
// built-in paper stubs (DemoTasks of them): the real scenario, without a
// data set. The soak test (internal/soak) runs it.
func StubCoordinationScenario() (*coordination.Scenario, error) { return stubCoordinationScenario() }

// stubCoordinationScenario is the coordination scenario over demoPapers:
// the same request, the same scoring, papers that need no data set.
func stubCoordinationScenario() (*coordination.Scenario, error) {
	scale := groundtruth.RecommendationScale{Min: 1, Max: 5}
	gt := &groundtruth.GroundTruth{Schema: groundtruth.Schema}
	papers := map[string]*coordination.Paper{}
	for _, p := range demoPapers {
		decision := p.Expected
		accepted := decision == groundtruth.DecisionAccept
		gt.Scenarios = append(gt.Scenarios, groundtruth.Entry{
			ID: p.ID,
			Paper: groundtruth.Paper{Venue: "demo", Split: "stub", ID: p.ID, Title: p.Title, Decision: &decision,
				MeanRecommendation: p.Mean, RecommendationScale: scale, NormalizedRecommendation: round4(scale.Normalize(p.Mean))},
			Topology: groundtruth.Topology{Entry: DemoCoordinator, Pattern: "fan_out", Agents: []groundtruth.TopologyAgent{
				{Name: DemoCoordinator, Role: "coordinator", Peers: []string{DemoReviewer1, DemoReviewer2}, ExportsSpans: true},
				{Name: DemoReviewer1, Role: "reviewer", Peers: []string{}, ExportsSpans: true},
				{Name: DemoReviewer2, Role: "reviewer", Peers: []string{}, ReturnsExtensionSteps: true},
			}},
			Expected: groundtruth.Expectation{Decision: decision, Label: evals.LabelOverCentralized,
				Findings: []string{evals.FindingOverCentralized}},
		})
		papers[p.ID] = &coordination.Paper{Venue: "demo", Split: "stub", ID: p.ID, Title: p.Title, Abstract: p.Abstract, Accepted: &accepted,
			Scale: scale, MeanRecommendation: p.Mean, NormalizedRecommendation: scale.Normalize(p.Mean), Reviews: []coordination.Review{}}
	}
	return coordination.New(coordination.Options{GroundTruth: gt, Papers: papers})
}

// round4 rounds to 4 decimals, as the ground truth file does.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
