package purple

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// TestReviewByRule pins the documented rule.
func TestReviewByRule(t *testing.T) {
	for _, tc := range []struct {
		text     string
		decision string
		rec      float64
		scores   map[string]int
	}{
		// Nothing to go by: every aspect 3, reject.
		{"Nothing to see here.", DecisionReject, 3, map[string]int{"originality": 3, "clarity": 3, "soundness": 3, "substance": 3}},
		// One positive cue per aspect: round(3 + 2/3) = 4 each, accept.
		{"A novel, clear, rigorous and significant method.", DecisionAccept, 4, map[string]int{"originality": 4, "clarity": 4, "soundness": 4, "substance": 4}},
		// "not convincing" is one negative, not also a positive.
		{"The results are not convincing.", DecisionReject, 2.75, map[string]int{"originality": 3, "clarity": 3, "soundness": 2, "substance": 3}},
		// Case and repetition: 3 negatives, round(3 - 6/5) = 2.
		{"UNCLEAR. unclear; Unclear!", DecisionReject, 2.75, map[string]int{"originality": 3, "clarity": 2, "soundness": 3, "substance": 3}},
	} {
		r := ReviewByRule(tc.text)
		if r.Decision != tc.decision || r.Recommendation != tc.rec {
			t.Errorf("%q: %s %v, want %s %v (%s)", tc.text, r.Decision, r.Recommendation, tc.decision, tc.rec, r.Rationale)
		}
		for k, v := range tc.scores {
			if r.Scores[k] != v {
				t.Errorf("%q: %s %d, want %d", tc.text, k, r.Scores[k], v)
			}
		}
	}
}

func TestParseReviewText(t *testing.T) {
	for text, want := range map[string]string{
		`{"decision": "Accept", "recommendation": 4}`:                        DecisionAccept,
		"We think so.\n```json\n{\"decision\": \"reject\"}\n```":             DecisionReject,
		`prefix {"other": 1} then {"decision": "weak reject", "scores": {}}`: DecisionReject,
	} {
		r, err := ParseReviewText(text)
		if err != nil || r.Decision != want {
			t.Errorf("%q: %+v, %v", text, r, err)
		}
	}
	for _, bad := range []string{"", MalformedAnswer, `{"decision": "maybe"}`, `{"verdict": "accept"}`} {
		if r, err := ParseReviewText(bad); err == nil {
			t.Errorf("%q parsed as %+v", bad, r)
		}
	}
	r, _ := ParseReviewText(`{"decision": "accept", "recommendation": 9, "scores": {"Clarity": 7}}`)
	if r.Recommendation != 4 || r.Scores["clarity"] != 5 {
		t.Errorf("out-of-range values: %+v", r)
	}
}

func TestParsePeers(t *testing.T) {
	peers, err := ParsePeers(" a=http://h:1/a , http://reviewer-2:9009,b=https://x/y")
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{{"a", "http://h:1/a"}, {"reviewer-2:9009", "http://reviewer-2:9009"}, {"b", "https://x/y"}}
	if len(peers) != len(want) {
		t.Fatalf("%v", peers)
	}
	for i := range want {
		if peers[i] != want[i] {
			t.Errorf("peer %d: %+v, want %+v", i, peers[i], want[i])
		}
	}
	for _, bad := range []string{"a=h:1", "a=http://x,a=http://y", "=ftp://x"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCustomRole: a role given as Options.Handler and one passed by name in
// Options.Roles answer through the same executor, with the env's tool span
// around their work.
func TestCustomRole(t *testing.T) {
	echo := RoleFunc(func(ctx context.Context, env *Env, req *Request) (*Answer, error) {
		var out string
		err := env.Tool(ctx, "echo", map[string]any{"n": 1}, func(context.Context) (string, error) {
			out = env.Name + " heard: " + req.Text
			return out, nil
		})
		return &Answer{Text: out, Data: map[string]any{"code": "x = 1"}}, err
	})
	roles := StandardRoles(SolverOptions{})
	roles["test-echo"] = echo

	h := newHarness(t)
	failing := RoleFunc(func(context.Context, *Env, *Request) (*Answer, error) { return nil, errors.New("cannot solve") })
	sys := startSystem(t, h,
		AgentSpec{Options: Options{Name: "echo", Role: "test-echo", Roles: roles}},
		AgentSpec{Options: Options{Name: "solver", Role: "solver", Handler: failing}},
	)
	reply, td, err := h.call(t, reviewRequest(sys.Agent("echo").URL(), "t"))
	if err != nil || !strings.HasPrefix(reply.Text, "echo heard: Review this paper") || len(reply.Data) != 1 || reply.Data[0]["code"] != "x = 1" {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	var tool *tracedata.Step
	for i := range td.Steps {
		if td.Steps[i].Name == otelmap.SpanExecuteToolPrefix+"echo" {
			tool = &td.Steps[i]
		}
	}
	if tool == nil || tool.Agent != "echo" || tool.CallType != tracedata.CallTool {
		t.Errorf("tool step %+v", tool)
	}
	reply, _, err = h.call(t, reviewRequest(sys.Agent("solver").URL(), "t"))
	if err == nil || reply == nil || !strings.Contains(reply.Text, "cannot solve") || reply.ExtensionSteps == 0 {
		t.Errorf("failing role: %+v, %v; want a failed task with its steps", reply, err)
	}
	if _, err := NewServer(t.Context(), Options{Role: "nobody", Port: 0, Getenv: noEnv, Roles: roles}); err == nil || !strings.Contains(err.Error(), "test-echo") {
		t.Errorf("unknown role: %v (the error should list the known roles)", err)
	}
	// The standard roles are new values on each call: a program's roles
	// do not leak into another's.
	if _, ok := StandardRoles(SolverOptions{})["test-echo"]; ok {
		t.Error("a role added to one StandardRoles map is in the next")
	}
	if got, want := RoleNames(StandardRoles(SolverOptions{})), []string{RoleCoordinator, RoleReviewer, RoleSolver, RoleSolverLLM, RoleSolverOracle, RoleSolverRepair}; !slices.Equal(got, want) {
		t.Errorf("standard roles %v, want %v", got, want)
	}
}

// fakeLLM speaks the OpenAI chat-completions wire format and answers with
// the contents given, one per call (the last repeats).
func fakeLLM(t *testing.T, contents ...string) (*httptest.Server, *atomic.Int32, chan map[string]any) {
	t.Helper()
	var calls atomic.Int32
	bodies := make(chan map[string]any, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		select {
		case bodies <- body:
		default:
		}
		n := int(calls.Add(1)) - 1
		content := contents[min(n, len(contents)-1)]
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "fake-model-2024",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls, bodies
}

// TestLLMReviewer: with a key, a reviewer's answer is the LLM's, asked at
// temperature 0 for a JSON object, inside a chat span with the model and
// the token counts; an answer without a decision falls back to the rule.
func TestLLMReviewer(t *testing.T) {
	llm, calls, bodies := fakeLLM(t, `{"decision": "reject", "recommendation": 2, "rationale": "thin evidence"}`, "I cannot decide.")
	env := func(k string) string {
		return map[string]string{llmconfig.EnvAPIKey: "test-key", llmconfig.EnvBaseURL: llm.URL + "/v1/", llmconfig.EnvModel: "fake-model"}[k]
	}
	h := newHarness(t)
	sys := startSystem(t, h, AgentSpec{Options: Options{Name: "llm-reviewer", Getenv: env}})
	reply, td, err := h.call(t, reviewRequest(sys.Agent("llm-reviewer").URL(), "t"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReview(reply)
	if err != nil || r.Decision != DecisionReject || r.Rationale != "thin evidence" {
		t.Errorf("review %+v, %v: want the LLM's (the rule would accept this paper)", r, err)
	}
	body := <-bodies
	if body["model"] != "fake-model" || body["temperature"] != 0.0 {
		t.Errorf("request %v", body)
	}
	if rf, _ := body["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format %v", body["response_format"])
	}
	var chat *tracedata.Step
	for i := range td.Steps {
		if td.Steps[i].Name == otelmap.SpanChatPrefix+"fake-model" {
			chat = &td.Steps[i]
		}
	}
	if chat == nil || chat.CallType != tracedata.CallTool || chat.Model != "fake-model" || chat.TotalTokens != 150 || chat.Agent != "llm-reviewer" {
		t.Errorf("chat step %+v", chat)
	}

	// The second answer holds no review: the rule answers.
	reply, _, err = h.call(t, reviewRequest(sys.Agent("llm-reviewer").URL(), "t2"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := ParseReview(reply); r == nil || !strings.HasPrefix(r.Rationale, "rule-based") || calls.Load() != 2 {
		t.Errorf("fallback review %+v after %d calls", r, calls.Load())
	}
	if _, err := NewServer(t.Context(), Options{Port: 0, Getenv: noEnv, LLM: &llmconfig.Config{APIKey: "k", BaseURL: "not a url"}}); err == nil {
		t.Error("a malformed LLM base URL was accepted")
	}
}
