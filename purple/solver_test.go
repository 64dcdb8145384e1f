package purple

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

// solverTestRefs reads the reference code of the validation split, skipping
// (or failing with CI=true) without the data set.
func solverTestRefs(t *testing.T) map[string]solverRef {
	t.Helper()
	f, err := os.Open(testenv.NeedFile(t, filepath.Join(testenv.SharedData(t, "scicode"), "problems_dev.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	refs := map[string]solverRef{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var p struct {
			ID    string `json:"problem_id"`
			Steps []struct {
				Number string `json:"step_number"`
				Header string `json:"function_header"`
				Code   string `json:"ground_truth_code"`
			} `json:"sub_steps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Steps {
			refs[s.Number] = solverRef{Problem: p.ID, Header: s.Header, Code: s.Code}
		}
	}
	return refs
}

// stepRequest is a SciCode message as the green agent sends it.
func stepRequest(url, contextID, problem, step string, turn int, feedback bool, text string) a2acall.SendRequest {
	kind := stepproto.StepKind
	if feedback {
		kind = stepproto.FeedbackKind
	}
	if text == "" {
		text = fmt.Sprintf("SciCode problem %s (test), sub-step %s (1 of 3).\n\nWrite the code.", problem, step)
	}
	return a2acall.SendRequest{URL: url, ContextID: contextID, Text: text, Data: map[string]any{
		"kind": kind, "problem_id": problem, "step_number": step, "turn": turn, "feedback": feedback,
	}}
}

// answerCode is the code of a solver's reply, from its data part.
func answerCode(t *testing.T, r *a2acall.Reply) string {
	t.Helper()
	for _, d := range r.Data {
		if c, ok := d["code"].(string); ok {
			if !strings.Contains(r.Text, "```python\n"+strings.TrimRight(c, "\n")+"\n```") {
				t.Errorf("the text does not carry the code in a fenced block: %q", r.Text)
			}
			return c
		}
	}
	t.Fatalf("no code in the reply: %+v", r)
	return ""
}

// TestSolverOracleAndRepair: over A2A, the oracle answers with the
// reference code; the repair solver answers with a stub that keeps the
// header first and with the reference after feedback, in the same context.
func TestSolverOracleAndRepair(t *testing.T) {
	refs := solverTestRefs(t)
	h := newHarness(t)
	sys := startSystem(t, h,
		AgentSpec{Options: Options{Name: "oracle", Role: RoleSolverOracle}},
		AgentSpec{Options: Options{Name: "repair", Role: RoleSolverRepair}},
	)
	oracle, repair := sys.Agent("oracle").URL(), sys.Agent("repair").URL()

	for _, step := range []string{"10.1", "29.2", "70.8"} {
		reply, _, err := h.call(t, stepRequest(oracle, "", refs[step].Problem, step, 1, false, ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := answerCode(t, reply); got != refs[step].Code {
			t.Errorf("oracle for %s answered %q, want the reference", step, got)
		}
	}

	first, _, err := h.call(t, stepRequest(repair, "", "29", "29.2", 1, false, ""))
	if err != nil {
		t.Fatal(err)
	}
	draft := answerCode(t, first)
	if !strings.HasPrefix(draft, strings.TrimRight(refs["29.2"].Header, "\n")) || !strings.Contains(draft, "NotImplementedError") {
		t.Errorf("first draft %q", draft)
	}
	fb := stepRequest(repair, first.ContextID, "29", "29.2", 2, true,
		"Your answer for sub-step 29.2 did not pass (turn 1 of 3): the code raised an error.")
	second, _, err := h.call(t, fb)
	if err != nil {
		t.Fatal(err)
	}
	if got := answerCode(t, second); got != refs["29.2"].Code {
		t.Errorf("after feedback the repair solver answered %q, want the reference", got)
	}
	if second.ContextID != first.ContextID {
		t.Errorf("contexts %q then %q", first.ContextID, second.ContextID)
	}

	// A step the data set has no reference for fails the task, saying so.
	_, _, err = h.call(t, stepRequest(oracle, "", "13", "13.6", 1, false, ""))
	if err == nil || !strings.Contains(err.Error(), "not in the SciCode validation split") {
		t.Errorf("unknown step: %v", err)
	}
	// So does a message that is no SciCode step.
	_, _, err = h.call(t, a2acall.SendRequest{URL: oracle, Text: "Hello"})
	if err == nil || !strings.Contains(err.Error(), "not a SciCode step request") {
		t.Errorf("hello: %v", err)
	}
}

// TestSolverLLM: the LLM mode asks the model (a fake speaking the OpenAI
// wire format) for {"code": ...}; after feedback it sends the step's
// earlier turn along, and answers the model's corrected code.
func TestSolverLLM(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	answers := []string{`{"code": "def f(x):\n    return x + 1\n"}`, "Sure:\n```python\ndef f(x):\n    return x + 2\n```"}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		n := len(asked)
		asked = append(asked, req.Messages[1].Content)
		mu.Unlock()
		content, _ := json.Marshal(answers[min(n, len(answers)-1)])
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": "c%d", "object": "chat.completion", "created": 1, "model": "fake-model",
			"choices": [{"index": 0, "message": {"role": "assistant", "content": %s}, "finish_reason": "stop"}],
			"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}`, n, content)
	}))
	defer fake.Close()

	h := newHarness(t)
	sys := startSystem(t, h, AgentSpec{Options: Options{Name: "llm-solver", Role: RoleSolverLLM,
		LLM: &llmconfig.Config{APIKey: "test-key", BaseURL: fake.URL + "/v1/", Model: "fake-model"}}})
	url := sys.Agent("llm-solver").URL()

	first, td, err := h.call(t, stepRequest(url, "", "1", "1.1", 1, false, "SciCode problem 1 (CG), sub-step 1.1 (1 of 1). Write f."))
	if err != nil {
		t.Fatal(err)
	}
	if got := answerCode(t, first); got != "def f(x):\n    return x + 1\n" {
		t.Errorf("first answer %q", got)
	}
	chats := 0
	for _, s := range td.Steps {
		if strings.HasPrefix(s.Name, "chat ") {
			chats++
		}
	}
	if chats != 1 {
		t.Errorf("%d chat steps in the trace, want 1", chats)
	}
	fb := "Your answer for sub-step 1.1 did not pass (turn 1 of 3): test case 1 of 3 failed.\nAssertionError"
	second, _, err := h.call(t, stepRequest(url, first.ContextID, "1", "1.1", 2, true, fb))
	if err != nil {
		t.Fatal(err)
	}
	if got := answerCode(t, second); got != "def f(x):\n    return x + 2\n" {
		t.Errorf("second answer %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("the model was asked %d times", len(asked))
	}
	if asked[0] != "SciCode problem 1 (CG), sub-step 1.1 (1 of 1). Write f." {
		t.Errorf("first question %q", asked[0])
	}
	for _, want := range []string{"YOU WERE ASKED", "Write f.", "YOU ANSWERED", "return x + 1", "=== NOW ===", "AssertionError"} {
		if !strings.Contains(asked[1], want) {
			t.Errorf("the feedback question lacks %q:\n%s", want, asked[1])
		}
	}
}

// TestParseStepRequest: the solver reads the step protocol and keeps the
// A2A context and the text (the protocol's own cases are stepproto's).
func TestParseStepRequest(t *testing.T) {
	text := "SciCode problem 78 (Chaotic_Dynamics_Pendulum), sub-step 78.2 (2 of 3).\n..."
	got, err := ParseStepRequest(text, nil, "ctx-1")
	if err != nil {
		t.Fatal(err)
	}
	want := StepRequest{Request: stepproto.Request{ProblemID: "78", Step: "78.2", Turn: 1}, ContextID: "ctx-1", Text: text}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := ParseStepRequest("Review this paper.", nil, ""); err == nil {
		t.Error("a review request read as a SciCode step")
	}
}

// TestSolveStep: the solver outside the agent, from the prompt's text.
func TestSolveStep(t *testing.T) {
	refs := solverTestRefs(t)
	s := NewSolver(SolverOptions{})
	code, err := s.SolveStep(t.Context(), "SciCode problem 44 (two_mer_entropy), sub-step 44.3 (3 of 3).", SolverOracle)
	if err != nil || code != refs["44.3"].Code {
		t.Errorf("oracle: %q, %v", code, err)
	}
	code, err = s.SolveStep(t.Context(), "SciCode problem 44 (two_mer_entropy), sub-step 44.3 (3 of 3).", SolverRepair)
	if err != nil || !strings.Contains(code, "NotImplementedError") {
		t.Errorf("repair, first turn: %q, %v", code, err)
	}
	if _, err := s.SolveStep(t.Context(), "SciCode problem 44 (x), sub-step 44.3 (3 of 3).", SolverLLM); err == nil || !strings.Contains(err.Error(), llmconfig.EnvAPIKey) {
		t.Errorf("llm without an LLM: %v", err)
	}
}

// TestSolverMode: a fixed mode wins; without one the solver asks the LLM
// when the agent has one, else answers as the oracle.
func TestSolverMode(t *testing.T) {
	if m := NewSolver(SolverOptions{Mode: SolverRepair}).mode(true, nil); m != SolverRepair {
		t.Errorf("fixed repair: %s", m)
	}
	if m := NewSolver(SolverOptions{}).mode(true, nil); m != SolverLLM {
		t.Errorf("with an LLM: %s", m)
	}
	if m := NewSolver(SolverOptions{}).mode(false, nil); m != SolverOracle {
		t.Errorf("without an LLM: %s", m)
	}
	if err := (SolverOptions{Mode: "guess"}).Validate(); err == nil {
		t.Error("mode guess accepted")
	}
	if err := (SolverOptions{Mode: SolverLLM}).Validate(); err != nil {
		t.Error(err)
	}
}
