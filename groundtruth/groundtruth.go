// Package groundtruth is the coordination benchmark's ground truth: the
// schema of ground_truth.json (documented in data/README.md), its loading and
// validation, and the default file, embedded. Each entry names a PeerRead
// paper and the facts its review is scored against, the purple topology the
// task is meant to run on, and what the green agent must recover from the
// spans (label, findings, graph metrics).
package groundtruth

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/evals"
)

// Schema versions groundtruth/ground_truth.json.
const Schema = "coordbench.ground_truth/v1"

// GroundTruth is groundtruth/ground_truth.json (its schema is documented in
// data/README.md). Keys this version does not know are ignored, so later
// versions of the file can add them.
type GroundTruth struct {
	Schema    string  `json:"schema"`
	Scenarios []Entry `json:"scenarios"`
}

// Entry is one task of the coordination scenario.
type Entry struct {
	ID       string      `json:"id"`
	Paper    Paper       `json:"paper"`
	Topology Topology    `json:"topology"`
	Expected Expectation `json:"expected"`
}

// Paper names a PeerRead paper and the facts the task is scored
// against.
type Paper struct {
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
func (p Paper) Ref() string { return p.Venue + "/" + p.Split + "/" + p.ID }

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
	// Label and Findings are the label and finding kinds the rules of
	// docs/evaluators.md give the topology's graph, as the label oracle
	// (scripts/label_oracle.py) computes them; the graph evaluator must
	// give the same for the task's trace.
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
	graphLabels      = evals.Labels
	graphFindings    = []string{evals.FindingIsolated, evals.FindingBottleneck, evals.FindingOverCentralized, evals.FindingHealthySpread}
)

// maxBytes bounds a ground truth file; 20 entries are a few tens of
// kilobytes.
const maxBytes = 8 << 20

//go:embed ground_truth.json
var defaultFile []byte

// Default returns the ground truth built into the binary
// (groundtruth/ground_truth.json), so a green agent started from any
// directory has its scenarios.
func Default() (*GroundTruth, error) {
	gt, err := Parse(defaultFile)
	if err != nil {
		return nil, fmt.Errorf("ground truth: built-in: %w", err)
	}
	return gt, nil
}

// Load reads and validates a ground truth file.
func Load(path string) (*GroundTruth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ground truth: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ground truth: read %s: %w", path, err)
	}
	if len(raw) > maxBytes {
		return nil, fmt.Errorf("ground truth: %s is larger than %d bytes", path, maxBytes)
	}
	gt, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("ground truth: %s: %w", path, err)
	}
	return gt, nil
}

// Parse decodes and validates a ground truth document.
func Parse(raw []byte) (*GroundTruth, error) {
	var gt GroundTruth
	if err := json.Unmarshal(raw, &gt); err != nil {
		return nil, err
	}
	if err := gt.Validate(); err != nil {
		return nil, err
	}
	return &gt, nil
}

// Validate checks the file's internal consistency: the schema, unique ids,
// well-formed papers, an expected decision that follows from the paper, and
// topologies whose calls the spans can show. It does not need the data set;
// the scenario checks the papers against it when it is present.
func (g *GroundTruth) Validate() error {
	if g.Schema != Schema {
		return fmt.Errorf("schema %q, want %q", g.Schema, Schema)
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

func (sc *Entry) validate() error {
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

	want := decisionOf(p)
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

// decisionOf applies Paper.ExpectedDecision's rule to the facts in
// the file.
func decisionOf(p *Paper) string {
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

// RecommendationScale is the range of a venue's overall recommendation.
type RecommendationScale struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Normalize maps x from the scale onto 0..1, clamped, so recommendations of
// venues with different scales can be compared.
func (s RecommendationScale) Normalize(x float64) float64 {
	if s.Max <= s.Min {
		return 0
	}
	return math.Max(0, math.Min(1, (x-s.Min)/(s.Max-s.Min)))
}

// Contains reports whether x lies on the scale.
func (s RecommendationScale) Contains(x float64) bool { return x >= s.Min && x <= s.Max }

// Decisions a paper can get.
const (
	DecisionAccept = "accept"
	DecisionReject = "reject"
)

// DerivedAcceptThreshold is the normalised mean recommendation at or above
// which a paper of a venue without published decisions (ACL 2017, CoNLL
// 2016) is taken as accepted. 0.6 is 3.4 on a 1–5 scale: the reviewers
// leaned clearly above the midpoint.
const DerivedAcceptThreshold = 0.6

// EnvFile names a ground truth file to use instead of the built-in one.
const EnvFile = "COORDBENCH_GROUND_TRUTH"

// Resolve is the ground truth a command runs with: the file at path when it
// is not empty, else the file $COORDBENCH_GROUND_TRUTH names (read through
// getenv; nil means no environment), else the built-in one.
func Resolve(path string, getenv func(string) string) (*GroundTruth, error) {
	if path == "" && getenv != nil {
		path = getenv(EnvFile)
	}
	if path == "" {
		return Default()
	}
	return Load(path)
}
