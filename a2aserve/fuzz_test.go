package a2aserve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzJSONRPC: whatever body and A2A-Version a request carries, the
// handler answers without panicking, a JSON-RPC error is one of the
// codes JSON-RPC and A2A define, and the executor never sees a request
// whose params did not decode.
func FuzzJSONRPC(f *testing.F) {
	for _, seed := range []struct{ body, version string }{
		{`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":` + msg1 + `}`, "1.0"},
		{`{"jsonrpc":"2.0","id":"a","method":"message/send","params":` + msg03 + `}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, "99.0"},
		{`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":"!!"}}`, "1.0"},
		{`{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"x"}}`, "0.3"},
		{`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"kind":"x"}]}}}`, ""},
		{`[1,2]`, ""},
		{`{`, "1"},
	} {
		f.Add(seed.body, seed.version)
	}
	store, err := NewTaskStore(TaskStoreLimits{MaxTasks: 16})
	if err != nil {
		f.Fatal(err)
	}
	mux, err := NewHandler(Options{Card: testCard("http://127.0.0.1/"), Executor: &testExecutor{}, TaskStore: store})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body, version string) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if version != "" && !strings.ContainsAny(version, "\r\n\x00") {
			req.Header.Set("A2A-Version", version)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return // the body limit; nothing else answers other statuses here
		}
		var reply struct {
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		out := rec.Body.String()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			// The first event is what the checks are about.
			first := ""
			for line := range strings.Lines(out) {
				if data, ok := strings.CutPrefix(line, "data:"); ok {
					first = strings.TrimSpace(data)
					break
				}
			}
			if first == "" {
				t.Fatalf("an event stream without an event: %q", out)
			}
			out = first
		}
		if err := json.Unmarshal([]byte(out), &reply); err != nil {
			t.Fatalf("reply %q is not JSON: %v", out, err)
		}
		if reply.Error != nil {
			if c := reply.Error.Code; !(c >= -32700 && c <= -32600) && !(c >= -32009 && c <= -32000) && c != -31401 && c != -31403 {
				t.Errorf("error code %d is not a JSON-RPC or A2A code", c)
			}
		}
	})
}
