package green

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/a2atest"
)

// The A2A methods of each protocol version the green agent serves.
var (
	a2aMethods10 = []string{"SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
		"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
		"DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"}
	a2aMethods03 = []string{"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe",
		"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list",
		"tasks/pushNotificationConfig/delete", "agent/getAuthenticatedExtendedCard"}
)

// a2aParams are the params every method is sent with: absent (""), null,
// {}, other JSON types, and the fields the methods read in wrong types and
// shapes (ids, messages, parts, configurations, pages, metadata).
var a2aParams = []string{
	"", "null", "{}", "[]", `"x"`, "0", "true", "[{}]",
	`{"id":5}`, `{"id":null}`, `{"id":{}}`, `{"id":""}`, `{"id":"no-such-task"}`, `{"id":"` + strings.Repeat("i", 5000) + `"}`,
	`{"taskId":5}`, `{"taskId":"no-such-task","id":7}`, `{"name":5}`, `{"name":"tasks/x/pushNotificationConfigs/y"}`,
	`{"historyLength":-1,"id":"x"}`, `{"historyLength":"x","id":"x"}`, `{"pageSize":-1}`, `{"pageSize":1e9}`, `{"pageToken":"!!"}`,
	`{"pageToken":{}}`, `{"status":"nope"}`, `{"statusTimestampAfter":"yesterday"}`, `{"includeArtifacts":"yes"}`,
	`{"metadata":[]}`, `{"metadata":null,"id":"x"}`, `{"tenant":5}`,
	`{"message":null}`, `{"message":{}}`, `{"message":[]}`, `{"message":{"parts":null}}`, `{"message":{"parts":[null]}}`,
	`{"message":{"parts":[]}}`, `{"message":{"parts":{}}}`, `{"message":{"role":5,"parts":[{"text":"hi"}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":5}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":null}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":[]}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"participants":[],"config":null}}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"!!not base64"}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":5}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi","data":{}}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"taskId":"no-such-task"}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"contextId":{}}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"referenceTaskIds":[5]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"extensions":"x"}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":null}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"historyLength":-5,"acceptedOutputModes":{}}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"taskPushNotificationConfig":{"url":5}}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"taskPushNotificationConfig":{"url":"file:///etc/passwd"}}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":5}]}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":null}]}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":[]}]}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{}}]}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"!!"}}]}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"nope"}]}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],"taskId":"no-such-task"}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":null}}`,
	`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":{"url":"http://[::1"}}}`,
	`{"taskId":"no-such-task","pushNotificationConfig":null}`, `{"taskId":"no-such-task","pushNotificationConfig":{"url":[]}}`,
	`{"taskId":"no-such-task","pushNotificationConfigId":5}`, `{"url":"http://127.0.0.1:1/","taskId":null}`,
	`{"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
}

// checkA2AAnswer judges the answer to a JSON-RPC request: 200 (or the
// body limit's 413) with one JSON-RPC response, or an event stream whose
// events are responses; the id echoed; a result or an error, not both,
// never an internal error (-32603), which is what a recovered panic
// becomes (a2aserve/contain.go), and no parse error (-32700) for a request
// that is JSON (JSON-RPC 2.0 §5.1 keeps it for "Invalid JSON").
func checkA2AAnswer(request string, id string, status int, contentType string, body []byte) error {
	if status != http.StatusOK && status != http.StatusRequestEntityTooLarge {
		return fmt.Errorf("HTTP %d: %.200s", status, body)
	}
	var msgs [][]byte
	if strings.HasPrefix(contentType, "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				msgs = append(msgs, []byte(strings.TrimSpace(d)))
			}
		}
		if len(msgs) == 0 {
			return fmt.Errorf("an event stream with no event: %.200s", body)
		}
	} else {
		msgs = [][]byte{body}
	}
	for _, m := range msgs {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m, &r); err != nil {
			return fmt.Errorf("not a JSON-RPC response: %.200s", m)
		}
		if (r.Result == nil) == (r.Error == nil) {
			return fmt.Errorf("a response with neither or both of result and error: %.200s", m)
		}
		if r.Error != nil && r.Error.Code == -32603 {
			return fmt.Errorf("an internal error: %.300s", m)
		}
		if r.Error != nil && r.Error.Code == -32700 && json.Valid([]byte(request)) {
			return fmt.Errorf("a parse error for JSON: %.300s", m)
		}
		if id != "" && string(r.ID) != id && string(r.ID) != "null" {
			return fmt.Errorf("id %s in the answer to id %s", r.ID, id)
		}
	}
	return nil
}

// TestA2AMalformedThroughTheGreenAgent sends the green agent every A2A
// method of both protocol versions (and each version's methods under the
// other's A2A-Version) with params absent, null, {} and malformed, while
// an honest assessment runs: every answer is a JSON-RPC result or error
// with the request's id, no panic is logged, the green agent serves on,
// and the honest assessment ends exactly as it does alone.
func TestA2AMalformedThroughTheGreenAgent(t *testing.T) {
	logs := &lockedLog{}
	g := startGreen(t, ServerOptions{Scenarios: newCoordinationForServer(t), ProgressInterval: time.Minute,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	honest := a2atest.Start(t, a2atest.Options{Name: "honest", Delay: 300 * time.Millisecond, ReplyFunc: coordinationAnswer("accept")})
	req := fmt.Sprintf(`{"participants": {"reviewer": %q}, "config": {"task_ids": ["iclr2017-305"], "settle_quiet_ms": 100, "settle_max_wait_ms": 500}}`, honest.URL)
	c := g.client10(t)
	alone, err := blockingResult(t.Context(), c, req)
	if err != nil {
		t.Fatal(err)
	}

	var beside map[string]any
	var besideErr error
	var wg sync.WaitGroup
	wg.Go(func() { beside, besideErr = blockingResult(t.Context(), c, req) })

	post := func(ctx context.Context, version, body string) (int, string, []byte, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, strings.NewReader(body))
		if err != nil {
			return 0, "", nil, err
		}
		r.Header.Set("Content-Type", "application/json")
		if version != "" {
			r.Header.Set("A2A-Version", version)
		}
		resp, err := g.http.Do(r)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), b, err
	}
	sent, id := 0, 0
	for _, set := range []struct {
		methods  []string
		versions []string
	}{
		{a2aMethods10, []string{"1.0", "", "0.3", "99.0"}},
		{a2aMethods03, []string{"", "0.3", "1.0"}},
	} {
		for _, method := range set.methods {
			for _, params := range a2aParams {
				for _, version := range set.versions {
					id++
					body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, id, method)
					if params != "" {
						body += `,"params":` + params
					}
					body += "}"
					// A stream to a task that exists would follow it to its
					// end; none of these names one, so each ends at once.
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
					status, ct, b, err := post(ctx, version, body)
					cancel()
					sent++
					if err == nil {
						err = checkA2AAnswer(body, fmt.Sprint(id), status, ct, b)
					}
					if err != nil {
						t.Errorf("%s (A2A-Version %q) params %.80s: %v", method, version, params, err)
					}
				}
			}
		}
	}
	wg.Wait()
	if besideErr != nil {
		t.Fatalf("the honest assessment beside %d malformed requests: %v", sent, besideErr)
	}
	if got, want := outcomeOf(beside), outcomeOf(alone); got["score"] != want["score"] || got["success"] != want["success"] || got["summary"] != want["summary"] {
		t.Errorf("the honest task beside the malformed requests: %v, alone: %v", got, want)
	}
	if _, err := blockingResult(t.Context(), c, req); err != nil {
		t.Errorf("after %d malformed requests: %v", sent, err)
	}
	for _, bad := range []string{"panicked", "recovered a panic"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the green agent's log says %q:\n%.3000s", bad, logs.String())
		}
	}
	t.Logf("%d malformed requests answered", sent)
}
