package a2aserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// listExecutor answers with an artifact whose data part and metadata hold
// empty lists, typed and untyped, next to full ones, as the green agent's
// result does ("findings": []).
type listExecutor struct{ testExecutor }

type typedFinding struct {
	Name  string   `json:"name"`
	Notes []string `json:"notes"`
}

func (x *listExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		data := map[string]any{
			"findings": []any{}, "failure_modes": []any{}, "scores": []any{1.5, []any{}},
			"nested": map[string]any{"l": []any{}, "m": map[string]any{}},
		}
		if d, _ := ec.Message.Parts[0].Data().(map[string]any); d["typed"] == true {
			// Go values a2a-go's gob copy cannot take (no type registered).
			data["typed"], data["typed_full"] = []string{}, []typedFinding{{Name: "x", Notes: []string{}}}
		}
		part := a2a.NewDataPart(data)
		part.Metadata = map[string]any{"tags": []any{}}
		art := a2a.NewArtifactEvent(ec, a2a.NewTextPart("summary"), part)
		if !yield(art, nil) {
			return
		}
		done := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil)
		done.Metadata = map[string]any{"warnings": []any{}}
		yield(done, nil)
	}
}

// dataValues collects, in canonical JSON (sorted keys), every "data" and
// "metadata" value anywhere in a decoded JSON document: the values a
// client reads out of parts, artifacts and statuses.
func dataValues(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "data" || k == "metadata" {
				b, _ := json.Marshal(e)
				into[string(b)] = true
			}
			dataValues(e, into)
		}
	case []any:
		for _, e := range x {
			dataValues(e, into)
		}
	}
}

func valuesOf(t *testing.T, docs ...[]byte) []string {
	t.Helper()
	set := map[string]bool{}
	for _, d := range docs {
		var v any
		if err := json.Unmarshal(d, &v); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		dataValues(v, set)
	}
	out := make([]string, 0, len(set))
	for k := range set {
		if !strings.Contains(k, "data_part_compat") && !strings.Contains(k, `"timestamp"`) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// sseData is the data of each event of an event stream.
func sseData(b []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			out = append(out, []byte(strings.TrimSpace(d)))
		}
	}
	return out
}

// TestEmptyListsSurviveEveryRoad: the same task's data read from every
// road it takes — the stream's events, the blocking reply, tasks/get
// (GetTask), ListTasks, and the push notifications, on 1.0 and on 0.3 —
// holds the same values: an empty list stays an empty list everywhere.
// Before emptylists.go the stored copies (tasks/get, the blocking reply,
// the 0.3 push) said null where the stream and the 1.0 push said []; and
// a data part holding Go values of a type gob does not know ("typed")
// failed the task.
func TestEmptyListsSurviveEveryRoad(t *testing.T) {
	for _, c := range []struct {
		version string
		typed   bool
	}{{"1.0", false}, {"0.3", false}, {"1.0", true}, {"0.3", true}} {
		version := c.version
		t.Run(fmt.Sprintf("%s typed=%t", version, c.typed), func(t *testing.T) {
			hook := newWebhook(t, nil)
			p := fastPush(t, PushOptions{})
			store, err := NewTaskStore(TaskStoreLimits{})
			if err != nil {
				t.Fatal(err)
			}
			card := testCard("http://127.0.0.1/")
			card.Capabilities.PushNotifications = true
			exec := &listExecutor{}
			mux, err := NewHandler(Options{Card: card, Executor: exec, TaskStore: store, Push: p})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(mux)
			t.Cleanup(hs.Close)
			srv := &testServer{Server: hs, exec: &exec.testExecutor, store: store}

			// The client's own data, with an empty list, travels in the
			// task's history.
			send, stream, get := "SendMessage", "SendStreamingMessage", "GetTask"
			msg := func() string {
				return `{"message":{"role":"ROLE_USER","messageId":"` + a2a.NewMessageID() + `","parts":[{"data":{"ask":[],"n":2,"typed":` + fmt.Sprint(c.typed) + `}}]},` +
					`"configuration":{"taskPushNotificationConfig":{"url":"` + hook.URL + `/hook"}}}`
			}
			if version == "0.3" {
				send, stream, get = "message/send", "message/stream", "tasks/get"
				msg = func() string {
					return `{"message":{"kind":"message","role":"user","messageId":"` + a2a.NewMessageID() + `","parts":[{"kind":"data","data":{"ask":[],"n":2,"typed":` + fmt.Sprint(c.typed) + `}}]},` +
						`"configuration":{"pushNotificationConfig":{"url":"` + hook.URL + `/hook"}}}`
				}
			}
			rpc := func(method, params string) []byte {
				_, b := post(t, srv, "/", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
				return b
			}
			blocking := rpc(send, msg())
			var reply struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(blocking, &reply); err != nil || reply.Result == nil {
				t.Fatalf("%s: %s", send, blocking)
			}
			var id struct {
				ID   string `json:"id"`
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			}
			_ = json.Unmarshal(reply.Result, &id)
			if !bytes.Contains(reply.Result, []byte("TASK_STATE_COMPLETED")) && !bytes.Contains(reply.Result, []byte(`"completed"`)) {
				t.Errorf("%s did not complete: %s", send, reply.Result)
			}
			taskID := id.ID + id.Task.ID
			got := rpc(get, fmt.Sprintf(`{"id":%q}`, taskID))
			events := sseData(rpc(stream, msg()))

			client := fmt.Sprintf(`{"ask":[],"n":2,"typed":%t}`, c.typed)
			result := `{"failure_modes":[],"findings":[],"nested":{"l":[],"m":{}},"scores":[1.5,[]]}`
			if c.typed {
				result = `{"failure_modes":[],"findings":[],"nested":{"l":[],"m":{}},"scores":[1.5,[]],"typed":[],"typed_full":[{"name":"x","notes":[]}]}`
			}
			roads := map[string][]string{
				"tasks/get":     valuesOf(t, got),
				"stream":        valuesOf(t, events...),
				"blocking":      valuesOf(t, blocking),
				"push (stream)": nil,
			}
			if version == "1.0" {
				roads["ListTasks"] = valuesOf(t, rpc("ListTasks", `{"includeArtifacts":true}`))
			}
			hook.waitFor(t, "both tasks' last notifications", func(got []received) bool {
				n := 0
				for _, g := range got {
					if bytes.Contains(g.body, []byte("TASK_STATE_COMPLETED")) || bytes.Contains(g.body, []byte("TASK_STATE_FAILED")) ||
						bytes.Contains(g.body, []byte(`"completed"`)) || bytes.Contains(g.body, []byte(`"failed"`)) {
						n++
					}
				}
				return n >= 2
			})
			var bodies [][]byte
			for _, g := range hook.requests() {
				bodies = append(bodies, g.body)
			}
			roads["push (stream)"] = valuesOf(t, bodies...)
			for road, vals := range roads {
				for _, w := range []string{client, result} {
					if !slices.Contains(vals, w) {
						t.Errorf("%s lacks %s; it holds %v", road, w, vals)
					}
				}
				for _, v := range vals {
					if strings.Contains(v, "null") {
						t.Errorf("%s holds a null: %s", road, v)
					}
				}
			}
			if version == "1.0" {
				for _, road := range []string{"tasks/get", "blocking", "ListTasks"} {
					if !slices.Contains(roads[road], `{"warnings":[]}`) || !slices.Contains(roads[road], `{"tags":[]}`) {
						t.Errorf("%s: the metadata lost its lists: %v", road, roads[road])
					}
				}
			}
		})
	}
}
