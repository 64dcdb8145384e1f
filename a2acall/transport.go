package a2acall

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// This file: the transport. a2a-go clients for A2A 1.0 and, through
// a2acompat/a2av0, the 0.3 wire format, over one HTTP client (whose
// transport, httpclient.go, makes the POST span and carries the
// Traceability Extension headers); and the three ways a call gets its
// answer: a blocking send, a stream, polling.

// HeaderExtensions is the A2A extension activation header as the spec and the
// 0.3 Python SDK spell it. a2a-go 1.0 sends the service parameter
// a2a.SvcParamExtensions ("A2A-Extensions") instead; the Messenger sends
// both, so that agents of either generation see the Traceability Extension
// requested.
const HeaderExtensions = "X-A2A-Extensions"

// Protocol versions a Reply reports.
const (
	Protocol10 = "1.0"
	Protocol03 = "0.3"
)

// pollMin and pollMax bound the interval between tasks/get calls when a
// participant answers a blocking send, or ends a stream, before its task is
// done.
const (
	pollMin = 200 * time.Millisecond
	pollMax = 2 * time.Second
)

// newClientFactory makes a2a-go clients that speak JSON-RPC and HTTP+JSON,
// A2A 1.0 and 0.3, over client; connect tells it which interface to use.
func newClientFactory(client *http.Client) *a2aclient.Factory {
	return a2aclient.NewFactory(
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithConfig(a2aclient.Config{
			PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON},
		}),
		a2aclient.WithJSONRPCTransport(client),
		a2aclient.WithRESTTransport(client),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: client}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: client}),
	)
}

// block makes the blocking message/send.
func (m *Messenger) block(ctx context.Context, p *participant, msg *a2a.Message, col *collector) error {
	ctx, span := m.a2aSpan(ctx, "SendMessage", msg.ID, msg.ContextID)
	res, err := p.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err == nil {
		switch r := res.(type) {
		case *a2a.Message:
			col.message(r)
		case *a2a.Task:
			col.task(r)
		default:
			err = fmt.Errorf("message/send answered %T", res)
		}
	}
	span.end(p, col, err)
	if err != nil {
		return fmt.Errorf("message/send: %w", err)
	}
	return nil
}

// stream makes message/stream and reads events until one ends the call. A
// stream that ends early is left to poll.
func (m *Messenger) stream(ctx context.Context, p *participant, msg *a2a.Message, col *collector) (err error) {
	ctx, span := m.a2aSpan(ctx, "SendStreamingMessage", msg.ID, msg.ContextID)
	defer func() { span.end(p, col, err) }()
	for ev, err := range p.client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			return fmt.Errorf("message/stream: %w", err)
		}
		col.event(ev)
		if col.done() {
			// Leaving the loop closes the response body, so a participant
			// that keeps the stream open cannot hold the call.
			return nil
		}
	}
	if !col.seen {
		return fmt.Errorf("message/stream: %w (no event)", ErrNoResult)
	}
	return nil
}

// poll asks tasks/get until the task reaches a state that ends the call.
func (m *Messenger) poll(ctx context.Context, p *participant, col *collector) error {
	if col.taskID == "" {
		return fmt.Errorf("%w (state %s, no task id to follow)", ErrNoResult, stateName(col.state))
	}
	wait := pollMin
	for !col.done() {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("task %s still %s: %w", col.taskID, stateName(col.state), ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, pollMax)
		sctx, span := m.a2aSpan(ctx, "GetTask", "", col.contextID)
		task, err := p.client.GetTask(sctx, &a2a.GetTaskRequest{ID: a2a.TaskID(col.taskID)})
		if err == nil {
			col.task(task)
		}
		span.end(p, col, err)
		if err != nil {
			return fmt.Errorf("tasks/get %s: %w", col.taskID, err)
		}
	}
	return nil
}
