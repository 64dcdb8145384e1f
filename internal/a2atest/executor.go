package a2atest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// executor is the agent's work, as an a2a-go executor. Its spans follow the
// callee's half of the call figure (docs/design.md#one-call-in-spans): the
// A2A method's SERVER span (under a2aserve's POST), and the agent's own
// INTERNAL invoke_agent span with its delegations and chat inside.
type executor struct{ p *Agent }

func (e *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	p := e.p
	return func(yield func(a2a.Event, error) bool) {
		method := "SendMessage"
		if cc, ok := a2asrv.CallContextFrom(ctx); ok && cc.Method() != "" {
			method = cc.Method()
		}
		ctx, srv := p.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			otelmap.AttrA2AMethodName.String(method),
			otelmap.AttrA2AMessageID.String(ec.Message.ID),
			otelmap.AttrA2ATaskID.String(string(ec.TaskID)),
			otelmap.AttrA2AProtocolVersion.String(a2aserve.ProtocolVersion(ctx)),
			otelmap.AttrGenAIConversationID.String(ec.ContextID),
		))
		defer srv.End()

		if !p.opts.AsMessage {
			if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			if p.opts.AskFirst != "" && ec.StoredTask == nil {
				q := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(p.opts.AskFirst))
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, q), nil)
				return
			}
			if p.opts.Progress != "" {
				msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(p.opts.Progress))
				if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg), nil) {
					return
				}
			}
		}

		in := Input{ContextID: ec.ContextID, TaskID: string(ec.TaskID), Metadata: ec.Message.Metadata}
		for _, part := range ec.Message.Parts {
			switch v := part.Content.(type) {
			case a2a.Text:
				in.Text += string(v)
			case a2a.Data:
				if m, ok := v.Value.(map[string]any); ok {
					in.Data = append(in.Data, m)
				}
			}
		}
		wctx, inv := p.tracer.Start(ctx, otelmap.SpanInvokeAgentPrefix+p.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
			otelmap.AttrGenAIAgentName.String(p.Name),
			otelmap.AttrCallType.String(string(tracedata.CallAgent)),
			otelmap.AttrGenAIConversationID.String(ec.ContextID),
			otelmap.AttrGenAIInputMessages.String(a2acall.GenAIContent("user", in.Text, nil, "")),
		))
		answer, err := e.work(wctx, in)
		if err != nil {
			inv.RecordError(err)
			inv.SetStatus(codes.Error, err.Error())
		} else {
			inv.SetAttributes(otelmap.AttrGenAIOutputMessages.String(a2acall.GenAIContent("assistant", answer, nil, "stop")))
		}
		inv.End()
		meta, merr := e.extensionMeta(ec, inv.SpanContext())
		if merr != nil && err == nil {
			err = merr
		}

		if err != nil {
			srv.SetStatus(codes.Error, err.Error())
			msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(err.Error()))
			msg.Metadata = meta
			if p.opts.AsMessage {
				// A message cannot fail; a task can.
				yield(a2a.NewSubmittedTask(ec, ec.Message), nil)
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg), nil)
			return
		}
		parts := []*a2a.Part{a2a.NewTextPart(answer)}
		if p.opts.ReplyData != nil {
			parts = append(parts, a2a.NewDataPart(p.opts.ReplyData))
		}
		if p.opts.AsMessage {
			msg := a2a.NewMessage(a2a.MessageRoleAgent, parts...)
			msg.ContextID = ec.ContextID
			msg.Metadata = meta
			yield(msg, nil)
			return
		}
		var more []*a2a.Part
		if p.opts.Chunked {
			parts, more = parts[:1], parts[1:]
		}
		art := a2a.NewArtifactEvent(ec, parts...)
		art.Artifact.Name = "answer"
		art.Artifact.Metadata = meta
		if !yield(art, nil) {
			return
		}
		if len(more) > 0 && !yield(a2a.NewArtifactUpdateEvent(ec, art.Artifact.ID, more...), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (e *executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// errClosed ends the work of an agent closed while it hangs or waits.
var errClosed = errors.New("test agent closed")

// work is the agent's own work: wait, chat, ask the peers, answer.
func (e *executor) work(ctx context.Context, in Input) (string, error) {
	p := e.p
	if p.opts.Fault == FaultHang {
		<-p.stop // the executor runs detached from the request: only Close ends it
		return "", errClosed
	}
	if p.opts.Delay > 0 {
		select {
		case <-time.After(p.opts.Delay):
		case <-p.stop:
			return "", errClosed
		}
	}
	if p.opts.Chat {
		_, chat := p.tracer.Start(ctx, otelmap.SpanChatPrefix+"test-model", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
			otelmap.AttrGenAIRequestModel.String("test-model"),
			otelmap.AttrCallType.String(string(tracedata.CallTool)),
		))
		chat.End()
	}
	for _, peer := range p.opts.Peers {
		r, err := p.messenger.Send(ctx, a2acall.SendRequest{URL: peer, Text: in.Text})
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.Name, err)
		}
		in.PeerReplies = append(in.PeerReplies, r)
	}
	if p.opts.Fault == FaultFail {
		return "", ErrDeliberate
	}
	switch {
	case p.opts.ReplyFunc != nil:
		return p.opts.ReplyFunc(ctx, in)
	case p.opts.Reply != "":
		return p.opts.Reply, nil
	}
	lines := []string{p.Name + " answers: " + in.Text}
	for _, r := range in.PeerReplies {
		lines = append(lines, r.Text)
	}
	return strings.Join(lines, "\n"), nil
}

// extensionMeta is the answer's metadata when the request activated the
// Traceability Extension: the agent's steps under its invoke_agent span.
func (e *executor) extensionMeta(ec *a2asrv.ExecutorContext, root trace.SpanContext) (map[string]any, error) {
	p := e.p
	if !p.opts.Extension || !a2aserve.ExtensionRequested(ec, tracedata.ExtensionURI) {
		return nil, nil
	}
	if p.opts.ExtensionPayload != nil {
		return map[string]any{tracedata.ExtensionMetadataKey: p.opts.ExtensionPayload}, nil
	}
	rt := assemble.ResponseTraceForCall(root.TraceID(), p.store.Spans(root.TraceID()), root.SpanID())
	b, err := tracedata.EncodeResponseTrace(rt)
	if err != nil {
		return nil, fmt.Errorf("a2atest: encode the response trace: %w", err)
	}
	var payload map[string]any
	if err := json.Unmarshal(b, &payload); err != nil {
		return nil, fmt.Errorf("a2atest: re-read the response trace: %w", err)
	}
	return map[string]any{tracedata.ExtensionMetadataKey: payload}, nil
}
