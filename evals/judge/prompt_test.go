package judge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// A trace far over the bound is cut to it, with the marker counting the
// steps left out.
func TestJudgePromptTruncatedOverTheBound(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	trace := judgeTrace()
	base := trace.Steps[3]
	for i := range 400 {
		s := base
		s.StepID = fmt.Sprintf("x%d", i)
		s.Input = strings.Repeat("long message ", 100)
		trace.Steps = append(trace.Steps, s)
	}
	cfg := judgeTestConfig(f)
	cfg.MaxPromptBytes = 16 << 10
	r := judgeEval(t, New(Options{Config: cfg}), trace, judgeInputs())
	if r.Source != SourceLLM {
		t.Fatalf("source %q: %s", r.Source, r.FallbackReason)
	}
	body := f.body(0)
	user := judgeUserPrompt(t, body)
	system := body["messages"].([]any)[0].(map[string]any)["content"].(string)
	if total := len(system) + len(user); total > cfg.MaxPromptBytes {
		t.Errorf("prompt is %d bytes, bound %d", total, cfg.MaxPromptBytes)
	}
	p := r.Prompt
	if p == nil || !p.Truncated || p.StepsOmitted == 0 || p.StepsIncluded+p.StepsOmitted != len(trace.Steps) {
		t.Fatalf("prompt info = %+v", p)
	}
	marker := fmt.Sprintf("[truncated: %d more steps]", p.StepsOmitted)
	if !strings.HasSuffix(strings.TrimSpace(user), marker) {
		t.Errorf("prompt does not end with %q:\n...%s", marker, user[max(0, len(user)-300):])
	}
	// Each message is capped too, and says by how much.
	if !strings.Contains(user, "…[+900 bytes]") {
		t.Errorf("long message not capped with its size")
	}
}

// The bound holds whatever is big: many steps, huge evaluator results, many
// agents, a tiny bound.
func TestJudgePromptBound(t *testing.T) {
	big := judgeTrace()
	for i := range 300 {
		big.Agents = append(big.Agents, tracedata.Agent{Name: fmt.Sprintf("agent-%03d", i), Steps: 1})
		big.Interactions = append(big.Interactions, tracedata.Interaction{From: "planner", To: fmt.Sprintf("agent-%03d", i), Count: 1})
		big.Steps = append(big.Steps, tracedata.Step{StepID: fmt.Sprintf("b%d", i), CallType: tracedata.CallAgent,
			Name: "call", Agent: fmt.Sprintf("agent-%03d", i), Caller: "planner", Input: strings.Repeat("é", 500), Error: strings.Repeat("x", 1000)})
	}
	huge := judgeFakeResult{"blob": strings.Repeat("y", 200<<10)}
	for _, bound := range []int{MinPromptBytes, 16 << 10, DefaultMaxPromptBytes} {
		in := judgeInputs()
		in.Prior["huge"] = huge
		system, user, info := buildJudgePrompt(big, in, bound)
		if got := len(system) + len(user); got > bound || info.Bytes != got {
			t.Errorf("bound %d: prompt %d bytes (info %d)", bound, got, info.Bytes)
		}
		if !info.Truncated || !strings.Contains(user, "more steps]") {
			t.Errorf("bound %d: no truncation marker (%+v)", bound, info)
		}
		for _, want := range []string{"more agents]", "more interactions]", "bytes of evaluator results]", "more failed steps]"} {
			if !strings.Contains(user, want) {
				t.Errorf("bound %d: no %q marker", bound, want)
			}
		}
		if strings.Contains(user, "prompt cut at") {
			t.Errorf("bound %d: sections overran their shares", bound)
		}
		if !strings.Contains(user, "# Trace trace-1") {
			t.Errorf("bound %d: header lost", bound)
		}
	}
	// A bound below the minimum is raised to it.
	if got := (Config{MaxPromptBytes: 100}).withDefaults().MaxPromptBytes; got != MinPromptBytes {
		t.Errorf("MaxPromptBytes 100 -> %d, want %d", got, MinPromptBytes)
	}
}

// The LLM is told what the rule-based judge charges: where participants
// are named, insufficient evidence is no excuse; offline it is not told so.
func TestJudgePromptInsufficientEvidenceIsNoExcuse(t *testing.T) {
	for _, participants := range []bool{true, false} {
		f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
		in := judgeInputs()
		if !participants {
			in.Participants = nil
		}
		if r := judgeEval(t, New(Options{Config: judgeTestConfig(f)}), judgeTrace(), in); r.Source != SourceLLM {
			t.Fatalf("source %q: %s", r.Source, r.FallbackReason)
		}
		if told := strings.Contains(judgeUserPrompt(t, f.body(0)), "which is no excuse"); told != participants {
			t.Errorf("participants named %v: prompt tells insufficient evidence is no excuse: %v", participants, told)
		}
	}
}
