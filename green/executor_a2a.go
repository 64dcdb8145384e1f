package green

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
)

// The executor as an a2asrv.AgentExecutor: one A2A message holding an
// assessment request becomes one A2A task; cancel and shutdown end it with
// a status.

// Execute implements a2asrv.AgentExecutor: it parses the request in the
// message, runs the assessment, and turns its progress and result into
// A2A events. Every path ends with a terminal status: rejected with the
// expected format for a bad request, completed after the Result artifact,
// failed with the cause, or canceled.
func (e *Executor) Execute(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if execCtx.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(execCtx, execCtx.Message), nil) {
				return
			}
		}
		req, err := ParseRequest(requestText(execCtx.Message))
		if err != nil {
			e.log.Info("assessment request rejected", "task", execCtx.TaskID, "err", firstLine(err.Error()))
			yield(statusEvent(execCtx, a2a.TaskStateRejected, err.Error()), nil)
			return
		}

		runCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		if err := e.track(execCtx.TaskID, cancel); err != nil {
			yield(statusEvent(execCtx, a2a.TaskStateFailed, "assessment not started: "+err.Error()), nil)
			return
		}
		defer e.untrack(execCtx.TaskID)

		type ending struct {
			res *report.Result
			err error
		}
		updates := make(chan string)
		done := make(chan ending, 1)
		// finished releases a progress call that comes after the end (from
		// a scenario that was abandoned).
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			// The assessment's own code (assembly, evaluators, the report)
			// runs here, in a goroutine of ours started from a2a-go's: a
			// panic in it fails this task, not the server.
			defer func() {
				if r := recover(); r != nil {
					e.log.Error("assessment panicked", "task", execCtx.TaskID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					done <- ending{nil, fmt.Errorf("internal error: the assessment failed unexpectedly (the green agent logged it): %v", r)}
				}
			}()
			res, err := e.assess(runCtx, req, func(text string) {
				select {
				case updates <- text:
				case <-runCtx.Done():
				case <-finished:
				}
			}, string(execCtx.TaskID))
			done <- ending{res, err}
		}()
		var end ending
	loop:
		for {
			select {
			case text := <-updates:
				if !yield(statusEvent(execCtx, a2a.TaskStateWorking, text), nil) {
					cancel(errStreamClosed)
					<-done
					return
				}
			case end = <-done:
				break loop
			}
		}

		var reqErr *scenario.RequestError
		switch {
		case end.err == nil:
			art, err := ResultArtifactEvent(execCtx, end.res)
			if err != nil {
				yield(statusEvent(execCtx, a2a.TaskStateFailed, "assessment failed: "+err.Error()), nil)
				return
			}
			if !yield(art, nil) {
				return
			}
			yield(statusEvent(execCtx, a2a.TaskStateCompleted, completionText(end.res)), nil)
		case errors.As(end.err, &reqErr):
			e.log.Info("assessment request rejected", "task", execCtx.TaskID, "err", firstLine(end.err.Error()))
			yield(statusEvent(execCtx, a2a.TaskStateRejected, end.err.Error()), nil)
		case errors.Is(context.Cause(runCtx), errCanceledByClient):
			// Cancel has written the canceled status; this one is only
			// read if that write failed.
			yield(statusEvent(execCtx, a2a.TaskStateCanceled, errCanceledByClient.Error()), nil)
		default:
			e.log.Warn("assessment failed", "task", execCtx.TaskID, "err", end.err)
			yield(statusEvent(execCtx, a2a.TaskStateFailed, "assessment failed: "+end.err.Error()), nil)
		}
	}
}

// Cancel implements a2asrv.AgentExecutor: it writes the canceled status,
// then ends the running assessment's context, so the assessment stops
// (its participants' calls are abandoned) and its task stays canceled.
func (e *Executor) Cancel(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		defer e.cancelRun(execCtx.TaskID, errCanceledByClient)
		yield(statusEvent(execCtx, a2a.TaskStateCanceled, "assessment canceled at the client's request"), nil)
	}
}

// Shutdown ends every running assessment with cause (their tasks end
// failed with it) and fails every later one at once. The server calls it
// when it stops, so open streams end with a status rather than being cut.
func (e *Executor) Shutdown(cause error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = cause
	for _, cancel := range e.running {
		cancel(cause)
	}
}

// Running is the number of assessments under way.
func (e *Executor) Running() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// track registers a running assessment; after Shutdown it refuses, with
// the shutdown's cause.
func (e *Executor) track(id a2a.TaskID, cancel context.CancelCauseFunc) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed != nil {
		return e.closed
	}
	e.running[id] = cancel
	return nil
}

func (e *Executor) untrack(id a2a.TaskID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.running, id)
}

func (e *Executor) cancelRun(id a2a.TaskID, cause error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cancel, ok := e.running[id]; ok {
		cancel(cause)
	}
}

// requestText is the request a message carries: its text parts joined, or,
// when it has none, its first data part as JSON (a client may send the
// AgentBeats request as structured data).
func requestText(msg *a2a.Message) string {
	if msg == nil {
		return ""
	}
	var texts []string
	for _, p := range msg.Parts {
		if t := p.Text(); t != "" {
			texts = append(texts, t)
		}
	}
	if len(texts) > 0 {
		return strings.Join(texts, "\n")
	}
	for _, p := range msg.Parts {
		if d := p.Data(); d != nil {
			if raw, err := jsonMarshal(d); err == nil {
				return string(raw)
			}
		}
	}
	return ""
}

// statusEvent is a status update whose message says what happened.
func statusEvent(execCtx *a2asrv.ExecutorContext, state a2a.TaskState, text string) *a2a.TaskStatusUpdateEvent {
	return a2a.NewStatusUpdateEvent(execCtx, state,
		a2a.NewMessageForTask(a2a.MessageRoleAgent, execCtx, a2a.NewTextPart(text)))
}

// completionText is the final status message: the headline numbers.
func completionText(res *report.Result) string {
	passed := 0
	for _, t := range res.Tasks {
		if t.Outcome != nil && t.Outcome.Success {
			passed++
		}
	}
	return fmt.Sprintf("assessment completed: score %s / %s, %d of %d tasks passed; the %s artifact holds the summary and the JSON result",
		textutil.Number(deref0(res.Score)), textutil.Number(deref0(res.MaxScore)), passed, len(res.Tasks), ResultArtifactName)
}

func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
