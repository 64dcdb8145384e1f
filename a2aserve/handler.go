package a2aserve

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// terminalAware corrects the errors a2a-go's request handler gives for
// tasks in a terminal state (a2aproject/a2a-go#438, present in v2.3.1):
//   - SubscribeToTask on a finished task answered -32001 task not found
//     ("no active execution": a2asrv/handler.go looks for a running
//     execution only), where A2A 1.0 §3.1.6 gives "UnsupportedOperationError:
//     The operation is attempted on a task that is in a terminal state
//     (completed, failed, canceled, or rejected)";
//   - SendMessage to a finished task answered -32602 invalid params
//     (a2asrv/agentexec.go), where §3.1.1 gives "UnsupportedOperationError:
//     Messages sent to Tasks that are in a terminal state (e.g., completed,
//     canceled, rejected) cannot accept further messages".
//
// Both protocol versions share it: 0.3 has the same error
// (UnsupportedOperationError, -32004).
type terminalAware struct {
	a2asrv.RequestHandler
	store *TaskStore
	push  *Push // nil without push notifications
}

// terminal is the state of task id when it is stored in a terminal state.
func (h *terminalAware) terminal(ctx context.Context, id a2a.TaskID) (a2a.TaskState, bool) {
	if id == "" {
		return "", false
	}
	st, err := h.store.Get(ctx, id)
	if err != nil || !st.Task.Status.State.Terminal() {
		return "", false
	}
	return st.Task.Status.State, true
}

func terminalError(id a2a.TaskID, state a2a.TaskState) error {
	return a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is in the terminal state %s", id, state))
}

// fixSendError turns a2a-go's error for a message to a terminal task into
// UnsupportedOperationError; other errors pass unchanged.
func (h *terminalAware) fixSendError(ctx context.Context, req *a2a.SendMessageRequest, err error) error {
	if err == nil || !errors.Is(err, a2a.ErrInvalidParams) || req == nil || req.Message == nil {
		return err
	}
	if state, ok := h.terminal(ctx, req.Message.TaskID); ok {
		return terminalError(req.Message.TaskID, state)
	}
	return err
}

// SendMessage implements a2asrv.RequestHandler.
func (h *terminalAware) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	res, err := h.RequestHandler.SendMessage(ctx, req)
	return res, h.fixSendError(ctx, req, err)
}

// SendStreamingMessage implements a2asrv.RequestHandler.
func (h *terminalAware) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		for ev, err := range h.RequestHandler.SendStreamingMessage(ctx, req) {
			if !yield(ev, h.fixSendError(ctx, req, err)) {
				return
			}
		}
	}
}

// SubscribeToTask implements a2asrv.RequestHandler. a2a-go attaches a
// subscriber only to a running execution and answers "task not found"
// otherwise; 1.0 §3.1.6 wants the task's current state as the first event
// of every subscription to a task that exists, and UnsupportedOperationError
// for a task in a terminal state. So:
//   - a2a-go found no execution and the store holds the task terminal:
//     UnsupportedOperationError (the store is asked after, not before, so a
//     task that finishes in between is still told apart from one that
//     never was);
//   - a2a-go found no execution and the store holds the task in another
//     state, interrupted (input-required, auth-required: its execution
//     ended until the client answers): the stored task is the stream's one
//     event, which ends it, as a stream of messages ends at an interrupted
//     state;
//   - a2a-go still had the execution registered, but its first event, the
//     stored snapshot, is already terminal. a2a-go saves the final state
//     before it unregisters the execution (internal/taskexec
//     local_manager.go and subscription.go, v2.3.1: Resubscribe attaches,
//     Events yields the snapshot and ends when it is terminal), so a
//     subscriber arriving in that window would otherwise get the finished
//     task as if it were live: UnsupportedOperationError too.
func (h *terminalAware) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		first := true
		for ev, err := range h.RequestHandler.SubscribeToTask(ctx, req) {
			if first && err != nil && errors.Is(err, a2a.ErrTaskNotFound) && req != nil && req.ID != "" {
				if st, gerr := h.store.Get(ctx, req.ID); gerr == nil {
					if state := st.Task.Status.State; state.Terminal() {
						err = terminalError(req.ID, state)
					} else {
						yield(st.Task, nil)
						return
					}
				}
			}
			if first && err == nil {
				if task, ok := ev.(*a2a.Task); ok && task.Status.State.Terminal() {
					yield(nil, terminalError(task.ID, task.Status.State))
					return
				}
				// The same window for an interrupted task: its execution
				// ended at the interruption, and a2a-go, which had not yet
				// unregistered it, followed the snapshot with the
				// execution's last event, the same task again (1 run in 40
				// of TestSubscribeToInterruptedTask). The snapshot is the
				// stream, as when no execution is found.
				if task, ok := ev.(*a2a.Task); ok && interrupted(task.Status.State) {
					yield(task, nil)
					return
				}
			}
			first = false
			if !yield(ev, err) {
				return
			}
		}
	}
}

// interrupted reports whether a task in state s waits for its client
// (input or authentication): its execution has ended until the client
// answers.
func interrupted(s a2a.TaskState) bool {
	return s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

// The push notification config methods answer only for a task the caller
// may see: a config holds the client's token and credentials. a2a-go
// v2.3.1 stores a config for any task id, even one that never was; 1.0
// §3.1.7–3.1.10 give "TaskNotFoundError: The task ID does not exist or is
// not accessible" (0.3 §7.5–7.8 list TaskNotFoundError too). Without push
// support a2a-go answers PushNotificationNotSupportedError first, as §3.3.4
// requires, so the check comes after its own.

// taskVisible is nil when the caller may see task id, else
// TaskNotFoundError.
func (h *terminalAware) taskVisible(ctx context.Context, id a2a.TaskID) error {
	if h.push == nil || h.store.visible(ctx, id) {
		return nil
	}
	return a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %q not found", id))
}

// CreateTaskPushConfig implements a2asrv.RequestHandler.
func (h *terminalAware) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	if req != nil {
		if err := h.taskVisible(ctx, req.TaskID); err != nil {
			return nil, err
		}
	}
	return h.RequestHandler.CreateTaskPushConfig(ctx, req)
}

// GetTaskPushConfig implements a2asrv.RequestHandler.
func (h *terminalAware) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	if req != nil {
		if err := h.taskVisible(ctx, req.TaskID); err != nil {
			return nil, err
		}
	}
	return h.RequestHandler.GetTaskPushConfig(ctx, req)
}

// ListTaskPushConfigs implements a2asrv.RequestHandler.
func (h *terminalAware) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	if req != nil {
		if err := h.taskVisible(ctx, req.TaskID); err != nil {
			return nil, err
		}
	}
	return h.RequestHandler.ListTaskPushConfigs(ctx, req)
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler.
func (h *terminalAware) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	if req != nil {
		if err := h.taskVisible(ctx, req.TaskID); err != nil {
			return err
		}
	}
	return h.RequestHandler.DeleteTaskPushConfig(ctx, req)
}
