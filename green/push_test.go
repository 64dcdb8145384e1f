package green

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/scenario"
)

// Push notifications of real assessments to real webhooks on loopback
// (docs/push-notifications.md): both protocol versions, the allow-list, and
// webhooks that fail or hang without the assessment noticing.

// hookReceiver is a webhook on loopback that records what it is sent and
// answers with answer (nil: 200).
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []hookRequest
	answer func(w http.ResponseWriter, r *http.Request)
}

type hookRequest struct {
	header http.Header
	body   []byte
}

func startHook(t *testing.T, ln net.Listener, answer func(http.ResponseWriter, *http.Request)) *hookReceiver {
	t.Helper()
	h := &hookReceiver{answer: answer}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, hookRequest{header: r.Header.Clone(), body: body})
		h.mu.Unlock()
		if h.answer != nil {
			h.answer(w, r)
		}
	}))
	if ln != nil {
		_ = h.Listener.Close()
		h.Listener = ln
	}
	h.Start()
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

// waitHook waits, with a generous bound, until cond holds of what h got.
func waitHook(t *testing.T, h *hookReceiver, what string, cond func([]hookRequest) bool) []hookRequest {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := h.requests()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook: %s not seen in %d requests", what, len(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fastRetries keeps the waits between attempts short for the tests.
var fastRetries = a2aserve.PushOptions{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

func pushServer(t *testing.T, push a2aserve.PushOptions, allow *a2acall.AllowList) *greenUnderTest {
	return startGreen(t, ServerOptions{
		Scenarios:        map[string]scenario.Scenario{"route": routeScenario{}},
		ProgressInterval: time.Minute,
		Push:             push,
		Messenger:        a2acall.Options{Allow: allow},
	})
}

func routeRequest(purpleURL string) string {
	return fmt.Sprintf(`{"participants": {"good": %q}, "config": {"scenario": "route", "task_ids": ["good#1"], "settle_quiet_ms": 50, "settle_max_wait_ms": 500}}`, purpleURL)
}

func TestServerCardDeclaresPush(t *testing.T) {
	g := startGreen(t, ServerOptions{})
	resp, err := g.http.Get(g.url + ".well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		Capabilities map[string]any `json:"capabilities"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	// One document is both versions' card (card.go): the field is the
	// same in both.
	if card.Capabilities["pushNotifications"] != true {
		t.Errorf("capabilities = %v, want pushNotifications true", card.Capabilities)
	}
}

// TestServerPushAssessment10: a 1.0 client sets a webhook with its
// message; the webhook gets the task, the working updates, the Result
// artifact and the completed status, in order, with the client's token and
// credentials.
func TestServerPushAssessment10(t *testing.T) {
	hook := startHook(t, nil, nil)
	g := pushServer(t, fastRetries, nil)
	purple := a2atest.Start(t, a2atest.Options{Name: "good", Reply: "done"})
	c := g.client10(t)
	req := userMessage(routeRequest(purple.URL))
	req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL + "/a2a", Token: "client-token",
		Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "hook-secret"}}}
	out, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	task := out.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("assessment %s", task.Status.State)
	}
	got := waitHook(t, hook, "the completed status", func(got []hookRequest) bool {
		return slices.ContainsFunc(got, func(r hookRequest) bool { return strings.Contains(string(r.body), `"TASK_STATE_COMPLETED"`) })
	})
	var seq []string
	for _, r := range got {
		if r.header.Get(a2aserve.NotificationTokenHeader) != "client-token" || r.header.Get("Authorization") != "Bearer hook-secret" {
			t.Errorf("headers %v lack the client's token or credentials", r.header)
		}
		var sr a2a.StreamResponse
		if err := json.Unmarshal(r.body, &sr); err != nil {
			t.Fatalf("notification %s: %v", r.body, err)
		}
		if sr.Event.TaskInfo().TaskID != task.ID {
			t.Errorf("notification of task %s, want %s", sr.Event.TaskInfo().TaskID, task.ID)
		}
		switch ev := sr.Event.(type) {
		case *a2a.Task:
			seq = append(seq, "task")
		case *a2a.TaskStatusUpdateEvent:
			seq = append(seq, string(ev.Status.State))
		case *a2a.TaskArtifactUpdateEvent:
			seq = append(seq, "artifact:"+ev.Artifact.Name)
			if res := resultOf(t, ev.Artifact); res["schema"] == nil {
				t.Errorf("the pushed artifact holds no result: %v", res)
			}
		}
	}
	want := []string{"task", string(a2a.TaskStateWorking)}
	if len(seq) < 4 || !slices.Equal(seq[:2], want) || !slices.Equal(seq[len(seq)-2:], []string{"artifact:" + ResultArtifactName, string(a2a.TaskStateCompleted)}) {
		t.Errorf("notifications %v: want task, working, ..., the Result artifact, completed", seq)
	}

	// The config is there to read, list and delete, through a2a-go's client.
	list, err := c.ListTaskPushConfigs(t.Context(), &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(list) != 1 || list[0].URL != hook.URL+"/a2a" {
		t.Fatalf("list: %v %v", list, err)
	}
	if _, err := c.GetTaskPushConfig(t.Context(), &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: list[0].ID}); err != nil {
		t.Errorf("get: %v", err)
	}
	if err := c.DeleteTaskPushConfig(t.Context(), &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: list[0].ID}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, err := c.GetTaskPushConfig(t.Context(), &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: list[0].ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("get after delete: %v, want TaskNotFoundError", err)
	}
}

// TestServerPushAssessment03: a 0.3 client (a2a-go's a2av0, the wire of
// AgentBeats' Python clients) gets the task itself in each notification,
// the last one completed with the Result artifact.
func TestServerPushAssessment03(t *testing.T) {
	hook := startHook(t, nil, nil)
	g := pushServer(t, fastRetries, nil)
	purple := a2atest.Start(t, a2atest.Options{Name: "good", Reply: "done"})
	c, rec := g.client03(t)
	req := userMessage(routeRequest(purple.URL))
	req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL, Token: "tok-03"}}
	out, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.methods(), "message/send") {
		t.Fatalf("the client spoke %v, not 0.3", rec.methods())
	}
	task := out.(*a2a.Task)
	type task03 struct {
		Kind, ID  string
		Status    struct{ State string }
		Artifacts []struct{ Name string }
	}
	got := waitHook(t, hook, "the completed task", func(got []hookRequest) bool {
		return slices.ContainsFunc(got, func(r hookRequest) bool {
			var tk task03
			return json.Unmarshal(r.body, &tk) == nil && tk.Status.State == "completed"
		})
	})
	for i, r := range got {
		var tk task03
		if err := json.Unmarshal(r.body, &tk); err != nil || tk.Kind != "task" || tk.ID != string(task.ID) {
			t.Errorf("notification %d is no 0.3 task of %s: %s", i, task.ID, r.body)
		}
		if r.header.Get(a2aserve.NotificationTokenHeader) != "tok-03" {
			t.Errorf("token header %q", r.header.Get(a2aserve.NotificationTokenHeader))
		}
		if i == len(got)-1 && (len(tk.Artifacts) != 1 || tk.Artifacts[0].Name != ResultArtifactName) {
			t.Errorf("the completed task's artifacts: %+v", tk.Artifacts)
		}
	}
	configs, err := c.ListTaskPushConfigs(t.Context(), &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(configs) != 1 || configs[0].Token != "tok-03" {
		t.Errorf("0.3 list: %v %v", configs, err)
	}
}

// TestServerPushAllowList: with --allow-participants, a webhook outside
// the list is refused when set (inline or alone), and nothing reaches it.
func TestServerPushAllowList(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address on this machine (Linux has 127.0.0.0/8): %v", err)
	}
	outside := startHook(t, ln, nil)
	allow, err := a2acall.ParseAllowList("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	g := pushServer(t, fastRetries, allow)
	purple := a2atest.Start(t, a2atest.Options{Name: "good", Reply: "done"})
	c := g.client10(t)

	req := userMessage(routeRequest(purple.URL))
	req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: outside.URL}}
	if _, err := c.SendMessage(t.Context(), req); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("an assessment with a webhook outside the list: %v, want invalid params", err)
	}
	if n := len(purple.Calls()); n != 0 {
		t.Errorf("the refused request still called the participant %d times", n)
	}

	out, err := c.SendMessage(t.Context(), userMessage(routeRequest(purple.URL)))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{outside.URL, strings.Replace(outside.URL, "127.0.0.2", "[::1]", 1), "http://169.254.169.254/latest/meta-data/"} {
		_, err = c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: out.(*a2a.Task).ID, URL: u})
		if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "not among the allowed") {
			t.Errorf("webhook %s: %v, want refused by the allow-list", u, err)
		}
	}
	if s := g.srv.Push().Stats(); s.Configs != 0 {
		t.Errorf("%d configs stored", s.Configs)
	}

	// Spellings of the outside host that pass for a name when the list
	// holds ranges: accepted when set, they are stopped when connecting
	// (the dialer checks the address), or refused outright. Either way
	// nothing reaches the host.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	accepted := 0
	for _, u := range []string{
		"http://127.0.0.1@127.0.0.2:" + port + "/",    // userinfo before the real host
		"http://127.0.0.2.:" + port + "/",             // a trailing dot
		"http://[::ffff:127.0.0.2]:" + port + "/",     // IPv4-mapped IPv6
		"http://0x7f.0.0.2:" + port + "/",             // hexadecimal
		"http://2130706434:" + port + "/",             // one decimal number
		"http://127.0.0.2%2f@127.0.0.1:" + port + "/", // an escaped slash in the userinfo (allowed host)
	} {
		req := userMessage(routeRequest(purple.URL))
		req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: u}}
		_, err := c.SendMessage(t.Context(), req)
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, a2a.ErrInvalidParams):
			t.Errorf("webhook %s: %v", u, err)
		}
	}
	if accepted > 0 {
		waitFor(t, "the accepted webhooks' notifications given up", func() bool {
			s := g.srv.Push().Stats()
			return s.Failed >= uint64(accepted)
		})
	}
	if n := len(outside.requests()); n != 0 {
		t.Errorf("the webhook outside the list got %d requests", n)
	}
	t.Logf("%d of the spellings were accepted when set and stopped when connecting; push %+v", accepted, g.srv.Push().Stats())
}

// TestServerPushFailingWebhook: a webhook that always fails gets a bounded
// number of attempts per notification; the assessment completes as if
// there were none.
func TestServerPushFailingWebhook(t *testing.T) {
	hook := startHook(t, nil, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	opts := fastRetries
	opts.MaxAttempts = 2
	g := pushServer(t, opts, nil)
	purple := a2atest.Start(t, a2atest.Options{Name: "good", Reply: "done"})
	req := userMessage(routeRequest(purple.URL))
	req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL}}
	out, err := g.client10(t).SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	task := out.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("assessment %s with %d artifacts", task.Status.State, len(task.Artifacts))
	}
	var s a2aserve.PushStats
	waitFor(t, "every notification given up", func() bool {
		s = g.srv.Stats().Push
		return s.Failed > 0 && s.Failed*2 == uint64(len(hook.requests()))
	})
	if s.Delivered != 0 || s.Retried != s.Failed {
		t.Errorf("stats %+v: want each notification tried twice", s)
	}
}

// TestServerPushHangingWebhookAtShutdown: a webhook that never answers
// holds neither the assessment nor the shutdown, and leaves no goroutine.
func TestServerPushHangingWebhookAtShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		release := make(chan struct{})
		hook := startHook(t, nil, func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer hook.Close()
		defer close(release)
		g := pushServer(t, a2aserve.PushOptions{Timeout: time.Hour}, nil)
		purple := a2atest.Start(t, a2atest.Options{Name: "good", Reply: "done"})
		defer purple.Close()
		c := g.client10(t)
		req := userMessage(routeRequest(purple.URL))
		req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL}}
		out, err := c.SendMessage(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if st := out.(*a2a.Task).Status.State; st != a2a.TaskStateCompleted {
			t.Fatalf("assessment %s", st)
		}
		waitHook(t, hook, "the first notification", func(got []hookRequest) bool { return len(got) == 1 })
		g.stop() // Serve returns within its shutdown timeout, cutting the delivery
		_ = c.Destroy()
		if s := g.srv.Push().Stats(); s.Dropped == 0 {
			t.Errorf("stats %+v: the cut deliveries are not counted", s)
		}
	}()
	testenv.CheckNoGoroutineLeak(t, before)
}
