package tracestore

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// Settle tests build the spans of one task's trace by hand: the assessor's
// task span (the root) and its call to a participant, then the
// participant's side, which arrives later or never.

var (
	settleAssessorRes = &otelmap.Resource{ServiceName: "green", Attrs: []attribute.KeyValue{
		otelmap.AttrServiceName.String("green"), otelmap.AttrRole.String(otelmap.RoleAssessor)}}
	settleCoordRes    = &otelmap.Resource{ServiceName: "coordinator"}
	settleReviewerRes = &otelmap.Resource{ServiceName: "reviewer"}
)

const settleTrace = 7

func settleSpan(id, parent byte, kind trace.SpanKind, res *otelmap.Resource, source string, attrs ...attribute.KeyValue) otelmap.Span {
	s := storeTestSpan(settleTrace, id, parent, source)
	s.Kind, s.Resource, s.Attrs = kind, res, attrs
	return s
}

// assessorCall is the root task span (1) and the assessor's call to the
// coordinator: invoke_agent (2) -> SendMessage (3) -> POST (4), answered
// with HTTP 200.
func assessorCall() []otelmap.Span {
	return []otelmap.Span{
		settleSpan(1, 0, trace.SpanKindInternal, settleAssessorRes, otelmap.SourceInProcess, otelmap.AttrCallType.String("HOST")),
		settleSpan(2, 1, trace.SpanKindClient, settleAssessorRes, otelmap.SourceInProcess,
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("coordinator"),
			otelmap.AttrServerAddress.String("127.0.0.1"), otelmap.AttrServerPort.Int(9101)),
		settleSpan(3, 2, trace.SpanKindClient, settleAssessorRes, otelmap.SourceInProcess, otelmap.AttrA2AMethodName.String("SendMessage")),
		settleSpan(4, 3, trace.SpanKindClient, settleAssessorRes, otelmap.SourceInProcess, attribute.Int("http.response.status_code", 200)),
	}
}

// coordinatorSide is the coordinator's server span (10, under the POST)
// and its own call to the reviewer (11, an invoke_agent CLIENT span).
func coordinatorSide() []otelmap.Span {
	return []otelmap.Span{
		settleSpan(10, 4, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP),
		settleSpan(11, 10, trace.SpanKindClient, settleCoordRes, otelmap.SourceOTLP,
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("reviewer")),
	}
}

func reviewerSide() []otelmap.Span {
	return []otelmap.Span{settleSpan(20, 11, trace.SpanKindServer, settleReviewerRes, otelmap.SourceOTLP)}
}

var settleAwait = &Await{Calls: assemble.CallRule(nil), Assessor: true, Agents: []string{"coordinator", "reviewer"}}

// settleAsync runs Settle in the background.
func settleAsync(st *Store, opts SettleOptions) <-chan Settlement {
	out := make(chan Settlement, 1)
	go func() {
		res, err := st.Settle(context.Background(), trace.TraceID{settleTrace}, opts)
		if err != nil {
			panic(err)
		}
		out <- res
	}()
	return out
}

func TestSettleWaitsForEveryAwaitedCall(t *testing.T) {
	st := NewStore(Limits{})
	st.Add(assessorCall())
	// Quiet is short; only evidence can hold the wait, and MaxWait is
	// long enough that ending there would fail the test's outcome check.
	done := settleAsync(st, SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: time.Minute, Await: settleAwait})

	// The coordinator's batch arrives: it answers the assessor's call and
	// shows a call of its own to the reviewer, which is awaited too.
	st.Add(coordinatorSide())
	select {
	case res := <-done:
		t.Fatalf("settled before the reviewer answered: %+v", res)
	case <-time.After(100 * time.Millisecond):
	}
	st.Add(reviewerSide())
	res := <-done
	if !res.Complete || res.Awaited != 2 || len(res.Unanswered) != 0 || len(res.Spans) != 7 {
		t.Fatalf("got complete=%v awaited=%d unanswered=%v spans=%d, want complete, 2 awaited, 7 spans",
			res.Complete, res.Awaited, res.Unanswered, len(res.Spans))
	}
}

func TestSettleReportsUnansweredCallsAtMaxWait(t *testing.T) {
	st := NewStore(Limits{})
	st.Add(assessorCall())
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: 50 * time.Millisecond, Await: settleAwait})
	if err != nil {
		t.Fatal(err)
	}
	want := Call{Caller: "green", Callee: "coordinator", SpanID: trace.SpanID{2}.String()}
	if res.Complete || res.Awaited != 1 || len(res.Unanswered) != 1 || res.Unanswered[0] != want ||
		len(res.Silent) != 1 || res.Silent[0] != "coordinator" {
		t.Fatalf("got complete=%v awaited=%d unanswered=%+v silent=%q, want the call to the coordinator unanswered",
			res.Complete, res.Awaited, res.Unanswered, res.Silent)
	}

	// Told the coordinator exports nothing, the trace does not wait for it.
	except := *settleAwait
	except.Except = []string{"coordinator"}
	res, err = st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: time.Minute, Await: &except})
	if err != nil || !res.Complete || res.Awaited != 0 {
		t.Fatalf("with Except: complete=%v awaited=%d err=%v, want complete, nothing awaited", res.Complete, res.Awaited, err)
	}
}

func TestSettleDoesNotAwaitCallsNobodyAnswered(t *testing.T) {
	st := NewStore(Limits{})
	spans := assessorCall()
	// The POST failed without an HTTP answer (a refused connection): no
	// server saw the call, so no span of it will come.
	spans[3].Attrs = []attribute.KeyValue{otelmap.AttrErrorType.String("connection")}
	spans[3].StatusError = true
	st.Add(spans)
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Hour, MaxWait: time.Hour, Await: settleAwait})
	if err != nil || !res.Complete || res.Awaited != 0 {
		t.Fatalf("got complete=%v awaited=%d err=%v, want complete with nothing awaited", res.Complete, res.Awaited, err)
	}
}

// TestSettleQuietCountsParticipantSpans: the quiet time runs from the last
// span of another road; the assessor's own spans, recorded as they end,
// do not restart it. With every call answered long ago, even an hour's
// quiet is over.
func TestSettleQuietCountsParticipantSpans(t *testing.T) {
	st := NewStore(Limits{})
	now := time.Now()
	st.now = func() time.Time { return now }
	st.Add(append(assessorCall(), coordinatorSide()...))
	st.Add(reviewerSide())
	now = now.Add(2 * time.Hour)
	st.Add([]otelmap.Span{settleSpan(30, 1, trace.SpanKindInternal, settleAssessorRes, otelmap.SourceInProcess)})
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Hour, MaxWait: time.Hour, Await: settleAwait})
	if err != nil || !res.Complete {
		t.Fatalf("got complete=%v err=%v, want complete", res.Complete, err)
	}
}

func TestSettleAwaitsCallsToParticipantAddresses(t *testing.T) {
	st := NewStore(Limits{})
	// A plain HTTP call (no agent marker) from the coordinator to an
	// address that is a participant's: awaited. One to an LLM API: not.
	spans := append(assessorCall(),
		settleSpan(10, 4, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP),
		settleSpan(12, 10, trace.SpanKindClient, settleCoordRes, otelmap.SourceOTLP,
			otelmap.AttrServerAddress.String("Reviewer.local"), otelmap.AttrServerPort.Int(8080)),
		settleSpan(13, 10, trace.SpanKindClient, settleCoordRes, otelmap.SourceOTLP,
			otelmap.AttrServerAddress.String("api.openai.com"), otelmap.AttrServerPort.Int(443)),
	)
	st.Add(spans)
	await := &Await{Calls: assemble.CallRule(nil), Assessor: true, Addresses: []string{"http://reviewer.local:8080/", "127.0.0.1:9101"}}
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: 50 * time.Millisecond, Await: await})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete || res.Awaited != 2 || len(res.Unanswered) != 1 || res.Unanswered[0].Callee != "reviewer.local:8080" {
		t.Fatalf("got complete=%v awaited=%d unanswered=%+v, want the call to reviewer.local:8080 unanswered",
			res.Complete, res.Awaited, res.Unanswered)
	}
}

// TestSettleExtensionStepsAnswer: a participant that reports its work as
// Traceability Extension steps answers the call with them.
func TestSettleExtensionStepsAnswer(t *testing.T) {
	st := NewStore(Limits{})
	ext := settleSpan(40, 2, trace.SpanKindServer, &otelmap.Resource{ServiceName: "coordinator"}, otelmap.SourceExtension)
	st.Add(append(assessorCall(), ext))
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: time.Minute, Await: settleAwait})
	if err != nil || !res.Complete || res.Awaited != 1 {
		t.Fatalf("got complete=%v awaited=%d err=%v, want complete", res.Complete, res.Awaited, err)
	}
}

func TestLateSpansAreCountedOnce(t *testing.T) {
	st := NewStore(Limits{})
	id := trace.TraceID{settleTrace}
	st.Add(append(assessorCall(), reviewerSide()...))
	st.MarkAssessed(id)
	if st.Spans(id) != nil {
		t.Fatal("an assessed trace's spans are still held")
	}
	res := st.Add(append(coordinatorSide(),
		coordinatorSide()[0], // sent twice
		reviewerSide()[0],    // a span that was assessed: a retry, not late
	))
	if res.Late != 2 || res.LateTrace != id || res.Accepted != 0 || res.Rejected != 0 {
		t.Fatalf("AddResult = %+v, want 2 late spans of trace %s", res, id)
	}
	if n := st.LateSpans(id); n != 2 {
		t.Errorf("LateSpans = %d, want 2", n)
	}
	if st.Spans(id) != nil || st.Stats().Traces != 0 {
		t.Error("late spans were stored")
	}
	// The assessor's own spans (an evaluator span ending after assembly)
	// are not late: they are stored, as any in-process span.
	if r := st.Add([]otelmap.Span{settleSpan(50, 1, trace.SpanKindInternal, settleAssessorRes, otelmap.SourceInProcess)}); r.Late != 0 || r.Accepted != 1 {
		t.Errorf("in-process span after assessment: %+v, want stored, not late", r)
	}
	// Nor when the assessor's exporter sends it back through a collector;
	// but only the in-process road speaks for the assessor, so that copy is
	// dropped, not stored (provenance.go).
	if r := st.Add([]otelmap.Span{settleSpan(51, 1, trace.SpanKindInternal, settleAssessorRes, otelmap.SourceOTLP)}); r.Late != 0 || r.Accepted != 0 {
		t.Errorf("the assessor's span by OTLP after assessment: %+v, want dropped, not late", r)
	}
	if s := st.Stats(); s.SpansLate != 2 {
		t.Errorf("Stats.SpansLate = %d, want 2", s.SpansLate)
	}
	if n := st.LateSpans(trace.TraceID{99}); n != 0 {
		t.Errorf("LateSpans of an unknown trace = %d", n)
	}
}

func TestAssessedTracesAreBounded(t *testing.T) {
	st := NewStore(Limits{MaxTraces: 2, MaxAge: time.Minute})
	now := time.Unix(1000, 0)
	st.now = func() time.Time { return now }
	for i := byte(1); i <= 3; i++ {
		st.Add([]otelmap.Span{storeTestSpan(i, 1, 0, otelmap.SourceOTLP)})
		st.MarkAssessed(trace.TraceID{i})
	}
	// Trace 1 was forgotten (at most 2 remembered): its span is a new
	// trace again. Traces 2 and 3 count late spans.
	if r := st.Add([]otelmap.Span{storeTestSpan(1, 2, 0, otelmap.SourceOTLP), storeTestSpan(3, 2, 0, otelmap.SourceOTLP)}); r.Late != 1 || r.Accepted != 1 {
		t.Fatalf("AddResult = %+v, want 1 late (trace 3), 1 accepted (trace 1)", r)
	}
	now = now.Add(2 * time.Minute)
	st.Sweep()
	if r := st.Add([]otelmap.Span{storeTestSpan(3, 3, 0, otelmap.SourceOTLP)}); r.Late != 0 || r.Accepted != 1 {
		t.Fatalf("after MaxAge: AddResult = %+v, want the span accepted as a new trace", r)
	}
}

// TestSettleSilentNamesOnlyCalleesThatAnsweredNothing: a callee that
// answered one call and not another does export; it is not silent.
func TestSettleSilentNamesOnlyCalleesThatAnsweredNothing(t *testing.T) {
	st := NewStore(Limits{})
	second := []otelmap.Span{
		settleSpan(5, 1, trace.SpanKindClient, settleAssessorRes, otelmap.SourceInProcess,
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("coordinator")),
		settleSpan(6, 5, trace.SpanKindClient, settleAssessorRes, otelmap.SourceInProcess, attribute.Int("http.response.status_code", 200)),
	}
	st.Add(append(append(assessorCall(), second...), settleSpan(10, 4, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP)))
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: 50 * time.Millisecond, Await: settleAwait})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete || res.Awaited != 2 || len(res.Unanswered) != 1 || res.Unanswered[0].SpanID != (trace.SpanID{5}).String() || len(res.Silent) != 0 {
		t.Fatalf("got complete=%v awaited=%d unanswered=%+v silent=%q, want the second call unanswered, nobody silent",
			res.Complete, res.Awaited, res.Unanswered, res.Silent)
	}
}

// CheckEvidence with AllAgents awaits every agent call whoever made it:
// the coordinator's call to the reviewer as much as the assessor's, but
// not an agent's call that failed before anyone answered it, nor one to a
// callee in Except.
func TestCheckEvidenceAllAgents(t *testing.T) {
	all := &Await{Calls: assemble.CallRule(nil), AllAgents: true}
	spans := append(assessorCall(), coordinatorSide()...)
	ev := CheckEvidence(spans, all)
	if !ev.Root || ev.Awaited != 2 || len(ev.Unanswered) != 1 || ev.Unanswered[0].Callee != "reviewer" {
		t.Fatalf("without the reviewer's side: %+v", ev)
	}
	if ev := CheckEvidence(append(spans, reviewerSide()...), all); ev.Awaited != 2 || len(ev.Unanswered) != 0 {
		t.Fatalf("with every side: %+v", ev)
	}
	if ev := CheckEvidence(spans, &Await{Calls: assemble.CallRule(nil), AllAgents: true, Except: []string{"reviewer"}}); ev.Awaited != 1 || len(ev.Unanswered) != 0 {
		t.Fatalf("reviewer excepted: %+v", ev)
	}
	failed := append(assessorCall(), coordinatorSide()...)
	failed[len(failed)-1].StatusError = true
	if ev := CheckEvidence(failed, all); len(ev.Unanswered) != 0 {
		t.Fatalf("a call that failed unanswered is awaited: %+v", ev)
	}
	if ev := CheckEvidence(coordinatorSide(), all); ev.Root {
		t.Fatalf("no span without a parent, yet Root: %+v", ev)
	}
	// Without AllAgents, only the named callees are awaited.
	if ev := CheckEvidence(spans, &Await{Calls: assemble.CallRule(nil), Agents: []string{"coordinator"}}); ev.Awaited != 1 || len(ev.Unanswered) != 0 {
		t.Fatalf("named callee only: %+v", ev)
	}
}

// TestSettleAsksAssemblyWhatACallIs: whether a chain is an agent call, and
// whom it calls, is trace assembly's rule, passed in. The coordinator's call
// to the reviewer recorded by OpenLLMetry (traceloop.span.kind=agent naming
// the reviewer, no gen_ai.operation.name, no a2a.* attribute) is an agent
// call to the reviewer by assembly's recognizers, so the wait awaits it;
// without a rule no span marks an agent call and only addresses are awaited.
func TestSettleAsksAssemblyWhatACallIs(t *testing.T) {
	st := NewStore(Limits{})
	st.Add(append(assessorCall(),
		settleSpan(10, 4, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP),
		settleSpan(11, 10, trace.SpanKindClient, settleCoordRes, otelmap.SourceOTLP,
			attribute.String("traceloop.span.kind", "agent"), otelmap.AttrTraceloopEntityName.String("reviewer")),
	))
	res, err := st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: 50 * time.Millisecond, Await: settleAwait})
	if err != nil {
		t.Fatal(err)
	}
	want := Call{Caller: "coordinator", Callee: "reviewer", SpanID: trace.SpanID{11}.String()}
	if res.Complete || res.Awaited != 2 || len(res.Unanswered) != 1 || res.Unanswered[0] != want {
		t.Fatalf("got complete=%v awaited=%d unanswered=%+v, want the OpenLLMetry call to the reviewer awaited and unanswered",
			res.Complete, res.Awaited, res.Unanswered)
	}

	noRule := *settleAwait
	noRule.Calls = nil
	res, err = st.Settle(t.Context(), trace.TraceID{settleTrace},
		SettleOptions{Root: trace.SpanID{1}, Quiet: time.Millisecond, MaxWait: time.Minute, Await: &noRule})
	if err != nil || !res.Complete || res.Awaited != 0 {
		t.Fatalf("without a rule: complete=%v awaited=%d err=%v, want complete, nothing awaited (no address matches)", res.Complete, res.Awaited, err)
	}
}

// The unanswered calls are listed in one order whatever order the spans
// came in: a collector's arrive as batching and routing deliver them, and
// the verdict quotes the list (the stack's two-tier test met two orders).
func TestCheckEvidenceUnansweredOrder(t *testing.T) {
	all := &Await{Calls: assemble.CallRule(nil), AllAgents: true}
	call := func(id byte, callee string) otelmap.Span {
		return settleSpan(id, 10, trace.SpanKindClient, settleCoordRes, otelmap.SourceOTLP,
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(callee))
	}
	spans := append(append(assessorCall(), coordinatorSide()...), call(12, "editor"), call(13, "author"))
	reversed := slices.Clone(spans)
	slices.Reverse(reversed)
	got, again := CheckEvidence(spans, all), CheckEvidence(reversed, all)
	var callees []string
	for _, c := range got.Unanswered {
		callees = append(callees, c.Callee)
	}
	if !slices.Equal(callees, []string{"author", "editor", "reviewer"}) {
		t.Fatalf("unanswered %+v, want author, editor, reviewer in that order", got.Unanswered)
	}
	if !slices.Equal(got.Unanswered, again.Unanswered) {
		t.Fatalf("spans in another order, another list:\n%+v\n%+v", got.Unanswered, again.Unanswered)
	}
}

// detachedTrace is one trace whole: the assessor's task (1) calls the
// coordinator (2 -> SERVER 10), whose agent step (12) runs a tool (13)
// and calls the reviewer (11 -> SERVER 20), who calls a model (21).
func detachedTrace() []otelmap.Span {
	agentCall := func(name string) []attribute.KeyValue {
		return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(name)}
	}
	return []otelmap.Span{
		settleSpan(1, 0, trace.SpanKindInternal, settleAssessorRes, otelmap.SourceOTLP),
		settleSpan(2, 1, trace.SpanKindClient, settleAssessorRes, otelmap.SourceOTLP, agentCall("coordinator")...),
		settleSpan(10, 2, trace.SpanKindServer, settleCoordRes, otelmap.SourceOTLP),
		settleSpan(12, 10, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP),
		settleSpan(13, 12, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP),
		settleSpan(11, 12, trace.SpanKindClient, settleCoordRes, otelmap.SourceOTLP, agentCall("reviewer")...),
		settleSpan(20, 11, trace.SpanKindServer, settleReviewerRes, otelmap.SourceOTLP),
		settleSpan(21, 20, trace.SpanKindInternal, settleReviewerRes, otelmap.SourceOTLP),
	}
}

// without is spans less those with the given ids.
func without(spans []otelmap.Span, ids ...byte) []otelmap.Span {
	return slices.DeleteFunc(spans, func(s otelmap.Span) bool { return slices.Contains(ids, s.SpanID[0]) })
}

// TestCheckEvidenceDetached: a trace that lost spans inside it is not
// whole, though its root is held and every call that survived is
// answered (the two-tier collector test found it: a collector killed
// holding part of a trace); a trace begun by a caller that exports nothing
// is not cut. Each case is the trace above with spans lost (or added).
func TestCheckEvidenceDetached(t *testing.T) {
	all := &Await{Calls: assemble.CallRule(nil), AllAgents: true}
	selfParent := settleSpan(30, 30, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP)
	secondRoot := settleSpan(31, 0, trace.SpanKindInternal, settleCoordRes, otelmap.SourceOTLP)
	browserCall := func(id, parent byte, kind trace.SpanKind) otelmap.Span {
		return settleSpan(id, parent, kind, settleCoordRes, otelmap.SourceOTLP)
	}
	for _, tc := range []struct {
		name       string
		spans      []otelmap.Span
		detached   int
		unanswered int
		root       bool
	}{
		{"whole", detachedTrace(), 0, 0, true},
		// The class found: spans in the middle lost, the root and both
		// calls' sides held.
		{"the coordinator's agent step lost: its tool and its call to the reviewer cut off", without(detachedTrace(), 12), 2, 0, true},
		{"the root lost", without(detachedTrace(), 1), 1, 0, false},
		{"a client span lost, its server span held", without(detachedTrace(), 11), 1, 0, true},
		{"a server span lost, its client span and its children held", without(detachedTrace(), 20), 1, 1, true},
		{"a server span lost with its subtree", without(detachedTrace(), 20, 21), 0, 1, true},
		{"a whole process's subtree lost", without(detachedTrace(), 10, 12, 13, 11, 20, 21), 0, 1, true},
		{"a subtree's top lost, the rest held", without(detachedTrace(), 10), 1, 1, true},
		{"two roots", append(detachedTrace(), secondRoot), 1, 0, true},
		{"a span its own parent", append(detachedTrace(), selfParent), 1, 0, true},
		// Not cut: begun by a caller that exports nothing (a browser): its
		// calls' SERVER or CONSUMER spans are the tops.
		{"begun by a browser that exports nothing", without(detachedTrace(), 1, 2), 0, 0, false},
		{"a browser's two calls, under two of its spans", append(without(detachedTrace(), 1, 2), browserCall(40, 41, trace.SpanKindServer)), 0, 0, false},
		{"a message from a producer that exports nothing", append(without(detachedTrace(), 1, 2, 10, 12, 13, 11), browserCall(42, 43, trace.SpanKindConsumer)), 0, 0, false},
		{"begun by a browser, then an INTERNAL span's parent lost", append(without(detachedTrace(), 1, 2), browserCall(44, 45, trace.SpanKindInternal)), 1, 0, false},
		// The limit: a lost leaf, or a lost CLIENT span whose callee
		// exports nothing, leaves no mark in the spans that remain.
		{"a leaf lost (the limit)", without(detachedTrace(), 21), 0, 0, true},
		{"another leaf lost (the limit)", without(detachedTrace(), 13), 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := CheckEvidence(tc.spans, all)
			if ev.Detached != tc.detached || len(ev.Unanswered) != tc.unanswered || ev.Root != tc.root {
				t.Fatalf("got detached %d, unanswered %v, root %v; want %d, %d, %v", ev.Detached, ev.Unanswered, ev.Root, tc.detached, tc.unanswered, tc.root)
			}
			if want := tc.root && tc.detached == 0 && tc.unanswered == 0; ev.Whole() != want {
				t.Fatalf("Whole() = %v, want %v", ev.Whole(), want)
			}
		})
	}
}
