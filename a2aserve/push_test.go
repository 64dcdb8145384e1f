package a2aserve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/coordbench/coordbench/internal/testenv"
)

// webhook is a real webhook receiver on loopback: it records each request
// and answers what answer says for the n-th (1-based) request.
type webhook struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter, r *http.Request)
	notify chan struct{}
}

type received struct {
	header http.Header
	body   []byte
}

func newWebhook(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *webhook {
	t.Helper()
	h := &webhook{answer: answer, notify: make(chan struct{}, 1024)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, received{header: r.Header.Clone(), body: body})
		n := len(h.got)
		h.mu.Unlock()
		if h.answer != nil {
			h.answer(n, w, r)
		}
		h.notify <- struct{}{}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *webhook) requests() []received {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]received(nil), h.got...)
}

// waitFor waits until cond holds of the requests received, failing after a
// generous bound (the machine may be very slow).
func (h *webhook) waitFor(t *testing.T, what string, cond func([]received) bool) []received {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if got := h.requests(); cond(got) {
			return got
		}
		select {
		case <-h.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("webhook: %s not seen; got %d requests", what, len(h.requests()))
		}
	}
}

// fastPush is a Push whose waits are short, closed (and checked for
// leaked goroutines) when the test ends.
func fastPush(t *testing.T, opts PushOptions) *Push {
	t.Helper()
	before := runtime.NumGoroutine()
	if opts.InitialBackoff == 0 {
		opts.InitialBackoff = time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 4 * time.Millisecond
	}
	p, err := NewPush(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		p.opts.Transport.(*http.Transport).CloseIdleConnections()
		testenv.CheckNoGoroutineLeak(t, before)
	})
	return p
}

// newPushServer serves testExecutor with push notifications on.
func newPushServer(t *testing.T, p *Push) *testServer {
	t.Helper()
	store, err := NewTaskStore(TaskStoreLimits{})
	if err != nil {
		t.Fatal(err)
	}
	card := testCard("http://127.0.0.1/")
	card.Capabilities.PushNotifications = true
	exec := &testExecutor{}
	mux, err := NewHandler(Options{Card: card, Executor: exec, TaskStore: store, Push: p})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, exec: exec, store: store}
}

func TestNewHandlerPushMustMatchCard(t *testing.T) {
	p := fastPush(t, PushOptions{})
	card := testCard("http://127.0.0.1/")
	if _, err := NewHandler(Options{Card: card, Executor: &testExecutor{}, Push: p}); err == nil {
		t.Error("a Push with a card that does not declare pushNotifications was accepted")
	}
	card.Capabilities.PushNotifications = true
	if _, err := NewHandler(Options{Card: card, Executor: &testExecutor{}}); err == nil {
		t.Error("a card declaring pushNotifications without a Push was accepted")
	}
}

func TestPushConfigMethods10(t *testing.T) {
	p := fastPush(t, PushOptions{MaxConfigsPerTask: 2})
	srv := newPushServer(t, p)
	task := send(t, srv, "done")
	id := string(task.ID)
	v1 := []string{"A2A-Version", "1.0"}

	r := call(t, srv, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","id":"a","url":"https://example.com/hook","token":"tok"}`, v1...)
	if r.Error != nil {
		t.Fatalf("create: %d %s", r.code(), r.Error.Message)
	}
	var created a2a.PushConfig
	if err := json.Unmarshal(r.Result, &created); err != nil || created.ID != "a" || string(created.TaskID) != id || created.Token != "tok" {
		t.Fatalf("create answered %s (%v)", r.Result, err)
	}
	// No id: the server gives one.
	r = call(t, srv, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","url":"https://example.com/other"}`, v1...)
	var second a2a.PushConfig
	if r.Error != nil || json.Unmarshal(r.Result, &second) != nil || second.ID == "" {
		t.Fatalf("create without id answered %s %+v", r.Result, r.Error)
	}
	// The bound: a third config is refused, replacing one is not.
	if r = call(t, srv, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","id":"c","url":"https://example.com/c"}`, v1...); r.code() != codeInvalidParams {
		t.Errorf("third config: code %d, want %d", r.code(), codeInvalidParams)
	}
	if r = call(t, srv, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","id":"a","url":"https://example.com/replaced"}`, v1...); r.Error != nil {
		t.Errorf("replacing config a: %s", r.Error.Message)
	}

	r = call(t, srv, "GetTaskPushNotificationConfig", `{"taskId":"`+id+`","id":"a"}`, v1...)
	var got a2a.PushConfig
	if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || got.URL != "https://example.com/replaced" {
		t.Fatalf("get answered %s %+v", r.Result, r.Error)
	}
	r = call(t, srv, "ListTaskPushNotificationConfigs", `{"taskId":"`+id+`"}`, v1...)
	var list a2a.ListTaskPushConfigResponse
	if r.Error != nil || json.Unmarshal(r.Result, &list) != nil || len(list.Configs) != 2 || list.Configs[0].ID != "a" || list.Configs[1].ID != second.ID {
		t.Fatalf("list answered %s %+v", r.Result, r.Error)
	}

	for range 2 { // idempotent (1.0 §3.1.10)
		if r = call(t, srv, "DeleteTaskPushNotificationConfig", `{"taskId":"`+id+`","id":"a"}`, v1...); r.Error != nil {
			t.Fatalf("delete: %s", r.Error.Message)
		}
	}
	if r = call(t, srv, "GetTaskPushNotificationConfig", `{"taskId":"`+id+`","id":"a"}`, v1...); r.code() != -32001 {
		t.Errorf("get after delete: code %d, want -32001 TaskNotFoundError (1.0 §3.1.8)", r.code())
	}
	// 1.0 requires the id: an empty one names no config.
	if r = call(t, srv, "GetTaskPushNotificationConfig", `{"taskId":"`+id+`","id":""}`, v1...); r.code() != -32001 {
		t.Errorf("get with an empty id: code %d, want -32001", r.code())
	}

	// The proto field names, as the conformance suite's client sends them
	// (ProtoJSON parsers accept both).
	if r = call(t, srv, "CreateTaskPushNotificationConfig", `{"task_id":"`+id+`","id":"snake","url":"https://example.com/s"}`, v1...); r.Error != nil {
		t.Errorf("create with task_id: %s", r.Error.Message)
	}
	if r = call(t, srv, "GetTaskPushNotificationConfig", `{"task_id":"`+id+`","id":"snake"}`, v1...); r.Error != nil {
		t.Errorf("get with task_id: %s", r.Error.Message)
	}
	if r = call(t, srv, "ListTaskPushNotificationConfigs", `{"task_id":"`+id+`","page_size":5}`, v1...); r.Error != nil || !strings.Contains(string(r.Result), `"snake"`) {
		t.Errorf("list with task_id: %s %+v", r.Result, r.Error)
	}
	if r = call(t, srv, "DeleteTaskPushNotificationConfig", `{"task_id":"`+id+`","id":"snake"}`, v1...); r.Error != nil {
		t.Errorf("delete with task_id: %s", r.Error.Message)
	}

	// A task that never was, for every method.
	for _, m := range []struct{ method, params string }{
		{"CreateTaskPushNotificationConfig", `{"taskId":"nope","url":"https://example.com/hook"}`},
		{"GetTaskPushNotificationConfig", `{"taskId":"nope","id":"a"}`},
		{"ListTaskPushNotificationConfigs", `{"taskId":"nope"}`},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"nope","id":"a"}`},
	} {
		if r = call(t, srv, m.method, m.params, v1...); r.code() != -32001 {
			t.Errorf("%s on an unknown task: code %d, want -32001", m.method, r.code())
		}
	}
	if n := p.Stats().Configs; n != 1 {
		t.Errorf("%d configs held, want 1", n)
	}
}

func TestPushConfigRefused(t *testing.T) {
	refuse := errors.New("host not allowed")
	p := fastPush(t, PushOptions{CheckURL: func(raw string) error {
		if strings.Contains(raw, "forbidden.example") {
			return refuse
		}
		return nil
	}})
	srv := newPushServer(t, p)
	id := string(send(t, srv, "done").ID)
	for _, c := range []struct{ name, config string }{
		{"not allowed", `"url":"https://forbidden.example/hook"`},
		{"no url", `"token":"t"`},
		{"relative url", `"url":"/hook"`},
		{"not http", `"url":"ftp://example.com/hook"`},
		{"file", `"url":"file:///etc/passwd"`},
		{"no host", `"url":"http:///hook"`},
		{"long url", `"url":"https://example.com/` + strings.Repeat("a", maxWebhookURL) + `"`},
		{"token with a newline", `"url":"https://example.com/h","token":"a\r\nX-Evil: 1"`},
		{"credentials with a newline", `"url":"https://example.com/h","authentication":{"scheme":"Bearer","credentials":"a\nb"}}`},
		{"scheme not a token", `"url":"https://example.com/h","authentication":{"scheme":"Bearer x","credentials":"c"}`},
		{"credentials without scheme", `"url":"https://example.com/h","authentication":{"scheme":"","credentials":"c"}`},
		{"long id", `"url":"https://example.com/h","id":"` + strings.Repeat("i", maxPushConfigID+1) + `"`},
	} {
		r := call(t, srv, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`",`+c.config+`}`, "A2A-Version", "1.0")
		if r.code() != codeInvalidParams {
			t.Errorf("%s: code %d, want %d", c.name, r.code(), codeInvalidParams)
		}
	}
	// Inline with a message: the message is refused before any work.
	runs := srv.exec.runs.Load()
	r := call(t, srv, "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"done"}]},`+
		`"configuration":{"taskPushNotificationConfig":{"url":"https://forbidden.example/hook"}}}`, "A2A-Version", "1.0")
	if r.code() != codeInvalidParams {
		t.Errorf("SendMessage with a refused webhook: code %d, want %d", r.code(), codeInvalidParams)
	}
	if srv.exec.runs.Load() != runs {
		t.Error("the executor ran for a message whose webhook was refused")
	}
	if n := p.Stats().Configs; n != 0 {
		t.Errorf("%d configs stored, want 0", n)
	}
}

func TestPushConfigMethods03(t *testing.T) {
	p := fastPush(t, PushOptions{})
	srv := newPushServer(t, p)
	id := string(send(t, srv, "done").ID)
	r := call(t, srv, "tasks/pushNotificationConfig/set", `{"taskId":"`+id+`","pushNotificationConfig":{"id":"x","url":"https://example.com/hook","token":"t",`+
		`"authentication":{"schemes":["Bearer"],"credentials":"c"}}}`)
	if r.Error != nil {
		t.Fatalf("set: %s", r.Error.Message)
	}
	var set struct {
		TaskID string `json:"taskId"`
		Config struct {
			ID, URL, Token string
			Auth           struct {
				Schemes     []string `json:"schemes"`
				Credentials string   `json:"credentials"`
			} `json:"authentication"`
		} `json:"pushNotificationConfig"`
	}
	if err := json.Unmarshal(r.Result, &set); err != nil || set.TaskID != id || set.Config.ID != "x" || set.Config.Auth.Schemes[0] != "Bearer" {
		t.Fatalf("set answered %s (%v)", r.Result, err)
	}
	// 0.3 §7.6.1: without a config id, one of the task's configs.
	for _, params := range []string{`{"id":"` + id + `","pushNotificationConfigId":"x"}`, `{"id":"` + id + `"}`} {
		if r = call(t, srv, "tasks/pushNotificationConfig/get", params); r.Error != nil || !strings.Contains(string(r.Result), `"url":"https://example.com/hook"`) {
			t.Errorf("get %s answered %s %+v", params, r.Result, r.Error)
		}
	}
	if r = call(t, srv, "tasks/pushNotificationConfig/list", `{"id":"`+id+`"}`); r.Error != nil || !strings.HasPrefix(string(r.Result), "[") || !strings.Contains(string(r.Result), `"id":"x"`) {
		t.Errorf("list answered %s %+v", r.Result, r.Error)
	}
	if r = call(t, srv, "tasks/pushNotificationConfig/delete", `{"id":"`+id+`","pushNotificationConfigId":"x"}`); r.Error != nil {
		t.Errorf("delete: %s", r.Error.Message)
	}
	if r = call(t, srv, "tasks/pushNotificationConfig/get", `{"id":"`+id+`"}`); r.code() != -32001 {
		t.Errorf("get after delete: code %d, want -32001", r.code())
	}
	if r = call(t, srv, "tasks/pushNotificationConfig/set", `{"taskId":"nope","pushNotificationConfig":{"url":"https://example.com/hook"}}`); r.code() != -32001 {
		t.Errorf("set on an unknown task: code %d, want -32001", r.code())
	}
}

// sentEvent reads a 1.0 notification body: a StreamResponse.
func sentEvent(t *testing.T, body []byte) a2a.Event {
	t.Helper()
	var sr a2a.StreamResponse
	if err := json.Unmarshal(body, &sr); err != nil {
		t.Fatalf("notification %s is no StreamResponse: %v", body, err)
	}
	return sr.Event
}

func isFinal10(t *testing.T) func([]received) bool {
	return func(got []received) bool {
		for _, g := range got {
			if ev, ok := sentEvent(t, g.body).(*a2a.TaskStatusUpdateEvent); ok && ev.Status.State == a2a.TaskStateCompleted {
				return true
			}
		}
		return false
	}
}

func TestPushDelivery10(t *testing.T) {
	hook := newWebhook(t, nil)
	p := fastPush(t, PushOptions{})
	srv := newPushServer(t, p)
	r := call(t, srv, "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"done"}]},`+
		`"configuration":{"taskPushNotificationConfig":{"url":"`+hook.URL+`/hook","token":"client-token",`+
		`"authentication":{"scheme":"Bearer","credentials":"webhook-secret"}}}}`, "A2A-Version", "1.0")
	if r.Error != nil {
		t.Fatalf("SendMessage: %s", r.Error.Message)
	}
	got := hook.waitFor(t, "the completed status", isFinal10(t))
	var kinds []string
	for _, g := range got {
		if tok := g.header.Get(NotificationTokenHeader); tok != "client-token" {
			t.Errorf("%s = %q, want the client's token", NotificationTokenHeader, tok)
		}
		if a := g.header.Get("Authorization"); a != "Bearer webhook-secret" {
			t.Errorf("Authorization = %q", a)
		}
		if ct := g.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		switch ev := sentEvent(t, g.body).(type) {
		case *a2a.Task:
			kinds = append(kinds, "task")
		case *a2a.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact:"+ev.Artifact.Parts[0].Text())
		case *a2a.TaskStatusUpdateEvent:
			kinds = append(kinds, "status:"+string(ev.Status.State))
		default:
			t.Errorf("unexpected event %T", ev)
		}
	}
	if want := "task artifact:done status:" + string(a2a.TaskStateCompleted); strings.Join(kinds, " ") != want {
		t.Errorf("notifications %v, want %s, in order", kinds, want)
	}
	// The webhook records a request before its answer reaches Push.
	if s := waitStats(t, p, "3 delivered", func(s PushStats) bool { return s.Delivered+s.Failed >= 3 }); s.Delivered != 3 || s.Failed != 0 || s.Retried != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestPushDelivery03(t *testing.T) {
	hook := newWebhook(t, nil)
	p := fastPush(t, PushOptions{})
	srv := newPushServer(t, p)
	r := call(t, srv, "message/send", `{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"done"}]},`+
		`"configuration":{"pushNotificationConfig":{"url":"`+hook.URL+`/hook","token":"tok03"}}}`)
	if r.Error != nil {
		t.Fatalf("message/send: %s", r.Error.Message)
	}
	type task03 struct {
		Kind   string `json:"kind"`
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts []struct {
			Parts []struct {
				Kind string `json:"kind"`
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	got := hook.waitFor(t, "the completed task", func(got []received) bool {
		for _, g := range got {
			var tk task03
			if json.Unmarshal(g.body, &tk) == nil && tk.Status.State == "completed" {
				return true
			}
		}
		return false
	})
	for i, g := range got {
		if tok := g.header.Get(NotificationTokenHeader); tok != "tok03" {
			t.Errorf("%s = %q", NotificationTokenHeader, tok)
		}
		// 0.3 §9.5: "HTTP Body (Task object is sent as JSON payload)".
		var tk task03
		if err := json.Unmarshal(g.body, &tk); err != nil || tk.Kind != "task" || tk.ID == "" {
			t.Errorf("notification %d is no 0.3 Task: %s", i, g.body)
		}
		if i == len(got)-1 && (len(tk.Artifacts) != 1 || tk.Artifacts[0].Parts[0].Kind != "text" || tk.Artifacts[0].Parts[0].Text != "done") {
			t.Errorf("the last notification lacks the artifact: %s", g.body)
		}
	}
}

// newPushed saves a 1.0 config for a task at url on p and returns it.
func newPushed(t *testing.T, p *Push, task a2a.TaskID, url string) *a2a.PushConfig {
	t.Helper()
	c, err := p.Save(t.Context(), task, &a2a.PushConfig{URL: url, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func statusEvent(task a2a.TaskID, state a2a.TaskState) a2a.Event {
	return &a2a.TaskStatusUpdateEvent{TaskID: task, ContextID: "ctx", Status: a2a.TaskStatus{State: state}}
}

// waitStats waits until cond holds of p's counters.
func waitStats(t *testing.T, p *Push, what string, cond func(PushStats) bool) PushStats {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.Stats()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("push: %s not reached: %+v", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPushRetriesThenDelivers(t *testing.T) {
	hook := newWebhook(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	})
	p := fastPush(t, PushOptions{})
	c := newPushed(t, p, "t1", hook.URL)
	if err := p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateCompleted)); err != nil {
		t.Fatal(err)
	}
	s := waitStats(t, p, "delivery", func(s PushStats) bool { return s.Delivered+s.Failed > 0 })
	if s.Delivered != 1 || s.Retried != 2 || s.Failed != 0 {
		t.Errorf("stats %+v, want 1 delivered after 2 retries", s)
	}
	got := hook.requests()
	if len(got) != 3 || string(got[0].body) != string(got[2].body) {
		t.Errorf("%d requests, want the same notification 3 times", len(got))
	}
}

func TestPushGivesUpOnAFailingWebhook(t *testing.T) {
	hook := newWebhook(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	})
	p := fastPush(t, PushOptions{MaxAttempts: 3})
	srv := newPushServer(t, p)
	r := call(t, srv, "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"done"}]},`+
		`"configuration":{"taskPushNotificationConfig":{"url":"`+hook.URL+`"}}}`, "A2A-Version", "1.0")
	if r.Error != nil {
		t.Fatalf("SendMessage: %s", r.Error.Message)
	}
	// The task is not affected: it completes, with its artifact.
	var res a2a.StreamResponse
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	task := res.Event.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Errorf("task %s with %d artifacts, want completed with 1", task.Status.State, len(task.Artifacts))
	}
	s := waitStats(t, p, "3 notifications given up", func(s PushStats) bool { return s.Failed == 3 })
	if s.Delivered != 0 || s.Retried != 6 {
		t.Errorf("stats %+v, want 3 failed after 2 retries each", s)
	}
	if n := len(hook.requests()); n != 9 {
		t.Errorf("%d requests, want 3 notifications × 3 attempts", n)
	}
}

func TestPushDoesNotRetryAPermanentRefusal(t *testing.T) {
	hook := newWebhook(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "who are you", http.StatusUnauthorized)
	})
	p := fastPush(t, PushOptions{})
	c := newPushed(t, p, "t1", hook.URL)
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateCompleted))
	s := waitStats(t, p, "failure", func(s PushStats) bool { return s.Failed == 1 })
	if s.Retried != 0 || len(hook.requests()) != 1 {
		t.Errorf("stats %+v, %d requests: a 401 was retried", s, len(hook.requests()))
	}
}

func TestPushHangingWebhookIsBounded(t *testing.T) {
	release := make(chan struct{})
	hook := newWebhook(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	p := fastPush(t, PushOptions{Timeout: 100 * time.Millisecond, MaxAttempts: 2})
	c := newPushed(t, p, "t1", hook.URL)
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateWorking))
	s := waitStats(t, p, "the hanging delivery given up", func(s PushStats) bool { return s.Failed == 1 })
	if s.Retried != 1 || s.Delivered != 0 {
		t.Errorf("stats %+v", s)
	}
	// fastPush's cleanup checks that no goroutine is left.
}

func TestPushCloseCutsAHangingWebhook(t *testing.T) {
	before := runtime.NumGoroutine()
	hook := newWebhook(t, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	p, err := NewPush(PushOptions{}) // the default timeout: 10 s per attempt
	if err != nil {
		t.Fatal(err)
	}
	c := newPushed(t, p, "t1", hook.URL)
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateWorking))
	hook.waitFor(t, "the first attempt", func(got []received) bool { return len(got) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace: cut at once
	if err := p.Close(ctx); err == nil {
		t.Error("Close with an ended context cut a delivery and said nothing")
	}
	if s := p.Stats(); s.Dropped != 1 || s.Failed != 0 {
		t.Errorf("stats %+v: a delivery cut at shutdown is dropped, not the webhook's failure", s)
	}
	// After Close, nothing more is taken.
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateCompleted))
	if s := p.Stats(); s.Dropped != 2 {
		t.Errorf("stats %+v: a notification after Close was not dropped", s)
	}
	p.opts.Transport.(*http.Transport).CloseIdleConnections()
	hook.Close()
	testenv.CheckNoGoroutineLeak(t, before)
}

func TestPushDoesNotFollowRedirects(t *testing.T) {
	target := newWebhook(t, nil)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, to := range []string{target.URL + "/elsewhere", strings.Replace(target.URL, "127.0.0.1", "localhost", 1)} {
			hook := newWebhook(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, to, code)
			})
			p := fastPush(t, PushOptions{})
			c := newPushed(t, p, "t1", hook.URL)
			_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateCompleted))
			s := waitStats(t, p, "failure", func(s PushStats) bool { return s.Failed == 1 })
			if s.Retried != 0 || len(hook.requests()) != 1 {
				t.Errorf("%d to %s: stats %+v, %d requests", code, to, s, len(hook.requests()))
			}
		}
	}
	if n := len(target.requests()); n != 0 {
		t.Errorf("a redirect was followed: the target got %d requests", n)
	}
}

func TestPushDeleteStopsDeliveries(t *testing.T) {
	hook := newWebhook(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	})
	// Long waits between attempts: the delete comes during one.
	p := fastPush(t, PushOptions{InitialBackoff: time.Hour, MaxBackoff: time.Hour})
	c := newPushed(t, p, "t1", hook.URL)
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateWorking))
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateCompleted))
	hook.waitFor(t, "the first attempt", func(got []received) bool { return len(got) == 1 })
	if err := p.Delete(t.Context(), "t1", c.ID); err != nil {
		t.Fatal(err)
	}
	s := waitStats(t, p, "both dropped", func(s PushStats) bool { return s.Dropped == 2 })
	if s.Failed != 0 || s.Delivered != 0 || len(hook.requests()) != 1 {
		t.Errorf("stats %+v, %d requests after the delete", s, len(hook.requests()))
	}
}

func TestPushQueueIsBounded(t *testing.T) {
	release := make(chan struct{})
	hook := newWebhook(t, func(n int, _ http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-release
		}
	})
	p := fastPush(t, PushOptions{MaxQueue: 2})
	c := newPushed(t, p, "t1", hook.URL)
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateWorking))
	hook.waitFor(t, "the first attempt", func(got []received) bool { return len(got) == 1 })
	for range 5 {
		_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateWorking))
	}
	_ = p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateCompleted))
	close(release)
	s := waitStats(t, p, "the queue emptied", func(s PushStats) bool { return s.Delivered+s.Dropped == 7 })
	if s.Delivered != 3 || s.Dropped != 4 {
		t.Errorf("stats %+v, want 3 delivered (the first, then the 2 newest), 4 dropped", s)
	}
	got := hook.requests()
	if ev, ok := sentEvent(t, got[len(got)-1].body).(*a2a.TaskStatusUpdateEvent); !ok || ev.Status.State != a2a.TaskStateCompleted {
		t.Errorf("the last notification delivered is not the newest")
	}
}

func TestPushConfigsGoWithTheirTask(t *testing.T) {
	store, err := NewTaskStore(TaskStoreLimits{MaxTasks: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := fastPush(t, PushOptions{})
	card := testCard("http://127.0.0.1/")
	card.Capabilities.PushNotifications = true
	mux, err := NewHandler(Options{Card: card, Executor: &testExecutor{}, TaskStore: store, Push: p})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ts := &testServer{Server: srv, store: store}
	first := send(t, ts, "done")
	if r := call(t, ts, "CreateTaskPushNotificationConfig", `{"taskId":"`+string(first.ID)+`","url":"https://example.com/h"}`, "A2A-Version", "1.0"); r.Error != nil {
		t.Fatal(r.Error.Message)
	}
	send(t, ts, "done") // the store keeps one settled task: the first goes
	if n := p.Stats().Configs; n != 0 {
		t.Errorf("%d configs held after their task was dropped", n)
	}
}

func TestWithJSONNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Renamed at the top level of params only.
		{`{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"task_id":"t","url":"u","authentication":{"scheme_x":"s"}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"CreateTaskPushNotificationConfig","params":{"authentication":{"scheme_x":"s"},"taskId":"t","url":"u"}}`},
		// The JSON name wins over the proto name.
		{`{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"task_id":"a","taskId":"b","id":"c"}}`,
			`{"id":1,"jsonrpc":"2.0","method":"GetTaskPushNotificationConfig","params":{"id":"c","taskId":"b"}}`},
		// Other methods, and bodies that are not objects, pass unchanged.
		{`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"task_id":"PushNotificationConfig"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"task_id":"PushNotificationConfig"}}`},
		{`{"method":"tasks/pushNotificationConfig/get","params":{"task_id":"x"}}`, `{"method":"tasks/pushNotificationConfig/get","params":{"task_id":"x"}}`},
		{`[PushNotificationConfig_`, `[PushNotificationConfig_`},
		{`{"method":"ListTaskPushNotificationConfigs","params":"task_id"}`, `{"method":"ListTaskPushNotificationConfigs","params":"task_id"}`},
	} {
		if got := string(withJSONNames([]byte(c.in))); got != c.want {
			t.Errorf("withJSONNames(%s)\n= %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for value, want := range map[string]time.Duration{
		"":                                 0,
		"3":                                3 * time.Second,
		" 7 ":                              7 * time.Second,
		"0":                                0,
		"-1":                               0,
		"1.5":                              0,
		"soon":                             0,
		"Sat, 28 Nov 2026 12:00:05 GMT":    5 * time.Second,
		"Sat, 28 Nov 2026 11:59:00 GMT":    0,           // already past
		"Saturday, 28-Nov-26 12:01:00 GMT": time.Minute, // RFC 850, which RFC 9110 still accepts
		"Sat Nov 28 12:00:02 2026":         2 * time.Second,
		"99999999999999999999999":          time.Duration(maxRetryAfterSeconds) * time.Second,
	} {
		if got := retryAfter(value, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", value, got, want)
		}
	}
}

// A webhook that answers 429 or 503 with Retry-After is left alone that
// long before the next attempt (longer than the backoff), but never past
// MaxBackoff; a Retry-After on any other answer, or one that does not
// parse, leaves the backoff as it is.
func TestPushHonoursRetryAfter(t *testing.T) {
	answers := []struct {
		code       int
		retryAfter string
	}{
		{http.StatusTooManyRequests, "3"},
		{http.StatusServiceUnavailable, "86400"}, // a day: bounded by MaxBackoff
		{http.StatusInternalServerError, "5"},    // not an answer Retry-After is for
		{http.StatusServiceUnavailable, "later"},
	}
	hook := newWebhook(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= len(answers) {
			a := answers[n-1]
			w.Header().Set("Retry-After", a.retryAfter)
			w.WriteHeader(a.code)
		}
	})
	p := fastPush(t, PushOptions{MaxAttempts: len(answers) + 1, InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Second})
	var mu sync.Mutex
	var waits []time.Duration
	p.wait = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err() == nil
	}
	c := newPushed(t, p, "t1", hook.URL)
	if err := p.SendPush(t.Context(), c, statusEvent("t1", a2a.TaskStateCompleted)); err != nil {
		t.Fatal(err)
	}
	s := waitStats(t, p, "delivery", func(s PushStats) bool { return s.Delivered+s.Failed > 0 })
	if s.Delivered != 1 || s.Retried != 4 {
		t.Errorf("stats %+v, want 1 delivered after 4 retries", s)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []time.Duration{3 * time.Second, 10 * time.Second, 4 * time.Millisecond, 8 * time.Millisecond}
	if !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
}
