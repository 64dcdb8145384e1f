package green

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
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/scenario"
)

// The SciCode scenario (DESIGN §5, docs/scicode.md): each task is one
// SciCode problem. The green agent walks the participant through every
// sub-step in order, in one A2A context per problem; each answer's code is
// tested in the sandboxed runner against the step's targets, and a failing
// step gets the test output back and may answer again, up to
// max_num_steps turns. Scores are SciCode's: the sub-step pass rate and
// whether the problem is solved (every sub-step passes).

// Config keys the scenario reads from Config.Raw, and their defaults.
const (
	sciKeyProblemIDs     = "problem_ids"
	sciKeySplit          = "split"
	sciKeyMaxNumSteps    = "max_num_steps"
	sciKeyWithBackground = "with_background"
	sciKeyStepTimeout    = "step_timeout_seconds"

	DefaultSciCodeMaxTurns = 3
	maxSciCodeTurns        = 20
	maxSciCodeStepTimeout  = 1800 * time.Second
	// A problem is many steps, each up to max_num_steps calls and test
	// runs: without a task_timeout_seconds or deadline_seconds in the
	// request, a SciCode assessment gets these (the shared defaults suit a
	// single call).
	DefaultSciCodeTaskTimeout = 3600 * time.Second
	DefaultSciCodeDeadline    = 4 * 3600 * time.Second
	// sciCodeCheckTimeout bounds the runner's probe at construction (a
	// few interpreter starts, well under a second on a healthy machine).
	sciCodeCheckTimeout = 2 * time.Minute
	// sciFeedbackChars bounds the test output sent back to the solver.
	sciFeedbackChars = 3000
	// Kinds of the data parts the scenario sends.
	sciStepKind     = "coordbench.scicode_step/v1"
	sciFeedbackKind = "coordbench.scicode_feedback/v1"
)

// SciCodeOptions configure NewSciCodeScenario. The zero value finds the
// data as DefaultSciCodeDir does and runs with the runner's defaults.
type SciCodeOptions struct {
	// DataDir is the SciCode data directory (default DefaultSciCodeDir).
	DataDir string
	// Runner configures the sandboxed runner.
	Runner RunnerOptions
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// SciCodeScenario is the SciCode scenario. It is safe for concurrent use:
// the data is read and the runner probed at construction.
type SciCodeScenario struct {
	opts    SciCodeOptions
	dir     string
	splits  map[string]*SciCodeSplit
	missing map[string]string // split -> why it is not available
	runner  *Runner
	sandbox *SandboxInfo
	log     *slog.Logger
}

var _ scenario.Scenario = (*SciCodeScenario)(nil)

// NewSciCodeScenario loads the splits found in the data directory and
// checks that the runner can run (an interpreter with numpy, scipy and
// h5py), so that a green agent without either says at start-up why the
// scenario is not available. A split whose files are missing is reported
// when a request asks for it; at least one split must load.
func NewSciCodeScenario(ctx context.Context, opts SciCodeOptions) (*SciCodeScenario, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Runner.Logger == nil {
		opts.Runner.Logger = opts.Logger
	}
	dir := opts.DataDir
	if dir == "" {
		var err error
		if dir, err = DefaultSciCodeDir(); err != nil {
			return nil, err
		}
	}
	s := &SciCodeScenario{opts: opts, dir: dir, splits: map[string]*SciCodeSplit{}, missing: map[string]string{}, log: opts.Logger}
	var errs []error
	for _, name := range []string{SciCodeValidation, SciCodeTest} {
		sp, err := LoadSciCodeSplit(dir, name)
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
	runner, err := NewRunner(opts.Runner)
	if err != nil {
		return nil, fmt.Errorf("scicode: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, sciCodeCheckTimeout)
	defer cancel()
	info, err := runner.Check(cctx)
	if err != nil {
		return nil, fmt.Errorf("scicode: %w", err)
	}
	s.runner, s.sandbox = runner, info
	return s, nil
}

// Name is the result's domain.
func (s *SciCodeScenario) Name() string { return scenario.SciCode }

// Sandbox says which protections the runner has in force here.
func (s *SciCodeScenario) Sandbox() *SandboxInfo { return s.sandbox }

// Split returns a loaded split ("validation", "test").
func (s *SciCodeScenario) Split(name string) (*SciCodeSplit, bool) {
	sp, ok := s.splits[name]
	return sp, ok
}

// SciCodeConfig is a request's SciCode settings.
type SciCodeConfig struct {
	Split          string
	ProblemIDs     []string
	MaxTurns       int
	WithBackground bool
	StepTimeout    time.Duration
}

// SciCodeTask is Task.Data of a SciCode task.
type SciCodeTask struct {
	Problem *SciCodeProblem
	Split   *SciCodeSplit
	Config  SciCodeConfig
}

// parseSciCodeConfig reads the scenario's keys from Config.Raw. A key of
// the wrong type or value is a request error that names it.
func parseSciCodeConfig(req *scenario.Request) (SciCodeConfig, error) {
	cfg := SciCodeConfig{MaxTurns: DefaultSciCodeMaxTurns}
	raw := req.Config.Raw
	var split string
	if v, ok := raw[sciKeySplit]; ok {
		if err := json.Unmarshal(v, &split); err != nil {
			return cfg, scenario.BadRequest("config.%s must be a string (%q or %q)", sciKeySplit, SciCodeValidation, SciCodeTest)
		}
	}
	name, err := NormalizeSciCodeSplit(split)
	if err != nil {
		return cfg, scenario.BadRequest("config.%s: %v", sciKeySplit, err)
	}
	cfg.Split = name
	if v, ok := raw[sciKeyProblemIDs]; ok {
		ids, err := parseProblemIDs(v)
		if err != nil {
			return cfg, scenario.BadRequest("config.%s: %v", sciKeyProblemIDs, err)
		}
		cfg.ProblemIDs = ids
	} else {
		cfg.ProblemIDs = slices.Clone(req.Config.TaskIDs)
	}
	if v, ok := raw[sciKeyMaxNumSteps]; ok {
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(string(v)), `"`))
		if err != nil || n < 1 || n > maxSciCodeTurns {
			return cfg, scenario.BadRequest("config.%s must be a whole number from 1 to %d, not %s", sciKeyMaxNumSteps, maxSciCodeTurns, v)
		}
		cfg.MaxTurns = n
	}
	if v, ok := raw[sciKeyWithBackground]; ok {
		if err := json.Unmarshal(v, &cfg.WithBackground); err != nil {
			return cfg, scenario.BadRequest("config.%s must be true or false, not %s", sciKeyWithBackground, v)
		}
	}
	if v, ok := raw[sciKeyStepTimeout]; ok {
		var secs float64
		if err := json.Unmarshal(v, &secs); err != nil || secs <= 0 || time.Duration(secs*float64(time.Second)) > maxSciCodeStepTimeout {
			return cfg, scenario.BadRequest("config.%s must be a number of seconds above 0 and at most %d, not %s", sciKeyStepTimeout, int(maxSciCodeStepTimeout.Seconds()), v)
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
		for _, id := range legacyIDSeparators.Split(strings.TrimSpace(s), -1) {
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
func (s *SciCodeScenario) Tasks(req *scenario.Request) ([]scenario.Task, error) {
	if req == nil {
		return nil, errors.New("scicode: no request")
	}
	if _, _, err := scenario.EntryParticipant(req, scenario.SciCode); err != nil {
		return nil, err
	}
	cfg, err := parseSciCodeConfig(req)
	if err != nil {
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
		req.Config.TaskTimeoutSeconds = DefaultSciCodeTaskTimeout.Seconds()
	}
	if req.Config.DeadlineSeconds == 0 {
		req.Config.DeadlineSeconds = DefaultSciCodeDeadline.Seconds()
	}
	tasks := []scenario.Task{}
	for i, p := range selected {
		if i%shards != c.ShardIndex {
			continue
		}
		tasks = append(tasks, scenario.Task{ID: p.ID, Title: p.Name, Data: &SciCodeTask{Problem: p, Split: split, Config: cfg}})
	}
	return tasks, nil
}

// Run walks the participant through the problem's sub-steps. A participant
// that fails, hangs or answers without code costs steps, not the task;
// the task's end (its timeout) ends the walk and the steps not reached are
// recorded as not run. Only a task this scenario cannot run is an error.
func (s *SciCodeScenario) Run(ctx context.Context, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	if env == nil || env.Messenger == nil {
		return nil, errors.New("scicode: no messenger")
	}
	return s.run(ctx, env, env.Messenger, task)
}

func (s *SciCodeScenario) run(ctx context.Context, env *scenario.TaskEnv, send scenario.Sender, task scenario.Task) (*evals.Outcome, error) {
	t, ok := task.Data.(*SciCodeTask)
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
	w := &sciWalk{s: s, env: env, send: send, t: t, role: role, url: url,
		timeout: s.runner.opts.Timeout, callTimeout: env.Request.Config.CallTimeout()}
	if t.Config.StepTimeout > 0 {
		w.timeout = t.Config.StepTimeout
	}
	w.walk(ctx)
	return w.outcome(), nil
}

// sciWalk is one problem under way.
type sciWalk struct {
	s           *SciCodeScenario
	env         *scenario.TaskEnv
	send        scenario.Sender
	t           *SciCodeTask
	role, url   string
	timeout     time.Duration
	callTimeout time.Duration

	contextID string
	agent     string
	// context[i] is the code later steps see for step i.
	context []string
	steps   []SciCodeStepResult
	sandbox *SandboxInfo
	started time.Time
	ended   string // why the walk stopped early
}

// SciCodeStepResult is one sub-step in the result.
type SciCodeStepResult struct {
	Step   string `json:"step"`
	Scored bool   `json:"scored"`
	Passed bool   `json:"passed"`
	// Reason is the last attempt's: passed, test_failed, crashed, timeout,
	// limit, no_code, no_answer, runner_error, not_run, unscored.
	Reason string `json:"reason"`
	Limit  string `json:"limit,omitempty"`
	Detail string `json:"detail,omitempty"`
	Turns  int    `json:"turns"`
	// TimeMS is the step's wall time (calls and tests); TestMS the part in
	// the runner.
	TimeMS float64 `json:"time_ms"`
	TestMS float64 `json:"test_ms"`
	// ContextCode says what later steps were given as this step's code:
	// "solver" (its passing code), "reference" (the split's reference, the
	// step not being solved), "solver_unverified" (its last code, where
	// the split has no reference) or "none".
	ContextCode string              `json:"context_code"`
	Attempts    []SciCodeAttemptLog `json:"attempts"`
}

// SciCodeAttemptLog is one turn of a step.
type SciCodeAttemptLog struct {
	Turn    int    `json:"turn"`
	Reason  string `json:"reason"`
	Limit   string `json:"limit,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Section string `json:"section,omitempty"`
	// AnswerSource is where the code was found: data, json, code_tag,
	// fenced.
	AnswerSource string  `json:"answer_source,omitempty"`
	CallMS       float64 `json:"call_ms"`
	TestMS       float64 `json:"test_ms,omitempty"`
	CPUMS        float64 `json:"cpu_ms,omitempty"`
	ExitCode     int     `json:"exit_code,omitempty"`
	Signal       string  `json:"signal,omitempty"`
	OutputBytes  int64   `json:"output_bytes,omitempty"`
}

const (
	reasonUnscored       = "unscored"
	contextSolver        = "solver"
	contextReference     = "reference"
	contextSolverUnsound = "solver_unverified"
	contextNone          = "none"
)

func (w *sciWalk) walk(ctx context.Context) {
	p := w.t.Problem
	w.started = time.Now()
	w.context = make([]string, len(p.Steps))
	for k := range p.Steps {
		if ctx.Err() != nil {
			w.ended = context.Cause(ctx).Error()
			for ; k < len(p.Steps); k++ {
				w.steps = append(w.steps, SciCodeStepResult{Step: p.Steps[k].Number, Scored: p.Steps[k].Scored(),
					Reason: ReasonNotRun, Detail: w.ended, ContextCode: contextNone})
			}
			return
		}
		w.steps = append(w.steps, w.step(ctx, k))
		r := &w.steps[k]
		if w.env.Progress != nil {
			w.env.Progress(fmt.Sprintf("%s: sub-step %s (%d of %d) %s after %s", p.ID, r.Step, k+1, len(p.Steps), r.Reason, textutil.Plural(r.Turns, "turn", "turns")))
		}
	}
}

// step runs the turns of step k and decides what later steps see of it.
func (w *sciWalk) step(ctx context.Context, k int) SciCodeStepResult {
	p, step := w.t.Problem, &w.t.Problem.Steps[k]
	started := time.Now()
	r := SciCodeStepResult{Step: step.Number, Scored: step.Scored(), Attempts: []SciCodeAttemptLog{}}
	prompt := w.prompt(k)
	text, data := prompt, w.stepData(k, 1)
	var lastCode string
	for turn := 1; turn <= w.t.Config.MaxTurns; turn++ {
		if ctx.Err() != nil {
			if turn == 1 {
				r.Reason, r.Detail = ReasonNotRun, context.Cause(ctx).Error()
			}
			break
		}
		r.Turns = turn
		a := SciCodeAttemptLog{Turn: turn}
		callStart := time.Now()
		reply, err := w.send.Send(ctx, SendRequest{URL: w.url, Text: text, Data: data, ContextID: w.contextID, Timeout: w.callTimeout})
		a.CallMS = msSince(callStart)
		if reply != nil {
			if w.contextID == "" && reply.ContextID != "" {
				w.contextID = reply.ContextID
			}
			if reply.AgentName != "" {
				w.agent = reply.AgentName
			}
		}
		if err != nil {
			// A participant that does not answer is not asked again for
			// this step: a hang would cost every turn's call timeout.
			a.Reason, a.Detail = ReasonNoAnswer, err.Error()
			if ctx.Err() != nil {
				a.Reason = ReasonNotRun
			}
			r.Attempts = append(r.Attempts, a)
			break
		}
		code, source := ExtractSciCodeAnswer(reply.Text, reply.Data)
		a.AnswerSource = source
		if code == "" {
			a.Reason, a.Detail = ReasonNoCode, "no code in <code>…</code>, a fenced block, or JSON {\"code\": …}"
			r.Attempts = append(r.Attempts, a)
			text, data = w.feedback(k, turn, a, nil), w.feedbackData(k, turn, a, "")
			continue
		}
		lastCode = code
		if !step.Scored() {
			a.Reason = reasonUnscored
			r.Attempts = append(r.Attempts, a)
			break
		}
		script, sections := BuildSciCodeScript(p, k, w.context, code)
		res, err := w.s.runner.Run(ctx, RunRequest{StepID: step.Number, Script: script, Sections: sections,
			TargetsPath: w.t.Split.TargetsPath, Timeout: w.timeout})
		if err != nil {
			if ctx.Err() != nil {
				a.Reason, a.Detail = ReasonNotRun, "the test did not finish: "+context.Cause(ctx).Error()
			} else {
				a.Reason, a.Detail = ReasonRunner, err.Error()
				w.s.log.Error("scicode: the runner failed", "problem", p.ID, "step", step.Number, "err", err)
			}
			r.Attempts = append(r.Attempts, a)
			break
		}
		if w.sandbox == nil {
			w.sandbox = res.Sandbox
		}
		a.Reason, a.Limit, a.Detail, a.Section = res.Reason, res.Limit, res.Detail, res.Section
		a.TestMS, a.CPUMS, a.ExitCode, a.Signal, a.OutputBytes = res.DurationMS, res.CPUMS, res.ExitCode, res.Signal, res.OutputBytes
		r.TestMS = round(r.TestMS+res.DurationMS, 3)
		r.Attempts = append(r.Attempts, a)
		if res.Passed {
			r.Passed = true
			break
		}
		text, data = w.feedback(k, turn, a, res), w.feedbackData(k, turn, a, trimTestOutput(res.Output, sciFeedbackChars))
	}
	if n := len(r.Attempts); n > 0 {
		last := r.Attempts[n-1]
		r.Reason, r.Limit, r.Detail = last.Reason, last.Limit, last.Detail
	} else if r.Reason == "" {
		r.Reason = ReasonNotRun
	}
	switch {
	case r.Passed, !step.Scored() && lastCode != "":
		w.context[k], r.ContextCode = lastCode, contextSolver
	case step.Reference != "":
		w.context[k], r.ContextCode = step.Reference, contextReference
	case lastCode != "":
		w.context[k], r.ContextCode = lastCode, contextSolverUnsound
	default:
		r.ContextCode = contextNone
	}
	r.TimeMS = msSince(started)
	return r
}

// prompt is the first message of step k: the problem, the previous steps
// with the code they are given, this step, its header and return line, the
// dependencies, and how to answer.
func (w *sciWalk) prompt(k int) string {
	p, step, bg := w.t.Problem, &w.t.Problem.Steps[k], w.t.Config.WithBackground
	var b strings.Builder
	fmt.Fprintf(&b, "SciCode problem %s (%s), sub-step %s (%d of %d).\n\n", p.ID, p.Name, step.Number, k+1, len(p.Steps))
	b.WriteString("You will write the Python code of one step of a scientific computing problem. ")
	b.WriteString("The steps build on each other: the code of the previous steps is given and will run before yours.\n\n")
	b.WriteString("PROBLEM\n")
	b.WriteString(strings.TrimSpace(p.Description))
	b.WriteString("\n")
	if bg && strings.TrimSpace(p.Background) != "" {
		b.WriteString("\nBackground:\n" + strings.TrimSpace(p.Background) + "\n")
	}
	if k > 0 {
		b.WriteString("\nPREVIOUS STEPS AND THEIR CODE\n")
		for i := range k {
			prev := &p.Steps[i]
			fmt.Fprintf(&b, "\nStep %s: %s\n", prev.Number, strings.TrimSpace(prev.Description))
			if bg && strings.TrimSpace(prev.Background) != "" {
				b.WriteString(strings.TrimSpace(prev.Background) + "\n")
			}
			if c := strings.TrimSpace(w.context[i]); c != "" {
				b.WriteString("```python\n" + c + "\n```\n")
			}
		}
	}
	fmt.Fprintf(&b, "\nNEXT STEP %s\n%s\n", step.Number, strings.TrimSpace(step.Description))
	if bg && strings.TrimSpace(step.Background) != "" {
		b.WriteString("\nBackground:\n" + strings.TrimSpace(step.Background) + "\n")
	}
	b.WriteString("\nFunction header and return line:\n```python\n" + strings.TrimRight(step.FunctionHeader, "\n") + "\n\n" + strings.TrimSpace(step.ReturnLine) + "\n```\n")
	b.WriteString("\nDEPENDENCIES\nUse only these; they are imported before your code, do not repeat them:\n```python\n" + strings.TrimSpace(p.Dependencies) + "\n```\n")
	b.WriteString("\nANSWER\nWrite the complete code of this step's function (keep the header as given). ")
	b.WriteString("Do not repeat the previous steps' code or the dependencies, and do not add example usage or tests. ")
	b.WriteString("Answer with the code in one ```python fenced block (or between <code> and </code>, or as JSON {\"code\": \"...\"}).\n")
	return b.String()
}

// stepData is the data part of step k's first message: the ids an agent
// needs to look the step up, and the step's parts.
func (w *sciWalk) stepData(k, turn int) map[string]any {
	p, step := w.t.Problem, &w.t.Problem.Steps[k]
	return map[string]any{
		"kind":            sciStepKind,
		"problem_id":      p.ID,
		"problem_name":    p.Name,
		"step_number":     step.Number,
		"step_index":      k + 1,
		"num_steps":       len(p.Steps),
		"turn":            turn,
		"max_turns":       w.t.Config.MaxTurns,
		"split":           w.t.Split.Name,
		"with_background": w.t.Config.WithBackground,
		"function_name":   step.FunctionName(),
		"function_header": step.FunctionHeader,
		"return_line":     step.ReturnLine,
		"dependencies":    p.Dependencies,
		"answer_formats":  []any{"```python fenced block", "<code>…</code>", `JSON {"code": "..."}`},
	}
}

// feedback is the message after a failed turn: what failed, where, the
// test output (trimmed), and the request to answer again.
func (w *sciWalk) feedback(k, turn int, a SciCodeAttemptLog, res *RunResult) string {
	step := &w.t.Problem.Steps[k]
	var b strings.Builder
	fmt.Fprintf(&b, "Your answer for sub-step %s did not pass (turn %d of %d): ", step.Number, turn, w.t.Config.MaxTurns)
	switch a.Reason {
	case ReasonNoCode:
		b.WriteString("no code was found in it.\n")
	case ReasonTestFailed:
		fmt.Fprintf(&b, "%s failed.\n", orDefault(a.Section, "a test case"))
	case ReasonTimeout:
		fmt.Fprintf(&b, "the tests did not finish within %s.\n", w.timeout)
	case ReasonLimit:
		fmt.Fprintf(&b, "the code hit the %s limit.\n", strings.ReplaceAll(a.Limit, "_", " "))
	default:
		b.WriteString("the code raised an error.\n")
	}
	if a.Detail != "" {
		b.WriteString(a.Detail + "\n")
	}
	if res != nil {
		if out := trimTestOutput(res.Output, sciFeedbackChars); out != "" {
			b.WriteString("\nTest output (the end):\n```\n" + out + "\n```\n")
		}
	}
	fmt.Fprintf(&b, "\nAnswer again with the complete corrected code of the step's function %s, in one ```python fenced block (or <code>…</code>, or JSON {\"code\": \"...\"}).\n",
		orDefault(step.FunctionName(), "(as in the header)"))
	return b.String()
}

func (w *sciWalk) feedbackData(k, turn int, a SciCodeAttemptLog, output string) map[string]any {
	d := w.stepData(k, turn+1)
	d["kind"] = sciFeedbackKind
	d["feedback"] = true
	d["failure"] = a.Reason
	if a.Limit != "" {
		d["limit"] = a.Limit
	}
	if a.Detail != "" {
		d["detail"] = a.Detail
	}
	if a.Section != "" {
		d["section"] = a.Section
	}
	if output != "" {
		d["output"] = output
	}
	return d
}

// trimTestOutput keeps the end of the output, where the traceback is,
// starting at a line, within n bytes.
func trimTestOutput(out string, n int) string {
	out = strings.TrimSpace(out)
	if i := strings.LastIndex(out, "Traceback (most recent call last):"); i > 0 && len(out)-i <= n {
		out = out[i:]
	}
	if len(out) <= n {
		return out
	}
	cut := len(out) - n
	if j := strings.IndexByte(out[cut:], '\n'); j >= 0 && j < n/2 {
		cut += j + 1
	}
	for cut < len(out) && out[cut]&0xC0 == 0x80 {
		cut++
	}
	return "…\n" + out[cut:]
}

// outcome scores the walk as SciCode does: the share of scored sub-steps
// passed, and the problem solved when all pass.
func (w *sciWalk) outcome() *evals.Outcome {
	p := w.t.Problem
	scored, passed, turns := 0, 0, 0
	failures := map[string]int{}
	for _, r := range w.steps {
		turns += r.Turns
		if !r.Scored {
			continue
		}
		scored++
		if r.Passed {
			passed++
		} else {
			failures[r.Reason]++
		}
	}
	rate := 0.0
	if scored > 0 {
		rate = float64(passed) / float64(scored)
	}
	solved := scored > 0 && passed == scored
	sandbox := w.sandbox
	if sandbox == nil {
		sandbox = w.s.runner.infoFor(w.timeout)
	}
	details := map[string]any{
		"problem_id":         p.ID,
		"problem_name":       p.Name,
		"split":              w.t.Split.Name,
		"targets":            filepath.Base(w.t.Split.TargetsPath),
		"with_background":    w.t.Config.WithBackground,
		"max_num_steps":      w.t.Config.MaxTurns,
		"entry_role":         w.role,
		"sub_steps":          scored,
		"sub_steps_passed":   passed,
		"sub_step_pass_rate": round(rate, 4),
		"solved":             solved,
		"turns_used":         turns,
		"failures":           failures,
		"steps":              w.steps,
		"sandbox":            sandbox,
		"time_ms":            msSince(w.started),
	}
	if w.contextID != "" {
		details["context_id"] = w.contextID
	}
	if w.agent != "" {
		details["agent"] = w.agent
	}
	if w.ended != "" {
		details["ended_early"] = w.ended
	}
	summary := fmt.Sprintf("problem %s (%s): %d of %d sub-steps passed", p.ID, p.Name, passed, scored)
	if solved {
		summary += ", solved"
	}
	summary += fmt.Sprintf(", %s", textutil.Plural(turns, "turn", "turns"))
	if len(failures) > 0 {
		var parts []string
		for _, k := range sortedKeys(failures) {
			parts = append(parts, fmt.Sprintf("%s %d", k, failures[k]))
		}
		summary += "; failed: " + strings.Join(parts, ", ")
	}
	return &evals.Outcome{Success: solved, Score: rate, Summary: summary, Details: details}
}

func msSince(t time.Time) float64 { return round(float64(time.Since(t).Microseconds())/1000, 3) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
