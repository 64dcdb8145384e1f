package a2aserve

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

const (
	msg1  = `{"message":{"role":"ROLE_USER","messageId":"m-1","parts":[{"text":"hi"}]}}`
	msg03 = `{"message":{"kind":"message","role":"user","messageId":"m-03","parts":[{"kind":"text","text":"hi"}]}}`
)

// TestVersionHeader: the A2A-Version a request names decides whether it is
// served (A2A 1.0 §3.6.2), for methods of both generations.
func TestVersionHeader(t *testing.T) {
	srv := newTestServer(t, nil, "")
	for _, tc := range []struct {
		name, method, params string
		headers              []string
		path                 string
		want                 int
	}{
		{"1.0 method, 1.0", "SendMessage", msg1, []string{"A2A-Version", "1.0"}, "/", 0},
		{"1.0 method, patch version", "SendMessage", msg1, []string{"A2A-Version", "1.0.3"}, "/", 0},
		{"1.0 method, no header", "SendMessage", msg1, nil, "/", 0},
		{"1.0 method, empty header", "SendMessage", msg1, []string{"A2A-Version", " "}, "/", 0},
		{"1.0 method, 99.0", "SendMessage", msg1, []string{"A2A-Version", "99.0"}, "/", codeVersionNotSupported},
		{"1.0 method, garbage", "SendMessage", msg1, []string{"A2A-Version", "latest"}, "/", codeVersionNotSupported},
		{"1.0 method, 99.0 as query", "SendMessage", msg1, nil, "/?A2A-Version=99.0", codeVersionNotSupported},
		{"1.0 method, 0.3", "SendMessage", msg1, []string{"A2A-Version", "0.3"}, "/", codeMethodNotFound},
		{"streaming, 99.0", "SendStreamingMessage", msg1, []string{"A2A-Version", "99.0"}, "/", codeVersionNotSupported},
		{"unknown method, 99.0", "NoSuchMethod", `{}`, []string{"A2A-Version", "99.0"}, "/", codeVersionNotSupported},
		{"0.3 method, no header", "message/send", msg03, nil, "/", 0},
		{"0.3 method, 0.3", "message/send", msg03, []string{"A2A-Version", "0.3"}, "/", 0},
		{"0.3 method, 99.0", "message/send", msg03, []string{"A2A-Version", "99.0"}, "/", codeVersionNotSupported},
		{"0.3 method, 1.0", "message/send", msg03, []string{"A2A-Version", "1.0"}, "/", codeMethodNotFound},
		{"0.3 streaming, 2.0", "message/stream", msg03, []string{"A2A-Version", "2.0"}, "/", codeVersionNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := srv.exec.runs.Load()
			body := `{"jsonrpc":"2.0","id":"x","method":"` + tc.method + `","params":` + tc.params + `}`
			resp, b := post(t, srv, tc.path, body, tc.headers...)
			r := decodeReply(t, resp, b)
			if got := r.code(); got != tc.want {
				t.Fatalf("code %d, want %d: %s", got, tc.want, b)
			}
			if tc.want == 0 {
				return
			}
			if r.ID != "x" {
				t.Errorf("error reply has id %v, want the request's", r.ID)
			}
			if srv.exec.runs.Load() != runs {
				t.Error("a refused request reached the executor")
			}
			if strings.HasPrefix(tc.method, "SendStreaming") || tc.method == "message/stream" {
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("streaming method's error came as %q, want an event stream", ct)
				}
			}
			if tc.want == codeVersionNotSupported && (len(r.Error.Data) == 0 || r.Error.Data[0].Reason != "VERSION_NOT_SUPPORTED") {
				t.Errorf("error data %+v, want an ErrorInfo with reason VERSION_NOT_SUPPORTED", r.Error.Data)
			}
		})
	}
}

// TestInvalidParams: well-formed JSON whose params do not decode is
// invalid params (-32602); only a body that is not JSON is a parse error.
func TestInvalidParams(t *testing.T) {
	srv := newTestServer(t, nil, "")
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"unknown 1.0 part kind", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m","parts":[{"hologram":{"x":1}}]}}}`, codeInvalidParams},
		{"unknown 0.3 part kind", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"hologram"}]}}}`, codeInvalidParams},
		{"unknown part kind, streaming", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"m","parts":[{"hologram":1}]}}}`, codeInvalidParams},
		{"params missing", `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, codeInvalidParams},
		{"params of the wrong type", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}`, codeInvalidParams},
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, codeParseError},
		{"not a 2.0 request", `{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}`, codeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, srv, "/", tc.body)
			if got := decodeReply(t, resp, b).code(); got != tc.want {
				t.Errorf("code %d, want %d: %s", got, tc.want, b)
			}
		})
	}
	if n := srv.exec.runs.Load(); n != 0 {
		t.Errorf("the executor ran %d times for requests that do not decode", n)
	}
}

// waitStored waits until GetTask, which reads the task store, gives task
// id in state.
func waitStored(t *testing.T, srv *testServer, id, state string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := call(t, srv, "GetTask", `{"id":"`+id+`"}`)
		if r.Error == nil && strings.Contains(string(r.Result), state) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task store never held task %s as %s: %+v %s", id, state, r.Error, r.Result)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTerminalTasks: subscribing to a finished task or sending it a message
// is UnsupportedOperationError (-32004), in both protocol versions; a task
// that never was stays not found.
func TestTerminalTasks(t *testing.T) {
	srv := newTestServer(t, nil, "")
	task := send(t, srv, "hi")
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %s, want it completed", task.Status.State)
	}
	id := string(task.ID)
	// The answer can reach the client a moment before the task store has
	// the final state (a2a-go saves it after emitting the last event).
	waitStored(t, srv, id, "TASK_STATE_COMPLETED")
	const unsupported = -32004
	for _, tc := range []struct {
		name, method, params string
		want                 int
	}{
		{"subscribe 1.0", "SubscribeToTask", `{"id":"` + id + `"}`, unsupported},
		{"resubscribe 0.3", "tasks/resubscribe", `{"id":"` + id + `"}`, unsupported},
		{"subscribe unknown", "SubscribeToTask", `{"id":"no-such-task"}`, -32001},
		{"send 1.0", "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m-2","taskId":"` + id + `","parts":[{"text":"more"}]}}`, unsupported},
		{"stream 1.0", "SendStreamingMessage", `{"message":{"role":"ROLE_USER","messageId":"m-3","taskId":"` + id + `","parts":[{"text":"more"}]}}`, unsupported},
		{"send 0.3", "message/send", `{"message":{"kind":"message","role":"user","messageId":"m-4","taskId":"` + id + `","parts":[{"kind":"text","text":"more"}]}}`, unsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := call(t, srv, tc.method, tc.params); r.code() != tc.want {
				t.Errorf("code %d, want %d: %+v", r.code(), tc.want, r.Error)
			}
		})
	}
}

// TestSubscribeWhileFinishedExecutionLingers: a2a-go saves a task's final
// state before it lets go of the execution, and in between a subscriber is
// attached to the finished execution and handed the stored snapshot as its
// first event. The executor here holds that window open (it returns only
// when released), so what a caller gets in it is certain: the task is
// terminal, and each method answers as after the execution is gone
// (TestTerminalTasks): subscribing is UnsupportedOperationError, canceling
// TaskNotCancelableError, in both versions.
func TestSubscribeWhileFinishedExecutionLingers(t *testing.T) {
	srv := newTestServer(t, nil, "")
	srv.exec.linger = make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(srv.exec.linger) }) }
	defer release()
	task := send(t, srv, "linger")
	id := string(task.ID)
	waitStored(t, srv, id, "TASK_STATE_COMPLETED")
	for _, tc := range []struct {
		name, method string
		want         int
	}{
		{"subscribe 1.0", "SubscribeToTask", -32004},
		{"resubscribe 0.3", "tasks/resubscribe", -32004},
		{"cancel 1.0", "CancelTask", -32002},
		{"cancel 0.3", "tasks/cancel", -32002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, srv, tc.method, `{"id":"`+id+`"}`)
			if r.code() != tc.want {
				t.Errorf("code %d, want %d: %+v %s", r.code(), tc.want, r.Error, r.Result)
			}
		})
	}
	// A message to the task in the window waits for the execution to let
	// go (a2a-go's waitForExiting), then is refused like any other; the
	// release may come before or after it arrives, the answer is the same.
	go release()
	if r := call(t, srv, "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m-late","taskId":"`+id+`","parts":[{"text":"more"}]}}`); r.code() != -32004 {
		t.Errorf("message to the finished task: code %d, want -32004: %+v", r.code(), r.Error)
	}
}

// TestSubscribeToInterruptedTask: a task waiting for input has no
// execution, and a2a-go answered a subscription to it "task not found"
// though GetTask returns it. 1.0 §3.1.6 gives the current task as a
// subscription's first event: the stream is that one task, and ends, as
// a message stream ends at an interrupted state. Answered, the task
// completes, and then a subscription is refused as for any finished task.
func TestSubscribeToInterruptedTask(t *testing.T) {
	srv := newTestServer(t, nil, "")
	task := send(t, srv, "input")
	id := string(task.ID)
	waitStored(t, srv, id, "TASK_STATE_INPUT_REQUIRED")
	for _, tc := range []struct{ name, method, state string }{
		{"subscribe 1.0", "SubscribeToTask", `"TASK_STATE_INPUT_REQUIRED"`},
		{"resubscribe 0.3", "tasks/resubscribe", `"input-required"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, srv, "/", `{"jsonrpc":"2.0","id":7,"method":"`+tc.method+`","params":{"id":"`+id+`"}}`)
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content type %q, want an event stream: %s", ct, b)
			}
			var events []rpcReply
			for line := range strings.Lines(string(b)) {
				if data, ok := strings.CutPrefix(line, "data:"); ok {
					var r rpcReply
					if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &r); err != nil {
						t.Fatalf("event %q: %v", data, err)
					}
					events = append(events, r)
				}
			}
			if len(events) != 1 || events[0].Error != nil {
				t.Fatalf("%d events, want the task alone: %s", len(events), b)
			}
			res := string(events[0].Result)
			if !strings.Contains(res, `"`+id+`"`) || !strings.Contains(res, tc.state) {
				t.Errorf("event %s, want task %s in state %s", res, id, tc.state)
			}
		})
	}
	r := call(t, srv, "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m-answer","taskId":"`+id+`","parts":[{"text":"more"}]}}`, "A2A-Version", "1.0")
	if r.Error != nil || !strings.Contains(string(r.Result), "TASK_STATE_COMPLETED") {
		t.Fatalf("answering the task: %+v %s", r.Error, r.Result)
	}
	waitStored(t, srv, id, "TASK_STATE_COMPLETED")
	if r := call(t, srv, "SubscribeToTask", `{"id":"`+id+`"}`); r.code() != -32004 {
		t.Errorf("subscribe after completion: code %d, want -32004", r.code())
	}
	if r := call(t, srv, "SubscribeToTask", `{"id":""}`); r.code() == 0 {
		t.Errorf("subscribe to an empty id answered %s", r.Result)
	}
}

// TestListTasksAnonymous: with no authentication configured, a caller lists
// the tasks, newest first, a page at a time.
func TestListTasksAnonymous(t *testing.T) {
	srv := newTestServer(t, nil, "")
	var ids []a2a.TaskID
	for range 3 {
		ids = append(ids, send(t, srv, "hi").ID)
	}
	list := func(params string) (a2a.ListTasksResponse, rpcReply) {
		t.Helper()
		r := call(t, srv, "ListTasks", params, "A2A-Version", "1.0")
		var res a2a.ListTasksResponse
		if r.Error == nil {
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatalf("ListTasks result %s: %v", r.Result, err)
			}
		}
		return res, r
	}
	all, r := list(`{}`)
	if r.Error != nil {
		t.Fatalf("ListTasks: %d %s", r.Error.Code, r.Error.Message)
	}
	if all.TotalSize != 3 || len(all.Tasks) != 3 || all.NextPageToken != "" {
		t.Fatalf("listed %d of %d, next %q; want all 3 on one page", len(all.Tasks), all.TotalSize, all.NextPageToken)
	}
	for i, task := range all.Tasks {
		if task.Artifacts != nil {
			t.Errorf("task %d lists artifacts without includeArtifacts", i)
		}
		if i > 0 && task.Status.Timestamp.After(*all.Tasks[i-1].Status.Timestamp) {
			t.Errorf("task %d is newer than task %d: not newest first", i, i-1)
		}
	}
	first, _ := list(`{"pageSize":2,"includeArtifacts":true}`)
	if len(first.Tasks) != 2 || first.NextPageToken == "" || len(first.Tasks[0].Artifacts) != 1 {
		t.Fatalf("first page: %d tasks, next %q, want 2 with artifacts and a next page", len(first.Tasks), first.NextPageToken)
	}
	second, _ := list(`{"pageSize":2,"pageToken":"` + first.NextPageToken + `"}`)
	if len(second.Tasks) != 1 || second.NextPageToken != "" {
		t.Fatalf("second page: %d tasks, next %q, want the last one and no next page", len(second.Tasks), second.NextPageToken)
	}
	seen := map[a2a.TaskID]bool{first.Tasks[0].ID: true, first.Tasks[1].ID: true, second.Tasks[0].ID: true}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("task %s is on no page", id)
		}
	}
	for _, params := range []string{`{"pageToken":"nonsense"}`, `{"pageSize":101}`} {
		if _, r := list(params); r.code() != codeInvalidParams {
			t.Errorf("ListTasks %s: code %d, want %d", params, r.code(), codeInvalidParams)
		}
	}
}

// TestTaskStoreLevelsOff: however many assessments a server runs, it keeps
// at most MaxTasks finished tasks, dropping the oldest.
func TestTaskStoreLevelsOff(t *testing.T) {
	store, err := NewTaskStore(TaskStoreLimits{MaxTasks: 5})
	if err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(t, store, "")
	var ids []a2a.TaskID
	for i := range 40 {
		ids = append(ids, send(t, srv, "hi").ID)
		if st := store.Stats(); st.Tasks > 5 || st.Settled > 5 {
			t.Fatalf("after %d tasks the store holds %+v, want at most 5", i+1, st)
		}
	}
	if st := store.Stats(); st.Tasks != 5 || st.Evicted != 35 {
		t.Errorf("store %+v, want 5 held and 35 dropped", st)
	}
	if r := call(t, srv, "GetTask", `{"id":"`+string(ids[0])+`"}`); r.code() != -32001 {
		t.Errorf("the first task: code %d, want task not found (-32001)", r.code())
	}
	if r := call(t, srv, "GetTask", `{"id":"`+string(ids[39])+`"}`); r.Error != nil {
		t.Errorf("the last task: %+v", r.Error)
	}
}

// TestRoutes: wrong methods and paths are told so in HTTP, not answered
// with a JSON-RPC error.
func TestRoutes(t *testing.T) {
	srv := newTestServer(t, nil, "http://gateway.example/agents/reviewer/")
	for _, tc := range []struct {
		method, path string
		want         int
		allow        string
	}{
		{http.MethodPut, "/", http.StatusMethodNotAllowed, "GET, HEAD, OPTIONS, POST"},
		{http.MethodDelete, "/", http.StatusMethodNotAllowed, "GET, HEAD, OPTIONS, POST"},
		{http.MethodPost, "/v1/metrics", http.StatusNotFound, ""},
		{http.MethodGet, "/nothing/here", http.StatusNotFound, ""},
		{http.MethodPost, "/.well-known/agent-card.json", http.StatusMethodNotAllowed, "GET, HEAD, OPTIONS"},
		{http.MethodDelete, HealthPath, http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, HealthPath, http.StatusOK, ""},
		{http.MethodGet, "/", http.StatusOK, ""},
		{http.MethodGet, "/agents/reviewer/.well-known/agent-card.json", http.StatusOK, ""},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
	// JSON-RPC is served at "/" and at the path of the card's interface
	// URL, where a gateway that keeps the prefix sends it.
	for _, path := range []string{"/", "/agents/reviewer/", "/agents/reviewer"} {
		resp, b := post(t, srv, path, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`)
		if r := decodeReply(t, resp, b); r.code() != -32001 {
			t.Errorf("POST %s: %s, want a JSON-RPC task-not-found", path, b)
		}
	}
}

// TestCardCaching: the card carries Cache-Control, ETag and Last-Modified
// (A2A 1.0 §8.6.1), and a conditional request that still holds gets 304.
func TestCardCaching(t *testing.T) {
	srv := newTestServer(t, nil, "")
	get := func(method string, headers ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+"/.well-known/agent-card.json", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	resp := get(http.MethodGet)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET card: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=300") {
		t.Errorf("Cache-Control %q, want a max-age", cc)
	}
	etag, modified := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
		t.Errorf("ETag %q, want a strong validator", etag)
	}
	if _, err := http.ParseTime(modified); err != nil {
		t.Errorf("Last-Modified %q: %v", modified, err)
	}
	if again := get(http.MethodGet); again.Header.Get("ETag") != etag {
		t.Errorf("the ETag changed between two requests: %q, %q", etag, again.Header.Get("ETag"))
	}
	if r := get(http.MethodGet, "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the ETag: %d, want 304", r.StatusCode)
	}
	if r := get(http.MethodGet, "If-None-Match", `"other"`); r.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match with another ETag: %d, want 200", r.StatusCode)
	}
	if r := get(http.MethodGet, "If-Modified-Since", modified); r.StatusCode != http.StatusNotModified {
		t.Errorf("If-Modified-Since Last-Modified: %d, want 304", r.StatusCode)
	}
	if r := get(http.MethodGet, "If-Modified-Since", time.Unix(0, 0).UTC().Format(http.TimeFormat)); r.StatusCode != http.StatusOK {
		t.Errorf("If-Modified-Since 1970: %d, want 200", r.StatusCode)
	}
	if r := get(http.MethodHead); r.StatusCode != http.StatusOK || r.Header.Get("ETag") != etag {
		t.Errorf("HEAD card: %d, ETag %q", r.StatusCode, r.Header.Get("ETag"))
	}
}
