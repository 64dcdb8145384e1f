package purple

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// executor is the agent's a2asrv.AgentExecutor. One request is the callee's
// half of the call figure (docs/design.md#one-call-in-spans):
//
//	POST                    SERVER    otelhttp (a2aserve adds a2a.method.name)
//	  SendMessage           SERVER    the A2A method, a2a.* attributes
//	    invoke_agent <name> INTERNAL  the agent's own work: its role's chat,
//	                                  execute_tool and invoke_agent (peers) spans
//
// and the task goes submitted → working → completed with one artifact (or
// failed with the error's text). When the caller activated the
// Traceability Extension, the artifact (or the failed status message)
// carries the steps under invoke_agent.
type executor struct{ s *Server }

var _ a2asrv.AgentExecutor = (*executor)(nil)

func (x *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	s := x.s
	return func(yield func(a2a.Event, error) bool) {
		method := "SendMessage"
		if cc, ok := a2asrv.CallContextFrom(ctx); ok && cc.Method() != "" {
			method = cc.Method()
		}
		version := a2aserve.ProtocolVersion(ctx)
		if version == "" {
			version = string(a2a.Version)
		}
		msgID := ""
		if ec.Message != nil {
			msgID = ec.Message.ID
		}
		x.rememberIngest(ctx, ec.Message)
		ctx, srv := s.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			otelmap.AttrA2AMethodName.String(method),
			otelmap.AttrA2AMessageID.String(msgID),
			otelmap.AttrA2ATaskID.String(string(ec.TaskID)),
			otelmap.AttrA2AProtocolVersion.String(version),
			otelmap.AttrGenAIConversationID.String(ec.ContextID),
		))
		state := a2a.TaskStateFailed
		defer func() {
			srv.SetAttributes(otelmap.AttrA2ATaskState.String(wireState(state, version)))
			srv.End()
		}()

		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}

		req := newRequest(ec.Message, ec.ContextID, string(ec.TaskID))
		ans, root, err := x.work(ctx, req)
		meta := x.extensionMeta(ec, root)
		if err != nil {
			failSpan(srv, err, "task_failed")
			msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(err.Error()))
			msg.Metadata = meta
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg), nil)
			return
		}
		parts := []*a2a.Part{a2a.NewTextPart(ans.Text)}
		if ans.Data != nil {
			parts = append(parts, a2a.NewDataPart(ans.Data))
		}
		art := a2a.NewArtifactEvent(ec, parts...)
		art.Artifact.Name = "answer"
		art.Artifact.Metadata = meta
		if !yield(art, nil) {
			return
		}
		state = a2a.TaskStateCompleted
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// rememberIngest reads the ingest token an assessor handed the agent in
// msg's metadata and remembers it for the call's trace (the trace of the
// caller's traceparent, which the server span in ctx continues), so that
// the agent's exports of that trace carry it (ingest.go).
func (x *executor) rememberIngest(ctx context.Context, msg *a2a.Message) {
	tokens := x.s.tel.tokens
	if tokens == nil || msg == nil {
		return
	}
	in, ok := ingestFromMetadata(msg.Metadata)
	if !ok {
		if _, present := msg.Metadata[otelmap.IngestMetadataKey]; present {
			x.s.log.Warn("purple: malformed ingest token in the message metadata: exporting without it")
		}
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tokens.remember(sc.TraceID(), in)
	}
}

func (x *executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// work runs the role inside the agent's invoke_agent span, with the faults
// that apply. root is that span's context, for the extension's steps.
func (x *executor) work(ctx context.Context, req *Request) (ans *Answer, root trace.SpanContext, err error) {
	s := x.s
	ctx, span := s.tracer.Start(ctx, otelmap.SpanInvokeAgentPrefix+s.opts.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
		otelmap.AttrGenAIAgentName.String(s.opts.Name),
		otelmap.AttrCallType.String(string(tracedata.CallAgent)),
		otelmap.AttrGenAIConversationID.String(req.ContextID),
		otelmap.AttrGenAIInputMessages.String(a2acall.GenAIContent("user", req.Text, req.Data, "")),
		attribute.String("coordbench.purple.role", s.opts.Role),
	))
	defer func() {
		if err != nil {
			failSpan(span, err, "agent_error")
		} else {
			span.SetAttributes(otelmap.AttrGenAIOutputMessages.String(a2acall.GenAIContent("assistant", ans.Text, dataList(ans.Data), "stop")))
		}
		span.End()
	}()
	root = span.SpanContext()
	if len(req.Path) > 0 {
		span.SetAttributes(attribute.StringSlice("coordbench.purple.path", req.Path))
	}

	f := &s.opts.Faults
	faulty := f.applies(req.taskID())
	if faulty && f.Hang {
		s.log.Info("purple: hang fault: not answering", "task", req.taskID())
		<-s.stop
		return nil, root, errStopped
	}
	if faulty && f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-s.stop:
			t.Stop()
			return nil, root, errStopped
		}
	}
	if faulty && s.faults.fail(f.FailureRate) {
		return nil, root, errInjected
	}
	env := &Env{Name: s.opts.Name, Role: s.opts.Role, Peers: s.opts.Peers, Delegation: s.opts.Delegation, Logger: s.log, s: s}
	if ep, ok := offersReviewTools(req); ok {
		ans, err = reviewWithTools(ctx, env, req, s.opts.Handler, ep)
	} else {
		ans, err = s.opts.Handler.Answer(ctx, env, req)
	}
	if err != nil {
		return nil, root, err
	}
	if ans == nil {
		ans = &Answer{}
	}
	if faulty && f.Malformed {
		ans = &Answer{Text: MalformedAnswer}
	}
	return ans, root, nil
}

func dataList(d map[string]any) []map[string]any {
	if d == nil {
		return nil
	}
	return []map[string]any{d}
}

// extensionMeta is the answer's metadata when the caller activated the
// Traceability Extension and the agent returns steps: the steps of its work
// on this call (root and below, its peers' steps included), nil otherwise.
func (x *executor) extensionMeta(ec *a2asrv.ExecutorContext, root trace.SpanContext) map[string]any {
	s := x.s
	if !s.returnsSteps() || !root.IsValid() || !a2aserve.ExtensionRequested(ec, tracedata.ExtensionURI) {
		return nil
	}
	rt := assemble.ResponseTraceForCall(root.TraceID(), s.tel.store.Spans(root.TraceID()), root.SpanID())
	if len(rt.Steps) == 0 {
		return nil
	}
	b, err := tracedata.EncodeResponseTrace(rt)
	if err != nil {
		s.log.Warn("purple: extension steps not encoded", "err", err)
		return nil
	}
	var payload map[string]any
	if err := json.Unmarshal(b, &payload); err != nil {
		s.log.Warn("purple: extension steps not encoded", "err", err)
		return nil
	}
	return map[string]any{tracedata.ExtensionMetadataKey: payload}
}

// String names the agent for logs.
func (s *Server) String() string {
	return fmt.Sprintf("purple %s (%s) at %s", s.opts.Name, s.opts.Role, s.URL())
}

// wireState spells a task state as the protocol in use does: 1.0
// "TASK_STATE_COMPLETED", 0.3 "completed".
func wireState(st a2a.TaskState, version string) string {
	if !strings.HasPrefix(version, "0.") {
		return string(st)
	}
	v := strings.TrimPrefix(string(st), "TASK_STATE_")
	return strings.ReplaceAll(strings.ToLower(v), "_", "-")
}
