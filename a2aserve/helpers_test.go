package a2aserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// testExecutor completes each task with one text artifact, or asks for
// input when the message says "input". When the message says "linger" it
// returns only when linger is closed, after the task is completed: the
// execution stays registered with a2a-go past the final state (a test that
// sets linger must close it). It counts
// its executions.
type testExecutor struct {
	runs   atomic.Int64
	linger chan struct{}
}

func (x *testExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	x.runs.Add(1)
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		if text == "input" {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, nil), nil)
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done")), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil) {
			return
		}
		if text == "linger" && x.linger != nil {
			// Deaf to ctx on purpose: a2a-go cancels it once the final
			// event is processed, and an executor slow to notice keeps the
			// execution registered just the same.
			<-x.linger
		}
	}
}

func (x *testExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// testCard describes an agent at u with one JSON-RPC interface per
// protocol version.
func testCard(u string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name: "test", Description: "a test agent", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
	}
}

// testServer serves a handler for testExecutor on loopback.
type testServer struct {
	*httptest.Server
	exec  *testExecutor
	store *TaskStore
}

func newTestServer(t *testing.T, store *TaskStore, cardURL string) *testServer {
	t.Helper()
	exec := &testExecutor{}
	if store == nil {
		var err error
		if store, err = NewTaskStore(TaskStoreLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	if cardURL == "" {
		cardURL = "http://127.0.0.1/"
	}
	mux, err := NewHandler(Options{Card: testCard(cardURL), Executor: exec, TaskStore: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, exec: exec, store: store}
}

// rpcReply is a JSON-RPC response as the tests read it.
type rpcReply struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    []struct {
			Reason string `json:"reason"`
		} `json:"data"`
	} `json:"error"`
}

// code is the error code of the reply, 0 for a result.
func (r rpcReply) code() int {
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// post sends body to path with the headers (name, value pairs) and returns
// the response, its body read.
func post(t *testing.T, srv *testServer, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// call sends one JSON-RPC request and decodes the reply: the body, or the
// first event of an event stream.
func call(t *testing.T, srv *testServer, method, params string, headers ...string) rpcReply {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	body += "}"
	resp, b := post(t, srv, "/", body, headers...)
	return decodeReply(t, resp, b)
}

func decodeReply(t *testing.T, resp *http.Response, b []byte) rpcReply {
	t.Helper()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				b = []byte(strings.TrimSpace(data))
				break
			}
		}
	}
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("reply %q (status %d): %v", b, resp.StatusCode, err)
	}
	return r
}

// send sends a 1.0 message and returns the task it made.
func send(t *testing.T, srv *testServer, text string) *a2a.Task {
	t.Helper()
	r := call(t, srv, "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"`+a2a.NewMessageID()+`","parts":[{"text":"`+text+`"}]}}`,
		"A2A-Version", "1.0")
	if r.Error != nil {
		t.Fatalf("SendMessage: %d %s", r.Error.Code, r.Error.Message)
	}
	var res a2a.StreamResponse
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("SendMessage result %s: %v", r.Result, err)
	}
	task, ok := res.Event.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage answered %T, want a task", res.Event)
	}
	return task
}
