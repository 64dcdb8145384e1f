package scicode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

// SciCode's tools over MCP (docs/mcp.md): with config.delivery "mcp" or
// "both", each task gets an MCP server whose tools read the step, run the
// solver's own code in the sandbox, and submit the step's code. A submission
// is judged exactly as an answer in text: the same test, comparator, limits
// and feedback, and it counts as one of the step's max_num_steps turns.
// The tools act on the step whose A2A message awaits its reply; nothing
// they return holds a target or a test case.

// Tool names.
const (
	toolReadStep   = stepproto.ToolReadStep
	toolRunCode    = stepproto.ToolRunCode
	toolSubmitStep = stepproto.ToolSubmitStep
)

// Tools lists the tool names, as the endpoint's data part lists them.
var Tools = []string{toolReadStep, toolRunCode, toolSubmitStep}

const (
	// maxRunsPerStep bounds run_code per step: each run is a sandboxed
	// interpreter with the step's time and memory limits.
	maxRunsPerStep = 20
	// runOutputChars bounds the stdout run_code returns, resultChars the
	// repr of the expression's value.
	runOutputChars = feedbackChars
	resultChars    = 2000
)

// ReadStepInput takes no arguments: the step is the one under way.
type ReadStepInput struct{}

// PreviousStep is an earlier step as the current one sees it.
type PreviousStep struct {
	StepNumber  string `json:"step_number"`
	Description string `json:"description"`
	Background  string `json:"background,omitempty"`
	// Code is what runs before this step's code: the solver's passing
	// code, else the reference, as in the text prompt.
	Code string `json:"code,omitempty"`
}

// StepView is read_step's result.
type StepView struct {
	ProblemID          string         `json:"problem_id"`
	ProblemName        string         `json:"problem_name"`
	ProblemDescription string         `json:"problem_description"`
	ProblemBackground  string         `json:"problem_background,omitempty"`
	StepNumber         string         `json:"step_number"`
	StepIndex          int            `json:"step_index" jsonschema:"1-based index of the step in the problem"`
	NumSteps           int            `json:"num_steps"`
	StepDescription    string         `json:"step_description"`
	StepBackground     string         `json:"step_background,omitempty"`
	FunctionName       string         `json:"function_name"`
	FunctionHeader     string         `json:"function_header"`
	ReturnLine         string         `json:"return_line"`
	Dependencies       string         `json:"dependencies" jsonschema:"the imports that run before the code; do not repeat them"`
	PreviousSteps      []PreviousStep `json:"previous_steps"`
	Turn               int            `json:"turn" jsonschema:"the next submission's turn"`
	MaxTurns           int            `json:"max_turns"`
	SubmissionsLeft    int            `json:"submissions_left"`
	RunsLeft           int            `json:"runs_left"`
}

// RunCodeInput is run_code's arguments.
type RunCodeInput struct {
	Code       string `json:"code,omitempty" jsonschema:"Python code to run after the dependencies and the previous steps' code (typically your draft of the step's function)"`
	Expression string `json:"expression,omitempty" jsonschema:"optional Python expression evaluated after the code; its repr is returned as result"`
}

// RunCodeOutput is what a run shows: never a target, never a test case.
type RunCodeOutput struct {
	// Stdout is the end of the run's output (stdout and stderr), bounded.
	Stdout          string `json:"stdout"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`
	// Result is the repr of the expression's value, bounded.
	Result string `json:"result,omitempty"`
	// Exception is the exception that ended the run, with Section saying
	// in which part of the script it was raised.
	Exception string `json:"exception,omitempty"`
	Section   string `json:"section,omitempty"`
	// Reason is how the run ended (exited, crashed, timeout, limit);
	// Limit names the limit hit.
	Reason     string  `json:"reason"`
	Limit      string  `json:"limit,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	RunsLeft   int     `json:"runs_left"`
}

// SubmitStepInput is submit_step's arguments.
type SubmitStepInput struct {
	StepNumber string `json:"step_number" jsonschema:"the step under way, as read_step names it (e.g. 10.3)"`
	Code       string `json:"code" jsonschema:"the complete code of the step's function, header as given"`
}

// SubmitStepOutput is a submission's verdict, as the text mode's feedback
// message gives it.
type SubmitStepOutput struct {
	Passed bool `json:"passed"`
	// Reason is the attempt's reason (passed, test_failed, crashed, ...).
	Reason  string `json:"reason"`
	Limit   string `json:"limit,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Section string `json:"section,omitempty"`
	// Output is the end of the test output, as feedback gives it (only
	// while submissions are left, as in the text mode).
	Output          string `json:"output,omitempty"`
	Turn            int    `json:"turn"`
	SubmissionsLeft int    `json:"submissions_left"`
}

// openTools serves the task's MCP server when the delivery asks for it.
func (w *walker) openTools() (func(), error) {
	if !w.delivery.MCP {
		return func() {}, nil
	}
	if w.env.Tools == nil {
		return nil, errors.New("scicode: config.delivery asks for MCP but this green agent serves no MCP endpoint")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "coordbench-scicode", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: toolReadStep, Description: "Read the SciCode step under way: the problem, the step, its function header and return line, the dependencies, and the previous steps with the code that runs before yours."}, w.readStep)
	mcp.AddTool(srv, &mcp.Tool{Name: toolRunCode, Description: fmt.Sprintf("Run your own Python code in the sandbox, after the dependencies and the previous steps' code, with the step's time and memory limits; optionally evaluate an expression. Returns the (bounded) output, the expression's repr, or the exception. No test case runs. At most %d runs per step.", maxRunsPerStep)}, w.runCode)
	mcp.AddTool(srv, &mcp.Tool{Name: toolSubmitStep, Description: "Submit the step's code. It is tested as an answer in text would be and counts as one of the step's turns; the verdict and, while turns are left, the end of the test output come back."}, w.submitStep)
	ep, closeFn, err := w.env.Tools.Open(w.taskCtx, srv, Tools)
	if err != nil {
		return nil, fmt.Errorf("scicode: open the MCP endpoint: %w", err)
	}
	w.endpoint = ep.Data()
	return closeFn, nil
}

// extraData is the endpoint's data part, when there is one.
func (w *walker) extraData() []map[string]any {
	if w.endpoint == nil {
		return nil
	}
	return []map[string]any{w.endpoint}
}

// openCall and closeCall bracket a step's call: the submit tool takes
// answers only in between. closeCall waits for a tool call in progress.
func (w *walker) openCall(st *openStep) {
	w.toolMu.Lock()
	w.cur, st.inCall = st, true
	w.toolMu.Unlock()
}

func (w *walker) closeCall() {
	w.toolMu.Lock()
	if w.cur != nil {
		w.cur.inCall = false
	}
	w.toolMu.Unlock()
}

// answerHow ends the step prompt: how to answer under the delivery.
func (w *walker) answerHow() string {
	text := "Answer with the code in one ```python fenced block (or between <code> and </code>, or as JSON {\"code\": \"...\"}).\n"
	if !w.delivery.MCP {
		return text
	}
	mcpText := fmt.Sprintf("Tools: the MCP server in this message's data part (kind %q; send its token as Authorization: Bearer <token>) "+
		"offers %s (this step), %s (your own code in the sandbox) and %s (your answer, judged at once; %s). Submit before you reply.\n",
		"coordbench.mcp/v1", toolReadStep, toolRunCode, toolSubmitStep, plural(w.t.Config.MaxTurns, "turn", "turns"))
	if w.delivery.Text {
		return mcpText + "Or " + strings.ToLower(text[:1]) + text[1:]
	}
	return mcpText
}

// withTask bounds a tool's work by both the request and the task.
func (w *walker) withTask(ctx context.Context) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithCancelCause(w.taskCtx)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return tctx, func() { stop(); cancel(nil) }
}

// current is the step under way; the caller holds toolMu.
func (w *walker) current() (*openStep, error) {
	if w.cur == nil || !w.cur.inCall {
		return nil, errors.New("no step is under way: the tools act on the step whose message awaits your reply")
	}
	return w.cur, nil
}

func (w *walker) readStep(ctx context.Context, _ *mcp.CallToolRequest, _ ReadStepInput) (*mcp.CallToolResult, StepView, error) {
	w.toolMu.Lock()
	defer w.toolMu.Unlock()
	st, err := w.current()
	if err != nil {
		return nil, StepView{}, err
	}
	p, k, bg := w.t.Problem, st.k, w.t.Config.WithBackground
	step := &p.Steps[k]
	v := StepView{
		ProblemID: p.ID, ProblemName: p.Name, ProblemDescription: strings.TrimSpace(p.Description),
		StepNumber: step.Number, StepIndex: k + 1, NumSteps: len(p.Steps), StepDescription: strings.TrimSpace(step.Description),
		FunctionName: step.FunctionName(), FunctionHeader: step.FunctionHeader, ReturnLine: strings.TrimSpace(step.ReturnLine),
		Dependencies: strings.TrimSpace(p.Dependencies), PreviousSteps: []PreviousStep{},
		Turn: len(st.r.Attempts) + 1, MaxTurns: w.t.Config.MaxTurns,
		SubmissionsLeft: max(w.t.Config.MaxTurns-len(st.r.Attempts), 0), RunsLeft: max(maxRunsPerStep-st.runs, 0),
	}
	if bg {
		v.ProblemBackground, v.StepBackground = strings.TrimSpace(p.Background), strings.TrimSpace(step.Background)
	}
	for i := range k {
		prev := PreviousStep{StepNumber: p.Steps[i].Number, Description: strings.TrimSpace(p.Steps[i].Description), Code: strings.TrimSpace(w.context[i])}
		if bg {
			prev.Background = strings.TrimSpace(p.Steps[i].Background)
		}
		v.PreviousSteps = append(v.PreviousSteps, prev)
	}
	return nil, v, nil
}

func (w *walker) runCode(ctx context.Context, _ *mcp.CallToolRequest, in RunCodeInput) (*mcp.CallToolResult, RunCodeOutput, error) {
	if strings.TrimSpace(in.Code) == "" && strings.TrimSpace(in.Expression) == "" {
		return nil, RunCodeOutput{}, errors.New("nothing to run: give code, an expression, or both")
	}
	w.toolMu.Lock()
	defer w.toolMu.Unlock()
	st, err := w.current()
	if err != nil {
		return nil, RunCodeOutput{}, err
	}
	if st.runs >= maxRunsPerStep {
		return nil, RunCodeOutput{}, fmt.Errorf("the run limit of %d runs per step is reached", maxRunsPerStep)
	}
	st.runs++
	nonce, err := nonceHex()
	if err != nil {
		return nil, RunCodeOutput{}, err
	}
	script, sections := BuildRunScript(w.t.Problem, st.k, w.context, in.Code, in.Expression, nonce)
	tctx, cancel := w.withTask(ctx)
	defer cancel()
	res, err := w.s.runner.Run(tctx, sandbox.Request{Name: w.t.Problem.Steps[st.k].Number + "-run", Script: script, Sections: sections, Timeout: w.timeout})
	if err != nil {
		return nil, RunCodeOutput{}, fmt.Errorf("the sandbox could not run the code: %w", err)
	}
	out := RunCodeOutput{Reason: res.Reason, Limit: res.Limit, DurationMS: res.DurationMS, RunsLeft: maxRunsPerStep - st.runs,
		Exception: res.Exception, Section: res.Section, OutputTruncated: res.OutputTruncated}
	stdout, result := splitResult(res.Output, nonce)
	out.Stdout = feedbackWithin(stdout, runOutputChars)
	if result != "" {
		out.Result = clip(result, resultChars)
	}
	if len(out.Stdout) < len(strings.TrimSpace(stdout)) {
		out.OutputTruncated = true
	}
	return nil, out, nil
}

func (w *walker) submitStep(ctx context.Context, _ *mcp.CallToolRequest, in SubmitStepInput) (*mcp.CallToolResult, SubmitStepOutput, error) {
	w.toolMu.Lock()
	defer w.toolMu.Unlock()
	st, err := w.current()
	if err != nil {
		return nil, SubmitStepOutput{}, err
	}
	step := &w.t.Problem.Steps[st.k]
	switch {
	case strings.TrimSpace(in.StepNumber) != step.Number:
		return nil, SubmitStepOutput{}, fmt.Errorf("step %s is under way, not %q", step.Number, in.StepNumber)
	case st.r.Passed:
		return nil, SubmitStepOutput{}, fmt.Errorf("step %s has passed already", step.Number)
	case st.stop || len(st.r.Attempts) >= w.t.Config.MaxTurns:
		return nil, SubmitStepOutput{}, fmt.Errorf("step %s has no submissions left (%d turns)", step.Number, w.t.Config.MaxTurns)
	case strings.TrimSpace(in.Code) == "":
		return nil, SubmitStepOutput{}, errors.New("no code: the code argument is empty")
	}
	code := strings.Trim(strings.ReplaceAll(in.Code, "\r\n", "\n"), "\n") + "\n"
	tctx, cancel := w.withTask(ctx)
	defer cancel()
	a, res := w.attempt(tctx, st, code, AnswerFromTool)
	w.record(st, a, res)
	left := max(w.t.Config.MaxTurns-len(st.r.Attempts), 0)
	if st.stop || st.r.Passed {
		left = 0
	}
	out := SubmitStepOutput{Passed: st.r.Passed, Reason: a.Reason, Limit: a.Limit, Detail: a.Detail, Section: a.Section, Turn: a.Turn, SubmissionsLeft: left}
	if left > 0 {
		out.Output = feedbackOf(res)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: w.verdictText(st.k, a, res, left)}}}, out, nil
}

// AnswerFromTool is Attempt.AnswerSource of a submission through the tool.
const AnswerFromTool = "mcp_tool"

// verdictText is the submission's verdict in words: the text mode's
// feedback message while turns are left.
func (w *walker) verdictText(k int, a Attempt, res *Verdict, left int) string {
	switch {
	case a.Reason == ReasonPassed:
		return fmt.Sprintf("Step %s passed (turn %d).", w.t.Problem.Steps[k].Number, a.Turn)
	case a.Reason == ReasonUnscored:
		return fmt.Sprintf("Step %s has no test cases; your code is taken as the step's code.", w.t.Problem.Steps[k].Number)
	case left == 0:
		return fmt.Sprintf("Step %s did not pass (%s); no submissions are left.", w.t.Problem.Steps[k].Number, a.Reason)
	}
	return w.feedback(k, a.Turn, a, res)
}

func nonceHex() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// resultMarker opens the expression's repr in a run's output.
func resultMarker(nonce string) string { return "__coordbench_result_" + nonce + "__" }

// splitResult takes the expression's repr (after the last marker) off the
// output.
func splitResult(out, nonce string) (stdout, result string) {
	m := "\n" + resultMarker(nonce) + "\n"
	i := strings.LastIndex(out, m)
	if i < 0 {
		return out, ""
	}
	return out[:i], strings.TrimSuffix(out[i+len(m):], "\n")
}

// feedbackWithin is feedback's scrubbing within n bytes.
func feedbackWithin(out string, n int) string {
	return trimTestOutput(hostPath.ReplaceAllString(out, `File ".../$1"`), n)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
