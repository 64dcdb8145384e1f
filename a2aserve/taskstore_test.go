package a2aserve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func newTask(state a2a.TaskState) *a2a.Task {
	return &a2a.Task{ID: a2a.NewTaskID(), ContextID: "ctx", Status: a2a.TaskStatus{State: state}}
}

func mustStore(t *testing.T, limits TaskStoreLimits) *TaskStore {
	t.Helper()
	s, err := NewTaskStore(limits)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTaskStoreLimits(t *testing.T) {
	if _, err := NewTaskStore(TaskStoreLimits{MaxTasks: -1}); err == nil {
		t.Error("a negative MaxTasks was accepted")
	}
	if _, err := NewTaskStore(TaskStoreLimits{MaxAge: -time.Second}); err == nil {
		t.Error("a negative MaxAge was accepted")
	}
	s := mustStore(t, TaskStoreLimits{})
	if s.limits.MaxTasks != DefaultMaxTasks || s.limits.MaxAge != DefaultTaskMaxAge {
		t.Errorf("zero limits became %+v, want the defaults", s.limits)
	}
}

// TestTaskStoreAge: settled tasks go MaxAge after their last update;
// running ones stay.
func TestTaskStoreAge(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	s := mustStore(t, TaskStoreLimits{MaxAge: time.Hour, Now: clock.Now})
	done, running, waiting := newTask(a2a.TaskStateCompleted), newTask(a2a.TaskStateWorking), newTask(a2a.TaskStateInputRequired)
	for _, task := range []*a2a.Task{done, running, waiting} {
		if _, err := s.Create(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	clock.now = clock.now.Add(59 * time.Minute)
	if st := s.Stats(); st.Tasks != 3 || st.Settled != 2 {
		t.Fatalf("before the hour: %+v, want 3 held, 2 settled", st)
	}
	// An update renews a task's hour.
	if _, err := s.Update(ctx, &taskstore.UpdateRequest{Task: waiting}); err != nil {
		t.Fatal(err)
	}
	clock.now = clock.now.Add(2 * time.Minute)
	if _, err := s.Get(ctx, done.ID); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("the task done 61 minutes ago: %v, want not found", err)
	}
	for _, task := range []*a2a.Task{running, waiting} {
		if _, err := s.Get(ctx, task.ID); err != nil {
			t.Errorf("task %s: %v", task.Status.State, err)
		}
	}
	clock.now = clock.now.Add(10 * time.Hour)
	if st := s.Stats(); st.Tasks != 2 {
		t.Errorf("stats before any access: %+v", st)
	}
	if _, err := s.Get(ctx, running.ID); err != nil {
		t.Errorf("the running task went after 10 hours: %v", err)
	}
	if st := s.Stats(); st.Tasks != 1 || st.Evicted != 2 {
		t.Errorf("after 10 hours: %+v, want only the running task and 2 dropped", st)
	}
}

// TestTaskStoreCount: past MaxTasks settled tasks, the least recently
// updated goes; a task that runs again leaves the count.
func TestTaskStoreCount(t *testing.T) {
	ctx := context.Background()
	s := mustStore(t, TaskStoreLimits{MaxTasks: 2})
	a, b, c := newTask(a2a.TaskStateCompleted), newTask(a2a.TaskStateFailed), newTask(a2a.TaskStateWorking)
	for _, task := range []*a2a.Task{a, b, c} {
		if _, err := s.Create(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	// a is updated last: b is the oldest settled task now.
	if _, err := s.Update(ctx, &taskstore.UpdateRequest{Task: a, PrevVersion: 1}); err != nil {
		t.Fatal(err)
	}
	c.Status.State = a2a.TaskStateCompleted
	if _, err := s.Update(ctx, &taskstore.UpdateRequest{Task: c}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, b.ID); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("the least recently updated task: %v, want it dropped", err)
	}
	if st := s.Stats(); st.Tasks != 2 || st.Settled != 2 || st.Evicted != 1 {
		t.Errorf("stats %+v", st)
	}
	// A stale version is refused, a current one accepted.
	if _, err := s.Update(ctx, &taskstore.UpdateRequest{Task: a, PrevVersion: 1}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Errorf("update with a stale version: %v", err)
	}
	if _, err := s.Create(ctx, a); !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		t.Errorf("second create: %v", err)
	}
}

// TestTaskStoreCopies: neither side changes what the other holds.
func TestTaskStoreCopies(t *testing.T) {
	ctx := context.Background()
	s := mustStore(t, TaskStoreLimits{})
	task := newTask(a2a.TaskStateCompleted)
	task.Artifacts = []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("x")}}}
	task.Metadata = map[string]any{"k": []any{1.5, "v", map[string]any{"n": true}}}
	if _, err := s.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	task.Artifacts[0].ID = "changed"
	got, err := s.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Artifacts[0].ID != "a" || got.Task.Metadata["k"].([]any)[1] != "v" {
		t.Errorf("stored task %+v changed with the caller's", got.Task)
	}
	got.Task.Artifacts[0].ID = "changed too"
	again, _ := s.Get(ctx, task.ID)
	if again.Task.Artifacts[0].ID != "a" {
		t.Error("a task read from the store changed the stored one")
	}
}

// TestTaskStoreUsers: a listing holds the caller's tasks only; anonymous
// callers share the anonymous tasks.
func TestTaskStoreUsers(t *testing.T) {
	as := func(name string) context.Context {
		ctx, cc := a2asrv.NewCallContext(context.Background(), a2asrv.NewServiceParams(nil))
		if name != "" {
			cc.User = a2asrv.NewAuthenticatedUser(name, nil)
		}
		return ctx
	}
	s := mustStore(t, TaskStoreLimits{})
	for _, user := range []string{"", "", "alice", "bob"} {
		if _, err := s.Create(as(user), newTask(a2a.TaskStateCompleted)); err != nil {
			t.Fatal(err)
		}
	}
	for user, want := range map[string]int{"": 2, "alice": 1, "bob": 1, "carol": 0} {
		res, err := s.List(as(user), &a2a.ListTasksRequest{})
		if err != nil {
			t.Fatalf("list as %q: %v", user, err)
		}
		if len(res.Tasks) != want || res.TotalSize != want {
			t.Errorf("list as %q: %d tasks, want %d", user, len(res.Tasks), want)
		}
	}
	// No call context at all is anonymous too.
	if res, err := s.List(context.Background(), nil); err != nil || len(res.Tasks) != 2 {
		t.Errorf("list without a call context: %v, %v", res, err)
	}
}
