package scicode

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

// walker is one problem under way.
type walker struct {
	s           *Scenario
	env         *scenario.TaskEnv
	send        scenario.Sender
	t           *TaskData
	role, url   string
	timeout     time.Duration
	callTimeout time.Duration

	contextID string
	agent     string
	// context[i] is the code later steps see for step i.
	context []string
	steps   []StepResult
	sandbox *sandbox.Info
	started time.Time
	ended   string // why the walk stopped early

	// delivery is the request's; with MCP, endpoint is the task's MCP
	// server and cur the step whose call is under way (tools.go), both
	// under toolMu, which also runs one tool call at a time.
	delivery scenario.Delivery
	endpoint map[string]any
	toolMu   sync.Mutex
	cur      *openStep
	// taskCtx bounds what the tools run: the task's context.
	taskCtx context.Context
}

const (
	contextSolver        = "solver"
	contextReference     = "reference"
	contextSolverUnsound = "solver_unverified"
	contextNone          = "none"
)

func (w *walker) walk(ctx context.Context) {
	p := w.t.Problem
	w.started = time.Now()
	w.context = make([]string, len(p.Steps))
	for k := range p.Steps {
		if ctx.Err() != nil {
			w.ended = context.Cause(ctx).Error()
			for ; k < len(p.Steps); k++ {
				w.steps = append(w.steps, StepResult{Step: p.Steps[k].Number, Scored: p.Steps[k].Scored(),
					Reason: ReasonNotRun, Detail: w.ended, ContextCode: contextNone})
			}
			return
		}
		w.steps = append(w.steps, w.step(ctx, k))
		r := &w.steps[k]
		if w.env.Progress != nil {
			w.env.Progress(fmt.Sprintf("%s: sub-step %s (%d of %d) %s after %s", p.ID, r.Step, k+1, len(p.Steps), r.Reason, plural(r.Turns, "turn", "turns")))
		}
	}
}

// step runs the turns of step k and decides what later steps see of it.
// A turn is one answer judged: in the reply's text (delivery text), or
// through the submit_step tool while the step's call is under way
// (delivery mcp, tools.go); both count against max_num_steps alike. A call
// that brings no answer either way costs a turn as no_code.
func (w *walker) step(ctx context.Context, k int) StepResult {
	step := &w.t.Problem.Steps[k]
	started := time.Now()
	r := StepResult{Step: step.Number, Scored: step.Scored(), Attempts: []Attempt{}}
	st := &openStep{k: k, r: &r}
	text, data := w.prompt(k), w.stepData(k, 1)
	for len(r.Attempts) < w.t.Config.MaxTurns && !r.Passed && !st.stop {
		if ctx.Err() != nil {
			if len(r.Attempts) == 0 {
				r.Reason, r.Detail = ReasonNotRun, context.Cause(ctx).Error()
			}
			break
		}
		before := len(r.Attempts)
		callStart := time.Now()
		w.openCall(st)
		reply, err := w.send.Send(ctx, a2acall.SendRequest{URL: w.url, Text: text, Data: data, ExtraData: w.extraData(), ContextID: w.contextID, Timeout: w.callTimeout})
		w.closeCall()
		callMS := msSince(callStart)
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
			a := Attempt{Turn: len(r.Attempts) + 1, CallMS: callMS, Reason: ReasonNoAnswer, Detail: err.Error()}
			if ctx.Err() != nil {
				a.Reason = ReasonNotRun
			}
			r.Attempts = append(r.Attempts, a)
			break
		}
		if r.Passed || st.stop || len(r.Attempts) >= w.t.Config.MaxTurns {
			break
		}
		tooled := len(r.Attempts) > before
		code, source := "", ""
		if w.delivery.Text {
			code, source = stepproto.ExtractAnswer(reply.Text, reply.Data)
		}
		if code == "" {
			if tooled {
				// The answers of this call came through the tool; the
				// next message reports the last one.
				text, data = w.feedback(k, st.last.Turn, st.last, st.verdict), w.feedbackData(k, st.last.Turn, st.last, feedbackOf(st.verdict))
				continue
			}
			a := Attempt{Turn: len(r.Attempts) + 1, CallMS: callMS, AnswerSource: source, Reason: ReasonNoCode, Detail: w.noCodeDetail()}
			r.Attempts = append(r.Attempts, a)
			st.last, st.verdict = a, nil
			text, data = w.feedback(k, a.Turn, a, nil), w.feedbackData(k, a.Turn, a, "")
			continue
		}
		a, res := w.attempt(ctx, st, code, source)
		a.CallMS = callMS
		w.record(st, a, res)
		if r.Passed || st.stop {
			break
		}
		text, data = w.feedback(k, a.Turn, a, res), w.feedbackData(k, a.Turn, a, feedbackOf(res))
	}
	r.Turns = len(r.Attempts)
	if n := len(r.Attempts); n > 0 {
		last := r.Attempts[n-1]
		r.Reason, r.Limit, r.Detail = last.Reason, last.Limit, last.Detail
	} else if r.Reason == "" {
		r.Reason = ReasonNotRun
	}
	lastCode := st.lastCode
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

// openStep is the step whose turns run, shared by the walker and the
// tools (under walker.toolMu while a call is under way).
type openStep struct {
	k int
	r *StepResult
	// inCall is true while the step's message awaits its reply: the only
	// time the submit tool takes an answer.
	inCall bool
	// stop ends the step's turns (an unscored step answered, a runner
	// failure, the task's end).
	stop bool
	// last and verdict are the last attempt and its verdict (nil when
	// none was tested), for the next feedback; lastCode the last code.
	last     Attempt
	verdict  *Verdict
	lastCode string
	// runs counts the run_code calls of the step.
	runs int
}

// attempt tests one answer's code as turn len(attempts)+1 of st's step:
// the same test, comparator and limits whichever way the code came.
func (w *walker) attempt(ctx context.Context, st *openStep, code, source string) (Attempt, *Verdict) {
	p, k := w.t.Problem, st.k
	step := &p.Steps[k]
	a := Attempt{Turn: len(st.r.Attempts) + 1, AnswerSource: source, Code: code}
	st.lastCode = code
	if !step.Scored() {
		a.Reason = ReasonUnscored
		st.stop = true
		return a, nil
	}
	res, err := w.s.Test(ctx, TestRequest{Split: w.t.Split, Problem: p, Step: k, Previous: w.context, Code: code, Timeout: w.timeout})
	if err != nil {
		if ctx.Err() != nil {
			a.Reason, a.Detail = ReasonNotRun, "the test did not finish: "+err.Error()
		} else {
			a.Reason, a.Detail = ReasonRunner, err.Error()
			w.s.log.Error("scicode: the runner failed", "problem", p.ID, "step", step.Number, "err", err)
		}
		st.stop = true
		return a, nil
	}
	if w.sandbox == nil {
		w.sandbox = res.Run.Sandbox
	}
	a.Reason, a.Limit, a.Detail, a.Section = res.Reason, res.Limit, res.Detail, res.Section
	run := res.Run
	a.TestMS, a.CPUMS, a.ExitCode, a.Signal, a.OutputBytes = run.DurationMS, run.CPUMS, run.ExitCode, run.Signal, run.OutputBytes
	a.JudgeMS = res.JudgeMS
	a.PropertyCheck, a.UncheckedCases = propertyCheck(res), res.Unchecked
	a.StrictOnly = res.StrictOnly
	return a, res
}

// record adds a tested attempt to its step.
func (w *walker) record(st *openStep, a Attempt, res *Verdict) {
	r := st.r
	if res != nil {
		r.TestMS = round(r.TestMS+res.Run.DurationMS+res.JudgeMS, 3)
		if res.Passed {
			r.Passed = true
			r.PropertyCheck, r.UncheckedCases = a.PropertyCheck, a.UncheckedCases
		}
		r.StrictOnly = !r.Passed && a.StrictOnly
	}
	r.Attempts = append(r.Attempts, a)
	st.last, st.verdict = a, res
}

// noCodeDetail says what a reply without an answer lacked.
func (w *walker) noCodeDetail() string {
	if !w.delivery.Text {
		return "no code was submitted through the " + toolSubmitStep + " tool during the call"
	}
	if w.delivery.MCP {
		return "no code through the " + toolSubmitStep + " tool, nor in <code>…</code>, a fenced block, or JSON {\"code\": …}"
	}
	return "no code in <code>…</code>, a fenced block, or JSON {\"code\": …}"
}

func feedbackOf(v *Verdict) string {
	if v == nil {
		return ""
	}
	return v.Feedback
}

// prompt is the first message of step k: the problem, the previous steps
// with the code they are given, this step, its header and return line, the
// dependencies, and how to answer.
func (w *walker) prompt(k int) string {
	p, step, bg := w.t.Problem, &w.t.Problem.Steps[k], w.t.Config.WithBackground
	var b strings.Builder
	b.WriteString(stepproto.PromptHeading(w.stepInfo(k, 1)) + "\n\n")
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
	b.WriteString(w.answerHow())
	return b.String()
}

// stepInfo is what the messages of step k's turn say of the step.
func (w *walker) stepInfo(k, turn int) stepproto.Step {
	p, step := w.t.Problem, &w.t.Problem.Steps[k]
	return stepproto.Step{
		ProblemID:      p.ID,
		ProblemName:    p.Name,
		StepNumber:     step.Number,
		StepIndex:      k + 1,
		NumSteps:       len(p.Steps),
		Turn:           turn,
		MaxTurns:       w.t.Config.MaxTurns,
		Split:          w.t.Split.Name,
		WithBackground: w.t.Config.WithBackground,
		FunctionName:   step.FunctionName(),
		FunctionHeader: step.FunctionHeader,
		ReturnLine:     step.ReturnLine,
		Dependencies:   p.Dependencies,
	}
}

// stepData is the data part of step k's first message: the ids an agent
// needs to look the step up, and the step's parts.
func (w *walker) stepData(k, turn int) map[string]any {
	return stepproto.StepData(w.stepInfo(k, turn))
}

// feedback is the message after a failed turn: what failed, where, the
// test output (trimmed), and the request to answer again.
func (w *walker) feedback(k, turn int, a Attempt, res *Verdict) string {
	step := &w.t.Problem.Steps[k]
	var b strings.Builder
	b.WriteString(stepproto.FeedbackHeading(step.Number, turn, w.t.Config.MaxTurns))
	switch a.Reason {
	case ReasonNoCode:
		b.WriteString("no code was found in it.\n")
	case ReasonTestFailed:
		fmt.Fprintf(&b, "%s failed.\n", orDefault(a.Section, "a test case"))
	case ReasonNoResult:
		b.WriteString("the run ended before the test cases' values were recorded.\n")
	case ReasonInvalidResult:
		b.WriteString("a value it returned cannot be compared.\n")
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
	if res != nil && res.Feedback != "" {
		b.WriteString("\nTest output (the end):\n```\n" + res.Feedback + "\n```\n")
	}
	if !w.delivery.MCP {
		fmt.Fprintf(&b, "\nAnswer again with the complete corrected code of the step's function %s, in one ```python fenced block (or <code>…</code>, or JSON {\"code\": \"...\"}).\n",
			orDefault(step.FunctionName(), "(as in the header)"))
	} else {
		fmt.Fprintf(&b, "\nSubmit the complete corrected code of the step's function %s again with the %s tool.\n",
			orDefault(step.FunctionName(), "(as in the header)"), toolSubmitStep)
	}
	return b.String()
}

func (w *walker) feedbackData(k, turn int, a Attempt, output string) map[string]any {
	return stepproto.FeedbackData(w.stepInfo(k, turn+1), stepproto.Failure{
		Reason: a.Reason, Limit: a.Limit, Detail: a.Detail, Section: a.Section, Output: output,
	})
}

func msSince(t time.Time) float64 { return round(float64(time.Since(t).Microseconds())/1000, 3) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func round(x float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(x*p) / p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
