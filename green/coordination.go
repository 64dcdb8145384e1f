package green

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/evals"
)

// The coordination scenario (DESIGN §5): each task is a PeerRead paper
// named in data/ground_truth.json. The green agent asks the participant's
// entry agent for a review decision in a stated JSON form; the purple system
// coordinates as it likes; the answer is compared with the venue's decision
// and the reviewers' mean recommendation. The ground truth also names the
// purple topology of each task and the coordination label the graph
// evaluator must recover from the spans; this file validates those entries
// but leaves their use to the tests and the demo.

// GroundTruthSchema versions data/ground_truth.json.
const GroundTruthSchema = "coordbench.ground_truth/v1"

// EnvGroundTruth names the ground truth file.
const EnvGroundTruth = "COORDBENCH_GROUND_TRUTH"

var groundTruthRelPath = filepath.Join("data", "ground_truth.json")

// DefaultGroundTruthPath finds data/ground_truth.json: $COORDBENCH_GROUND_TRUTH
// when set, else data/ground_truth.json relative to the working directory,
// else relative to the module root. The file cannot be embedded (go:embed
// does not reach outside the package directory), so a binary run from
// elsewhere needs the variable; the error says where it looked.
func DefaultGroundTruthPath() (string, error) {
	p, err := locateData(EnvGroundTruth, groundTruthRelPath, false)
	if err != nil {
		return "", fmt.Errorf("ground truth: %w", err)
	}
	return p, nil
}

// GroundTruth is data/ground_truth.json (its schema is documented in
// data/README.md). Keys this version does not know are ignored, so later
// versions of the file can add them.
type GroundTruth struct {
	Schema    string                `json:"schema"`
	Scenarios []GroundTruthScenario `json:"scenarios"`
}

// GroundTruthScenario is one task of the coordination scenario.
type GroundTruthScenario struct {
	ID       string           `json:"id"`
	Paper    GroundTruthPaper `json:"paper"`
	Topology Topology         `json:"topology"`
	Expected Expectation      `json:"expected"`
}

// GroundTruthPaper names a PeerRead paper and the facts the task is scored
// against.
type GroundTruthPaper struct {
	Venue string `json:"venue"`
	Split string `json:"split"`
	ID    string `json:"id"`
	Title string `json:"title"`
	// Decision is "accept" or "reject", nil where the venue published none.
	Decision                 *string             `json:"decision"`
	MeanRecommendation       float64             `json:"mean_recommendation"`
	RecommendationScale      RecommendationScale `json:"recommendation_scale"`
	NormalizedRecommendation float64             `json:"normalized_recommendation"`
	ScoredReviews            int                 `json:"scored_reviews,omitempty"`
}

// Ref is the paper's place in PeerRead, venue/split/id.
func (p GroundTruthPaper) Ref() string { return p.Venue + "/" + p.Split + "/" + p.ID }

// Topology is the purple system a task is meant to be run against.
type Topology struct {
	// Entry is the agent the task is sent to.
	Entry   string          `json:"entry"`
	Agents  []TopologyAgent `json:"agents"`
	Pattern string          `json:"pattern"`
}

// TopologyAgent is one agent of a topology.
type TopologyAgent struct {
	Name string `json:"name"`
	// Role is "coordinator" or "reviewer".
	Role string `json:"role"`
	// Peers are the agents it calls, each once per task.
	Peers                 []string `json:"peers"`
	ExportsSpans          bool     `json:"exports_spans"`
	ReturnsExtensionSteps bool     `json:"returns_extension_steps"`
}

// Expectation is what the green agent must find for a task.
type Expectation struct {
	// Decision is the decision an answer is judged against (see
	// Paper.ExpectedDecision).
	Decision string `json:"decision"`
	// Label and Findings are the graph evaluator's label and finding kinds
	// for the task's trace.
	Label    string   `json:"label"`
	Findings []string `json:"findings"`
	// Metrics, when present, are networkx's values for the topology's
	// graph (each agent calling each of its peers once; the assessor left
	// out, as the graph evaluator leaves it out by default).
	Metrics *ExpectedMetrics `json:"metrics,omitempty"`
}

// ExpectedMetrics are the graph metrics a task's trace must give, by
// networkx's names (evals.Metric*).
type ExpectedMetrics struct {
	Density                           float64            `json:"density"`
	NumberWeaklyConnectedComponents   int                `json:"number_weakly_connected_components"`
	NumberStronglyConnectedComponents int                `json:"number_strongly_connected_components"`
	AverageClustering                 float64            `json:"average_clustering"`
	BetweennessCentrality             map[string]float64 `json:"betweenness_centrality"`
	DegreeCentrality                  map[string]float64 `json:"degree_centrality"`
}

// validate checks that the metrics hold values networkx could have given
// and name the topology's agents (every one of them, in a per-agent map
// that is present). A metric left out is not checked: a file may carry
// fewer metrics than this version knows.
func (m *ExpectedMetrics) validate(t *Topology) error {
	var errs []error
	agents := map[string]bool{}
	for _, a := range t.Agents {
		agents[a.Name] = true
	}
	unit := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("%s %g outside 0..1", name, v))
		}
	}
	unit("density", m.Density)
	unit("average_clustering", m.AverageClustering)
	n := len(t.Agents)
	for _, c := range []struct {
		name string
		v    int
	}{{"number_weakly_connected_components", m.NumberWeaklyConnectedComponents}, {"number_strongly_connected_components", m.NumberStronglyConnectedComponents}} {
		if c.v != 0 && (c.v < 1 || c.v > n) {
			errs = append(errs, fmt.Errorf("%s %d outside 1..%d", c.name, c.v, n))
		}
	}
	for _, per := range []struct {
		name string
		m    map[string]float64
	}{{"betweenness_centrality", m.BetweennessCentrality}, {"degree_centrality", m.DegreeCentrality}} {
		if len(per.m) != 0 && len(per.m) != n {
			errs = append(errs, fmt.Errorf("%s names %d agents, the topology has %d", per.name, len(per.m), n))
		}
		for name, v := range per.m {
			if !agents[name] {
				errs = append(errs, fmt.Errorf("%s names %q, which is not an agent of the topology", per.name, name))
			}
			// Degree centrality of a digraph reaches 2 (in and out).
			if math.IsNaN(v) || v < 0 || v > 2 {
				errs = append(errs, fmt.Errorf("%s of %q is %g", per.name, name, v))
			}
		}
	}
	return errors.Join(errs...)
}

// Topology patterns and agent roles of the ground truth.
var (
	topologyPatterns = []string{"fan_out", "chain", "hub", "consult", "isolated"}
	topologyRoles    = []string{"coordinator", "reviewer"}
	graphLabels      = []string{evals.LabelIsolated, evals.LabelBottleneck, evals.LabelOverCentralized, evals.LabelHealthy, evals.LabelSparse}
	graphFindings    = []string{evals.FindingIsolated, evals.FindingBottleneck, evals.FindingOverCentralized, evals.FindingHealthySpread}
)

// maxGroundTruthBytes bounds the ground truth file; 20 entries are a few
// tens of kilobytes.
const maxGroundTruthBytes = 8 << 20

// LoadGroundTruth reads and validates a ground truth file.
func LoadGroundTruth(path string) (*GroundTruth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ground truth: %w (set %s to the file)", err, EnvGroundTruth)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxGroundTruthBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ground truth: read %s: %w", path, err)
	}
	if len(raw) > maxGroundTruthBytes {
		return nil, fmt.Errorf("ground truth: %s is larger than %d bytes", path, maxGroundTruthBytes)
	}
	var gt GroundTruth
	if err := json.Unmarshal(raw, &gt); err != nil {
		return nil, fmt.Errorf("ground truth: %s: %w", path, err)
	}
	if err := gt.Validate(); err != nil {
		return nil, fmt.Errorf("ground truth: %s: %w", path, err)
	}
	return &gt, nil
}

// Validate checks the file's internal consistency: the schema, unique ids,
// well-formed papers, an expected decision that follows from the paper, and
// topologies whose calls the spans can show. It does not need the data set;
// the scenario checks the papers against it when it is present.
func (g *GroundTruth) Validate() error {
	if g.Schema != GroundTruthSchema {
		return fmt.Errorf("schema %q, want %q", g.Schema, GroundTruthSchema)
	}
	if len(g.Scenarios) == 0 {
		return errors.New("no scenarios")
	}
	var errs []error
	seen := map[string]bool{}
	for i := range g.Scenarios {
		sc := &g.Scenarios[i]
		if err := sc.validate(); err != nil {
			errs = append(errs, fmt.Errorf("scenario %d (%q): %w", i+1, sc.ID, err))
		}
		if seen[sc.ID] {
			errs = append(errs, fmt.Errorf("scenario %d: id %q used twice", i+1, sc.ID))
		}
		seen[sc.ID] = true
	}
	return errors.Join(errs...)
}

func (sc *GroundTruthScenario) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if sc.ID == "" || strings.ContainsAny(sc.ID, " \t\n,") {
		bad("id %q: want a non-empty id without spaces or commas", sc.ID)
	}

	p := &sc.Paper
	if p.Venue == "" || p.Split == "" || p.ID == "" {
		bad("paper: venue, split and id are required")
	}
	if strings.TrimSpace(p.Title) == "" {
		bad("paper: title is required")
	}
	if p.Decision != nil && *p.Decision != DecisionAccept && *p.Decision != DecisionReject {
		bad("paper: decision %q, want accept, reject or null", *p.Decision)
	}
	scale := p.RecommendationScale
	if scale.Max <= scale.Min {
		bad("paper: recommendation_scale %g–%g is empty", scale.Min, scale.Max)
	} else if !scale.Contains(p.MeanRecommendation) {
		bad("paper: mean_recommendation %g outside the scale %g–%g", p.MeanRecommendation, scale.Min, scale.Max)
	} else if d := math.Abs(scale.Normalize(p.MeanRecommendation) - p.NormalizedRecommendation); d > 1e-3 {
		bad("paper: normalized_recommendation %g, but the mean %g on %g–%g gives %.4f",
			p.NormalizedRecommendation, p.MeanRecommendation, scale.Min, scale.Max, scale.Normalize(p.MeanRecommendation))
	}

	want := groundTruthDecision(p)
	switch {
	case sc.Expected.Decision != DecisionAccept && sc.Expected.Decision != DecisionReject:
		bad("expected: decision %q, want accept or reject", sc.Expected.Decision)
	case sc.Expected.Decision != want:
		bad("expected: decision %q, but the paper's facts give %q", sc.Expected.Decision, want)
	}
	if !slices.Contains(graphLabels, sc.Expected.Label) {
		bad("expected: label %q, want one of %s", sc.Expected.Label, strings.Join(graphLabels, ", "))
	}
	for _, f := range sc.Expected.Findings {
		if !slices.Contains(graphFindings, f) {
			bad("expected: finding %q, want one of %s", f, strings.Join(graphFindings, ", "))
		}
	}
	if err := sc.Topology.validate(); err != nil {
		bad("topology: %w", err)
	} else if sc.Expected.Metrics != nil {
		if err := sc.Expected.Metrics.validate(&sc.Topology); err != nil {
			bad("expected: metrics: %w", err)
		}
	}
	return errors.Join(errs...)
}

// groundTruthDecision applies Paper.ExpectedDecision's rule to the facts in
// the file.
func groundTruthDecision(p *GroundTruthPaper) string {
	if p.Decision != nil {
		return *p.Decision
	}
	if p.RecommendationScale.Normalize(p.MeanRecommendation) >= DerivedAcceptThreshold {
		return DecisionAccept
	}
	return DecisionReject
}

func (t *Topology) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !slices.Contains(topologyPatterns, t.Pattern) {
		bad("pattern %q, want one of %s", t.Pattern, strings.Join(topologyPatterns, ", "))
	}
	names := map[string]bool{}
	for _, a := range t.Agents {
		if a.Name == "" {
			bad("an agent has no name")
			continue
		}
		if names[a.Name] {
			bad("agent %q listed twice", a.Name)
		}
		names[a.Name] = true
	}
	if !names[t.Entry] {
		bad("entry %q is not one of the agents", t.Entry)
	}
	for _, a := range t.Agents {
		if !slices.Contains(topologyRoles, a.Role) {
			bad("agent %q: role %q, want one of %s", a.Name, a.Role, strings.Join(topologyRoles, ", "))
		}
		seen := map[string]bool{}
		for _, peer := range a.Peers {
			switch {
			case peer == a.Name:
				bad("agent %q lists itself as a peer", a.Name)
			case !names[peer]:
				bad("agent %q: peer %q is not one of the agents", a.Name, peer)
			case seen[peer]:
				bad("agent %q: peer %q listed twice", a.Name, peer)
			}
			seen[peer] = true
		}
		// The label must be recoverable from the spans alone: a call is
		// seen only through its caller's spans or extension steps.
		if len(a.Peers) > 0 && !a.ExportsSpans && !a.ReturnsExtensionSteps {
			bad("agent %q calls peers but neither exports spans nor returns extension steps, so its calls cannot be seen", a.Name)
		}
	}
	return errors.Join(errs...)
}

// Bounds of what a review request carries, so a long paper cannot make an
// unbounded message.
const (
	DefaultMaxAbstractChars = 4000
	DefaultMaxReviewChars   = 2000
	DefaultMaxReviews       = 8
)

// CoordinationOptions configure NewCoordinationScenario. The zero value
// finds the ground truth and the data set as DefaultGroundTruthPath and
// DefaultPeerReadDir do.
type CoordinationOptions struct {
	// GroundTruthPath is the ground truth file (default
	// DefaultGroundTruthPath).
	GroundTruthPath string
	// PeerReadDir is the PeerRead directory. Empty means
	// DefaultPeerReadDir, and when none is found the tasks carry the titles
	// only; a directory named here must exist.
	PeerReadDir string
	// TitlesOnly sends the titles only even when the data set is present.
	TitlesOnly bool
	// MaxAbstractChars, MaxReviewChars and MaxReviews bound the request:
	// the abstract and each review's comments are cut at that many
	// characters, and at most MaxReviews reviews are sent (defaults 4000,
	// 2000, 8).
	MaxAbstractChars int
	MaxReviewChars   int
	MaxReviews       int
}

// CoordinationScenario is the coordination scenario. It is safe for
// concurrent use: everything is read at construction.
type CoordinationScenario struct {
	opts        CoordinationOptions
	gt          *GroundTruth
	peerReadDir string
	tasks       []*CoordinationTask
	byID        map[string]*CoordinationTask
}

var _ Scenario = (*CoordinationScenario)(nil)

// CoordinationTask is Task.Data of a coordination task.
type CoordinationTask struct {
	Scenario GroundTruthScenario `json:"scenario"`
	// Paper is the paper as read from PeerRead; nil when the tasks carry
	// titles only.
	Paper *Paper `json:"-"`
}

// NewCoordinationScenario loads the ground truth and, when the data set is
// present, every paper it names, checking each against the ground truth
// (title, decision, mean recommendation), so a different version of the
// data set is found at start-up rather than as wrong scores.
func NewCoordinationScenario(opts CoordinationOptions) (*CoordinationScenario, error) {
	opts.limitDefaults()
	path := opts.GroundTruthPath
	if path == "" {
		var err error
		if path, err = DefaultGroundTruthPath(); err != nil {
			return nil, fmt.Errorf("coordination: %w", err)
		}
	}
	gt, err := LoadGroundTruth(path)
	if err != nil {
		return nil, fmt.Errorf("coordination: %w", err)
	}
	s := &CoordinationScenario{opts: opts, gt: gt, byID: map[string]*CoordinationTask{}}

	if !opts.TitlesOnly {
		switch {
		case opts.PeerReadDir != "":
			fi, err := os.Stat(opts.PeerReadDir)
			if err != nil {
				return nil, fmt.Errorf("coordination: PeerRead directory: %w", err)
			}
			if !fi.IsDir() {
				return nil, fmt.Errorf("coordination: PeerRead directory %s is not a directory", opts.PeerReadDir)
			}
			s.peerReadDir = opts.PeerReadDir
		default:
			dir, err := DefaultPeerReadDir()
			if err != nil {
				slog.Warn("coordination: PeerRead data set not found; tasks carry paper titles only", "err", err)
			}
			s.peerReadDir = dir
		}
	}

	var errs []error
	for _, sc := range gt.Scenarios {
		t := &CoordinationTask{Scenario: sc}
		if s.peerReadDir != "" {
			p, err := LoadPaper(s.peerReadDir, sc.Paper.Venue, sc.Paper.Split, sc.Paper.ID)
			if err == nil {
				err = checkPaperFacts(&sc, p)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("scenario %s: %w", sc.ID, err))
				continue
			}
			t.Paper = p
		}
		s.tasks = append(s.tasks, t)
		s.byID[sc.ID] = t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("coordination: ground truth %s does not match the PeerRead data in %s: %w", path, s.peerReadDir, err)
	}
	return s, nil
}

// NewCoordinationScenarioFromTasks is the coordination scenario over tasks
// held in memory rather than read from a ground truth file and PeerRead:
// each task is a ground-truth scenario and its paper (nil: the request
// carries the title only). The tasks are checked as NewCoordinationScenario
// checks a file and the data set: the ground truth's own rules, and each
// paper against its entry. Of opts only the request bounds and TitlesOnly
// apply. The demo's built-in papers are served this way.
func NewCoordinationScenarioFromTasks(tasks []CoordinationTask, opts CoordinationOptions) (*CoordinationScenario, error) {
	opts.limitDefaults()
	s := &CoordinationScenario{opts: opts, gt: &GroundTruth{Schema: GroundTruthSchema}, byID: map[string]*CoordinationTask{}}
	for _, t := range tasks {
		s.gt.Scenarios = append(s.gt.Scenarios, t.Scenario)
	}
	if err := s.gt.Validate(); err != nil {
		return nil, fmt.Errorf("coordination: tasks: %w", err)
	}
	var errs []error
	for _, t := range tasks {
		if opts.TitlesOnly {
			t.Paper = nil
		}
		if t.Paper != nil {
			if err := checkPaperFacts(&t.Scenario, t.Paper); err != nil {
				errs = append(errs, fmt.Errorf("scenario %s: %w", t.Scenario.ID, err))
				continue
			}
		}
		s.tasks = append(s.tasks, &t)
		s.byID[t.Scenario.ID] = &t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("coordination: tasks do not match their papers: %w", err)
	}
	return s, nil
}

// limitDefaults fills the request bounds.
func (o *CoordinationOptions) limitDefaults() {
	if o.MaxAbstractChars <= 0 {
		o.MaxAbstractChars = DefaultMaxAbstractChars
	}
	if o.MaxReviewChars <= 0 {
		o.MaxReviewChars = DefaultMaxReviewChars
	}
	if o.MaxReviews <= 0 {
		o.MaxReviews = DefaultMaxReviews
	}
}

// checkPaperFacts compares what the ground truth says of a paper with what
// the loader reads from the data set.
func checkPaperFacts(sc *GroundTruthScenario, p *Paper) error {
	var errs []error
	if coordNormSpace(p.Title) != coordNormSpace(sc.Paper.Title) {
		errs = append(errs, fmt.Errorf("title %q in the data set, %q in the ground truth", p.Title, sc.Paper.Title))
	}
	got, has := p.Decision()
	switch {
	case has != (sc.Paper.Decision != nil):
		errs = append(errs, fmt.Errorf("decision %q in the data set, %v in the ground truth", got, coordQuoteOrNull(sc.Paper.Decision)))
	case has && got != *sc.Paper.Decision:
		errs = append(errs, fmt.Errorf("decision %q in the data set, %q in the ground truth", got, *sc.Paper.Decision))
	}
	if p.Scale != sc.Paper.RecommendationScale {
		errs = append(errs, fmt.Errorf("recommendation scale %g–%g for the venue, %g–%g in the ground truth",
			p.Scale.Min, p.Scale.Max, sc.Paper.RecommendationScale.Min, sc.Paper.RecommendationScale.Max))
	}
	// The file rounds to 4 decimals.
	if math.Abs(p.MeanRecommendation-sc.Paper.MeanRecommendation) > 1e-3 {
		errs = append(errs, fmt.Errorf("mean recommendation %.4f from the data set, %g in the ground truth",
			p.MeanRecommendation, sc.Paper.MeanRecommendation))
	}
	if sc.Paper.ScoredReviews > 0 && sc.Paper.ScoredReviews != p.ScoredReviews {
		errs = append(errs, fmt.Errorf("%d scored reviews in the data set, %d in the ground truth", p.ScoredReviews, sc.Paper.ScoredReviews))
	}
	if d, _, ok := p.ExpectedDecision(); ok && d != sc.Expected.Decision {
		errs = append(errs, fmt.Errorf("expected decision %q from the data set, %q in the ground truth", d, sc.Expected.Decision))
	}
	return errors.Join(errs...)
}

func coordNormSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func coordQuoteOrNull(p *string) string {
	if p == nil {
		return "null"
	}
	return strconv.Quote(*p)
}

// Name is the result's domain.
func (s *CoordinationScenario) Name() string { return "coordination" }

// GroundTruth returns the loaded ground truth; callers must not change it.
func (s *CoordinationScenario) GroundTruth() *GroundTruth { return s.gt }

// PeerReadDir returns the PeerRead directory the tasks were read from, or
// "" when they carry titles only or were given in memory.
func (s *CoordinationScenario) PeerReadDir() string { return s.peerReadDir }

// Tasks selects the tasks in ground truth order: those named in
// config.task_ids (all when empty), then the first num_tasks, then the
// shard (task i of the selection belongs to shard i mod num_shards). It
// also checks that the request names an entry participant, so a request
// that cannot be run is rejected before any task starts.
func (s *CoordinationScenario) Tasks(req *Request) ([]Task, error) {
	if req == nil {
		return nil, errors.New("coordination: no request")
	}
	if _, _, err := entryParticipant(req, ScenarioCoordination); err != nil {
		return nil, err
	}
	cfg := req.Config
	selected := s.tasks
	if len(cfg.TaskIDs) > 0 {
		want := map[string]bool{}
		var unknown []string
		for _, id := range cfg.TaskIDs {
			if _, ok := s.byID[id]; !ok {
				unknown = append(unknown, strconv.Quote(id))
			}
			want[id] = true
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("coordination: unknown task_ids %s; valid ids: %s",
				strings.Join(unknown, ", "), strings.Join(s.taskIDs(), ", "))
		}
		selected = nil
		for _, t := range s.tasks {
			if want[t.Scenario.ID] {
				selected = append(selected, t)
			}
		}
	}
	if cfg.NumTasks < 0 {
		return nil, fmt.Errorf("coordination: num_tasks %d is negative", cfg.NumTasks)
	}
	if cfg.NumTasks > 0 && cfg.NumTasks < len(selected) {
		selected = selected[:cfg.NumTasks]
	}
	shards := max(cfg.NumShards, 1)
	if cfg.NumShards < 0 {
		return nil, fmt.Errorf("coordination: num_shards %d is negative", cfg.NumShards)
	}
	if cfg.ShardIndex < 0 || cfg.ShardIndex >= shards {
		return nil, fmt.Errorf("coordination: shard_index %d out of range for num_shards %d (want 0..%d)",
			cfg.ShardIndex, cfg.NumShards, shards-1)
	}
	tasks := []Task{}
	for i, t := range selected {
		if i%shards != cfg.ShardIndex {
			continue
		}
		tasks = append(tasks, Task{ID: t.Scenario.ID, Title: t.Scenario.Paper.Title, Data: t})
	}
	return tasks, nil
}

func (s *CoordinationScenario) taskIDs() []string {
	ids := make([]string, len(s.tasks))
	for i, t := range s.tasks {
		ids[i] = t.Scenario.ID
	}
	return ids
}

// Run sends the task to the entry participant and scores its answer. A
// participant that fails, hangs or answers something unreadable is an
// outcome with Success false; only a task or request this scenario cannot
// run is an error.
func (s *CoordinationScenario) Run(ctx context.Context, env *TaskEnv, task Task) (*evals.Outcome, error) {
	if env == nil || env.Messenger == nil {
		return nil, errors.New("coordination: no messenger")
	}
	return s.run(ctx, env, env.Messenger, task)
}

func (s *CoordinationScenario) run(ctx context.Context, env *TaskEnv, send sender, task Task) (*evals.Outcome, error) {
	t, ok := s.byID[task.ID]
	if !ok {
		return nil, fmt.Errorf("coordination: unknown task %q; valid ids: %s", task.ID, strings.Join(s.taskIDs(), ", "))
	}
	if env == nil || env.Request == nil {
		return nil, fmt.Errorf("coordination: task %s: no request", task.ID)
	}
	role, url, err := entryParticipant(env.Request, ScenarioCoordination)
	if err != nil {
		return nil, err
	}
	text, data := s.reviewRequest(t)
	if env.Progress != nil {
		env.Progress(fmt.Sprintf("%s: asking %s to review %q", task.ID, role, t.Scenario.Paper.Title))
	}
	reply, sendErr := send.Send(ctx, SendRequest{URL: url, Text: text, Data: data})
	return scoreCoordReply(t, role, reply, sendErr), nil
}

// The answer form the request states. Recommendations are asked on 1–5
// whatever the venue's scale, and compared on 0..1.
const (
	coordAnswerForm = `{"decision": "accept" | "reject", "recommendation": <integer 1-5, 5 = strong accept>, ` +
		`"scores": {"originality": <1-5>, "clarity": <1-5>, "soundness": <1-5>, "substance": <1-5>}, ` +
		`"rationale": "<a few sentences>"}`
	coordRecMin, coordRecMax = 1.0, 5.0
	// The task score weighs the decision and the distance between the
	// answer's and the reviewers' normalised recommendations.
	coordDecisionWeight       = 0.7
	coordRecommendationWeight = 0.3
	// coordRequestKind names the data part's form.
	coordRequestKind = "coordbench.review_request/v1"
)

// coordAnswerSchema is the answer form as a JSON Schema, in the data part,
// for participants that want structured output.
var coordAnswerSchema = map[string]any{
	"type":     "object",
	"required": []any{"decision", "recommendation"},
	"properties": map[string]any{
		"decision":       map[string]any{"type": "string", "enum": []any{DecisionAccept, DecisionReject}},
		"recommendation": map[string]any{"type": "integer", "minimum": 1, "maximum": 5},
		"scores": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"originality": map[string]any{"type": "integer", "minimum": 1, "maximum": 5},
				"clarity":     map[string]any{"type": "integer", "minimum": 1, "maximum": 5},
				"soundness":   map[string]any{"type": "integer", "minimum": 1, "maximum": 5},
				"substance":   map[string]any{"type": "integer", "minimum": 1, "maximum": 5},
			},
		},
		"rationale": map[string]any{"type": "string"},
	},
}

// reviewRequest builds the message: the text a language model reads and
// the same request as a data part. Only the reviews' titles and comments
// are sent; their scores, meta reviews and ICLR's committee note would give
// the answer away.
func (s *CoordinationScenario) reviewRequest(t *CoordinationTask) (string, map[string]any) {
	var b strings.Builder
	b.WriteString("Review this paper submitted to a machine learning / NLP conference. ")
	b.WriteString("Decide whether it should be accepted or rejected, and score it.\n\n")
	b.WriteString("Answer with one JSON object in exactly this form:\n")
	b.WriteString(coordAnswerForm)
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "Task: %s\nTitle: %s\n", t.Scenario.ID, t.Scenario.Paper.Title)
	data := map[string]any{
		"kind":          coordRequestKind,
		"task_id":       t.Scenario.ID,
		"title":         t.Scenario.Paper.Title,
		"answer_form":   coordAnswerForm,
		"answer_schema": coordAnswerSchema,
	}
	if t.Paper == nil {
		b.WriteString("\nOnly the title is available: the abstract and the reviews are not (the PeerRead data set is not installed on the assessor). Judge from the title alone.\n")
		data["title_only"] = true
		return b.String(), data
	}
	abstract := clipText(t.Paper.Abstract, s.opts.MaxAbstractChars)
	fmt.Fprintf(&b, "\nAbstract:\n%s\n", abstract)
	data["abstract"] = abstract
	reviews := []any{}
	for _, r := range t.Paper.Reviews {
		if r.Meta || r.CommitteeDecision || strings.TrimSpace(r.Comments) == "" {
			continue
		}
		if len(reviews) == s.opts.MaxReviews {
			break
		}
		rv := map[string]any{"comments": clipText(r.Comments, s.opts.MaxReviewChars)}
		// OpenReview fills an untitled review with "No Title".
		if r.Title != "" && !strings.EqualFold(r.Title, "No Title") {
			rv["title"] = r.Title
		}
		reviews = append(reviews, rv)
	}
	data["reviews"] = reviews
	if len(reviews) > 0 {
		fmt.Fprintf(&b, "\nThe reviewers' comments (%d reviews; their scores are withheld):\n", len(reviews))
		for i, r := range reviews {
			rv := r.(map[string]any)
			fmt.Fprintf(&b, "\n--- Review %d", i+1)
			if title, ok := rv["title"].(string); ok {
				fmt.Fprintf(&b, ": %s", title)
			}
			fmt.Fprintf(&b, "\n%s\n", rv["comments"])
		}
	}
	return b.String(), data
}

// coordAnswer is a participant's answer as read.
type coordAnswer struct {
	Decision       string
	Recommendation *float64
	Scores         map[string]float64
	Rationale      string
	// Source says where the decision was found: "data" (a data part),
	// "json" (a JSON object in the text), "fenced_json" (one in a ``` block)
	// or "word" (a bare accept/reject).
	Source string
	// Problems are parts of the answer that were ignored, and why.
	Problems []string
}

// States of a participant's task that mean it gave no answer.
var coordFailedStates = []string{"failed", "rejected", "canceled", "cancelled", "auth-required", "input-required", "unknown"}

// coordState normalises an A2A task state: 1.0 writes TASK_STATE_FAILED,
// 0.3 writes failed.
func coordState(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "task_state_")
	return strings.ReplaceAll(s, "_", "-")
}

// coordSummaryChars bounds the excerpt of an unreadable answer in the
// summary.
const coordSummaryChars = 200

// scoreCoordReply turns the participant's reply into the task's outcome.
func scoreCoordReply(t *CoordinationTask, role string, reply *Reply, sendErr error) *evals.Outcome {
	sc := &t.Scenario
	expected := sc.Expected.Decision
	scale := sc.Paper.RecommendationScale
	decisionSource := "venue"
	if sc.Paper.Decision == nil {
		decisionSource = fmt.Sprintf("derived: normalised mean recommendation >= %g", DerivedAcceptThreshold)
	}
	details := map[string]any{
		"paper":                           sc.Paper.Ref(),
		"title":                           sc.Paper.Title,
		"expected_decision":               expected,
		"expected_decision_source":        decisionSource,
		"paper_mean_recommendation":       sc.Paper.MeanRecommendation,
		"paper_recommendation_scale":      fmt.Sprintf("%g-%g", scale.Min, scale.Max),
		"paper_normalized_recommendation": sc.Paper.NormalizedRecommendation,
		"entry_role":                      role,
		"title_only":                      t.Paper == nil,
	}
	want := fmt.Sprintf("expected %s (reviewers' mean %.2f of %g)", expected, sc.Paper.MeanRecommendation, scale.Max)
	fail := func(summary string, err error) *evals.Outcome {
		details["error"] = err.Error()
		return &evals.Outcome{Success: false, Score: 0, Summary: want + "; " + summary, Details: details}
	}
	if sendErr != nil {
		// The Messenger returns the reply as well when the participant's
		// task ended failed, rejected or canceled: it answered, but not
		// with a review.
		if reply != nil {
			if reply.State != "" {
				details["state"] = reply.State
			}
			return fail(fmt.Sprintf("%s's task did not complete: %v", role, sendErr), sendErr)
		}
		return fail(fmt.Sprintf("%s did not answer: %v", role, sendErr), sendErr)
	}
	if reply == nil {
		err := errors.New("no reply")
		return fail(fmt.Sprintf("%s did not answer: %v", role, err), err)
	}
	if reply.AgentName != "" {
		details["agent"] = reply.AgentName
	}
	if reply.State != "" {
		details["state"] = reply.State
	}
	if reply.TaskID != "" {
		details["a2a_task_id"] = reply.TaskID
	}
	if reply.ContextID != "" {
		details["context_id"] = reply.ContextID
	}
	details["extension_steps"] = reply.ExtensionSteps
	if st := coordState(reply.State); slices.Contains(coordFailedStates, st) {
		err := fmt.Errorf("the participant's task ended in state %s", st)
		return fail(fmt.Sprintf("%s ended in state %s: %s", role, st, coordExcerpt(reply)), err)
	}
	ans, err := parseCoordAnswer(reply)
	if err != nil {
		return fail(fmt.Sprintf("could not read a decision from %s's answer (%v): %s", role, err, coordExcerpt(reply)), err)
	}

	correct := ans.Decision == expected
	score := 0.0
	if correct {
		score = coordDecisionWeight
	}
	details["decision"] = ans.Decision
	details["answer_source"] = ans.Source
	recText := "no usable recommendation"
	if ans.Recommendation != nil {
		rec := *ans.Recommendation
		norm := RecommendationScale{Min: coordRecMin, Max: coordRecMax}.Normalize(rec)
		delta := math.Abs(norm - sc.Paper.NormalizedRecommendation)
		score += coordRecommendationWeight * (1 - delta)
		details["recommendation"] = rec
		details["recommendation_normalized"] = coordRound(norm, 4)
		details["recommendation_delta"] = coordRound(delta, 4)
		recText = fmt.Sprintf("recommendation %g of 5", rec)
	}
	if len(ans.Scores) > 0 {
		details["scores"] = ans.Scores
	}
	if ans.Rationale != "" {
		details["rationale"] = clipText(ans.Rationale, 1000)
	}
	if len(ans.Problems) > 0 {
		details["answer_problems"] = ans.Problems
	}
	score = coordRound(score, 4)
	return &evals.Outcome{
		Success: correct,
		Score:   score,
		Summary: fmt.Sprintf("%s; %s answered %s, %s (score %.2f)", want, role, ans.Decision, recText, score),
		Details: details,
	}
}

func coordRound(x float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(x*p) / p
}

// coordExcerpt shows what came back, bounded, for a summary.
func coordExcerpt(reply *Reply) string {
	text := strings.TrimSpace(reply.Text)
	if text == "" && len(reply.Data) > 0 {
		if b, err := json.Marshal(reply.Data); err == nil {
			text = string(b)
		}
	}
	if text == "" {
		return "(an empty answer)"
	}
	return strconv.Quote(clipText(strings.Join(strings.Fields(text), " "), coordSummaryChars))
}

// Bounds of the search for a JSON answer in free text.
const (
	coordMaxScanBytes  = 256 << 10
	coordMaxObjectTrys = 256
)

var (
	coordFenceRE = regexp.MustCompile("(?s)```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n?(.*?)```")
	coordWordRE  = regexp.MustCompile(`(?i)\b(accept(?:ed|ance)?|reject(?:ed|ion)?)\b`)
)

// parseCoordAnswer reads the decision from a reply: a data part holding a
// decision, else the first JSON object holding one in the text (fenced
// blocks first), else a bare accept or reject in the text.
func parseCoordAnswer(reply *Reply) (coordAnswer, error) {
	for _, d := range reply.Data {
		if obj := coordFindDecisionObject(d, 0); obj != nil {
			return coordAnswerFrom(obj, "data")
		}
	}
	text := reply.Text
	if len(text) > coordMaxScanBytes {
		text = text[:coordMaxScanBytes]
	}
	for _, m := range coordFenceRE.FindAllStringSubmatch(text, -1) {
		lang := strings.ToLower(m[1])
		if lang != "" && lang != "json" && lang != "jsonc" {
			continue
		}
		if obj := coordFirstObject(m[2]); obj != nil {
			return coordAnswerFrom(obj, "fenced_json")
		}
	}
	if obj := coordFirstObject(text); obj != nil {
		return coordAnswerFrom(obj, "json")
	}
	return coordAnswerFromWords(text)
}

// coordFirstObject returns the first JSON object in text that holds a
// decision (at its top level or one level down, for answers wrapped as
// {"review": {...}}).
func coordFirstObject(text string) map[string]any {
	tries := 0
	for i := 0; i < len(text) && tries < coordMaxObjectTrys; i++ {
		if text[i] != '{' {
			continue
		}
		tries++
		var obj map[string]any
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		if dec.Decode(&obj) != nil {
			continue
		}
		if found := coordFindDecisionObject(obj, 0); found != nil {
			return found
		}
		// Skip past the object: a decision nested deeper is not an answer.
		i += int(dec.InputOffset()) - 1
	}
	return nil
}

// coordFindDecisionObject returns obj when it has a "decision" key, or the
// first of its object values that does.
func coordFindDecisionObject(obj map[string]any, depth int) map[string]any {
	if obj == nil {
		return nil
	}
	for k := range obj {
		if strings.EqualFold(k, "decision") {
			return obj
		}
	}
	if depth > 0 {
		return nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic when several values qualify
	for _, k := range keys {
		if inner, ok := obj[k].(map[string]any); ok {
			if found := coordFindDecisionObject(inner, depth+1); found != nil {
				return found
			}
		}
	}
	return nil
}

// coordAnswerFrom reads an answer object; keys are matched
// case-insensitively.
func coordAnswerFrom(obj map[string]any, source string) (coordAnswer, error) {
	get := func(key string) (any, bool) {
		for k, v := range obj {
			if strings.EqualFold(k, key) {
				return v, true
			}
		}
		return nil, false
	}
	ans := coordAnswer{Source: source}
	dv, _ := get("decision")
	ds, ok := dv.(string)
	if !ok {
		return ans, fmt.Errorf("decision is %s, not a string", coordJSONType(dv))
	}
	d, err := coordDecisionWord(ds)
	if err != nil {
		return ans, fmt.Errorf("decision %q: %w", clipText(ds, 60), err)
	}
	ans.Decision = d
	if rv, present := get("recommendation"); present && rv != nil {
		x, ok := coordNumber(rv)
		switch {
		case !ok:
			ans.Problems = append(ans.Problems, fmt.Sprintf("recommendation %s is not a number; ignored", clipText(fmt.Sprint(rv), 40)))
		case x < coordRecMin || x > coordRecMax:
			ans.Problems = append(ans.Problems, fmt.Sprintf("recommendation %g outside 1-5; ignored", x))
		default:
			ans.Recommendation = &x
		}
	}
	if sv, present := get("scores"); present {
		m, ok := sv.(map[string]any)
		if !ok && sv != nil {
			ans.Problems = append(ans.Problems, fmt.Sprintf("scores is %s, not an object; ignored", coordJSONType(sv)))
		}
		for k, v := range m {
			if x, ok := coordNumber(v); ok {
				if ans.Scores == nil {
					ans.Scores = map[string]float64{}
				}
				ans.Scores[strings.ToLower(k)] = x
			} else {
				ans.Problems = append(ans.Problems, fmt.Sprintf("score %s is not a number; ignored", clipText(k, 40)))
			}
		}
		slices.Sort(ans.Problems)
	}
	if r, ok := get("rationale"); ok {
		if rs, ok := r.(string); ok {
			ans.Rationale = strings.TrimSpace(rs)
		}
	}
	return ans, nil
}

// coordDecisionWord maps a decision string to accept or reject: it must
// name exactly one of them ("Accept", "weak reject", "rejected" all do).
func coordDecisionWord(s string) (string, error) {
	kinds := map[string]bool{}
	for _, w := range coordWordRE.FindAllString(s, -1) {
		if strings.HasPrefix(strings.ToLower(w), "accept") {
			kinds[DecisionAccept] = true
		} else {
			kinds[DecisionReject] = true
		}
	}
	switch {
	case len(kinds) == 0:
		return "", errors.New("names neither accept nor reject")
	case len(kinds) > 1:
		return "", errors.New("names both accept and reject")
	case kinds[DecisionAccept]:
		return DecisionAccept, nil
	default:
		return DecisionReject, nil
	}
}

// coordAnswerFromWords is the last resort: a text that names exactly one of
// accept and reject.
func coordAnswerFromWords(text string) (coordAnswer, error) {
	if strings.TrimSpace(text) == "" {
		return coordAnswer{}, errors.New("no decision: the answer is empty")
	}
	d, err := coordDecisionWord(text)
	if err != nil {
		return coordAnswer{}, fmt.Errorf("no JSON answer, and the text %w", err)
	}
	return coordAnswer{Decision: d, Source: "word"}, nil
}

// coordNumber reads a JSON number, or a string holding one ("4").
func coordNumber(v any) (float64, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string:
		s = strings.TrimSpace(x)
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func coordJSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
