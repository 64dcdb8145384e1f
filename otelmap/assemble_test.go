package otelmap

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/tracedata"
)

// simProc is one simulated process: its own tracer provider, whose spans
// the in-process Recorder puts into a store.
type simProc struct {
	tr trace.Tracer
}

// newSimProc starts a tracer provider for service (no service.name when
// service is "") recording into store.
func newSimProc(t testing.TB, store *Store, service string, extra ...attribute.KeyValue) *simProc {
	t.Helper()
	var attrs []attribute.KeyValue
	if service != "" {
		attrs = append(attrs, attribute.String("service.name", service))
	}
	attrs = append(attrs, extra...)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(NewRecorder(store)),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &simProc{tr: tp.Tracer("coordbench/test")}
}

// clock hands out strictly increasing timestamps, so span order in time
// is under the test's control.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) tick() time.Time {
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// start opens a span at the clock's next tick.
func (p *simProc) start(ctx context.Context, c *clock, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return p.tr.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(c.tick()), trace.WithAttributes(attrs...))
}

func end(c *clock, s trace.Span) { s.End(trace.WithTimestamp(c.tick())) }

// propagate carries ctx to another process as an HTTP call does: W3C trace
// context injected into headers and extracted on the other side.
func propagate(ctx context.Context) context.Context {
	h := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, h)
	return propagation.TraceContext{}.Extract(context.Background(), h)
}

func invokeAttrs(agent string) []attribute.KeyValue {
	return []attribute.KeyValue{
		AttrGenAIOperationName.String(OpInvokeAgent), AttrGenAIAgentName.String(agent), AttrCallType.String("AGENT"),
	}
}

// remoteCall records the figure of DESIGN §3 for one call from the process
// `from` to agent `to` served by process `srv`: invoke_agent CLIENT ->
// SendMessage CLIENT -> POST CLIENT there, POST SERVER -> SendMessage
// SERVER -> invoke_agent INTERNAL here, with work run inside the callee's
// agent span. It returns the client invoke_agent span's context.
func remoteCall(ctx context.Context, c *clock, from, srv *simProc, to string, work func(ctx context.Context)) trace.SpanContext {
	ctx, inv := from.start(ctx, c, SpanInvokeAgentPrefix+to, trace.SpanKindClient,
		append(invokeAttrs(to), AttrServerAddress.String("127.0.0.1"), AttrServerPort.Int(9100))...)
	ctx, sm := from.start(ctx, c, "SendMessage", trace.SpanKindClient, AttrA2AMethodName.String("SendMessage"))
	ctx, post := from.start(ctx, c, "POST", trace.SpanKindClient, attribute.String("http.request.method", "POST"))
	if srv != nil {
		sctx := propagate(ctx)
		sctx, spost := srv.start(sctx, c, "POST", trace.SpanKindServer, attribute.String("http.request.method", "POST"))
		sctx, ssm := srv.start(sctx, c, "SendMessage", trace.SpanKindServer, AttrA2AMethodName.String("SendMessage"),
			AttrA2ATaskState.String("completed"))
		sctx, sinv := srv.start(sctx, c, SpanInvokeAgentPrefix+to, trace.SpanKindInternal, invokeAttrs(to)...)
		if work != nil {
			work(sctx)
		}
		end(c, sinv)
		end(c, ssm)
		end(c, spost)
	}
	end(c, post)
	end(c, sm)
	end(c, inv)
	return inv.SpanContext()
}

// chat records an LLM call: a chat CLIENT span with the HTTP call to the
// LLM API below it (a client chain that is not an interaction).
func chat(ctx context.Context, c *clock, p *simProc, model, in, out string) trace.SpanContext {
	ctx, ch := p.start(ctx, c, SpanChatPrefix+model, trace.SpanKindClient,
		AttrGenAIOperationName.String(OpChat), AttrGenAIRequestModel.String(model), AttrCallType.String("TOOL"),
		AttrGenAIInputTokens.Int(10), AttrGenAIOutputTokens.Int(5),
		AttrGenAIInputMessages.String(`[{"role":"user","parts":[{"type":"text","content":"`+in+`"}]}]`),
		AttrGenAIOutputMessages.String(`[{"role":"assistant","parts":[{"type":"text","content":"`+out+`"},{"type":"tool_call","name":"x"}]}]`))
	_, post := p.start(ctx, c, "POST", trace.SpanKindClient, AttrServerAddress.String("api.openai.com"), AttrServerPort.Int(443))
	end(c, post)
	end(c, ch)
	return ch.SpanContext()
}

func findStep(t *testing.T, td *tracedata.TraceData, id trace.SpanID) *tracedata.Step {
	t.Helper()
	for i := range td.Steps {
		if td.Steps[i].StepID == id.String() {
			return &td.Steps[i]
		}
	}
	t.Fatalf("no step %s", id)
	return nil
}

func findInteraction(td *tracedata.TraceData, from, to string) *tracedata.Interaction {
	for i := range td.Interactions {
		if td.Interactions[i].From == from && td.Interactions[i].To == to {
			return &td.Interactions[i]
		}
	}
	return nil
}

func edges(td *tracedata.TraceData) []string {
	var out []string
	for _, in := range td.Interactions {
		out = append(out, in.From+"->"+in.To)
	}
	return out
}

func mustJSON(t testing.TB, td *tracedata.TraceData) string {
	t.Helper()
	b, err := json.Marshal(td)
	if err != nil {
		t.Fatalf("encode trace: %v", err)
	}
	return string(b)
}

func hasWarning(td *tracedata.TraceData, substr string) bool {
	return slices.ContainsFunc(td.Coverage.Warnings, func(w string) bool { return strings.Contains(w, substr) })
}

// assertPermutationStable assembles shuffles of spans and checks each gives
// the same JSON as the spans in their given order.
func assertPermutationStable(t *testing.T, id trace.TraceID, spans []Span, rounds int) string {
	t.Helper()
	want := mustJSON(t, Assemble(id, spans))
	rng := rand.New(rand.NewPCG(1, 2))
	for r := range rounds {
		perm := slices.Clone(spans)
		if r == 0 {
			slices.Reverse(perm)
		} else {
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
		if got := mustJSON(t, Assemble(id, perm)); got != want {
			t.Fatalf("permutation %d gives another result:\n got %s\nwant %s", r, got, want)
		}
	}
	return want
}

// TestAssembleTwoProcessesPairClientServer: one A2A call between two
// processes, recorded by both sides, is one both-sides interaction; the
// client's three spans and the server's three count once, and the steps
// hang off each other across the process boundary.
func TestAssembleTwoProcessesPairClientServer(t *testing.T) {
	store := NewStore(Limits{})
	coord := newSimProc(t, store, "coordinator-svc")
	rev := newSimProc(t, store, "reviewer-svc")
	c := newClock()

	ctx, root := coord.start(context.Background(), c, SpanInvokeAgentPrefix+"coordinator", trace.SpanKindInternal, invokeAttrs("coordinator")...)
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
	td := Assemble(id, spans)

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
	if td.Coverage.Spans != 9 || td.Coverage.SpansBySource[SourceInProcess] != 9 || len(td.Coverage.Warnings) != 0 {
		t.Errorf("coverage = %+v", td.Coverage)
	}
	if td.Start != rootStep.StartTime || td.End != rootStep.EndTime || td.DurationMS != rootStep.LatencyMS {
		t.Errorf("trace times %v..%v (%v ms), want the root's", td.Start, td.End, td.DurationMS)
	}
}

func mustParent(t *testing.T, spans []Span, id trace.SpanID) trace.SpanID {
	t.Helper()
	for _, s := range spans {
		if s.SpanID == id {
			return s.ParentSpanID
		}
	}
	t.Fatalf("no span %s", id)
	return trace.SpanID{}
}

// TestAssembleInProcessNesting: an in-process framework nests invoke_agent
// spans; each agent span inside another agent's is a call, and the work
// inside an agent span belongs to that agent.
func TestAssembleInProcessNesting(t *testing.T) {
	store := NewStore(Limits{})
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
	_, tool := p.start(cctx, c, "execute_tool score", trace.SpanKindInternal, AttrGenAIOperationName.String(OpExecuteTool),
		attribute.String(AttrParametersPrefix+"paper", "p1"), attribute.Int(AttrParametersPrefix+"scale", 5))
	end(c, tool)
	end(c, critic)
	end(c, group)
	// An agent nested in itself is not a call.
	_, again := p.start(wctx, c, "invoke_agent writer", trace.SpanKindInternal, invokeAttrs("writer")...)
	end(c, again)
	end(c, writer)
	end(c, planner)

	id := planner.SpanContext().TraceID()
	td := Assemble(id, store.Spans(id))
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
	build := func(coordStore, revStore *Store) trace.TraceID {
		coord := newSimProc(t, coordStore, "coordinator")
		rev := newSimProc(t, revStore, "reviewer")
		c := newClock()
		ctx, root := coord.start(context.Background(), c, "coordbench.task", trace.SpanKindInternal, AttrCallType.String("HOST"))
		remoteCall(ctx, c, coord, rev, "reviewer", func(ctx context.Context) {
			chat(ctx, c, rev, "gpt-4o", "a", "b")
			remoteCall(ctx, c, rev, coord, "coordinator", nil)
		})
		end(c, root)
		return root.SpanContext().TraceID()
	}

	mixed, other := NewStore(Limits{}), NewStore(Limits{})
	id := build(mixed, other)
	// The reviewer's spans arrive over OTLP: two batches, each with its own
	// resource, children first.
	revSpans := other.Spans(id)
	slices.Reverse(revSpans)
	half := len(revSpans) / 2
	for b, batch := range [][]Span{revSpans[:half], revSpans[half:]} {
		res := &Resource{ServiceName: "reviewer", Attrs: []attribute.KeyValue{attribute.String("service.name", "reviewer"), attribute.Int("batch", b)}}
		for i := range batch {
			batch[i].Source = SourceOTLP
			batch[i].Resource = res
		}
		if r := mixed.Add(batch); r.Accepted != len(batch) {
			t.Fatalf("add batch: %+v", r)
		}
	}
	split := Assemble(id, mixed.Spans(id))

	// All at once, all by one road.
	var all []Span
	all = append(all, mixed.Spans(id)...)
	for i := range all {
		all[i].Source = SourceInProcess
	}
	whole := Assemble(id, all)

	if split.Coverage.SpansBySource[SourceOTLP] != len(revSpans) || split.Coverage.SpansBySource[SourceInProcess] != len(all)-len(revSpans) {
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
	store := NewStore(Limits{})
	p := newSimProc(t, store, "coordinator")
	c := newClock()
	ctx, root := p.start(context.Background(), c, "invoke_agent coordinator", trace.SpanKindInternal, invokeAttrs("coordinator")...)
	remoteCall(ctx, c, p, nil, "ghost", nil)
	actx, anon := p.start(ctx, c, "invoke_agent", trace.SpanKindClient, AttrGenAIOperationName.String(OpInvokeAgent),
		AttrServerAddress.String("10.0.0.9"), AttrServerPort.Int(8000))
	_, anonPost := p.start(actx, c, "POST", trace.SpanKindClient, AttrServerAddress.String("10.0.0.9"), AttrServerPort.Int(8000))
	end(c, anonPost)
	anon.SetStatus(codes.Error, "connection refused")
	end(c, anon)
	chat(ctx, c, p, "gpt-4o", "x", "y")
	// A bare A2A client span is an agent call too, named by its address.
	_, bare := p.start(ctx, c, "SendMessage", trace.SpanKindClient, AttrA2AMethodName.String("SendMessage"),
		AttrServerAddress.String("peer.local"))
	end(c, bare)
	end(c, root)

	id := root.SpanContext().TraceID()
	td := Assemble(id, store.Spans(id))
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
	store := NewStore(Limits{})
	green := newSimProc(t, store, "green", AttrRole.String(RoleAssessor))
	helper := newSimProc(t, store, "helper")
	c := newClock()
	ctx, srv := green.start(context.Background(), c, "POST", trace.SpanKindServer)
	_, task := green.start(ctx, c, "coordbench.task", trace.SpanKindInternal, AttrCallType.String("HOST"))
	end(c, task)
	end(c, srv)

	missing := trace.SpanID{0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: srv.SpanContext().TraceID(), SpanID: missing, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	hctx, hsrv := helper.start(trace.ContextWithRemoteSpanContext(context.Background(), remote), c, "POST", trace.SpanKindServer)
	_, work := helper.start(hctx, c, "execute_tool lookup", trace.SpanKindInternal, AttrGenAIOperationName.String(OpExecuteTool))
	end(c, work)
	hsrv.SetStatus(codes.Error, "boom")
	end(c, hsrv)

	id := srv.SpanContext().TraceID()
	td := Assemble(id, store.Spans(id))
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
// caller's client span, its own calls as CLIENT invoke_agent spans, its LLM
// calls as INTERNAL chat spans.
func extensionSpans(id trace.TraceID, parent trace.SpanID, res *Resource, t0 time.Time) []Span {
	sid := func(b byte) trace.SpanID { return trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, b} }
	mk := func(b, pb byte, name string, kind trace.SpanKind, from, to int, attrs ...attribute.KeyValue) Span {
		p := sid(pb)
		if pb == 0 {
			p = parent
		}
		return Span{TraceID: id, SpanID: sid(b), ParentSpanID: p, Name: name, Kind: kind,
			Start: t0.Add(time.Duration(from) * time.Millisecond), End: t0.Add(time.Duration(to) * time.Millisecond),
			Attrs: append(attrs, AttrSource.String(SourceExtension)), Resource: res, Source: SourceExtension}
	}
	return []Span{
		mk(1, 0, "invoke_agent responder", trace.SpanKindServer, 1, 20, invokeAttrs("responder")...),
		mk(2, 1, "chat gpt-4o", trace.SpanKindInternal, 2, 4, AttrGenAIOperationName.String(OpChat), AttrCallType.String("TOOL"),
			AttrGenAIRequestModel.String("gpt-4o"), AttrTotalTokens.Int(42), AttrCost.Float64(0.25)),
		mk(3, 1, "invoke_agent helper", trace.SpanKindClient, 5, 9, append(invokeAttrs("helper"), AttrCaller.String("responder"))...),
		mk(4, 1, "invoke_agent helper", trace.SpanKindClient, 10, 12, append(invokeAttrs("helper"), AttrCaller.String("responder"),
			attribute.String(AttrRequestsPrefix+"text", "again"), attribute.String(AttrExtraPrefix+"retry", "yes"))...),
		mk(5, 1, "execute_tool search", trace.SpanKindInternal, 13, 14, AttrCallType.String("TOOL"), AttrStepType.String("search")),
	}
}

// TestAssembleExtensionSteps: the call into an agent that reported its
// steps through the extension is seen from both sides; the calls it made,
// known only from its own report, are extension-only.
func TestAssembleExtensionSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *Resource
	}{
		{"no resource", nil},
		{"own resource", &Resource{ServiceName: "responder"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := NewStore(Limits{})
			green := newSimProc(t, store, "green", AttrRole.String(RoleAssessor))
			c := newClock()
			ctx, task := green.start(context.Background(), c, "coordbench.task", trace.SpanKindInternal, AttrCallType.String("HOST"))
			callSC := remoteCall(ctx, c, green, nil, "responder", nil)
			end(c, task)
			id := task.SpanContext().TraceID()
			store.Add(extensionSpans(id, callSC.SpanID(), tc.res, c.tick()))

			td := Assemble(id, store.Spans(id))
			want := []string{"green->responder", "responder->helper"}
			if got := edges(td); !slices.Equal(got, want) {
				t.Fatalf("interactions = %v, want %v", got, want)
			}
			if in := findInteraction(td, "green", "responder"); in.BothSides != 1 || in.Count != 1 {
				t.Errorf("call into responder = %+v", in)
			}
			if in := findInteraction(td, "responder", "helper"); in.ExtensionOnly != 2 || in.Count != 2 || !slices.Equal(in.LatenciesMS, []float64{4, 2}) {
				t.Errorf("responder's calls = %+v", in)
			}
			cov := td.Coverage
			if cov.BothSides != 1 || cov.ExtensionOnly != 2 || math.Abs(cov.Complete-1.0/3) > 1e-9 || cov.SpansBySource[SourceExtension] != 5 {
				t.Errorf("coverage = %+v", cov)
			}
			chatStep := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 2})
			rootStep := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 1})
			if chatStep.Agent != "responder" || chatStep.TotalTokens != 42 || chatStep.Cost != 0.25 || chatStep.ParentStepID != rootStep.StepID {
				t.Errorf("chat step = %+v", chatStep)
			}
			if rootStep.Caller != "green" || rootStep.ParentStepID != callSC.SpanID().String() {
				t.Errorf("responder root step = %+v", rootStep)
			}
			retry := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 4})
			if retry.Caller != "responder" || retry.Agent != "helper" || retry.Requests["text"] != "again" || retry.AdditionalAttributes["retry"] != "yes" {
				t.Errorf("helper call step = %+v", retry)
			}
			if s := findStep(t, td, trace.SpanID{0xe0, 0, 0, 0, 0, 0, 0, 5}); s.StepType != "search" || s.Agent != "responder" {
				t.Errorf("tool step = %+v", s)
			}
			// The assessor's client span named the responder; the helper is
			// known only from the responder's report.
			if a := td.Agent("responder"); a.IdentifiedBy != tracedata.IdentityAgentName || a.Role != "" {
				t.Errorf("responder = %+v", a)
			}
			if a := td.Agent("helper"); a.IdentifiedBy != tracedata.IdentityExtension || a.Virtual {
				t.Errorf("helper = %+v", a)
			}
			if a := td.Agent("green"); a.Role != tracedata.RoleAssessor {
				t.Errorf("green = %+v", a)
			}
			// The real span replaces the extension's version of itself.
			assertPermutationStable(t, id, store.Spans(id), 6)
		})
	}
}

// brokenSpans is input no producer should send: attributes of the wrong
// type, no resource, no attributes, reversed and zero times, a parent
// cycle, a self-parent, duplicate ids with different content, a span of
// another trace, an invalid id, non-finite numbers.
func brokenSpans(id trace.TraceID) []Span {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sid := func(b byte) trace.SpanID { return trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, b} }
	noName := &Resource{}
	svc := &Resource{ServiceName: "svc"}
	return []Span{
		{TraceID: id, SpanID: sid(1), Name: "invoke_agent 7", Kind: trace.SpanKindInternal, Start: t0, End: t0.Add(time.Second),
			Attrs: []attribute.KeyValue{AttrGenAIOperationName.String(OpInvokeAgent), AttrGenAIAgentName.Int(7)}, Resource: noName},
		{TraceID: id, SpanID: sid(2), ParentSpanID: sid(1), Name: "bare", Resource: nil},
		{TraceID: id, SpanID: sid(3), ParentSpanID: sid(1), Name: "chat backwards", Kind: trace.SpanKindClient,
			Start: t0.Add(3 * time.Second), End: t0.Add(2 * time.Second),
			Attrs: []attribute.KeyValue{AttrGenAIOperationName.String(OpChat), AttrCost.Float64(math.NaN()),
				AttrTotalTokens.String("many"), attribute.Float64(AttrParametersPrefix+"x", math.Inf(1)),
				attribute.Float64Slice(AttrExtraPrefix+"v", []float64{1, math.NaN()}), AttrCallType.String("BOGUS")}},
		// A cycle of two, and a span hanging below it.
		{TraceID: id, SpanID: sid(4), ParentSpanID: sid(5), Name: "invoke_agent a", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: invokeAttrs("a"), Start: t0, End: t0.Add(time.Millisecond)},
		{TraceID: id, SpanID: sid(5), ParentSpanID: sid(4), Name: "invoke_agent b", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: invokeAttrs("b"), Start: t0, End: t0.Add(time.Millisecond)},
		{TraceID: id, SpanID: sid(6), ParentSpanID: sid(5), Name: "execute_tool t", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: []attribute.KeyValue{AttrGenAIOperationName.String(OpExecuteTool)}},
		// Its own parent, and a server.
		{TraceID: id, SpanID: sid(7), ParentSpanID: sid(7), Name: "loop", Kind: trace.SpanKindServer, Resource: svc},
		// Duplicates with different content.
		{TraceID: id, SpanID: sid(8), Name: "dup one", Kind: trace.SpanKindServer, Resource: svc, Start: t0, End: t0.Add(time.Second)},
		{TraceID: id, SpanID: sid(8), Name: "dup two", Kind: trace.SpanKindServer, Resource: svc, Start: t0, End: t0.Add(time.Second)},
		{TraceID: id, SpanID: sid(8), Name: "dup ext", Kind: trace.SpanKindServer, Resource: svc, Source: SourceExtension},
		{TraceID: id, SpanID: sid(9), ParentSpanID: sid(8), Name: "invoke_agent x", Kind: trace.SpanKindInternal, Resource: svc,
			Attrs: []attribute.KeyValue{AttrGenAIOperationName.Int(3), AttrCallType.String("agent"), AttrGenAIAgentID.Bool(true),
				AttrGenAIInputMessages.String(`[{"role":"user","parts":[{"type":"text"`), AttrGenAIOutputMessages.Int(1)}},
		// Not of this trace; no id; far-future end.
		{TraceID: trace.TraceID{9}, SpanID: sid(10), Name: "stranger"},
		{TraceID: id, Name: "no id"},
		{TraceID: id, SpanID: sid(11), Name: "far", Start: t0, End: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
}

// TestAssembleBrokenInput: broken spans give a result, no panic, warnings
// that say what was wrong, and still no dependence on input order.
func TestAssembleBrokenInput(t *testing.T) {
	id := trace.TraceID{0xb0, 1}
	spans := brokenSpans(id)
	td := Assemble(id, spans)
	js := assertPermutationStable(t, id, spans, 20)
	if !json.Valid([]byte(js)) {
		t.Fatal("invalid JSON")
	}
	for _, w := range []string{
		"attribute gen_ai.agent.name on span b000000000000001 is INT64, want string",
		"attribute gen_ai.operation.name on span b000000000000009 is INT64, want string",
		"attribute coordbench.call_type on span b000000000000003 has value \"BOGUS\", want AGENT, TOOL or HOST",
		"attribute coordbench.cost on span b000000000000003 is FLOAT64 NaN, want a finite number",
		"attribute coordbench.total_tokens on span b000000000000003 is STRING many, want an integer",
		"1 spans have end before start",
		"1 spans belong to another trace and were left out",
		"1 spans have an invalid span id and were left out",
		"2 spans repeat a span id already in the trace",
		"parent links form a cycle; cut above span b000000000000004",
		"parent links form a cycle; cut above span b000000000000007",
		"are attributed to \"unknown\"",
		"spans have no start or end time",
	} {
		if !hasWarning(td, w) {
			t.Errorf("no warning %q in %q", w, td.Coverage.Warnings)
		}
	}
	if !slices.IsSorted(td.Coverage.Warnings) {
		t.Errorf("warnings not sorted: %q", td.Coverage.Warnings)
	}
	if td.Coverage.Spans != 10 {
		t.Errorf("spans = %d, want 10 after dropping duplicates, stranger and no-id", td.Coverage.Spans)
	}
	// The agent named by an integer is not named by it: its work belongs to
	// "unknown" (no service.name).
	if s := findStep(t, td, trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, 1}); s.Agent != tracedata.UnknownAgent || s.Latency != 1000 {
		t.Errorf("step named by an int = %+v", s)
	}
	back := findStep(t, td, trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, 3})
	if back.Latency != 0 || back.LatencyMS != 0 || back.Cost != 0 || back.Parameters["x"] != "+Inf" {
		t.Errorf("backwards step = %+v", back)
	}
	// The cycle is cut above the smaller id: a is a root, and calls b.
	if got := edges(td); !slices.Equal(got, []string{"a->b", "unknown->svc", "user->svc"}) {
		t.Errorf("interactions = %v", got)
	}
	// The duplicate kept is the real one that sorts first.
	if !strings.Contains(js, `"name":"invoke_agent x"`) {
		t.Errorf("step under the duplicate missing")
	}
	if x := findStep(t, td, trace.SpanID{0xb0, 0, 0, 0, 0, 0, 0, 9}); x.CallType != tracedata.CallAgent || x.Agent != "svc" ||
		x.Input != `[{"role":"user","parts":[{"type":"text"` || x.Output != "1" {
		t.Errorf("step with wrong types = %+v", x)
	}
	for _, s := range td.Steps {
		if s.Name == "far" || s.Name == "bare" {
			t.Errorf("a span with no step attributes became a step: %+v", s)
		}
	}
	if td.End.Year() > 3000 {
		t.Errorf("trace end %v includes an impossible time", td.End)
	}

	// Nothing at all, and spans with nothing in them.
	empty := Assemble(id, nil)
	if empty.Coverage.Complete != 1 || len(empty.Steps) != 0 || empty.Steps == nil {
		t.Errorf("empty trace = %+v", empty)
	}
	mustJSON(t, empty)
	mustJSON(t, Assemble(trace.TraceID{}, []Span{{}, {SpanID: trace.SpanID{1}}}))
}

// TestAssembleRandomGraphs throws random span forests with random kinds,
// parents (missing, cyclic, cross-process) and attributes at Assemble: no
// panic, valid JSON, the same JSON in any order, and every interaction's
// counts adding up.
func TestAssembleRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	id := trace.TraceID{0xaa}
	ress := []*Resource{nil, {ServiceName: "p"}, {ServiceName: "q"}, {ServiceName: "q"}, {}}
	names := []string{"a", "b", "c", ""}
	for round := range 200 {
		n := 1 + rng.IntN(40)
		spans := make([]Span, n)
		for i := range spans {
			sp := &spans[i]
			sp.TraceID = id
			sp.SpanID = trace.SpanID{0, 0, 0, 0, 0, 0, byte(round), byte(1 + rng.IntN(n+3))}
			if rng.IntN(5) > 0 {
				sp.ParentSpanID = trace.SpanID{0, 0, 0, 0, 0, 0, byte(round), byte(rng.IntN(n + 3))}
			}
			sp.Kind = trace.SpanKind(rng.IntN(6))
			sp.Resource = ress[rng.IntN(len(ress))]
			if rng.IntN(4) == 0 {
				sp.Source = SourceExtension
			}
			s := time.Unix(1700000000, 0).Add(time.Duration(rng.IntN(100)) * time.Millisecond)
			sp.Start, sp.End = s, s.Add(time.Duration(rng.IntN(50)-10)*time.Millisecond)
			if rng.IntN(3) == 0 {
				sp.Attrs = append(sp.Attrs, AttrGenAIOperationName.String([]string{OpInvokeAgent, OpChat, OpExecuteTool}[rng.IntN(3)]))
			}
			if nm := names[rng.IntN(len(names))]; nm != "" {
				sp.Attrs = append(sp.Attrs, AttrGenAIAgentName.String(nm))
			}
			if rng.IntN(4) == 0 {
				sp.Attrs = append(sp.Attrs, AttrCallType.String([]string{"AGENT", "TOOL", "HOST", "x"}[rng.IntN(4)]))
			}
			if rng.IntN(4) == 0 {
				sp.Attrs = append(sp.Attrs, AttrA2AMethodName.String("SendMessage"))
			}
			if rng.IntN(5) == 0 {
				sp.Attrs = append(sp.Attrs, AttrServerAddress.String("h"), AttrServerPort.Int(1))
			}
			sp.StatusError = rng.IntN(6) == 0
		}
		td := Assemble(id, spans)
		assertPermutationStable(t, id, spans, 3)
		total := 0
		for _, in := range td.Interactions {
			if in.From == in.To {
				t.Fatalf("round %d: self-call %s kept", round, in.From)
			}
			if in.BothSides+in.ClientOnly+in.ServerOnly+in.InProcess+in.ExtensionOnly != in.Count || len(in.LatenciesMS) != in.Count {
				t.Fatalf("round %d: counts of %+v do not add up", round, in)
			}
			total += in.Count
			if td.Agent(in.From) == nil || td.Agent(in.To) == nil {
				t.Fatalf("round %d: edge %s->%s to a missing node", round, in.From, in.To)
			}
		}
		if total != td.Coverage.Interactions {
			t.Fatalf("round %d: coverage counts %d calls, interactions %d", round, td.Coverage.Interactions, total)
		}
		steps := 0
		for _, a := range td.Agents {
			steps += a.Steps
		}
		if steps != len(td.Steps) {
			t.Fatalf("round %d: agents hold %d steps of %d", round, steps, len(td.Steps))
		}
	}
}

func ExampleAssemble() {
	id := trace.TraceID{1}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	coord := &Resource{ServiceName: "coordinator"}
	rev := &Resource{ServiceName: "reviewer"}
	spans := []Span{
		{TraceID: id, SpanID: trace.SpanID{1}, Name: "invoke_agent reviewer", Kind: trace.SpanKindClient, Resource: coord,
			Start: t0, End: t0.Add(30 * time.Millisecond), Attrs: invokeAttrs("reviewer")},
		{TraceID: id, SpanID: trace.SpanID{2}, ParentSpanID: trace.SpanID{1}, Name: "POST", Kind: trace.SpanKindServer, Resource: rev,
			Start: t0.Add(time.Millisecond), End: t0.Add(29 * time.Millisecond)},
	}
	td := Assemble(id, spans)
	for _, in := range td.Interactions {
		fmt.Printf("%s -> %s: %d call(s), both sides %d, %v ms\n", in.From, in.To, in.Count, in.BothSides, in.LatenciesMS)
	}
	fmt.Println("complete:", td.Coverage.Complete)
	// Output:
	// coordinator -> reviewer: 1 call(s), both sides 1, [30] ms
	// complete: 1
}

// refMessagesText is messagesText written with encoding/json, the
// reference the hand-written reader must agree with.
func refMessagesText(s string) string {
	type part struct {
		Type    *string `json:"type"`
		Content any     `json:"content"`
	}
	type message struct {
		Parts   []json.RawMessage `json:"parts"`
		Content any               `json:"content"`
	}
	var raws []json.RawMessage
	t := strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(t, "["):
		if json.Unmarshal([]byte(t), &raws) != nil {
			return s
		}
	case strings.HasPrefix(t, "{"):
		raws = []json.RawMessage{json.RawMessage(t)}
		if !json.Valid(raws[0]) {
			return s
		}
	default:
		return s
	}
	var texts []string
	for _, raw := range raws {
		var m message
		if json.Unmarshal(raw, &m) != nil {
			continue // not an object: skipped
		}
		if c, ok := m.Content.(string); ok && c != "" {
			texts = append(texts, c)
		}
		for _, pr := range m.Parts {
			var p part
			if json.Unmarshal(pr, &p) != nil {
				continue
			}
			c, ok := p.Content.(string)
			if ok && c != "" && (p.Type == nil || *p.Type == "text" || *p.Type == "") {
				texts = append(texts, c)
			}
		}
	}
	if len(texts) == 0 {
		return s
	}
	return strings.Join(texts, "\n")
}

// TestAssembleMessagesText: the GenAI message reader agrees with
// encoding/json on well-formed, odd and broken input.
func TestAssembleMessagesText(t *testing.T) {
	for _, in := range []string{
		`[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`,
		` [ {"role":"user","parts":[{"type":"text","content":"a"},{"type":"tool_call","id":"1","arguments":{"q":[1,2.5e3,true,null]}},{"content":"b","type":"text"}]},{"role":"assistant","content":"c"} ] `,
		`[{"role":"user","parts":[{"type":"text","content":"esc \"q\" \\ \/ \n \u00e9 \ud83d\ude00 \ud800"}]}]`,
		`{"role":"user","parts":[{"type":"text","content":"single object"}]}`,
		`[{"role":"user","parts":[{"type":"image","content":"x"}]}]`,
		`[{"role":"user","parts":[]}]`,
		`[]`,
		`[1, "two", {"content": 3}]`,
		`[{"role":"user","parts":[{"type":"text","content":"x"}]}] trailing`,
		`[{"role":"user","parts":[{"type":"text","content":"unterminated}]}]`,
		`[{"role":"user",}]`,
		`plain text`,
		``,
		`{"content":"old style"}`,
		`[{"parts":[{"type":"text","content":"ctl` + "\x01" + `"}]}]`,
		`[{"parts":[{"type":"text","content":""}]},{"content":"after empty"}]`,
		`[{"parts":[{"type":"text","content":"n"}],"n":-1.5e-3,"m":01}]`,
		`{"content":"\0"}`, `{"content":"\u12"}`, `{"content":"\u12x4"}`, `{"content":"x\`,
	} {
		if got, want := messagesText(attribute.StringValue(in)), refMessagesText(in); got != want {
			t.Errorf("messagesText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := messagesText(attribute.Int64Value(3)); got != "3" {
		t.Errorf("int value = %q", got)
	}
}

// FuzzAssembleMessagesText: the reader never panics, and never takes text
// out of something that is not JSON.
func FuzzAssembleMessagesText(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`,
		`{"content":"x\u00e9"}`, `[1,{"parts":[{"content":"a"}]}]`, `[{"n":-0.5E+2}]`, `[`, `"x"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := messagesText(attribute.StringValue(s))
		if !json.Valid([]byte(s)) && got != s {
			t.Fatalf("invalid JSON %q read as messages: %q", s, got)
		}
	})
}

// TestAssembleSortKeys: the radix sort orders as a comparison sort does,
// with unset times first and ties broken by span id.
func TestAssembleSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{0, 1, 511, 512, 5000} {
		for _, spread := range []int64{0, 1, 1000, 1 << 40, math.MaxInt64 / 4} {
			keys := make([]sortKey, n)
			base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
			for i := range keys {
				keys[i] = sortKey{t: base, id: rng.Uint64N(50), ix: int32(i)}
				if spread > 0 {
					keys[i].t += rng.Int64N(spread)
				}
				if rng.IntN(10) == 0 {
					keys[i].t = 0
				}
			}
			want := slices.Clone(keys)
			slices.SortStableFunc(want, compareKeys)
			sortKeys(keys)
			for i := range keys {
				if compareKeys(keys[i], want[i]) != 0 {
					t.Fatalf("n=%d spread=%d: at %d got %+v, want %+v", n, spread, i, keys[i], want[i])
				}
			}
		}
	}
}
