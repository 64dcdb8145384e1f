package green

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/tracedata"
)

// The executor (docs/green-agent.md): one A2A message holding an assessment
// request becomes one A2A task that goes submitted → working → completed (or
// rejected, failed, canceled). While it works, the scenario's tasks run one
// after the other, each in a trace of its own; every task's trace is settled,
// assembled, evaluated and forgotten; and the task ends with one artifact named
// Result.

// DefaultProgressInterval is the longest an assessment stays silent: the
// AgentBeats gateway and proxy cut a stream that says nothing for 300 s.
const DefaultProgressInterval = 30 * time.Second

const (
	// participantCardTimeout bounds the look-up of a participant's card
	// at the start of an assessment, which names it among the evaluators'
	// participants; a participant that does not answer is named by role.
	participantCardTimeout = 15 * time.Second
	// deadlineGrace is what a task that the assessment deadline
	// interrupted gets to have its trace settled and evaluated, and
	// deadlineSettle bounds its settle wait.
	deadlineGrace  = 30 * time.Second
	deadlineSettle = 2 * time.Second
)

// Causes the executor gives the contexts it cancels, so the end of an
// assessment says why it ended.
var (
	errCanceledByClient = errors.New("the assessment was canceled by the client")
	errStreamClosed     = errors.New("the A2A event stream was closed")
	// ErrShuttingDown ends the assessments under way when the server stops.
	ErrShuttingDown = errors.New("the green agent is shutting down")
)

// ExecutorOptions configure an Executor.
type ExecutorOptions struct {
	// Scenarios are the scenarios a request may name in config.scenario.
	Scenarios map[string]scenario.Scenario
	// Unavailable names scenarios that are known but not available here,
	// with the reason, so a request for one is rejected with it.
	Unavailable map[string]string
	// Store holds the spans of every road; TracerProvider makes the green
	// agent's spans. They reach Store through Recorder, registered on
	// TracerProvider, which records the task traces only; a provider that
	// records everything into Store (sdkbridge.NewProviders with Store) works
	// too, leaving the stray traces to the store's MaxAge. MeterProvider,
	// when set, records evaluation metrics.
	Store          *tracestore.Store
	TracerProvider trace.TracerProvider
	Recorder       *TaskTraceRecorder
	MeterProvider  metric.MeterProvider
	// Evaluators, when set, are the evaluators run (their judge reports its
	// chat calls to whatever observer they were built with). Nil builds the
	// standard ones for this executor (evals.NewRegistry) with Judge, the
	// executor's chat spans and Logger.
	Evaluators *evals.Registry
	// Judge configures the LLM judge of the standard evaluators; the zero
	// value has no key, so the rule-based judge answers. Callers read it
	// once, e.g. with llmconfig.FromEnv.
	Judge llmconfig.Config
	// ProgressInterval is the longest the executor stays silent while an
	// assessment runs (default 30 s); tests shorten it.
	ProgressInterval time.Duration
	// Messenger is the base of each assessment's Messenger options; the
	// request's call_timeout_seconds sets CallTimeout.
	Messenger a2acall.Options
	// Conventions, when set, is a user's convention map, read by trace
	// assembly before the built-in recognizers (docs/trace-assembly.md).
	Conventions *assemble.Conventions
	// Tools serves the tasks' MCP endpoints for requests whose delivery
	// asks for MCP (docs/mcp.md); nil refuses such requests' tasks.
	Tools scenario.ToolHost
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Executor runs assessments. It is the a2asrv.AgentExecutor of the green
// agent's A2A server, and Assess runs one assessment directly (the `green
// run` command). Assessments run concurrently without sharing a trace: each
// task is a trace of its own.
type Executor struct {
	opts      ExecutorOptions
	tracer    trace.Tracer
	telemetry *EvalTelemetry
	assessor  *traceAssessor
	traces    *taskTraces
	log       *slog.Logger

	mu      sync.Mutex
	running map[a2a.TaskID]context.CancelCauseFunc
	closed  error // set by Shutdown
}

var _ a2asrv.AgentExecutor = (*Executor)(nil)

// NewExecutor checks opts and returns an Executor.
func NewExecutor(opts ExecutorOptions) (*Executor, error) {
	if opts.Store == nil {
		return nil, errors.New("executor: no trace store")
	}
	if opts.TracerProvider == nil {
		return nil, errors.New("executor: no tracer provider")
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	telemetry, err := NewEvalTelemetry(opts.TracerProvider, opts.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("executor: evaluator telemetry: %w", err)
	}
	if opts.Evaluators == nil {
		// The judge's LLM calls become chat spans of this executor's
		// provider.
		opts.Evaluators = evals.NewRegistry(evals.Options{
			Judge: judge.New(judge.Options{
				Config:       judge.Config{LLM: opts.Judge},
				ChatObserver: telemetry.ChatObserver(),
				Logger:       opts.Logger,
			}),
			Logger: opts.Logger,
		})
	}
	return &Executor{
		opts:      opts,
		tracer:    opts.TracerProvider.Tracer(instrumentationName),
		telemetry: telemetry,
		assessor:  &traceAssessor{evaluators: opts.Evaluators, telemetry: telemetry, log: opts.Logger, conventions: opts.Conventions},
		traces:    &taskTraces{store: opts.Store, recorder: opts.Recorder},
		log:       opts.Logger,
		running:   map[a2a.TaskID]context.CancelCauseFunc{},
	}, nil
}

// Scenarios returns the names of the scenarios available, sorted.
func (e *Executor) Scenarios() []string { return sortedKeys(e.opts.Scenarios) }

// Assess runs one assessment and returns its result. progress, when not
// nil, receives the texts of the `working` updates; calls to it are
// serialised. A request the executor cannot run (an unknown scenario, tasks
// the scenario does not have) is a *scenario.RequestError, returned before any
// progress. A participant's failure, a task that times out or a scenario
// that panics costs that task a recorded failure; when the assessment
// deadline passes, the remaining tasks are recorded as not run and the
// result is still returned. Only ctx ending is an error once the tasks run.
func (e *Executor) Assess(ctx context.Context, req *scenario.Request, progress func(string)) (*report.Result, error) {
	return e.assess(ctx, req, progress, "")
}

// assessment is one assessment under way.
type assessment struct {
	e        *Executor
	req      *scenario.Request
	scenario scenario.Scenario
	id       string
	started  time.Time

	progressMu sync.Mutex
	progressFn func(string)
	lastSent   time.Time
	// current says what runs now, since when, for the heartbeat.
	current      string
	currentSince time.Time
	// await names the calls whose answer each task's trace waits for;
	// silent the callees that sent no span for a whole task, which later
	// tasks do not wait for (settleAwait).
	await  *tracestore.Await
	silent map[string]bool
	// assessed are the traces of the tasks assessed so far, and lateSeen
	// the late spans counted for them when the last task started settling.
	assessed []trace.TraceID
	lateSeen int

	warnings []string
	// ingestToken ties the participants' exports to this assessment's
	// traces (admission.go).
	ingestToken string
}

func (e *Executor) assess(ctx context.Context, req *scenario.Request, progress func(string), a2aTaskID string) (*report.Result, error) {
	if req == nil {
		return nil, scenario.BadRequest("no request")
	}
	if err := checkParticipantsAllowed(e.opts.Messenger.Allow, req.Participants); err != nil {
		return nil, err
	}
	name := req.Config.ScenarioName()
	sc, ok := e.opts.Scenarios[name]
	if !ok {
		if why, known := e.opts.Unavailable[name]; known {
			return nil, scenario.BadRequest("scenario %s is not available: %s", name, why)
		}
		if name == scenario.SciCode {
			return nil, scenario.BadRequest("scenario %s is not available", name)
		}
		return nil, scenario.BadRequest("unknown scenario %q; available: %s", name, strings.Join(e.Scenarios(), ", "))
	}
	tasks, err := sc.Tasks(req)
	if err != nil {
		var re *scenario.RequestError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, &scenario.RequestError{Err: err}
	}

	a := &assessment{e: e, req: req, scenario: sc, started: time.Now(), progressFn: progress, current: "starting"}
	actx, cancel := context.WithTimeoutCause(ctx, req.Config.Deadline(),
		fmt.Errorf("the assessment deadline of %s passed", req.Config.Deadline()))
	defer cancel()
	actx, span := e.tracer.Start(actx, otelmap.SpanAssessment,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			otelmap.AttrCallType.String(string(tracedata.CallHost)),
			otelmap.AttrScenario.String(sc.Name()),
			otelmap.AttrTaskCount.Int(len(tasks)),
		))
	defer span.End()
	a.id = "coordbench-" + span.SpanContext().TraceID().String()
	span.SetAttributes(otelmap.AttrAssessmentID.String(a.id))
	if a2aTaskID != "" {
		span.SetAttributes(otelmap.AttrA2ATaskID.String(a2aTaskID))
	}

	a.ingestToken = newIngestToken()
	messenger := a2acall.New(e.opts.TracerProvider, e.opts.Store, withIngest(e.messengerOptions(req), a.ingestToken))
	defer func() {
		if err := messenger.Close(); err != nil {
			e.log.Warn("assessment: close messenger", "assessment", a.id, "err", err)
		}
	}()

	stop := a.heartbeat(actx, e.opts.ProgressInterval)
	defer stop()
	repeats := req.Config.RepeatCount()
	each := ""
	if repeats > 1 {
		each = fmt.Sprintf(" (each run %d times)", repeats)
	}
	a.progress(fmt.Sprintf("assessment started: scenario %s, %s%s, participants %s",
		sc.Name(), textutil.Plural(len(tasks), "task", "tasks"), each, strings.Join(sortedKeys(req.Participants), ", ")))
	participants := a.participantNames(actx, messenger)
	// A task's trace is complete when every call the assessor made, and
	// every call to a participant that a participant made, was answered by
	// a span of the callee's (docs/participants.md#when-a-tasks-trace-is-complete);
	// what a call is, and whom it calls, is trace assembly's rule.
	a.await = &tracestore.Await{Assessor: true, Agents: participants, Calls: assemble.CallRule(a.e.opts.Conventions)}
	a.silent = map[string]bool{}
	for _, role := range sortedKeys(req.Participants) {
		a.await.Addresses = append(a.await.Addresses, req.Participants[role])
	}

	res := &report.Result{Schema: report.Schema, Domain: sc.Name(), Tasks: []report.TaskResult{}}
	for _, role := range sortedKeys(req.Participants) {
		res.Inputs = append(res.Inputs, role+"="+req.Participants[role])
	}
	if len(tasks) == 0 {
		a.warn("the request selects no tasks (task_ids, num_tasks and the shard leave none)")
	}
	env := &scenario.TaskEnv{Messenger: messenger, Request: req, Progress: a.progress}
	if e.opts.Tools != nil {
		env.Tools = e.opts.Tools
	}
	for i, task := range tasks {
		for run := range repeats {
			if err := ctx.Err(); err != nil {
				recordSpanError(span, context.Cause(ctx), "canceled")
				return nil, fmt.Errorf("assessment %s: %w", a.id, context.Cause(ctx))
			}
			if actx.Err() != nil {
				res.Tasks = append(res.Tasks, notRun(task, context.Cause(actx)))
				continue
			}
			label := fmt.Sprintf("task %d/%d (%s)%s", i+1, len(tasks), task.ID, runLabel(run, repeats))
			tr, err := a.runTask(ctx, actx, env, i, label, task, participants)
			if err != nil {
				recordSpanError(span, err, "canceled")
				return nil, fmt.Errorf("assessment %s: %w", a.id, err)
			}
			res.Tasks = append(res.Tasks, tr)
			verdict := "fail"
			if tr.Outcome != nil && tr.Outcome.Success {
				verdict = "pass"
			}
			a.progress(fmt.Sprintf("task %d/%d%s done: %s %s", i+1, len(tasks), runLabel(run, repeats), task.ID, verdict))
		}
	}
	if repeats > 1 {
		res.Repeats = summarizeRepeats(res.Tasks, repeats)
	}
	if err := ctx.Err(); err != nil {
		recordSpanError(span, context.Cause(ctx), "canceled")
		return nil, fmt.Errorf("assessment %s: %w", a.id, context.Cause(ctx))
	}
	if actx.Err() != nil {
		skipped := 0
		for _, t := range res.Tasks {
			if t.TraceID == "" {
				skipped++
			}
		}
		noun, total := "task", len(tasks)
		if repeats > 1 {
			noun, total = "run", len(tasks)*repeats
		}
		a.warn(fmt.Sprintf("%v: %s of %d recorded as failed without running",
			context.Cause(actx), textutil.Plural(skipped, noun, noun+"s"), total))
	}
	if w := lateSpans(e.opts.Store, res); w != "" {
		a.warn(w)
	}
	if w := refusedSpans(res); w != "" {
		a.warn(w)
	}
	scoreResult(res, a.started)
	res.Warnings = append(res.Warnings, a.warnings...)
	span.SetAttributes(otelmap.AttrScore.Float64(*res.Score))
	e.log.Info("assessment done", "assessment", a.id, "scenario", a.scenario.Name(), "tasks", len(res.Tasks),
		"score", *res.Score, "pass_rate", *res.PassRate)
	return res, nil
}

func (e *Executor) messengerOptions(req *scenario.Request) a2acall.Options {
	opts := e.opts.Messenger
	opts.CallTimeout = req.Config.CallTimeout()
	if opts.Logger == nil {
		opts.Logger = e.log
	}
	return opts
}

// participantNames names every participant as its agent card does, which
// is how the Messenger names it in spans, so that the evaluators count a
// participant that took no part as an isolated agent of the graph. A
// participant whose card cannot be read is named by its role, with a
// warning; its tasks will fail on their own.
func (a *assessment) participantNames(ctx context.Context, m *a2acall.Messenger) []string {
	roles := sortedKeys(a.req.Participants)
	names := make([]string, len(roles))
	errs := make([]error, len(roles))
	ctx, cancel := context.WithTimeout(ctx, min(participantCardTimeout, a.req.Config.CallTimeout()))
	defer cancel()
	var wg sync.WaitGroup
	for i, role := range roles {
		wg.Go(func() {
			// A card is a participant's doing: reading it must not end
			// the server from this goroutine of ours.
			defer func() {
				if r := recover(); r != nil {
					a.e.log.Error("reading a participant's card panicked", "role", role, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					names[i], errs[i] = role, fmt.Errorf("reading the agent card failed unexpectedly: %v", r)
				}
			}()
			info, err := m.Agent(ctx, a.req.Participants[role])
			if err != nil || info.Name == "" {
				names[i], errs[i] = role, err
				return
			}
			names[i] = info.Name
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			a.warn(fmt.Sprintf("participant %s: agent card not read, named by its role: %v", roles[i], err))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// runTask runs task i (one run of it, named label in progress texts) in its
// own trace and assesses it. ctx is the caller's (its end aborts the
// assessment, and is the only error); actx adds the assessment deadline and
// carries the assessment span.
func (a *assessment) runTask(ctx, actx context.Context, env *scenario.TaskEnv, i int, label string, task scenario.Task, participants []string) (report.TaskResult, error) {
	e, cfg := a.e, a.req.Config
	a.setCurrent(label + " running")
	tctx, span := startTaskSpan(actx, e.tracer, task.ID, a.id,
		otelmap.AttrScenario.String(a.scenario.Name()), otelmap.AttrTaskIndex.Int(i))
	// The task's trace is reserved before any participant is called, and
	// recorded until it is assembled (tasktrace.go); the evaluator spans
	// that follow go to the exporters only.
	tt := e.traces.open(span, a.ingestToken)
	defer tt.close()
	a.reserved(tt, task.ID)
	runCtx, cancel := context.WithTimeoutCause(tctx, cfg.TaskTimeout(),
		fmt.Errorf("the task timeout of %s passed", cfg.TaskTimeout()))
	outcome, err := runScenario(runCtx, e.log, a.scenario, env, task)
	timedOut := runCtx.Err() != nil && ctx.Err() == nil
	cause := context.Cause(runCtx)
	cancel()
	if err := ctx.Err(); err != nil {
		span.End()
		return report.TaskResult{}, context.Cause(ctx)
	}

	switch {
	case err != nil:
		if timedOut && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		recordSpanError(span, err, "task_error")
		outcome = &evals.Outcome{
			Summary: "the task could not be run: " + err.Error(),
			Details: map[string]any{"error": err.Error()},
		}
	case outcome == nil:
		outcome = &evals.Outcome{Summary: "the scenario returned no outcome"}
	default:
		outcome = cloneOutcome(outcome)
		if timedOut && !outcome.Success {
			outcome.Summary = strings.TrimSpace(outcome.Summary + " (" + cause.Error() + ")")
		}
	}
	if timedOut {
		if outcome.Details == nil {
			outcome.Details = map[string]any{}
		}
		outcome.Details["timeout"] = cause.Error()
	}
	span.SetAttributes(otelmap.AttrTaskSuccess.Bool(outcome.Success))
	span.End()

	// Settle and evaluate within the assessment deadline; a task the
	// deadline interrupted still gets a short grace to be assessed with
	// what arrived.
	a.setCurrent(label + " being evaluated")
	settle := settleOptions{Quiet: cfg.SettleQuiet(), MaxWait: cfg.SettleMaxWait(), Await: a.settleAwait()}
	evalCtx := actx
	if actx.Err() != nil {
		var gcancel context.CancelFunc
		evalCtx, gcancel = context.WithTimeout(ctx, deadlineGrace)
		defer gcancel()
		settle.MaxWait = min(settle.MaxWait, deadlineSettle)
		settle.Quiet = min(settle.Quiet, settle.MaxWait)
	}
	in := evals.Inputs{Outcome: outcome, Config: cfg.Config, Participants: participants}
	tr, silent, warning, aerr := e.assessor.assess(evalCtx, span, tt, task.ID, settle, in)
	a.assessed = append(a.assessed, span.SpanContext().TraceID())
	if len(silent) > 0 {
		warning += fmt.Sprintf("; the later tasks of this assessment do not wait for %s", strings.Join(silent, ", "))
		for _, c := range silent {
			a.silent[c] = true
		}
	}
	if aerr != nil {
		if err := ctx.Err(); err != nil {
			return report.TaskResult{}, context.Cause(ctx)
		}
		// The deadline cut the settle wait short: keep the outcome and
		// say the trace was not assessed.
		a.warn(fmt.Sprintf("task %s: trace not assessed: %v", task.ID, aerr))
		tr = report.TaskResult{TaskID: task.ID, TraceID: span.SpanContext().TraceID().String(), Outcome: outcome,
			Agents: []tracedata.Agent{}, Interactions: []tracedata.Interaction{}, Steps: []tracedata.Step{}}
	}
	if warning != "" {
		a.warn(warning)
	}
	e.log.Info("task assessed", "assessment", a.id, "task", task.ID, "trace_id", tr.TraceID,
		"success", outcome.Success, "spans", tr.Coverage.Spans, "interactions", tr.Coverage.Interactions,
		"complete", tr.Coverage.Complete)
	return tr, nil
}

// settleAwait is the Await for the next task's trace: the assessment's,
// except the callees that sent no span for a whole earlier task (waiting
// for a participant that exports nothing would cost every task the
// maximum wait). When spans of earlier tasks have arrived late since, the
// participants do export, only slowly: every one is waited for again.
func (a *assessment) settleAwait() *tracestore.Await {
	late := 0
	for _, id := range a.assessed {
		late += a.e.opts.Store.LateSpans(id)
	}
	if late > a.lateSeen {
		a.lateSeen = late
		if len(a.silent) > 0 {
			a.e.log.Info("assessment: spans of earlier tasks arrived late; waiting for every participant again",
				"assessment", a.id, "late_spans", late, "silent", strings.Join(sortedKeys(a.silent), ", "))
			clear(a.silent)
		}
	}
	if len(a.silent) == 0 {
		return a.await
	}
	aw := *a.await
	aw.Except = sortedKeys(a.silent)
	return &aw
}

// scenarioStopGrace is how long a scenario may take to return once its
// task's context has ended before the task is given up (a variable for
// tests).
var scenarioStopGrace = 5 * time.Second

// runScenario runs one task, turning a scenario's bugs into the task's
// failure rather than the server's: a panic becomes an error, and a
// scenario that does not return within scenarioStopGrace of its context
// ending is abandoned (and logged), so the task timeout and the assessment
// deadline hold whatever the scenario does.
func runScenario(ctx context.Context, log *slog.Logger, s scenario.Scenario, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	type ret struct {
		outcome *evals.Outcome
		err     error
	}
	done := make(chan ret, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				log.Error("scenario panicked", "scenario", s.Name(), "task", task.ID, "panic", r, "stack", string(debug.Stack()))
				done <- ret{nil, fmt.Errorf("scenario %s panicked: %v", s.Name(), r)}
			}
		}()
		o, err := s.Run(ctx, env, task)
		done <- ret{o, err}
	}()
	select {
	case r := <-done:
		return r.outcome, r.err
	case <-ctx.Done():
	}
	grace := time.NewTimer(scenarioStopGrace)
	defer grace.Stop()
	select {
	case r := <-done:
		return r.outcome, r.err
	case <-grace.C:
		log.Error("scenario did not return after its task ended; abandoned", "scenario", s.Name(), "task", task.ID, "cause", context.Cause(ctx))
		return nil, fmt.Errorf("scenario %s did not stop within %s after %w", s.Name(), scenarioStopGrace, context.Cause(ctx))
	}
}

// cloneOutcome copies an outcome before the executor annotates it, so a
// scenario may hand out shared values.
func cloneOutcome(o *evals.Outcome) *evals.Outcome {
	c := *o
	if o.Details != nil {
		c.Details = make(map[string]any, len(o.Details))
		for k, v := range o.Details {
			c.Details[k] = v
		}
	}
	return &c
}

// notRun records a task the deadline left no time for.
func notRun(task scenario.Task, cause error) report.TaskResult {
	return report.TaskResult{
		TaskID:       task.ID,
		Agents:       []tracedata.Agent{},
		Interactions: []tracedata.Interaction{},
		Steps:        []tracedata.Step{},
		Outcome: &evals.Outcome{
			Summary: "not run: " + cause.Error() + " before the task started",
			Details: map[string]any{"not_run": true},
		},
	}
}
