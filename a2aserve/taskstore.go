package a2aserve

import (
	"bytes"
	"container/list"
	"context"
	"encoding/base64"
	"encoding/gob"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// Task store defaults.
const (
	// DefaultMaxTasks is how many settled tasks a TaskStore keeps: about
	// 35 MB of the green agent's assessments (≈130 KB each).
	DefaultMaxTasks = 256
	// DefaultTaskMaxAge is how long a settled task is kept after its last
	// update.
	DefaultTaskMaxAge = time.Hour
)

// ListTasks page sizes (A2A 1.0 ListTasksRequest.page_size: "If
// unspecified, at most 50 tasks will be returned. The minimum value is 1.
// The maximum value is 100.").
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// TaskStoreLimits bound what a TaskStore keeps. The zero value is the
// defaults.
type TaskStoreLimits struct {
	// MaxTasks bounds the settled tasks kept (finished — completed,
	// failed, canceled, rejected — or waiting for input or
	// authentication); past it the least recently updated go first.
	// Tasks still running are never dropped. It should exceed the number
	// of tasks that may finish at once. Default DefaultMaxTasks.
	MaxTasks int
	// MaxAge drops a settled task this long after its last update.
	// Default DefaultTaskMaxAge.
	MaxAge time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// TaskStore is the A2A handler's task store: a2a-go's in-memory store
// (taskstore.InMemory) with two changes.
//
// It is bounded. a2a-go v2.3.1's InMemory keeps every task forever and has
// no way to delete one; a server that runs assessments for days grew by
// the size of each (about 130 KB) until it was restarted. TaskStore drops
// settled tasks past TaskStoreLimits.MaxTasks and MaxAge, oldest first.
// A dropped task is not found any more.
//
// It lets an anonymous deployment list its tasks. InMemory.List answers
// ErrUnauthenticated (-31401) to any caller without a user name, and
// a2asrv's default authenticator names a user only when authentication
// middleware set one: with no security scheme on the card, ListTasks
// failed for every caller. TaskStore scopes a listing to the caller's user
// name as InMemory does (A2A 1.0 §13.1), the empty name included: an
// anonymous caller sees the anonymous tasks, an authenticated one only its
// own.
type TaskStore struct {
	limits TaskStoreLimits

	mu      sync.Mutex
	tasks   map[a2a.TaskID]*storedTask
	settled *list.List // of *storedTask, least recently updated first
	evicted uint64
	// onDrop, when set, is told of each task dropped, with mu held: it
	// must not call the store (Push drops the task's configs).
	onDrop func(a2a.TaskID)
}

type storedTask struct {
	task    *a2a.Task
	version taskstore.TaskVersion
	user    string
	updated time.Time
	elem    *list.Element // in settled, nil while running
}

var _ taskstore.Store = (*TaskStore)(nil)

// NewTaskStore returns an empty store; zero limits take their defaults,
// negative ones are an error.
func NewTaskStore(limits TaskStoreLimits) (*TaskStore, error) {
	if limits.MaxTasks < 0 || limits.MaxAge < 0 {
		return nil, fmt.Errorf("a2aserve: task store limits must not be negative (max tasks %d, max age %s)", limits.MaxTasks, limits.MaxAge)
	}
	if limits.MaxTasks == 0 {
		limits.MaxTasks = DefaultMaxTasks
	}
	if limits.MaxAge == 0 {
		limits.MaxAge = DefaultTaskMaxAge
	}
	if limits.Now == nil {
		limits.Now = time.Now
	}
	return &TaskStore{limits: limits, tasks: map[a2a.TaskID]*storedTask{}, settled: list.New()}, nil
}

// settles reports whether a task in state s is done with its execution for
// now, so that the store may drop it.
func settles(s a2a.TaskState) bool {
	return s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

// userOf is the name of the caller, "" for an anonymous one.
func userOf(ctx context.Context) string {
	if cc, ok := a2asrv.CallContextFrom(ctx); ok && cc.User != nil {
		return cc.User.Name
	}
	return ""
}

// Create implements taskstore.Store.
func (s *TaskStore) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	if task == nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("create task: no task: %w", a2a.ErrInvalidParams)
	}
	c, err := copyTask(task)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks[task.ID] != nil {
		return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
	}
	st := &storedTask{task: c, version: 1, user: userOf(ctx)}
	s.tasks[task.ID] = st
	s.touch(st)
	return st.version, nil
}

// Update implements taskstore.Store.
func (s *TaskStore) Update(_ context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	if req == nil || req.Task == nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("update task: no task: %w", a2a.ErrInvalidParams)
	}
	c, err := copyTask(req.Task)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.tasks[req.Task.ID]
	if st == nil {
		return taskstore.TaskVersionMissing, a2a.ErrTaskNotFound
	}
	if req.PrevVersion != taskstore.TaskVersionMissing && st.version != req.PrevVersion {
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	st.task = c
	st.version++
	s.touch(st)
	return st.version, nil
}

// touch records an update of st now and drops what the limits no longer
// allow. s.mu is held.
func (s *TaskStore) touch(st *storedTask) {
	now := s.limits.Now()
	st.updated = now
	if st.elem != nil {
		s.settled.Remove(st.elem)
		st.elem = nil
	}
	if settles(st.task.Status.State) {
		st.elem = s.settled.PushBack(st)
	}
	s.evict(now)
}

// evict drops the settled tasks past the limits at now. s.mu is held.
func (s *TaskStore) evict(now time.Time) {
	for e := s.settled.Front(); e != nil; e = s.settled.Front() {
		st := e.Value.(*storedTask)
		if s.settled.Len() <= s.limits.MaxTasks && now.Sub(st.updated) < s.limits.MaxAge {
			return
		}
		s.settled.Remove(e)
		delete(s.tasks, st.task.ID)
		s.evicted++
		if s.onDrop != nil {
			s.onDrop(st.task.ID)
		}
	}
}

func (s *TaskStore) setOnDrop(f func(a2a.TaskID)) {
	s.mu.Lock()
	s.onDrop = f
	s.mu.Unlock()
}

// visible reports whether task id is stored and was created by the caller
// of ctx (the anonymous caller included), the same scope List keeps
// (A2A 1.0 §13.1).
func (s *TaskStore) visible(ctx context.Context, id a2a.TaskID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evict(s.limits.Now())
	st := s.tasks[id]
	return st != nil && st.user == userOf(ctx)
}

// Get implements taskstore.Store.
func (s *TaskStore) Get(_ context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	s.mu.Lock()
	s.evict(s.limits.Now())
	st := s.tasks[id]
	var task *a2a.Task
	var version taskstore.TaskVersion
	if st != nil {
		task, version = st.task, st.version
	}
	s.mu.Unlock()
	if task == nil {
		return nil, a2a.ErrTaskNotFound
	}
	c, err := copyTask(task) // stored copies are never changed, only replaced
	if err != nil {
		return nil, err
	}
	return &taskstore.StoredTask{Task: c, Version: version}, nil
}

// List implements taskstore.Store: the caller's tasks, most recently
// updated status first (A2A 1.0 §3.1.4), a page at a time.
func (s *TaskStore) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	if req == nil {
		req = &a2a.ListTasksRequest{}
	}
	pageSize := req.PageSize
	if pageSize == 0 {
		pageSize = defaultPageSize
	}
	if pageSize < 1 || pageSize > maxPageSize {
		return nil, fmt.Errorf("pageSize must be between 1 and %d, got %d: %w", maxPageSize, req.PageSize, a2a.ErrInvalidParams)
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, fmt.Errorf("historyLength must not be negative, got %d: %w", *req.HistoryLength, a2a.ErrInvalidParams)
	}
	var after *cursor
	if req.PageToken != "" {
		c, err := decodeCursor(req.PageToken)
		if err != nil {
			return nil, fmt.Errorf("pageToken: %w: %w", err, a2a.ErrInvalidParams)
		}
		after = &c
	}
	user := userOf(ctx)

	type row struct {
		at   cursor
		task *a2a.Task
	}
	s.mu.Lock()
	s.evict(s.limits.Now())
	var rows []row
	for _, st := range s.tasks {
		t := st.task
		switch {
		case st.user != user,
			req.ContextID != "" && t.ContextID != req.ContextID,
			req.Status != a2a.TaskStateUnspecified && t.Status.State != req.Status,
			req.StatusTimestampAfter != nil && t.Status.Timestamp != nil && t.Status.Timestamp.Before(*req.StatusTimestampAfter):
			continue
		}
		at := st.updated
		if t.Status.Timestamp != nil {
			at = *t.Status.Timestamp
		}
		rows = append(rows, row{at: cursor{at: at, id: t.ID}, task: t})
	}
	s.mu.Unlock()

	slices.SortFunc(rows, func(a, b row) int { return b.at.compare(a.at) })
	total := len(rows)
	if after != nil {
		i, _ := slices.BinarySearchFunc(rows, *after, func(r row, c cursor) int { return c.compare(r.at) })
		for i < len(rows) && rows[i].at.compare(*after) == 0 {
			i++
		}
		rows = rows[i:]
	}
	next := ""
	if len(rows) > pageSize {
		rows = rows[:pageSize]
		next = rows[pageSize-1].at.encode()
	}
	tasks := make([]*a2a.Task, 0, len(rows))
	for _, r := range rows {
		c, err := copyTask(r.task)
		if err != nil {
			return nil, err
		}
		if req.HistoryLength != nil && len(c.History) > *req.HistoryLength {
			c.History = c.History[len(c.History)-*req.HistoryLength:]
		}
		if !req.IncludeArtifacts {
			c.Artifacts = nil
		}
		tasks = append(tasks, c)
	}
	return &a2a.ListTasksResponse{Tasks: tasks, TotalSize: total, PageSize: pageSize, NextPageToken: next}, nil
}

// TaskStoreStats count what a TaskStore holds.
type TaskStoreStats struct {
	// Tasks are the tasks held, Settled those of them that may be
	// dropped, Evicted the tasks dropped so far.
	Tasks, Settled int
	Evicted        uint64
}

// Stats counts what the store holds now.
func (s *TaskStore) Stats() TaskStoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return TaskStoreStats{Tasks: len(s.tasks), Settled: s.settled.Len(), Evicted: s.evicted}
}

// cursor orders tasks for a listing: status time, then id.
type cursor struct {
	at time.Time
	id a2a.TaskID
}

// compare orders c before d when it is earlier.
func (c cursor) compare(d cursor) int {
	if n := c.at.Compare(d.at); n != 0 {
		return n
	}
	return strings.Compare(string(c.id), string(d.id))
}

func (c cursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.at.UnixNano(), 10) + " " + string(c.id)))
}

func decodeCursor(token string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return cursor{}, errors.New("not a token this agent issued")
	}
	ns, id, ok := strings.Cut(string(b), " ")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return cursor{}, errors.New("not a token this agent issued")
	}
	return cursor{at: time.Unix(0, n), id: a2a.TaskID(id)}, nil
}

// copyTask deep-copies a task the way a2a-go's stores do (gob; a2a
// registers its part types with gob, taskstore the generic metadata
// values), so that neither the caller nor the store changes what the other
// holds; its values are first made ones gob copies faithfully, empty lists
// included (emptylists.go).
func copyTask(t *a2a.Task) (*a2a.Task, error) {
	var buf bytes.Buffer
	kept, _ := taskValues(t)
	if err := gob.NewEncoder(&buf).Encode(kept); err != nil {
		return nil, fmt.Errorf("copy task %s: %w", t.ID, err)
	}
	var c a2a.Task
	if err := gob.NewDecoder(&buf).Decode(&c); err != nil {
		return nil, fmt.Errorf("copy task %s: %w", t.ID, err)
	}
	return &c, nil
}
