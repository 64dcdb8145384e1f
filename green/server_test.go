package green

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/tracedata"
)

// The A2A server over real loopback HTTP, with real a2a-go clients of both
// protocol versions and a hand-written 0.3 SSE reader that sees the wire as
// AgentBeats' Python a2a-sdk 0.3 client does.

// greenUnderTest is a green agent served on a free port for one test.
type greenUnderTest struct {
	srv  *Server
	url  string
	http *http.Client
	tr   *http.Transport
	stop func()
}

// startGreen serves a green agent until the end of the test. The judge
// answers by rule; the OpenTelemetry environment is ignored.
func startGreen(t *testing.T, opts ServerOptions) *greenUnderTest {
	t.Helper()
	t.Setenv(llmconfig.EnvAPIKey, "")
	opts.Port = 0
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	srv, err := NewServer(t.Context(), opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	g := &greenUnderTest{srv: srv, url: srv.URL(), http: &http.Client{Transport: tr}, tr: tr}
	var once sync.Once
	g.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Errorf("Serve did not return after its context ended")
			}
			tr.CloseIdleConnections()
		})
	}
	t.Cleanup(g.stop)
	return g
}

// client10 is an a2a-go 1.0 client built from the served card.
func (g *greenUnderTest) client10(t *testing.T) *a2aclient.Client {
	t.Helper()
	card, err := (&agentcard.Resolver{Client: g.http}).Resolve(t.Context(), g.url)
	if err != nil {
		t.Fatalf("resolve card (1.0): %v", err)
	}
	c, err := a2aclient.NewFactory(a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(g.http)).CreateFromCard(t.Context(), card)
	if err != nil {
		t.Fatalf("1.0 client: %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// methodRecorder notes the JSON-RPC method of every request a client
// sends, to prove which protocol version was spoken.
type methodRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (m *methodRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		_ = r.Body.Close()
		var probe struct{ Method string }
		_ = json.Unmarshal(body, &probe)
		m.mu.Lock()
		m.seen = append(m.seen, probe.Method)
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return m.base.RoundTrip(r)
}

func (m *methodRecorder) methods() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

// client03 is a2a-go's 0.3 JSON-RPC client (a2av0), built from the card as
// a 0.3 client parses it.
func (g *greenUnderTest) client03(t *testing.T) (*a2aclient.Client, *methodRecorder) {
	t.Helper()
	card, err := (&agentcard.Resolver{Client: g.http, CardParser: a2av0.NewAgentCardParser()}).Resolve(t.Context(), g.url)
	if err != nil {
		t.Fatalf("resolve card (0.3): %v", err)
	}
	rec := &methodRecorder{base: g.tr}
	c, err := a2aclient.NewFactory(a2aclient.WithDefaultsDisabled(),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: &http.Client{Transport: rec}}),
	).CreateFromCard(t.Context(), card)
	if err != nil {
		t.Fatalf("0.3 client: %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, rec
}

func userMessage(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

// streamAll collects a stream's events; an error fails the test.
func streamAll(t *testing.T, ctx context.Context, c *a2aclient.Client, text string) []a2a.Event {
	t.Helper()
	var events []a2a.Event
	for ev, err := range c.SendStreamingMessage(ctx, userMessage(text)) {
		if err != nil {
			t.Fatalf("stream: %v (after %d events)", err, len(events))
		}
		events = append(events, ev)
	}
	return events
}

// streamSummary is what a stream said: its states in order, the texts of
// its working updates, the final status text and the Result artifact.
type streamSummary struct {
	taskID   a2a.TaskID
	states   []a2a.TaskState
	working  []string
	final    a2a.TaskState
	text     string
	artifact *a2a.Artifact
	// artifactBeforeFinal is true when the artifact came before the final
	// status.
	artifactBeforeFinal bool
}

func summarize(events []a2a.Event) streamSummary {
	var s streamSummary
	for _, ev := range events {
		switch v := ev.(type) {
		case *a2a.Task:
			s.taskID = v.ID
			s.states = append(s.states, v.Status.State)
			s.final = v.Status.State
			s.text = messageText(v.Status.Message)
			for _, a := range v.Artifacts {
				if a.Name == ResultArtifactName {
					s.artifact = a
				}
			}
		case *a2a.TaskStatusUpdateEvent:
			s.states = append(s.states, v.Status.State)
			s.final = v.Status.State
			s.text = messageText(v.Status.Message)
			if v.Status.State == a2a.TaskStateWorking {
				s.working = append(s.working, s.text)
			}
		case *a2a.TaskArtifactUpdateEvent:
			if v.Artifact.Name == ResultArtifactName {
				s.artifact = v.Artifact
				s.artifactBeforeFinal = !s.final.Terminal()
			}
		}
	}
	return s
}

func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// resultOf reads the JSON result out of a Result artifact, checking its
// two parts.
func resultOf(t *testing.T, art *a2a.Artifact) map[string]any {
	t.Helper()
	if art == nil {
		t.Fatal("no Result artifact")
	}
	if len(art.Parts) != 2 {
		t.Fatalf("Result artifact has %d parts, want 2", len(art.Parts))
	}
	md := art.Parts[0].Text()
	if !strings.HasPrefix(md, "# coordbench result") || json.Valid([]byte(md)) {
		t.Errorf("text part is not the Markdown summary: %.200q", md)
	}
	data, ok := art.Parts[1].Data().(map[string]any)
	if !ok {
		t.Fatalf("second part is %T, want a JSON object", art.Parts[1].Data())
	}
	if data["schema"] != report.Schema {
		t.Errorf("schema = %v", data["schema"])
	}
	return data
}

func TestServerCardOverHTTP(t *testing.T) {
	g := startGreen(t, ServerOptions{Card: CardOptions{Name: "coordbench-test"}})
	// As `curl -s localhost:9009/.well-known/agent-card.json` does, and
	// as the AgentBeats template's conformance test reads it.
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json", "/"} {
		resp, err := g.http.Get(strings.TrimSuffix(g.url, "/") + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET %s: %s %s", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		var card map[string]any
		if err := json.Unmarshal(body, &card); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		checkConformanceCard(t, card, g.url)
	}

	resp, err := g.http.Get(g.url + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: %s", resp.Status)
	}

	// A 1.0 client picks the 1.0 interface, a 0.3 client the 0.3 one, at
	// the same URL.
	card10, err := (&agentcard.Resolver{Client: g.http}).Resolve(t.Context(), g.url)
	if err != nil {
		t.Fatal(err)
	}
	if card10.Name != "coordbench-test" || !card10.Capabilities.Streaming || len(card10.Skills) == 0 {
		t.Errorf("1.0 card = %+v", card10)
	}
	var versions []string
	for _, iface := range card10.SupportedInterfaces {
		versions = append(versions, string(iface.ProtocolVersion))
		if iface.URL != g.url || iface.ProtocolBinding != a2a.TransportProtocolJSONRPC {
			t.Errorf("interface %+v", iface)
		}
	}
	if !slices.Contains(versions, "1.0") || !slices.Contains(versions, "0.3") {
		t.Errorf("interfaces' versions = %v, want 1.0 and 0.3", versions)
	}
	card03, err := (&agentcard.Resolver{Client: g.http, CardParser: a2av0.NewAgentCardParser()}).Resolve(t.Context(), g.url)
	if err != nil {
		t.Fatal(err)
	}
	if card03.Name != "coordbench-test" || len(card03.Capabilities.Extensions) != 1 || card03.Capabilities.Extensions[0].URI != tracedata.ExtensionURI {
		t.Errorf("0.3 card = %+v", card03)
	}
}

// checkConformanceCard checks the card as the AgentBeats template's
// test_agent_card does (adapted from the A2A inspector), plus the 0.3
// fields a Python a2a-sdk 0.3 client needs to pick its transport.
func checkConformanceCard(t *testing.T, card map[string]any, url string) {
	t.Helper()
	for _, f := range []string{"name", "description", "url", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills", "protocolVersion", "preferredTransport"} {
		if _, ok := card[f]; !ok {
			t.Errorf("card lacks %q", f)
		}
	}
	if u, _ := card["url"].(string); u != url || !strings.HasPrefix(u, "http://") {
		t.Errorf("url = %v, want %s", card["url"], url)
	}
	if v, _ := card["protocolVersion"].(string); !strings.HasPrefix(v, "0.3") {
		t.Errorf("protocolVersion = %v, want 0.3", card["protocolVersion"])
	}
	if card["preferredTransport"] != "JSONRPC" {
		t.Errorf("preferredTransport = %v", card["preferredTransport"])
	}
	caps, ok := card["capabilities"].(map[string]any)
	if !ok || caps["streaming"] != true {
		t.Errorf("capabilities = %v, want streaming true", card["capabilities"])
	}
	exts, _ := caps["extensions"].([]any)
	if len(exts) != 1 || exts[0].(map[string]any)["uri"] != tracedata.ExtensionURI || exts[0].(map[string]any)["description"] == "" {
		t.Errorf("capabilities.extensions = %v", caps["extensions"])
	}
	for _, f := range []string{"defaultInputModes", "defaultOutputModes"} {
		modes, ok := card[f].([]any)
		if !ok || len(modes) == 0 {
			t.Errorf("%s = %v", f, card[f])
		}
		for _, m := range modes {
			if _, ok := m.(string); !ok {
				t.Errorf("%s holds %v", f, m)
			}
		}
	}
	skills, ok := card["skills"].([]any)
	if !ok || len(skills) == 0 {
		t.Fatalf("skills = %v", card["skills"])
	}
	for _, s := range skills {
		skill := s.(map[string]any)
		examples, _ := skill["examples"].([]any)
		if skill["id"] == "" || skill["name"] == "" || len(examples) == 0 || skill["tags"] == nil {
			t.Errorf("skill %v", skill)
		}
	}
	if ex := skills[0].(map[string]any)["examples"].([]any)[0].(string); !strings.Contains(ex, `"participants"`) {
		t.Errorf("first skill's example %q is not an AgentBeats request", ex)
	}
}

func TestServerHello(t *testing.T) {
	g := startGreen(t, ServerOptions{})
	c10 := g.client10(t)
	c03, rec := g.client03(t)
	checkRejected := func(t *testing.T, state a2a.TaskState, text string) {
		t.Helper()
		if state != a2a.TaskStateRejected {
			t.Errorf("state = %s, want rejected", state)
		}
		for _, want := range []string{"bad assessment request", `{"participants"`, "<white_agent_url>"} {
			if !strings.Contains(text, want) {
				t.Errorf("status message lacks %q:\n%s", want, text)
			}
		}
	}
	for _, tc := range []struct {
		name string
		c    *a2aclient.Client
	}{{"1.0", c10}, {"0.3", c03}} {
		t.Run(tc.name+"/send", func(t *testing.T) {
			res, err := tc.c.SendMessage(t.Context(), userMessage("Hello"))
			if err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
			task, ok := res.(*a2a.Task)
			if !ok {
				t.Fatalf("result %T, want a task", res)
			}
			checkRejected(t, task.Status.State, messageText(task.Status.Message))
		})
		t.Run(tc.name+"/stream", func(t *testing.T) {
			s := summarize(streamAll(t, t.Context(), tc.c, "Hello"))
			if len(s.states) < 2 || s.states[0] != a2a.TaskStateSubmitted {
				t.Errorf("states = %v, want submitted first", s.states)
			}
			checkRejected(t, s.final, s.text)
		})
	}
	if got := rec.methods(); !slices.Equal(got, []string{"message/send", "message/stream"}) {
		t.Errorf("0.3 client sent %v, want message/send then message/stream", got)
	}

	// The wire as a Python a2a-sdk 0.3 client reads it.
	t.Run("0.3/raw", func(t *testing.T) {
		events := rawStream03(t, g, "message/stream", "Hello")
		if len(events) < 2 {
			t.Fatalf("%d events", len(events))
		}
		last := events[len(events)-1]
		if last["kind"] != "status-update" || last["final"] != true {
			t.Errorf("last event = %v", last)
		}
		status := last["status"].(map[string]any)
		if status["state"] != "rejected" {
			t.Errorf("final state = %v", status["state"])
		}
		msg := status["message"].(map[string]any)
		parts := msg["parts"].([]any)
		if text, _ := parts[0].(map[string]any)["text"].(string); !strings.Contains(text, `{"participants"`) {
			t.Errorf("status text = %q", text)
		}
		sent := rawSend03(t, g, "Hello")
		if sent["kind"] != "task" || sent["status"].(map[string]any)["state"] != "rejected" {
			t.Errorf("message/send result = %v", sent)
		}
		if errs := validateEvent03(sent); len(errs) > 0 {
			t.Errorf("message/send result: %v", errs)
		}
	})
}

// rawStream03 posts a 0.3 JSON-RPC request by hand and reads the SSE
// stream line by line, as httpx-sse does for the Python SDK, checking each
// event as the AgentBeats template's validators do.
func rawStream03(t *testing.T, g *greenUnderTest, method, text string) []map[string]any {
	t.Helper()
	resp := rawPost03(t, g, method, text)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type = %q", ct)
	}
	var events []map[string]any
	var data []string
	flush := func() {
		if len(data) == 0 {
			return
		}
		var env struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      any             `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &env); err != nil {
			t.Fatalf("event is not JSON-RPC: %v: %s", err, strings.Join(data, "\n"))
		}
		data = nil
		if env.JSONRPC != "2.0" || env.ID != "req-1" || len(env.Error) > 0 {
			t.Fatalf("event envelope: %+v %s", env, env.Error)
		}
		var ev map[string]any
		if err := json.Unmarshal(env.Result, &ev); err != nil {
			t.Fatal(err)
		}
		if errs := validateEvent03(ev); len(errs) > 0 {
			t.Errorf("event %v: %v", ev["kind"], errs)
		}
		events = append(events, ev)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "id:"), strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "retry:"):
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		default:
			t.Errorf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read stream: %v", err)
	}
	flush()
	return events
}

func rawPost03(t *testing.T, g *greenUnderTest, method, text string) *http.Response {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": "req-1", "method": method,
		"params": map[string]any{"message": map[string]any{
			"kind": "message", "role": "user", "messageId": "m-" + method,
			"parts": []any{map[string]any{"kind": "text", "text": text}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := g.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %s", method, resp.Status)
	}
	return resp
}

func rawSend03(t *testing.T, g *greenUnderTest, text string) map[string]any {
	t.Helper()
	resp := rawPost03(t, g, "message/send", text)
	defer resp.Body.Close()
	var env struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || len(env.Error) > 0 {
		t.Fatalf("message/send: %v %s", err, env.Error)
	}
	return env.Result
}

// validateEvent03 is the AgentBeats template's validate_event: every
// event has a kind, and each kind its required fields.
func validateEvent03(ev map[string]any) []string {
	var errs []string
	need := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, msg)
		}
	}
	status, _ := ev["status"].(map[string]any)
	switch ev["kind"] {
	case "task":
		need(ev["id"] != nil && ev["id"] != "", "task without id")
		need(ev["contextId"] != nil, "task without contextId")
		need(status["state"] != nil, "task without status.state")
	case "status-update":
		need(status["state"] != nil, "status-update without status.state")
		need(ev["taskId"] != nil && ev["contextId"] != nil, "status-update without taskId/contextId")
		_, hasFinal := ev["final"].(bool)
		need(hasFinal, "status-update without final")
		if msg, ok := status["message"].(map[string]any); ok {
			need(msg["role"] == "agent" && msg["kind"] == "message", "status message is not an agent message")
		}
	case "artifact-update":
		art, _ := ev["artifact"].(map[string]any)
		parts, _ := art["parts"].([]any)
		need(len(parts) > 0, "artifact without parts")
		for _, p := range parts {
			k := p.(map[string]any)["kind"]
			need(k == "text" || k == "data" || k == "file", fmt.Sprintf("part kind %v", k))
		}
	case "message":
		parts, _ := ev["parts"].([]any)
		need(len(parts) > 0 && ev["role"] == "agent", "message without parts or agent role")
	default:
		errs = append(errs, fmt.Sprintf("unknown kind %v", ev["kind"]))
	}
	if s, ok := status["state"].(string); ok {
		need(slices.Contains([]string{"submitted", "working", "input-required", "completed", "canceled", "failed", "rejected", "auth-required", "unknown"}, s),
			"state "+s+" is not a 0.3 state")
	}
	return errs
}
