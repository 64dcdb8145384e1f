package green

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/mcptest"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// lockedLog is a green agent's log the test reads while it serves.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Tools and their input properties, as the scenarios serve them.
var (
	coordinationTools = map[string][]string{coordination.ToolReadPaper: nil,
		coordination.ToolSubmitReview: {"decision", "recommendation", "scores", "rationale"}}
	sciCodeTools = map[string][]string{"read_step": nil, "run_code": {"code", "expression"}, "submit_step": {"step_number", "code"}}
)

// attackMCP sends a task's endpoint the whole battery of malformed
// messages (mcptest.Malformed, the SDKs' shapes), in an initialized
// session and in none, and returns every answer a client could not act
// on; the session must still list its tools afterwards.
func attackMCP(ctx context.Context, ep mcpcall.Endpoint, tools map[string][]string) []string {
	var problems []string
	session := &mcptest.Client{URL: ep.URL, Token: ep.Token}
	if err := session.Initialize(ctx); err != nil {
		return []string{"initialize: " + err.Error()}
	}
	msgs := append(mcptest.Malformed(tools), mcptest.SDKShapes...)
	for _, c := range []*mcptest.Client{session, {URL: ep.URL, Token: ep.Token}} {
		for _, m := range msgs {
			a, err := c.Post(ctx, m.Body)
			if err == nil {
				err = mcptest.Check(m.Body, a)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s (session %t): %v", m.Name, c == session, err))
			}
		}
	}
	names, err := session.Tools(ctx)
	want := slices.Sorted(func(yield func(string) bool) {
		for n := range tools {
			if !yield(n) {
				return
			}
		}
	})
	slices.Sort(names)
	if err != nil || !slices.Equal(names, want) {
		problems = append(problems, fmt.Sprintf("after the battery the session lists %v (%v), want %v", names, err, want))
	}
	return problems
}

// blockingResult sends one assessment request and returns the first task
// of its result; it runs in several goroutines, so it returns its
// failures.
func blockingResult(ctx context.Context, c *a2aclient.Client, req string) (map[string]any, error) {
	out, err := c.SendMessage(ctx, userMessage(req))
	if err != nil {
		return nil, err
	}
	task, ok := out.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 2 {
		return nil, fmt.Errorf("answer %T: %+v", out, out)
	}
	data, _ := task.Artifacts[0].Parts[1].Data().(map[string]any)
	tasks, _ := data["tasks"].([]any)
	if len(tasks) != 1 {
		return nil, fmt.Errorf("%d tasks in the result", len(tasks))
	}
	first, _ := tasks[0].(map[string]any)
	return first, nil
}

func outcomeOf(task map[string]any) map[string]any {
	o, _ := task["outcome"].(map[string]any)
	return o
}

// TestMCPMalformedThroughTheGreenAgent: participants send both scenarios'
// real MCP servers, as the green agent mounts them, every malformed
// message of the battery (mcptest), then work their task honestly; while
// they do, an honest participant's assessment runs on the same green
// agent. Every malformed message gets an answer a client can act on,
// nothing panics (the green agent's log says so), the attacked tasks end
// with the score the same answer gets in text, and the honest assessment
// ends exactly as it does alone.
func TestMCPMalformedThroughTheGreenAgent(t *testing.T) {
	scenarios := newCoordinationForServer(t)
	sci := newSciCodeForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := sci.Split(scicode.SplitValidation)
	scenarios[scenario.SciCode] = sci
	logs := &lockedLog{}
	g := startGreen(t, ServerOptions{Scenarios: scenarios, ProgressInterval: time.Minute,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})

	var mu sync.Mutex
	problems := map[string][]string{}
	attacked := map[string]bool{}
	note := func(who string, ps []string) {
		mu.Lock()
		defer mu.Unlock()
		attacked[who] = true
		problems[who] = append(problems[who], ps...)
	}
	review := map[string]any{"decision": "accept", "recommendation": 4, "scores": map[string]any{"originality": 4}, "rationale": "test"}
	coordAttacker := a2atest.Start(t, a2atest.Options{Name: "coordination-attacker",
		ReplyFunc: func(ctx context.Context, in a2atest.Input) (string, error) {
			ep, ok := mcpcall.FindEndpoint(in.Data)
			if !ok {
				return "", fmt.Errorf("no MCP endpoint in %v", in.Data)
			}
			note("coordination", attackMCP(ctx, ep, coordinationTools))
			cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{Name: "attacker"})
			if err != nil {
				return "", err
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: coordination.ToolSubmitReview, Arguments: review})
			if err != nil || res.IsError {
				return "", fmt.Errorf("the honest review after the battery: %+v %v", res, err)
			}
			return "submitted through the tool", nil
		}})
	oracle := sciCodeTestSolver(t, split, "oracle", &sciSolverLog{})
	sciAttacker := a2atest.Start(t, a2atest.Options{Name: "scicode-attacker",
		ReplyFunc: func(ctx context.Context, in a2atest.Input) (string, error) {
			ep, ok := mcpcall.FindEndpoint(in.Data)
			if !ok {
				return "", fmt.Errorf("no MCP endpoint in %v", in.Data)
			}
			note("scicode", attackMCP(ctx, ep, sciCodeTools))
			return oracle(ctx, in)
		}})
	honest := a2atest.Start(t, a2atest.Options{Name: "honest", ReplyFunc: coordinationAnswer("accept")})
	textTwin := a2atest.Start(t, a2atest.Options{Name: "text-twin", ReplyFunc: func(context.Context, a2atest.Input) (string, error) {
		b, err := json.Marshal(review)
		return string(b), err
	}})

	settle := `"settle_quiet_ms": 100, "settle_max_wait_ms": 500`
	honestReq := fmt.Sprintf(`{"participants": {"reviewer": %q}, "config": {"task_ids": ["iclr2017-305"], %s}}`, honest.URL, settle)
	c := g.client10(t)
	alone, err := blockingResult(t.Context(), c, honestReq)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := blockingResult(t.Context(), c, fmt.Sprintf(`{"participants": {"reviewer": %q}, "config": {"task_ids": ["iclr2017-305"], %s}}`, textTwin.URL, settle))
	if err != nil {
		t.Fatal(err)
	}

	requests := map[string]string{
		"honest":       honestReq,
		"coordination": fmt.Sprintf(`{"participants": {"reviewer": %q}, "config": {"task_ids": ["iclr2017-305"], "delivery": "mcp", %s}}`, coordAttacker.URL, settle),
		"scicode": fmt.Sprintf(`{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": ["3"], "max_num_steps": 1, "delivery": "both", %s}}`,
			sciAttacker.URL, settle),
	}
	results := map[string]map[string]any{}
	errs := map[string]error{}
	var wg sync.WaitGroup
	for name, req := range requests {
		wg.Go(func() {
			res, err := blockingResult(t.Context(), c, req)
			mu.Lock()
			defer mu.Unlock()
			results[name], errs[name] = res, err
		})
	}
	wg.Wait()
	for name, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, who := range []string{"coordination", "scicode"} {
		if !attacked[who] {
			t.Errorf("the %s endpoint was never attacked", who)
		}
		for i, p := range problems[who] {
			if i == 20 {
				t.Errorf("%s: and %d more", who, len(problems[who])-20)
				break
			}
			t.Errorf("%s: %s", who, p)
		}
	}
	if t.Failed() {
		return
	}
	if got, want := outcomeOf(results["honest"]), outcomeOf(alone); got["score"] != want["score"] || got["success"] != want["success"] || got["summary"] != want["summary"] {
		t.Errorf("the honest task beside the attacks: %v, alone: %v", got, want)
	}
	if got, want := outcomeOf(results["coordination"]), outcomeOf(twin); got["score"] != want["score"] || got["success"] != want["success"] {
		t.Errorf("the attacked coordination task (review through the tool): %v, the same review in text: %v", got, want)
	}
	if d, _ := outcomeOf(results["coordination"])["details"].(map[string]any); d["answer_source"] != coordination.AnswerFromTool {
		t.Errorf("the attacked coordination task's answer source: %v", d["answer_source"])
	}
	if o := outcomeOf(results["scicode"]); o["success"] != true || o["score"] != 1.0 {
		t.Errorf("the attacked SciCode task with the reference answer: %v", o)
	}
	for _, bad := range []string{"panicked", "recovered a panic"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the green agent's log says %q:\n%s", bad, logs.String())
		}
	}
}
