package assemble_test

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// TestAssembleTwoProcessesPairClientServer: one A2A call between two
// processes, recorded by both sides, is one both-sides interaction; the
// client's three spans and the server's three count once, and the steps
// hang off each other across the process boundary.
func TestAssembleTwoProcessesPairClientServer(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	coord := newSimProc(t, store, "coordinator-svc")
	rev := newSimProc(t, store, "reviewer-svc")
	c := newClock()

	ctx, root := coord.start(context.Background(), c, otelmap.SpanInvokeAgentPrefix+"coordinator", trace.SpanKindInternal, invokeAttrs("coordinator")...)
	var chatSC trace.SpanContext
	callSC := remoteCall(ctx, c, coord, rev, "reviewer", func(ctx context.Context) {
		chatSC = chat(ctx, c, rev, "gpt-4o", "review this", "accept")
	})
	end(c, root)

	id := root.SpanContext().TraceID()
	spans := store.Spans(id)
	if len(spans) != 9 {
		t.Fatalf("store holds %d spans, want 9", len(spans))
	}
	td := assemble.Trace(id, spans)

	if got := edges(td); !slices.Equal(got, []string{"coordinator->reviewer"}) {
		t.Fatalf("interactions = %v", got)
	}
	in := td.Interactions[0]
	if in.Count != 1 || in.BothSides != 1 || in.ClientOnly+in.ServerOnly+in.InProcess+in.ExtensionOnly != 0 || in.Errors != 0 {
		t.Errorf("interaction = %+v, want one both-sides call", in)
	}
	if len(in.LatenciesMS) != 1 || in.LatenciesMS[0] != 15 {
		t.Errorf("latencies = %v, want the client span's 15 ms", in.LatenciesMS)
	}
	if td.Coverage.Complete != 1 || td.Coverage.Interactions != 1 || td.Coverage.BothSides != 1 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
	if len(td.Steps) != 4 {
		t.Fatalf("steps = %d, want 4 (coordinator, invoke reviewer client, reviewer's own, chat): %+v", len(td.Steps), td.Steps)
	}
	rootStep := findStep(t, td, root.SpanContext().SpanID())
	callStep := findStep(t, td, callSC.SpanID())
	chatStep := findStep(t, td, chatSC.SpanID())
	revStep := findStep(t, td, trace.SpanID(mustParent(t, spans, chatSC.SpanID())))
	if rootStep.ParentStepID != "" || rootStep.Agent != "coordinator" || rootStep.CallType != tracedata.CallAgent {
		t.Errorf("root step = %+v", rootStep)
	}
	if callStep.ParentStepID != rootStep.StepID || callStep.Agent != "reviewer" || callStep.Caller != "coordinator" || callStep.StepType != "agent_call" {
		t.Errorf("call step = %+v", callStep)
	}
	if revStep.ParentStepID != callStep.StepID || revStep.Agent != "reviewer" || revStep.Caller != "coordinator" {
		t.Errorf("reviewer step = %+v, want parent %s", revStep, callStep.StepID)
	}
	if chatStep.ParentStepID != revStep.StepID || chatStep.Agent != "reviewer" || chatStep.CallType != tracedata.CallTool ||
		chatStep.Model != "gpt-4o" || chatStep.TotalTokens != 15 || chatStep.StepType != "llm_call" ||
		chatStep.Input != "review this" || chatStep.Output != "accept" || chatStep.Latency != 3 || chatStep.LatencyMS != 3 {
		t.Errorf("chat step = %+v", chatStep)
	}
	for i := 1; i < len(td.Steps); i++ {
		if td.Steps[i].StartTime.Before(td.Steps[i-1].StartTime) {
			t.Errorf("steps out of start order at %d", i)
		}
	}
	if got := td.AgentNames(); !slices.Equal(got, []string{"coordinator", "reviewer"}) {
		t.Errorf("agents = %v", got)
	}
	if a := td.Agent("reviewer"); a.IdentifiedBy != tracedata.IdentityAgentName || a.Steps != 3 || a.Virtual {
		t.Errorf("reviewer = %+v", a)
	}
	if got := td.Coverage.Services; !slices.Equal(got, []string{"coordinator-svc", "reviewer-svc"}) {
		t.Errorf("services = %v", got)
	}
	if td.Coverage.Spans != 9 || td.Coverage.SpansBySource[otelmap.SourceInProcess] != 9 || len(td.Coverage.Warnings) != 0 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
	if td.Start != rootStep.StartTime || td.End != rootStep.EndTime || td.DurationMS != rootStep.LatencyMS {
		t.Errorf("trace times %v..%v (%v ms), want the root's", td.Start, td.End, td.DurationMS)
	}
}

// TestAssembleInProcessNesting: an in-process framework nests invoke_agent
// spans; each agent span inside another agent's is a call, and the work
// inside an agent span belongs to that agent.
func TestAssembleInProcessNesting(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	p := newSimProc(t, store, "crew")
	c := newClock()
	ctx, planner := p.start(context.Background(), c, "invoke_agent planner", trace.SpanKindInternal, invokeAttrs("planner")...)
	rctx, researcher := p.start(ctx, c, "invoke_agent researcher", trace.SpanKindInternal, invokeAttrs("researcher")...)
	chat(rctx, c, p, "gpt-4o-mini", "find", "found")
	end(c, researcher)
	wctx, writer := p.start(ctx, c, "invoke_agent writer", trace.SpanKindInternal, invokeAttrs("writer")...)
	// A plain span between two agent spans does not hide the nesting.
	gctx, group := p.start(wctx, c, "review-loop", trace.SpanKindInternal)
	cctx, critic := p.start(gctx, c, "invoke_agent critic", trace.SpanKindInternal, invokeAttrs("critic")...)
	_, tool := p.start(cctx, c, "execute_tool score", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool),
		attribute.String(otelmap.AttrParametersPrefix+"paper", "p1"), attribute.Int(otelmap.AttrParametersPrefix+"scale", 5))
	end(c, tool)
	end(c, critic)
	end(c, group)
	// An agent nested in itself is not a call.
	_, again := p.start(wctx, c, "invoke_agent writer", trace.SpanKindInternal, invokeAttrs("writer")...)
	end(c, again)
	end(c, writer)
	end(c, planner)

	id := planner.SpanContext().TraceID()
	td := assemble.Trace(id, store.Spans(id))
	want := []string{"planner->researcher", "planner->writer", "writer->critic"}
	if got := edges(td); !slices.Equal(got, want) {
		t.Fatalf("interactions = %v, want %v", got, want)
	}
	for _, in := range td.Interactions {
		if in.Count != 1 || in.InProcess != 1 {
			t.Errorf("%s->%s = %+v, want one in-process call", in.From, in.To, in)
		}
	}
	if td.Coverage.InProcess != 3 || td.Coverage.Complete != 1 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
	toolStep := findStep(t, td, tool.SpanContext().SpanID())
	criticStep := findStep(t, td, critic.SpanContext().SpanID())
	if toolStep.Agent != "critic" || toolStep.ParentStepID != criticStep.StepID || toolStep.StepType != "tool_call" ||
		toolStep.Parameters["paper"] != "p1" || toolStep.Parameters["scale"] != int64(5) {
		t.Errorf("tool step = %+v", toolStep)
	}
	if criticStep.Caller != "writer" || criticStep.Agent != "critic" {
		t.Errorf("critic step = %+v", criticStep)
	}
	if got := td.AgentNames(); !slices.Equal(got, []string{"critic", "planner", "researcher", "writer"}) {
		t.Errorf("agents = %v", got)
	}
	if a := td.Agent("writer"); a.Steps != 2 {
		t.Errorf("writer = %+v, want 2 steps", a)
	}
}

// TestAssembleSplitRoadsOutOfOrder: a trace whose spans came partly through
// the in-process recorder and partly through another road in batches,
// children before parents, assembles as if it had come all at once; and
// the input order never changes the JSON.
func TestAssembleSplitRoadsOutOfOrder(t *testing.T) {
	build := func(coordStore, revStore *tracestore.Store) trace.TraceID {
		coord := newSimProc(t, coordStore, "coordinator")
		rev := newSimProc(t, revStore, "reviewer")
		c := newClock()
		ctx, root := coord.start(context.Background(), c, "coordbench.task", trace.SpanKindInternal, otelmap.AttrCallType.String("HOST"))
		remoteCall(ctx, c, coord, rev, "reviewer", func(ctx context.Context) {
			chat(ctx, c, rev, "gpt-4o", "a", "b")
			remoteCall(ctx, c, rev, coord, "coordinator", nil)
		})
		end(c, root)
		return root.SpanContext().TraceID()
	}

	mixed, other := tracestore.NewStore(tracestore.Limits{}), tracestore.NewStore(tracestore.Limits{})
	id := build(mixed, other)
	// The reviewer's spans arrive over OTLP: two batches, each with its own
	// resource, children first.
	revSpans := other.Spans(id)
	slices.Reverse(revSpans)
	half := len(revSpans) / 2
	for b, batch := range [][]otelmap.Span{revSpans[:half], revSpans[half:]} {
		res := &otelmap.Resource{ServiceName: "reviewer", Attrs: []attribute.KeyValue{attribute.String("service.name", "reviewer"), attribute.Int("batch", b)}}
		for i := range batch {
			batch[i].Source = otelmap.SourceOTLP
			batch[i].Resource = res
		}
		if r := mixed.Add(batch); r.Accepted != len(batch) {
			t.Fatalf("add batch: %+v", r)
		}
	}
	split := assemble.Trace(id, mixed.Spans(id))

	// All at once, all by one road.
	var all []otelmap.Span
	all = append(all, mixed.Spans(id)...)
	for i := range all {
		all[i].Source = otelmap.SourceInProcess
	}
	whole := assemble.Trace(id, all)

	if split.Coverage.SpansBySource[otelmap.SourceOTLP] != len(revSpans) || split.Coverage.SpansBySource[otelmap.SourceInProcess] != len(all)-len(revSpans) {
		t.Errorf("spans by source = %v", split.Coverage.SpansBySource)
	}
	split.Coverage.SpansBySource = whole.Coverage.SpansBySource
	if got, want := mustJSON(t, split), mustJSON(t, whole); got != want {
		t.Errorf("split trace differs from whole:\n got %s\nwant %s", got, want)
	}
	want := []string{"coordinator->reviewer", "reviewer->coordinator"}
	if got := edges(whole); !slices.Equal(got, want) {
		t.Errorf("interactions = %v, want %v", got, want)
	}
	if whole.Coverage.BothSides != 2 || whole.Coverage.Complete != 1 {
		t.Errorf("coverage = %+v", whole.Coverage)
	}
	assertPermutationStable(t, id, mixed.Spans(id), 12)
}

// TestAssembleUnpairedClients: a call nobody answered (in this trace) is an
// edge to the agent it names, or to a virtual node for its address; an
// HTTP call inside an LLM call is no interaction at all.
func TestAssembleUnpairedClients(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	p := newSimProc(t, store, "coordinator")
	c := newClock()
	ctx, root := p.start(context.Background(), c, "invoke_agent coordinator", trace.SpanKindInternal, invokeAttrs("coordinator")...)
	remoteCall(ctx, c, p, nil, "ghost", nil)
	actx, anon := p.start(ctx, c, "invoke_agent", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
		otelmap.AttrServerAddress.String("10.0.0.9"), otelmap.AttrServerPort.Int(8000))
	_, anonPost := p.start(actx, c, "POST", trace.SpanKindClient, otelmap.AttrServerAddress.String("10.0.0.9"), otelmap.AttrServerPort.Int(8000))
	end(c, anonPost)
	anon.SetStatus(codes.Error, "connection refused")
	end(c, anon)
	chat(ctx, c, p, "gpt-4o", "x", "y")
	// A bare A2A client span is an agent call too, named by its address.
	_, bare := p.start(ctx, c, "SendMessage", trace.SpanKindClient, otelmap.AttrA2AMethodName.String("SendMessage"),
		otelmap.AttrServerAddress.String("peer.local"))
	end(c, bare)
	end(c, root)

	id := root.SpanContext().TraceID()
	td := assemble.Trace(id, store.Spans(id))
	want := []string{"coordinator->10.0.0.9:8000", "coordinator->ghost", "coordinator->peer.local"}
	if got := edges(td); !slices.Equal(got, want) {
		t.Fatalf("interactions = %v, want %v", got, want)
	}
	if in := findInteraction(td, "coordinator", "10.0.0.9:8000"); in.ClientOnly != 1 || in.Errors != 1 {
		t.Errorf("virtual edge = %+v", in)
	}
	if in := findInteraction(td, "coordinator", "ghost"); in.ClientOnly != 1 || in.Errors != 0 {
		t.Errorf("ghost edge = %+v", in)
	}
	if a := td.Agent("10.0.0.9:8000"); a == nil || !a.Virtual || a.IdentifiedBy != tracedata.IdentityServerAddr || a.Measured() {
		t.Errorf("virtual node = %+v", a)
	}
	if a := td.Agent("ghost"); a == nil || a.Virtual || a.IdentifiedBy != tracedata.IdentityAgentName {
		t.Errorf("ghost = %+v", a)
	}
	if td.Agent("api.openai.com:443") != nil {
		t.Error("the HTTP call under a chat span became an agent")
	}
	if td.Coverage.ClientOnly != 3 || td.Coverage.Complete != 0 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
	anonStep := findStep(t, td, anon.SpanContext().SpanID())
	if anonStep.Agent != "10.0.0.9:8000" || anonStep.Caller != "coordinator" || anonStep.Error != "connection refused" {
		t.Errorf("anonymous call step = %+v", anonStep)
	}
	if a := td.Agent("10.0.0.9:8000"); a.Errors != 1 || a.Steps != 1 {
		t.Errorf("virtual node counts = %+v", a)
	}
}

// TestAssembleServerOnly: a root server span was called by the user; a
// server span whose parent is missing was called by someone unknown, and
// the trace says its caller's spans are missing.
func TestAssembleServerOnly(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	green := newSimProc(t, store, "green", otelmap.AttrRole.String(otelmap.RoleAssessor))
	helper := newSimProc(t, store, "helper")
	c := newClock()
	ctx, srv := green.start(context.Background(), c, "POST", trace.SpanKindServer)
	_, task := green.start(ctx, c, "coordbench.task", trace.SpanKindInternal, otelmap.AttrCallType.String("HOST"))
	end(c, task)
	end(c, srv)

	missing := trace.SpanID{0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: srv.SpanContext().TraceID(), SpanID: missing, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	hctx, hsrv := helper.start(trace.ContextWithRemoteSpanContext(context.Background(), remote), c, "POST", trace.SpanKindServer)
	_, work := helper.start(hctx, c, "execute_tool lookup", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool))
	end(c, work)
	hsrv.SetStatus(codes.Error, "boom")
	end(c, hsrv)

	id := srv.SpanContext().TraceID()
	td := assemble.Trace(id, store.Spans(id))
	want := []string{"unknown->helper", "user->green"}
	if got := edges(td); !slices.Equal(got, want) {
		t.Fatalf("interactions = %v, want %v", got, want)
	}
	for _, in := range td.Interactions {
		if in.ServerOnly != 1 || in.Count != 1 {
			t.Errorf("%s->%s = %+v, want one server-only call", in.From, in.To, in)
		}
	}
	if in := findInteraction(td, "unknown", "helper"); in.Errors != 1 {
		t.Errorf("failed server call not counted: %+v", in)
	}
	for name, by := range map[string]string{"user": tracedata.IdentityUser, "unknown": tracedata.IdentityUnknown} {
		if a := td.Agent(name); a == nil || !a.Virtual || a.IdentifiedBy != by {
			t.Errorf("%s = %+v", name, a)
		}
	}
	if a := td.Agent("green"); a == nil || a.Role != tracedata.RoleAssessor || a.Virtual || a.Steps != 1 {
		t.Errorf("green = %+v", a)
	}
	if a := td.Agent("helper"); a == nil || a.Role != "" || a.IdentifiedBy != tracedata.IdentityServiceName {
		t.Errorf("helper = %+v", a)
	}
	if !hasWarning(td, "1 server spans have parents missing from the trace; their caller is \"unknown\"") ||
		!hasWarning(td, "1 spans have parents missing from the trace") {
		t.Errorf("warnings = %q", td.Coverage.Warnings)
	}
	if td.Coverage.ServerOnly != 2 || td.Coverage.Complete != 0 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
}

// extensionSpans builds the spans a responder's Traceability Extension
// steps become: its root step as a SERVER invoke_agent span under the

// TestAssembleAgent365Scopes: the shape Microsoft Agent 365's observability
// SDK gives hand-traced agents in one process (testdata/live/
// a365-observability): every invoke_agent span is CLIENT (its default kind),
// every span carries its agent's gen_ai.agent.name, and model calls are
// gen_ai.operation.name "Chat". A CLIENT agent span whose only own step is
// such a call (the writer) is an agent run in-process, like one with a tool
// call under it (the researcher), three deep (the editor under the writer);
// the Chat calls are the agents' LLM steps and never agents. A CLIENT agent
// span with nothing of its own under it (the remote, whose only child has an
// operation no convention has) stays a call seen from the caller only.
func TestAssembleAgent365Scopes(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	p := newSimProc(t, store, "")
	c := newClock()
	agent := func(name string) []attribute.KeyValue {
		return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
			otelmap.AttrGenAIAgentName.String(name), otelmap.AttrGenAIAgentID.String(name + "-id")}
	}
	inference := func(ctx context.Context, of string) trace.Span {
		_, s := p.start(ctx, c, "Chat gpt-4o-mini", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String("Chat"),
			otelmap.AttrGenAIAgentName.String(of), otelmap.AttrGenAIAgentID.String(of+"-id"), otelmap.AttrGenAIRequestModel.String("gpt-4o-mini"))
		end(c, s)
		return s
	}
	tool := func(ctx context.Context, of, name string) (context.Context, trace.Span) {
		return p.start(ctx, c, "execute_tool "+name, trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool),
			otelmap.AttrGenAIToolName.String(name), otelmap.AttrGenAIAgentName.String(of))
	}
	ctx, coord := p.start(context.Background(), c, "invoke_agent coordinator", trace.SpanKindClient, agent("coordinator")...)
	inference(ctx, "coordinator")
	tctx, askR := tool(ctx, "coordinator", "ask_researcher")
	rctx, researcher := p.start(tctx, c, "invoke_agent researcher", trace.SpanKindClient, agent("researcher")...)
	inference(rctx, "researcher")
	_, search := tool(rctx, "researcher", "search_web")
	end(c, search)
	end(c, researcher)
	end(c, askR)
	tctx, askW := tool(ctx, "coordinator", "ask_writer")
	wctx, writer := p.start(tctx, c, "invoke_agent writer", trace.SpanKindClient, agent("writer")...)
	writerChat := inference(wctx, "writer")
	ectx, editor := p.start(wctx, c, "invoke_agent editor", trace.SpanKindClient, agent("editor")...)
	inference(ectx, "editor")
	end(c, editor)
	end(c, writer)
	end(c, askW)
	tctx, askRemote := tool(ctx, "coordinator", "ask_remote")
	xctx, remote := p.start(tctx, c, "invoke_agent remote", trace.SpanKindClient, agent("remote")...)
	_, unknown := p.start(xctx, c, "chatbot", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String("chatbot"))
	end(c, unknown)
	end(c, remote)
	end(c, askRemote)
	inference(ctx, "coordinator")
	end(c, coord)

	id := coord.SpanContext().TraceID()
	td := assemble.Trace(id, store.Spans(id))
	want := []string{"coordinator->remote", "coordinator->researcher", "coordinator->writer", "writer->editor"}
	if got := edges(td); !slices.Equal(got, want) {
		t.Fatalf("interactions = %v, want %v", got, want)
	}
	for _, in := range td.Interactions {
		wantInProcess := in.To != "remote"
		if in.Count != 1 || (in.InProcess == 1) != wantInProcess || (in.ClientOnly == 1) == wantInProcess {
			t.Errorf("%s->%s = %+v, want one call, in-process: %v", in.From, in.To, in, wantInProcess)
		}
	}
	if got := td.AgentNames(); !slices.Equal(got, []string{"coordinator", "editor", "remote", "researcher", "writer"}) {
		t.Errorf("agents = %v", got)
	}
	if s := findStep(t, td, writerChat.SpanContext().SpanID()); s.Agent != "writer" || s.StepType != "llm_call" {
		t.Errorf("writer's Chat step = %+v, want the writer's llm_call", s)
	}
	if a := td.Agent("coordinator"); a.Steps != 6 {
		t.Errorf("coordinator = %+v, want 6 steps (its agent span, 2 Chat calls, 3 tool calls)", a)
	}
	if td.Coverage.InProcess != 3 || td.Coverage.ClientOnly != 1 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
}
