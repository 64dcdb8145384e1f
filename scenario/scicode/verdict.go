package scicode

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coordbench/coordbench/sandbox"
)

// Reasons a step or an attempt ends (StepResult.Reason, Attempt.Reason,
// Verdict.Reason).
const (
	ReasonPassed     = "passed"
	ReasonTestFailed = "test_failed"
	ReasonCrashed    = "crashed"
	// ReasonNoResult: the run ended before it recorded every test case's
	// values (the code exited, or was stopped, before or during the tests).
	ReasonNoResult = "no_result"
	// ReasonInvalidResult: a recorded value is malformed or not a plain
	// value (an object that says it equals anything, say).
	ReasonInvalidResult = "invalid_result"
	ReasonTimeout       = "timeout"
	ReasonLimit         = "limit"
	ReasonNoCode        = "no_code"
	ReasonNoAnswer      = "no_answer"
	ReasonNotRun        = "not_run"
	ReasonRunner        = "runner_error"
	ReasonUnscored      = "unscored"
)

// notTamperProof is what a result says when the sandbox could not hide the
// host from the code.
const notTamperProof = "scores from this sandbox are not tamper-proof: without user namespaces and a minimal root " +
	"the solver's code can read the host's files (the targets among them) and see its processes; run the green " +
	"agent where user namespaces are allowed (see docs/scicode.md)"

// TamperProof reports whether runs under info keep the verdict out of the
// solver's reach: its code sees no host file (so no targets) and no other
// process, and reaches no network. The verdict itself is always the
// judge's, outside the sandbox.
func TamperProof(info *sandbox.Info) bool {
	return info != nil && info.HostFilesHidden && info.PIDNamespace && info.Network == sandbox.NetworkNamespace
}

// TestRequest is one answer's code to test as one step.
type TestRequest struct {
	Split   *Split
	Problem *Problem
	// Step is the index of the step in Problem.Steps.
	Step int
	// Previous[i] is the code step i is given as (empty ones are left out).
	Previous []string
	Code     string
	// Timeout overrides the sandbox's.
	Timeout time.Duration
}

// Verdict is what testing one answer found.
type Verdict struct {
	Passed bool
	// Reason is ReasonPassed, ReasonTestFailed, ReasonCrashed,
	// ReasonNoResult, ReasonInvalidResult, ReasonTimeout or ReasonLimit;
	// Limit names the limit.
	Reason, Limit string
	// Detail is one line: what failed and where; Section is where ("test
	// case 2 of 3", "the step's code").
	Detail, Section string
	// Feedback is what the solver may see of the run: the end of its
	// output (tracebacks), without host paths, at most 3000 bytes.
	Feedback string
	// TamperProof says whether the sandbox kept the host from the code.
	TamperProof bool
	// Run is what the sandbox saw; JudgeMS and JudgeCPUMS are the judge's
	// wall-clock and CPU time.
	Run        *sandbox.Result
	JudgeMS    float64
	JudgeCPUMS float64
	// JudgePeakRSSKiB is the peak resident memory of the judge's fork
	// that compared the values.
	JudgePeakRSSKiB int64
	// Unchecked lists, on a pass, the test cases (1-based) the pass rests
	// on that check only a property an answer computing nothing can
	// satisfy, and that could not be compared with a reference run (the
	// split has no reference code, or nothing comparable was recorded).
	Unchecked []int
	// ReferenceChecked says the property cases were compared with the
	// reference code's run on the same inputs.
	ReferenceChecked bool
	// CasesHeld are the test cases whose assertions all held, whatever
	// the verdict (a comparison with the reference aside): for the tests'
	// census of the cases an answer computing nothing passes. It is never
	// told to the solver.
	CasesHeld []int
	// StrictOnly says the answer failed on the judge's stricter rules
	// alone (the structure rule, an equivalence that holds one way only,
	// NaN in an ordering, a degenerate value where the reference's is
	// not): SciCode's own comparison accepts its values. It is never told
	// to the solver (it would say that a weaker comparison held).
	StrictOnly bool
}

// Test runs the answer's code for one step in the sandbox, where it only
// computes: the test cases, as the judge rewrote them, record the values the
// assertions compare. The judge compares them with the targets, outside the
// sandbox, and that alone decides; the exit status and the output only
// explain a failure. The error is the runner's or the judge's own failure
// (the caller's context ending among them, or a test case the judge cannot
// rewrite), never the code's.
func (s *Scenario) Test(ctx context.Context, req TestRequest) (*Verdict, error) {
	if req.Split == nil || req.Problem == nil || req.Step < 0 || req.Step >= len(req.Problem.Steps) {
		return nil, errors.New("scicode: test: no such step")
	}
	step := &req.Problem.Steps[req.Step]
	plan, err := s.plan(ctx, req.Split, req.Problem, step)
	if err != nil {
		return nil, fmt.Errorf("scicode: step %s: %w", step.Number, err)
	}
	res, err := s.runStep(ctx, req.Problem, req.Step, req.Previous, req.Code, plan, req.Timeout)
	if err != nil {
		return nil, err
	}
	judged := time.Now()
	var reference []byte
	j, err := s.judge.judge(ctx, req.Problem, step, req.Split.TargetsPath, plan, res.Records, nil)
	if err == nil && j.Passed && len(plan.Property) > 0 {
		// The pass rests in part on cases that check only a property:
		// compare the values with the reference's, where there is one.
		if reference = s.reference(ctx, req, plan, res); reference != nil {
			j, err = s.judge.judge(ctx, req.Problem, step, req.Split.TargetsPath, plan, res.Records, reference)
		}
	}
	if errors.Is(err, errJudgeDied) && ctx.Err() == nil {
		// Once more, in a new process: a judge that dies twice on the
		// same values died of them.
		s.log.Warn("scicode: the judge died; trying again", "step", step.Number, "err", err)
		if j, err = s.judge.judge(ctx, req.Problem, step, req.Split.TargetsPath, plan, res.Records, reference); errors.Is(err, errJudgeDied) && ctx.Err() == nil {
			s.log.Error("scicode: the judge died twice on one run's values", "step", step.Number, "err", err)
			return &Verdict{Reason: ReasonInvalidResult, Detail: "the recorded values could not be compared (the comparison process died on them)",
				TamperProof: TamperProof(res.Sandbox), Run: res, Feedback: feedback(res.Output)}, nil
		}
	}
	if errors.Is(err, errJudgeTime) && ctx.Err() == nil {
		// The judge's own limit, not the task's: the run's values cost
		// more than any comparison should. The solver's doing.
		s.log.Warn("scicode: the judge ran past its time on one run's values", "step", step.Number, "err", err)
		return &Verdict{Reason: ReasonInvalidResult, Detail: fmt.Sprintf("the recorded values could not be compared within the judge's time limit (%s)", judgeTimeout),
			TamperProof: TamperProof(res.Sandbox), Run: res, Feedback: feedback(res.Output), JudgeMS: msSince(judged)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scicode: step %s: %w", step.Number, err)
	}
	v := verdictOf(j, res, len(step.TestCases))
	v.JudgeMS, v.JudgeCPUMS, v.JudgePeakRSSKiB = msSince(judged), j.CPUMS, j.PeakRSSKiB
	v.CasesHeld = j.Held
	v.StrictOnly = !v.Passed && j.StrictOnly
	if v.Passed {
		v.Unchecked = j.Unchecked
		v.ReferenceChecked = reference != nil
	}
	return v, nil
}

// runStep runs code as step k of p, after previous, on the plan's test cases.
func (s *Scenario) runStep(ctx context.Context, p *Problem, k int, previous []string, code string, plan *stepPlan, timeout time.Duration) (*sandbox.Result, error) {
	step := &p.Steps[k]
	cases := make([][2]string, len(plan.Cases))
	for i, c := range plan.Cases {
		cases[i] = [2]string{c.Filename, c.Source}
	}
	script, sections := BuildScript(p, k, previous, code, cases)
	res, err := s.runner.Run(ctx, sandbox.Request{Name: step.Number, Script: script, Sections: sections, Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("scicode: step %s: %w", step.Number, err)
	}
	return res, nil
}

// referenceRun is the reference code's run of one step, made once.
type referenceRun struct {
	mu      sync.Mutex
	records []byte
}

// reference returns the records of the reference code's run on the step's
// test cases (the previous steps' reference code before it), or nil where
// the split has no reference code for the step or its run did not
// complete. The run is made in the sandbox like any other and its records
// go to the judge alone: the solver's runs never see it. It is made once
// per step; a run of the reference code itself (the same code after the
// same previous code) is that run.
func (s *Scenario) reference(ctx context.Context, req TestRequest, plan *stepPlan, res *sandbox.Result) []byte {
	p, k := req.Problem, req.Step
	previous := make([]string, k)
	for i := range k {
		if previous[i] = p.Steps[i].Reference; previous[i] == "" {
			return nil
		}
	}
	step := &p.Steps[k]
	if step.Reference == "" {
		return nil
	}
	key := req.Split.Name + "/" + step.Number
	s.refsMu.Lock()
	r, ok := s.references[key]
	if !ok {
		r = &referenceRun{}
		s.references[key] = r
	}
	s.refsMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records != nil {
		return r.records
	}
	if req.Code == step.Reference && slices.Equal(req.Previous, previous) {
		r.records = res.Records
		return r.records
	}
	started := time.Now()
	ref, err := s.runStep(ctx, p, k, previous, step.Reference, plan, req.Timeout)
	if err != nil || !ref.Exited() {
		s.log.Warn("scicode: the reference run did not complete; property cases stay unchecked", "step", step.Number, "err", err)
		return nil
	}
	s.log.Debug("scicode: reference run", "step", step.Number, "ms", msSince(started))
	r.records = ref.Records
	return r.records
}

// verdictOf reads the judge's answer, with the run's end to explain a
// failure.
func verdictOf(j *judgement, res *sandbox.Result, cases int) *Verdict {
	v := &Verdict{TamperProof: TamperProof(res.Sandbox), Run: res}
	if j.Passed {
		v.Passed, v.Reason = true, ReasonPassed
		return v
	}
	v.Feedback = feedback(res.Output)
	f := j.Failure
	if f == nil {
		v.Reason, v.Detail = ReasonInvalidResult, "the judge gave no reason"
		return v
	}
	if f.Case > 0 && f.Case <= cases {
		v.Section = fmt.Sprintf("test case %d of %d", f.Case, cases)
	}
	v.Detail = f.Detail
	kind := f.Kind
	if kind == "invalid" && j.Malformed != "" && (res.Reason == sandbox.ReasonTimeout || res.Reason == sandbox.ReasonLimit) {
		// The run was stopped mid-write: its malformed last record is the
		// stop's doing, and the stop is the verdict.
		kind = "missing"
	}
	switch kind {
	case "failed":
		v.Reason = ReasonTestFailed
	case "invalid":
		v.Reason = ReasonInvalidResult
	case "crashed":
		v.Reason = ReasonCrashed
		if l := sandbox.ExceptionLimit(f.Detail); l != "" {
			v.Reason, v.Limit = ReasonLimit, l
		}
	default: // missing: why the run stopped explains it
		switch {
		case res.Reason == sandbox.ReasonTimeout || res.Reason == sandbox.ReasonLimit:
			v.Reason, v.Limit, v.Detail = res.Reason, res.Limit, res.Detail
		case res.Exception != "":
			v.Reason, v.Detail, v.Section = ReasonCrashed, res.Detail, res.Section
		default:
			v.Reason = ReasonNoResult
			how := fmt.Sprintf("the process exited with status %d", res.ExitCode)
			if res.Signal != "" {
				how = "the process was killed by " + res.Signal
			}
			v.Detail = f.Detail + ": " + how + " before its values were recorded"
		}
	}
	return v
}

// hostPath matches the directories of a traceback's file names.
var hostPath = regexp.MustCompile(`File "/(?:[^"/]+/)*([^"/]+/[^"/]+)"`)

// feedback is the end of the run's output as the solver may see it: the
// last traceback, within feedbackChars, the interpreter's paths cut to
// their last two parts. The sandbox has already taken off its own
// directories; nothing the code could print holds a secret, since none is
// within its reach.
func feedback(out string) string {
	return trimTestOutput(hostPath.ReplaceAllString(out, `File ".../$1"`), feedbackChars)
}

// plan is the judge's rewriting of a step's test cases, made once per step.
func (s *Scenario) plan(ctx context.Context, split *Split, p *Problem, step *Step) (*stepPlan, error) {
	key := split.Name + "/" + step.Number
	s.plansMu.Lock()
	cached, ok := s.plans[key]
	s.plansMu.Unlock()
	if ok {
		return cached, nil
	}
	plan, err := s.judge.plan(ctx, p, step, split.TargetsPath)
	if err != nil {
		return nil, err
	}
	s.plansMu.Lock()
	s.plans[key] = plan
	s.plansMu.Unlock()
	return plan, nil
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
