package a2acall_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
)

// TestMessengerProgressNotInReply: a working status message is progress,
// not the answer. When the task then ends with a status that carries no
// message, the reply holds the artifacts alone; the earlier progress text
// is not resurrected.
func TestMessengerProgressNotInReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts a2atest.Options
	}{
		{"1.0 streaming", a2atest.Options{Streaming: true}},
		{"0.3 streaming", a2atest.Options{Streaming: true, Legacy: true}},
		{"1.0 blocking", a2atest.Options{}},
		{"0.3 blocking", a2atest.Options{Legacy: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Progress = "still reading the paper"
			p := a2atest.Start(t, opts)
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "purple answers: review" || reply.State != "completed" {
				t.Errorf("reply %q (%s), want the artifact's text alone", reply.Text, reply.State)
			}
		})
	}
}

// TestMessengerChunkedArtifact: an artifact sent in two events, the second
// appending to the first, is one answer: its text and its data.
func TestMessengerChunkedArtifact(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts a2atest.Options
	}{
		{"1.0 streaming", a2atest.Options{Streaming: true}},
		{"0.3 streaming", a2atest.Options{Streaming: true, Legacy: true}},
		{"1.0 blocking", a2atest.Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Chunked = true
			opts.ReplyData = map[string]any{"decision": "reject"}
			p := a2atest.Start(t, opts)
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "purple answers: review" || len(reply.Data) != 1 || reply.Data[0]["decision"] != "reject" {
				t.Errorf("reply %q %v", reply.Text, reply.Data)
			}
		})
	}
}

// TestMessengerInputRequired: a task that ends input-required ends the call
// with its question; sending again with its task id continues it.
func TestMessengerInputRequired(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			p := a2atest.Start(t, a2atest.Options{Streaming: streaming, AskFirst: "which paper?"})
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.State != "input-required" || reply.Text != "which paper?" || reply.TaskID == "" {
				t.Fatalf("reply %+v", reply)
			}
			reply2, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "paper 7", ContextID: reply.ContextID, TaskID: reply.TaskID})
			if err != nil {
				t.Fatal(err)
			}
			if reply2.State != "completed" || reply2.TaskID != reply.TaskID || reply2.Text != "purple answers: paper 7" {
				t.Errorf("continued task: %+v", reply2)
			}
		})
	}
}

// TestMessengerPollsUnfinishedTask: an agent that answers a blocking send,
// or ends its stream, while its task is still working is followed with
// tasks/get until the task ends. The agent is a hand-written A2A 1.0
// JSON-RPC server, since a2a-go's own server does not answer early.
func TestMessengerPollsUnfinishedTask(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			var mu sync.Mutex
			gets := 0
			var srvURL string
			srvURL = startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					_ = json.NewEncoder(w).Encode(a2a.AgentCard{Name: "slow", Capabilities: a2a.AgentCapabilities{Streaming: streaming},
						SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srvURL, a2a.TransportProtocolJSONRPC)}})
					return
				}
				var req struct {
					ID     any    `json:"id"`
					Method string `json:"method"`
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				task := map[string]any{"id": "t1", "contextId": "c1", "status": map[string]any{"state": "TASK_STATE_WORKING"}}
				switch req.Method {
				case "SendStreamingMessage":
					// One event, then the stream ends.
					w.Header().Set("Content-Type", "text/event-stream")
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"task": task}})
					_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
					return
				case "GetTask":
					mu.Lock()
					gets++
					if gets >= 2 {
						task["status"] = map[string]any{"state": "TASK_STATE_COMPLETED",
							"message": map[string]any{"messageId": "m", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": "finally"}}}}
					}
					mu.Unlock()
					_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": task})
					return
				}
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"task": task}})
			}))
			c := newCaller(t, a2acall.Options{})
			reply, tid, err := c.send(t, a2acall.SendRequest{URL: srvURL, Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "finally" || reply.State != "completed" || reply.TaskID != "t1" || reply.Streamed != streaming {
				t.Errorf("reply %+v", reply)
			}
			spans := c.store.Spans(tid)
			inv := spanNamed(t, spans, "invoke_agent slow", trace.SpanKindClient)
			n := 0
			for _, s := range spans {
				if s.Name == "GetTask" && s.Kind == trace.SpanKindClient {
					n++
					if s.ParentSpanID != inv.SpanID || strAttr(s, otelmap.AttrA2ATaskID) != "t1" || strAttr(s, otelmap.AttrGenAIConversationID) != "c1" {
						t.Errorf("GetTask span %+v", s)
					}
				}
			}
			if n != 2 {
				t.Errorf("%d GetTask spans, want 2", n)
			}
		})
	}
}

// TestMessengerNoTaskToFollow: an answer that is neither a message nor a
// task in a state that ends the call, and names no task to poll, ends the
// call with ErrNoResult.
func TestMessengerNoTaskToFollow(t *testing.T) {
	var srvURL string
	srvURL = startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(a2a.AgentCard{Name: "vague", Capabilities: a2a.AgentCapabilities{Streaming: true},
				SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srvURL, a2a.TransportProtocolJSONRPC)}})
			return
		}
		var req struct {
			ID any `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
			"statusUpdate": map[string]any{"status": map[string]any{"state": "TASK_STATE_WORKING"}}}})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
	}))
	c := newCaller(t, a2acall.Options{})
	reply, tid, err := c.send(t, a2acall.SendRequest{URL: srvURL, Text: "hi"})
	if !errors.Is(err, a2acall.ErrNoResult) {
		t.Fatalf("err %v", err)
	}
	var ce *a2acall.CallError
	if reply == nil || reply.State != "working" || !errors.As(err, &ce) || ce.State != "working" {
		t.Errorf("what arrived is returned with the error: %+v, %v", reply, err)
	}
	inv := spanNamed(t, c.store.Spans(tid), "invoke_agent vague", trace.SpanKindClient)
	if strAttr(inv, otelmap.AttrErrorType) != "no_result" {
		t.Errorf("error.type %q", strAttr(inv, otelmap.AttrErrorType))
	}
}
