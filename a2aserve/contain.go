package a2aserve

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"runtime/debug"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// The a2a-go boundary (docs/operations.md#code-we-hand-a-library):
// everything of ours that a2a-go v2.3.1 calls passes through here, so
// that a panic in it fails one request or one task, never the process.
// What a2a-go runs where, and what recovers it:
//
//   - the executor's Execute and Cancel run in the execution's producer
//     goroutine (internal/taskexec execution_handler.go), which a2a-go
//     recovers into a failed task with no status message; containedExecutor
//     recovers first and ends the task failed with a reason the client can
//     read, after making every event's empty lists survive a2a-go's copies
//     (emptylists.go);
//   - the task store and the push config store run in the execution's
//     setup and cleanup goroutine (local_manager.go handleExecution, and
//     handleCancel), which nothing recovers: a panic there ended the
//     process. containedStore and containedPush recover each call into an
//     internal error;
//   - the request handler's methods run in net/http's goroutine or, for a
//     stream, in a goroutine a2a-go recovers and re-panics in net/http's;
//     with a transport panic handler the request is answered with a
//     JSON-RPC internal error instead of a cut connection;
//   - what a2a-go's own producer and consumer recover (its code, or ours
//     that slipped past the above) goes through the execution panic
//     handler, so it is logged here with its stack.
//
// Every recovered panic is logged with slog, with the stack; the client
// is told only that the server failed.

// panicReason is the status message of a task whose executor panicked.
const panicReason = "internal error: the agent failed unexpectedly while working on this task (the server logged it); the task ends here"

// containment logs recovered panics.
type containment struct{ log *slog.Logger }

// panicked logs a recovered panic of what, with the stack of the
// recovering goroutine, and returns the error the caller is given.
func (c containment) panicked(what string, r any) error {
	c.log.Error("recovered a panic at the a2a-go boundary", "in", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return a2a.NewError(a2a.ErrInternalError, "internal error: the server failed in "+what+" (it is logged)")
}

// guard is deferred by a method that returns an error: a panic becomes
// that error.
func (c containment) guard(what string, err *error) {
	if r := recover(); r != nil {
		*err = c.panicked(what, r)
	}
}

// transportPanic is a2asrv.WithTransportPanicHandler's handler.
func (c containment) transportPanic(r any) error { return c.panicked("a JSON-RPC request", r) }

// executionPanic is a2asrv.WithExecutionPanicHandler's handler.
func (c containment) executionPanic(r any) error { return c.panicked("a task's execution", r) }

// containedExecutor is the executor as a2a-go sees it.
type containedExecutor struct {
	next a2asrv.AgentExecutor
	c    containment
}

// Execute implements a2asrv.AgentExecutor: the executor's events with
// their empty lists kept; a panic in the executor ends the task failed,
// with panicReason as its status message.
func (x containedExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s := &eventStream{yield: yield, hasTask: ec != nil && ec.StoredTask != nil}
		defer func() {
			if r := recover(); r != nil {
				if s.inYield {
					panic(r) // a2a-go's, raised while it took an event: its producer recovers it
				}
				_ = x.c.panicked("the agent executor", r)
				if ec != nil {
					s.send(failedEvent(ec, s.hasTask), nil)
				}
			}
		}()
		for ev, err := range x.next.Execute(ctx, ec) {
			if !s.send(ev, err) {
				return
			}
		}
	}
}

// Cancel implements a2asrv.AgentExecutor: a panic in the executor's
// Cancel fails the cancel request with an internal error.
func (x containedExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s := &eventStream{yield: yield, hasTask: true}
		defer func() {
			if r := recover(); r != nil {
				if s.inYield {
					panic(r)
				}
				s.send(nil, x.c.panicked("the agent executor's Cancel", r))
			}
		}()
		for ev, err := range x.next.Cancel(ctx, ec) {
			if !s.send(ev, err) {
				return
			}
		}
	}
}

// eventStream hands events to a2a-go and remembers what it may still do:
// nothing after a2a-go stopped taking events or after a final one, and a
// Task first when none exists yet.
type eventStream struct {
	yield   func(a2a.Event, error) bool
	inYield bool
	done    bool // a2a-go stopped, or the event was final
	hasTask bool
}

func (s *eventStream) send(ev a2a.Event, err error) bool {
	if s.done {
		return false
	}
	if ev != nil {
		ev = keepEmptyLists(ev)
	}
	s.inYield = true
	ok := s.yield(ev, err)
	s.inYield = false
	if _, isTask := ev.(*a2a.Task); isTask {
		s.hasTask = true
	}
	s.done = !ok || final(ev)
	return !s.done
}

// final reports whether a2a-go ends the execution at ev (its
// internal/taskupdate IsFinal): a message, or a task or status in a
// terminal or interrupted state.
func final(ev a2a.Event) bool {
	var state a2a.TaskState
	switch v := ev.(type) {
	case *a2a.Message:
		return true
	case *a2a.Task:
		state = v.Status.State
	case *a2a.TaskStatusUpdateEvent:
		state = v.Status.State
	default:
		return false
	}
	return state.Terminal() || state == a2a.TaskStateInputRequired || state == a2a.TaskStateAuthRequired
}

// failedEvent ends a task whose executor panicked: a status update, or
// the failed task itself when no task exists yet (a2a-go takes a status
// update only for a task it has).
func failedEvent(ec *a2asrv.ExecutorContext, hasTask bool) a2a.Event {
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(panicReason))
	ev := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg)
	if hasTask {
		return ev
	}
	task := a2a.NewSubmittedTask(ec, ec.Message)
	task.Status = ev.Status
	return task
}

// containedStore is the task store as a2a-go sees it.
type containedStore struct {
	next taskstore.Store
	c    containment
}

var _ taskstore.Store = containedStore{}

func (s containedStore) Create(ctx context.Context, task *a2a.Task) (v taskstore.TaskVersion, err error) {
	defer s.c.guard("the task store's Create", &err)
	return s.next.Create(ctx, task)
}

func (s containedStore) Update(ctx context.Context, req *taskstore.UpdateRequest) (v taskstore.TaskVersion, err error) {
	defer s.c.guard("the task store's Update", &err)
	return s.next.Update(ctx, req)
}

func (s containedStore) Get(ctx context.Context, id a2a.TaskID) (t *taskstore.StoredTask, err error) {
	defer s.c.guard("the task store's Get", &err)
	return s.next.Get(ctx, id)
}

func (s containedStore) List(ctx context.Context, req *a2a.ListTasksRequest) (r *a2a.ListTasksResponse, err error) {
	defer s.c.guard("the task store's List", &err)
	return s.next.List(ctx, req)
}

// containedPush is the push config store and sender as a2a-go sees them.
type containedPush struct {
	next *Push
	c    containment
}

var (
	_ push.ConfigStore = containedPush{}
	_ push.Sender      = containedPush{}
)

func (p containedPush) Save(ctx context.Context, id a2a.TaskID, config *a2a.PushConfig) (c *a2a.PushConfig, err error) {
	defer p.c.guard("the push config store's Save", &err)
	return p.next.Save(ctx, id, config)
}

func (p containedPush) Get(ctx context.Context, id a2a.TaskID, configID string) (c *a2a.PushConfig, err error) {
	defer p.c.guard("the push config store's Get", &err)
	return p.next.Get(ctx, id, configID)
}

func (p containedPush) List(ctx context.Context, id a2a.TaskID) (cs []*a2a.PushConfig, err error) {
	defer p.c.guard("the push config store's List", &err)
	return p.next.List(ctx, id)
}

func (p containedPush) Delete(ctx context.Context, id a2a.TaskID, configID string) (err error) {
	defer p.c.guard("the push config store's Delete", &err)
	return p.next.Delete(ctx, id, configID)
}

func (p containedPush) DeleteAll(ctx context.Context, id a2a.TaskID) (err error) {
	defer p.c.guard("the push config store's DeleteAll", &err)
	return p.next.DeleteAll(ctx, id)
}

// SendPush never fails the task (Push queues and returns); a panic in it
// loses that notification only, and is logged.
func (p containedPush) SendPush(ctx context.Context, config *a2a.PushConfig, event a2a.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			_ = p.c.panicked("the push sender", r)
			p.next.dropped.Add(1)
			err = nil
		}
	}()
	return p.next.SendPush(ctx, config, event)
}
