package purple

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

// ConnectTools opens an MCP session with the endpoint a message handed the
// agent (mcpcall.FindEndpoint), each request a CLIENT span by the MCP
// conventions with its context in params._meta (docs/mcp.md). The caller
// closes the session.
func (e *Env) ConnectTools(ctx context.Context, ep mcpcall.Endpoint) (*mcp.ClientSession, error) {
	var tp trace.TracerProvider = noop.NewTracerProvider()
	name := "coordbench-purple"
	if e != nil && e.s != nil {
		tp = e.s.tel.tp
		name = e.Name
	}
	return mcpcall.Connect(ctx, ep, mcpcall.Options{Name: name, Middleware: []mcp.Middleware{mcpcall.ClientSpans(tp, ep.URL)}})
}

// callTool calls a tool and decodes its structured result into out; a
// result marked isError is an error with the tool's text.
func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args any, out any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	text, err := mcpcall.ToolText(res)
	if err != nil {
		return text, fmt.Errorf("%s: %w", name, err)
	}
	if out != nil && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return text, fmt.Errorf("%s: %w", name, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			return text, fmt.Errorf("%s: its result: %w", name, err)
		}
	}
	return text, nil
}

// toolStep is what the solver reads of read_step's result.
type toolStep struct {
	ProblemID       string `json:"problem_id"`
	StepNumber      string `json:"step_number"`
	FunctionHeader  string `json:"function_header"`
	Turn            int    `json:"turn"`
	SubmissionsLeft int    `json:"submissions_left"`
}

// toolVerdict is what the solver reads of submit_step's result.
type toolVerdict struct {
	Passed          bool   `json:"passed"`
	Reason          string `json:"reason"`
	SubmissionsLeft int    `json:"submissions_left"`
}

// answerWithTools solves the step under way through the scenario's tools:
// it reads the step, submits its code, and after a failing verdict answers
// the verdict as it would a feedback message, until the step passes or no
// submission is left. The reply carries no code: the answers went through
// the tool (a green agent that also reads text would otherwise judge the
// last one twice).
func (s *Solver) answerWithTools(ctx context.Context, env *Env, llm *LLM, mode SolverMode, sr StepRequest, ep mcpcall.Endpoint) (*Answer, error) {
	cs, err := env.ConnectTools(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var st toolStep
	if _, err := callTool(ctx, cs, stepproto.ToolReadStep, map[string]any{}, &st); err != nil {
		return nil, err
	}
	if st.StepNumber == "" {
		return nil, fmt.Errorf("%s named no step", stepproto.ToolReadStep)
	}
	sr.Step, sr.Turn = st.StepNumber, max(st.Turn, 1)
	if st.ProblemID != "" {
		sr.ProblemID = st.ProblemID
	}
	if st.FunctionHeader != "" {
		sr.Header = st.FunctionHeader
	}
	var verdicts []string
	var v toolVerdict
	for left := st.SubmissionsLeft; left > 0; left = v.SubmissionsLeft {
		code, err := s.solve(ctx, llm, mode, sr)
		if err != nil {
			return nil, fmt.Errorf("solver (%s): %w", mode, err)
		}
		v = toolVerdict{}
		text, err := callTool(ctx, cs, stepproto.ToolSubmitStep, map[string]any{"step_number": sr.Step, "code": code}, &v)
		if err != nil {
			return nil, err
		}
		verdicts = append(verdicts, v.Reason)
		if v.Passed {
			break
		}
		// The verdict is the next turn's feedback, as a text message
		// would carry it.
		sr.Turn++
		sr.Feedback, sr.Text = true, text
	}
	return &Answer{
		Text: fmt.Sprintf("Step %s: submitted through %s, %s.", sr.Step, stepproto.ToolSubmitStep, strings.Join(verdicts, ", then ")),
		Data: map[string]any{"solver_mode": string(mode), "step_number": sr.Step, "delivery": "mcp", "verdicts": verdicts},
	}, nil
}

// The coordination scenario's tools, by name (docs/mcp.md).
const (
	toolReadPaper    = "read_paper"
	toolSubmitReview = "submit_review"
)

// offersReviewTools reports whether a request hands the agent the review
// tools: only the entry agent's request does (the green agent's message).
func offersReviewTools(req *Request) (mcpcall.Endpoint, bool) {
	ep, ok := mcpcall.FindEndpoint(req.Data)
	if !ok || len(req.Path) > 0 {
		return mcpcall.Endpoint{}, false
	}
	for _, t := range ep.Tools {
		if t == toolSubmitReview {
			return ep, true
		}
	}
	return mcpcall.Endpoint{}, false
}

// toolPaper is read_paper's result.
type toolPaper struct {
	TaskID   string `json:"task_id"`
	Title    string `json:"title"`
	Abstract string `json:"abstract"`
	Reviews  []struct {
		Title    string `json:"title"`
		Comments string `json:"comments"`
	} `json:"reviews"`
	TitleOnly bool `json:"title_only"`
}

// reviewWithTools answers a review request through the coordination
// scenario's tools: the paper from read_paper, the agent's own answer
// (its role, delegations and all), and the review it reached submitted
// with submit_review. The reply is the answer as without tools.
func reviewWithTools(ctx context.Context, env *Env, req *Request, role Role, ep mcpcall.Endpoint) (*Answer, error) {
	cs, err := env.ConnectTools(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var p toolPaper
	if _, err := callTool(ctx, cs, toolReadPaper, map[string]any{}, &p); err != nil {
		return nil, err
	}
	paper := &Paper{TaskID: p.TaskID, Title: p.Title, Abstract: p.Abstract, TitleOnly: p.TitleOnly}
	// As paperFrom reads the same reviews from the data part.
	for _, r := range p.Reviews {
		if r.Comments != "" {
			paper.Reviews = append(paper.Reviews, r.Comments)
		}
	}
	req.Paper = paper
	ans, err := role.Answer(ctx, env, req)
	if err != nil || ans == nil {
		return ans, err
	}
	rv, err := ParseReview(&a2acall.Reply{Text: ans.Text, Data: dataList(ans.Data)})
	if err != nil {
		return nil, fmt.Errorf("the review to submit: %w", err)
	}
	args := map[string]any{"decision": rv.Decision, "recommendation": rv.Recommendation}
	if len(rv.Scores) > 0 {
		args["scores"] = rv.Scores
	}
	if rv.Rationale != "" {
		args["rationale"] = rv.Rationale
	}
	if _, err := callTool(ctx, cs, toolSubmitReview, args, nil); err != nil {
		return nil, err
	}
	return ans, nil
}
