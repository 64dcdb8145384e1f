package coordination

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/scenario"
)

// Bounds of what a review request carries, so a long paper cannot make an
// unbounded message.
const (
	DefaultMaxAbstractChars = 4000
	DefaultMaxReviewChars   = 2000
	DefaultMaxReviews       = 8
)

// Options configure New. The zero value
// uses the built-in ground truth (groundtruth.Default) and finds the data
// set as DefaultPeerReadDir does.
type Options struct {
	// GroundTruth is the ground truth whose entries are the tasks (default
	// groundtruth.Default).
	GroundTruth *groundtruth.GroundTruth
	// PeerReadDir is the PeerRead directory. Empty means
	// DefaultPeerReadDir, and when none is found the tasks carry the titles
	// only; a directory named here must exist.
	PeerReadDir string
	// TitlesOnly sends the titles only even when the data set is present.
	TitlesOnly bool
	// Papers, when set, are the papers of the ground truth's entries, by
	// entry id, given by the caller instead of read from PeerRead (the
	// demo's built-in papers). They are checked against the ground truth
	// as PeerRead's are, and PeerReadDir is not used.
	Papers map[string]*Paper
	// MaxAbstractChars, MaxReviewChars and MaxReviews bound the request:
	// the abstract and each review's comments are cut at that many
	// characters, and at most MaxReviews reviews are sent (defaults 4000,
	// 2000, 8).
	MaxAbstractChars int
	MaxReviewChars   int
	MaxReviews       int
	// Logger receives the scenario's warnings (default: discarded).
	Logger *slog.Logger
}

// Scenario is the coordination scenario. It is safe for
// concurrent use: everything is read at construction.
type Scenario struct {
	opts        Options
	gt          *groundtruth.GroundTruth
	peerReadDir string
	tasks       []*Task
	byID        map[string]*Task
}

var _ scenario.Scenario = (*Scenario)(nil)

// Task is Task.Data of a coordination task.
type Task struct {
	Scenario groundtruth.Entry `json:"scenario"`
	// Paper is the paper as read from PeerRead; nil when the tasks carry
	// titles only.
	Paper *Paper `json:"-"`
}

// New loads the ground truth and, when the data set is
// present, every paper it names, checking each against the ground truth
// (title, decision, mean recommendation), so a different version of the
// data set is found at start-up rather than as wrong scores.
func New(opts Options) (*Scenario, error) {
	if opts.MaxAbstractChars <= 0 {
		opts.MaxAbstractChars = DefaultMaxAbstractChars
	}
	if opts.MaxReviewChars <= 0 {
		opts.MaxReviewChars = DefaultMaxReviewChars
	}
	if opts.MaxReviews <= 0 {
		opts.MaxReviews = DefaultMaxReviews
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	gt := opts.GroundTruth
	if gt == nil {
		var err error
		if gt, err = groundtruth.Default(); err != nil {
			return nil, fmt.Errorf("coordination: %w", err)
		}
	} else if err := gt.Validate(); err != nil {
		return nil, fmt.Errorf("coordination: ground truth: %w", err)
	}
	s := &Scenario{opts: opts, gt: gt, byID: map[string]*Task{}}

	if !opts.TitlesOnly && opts.Papers == nil {
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
				opts.Logger.Warn("coordination: PeerRead data set not found; tasks carry paper titles only", "err", err)
			}
			s.peerReadDir = dir
		}
	}

	var errs []error
	for _, sc := range gt.Scenarios {
		t := &Task{Scenario: sc}
		if s.peerReadDir != "" || opts.Papers != nil {
			p, err := s.paper(&sc)
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
		if opts.Papers != nil {
			return nil, fmt.Errorf("coordination: ground truth does not match the papers given: %w", err)
		}
		return nil, fmt.Errorf("coordination: ground truth does not match the PeerRead data in %s: %w", s.peerReadDir, err)
	}
	return s, nil
}

// paper is the paper of entry sc: the caller's (Options.Papers), else
// PeerRead's.
func (s *Scenario) paper(sc *groundtruth.Entry) (*Paper, error) {
	if s.opts.Papers == nil {
		return LoadPaper(s.peerReadDir, sc.Paper.Venue, sc.Paper.Split, sc.Paper.ID)
	}
	p, ok := s.opts.Papers[sc.ID]
	if !ok || p == nil {
		return nil, fmt.Errorf("no paper given for entry %s", sc.ID)
	}
	return p, nil
}

// checkPaperFacts compares what the ground truth says of a paper with what
// the loader reads from the data set.
func checkPaperFacts(sc *groundtruth.Entry, p *Paper) error {
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
func (s *Scenario) Name() string { return "coordination" }

// GroundTruth returns the loaded ground truth; callers must not change it.
func (s *Scenario) GroundTruth() *groundtruth.GroundTruth { return s.gt }

// PeerReadDir returns the PeerRead directory the tasks were read from, or
// "" when they carry titles only.
func (s *Scenario) PeerReadDir() string { return s.peerReadDir }

// Tasks selects the tasks in ground truth order: those named in
// config.task_ids (all when empty), then the first num_tasks, then the
// shard (task i of the selection belongs to shard i mod num_shards). It
// also checks that the request names an entry participant, so a request
// that cannot be run is rejected before any task starts.
func (s *Scenario) Tasks(req *scenario.Request) ([]scenario.Task, error) {
	if req == nil {
		return nil, errors.New("coordination: no request")
	}
	if _, err := scenario.ParseDelivery(req); err != nil {
		return nil, err
	}
	if _, _, err := scenario.EntryParticipant(req, scenario.Coordination); err != nil {
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
	tasks := []scenario.Task{}
	for i, t := range selected {
		if i%shards != cfg.ShardIndex {
			continue
		}
		tasks = append(tasks, scenario.Task{ID: t.Scenario.ID, Title: t.Scenario.Paper.Title, Data: t})
	}
	return tasks, nil
}

func (s *Scenario) taskIDs() []string {
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
func (s *Scenario) Run(ctx context.Context, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	if env == nil || env.Messenger == nil {
		return nil, errors.New("coordination: no messenger")
	}
	return s.run(ctx, env, env.Messenger, task)
}

func (s *Scenario) run(ctx context.Context, env *scenario.TaskEnv, send scenario.Sender, task scenario.Task) (*evals.Outcome, error) {
	t, ok := s.byID[task.ID]
	if !ok {
		return nil, fmt.Errorf("coordination: unknown task %q; valid ids: %s", task.ID, strings.Join(s.taskIDs(), ", "))
	}
	if env == nil || env.Request == nil {
		return nil, fmt.Errorf("coordination: task %s: no request", task.ID)
	}
	role, url, err := scenario.EntryParticipant(env.Request, scenario.Coordination)
	if err != nil {
		return nil, err
	}
	delivery, err := scenario.ParseDelivery(env.Request)
	if err != nil {
		return nil, err
	}
	text, data := s.ReviewRequest(t)
	var tools *toolTask
	var extra []map[string]any
	if delivery.MCP {
		tt, ep, closeTools, err := openTools(ctx, env, data)
		if err != nil {
			return nil, err
		}
		defer closeTools()
		tools, extra = tt, []map[string]any{ep}
		text += toolsText(delivery)
	}
	if env.Progress != nil {
		env.Progress(fmt.Sprintf("%s: asking %s to review %q", task.ID, role, t.Scenario.Paper.Title))
	}
	if tools != nil {
		tools.setCall(true)
	}
	reply, sendErr := send.Send(ctx, a2acall.SendRequest{URL: url, Text: text, Data: data, ExtraData: extra})
	var submitted *coordAnswer
	if tools != nil {
		tools.setCall(false)
		submitted = tools.submitted()
	}
	return scoreCoordReply(t, role, reply, sendErr, answerRule{submitted: submitted, text: delivery.Text}), nil
}

// toolsText tells the participant of the tools.
func toolsText(d scenario.Delivery) string {
	t := fmt.Sprintf("\nTools: the MCP server in this message's data part (send its token as Authorization: Bearer <token>) offers %s and %s; "+
		"submit your review with %s before you reply.", ToolReadPaper, ToolSubmitReview, ToolSubmitReview)
	if d.Text {
		t += " A review in your reply counts when none was submitted."
	}
	return t + "\n"
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
		"decision":       map[string]any{"type": "string", "enum": []any{groundtruth.DecisionAccept, groundtruth.DecisionReject}},
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

// ReviewRequest builds the message: the text a language model reads and
// the same request as a data part. Only the reviews' titles and comments
// are sent; their scores, meta reviews and ICLR's committee note would give
// the answer away.
func (s *Scenario) ReviewRequest(t *Task) (string, map[string]any) {
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
	abstract := textutil.Clip(t.Paper.Abstract, s.opts.MaxAbstractChars)
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
		rv := map[string]any{"comments": textutil.Clip(r.Comments, s.opts.MaxReviewChars)}
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
