package coordination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coordbench/coordbench/scenario"
)

// The coordination scenario's tools over MCP (docs/mcp.md): with
// config.delivery "mcp" or "both" a task gets an MCP server with
// read_paper (the paper as the message gives it) and submit_review (the
// decision, typed and validated). One review is taken per task, while the
// task's message awaits its reply, and it is scored exactly as the same
// answer in text would be.

// Tool names.
const (
	ToolReadPaper    = "read_paper"
	ToolSubmitReview = "submit_review"
	// AnswerFromTool is the outcome's answer_source of a review submitted
	// through the tool.
	AnswerFromTool = "mcp_tool"
)

// Tools lists the tool names, as the endpoint's data part lists them.
var Tools = []string{ToolReadPaper, ToolSubmitReview}

// PaperView is read_paper's result: the request's data part.
type PaperView struct {
	TaskID    string        `json:"task_id"`
	Title     string        `json:"title"`
	Abstract  string        `json:"abstract,omitempty"`
	Reviews   []PaperReview `json:"reviews,omitempty"`
	TitleOnly bool          `json:"title_only,omitempty"`
}

// PaperReview is a reviewer's comments, scores withheld.
type PaperReview struct {
	Title    string `json:"title,omitempty"`
	Comments string `json:"comments"`
}

// SubmitReviewOutput says the review was taken.
type SubmitReviewOutput struct {
	Accepted       bool    `json:"accepted"`
	Decision       string  `json:"decision"`
	Recommendation float64 `json:"recommendation"`
}

// toolTask is one task's tool state.
type toolTask struct {
	paper PaperView

	mu     sync.Mutex
	inCall bool
	answer *coordAnswer
}

// reviewSchema is submit_review's input schema: coordAnswerSchema with
// no other keys allowed, and the recommendation any number from 1 to 5, as
// the text mode reads it (a mean of aspect scores is 3.25); the SDK
// validates arguments against it.
func reviewSchema() (*jsonschema.Schema, error) {
	m := map[string]any{}
	for k, v := range coordAnswerSchema {
		m[k] = v
	}
	props := map[string]any{}
	for k, v := range coordAnswerSchema["properties"].(map[string]any) {
		props[k] = v
	}
	props["recommendation"] = map[string]any{"type": "number", "minimum": 1, "maximum": 5}
	m["properties"] = props
	m["additionalProperties"] = false
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// openTools serves the task's MCP server; the returned task holds the
// submitted review.
func openTools(ctx context.Context, env *scenario.TaskEnv, data map[string]any) (*toolTask, map[string]any, func(), error) {
	if env.Tools == nil {
		return nil, nil, nil, errors.New("coordination: config.delivery asks for MCP but this green agent serves no MCP endpoint")
	}
	tt := &toolTask{}
	b, err := json.Marshal(data)
	if err == nil {
		err = json.Unmarshal(b, &tt.paper)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("coordination: the paper for the tools: %w", err)
	}
	schema, err := reviewSchema()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("coordination: the review schema: %w", err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "coordbench-coordination", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolReadPaper, Description: "Read the paper to review: title, abstract and the reviewers' comments (their scores withheld)."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, PaperView, error) {
			return nil, tt.paper, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: ToolSubmitReview, InputSchema: schema,
		Description: "Submit the review decision: accept or reject, a recommendation from 1 to 5 (5 = strong accept), optional aspect scores (1-5) and a rationale. One review per task; it is scored as the same answer in text."},
		tt.submit)
	ep, closeFn, err := env.Tools.Open(ctx, srv, Tools)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("coordination: open the MCP endpoint: %w", err)
	}
	return tt, ep.Data(), closeFn, nil
}

// submit takes the review: typed (the schema), validated (the text mode's
// reading, with nothing ignored), once, during the call.
func (tt *toolTask) submit(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, SubmitReviewOutput, error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	switch {
	case !tt.inCall:
		return nil, SubmitReviewOutput{}, errors.New("no review is asked for now: submit while the task's message awaits your reply")
	case tt.answer != nil:
		return nil, SubmitReviewOutput{}, errors.New("a review was submitted already; one review per task")
	}
	ans, err := coordAnswerFrom(in, AnswerFromTool)
	if err != nil {
		return nil, SubmitReviewOutput{}, fmt.Errorf("invalid review: %w", err)
	}
	if len(ans.Problems) > 0 || ans.Recommendation == nil {
		problems := ans.Problems
		if ans.Recommendation == nil {
			problems = append(problems, "no recommendation")
		}
		return nil, SubmitReviewOutput{}, fmt.Errorf("invalid review: %v", problems)
	}
	tt.answer = &ans
	return nil, SubmitReviewOutput{Accepted: true, Decision: ans.Decision, Recommendation: *ans.Recommendation}, nil
}

func (tt *toolTask) setCall(on bool) {
	tt.mu.Lock()
	tt.inCall = on
	tt.mu.Unlock()
}

func (tt *toolTask) submitted() *coordAnswer {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.answer
}
