package assemble_test

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// byteStream turns fuzz input into choices; past its end every choice is 0.
type byteStream struct {
	b []byte
	i int
}

func (s *byteStream) next() int {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return int(s.b[s.i-1])
}

func (s *byteStream) pick(n int) int { return s.next() % n }

func (s *byteStream) chance(in int) bool { return s.pick(in) == 0 }

// conventionAttrs is a pool of attributes of every convention family the
// recognizers read, with values that trigger their rules and values that
// should not, including wrong types.
var conventionAttrs = []attribute.KeyValue{
	otelmap.AttrGenAIOperationName.String("invoke_agent"),
	otelmap.AttrGenAIOperationName.String("chat"),
	otelmap.AttrGenAIOperationName.String("execute_tool"),
	otelmap.AttrGenAIOperationName.String("handoff"),
	otelmap.AttrGenAIOperationName.String("invoke_workflow"),
	otelmap.AttrGenAIOperationName.String("invoke_swarm"),
	otelmap.AttrGenAIOperationName.String("create_agent"),
	otelmap.AttrGenAIOperationName.Int(4),
	otelmap.AttrGenAIAgentName.String("alpha"),
	otelmap.AttrGenAIAgentName.String("beta"),
	otelmap.AttrGenAIAgentName.Bool(true),
	otelmap.AttrGenAIAgentID.String("id-1"),
	otelmap.AttrGenAIToolName.String("transfer_to_beta"),
	otelmap.AttrGenAIToolName.String("handoff_to_agent"),
	otelmap.AttrGenAIToolName.String("transfer_to_agent"),
	otelmap.AttrGenAIToolName.String("Handoff-transfer_to_Gamma"),
	otelmap.AttrGenAIToolName.String("search"),
	otelmap.AttrGenAIToolCallArgs.String(`{"agent_name":"alpha"}`),
	otelmap.AttrGenAIToolCallArgs.String(`{"agent_name":`),
	otelmap.AttrGenAIRequestModel.String("m"),
	attribute.String("gen_ai.system", "x"),
	attribute.String("gen_ai.handoff.from_agent", "alpha"),
	attribute.String("gen_ai.handoff.to_agent", "gamma"),
	attribute.String("agent_name", "alpha"),
	attribute.String("openinference.span.kind", "AGENT"),
	attribute.String("openinference.span.kind", "LLM"),
	attribute.String("openinference.span.kind", "TOOL"),
	attribute.String("openinference.span.kind", "CHAIN"),
	attribute.Int("openinference.span.kind", 1),
	attribute.String("agent.name", "gamma"),
	attribute.String("graph.node.id", "delta"),
	attribute.String("graph.node.parent_id", "alpha"),
	attribute.String("tool.name", "transfer_to_delta"),
	attribute.String("output.value", "beta"),
	attribute.String("metadata", `{"langgraph_node": "alpha", "langgraph_checkpoint_ns": "alpha:1"}`),
	attribute.String("metadata", `{"langgraph_node": "n", "langgraph_checkpoint_ns": "a:1|n:2"}`),
	attribute.String("metadata", `{"langgraph_node": `),
	attribute.Int("smolagents.max_steps", 3),
	attribute.String("traceloop.span.kind", "workflow"),
	attribute.String("traceloop.span.kind", "task"),
	attribute.String("traceloop.span.kind", "agent"),
	attribute.String("traceloop.span.kind", "tool"),
	attribute.String("traceloop.span.kind", "handoff"),
	attribute.String("traceloop.entity.name", "epsilon"),
	attribute.String("llm.request.type", "chat"),
	attribute.String("messaging.operation", "publish"),
	attribute.String("messaging.destination", "beta_1"),
	attribute.String("message.destination_executor_id", "beta"),
	otelmap.AttrA2AMethodName.String("SendMessage"),
	otelmap.AttrA2ATaskState.String("failed"),
	attribute.String("http.url", "http://h/.well-known/agent-card.json"),
	attribute.String("url.full", "http://h/"),
	attribute.String("url.path", "/.well-known/agent.json?x=1"),
	attribute.String("asgi.event.type", "http.request"),
	otelmap.AttrCallType.String("AGENT"),
	otelmap.AttrCallType.String("TOOL"),
	otelmap.AttrCallType.String("HOST"),
	otelmap.AttrCallType.String("bogus"),
	otelmap.AttrSource.String(otelmap.SourceExtension),
	otelmap.AttrErrorType.String("boom"),
	otelmap.AttrServerAddress.String("srv"),
	otelmap.AttrServerPort.Int(80),
	attribute.Float64("coordbench.cost", math.NaN()),
}

// conventionNames are span names the recognizers read.
var conventionNames = []string{
	"invoke_agent alpha", "agent run", "running tool", "chat m", "execute_tool handoff_to_agent",
	"handoff to beta", "handoff to ", "alpha.run", "beta.run", "alpha", "a2a.client.t.T.send_message",
	"a2a.server.e.EventQueue.enqueue_event", "a2a.utils.x", "GET /.well-known/agent-card.json", "POST /",
	"autogen process beta", "executor.process alpha", "my agent", "", "transfer_to_beta",
}

// conventionTrace builds a trace of up to 48 spans from fuzz input: random
// parents (missing, cyclic, across three processes, one without
// service.name), kinds, times, names, attributes of several conventions at
// once, links (to this trace, to itself, to another) and events.
func conventionTrace(data []byte) (trace.TraceID, []otelmap.Span) {
	s := &byteStream{b: data}
	id := trace.TraceID{0xf0, 0x22}
	ress := []*otelmap.Resource{{ServiceName: "p"}, {ServiceName: "q"}, {}, nil}
	n := 1 + s.pick(48)
	sid := func(k int) trace.SpanID { return trace.SpanID{0xf0, 0, 0, 0, 0, 0, 0, byte(k)} }
	spans := make([]otelmap.Span, n)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range spans {
		sp := &spans[i]
		sp.TraceID = id
		sp.SpanID = sid(1 + s.pick(n+2))
		if !s.chance(5) {
			sp.ParentSpanID = sid(s.pick(n + 3))
		}
		sp.Kind = trace.SpanKind(s.pick(6))
		sp.Resource = ress[s.pick(len(ress))]
		sp.Name = conventionNames[s.pick(len(conventionNames))]
		start := t0.Add(time.Duration(s.pick(64)) * time.Millisecond)
		sp.Start, sp.End = start, start.Add(time.Duration(s.pick(64)-8)*time.Millisecond)
		for range s.pick(7) {
			sp.Attrs = append(sp.Attrs, conventionAttrs[s.pick(len(conventionAttrs))])
		}
		var det otelmap.SpanDetail
		for range s.pick(3) {
			l := otelmap.Link{TraceID: id, SpanID: sid(s.pick(n + 2))}
			if s.chance(4) {
				l.TraceID = trace.TraceID{9}
			}
			det.Links = append(det.Links, l)
		}
		if s.chance(3) {
			det.Events = append(det.Events, otelmap.Event{Name: "gen_ai.tool.message", Time: start,
				Attrs: []attribute.KeyValue{attribute.String("content", []string{`{"agent_name": "beta"}`, `{}`, `x`}[s.pick(3)])}})
		}
		if det.Links != nil || det.Events != nil {
			sp.Detail = &det
		}
		sp.StatusError = s.chance(8)
		if s.chance(8) {
			sp.Source = otelmap.SourceExtension
		}
	}
	return id, spans
}

// FuzzAssembleConventions feeds assembly spans that carry several
// conventions at once (GenAI current and previous, OpenInference,
// OpenLLMetry, messaging, links, A2A, HTTP, coordbench) in random trees:
// it must not panic, must give the same JSON in any span order, and its
// graph must hold together (edges between nodes, counts that add up, no
// self-calls, coverage in range).
func FuzzAssembleConventions(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		{12, 0, 1, 0, 0, 3, 8, 4, 9, 2, 0, 5, 1, 1, 7, 30, 31, 2, 40},
		{40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25},
		[]byte("openinference openllmetry genai messaging links a2a http coordbench"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, spans := conventionTrace(data)
		td := assemble.Trace(id, spans)
		checkGraph(t, td)
		assertPermutationStable(t, id, spans, 2)
	})
}

// TestConventionMixes runs the fuzz target's generator over fixed inputs,
// so that mixes of conventions are checked on every test run, not only
// under go test -fuzz.
func TestConventionMixes(t *testing.T) {
	for seed := range 300 {
		data := make([]byte, 400)
		x := uint32(seed*2654435761 + 1)
		for i := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[i] = byte(x)
		}
		id, spans := conventionTrace(data)
		td := assemble.Trace(id, spans)
		checkGraph(t, td)
		assertPermutationStable(t, id, spans, 1)
	}
}

// checkGraph checks that a TraceData holds together.
func checkGraph(t *testing.T, td *tracedata.TraceData) {
	t.Helper()
	if _, err := json.Marshal(td); err != nil {
		t.Fatalf("encode: %v", err)
	}
	total := 0
	for _, in := range td.Interactions {
		if in.From == in.To {
			t.Fatalf("self-call %s kept", in.From)
		}
		if in.BothSides+in.ClientOnly+in.ServerOnly+in.InProcess+in.ExtensionOnly != in.Count || len(in.LatenciesMS) != in.Count || in.Count <= 0 {
			t.Fatalf("counts of %+v do not add up", in)
		}
		if td.Agent(in.From) == nil || td.Agent(in.To) == nil {
			t.Fatalf("edge %s->%s to a missing node", in.From, in.To)
		}
		total += in.Count
	}
	c := td.Coverage
	if total != c.Interactions || c.BothSides+c.ClientOnly+c.ServerOnly+c.InProcess+c.ExtensionOnly != c.Interactions {
		t.Fatalf("coverage %+v does not add up to %d calls", c, total)
	}
	if c.Complete < 0 || c.Complete > 1 || math.IsNaN(c.Complete) || (c.NoEvidence && c.Complete != 0) {
		t.Fatalf("complete = %v, no evidence %v", c.Complete, c.NoEvidence)
	}
	if c.Interactions == 0 && c.UnreadAgentSpans > 0 && !c.NoEvidence {
		t.Fatalf("an empty graph with unread agent spans is evidence: %+v", c)
	}
	recognized := 0
	for _, v := range c.Recognized {
		recognized += v
	}
	if c.Unrecognized > c.Spans || (c.Spans > c.Unrecognized && recognized == 0) {
		t.Fatalf("recognized %v, unrecognized %d of %d spans", c.Recognized, c.Unrecognized, c.Spans)
	}
	for _, a := range td.Agents {
		if a.Name == tracedata.UserAgent && !a.Virtual && a.IdentifiedBy == tracedata.IdentityUser {
			t.Fatalf("user is a real agent: %+v", a)
		}
		if !slices.IsSorted(a.Aliases) || slices.Contains(a.Aliases, a.Name) {
			t.Fatalf("aliases of %+v", a)
		}
	}
}
