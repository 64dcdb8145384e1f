package a2acall_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// quietLogger drops a2a-go's and the Messenger's logs in tests.
var quietLogger = slog.New(slog.DiscardHandler)

// caller is the calling side of a messenger test: a Messenger whose spans,
// and the spans it rebuilds from the Traceability Extension, land in one
// store, as in the green agent (service "green", the assessor).
type caller struct {
	m      *a2acall.Messenger
	store  *tracestore.Store
	tracer trace.Tracer
}

func newCaller(t *testing.T, opts a2acall.Options) *caller {
	t.Helper()
	c := a2atest.NewCaller(t, opts)
	return &caller{m: c.Messenger, store: c.Store, tracer: c.Tracer}
}

// send makes one call inside a HOST task span, as the green executor does,
// and returns the reply, the task's trace id and the error.
func (c *caller) send(t *testing.T, req a2acall.SendRequest) (*a2acall.Reply, trace.TraceID, error) {
	t.Helper()
	ctx, task := c.tracer.Start(t.Context(), otelmap.SpanTask, trace.WithAttributes(otelmap.AttrCallType.String(string(tracedata.CallHost))))
	reply, err := c.m.Send(ctx, req)
	task.End()
	return reply, task.SpanContext().TraceID(), err
}

// TestMessengerProtocols sends to agents of both protocol generations, each
// blocking and streaming, answering with a task or a message, and checks
// the reply and which wire method was used.
func TestMessengerProtocols(t *testing.T) {
	cases := []struct {
		name       string
		opts       a2atest.Options
		protocol   string
		wireMethod string
	}{
		{"1.0 blocking", a2atest.Options{}, "1.0", `"method":"SendMessage"`},
		{"1.0 streaming", a2atest.Options{Streaming: true}, "1.0", `"method":"SendStreamingMessage"`},
		{"1.0 message", a2atest.Options{AsMessage: true}, "1.0", `"method":"SendMessage"`},
		{"1.0 streaming message", a2atest.Options{Streaming: true, AsMessage: true}, "1.0", `"method":"SendStreamingMessage"`},
		{"0.3 blocking", a2atest.Options{Legacy: true}, "0.3.0", `"method":"message/send"`},
		{"0.3 streaming", a2atest.Options{Legacy: true, Streaming: true}, "0.3.0", `"method":"message/stream"`},
		{"0.3 streaming message", a2atest.Options{Legacy: true, Streaming: true, AsMessage: true}, "0.3.0", `"method":"message/stream"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Name = "solver"
			opts.ReplyData = map[string]any{"decision": "accept"}
			p := a2atest.Start(t, opts)
			c := newCaller(t, a2acall.Options{})
			reply, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "review paper 7", Data: map[string]any{"paper": "7"}})
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			if reply.Text != "solver answers: review paper 7" {
				t.Errorf("text %q", reply.Text)
			}
			if len(reply.Data) != 1 || reply.Data[0]["decision"] != "accept" {
				t.Errorf("data %v", reply.Data)
			}
			if reply.State != "completed" || reply.AgentName != "solver" || reply.Protocol != tc.protocol || reply.Streamed != opts.Streaming {
				t.Errorf("reply %+v", reply)
			}
			if reply.ContextID == "" || (!opts.AsMessage && reply.TaskID == "") {
				t.Errorf("context %q task %q", reply.ContextID, reply.TaskID)
			}
			if w := p.Wire(); !strings.Contains(w, tc.wireMethod) {
				t.Errorf("wire does not show %s:\n%s", tc.wireMethod, w)
			}
			if got := p.Calls(); len(got) != 1 {
				t.Errorf("%d calls, want 1", len(got))
			}
		})
	}
}

// TestMessengerCardPath: a participant URL with a path (AgentBeats'
// gateway, http://host:port/<role>) has its card under that path, and the
// calls go there.
func TestMessengerCardPath(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			p := a2atest.Start(t, a2atest.Options{Name: "reviewer", Path: "/reviewer", Legacy: legacy})
			if !strings.HasSuffix(p.URL, "/reviewer") {
				t.Fatalf("url %s", p.URL)
			}
			c := newCaller(t, a2acall.Options{})
			// A trailing slash is the same participant.
			for _, u := range []string{p.URL, p.URL + "/"} {
				if _, _, err := c.send(t, a2acall.SendRequest{URL: u, Text: "hi"}); err != nil {
					t.Fatalf("send to %s: %v", u, err)
				}
			}
			var paths []string
			for _, r := range p.Requests() {
				paths = append(paths, r.Method+" "+r.Path)
			}
			want := []string{"GET /reviewer/.well-known/agent-card.json", "POST /reviewer", "POST /reviewer"}
			if strings.Join(paths, ",") != strings.Join(want, ",") {
				t.Errorf("requests %v, want %v", paths, want)
			}
		})
	}
}

// TestMessengerOptions: DisableStreaming sends message/send to an agent
// that streams; DisableContentCapture leaves message text off the spans.
func TestMessengerOptions(t *testing.T) {
	p := a2atest.Start(t, a2atest.Options{Streaming: true})
	c := newCaller(t, a2acall.Options{DisableStreaming: true, DisableContentCapture: true})
	reply, tid, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Streamed || reply.Text != "purple answers: hi" {
		t.Errorf("reply %+v", reply)
	}
	if w := p.Wire(); !strings.Contains(w, `"method":"SendMessage"`) {
		t.Errorf("not a blocking send:\n%s", w)
	}
	inv := spanNamed(t, c.store.Spans(tid), "invoke_agent purple", trace.SpanKindClient)
	for _, key := range []attribute.Key{otelmap.AttrGenAIInputMessages, otelmap.AttrGenAIOutputMessages} {
		if _, ok := inv.Attr(key); ok {
			t.Errorf("%s recorded with content capture off", key)
		}
	}
}

// TestMessengerMetadata: a request's metadata is sent merged over the
// Messenger's, the request's value winning for a key in both; the
// Messenger's own map is left as it was.
func TestMessengerMetadata(t *testing.T) {
	p := a2atest.Start(t, a2atest.Options{})
	opts := map[string]any{"a": "messenger", "b": "messenger"}
	c := newCaller(t, a2acall.Options{Metadata: opts})
	if _, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi", Metadata: map[string]any{"b": "request", "c": "request"}}); err != nil {
		t.Fatal(err)
	}
	if w := p.Wire(); !strings.Contains(w, `"metadata":{"a":"messenger","b":"request","c":"request"}`) {
		t.Errorf("metadata not merged:\n%s", w)
	}
	if len(opts) != 2 || opts["b"] != "messenger" {
		t.Errorf("Options.Metadata changed: %v", opts)
	}
}

// TestMessengerBadURL: a malformed URL is an error naming it, without a
// call.
func TestMessengerBadURL(t *testing.T) {
	c := newCaller(t, a2acall.Options{})
	_, _, err := c.send(t, a2acall.SendRequest{URL: "not a url", Text: "x"})
	var ce *a2acall.CallError
	if !errors.As(err, &ce) || ce.URL != "not a url" {
		t.Errorf("err %v", err)
	}
}
