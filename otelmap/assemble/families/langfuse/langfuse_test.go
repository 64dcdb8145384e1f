package langfuse_test

import (
	"slices"
	"testing"

	"github.com/coordbench/coordbench/otelmap/assemble/families"

	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// TestLangfuse attacks the langfuse family (langfuse.go)
// with what the live program (testdata/live/langfuse) does not show, on
// its real captures edited and on traces built here: an agent observation
// without a name, an observation type nobody knows, the processor's
// langfuse.* attributes on every span, agents nested in agents with and
// without a tool observation between them, observations of the other
// types named like agents, the order spans arrive in.
func TestLangfuse(t *testing.T) {
	const nsKey = "langfuse.observation.*"
	isName := func(name string) func(*otelmap.Span) bool {
		return func(sp *otelmap.Span) bool { return sp.Name == name }
	}

	t.Run("the capture as it came", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "langfuse", "captures/run-1.otlp.json")
		td := assemble.Trace(id, spans)
		if got := assembletest.AgentNames(td); !slices.Equal(got, []string{"coordinator", "researcher", "writer"}) {
			t.Errorf("agents %v", got)
		}
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"coordinator->researcher", "coordinator->writer"}) {
			t.Errorf("edges %v", got)
		}
		c := td.Coverage
		if c.Complete != 1 || c.Recognized["langfuse"] != len(spans) || len(c.UnreadNamespaces) != 0 || c.UnreadAgentSpans != 0 {
			t.Errorf("coverage %+v", c)
		}
		for _, a := range td.Agents {
			if !a.Virtual && a.IdentifiedBy != "span.name" {
				t.Errorf("agent %s identified by %q, want span.name", a.Name, a.IdentifiedBy)
			}
		}
		assembletest.AssertPermutationStable(t, id, spans, 20)
	})

	t.Run("an agent observation without a name", func(t *testing.T) {
		// startActiveObservation("", ..., {asType: "agent"}): the
		// researcher's run names no agent. It must not become the
		// coordinator's own work silently: counted unread, not complete.
		id, spans := assembletest.LoadLive(t, "langfuse", "captures/run-1.otlp.json")
		for i := range spans {
			if spans[i].Name == "researcher" {
				spans[i].Name = ""
			}
		}
		td := assemble.Trace(id, spans)
		if got := assembletest.AgentNames(td); !slices.Equal(got, []string{"coordinator", "writer"}) {
			t.Errorf("agents %v", got)
		}
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"coordinator->writer"}) {
			t.Errorf("edges %v", got)
		}
		// (UnreadAgentSpans makes the graph evaluator's evidence partial:
		// evals/evidence.go.)
		if c := td.Coverage; c.UnreadAgentSpans != 1 || !assembletest.HasWarning(td, "a Langfuse agent observation with an empty name") {
			t.Errorf("coverage %+v", c)
		}
	})

	t.Run("an observation type nobody knows", func(t *testing.T) {
		// A later SDK's type on the researcher's run: unread, counted by
		// the langfuse.observation.* namespace, never silently dropped.
		id, spans := assembletest.LoadLive(t, "langfuse", "captures/run-1.otlp.json")
		edit := func(a []attribute.KeyValue) []attribute.KeyValue {
			for i := range a {
				if a[i].Key == "langfuse.observation.type" {
					a[i] = attribute.String("langfuse.observation.type", "planner")
				}
			}
			return a
		}
		td := assemble.Trace(id, assembletest.EditAttrs(spans, isName("researcher"), edit))
		if got := assembletest.AgentNames(td); slices.Contains(got, "researcher") {
			t.Errorf("agents %v: an unknown type is no agent", got)
		}
		c := td.Coverage
		if c.UnreadNamespaces[nsKey] != 1 || !assembletest.HasWarning(td, "1 span carries `langfuse.observation.*` attributes no rule reads") {
			t.Errorf("coverage %+v", c)
		}
	})

	t.Run("the processor's attributes on every span", func(t *testing.T) {
		// The LangfuseSpanProcessor writes langfuse.environment,
		// langfuse.release and the propagated langfuse.trace.* on every
		// span, another library's HTTP span included: they change
		// nothing, and the HTTP span is no Langfuse span.
		id, spans := assembletest.LoadLive(t, "langfuse", "captures/run-1.otlp.json")
		add := func(a []attribute.KeyValue) []attribute.KeyValue {
			return append(a, attribute.String("langfuse.environment", "prod"), attribute.String("langfuse.release", "1.2"),
				attribute.String("langfuse.trace.name", "research-agent"), attribute.String("session.id", "s1"))
		}
		spans = assembletest.EditAttrs(spans, func(*otelmap.Span) bool { return true }, add)
		var search *otelmap.Span
		for i := range spans {
			if spans[i].Name == "search_web" {
				search = &spans[i]
			}
		}
		http := *search
		http.SpanID = trace.SpanID{0xfe, 1}
		http.ParentSpanID = search.SpanID
		http.Name = "GET"
		http.Kind = trace.SpanKindInternal
		http.Attrs = add([]attribute.KeyValue{attribute.String("http.request.method", "GET")})
		spans = append(spans, http)
		td := assemble.Trace(id, spans)
		if got := assembletest.AgentNames(td); !slices.Equal(got, []string{"coordinator", "researcher", "writer"}) {
			t.Errorf("agents %v", got)
		}
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"coordinator->researcher", "coordinator->writer"}) {
			t.Errorf("edges %v", got)
		}
		c := td.Coverage
		if c.Recognized["langfuse"] != len(spans)-1 || len(c.UnreadNamespaces) != 0 || c.Complete != 1 {
			t.Errorf("coverage %+v", c)
		}
	})

	t.Run("agents nested three deep, with and without a tool between", func(t *testing.T) {
		// coordinator -> researcher directly (startActiveObservation inside
		// startActiveObservation), researcher -> checker through its tool
		// observation "check", twice; the coordinator's chain and span
		// observations named like agents are its own work; the writer is
		// run inside a chain of the coordinator's, not a tool.
		id, span := assembletest.NSSpans("langfuse-team")
		in := trace.SpanKindInternal
		ty := func(t string) attribute.KeyValue { return attribute.String("langfuse.observation.type", t) }
		spans := []otelmap.Span{
			span(1, 0, "coordinator", in, ty("agent")),
			span(2, 1, "OpenAI.chat", in, ty("generation"), attribute.String("langfuse.observation.model.name", "gpt-4o-mini")),
			span(3, 1, "planner-agent", in, ty("chain")),
			span(4, 1, "researcher", in, ty("agent")),
			span(5, 4, "check", in, ty("tool")),
			span(6, 5, "checker", in, ty("agent")),
			span(7, 6, "OpenAI.chat", in, ty("generation")),
			span(8, 4, "check", in, ty("tool")),
			span(9, 8, "checker", in, ty("agent")),
			span(10, 1, "write-step", in, ty("chain")),
			span(11, 10, "writer", in, ty("agent")),
			span(12, 11, "guard", in, ty("guardrail")),
			span(13, 1, "score-agent", in, ty("evaluator")),
			span(14, 1, "agent-event", in, ty("event")),
			span(15, 1, "agent-work", in, ty("span")),
		}
		td := assemble.Trace(id, spans)
		if got := assembletest.AgentNames(td); !slices.Equal(got, []string{"checker", "coordinator", "researcher", "writer"}) {
			t.Errorf("agents %v", got)
		}
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"coordinator->researcher", "coordinator->writer", "researcher->checker"}) {
			t.Errorf("edges %v", got)
		}
		if in := assembletest.FindInteraction(td, "researcher", "checker"); in == nil || in.Count != 2 {
			t.Errorf("researcher->checker %+v, want 2 calls", in)
		}
		c := td.Coverage
		if c.Recognized["langfuse"] != len(spans) || len(c.UnreadNamespaces) != 0 || c.UnreadAgentSpans != 0 || c.Complete != 1 {
			t.Errorf("coverage %+v", c)
		}
		assembletest.AssertPermutationStable(t, id, spans, 20)
	})

	t.Run("turned off, the capture is no evidence, and says why", func(t *testing.T) {
		// What coordbench says of the program without the family: no
		// evidence, and, since the namespace is registered, the reason
		// named (before it was, the trace was "insufficient" with no
		// word of the twelve langfuse.observation.* spans).
		id, spans := assembletest.LoadLive(t, "langfuse", "captures/run-1.otlp.json")
		off, err := families.Default().Without("langfuse")
		if err != nil {
			t.Fatal(err)
		}
		td := assemble.TraceWith(id, spans, assemble.Options{Families: off})
		c := td.Coverage
		if len(td.Agents) != 0 || !c.NoEvidence || c.UnreadNamespaces[nsKey] != len(spans) {
			t.Errorf("agents %v coverage %+v", assembletest.AgentNames(td), c)
		}
	})
}
