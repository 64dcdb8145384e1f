package coordination

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/mcpserve"
	"github.com/coordbench/coordbench/scenario"
)

// toolSender is a participant that works through the tools: it calls
// each of calls in turn on submit_review, keeps what each returned, and
// replies with reply.
type toolSender struct {
	calls   []map[string]any
	reply   string
	results []string // "ok: ..." or "error: ..."
	paper   PaperView
}

func (f *toolSender) Send(ctx context.Context, req a2acall.SendRequest) (*a2acall.Reply, error) {
	ep, ok := mcpcall.FindEndpoint(req.ExtraData)
	if !ok {
		return &a2acall.Reply{Text: f.reply, State: "completed"}, nil
	}
	cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolReadPaper, Arguments: map[string]any{}})
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &f.paper)
	for _, args := range f.calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolSubmitReview, Arguments: args})
		if err != nil {
			f.results = append(f.results, "error: "+err.Error())
			continue
		}
		txt, terr := mcpcall.ToolText(res)
		if terr != nil {
			f.results = append(f.results, "error: "+txt)
		} else {
			f.results = append(f.results, "ok: "+txt)
		}
	}
	return &a2acall.Reply{Text: f.reply, State: "completed"}, nil
}

func coordToolHost(t *testing.T) *mcpserve.Host {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h, err := mcpserve.New(mcpserve.Options{BaseURL: srv.URL + mcpserve.DefaultPath})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(h.Path(), h)
	return h
}

// TestSubmitReviewValidated: a review through the tool is typed and
// validated (a decision not accept or reject, a recommendation outside
// 1-5 or not a number, an unknown key, a missing decision are refused and
// leave the task open), taken once, and scored as the same review in text;
// under delivery mcp a review only in the reply's text counts for nothing,
// under both it counts when nothing was submitted.
func TestSubmitReviewValidated(t *testing.T) {
	s := newCoordForTest(t, Options{TitlesOnly: true})
	task, ct := coordTestTask(t, s, "iclr_2017", "305")
	host := coordToolHost(t)
	req := func(delivery string) *scenario.Request {
		return &scenario.Request{Participants: map[string]string{"a": "http://x"},
			Config: scenario.RequestConfig{Raw: map[string]json.RawMessage{"delivery": json.RawMessage(`"` + delivery + `"`)}}}
	}
	good := map[string]any{"decision": "accept", "recommendation": 4, "scores": map[string]any{"clarity": 4}, "rationale": "clear"}
	f := &toolSender{calls: []map[string]any{
		{"decision": "maybe", "recommendation": 4},
		{"decision": "accept", "recommendation": 9},
		{"decision": "accept", "recommendation": "high"},
		{"decision": "accept", "recommendation": 4, "score": 1},
		{"recommendation": 4},
		{"decision": "accept", "recommendation": 4, "scores": map[string]any{"clarity": 0}},
		good,
		{"decision": "reject", "recommendation": 1},
	}, reply: `{"decision": "reject", "recommendation": 1}`}
	o, err := s.run(t.Context(), &scenario.TaskEnv{Request: req("mcp"), Tools: host}, f, task)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range f.results {
		if ok := strings.HasPrefix(r, "ok:"); ok != (i == 6) {
			t.Errorf("submission %d (%v): %s", i, f.calls[i], r)
		}
	}
	if f.paper.Title != ct.Scenario.Paper.Title || f.paper.TaskID != ct.Scenario.ID {
		t.Errorf("read_paper: %+v", f.paper)
	}
	text, err := s.run(t.Context(), &scenario.TaskEnv{Request: req("text")}, &coordFakeSender{reply: &a2acall.Reply{
		Text: `{"decision": "accept", "recommendation": 4, "scores": {"clarity": 4}, "rationale": "clear"}`, State: "completed"}}, task)
	if err != nil {
		t.Fatal(err)
	}
	if o.Score != text.Score || o.Success != text.Success || o.Details["answer_source"] != AnswerFromTool || o.Details["decision"] != "accept" {
		t.Errorf("through the tool %v %v (%v), in text %v %v", o.Score, o.Success, o.Details["answer_source"], text.Score, text.Success)
	}
	// Nothing submitted: mcp fails the task, both reads the text.
	for delivery, wantSource := range map[string]any{"mcp": nil, "both": "json"} {
		o, err := s.run(t.Context(), &scenario.TaskEnv{Request: req(delivery), Tools: host}, &toolSender{reply: `{"decision": "accept", "recommendation": 4}`}, task)
		if err != nil {
			t.Fatal(err)
		}
		if o.Details["answer_source"] != wantSource || (wantSource == nil && (o.Score != 0 || !strings.Contains(o.Summary, "submitted no review"))) {
			t.Errorf("%s without a submission: %v (%s)", delivery, o.Details["answer_source"], o.Summary)
		}
	}
	if host.OpenTasks() != 0 {
		t.Errorf("%d endpoints left open", host.OpenTasks())
	}
	if _, err := s.run(t.Context(), &scenario.TaskEnv{Request: req("mcp")}, f, task); err == nil || !strings.Contains(err.Error(), "serves no MCP endpoint") {
		t.Errorf("mcp without a host: %v", err)
	}
}

// TestSubmitReviewOutsideTheCall: a review submitted while no message
// awaits the participant's reply (before the task's message, after its
// reply) is refused, and a refused one leaves the task open.
func TestSubmitReviewOutsideTheCall(t *testing.T) {
	tt := &toolTask{}
	review := map[string]any{"decision": "accept", "recommendation": 4.0}
	if _, _, err := tt.submit(t.Context(), nil, review); err == nil || !strings.Contains(err.Error(), "no review is asked for now") {
		t.Errorf("before the call: %v", err)
	}
	tt.setCall(true)
	if _, _, err := tt.submit(t.Context(), nil, map[string]any{"decision": "accept", "recommendation": 0.5}); err == nil {
		t.Error("a recommendation of 0.5 was taken")
	}
	if _, out, err := tt.submit(t.Context(), nil, review); err != nil || !out.Accepted {
		t.Errorf("in the call: %+v %v", out, err)
	}
	tt.setCall(false)
	if _, _, err := tt.submit(t.Context(), nil, map[string]any{"decision": "reject", "recommendation": 1.0}); err == nil {
		t.Error("a review after the reply was taken")
	}
	if a := tt.submitted(); a == nil || a.Decision != "accept" {
		t.Errorf("the review kept: %+v", a)
	}
}
