package green

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/internal/a2atest"
)

// resultValues finds, anywhere in a decoded JSON document, the data part
// of the artifact named Result and the task's final status message text,
// each as canonical JSON (sorted keys).
func resultValues(v any, data, status *string) {
	switch x := v.(type) {
	case map[string]any:
		if x["name"] == ResultArtifactName {
			if parts, ok := x["parts"].([]any); ok {
				for _, p := range parts {
					if d, ok := p.(map[string]any)["data"]; ok {
						b, _ := json.Marshal(d)
						*data = string(b)
					}
				}
			}
		}
		if st, ok := x["status"].(map[string]any); ok {
			if s, _ := st["state"].(string); s == "completed" || s == "TASK_STATE_COMPLETED" {
				b, _ := json.Marshal(st["message"])
				*status = string(b)
			}
		}
		for _, e := range x {
			resultValues(e, data, status)
		}
	case []any:
		for _, e := range x {
			resultValues(e, data, status)
		}
	}
}

// TestOneTaskOneJSONOnEveryRoad: one assessment's task, read from every
// road it takes — its event stream, its push notifications and tasks/get,
// on A2A 1.0 and on 0.3 — carries the same result JSON and the same final
// status, byte for byte once keys are sorted; the empty lists of the
// result stay empty lists. Before, tasks/get and the 0.3 push (the
// stored copy) said null where the stream and the 1.0 push said [].
func TestOneTaskOneJSONOnEveryRoad(t *testing.T) {
	hook := startHook(t, nil, nil)
	g := pushServer(t, fastRetries, nil)
	purple := a2atest.Start(t, a2atest.Options{Name: "good", Reply: "done"})
	post := func(version, body string) []byte {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if version == "1.0" {
			req.Header.Set("A2A-Version", "1.0")
		}
		resp, err := g.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	text, _ := json.Marshal(routeRequest(purple.URL))
	for _, version := range []string{"1.0", "0.3"} {
		t.Run(version, func(t *testing.T) {
			path := "/hook-" + version
			stream, get := "SendStreamingMessage", "GetTask"
			params := fmt.Sprintf(`{"message":{"role":"ROLE_USER","messageId":"m-%s","parts":[{"text":%s}]},"configuration":{"taskPushNotificationConfig":{"url":%q}}}`,
				version, text, hook.URL+path)
			if version == "0.3" {
				stream, get = "message/stream", "tasks/get"
				params = fmt.Sprintf(`{"message":{"kind":"message","role":"user","messageId":"m-%s","parts":[{"kind":"text","text":%s}]},"configuration":{"pushNotificationConfig":{"url":%q}}}`,
					version, text, hook.URL+path)
			}
			roads := map[string][2]string{} // road: data, status
			var taskID string
			var data, status string
			sc := bufio.NewScanner(bytes.NewReader(post(version, `{"jsonrpc":"2.0","id":1,"method":"`+stream+`","params":`+params+`}`)))
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				d, ok := strings.CutPrefix(sc.Text(), "data:")
				if !ok {
					continue
				}
				var ev map[string]any
				if err := json.Unmarshal([]byte(strings.TrimSpace(d)), &ev); err != nil {
					t.Fatal(err)
				}
				resultValues(ev, &data, &status)
				if taskID == "" {
					b, _ := json.Marshal(ev["result"])
					var ids struct {
						ID, TaskID string
						Task       struct{ ID string }
					}
					_ = json.Unmarshal(b, &ids)
					taskID = ids.ID + ids.TaskID + ids.Task.ID
				}
			}
			roads["stream"] = [2]string{data, status}
			if taskID == "" || data == "" {
				t.Fatalf("the stream carried no task or no result (%q)", data)
			}

			data, status = "", ""
			var got any
			if err := json.Unmarshal(post(version, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"id":%q}}`, get, taskID)), &got); err != nil {
				t.Fatal(err)
			}
			resultValues(got, &data, &status)
			roads["tasks/get"] = [2]string{data, status}

			pushed := waitHook(t, hook, "the completed task", func(got []hookRequest) bool {
				for _, r := range got {
					if strings.Contains(string(r.body), taskID) && (strings.Contains(string(r.body), `"TASK_STATE_COMPLETED"`) || strings.Contains(string(r.body), `"completed"`)) {
						return true
					}
				}
				return false
			})
			data, status = "", ""
			for _, r := range pushed {
				if !strings.Contains(string(r.body), taskID) {
					continue
				}
				var ev any
				if err := json.Unmarshal(r.body, &ev); err != nil {
					t.Fatal(err)
				}
				resultValues(ev, &data, &status)
			}
			roads["push"] = [2]string{data, status}

			want := roads["stream"]
			if !strings.Contains(want[0], "[]") {
				t.Fatalf("the result holds no empty list, so this test shows nothing: %.300s", want[0])
			}
			for road, got := range roads {
				if got[0] != want[0] {
					t.Errorf("%s: the result differs from the stream's:\n%s\nstream:\n%s", road, firstDifference(got[0], want[0]), firstDifference(want[0], got[0]))
				}
				if got[1] != want[1] {
					t.Errorf("%s: the final status %s, the stream's %s", road, got[1], want[1])
				}
			}
		})
	}
}

// firstDifference is s from a little before where it first differs from
// other.
func firstDifference(s, other string) string {
	i := 0
	for i < len(s) && i < len(other) && s[i] == other[i] {
		i++
	}
	from := max(0, i-80)
	return "…" + s[from:min(len(s), i+80)] + "…"
}
