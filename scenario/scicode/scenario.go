package scicode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
)

// Config keys the scenario reads from Config.Raw, and their defaults.
const (
	keyProblemIDs     = "problem_ids"
	keySplit          = "split"
	keyMaxNumSteps    = "max_num_steps"
	keyWithBackground = "with_background"
	keyStepTimeout    = "step_timeout_seconds"

	DefaultMaxTurns = 3
	// DefaultRecordCap bounds the values one run records. It is the
	// judge's own bound on what it reads (MAX_BYTES in
	// py/judge_records.py), so that a run past it stops in the sandbox as
	// over its records limit, not later as records the judge refuses.
	DefaultRecordCap = 64 << 20
	maxTurns         = 20
	maxStepTimeout   = 1800 * time.Second
	// A problem is many steps, each up to max_num_steps calls and test
	// runs: without a task_timeout_seconds or deadline_seconds in the
	// request, a SciCode assessment gets these (the shared defaults suit a
	// single call).
	DefaultTaskTimeout = 3600 * time.Second
	DefaultDeadline    = 4 * 3600 * time.Second
	// checkTimeout bounds the runner's probe at construction (a
	// few interpreter starts, well under a second on a healthy machine).
	checkTimeout = 2 * time.Minute
	// feedbackChars bounds the test output sent back to the solver.
	feedbackChars = 3000
)

// Options configure New. The zero value finds the data as DefaultDir does
// and runs with the sandbox's defaults.
type Options struct {
	// DataDir is the SciCode data directory (default DefaultDir).
	DataDir string
	// Sandbox configures the runner of the solvers' code. Its Lib and
	// Modules are the scenario's own.
	Sandbox sandbox.Options
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

// Scenario is the SciCode scenario. It is safe for concurrent use: the data
// is read and the runner probed at construction.
type Scenario struct {
	opts    Options
	dir     string
	splits  map[string]*Split
	missing map[string]string // split -> why it is not available
	runner  *sandbox.Runner
	sandbox *sandbox.Info
	judge   *judge
	log     *slog.Logger

	plansMu sync.Mutex
	plans   map[string]*stepPlan // split/step → the test cases as the sandbox runs them

	// references holds, per split/step, the reference code's run on the
	// step's test cases (its records), made once when a solver first
	// passes a step with property cases (judge_null.py).
	refsMu     sync.Mutex
	references map[string]*referenceRun
}

var _ scenario.Scenario = (*Scenario)(nil)

// New loads the splits found in the data directory and
// checks that the runner can run (an interpreter with numpy, scipy and
// h5py), so that a green agent without either says at start-up why the
// scenario is not available. A split whose files are missing is reported
// when a request asks for it; at least one split must load.
func New(ctx context.Context, opts Options) (*Scenario, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Sandbox.Logger == nil {
		opts.Sandbox.Logger = opts.Logger
	}
	if opts.Sandbox.RecordCap <= 0 {
		// The values of one step: step 6.1's are 21 MB.
		opts.Sandbox.RecordCap = DefaultRecordCap
	}
	opts.Sandbox.Lib = sandboxLib()
	opts.Sandbox.Modules = []string{"numpy", "scipy", "h5py"}
	dir := opts.DataDir
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return nil, err
		}
	}
	s := &Scenario{opts: opts, dir: dir, splits: map[string]*Split{}, missing: map[string]string{}, log: opts.Logger,
		plans: map[string]*stepPlan{}, references: map[string]*referenceRun{}}
	// The data (targets, reference code) must never be within the
	// solver's reach.
	if abs, err := filepath.Abs(dir); err == nil {
		opts.Sandbox.Hidden = append(opts.Sandbox.Hidden, abs)
	}
	var errs []error
	for _, name := range []string{SplitValidation, SplitTest} {
		sp, err := LoadSplit(dir, name)
		if err != nil {
			s.missing[name] = err.Error()
			errs = append(errs, err)
			continue
		}
		s.splits[name] = sp
	}
	if len(s.splits) == 0 {
		return nil, fmt.Errorf("scicode: no split can be loaded: %w", errors.Join(errs...))
	}
	for name, why := range s.missing {
		s.log.Info("scicode: split not available", "split", name, "why", why)
	}
	runner, err := sandbox.New(opts.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("scicode: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	info, err := runner.Check(cctx)
	if errors.Is(err, sandbox.ErrNoPython) {
		return nil, fmt.Errorf("scicode: %w; on Debian: apt-get install python3-numpy python3-scipy python3-h5py python3-sympy", err)
	}
	if err != nil {
		return nil, fmt.Errorf("scicode: %w", err)
	}
	s.runner, s.sandbox = runner, info
	s.judge = newJudge(runner.Python, s.log)
	// The judge starts now: its imports are done before the first test,
	// and a green agent without h5py says so at start-up.
	if err := s.judge.call(cctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
		return nil, fmt.Errorf("scicode: the judge does not start: %w", err)
	}
	if !TamperProof(info) {
		s.log.Warn("scicode: "+notTamperProof, "filesystem", info.Filesystem, "notes", info.Notes)
	}
	return s, nil
}

// Close stops the judge process; a later Test starts it again.
func (s *Scenario) Close() error {
	if s.judge != nil {
		s.judge.stop()
	}
	return nil
}

// Name is the result's domain.
func (s *Scenario) Name() string { return scenario.SciCode }

// Sandbox says which protections the runner has in force here.
func (s *Scenario) Sandbox() *sandbox.Info { return s.sandbox }

// Split returns a loaded split ("validation", "test").
func (s *Scenario) Split(name string) (*Split, bool) {
	sp, ok := s.splits[name]
	return sp, ok
}

// Config is a request's SciCode settings.
type Config struct {
	Split          string
	ProblemIDs     []string
	MaxTurns       int
	WithBackground bool
	StepTimeout    time.Duration
}

// TaskData is Task.Data of a SciCode task.
type TaskData struct {
	Problem *Problem
	Split   *Split
	Config  Config
}

// parseConfig reads the scenario's keys from Config.Raw. A key of
// the wrong type or value is a request error that names it.
func parseConfig(req *scenario.Request) (Config, error) {
	cfg := Config{MaxTurns: DefaultMaxTurns}
	raw := req.Config.Raw
	var split string
	if v, ok := raw[keySplit]; ok {
		if err := json.Unmarshal(v, &split); err != nil {
			return cfg, scenario.BadRequest("config.%s must be a string (%q or %q)", keySplit, SplitValidation, SplitTest)
		}
	}
	name, err := NormalizeSplit(split)
	if err != nil {
		return cfg, scenario.BadRequest("config.%s: %v", keySplit, err)
	}
	cfg.Split = name
	if v, ok := raw[keyProblemIDs]; ok {
		ids, err := parseProblemIDs(v)
		if err != nil {
			return cfg, scenario.BadRequest("config.%s: %v", keyProblemIDs, err)
		}
		cfg.ProblemIDs = ids
	} else {
		cfg.ProblemIDs = slices.Clone(req.Config.TaskIDs)
	}
	if v, ok := raw[keyMaxNumSteps]; ok {
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(string(v)), `"`))
		if err != nil || n < 1 || n > maxTurns {
			return cfg, scenario.BadRequest("config.%s must be a whole number from 1 to %d, not %s", keyMaxNumSteps, maxTurns, v)
		}
		cfg.MaxTurns = n
	}
	if v, ok := raw[keyWithBackground]; ok {
		if err := json.Unmarshal(v, &cfg.WithBackground); err != nil {
			return cfg, scenario.BadRequest("config.%s must be true or false, not %s", keyWithBackground, v)
		}
	}
	if v, ok := raw[keyStepTimeout]; ok {
		var secs float64
		// Compared in seconds: 1e300 s as a time.Duration would overflow.
		if err := json.Unmarshal(v, &secs); err != nil || !(secs > 0 && secs <= maxStepTimeout.Seconds()) {
			return cfg, scenario.BadRequest("config.%s must be a number of seconds above 0 and at most %d, not %s", keyStepTimeout, int(maxStepTimeout.Seconds()), v)
		}
		cfg.StepTimeout = time.Duration(secs * float64(time.Second))
	}
	return cfg, nil
}

// parseProblemIDs accepts a list of strings or numbers, or one string or
// number ("1, 3 13").
func parseProblemIDs(v json.RawMessage) ([]string, error) {
	var list []any
	if err := json.Unmarshal(v, &list); err != nil {
		var one any
		if err := json.Unmarshal(v, &one); err != nil {
			return nil, errors.New("want a list of problem ids")
		}
		list = []any{one}
	}
	var ids []string
	for _, x := range list {
		var s string
		switch t := x.(type) {
		case string:
			s = t
		case float64:
			s = strconv.FormatFloat(t, 'f', -1, 64)
		default:
			return nil, fmt.Errorf("%v is not a problem id", x)
		}
		for _, id := range strings.FieldsFunc(s, isIDSeparator) {
			if id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// Tasks selects the problems of the requested split: those in problem_ids
// (or task_ids; all when neither is given), in file order, then the first
// num_tasks, then the shard. It also checks the participant and the
// scenario's keys, and gives the request SciCode's task timeout and
// deadline when it sets none, so that a request that cannot be run is
// rejected before any task starts.
func (s *Scenario) Tasks(req *scenario.Request) ([]scenario.Task, error) {
	if req == nil {
		return nil, errors.New("scicode: no request")
	}
	if _, _, err := scenario.EntryParticipant(req, scenario.SciCode); err != nil {
		return nil, err
	}
	cfg, err := parseConfig(req)
	if err != nil {
		return nil, err
	}
	if _, err := scenario.ParseDelivery(req); err != nil {
		return nil, err
	}
	split, ok := s.splits[cfg.Split]
	if !ok {
		return nil, scenario.BadRequest("scicode: the %s split is not available here: %s", cfg.Split, s.missing[cfg.Split])
	}
	selected := split.Problems
	if len(cfg.ProblemIDs) > 0 {
		var unknown []string
		want := map[string]bool{}
		for _, id := range cfg.ProblemIDs {
			if _, ok := split.Problem(id); !ok {
				unknown = append(unknown, strconv.Quote(id))
			}
			want[id] = true
		}
		if len(unknown) > 0 {
			return nil, scenario.BadRequest("scicode: problem ids %s are not in the %s split; its ids: %s",
				strings.Join(unknown, ", "), split.Name, strings.Join(split.IDs(), ", "))
		}
		selected = nil
		for _, p := range split.Problems {
			if want[p.ID] {
				selected = append(selected, p)
			}
		}
	}
	c := req.Config
	if c.NumTasks > 0 && c.NumTasks < len(selected) {
		selected = selected[:c.NumTasks]
	}
	shards := max(c.NumShards, 1)
	if c.ShardIndex < 0 || c.ShardIndex >= shards {
		return nil, scenario.BadRequest("scicode: shard_index %d out of range for num_shards %d", c.ShardIndex, c.NumShards)
	}
	if req.Config.TaskTimeoutSeconds == 0 {
		req.Config.TaskTimeoutSeconds = DefaultTaskTimeout.Seconds()
	}
	if req.Config.DeadlineSeconds == 0 {
		req.Config.DeadlineSeconds = DefaultDeadline.Seconds()
	}
	tasks := []scenario.Task{}
	for i, p := range selected {
		if i%shards != c.ShardIndex {
			continue
		}
		tasks = append(tasks, scenario.Task{ID: p.ID, Title: p.Name, Data: &TaskData{Problem: p, Split: split, Config: cfg}})
	}
	return tasks, nil
}

// Run walks the participant through the problem's sub-steps. A participant
// that fails, hangs or answers without code costs steps, not the task;
// the task's end (its timeout) ends the walk and the steps not reached are
// recorded as not run. Only a task this scenario cannot run is an error.
func (s *Scenario) Run(ctx context.Context, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	if env == nil || env.Messenger == nil {
		return nil, errors.New("scicode: no messenger")
	}
	return s.run(ctx, env, env.Messenger, task)
}

func (s *Scenario) run(ctx context.Context, env *scenario.TaskEnv, send scenario.Sender, task scenario.Task) (*evals.Outcome, error) {
	t, ok := task.Data.(*TaskData)
	if !ok || t == nil || t.Problem == nil {
		return nil, fmt.Errorf("scicode: task %q carries no problem", task.ID)
	}
	if env.Request == nil {
		return nil, fmt.Errorf("scicode: task %s: no request", task.ID)
	}
	role, url, err := scenario.EntryParticipant(env.Request, scenario.SciCode)
	if err != nil {
		return nil, err
	}
	delivery, err := scenario.ParseDelivery(env.Request)
	if err != nil {
		return nil, err
	}
	w := &walker{s: s, env: env, send: send, t: t, role: role, url: url,
		timeout: s.runner.Timeout(), callTimeout: env.Request.Config.CallTimeout(), delivery: delivery, taskCtx: ctx}
	if t.Config.StepTimeout > 0 {
		w.timeout = t.Config.StepTimeout
	}
	closeTools, err := w.openTools()
	if err != nil {
		return nil, err
	}
	defer closeTools()
	w.walk(ctx)
	return w.outcome(), nil
}

// isIDSeparator separates problem ids in one string: "1, 3 13".
func isIDSeparator(r rune) bool {
	return r == ',' || r == ';' || unicode.IsSpace(r)
}
