package a2aserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// panickyExecutor is testExecutor with bugs on demand: a message saying
// "panic early" panics before any event, "panic late" after the task and
// a working status; Cancel always panics.
type panickyExecutor struct{ testExecutor }

func (x *panickyExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	text := ""
	if ec.Message != nil && len(ec.Message.Parts) > 0 {
		text = ec.Message.Parts[0].Text()
	}
	switch text {
	case "panic early":
		return func(func(a2a.Event, error) bool) {
			var ec *a2asrv.ExecutorContext
			_ = ec.TaskID // a nil pointer dereference: a runtime panic
		}
	case "panic late":
		return func(yield func(a2a.Event, error) bool) {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) || !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			panic("the executor's bug, late")
		}
	}
	return x.testExecutor.Execute(ctx, ec)
}

func (x *panickyExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) { panic("the executor's bug in Cancel") }
}

// syncBuffer is a log sink for several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPanicsFailOnlyTheirTask: our code panicking where a2a-go calls it,
// in goroutines a2a-go owns, fails only that task or request, on both
// protocol versions, blocking and streaming, while honest tasks run on
// the same server: an executor that panics before its first event and
// after it (the task ends failed, with a status message saying so), a
// Cancel that panics (the cancel request gets an internal error), and a
// webhook check that panics while a2a-go sets up the execution in a
// goroutine nothing recovered (the request gets an internal error; before
// contain.go this ended the test binary).
func TestPanicsFailOnlyTheirTask(t *testing.T) {
	logs := &syncBuffer{}
	p := fastPush(t, PushOptions{CheckURL: func(raw string) error {
		if strings.Contains(raw, "panic") {
			var m map[string]bool
			//lint:ignore SA5000 the panic under test
			m[raw] = true
		}
		return nil
	}})
	store, err := NewTaskStore(TaskStoreLimits{})
	if err != nil {
		t.Fatal(err)
	}
	card := testCard("http://127.0.0.1/")
	card.Capabilities.PushNotifications = true
	exec := &panickyExecutor{}
	mux, err := NewHandler(Options{Card: card, Executor: exec, TaskStore: store, Push: p,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	srv := &testServer{Server: hs, exec: &exec.testExecutor, store: store}

	msg10 := func(text string) string {
		return `{"message":{"role":"ROLE_USER","messageId":"` + a2a.NewMessageID() + `","parts":[{"text":"` + text + `"}]}}`
	}
	msg03 := func(text string) string {
		return `{"message":{"kind":"message","role":"user","messageId":"` + a2a.NewMessageID() + `","parts":[{"kind":"text","text":"` + text + `"}]}}`
	}
	// outcome is the state and status text of the task a reply holds (a
	// 1.0 result, a 0.3 result, or the last event of a stream). It runs
	// in several goroutines: it returns its failures.
	outcome := func(method, params string) (string, string, error) {
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			return "", "", err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			return "", "", err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return "", "", fmt.Errorf("%s: HTTP %d %v", method, resp.StatusCode, err)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			for i := len(lines) - 1; i >= 0; i-- {
				if d, ok := strings.CutPrefix(lines[i], "data:"); ok {
					raw = []byte(strings.TrimSpace(d))
					break
				}
			}
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(raw, &r); err != nil || r.Error != nil {
			return "", "", fmt.Errorf("%s: %s (%v)", method, raw, err)
		}
		var wrapped struct {
			Task         json.RawMessage `json:"task"`
			StatusUpdate json.RawMessage `json:"statusUpdate"`
		}
		res := r.Result
		if json.Unmarshal(res, &wrapped) == nil {
			if wrapped.Task != nil {
				res = wrapped.Task
			} else if wrapped.StatusUpdate != nil {
				res = wrapped.StatusUpdate
			}
		}
		var st struct {
			Status *struct {
				State   string `json:"state"`
				Message *struct {
					Parts []struct{ Text string } `json:"parts"`
				} `json:"message"`
			} `json:"status"`
		}
		if err := json.Unmarshal(res, &st); err != nil || st.Status == nil {
			return "", "", fmt.Errorf("%s: no status in %s", method, res)
		}
		text := ""
		if st.Status.Message != nil && len(st.Status.Message.Parts) > 0 {
			text = st.Status.Message.Parts[0].Text
		}
		return st.Status.State, text, nil
	}

	var wg sync.WaitGroup
	honest := make(chan string, 16)
	for range 8 { // honest tasks all along
		wg.Go(func() {
			for range 2 {
				state, _, err := outcome("SendMessage", msg10("done"))
				if err != nil {
					t.Error(err)
				}
				honest <- state
			}
		})
	}
	for _, c := range []struct{ method, params, want string }{
		{"SendMessage", msg10("panic early"), "TASK_STATE_FAILED"},
		{"SendMessage", msg10("panic late"), "TASK_STATE_FAILED"},
		{"SendStreamingMessage", msg10("panic early"), "TASK_STATE_FAILED"},
		{"SendStreamingMessage", msg10("panic late"), "TASK_STATE_FAILED"},
		{"message/send", msg03("panic early"), "failed"},
		{"message/send", msg03("panic late"), "failed"},
		{"message/stream", msg03("panic early"), "failed"},
		{"message/stream", msg03("panic late"), "failed"},
	} {
		state, text, err := outcome(c.method, c.params)
		if err != nil {
			t.Fatal(err)
		}
		if state != c.want || text != panicReason {
			t.Errorf("%s %s: state %s, status message %q", c.method, c.params, state, text)
		}
	}

	// A webhook check that panics during the execution's set-up.
	for _, method := range []string{"SendMessage", "message/send"} {
		params := `{"message":{"role":"ROLE_USER","messageId":"` + a2a.NewMessageID() + `","parts":[{"text":"done"}]},` +
			`"configuration":{"taskPushNotificationConfig":{"url":"http://127.0.0.1:1/panic"}}}`
		if method == "message/send" {
			params = `{"message":{"kind":"message","role":"user","messageId":"` + a2a.NewMessageID() + `","parts":[{"kind":"text","text":"done"}]},` +
				`"configuration":{"pushNotificationConfig":{"url":"http://127.0.0.1:1/panic"}}}`
		}
		if r := call(t, srv, method, params); r.code() != -32603 {
			t.Errorf("%s with a webhook whose check panics: code %d, want an internal error", method, r.code())
		}
	}

	// A Cancel that panics.
	in := call(t, srv, "SendMessage", msg10("input"))
	var res a2a.StreamResponse
	if err := json.Unmarshal(in.Result, &res); err != nil {
		t.Fatal(err)
	}
	task := res.Event.(*a2a.Task)
	if r := call(t, srv, "CancelTask", fmt.Sprintf(`{"id":%q}`, task.ID)); r.Error == nil {
		t.Errorf("CancelTask of a panicking Cancel answered %s", in.Result)
	}

	wg.Wait()
	close(honest)
	n := 0
	for state := range honest {
		n++
		if state != "TASK_STATE_COMPLETED" {
			t.Errorf("an honest task ended %s", state)
		}
	}
	if n != 16 {
		t.Errorf("%d honest tasks ended, want 16", n)
	}
	// The server still serves.
	if state, _, err := outcome("message/send", msg03("done")); err != nil || state != "completed" {
		t.Errorf("after the panics: %s %v", state, err)
	}
	out := logs.String()
	for _, want := range []string{"recovered a panic at the a2a-go boundary", "nil pointer dereference", "the executor's bug, late",
		"the executor's bug in Cancel", "assignment to entry in nil map", "in=\"the push config store's Save\"", "contain_test.go", "stack="} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// panickyTransport is a webhook transport (PushOptions.Transport, called
// in Push's own delivery worker) that panics for one webhook.
type panickyTransport struct{ next http.RoundTripper }

func (p panickyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "panic") {
		panic("the transport's bug")
	}
	return p.next.RoundTrip(r)
}

// TestPushWorkerPanicCostsOnlyItsQueue: a panic in a delivery worker (here
// in the transport it calls) drops that config's notifications, logged
// with the stack; the task's other webhook gets every notification, and
// Close still ends every worker (fastPush checks for leaks).
func TestPushWorkerPanicCostsOnlyItsQueue(t *testing.T) {
	hook := newWebhook(t, nil)
	logs := &syncBuffer{}
	p := fastPush(t, PushOptions{Transport: panickyTransport{next: http.DefaultTransport.(*http.Transport).Clone()},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(func() { p.opts.Transport = p.opts.Transport.(panickyTransport).next })
	task := a2a.TaskID("t1")
	newPushed(t, p, task, hook.URL+"/panic")
	newPushed(t, p, task, hook.URL+"/good")
	for _, state := range []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateCompleted} {
		for _, c := range mustList(t, p, task) {
			if err := p.SendPush(t.Context(), c, statusEvent(task, state)); err != nil {
				t.Fatal(err)
			}
		}
	}
	hook.waitFor(t, "three notifications to the good webhook", func(got []received) bool { return len(got) >= 3 })
	// Each of the three notifications to the panicking webhook is dropped.
	waitStats(t, p, "the panicking queue dropped", func(s PushStats) bool { return s.Delivered == 3 && s.Dropped == 3 })
	if out := logs.String(); !strings.Contains(out, "push notification worker panicked") || !strings.Contains(out, "the transport's bug") {
		t.Errorf("the log: %s", out)
	}
}

func mustList(t *testing.T, p *Push, task a2a.TaskID) []*a2a.PushConfig {
	t.Helper()
	cs, err := p.List(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
