package genkit_test

import (
	"slices"
	"testing"

	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// cut returns a copy of spans without the first span sel selects, its
// children moved up to its parent: the trace of a program that does the
// same work without that span's wrapper.
func cut(t *testing.T, spans []otelmap.Span, sel func(*otelmap.Span) bool) []otelmap.Span {
	t.Helper()
	k := slices.IndexFunc(spans, func(sp otelmap.Span) bool { return sel(&sp) })
	if k < 0 {
		t.Fatal("no span to cut")
	}
	gone, parent := spans[k].SpanID, spans[k].ParentSpanID
	out := slices.Delete(slices.Clone(spans), k, k+1)
	for i := range out {
		if out[i].ParentSpanID == gone {
			out[i].ParentSpanID = parent
		}
	}
	return out
}

// genkitSpan selects the span of genkit:type typ named name.
func genkitSpan(typ, name string) func(*otelmap.Span) bool {
	return func(sp *otelmap.Span) bool {
		return assembletest.AttrIs("genkit:type", typ)(sp) && assembletest.AttrIs("genkit:name", name)(sp)
	}
}

// TestGenkit attacks the genkit family (genkit.go, and its pass, pass.go) with
// the cases the live program does not show, on its real captures: a
// generate loop run by no prompt or agent (ai.generate() in a tool, in a
// flow), and a span type the family does not know. The exact read of
// the program itself is TestLiveCorpus's.
func TestGenkit(t *testing.T) {
	t.Run("generate in a tool, no prompt", func(t *testing.T) {
		// The researcher tool calls ai.generate() itself instead of the
		// researcher prompt: the generate loop under the tool names no
		// agent; it is counted once (its next turn nests in it), warned
		// about, and not guessed (not the tool's name, not the flow's).
		for _, run := range []string{"run-1", "run-2", "run-3"} {
			id, spans := assembletest.LoadLive(t, "genkit", "captures/"+run+".otlp.json")
			spans = cut(t, spans, genkitSpan("dotprompt", "researcher"))
			td := assemble.Trace(id, spans)
			if got, want := assembletest.AgentNames(td), []string{"coordinator", "writer"}; !slices.Equal(got, want) {
				t.Errorf("%s: agents = %q, want %q", run, got, want)
			}
			if got, want := assembletest.Edges(td), []string{"coordinator->writer"}; !slices.Equal(got, want) {
				t.Errorf("%s: edges = %q, want %q", run, got, want)
			}
			if td.Coverage.UnreadAgentSpans != 1 || !assembletest.HasWarning(td, "a Genkit generate run by no prompt or agent") {
				t.Errorf("%s: unread agent spans %d, warnings %q; want the researcher's generate counted once", run, td.Coverage.UnreadAgentSpans, td.Coverage.Warnings)
			}
		}
	})
	t.Run("generate in a flow, no prompt", func(t *testing.T) {
		// The flow calls ai.generate() with the delegation tools instead of
		// the coordinator prompt: the specialists are named, their caller
		// is not, and the flow does not stand in for it.
		id, spans := assembletest.LoadLive(t, "genkit", "captures/run-1.otlp.json")
		spans = cut(t, spans, genkitSpan("dotprompt", "coordinator"))
		td := assemble.Trace(id, spans)
		if got, want := assembletest.AgentNames(td), []string{"researcher", "writer"}; !slices.Equal(got, want) {
			t.Errorf("agents = %q, want %q", got, want)
		}
		for _, in := range td.Interactions {
			if in.From == "answerQuestion" || in.From == "unknown_service:node" {
				t.Errorf("edge %s -> %s: a flow or the service stood in for an unnamed agent", in.From, in.To)
			}
		}
		if td.Coverage.UnreadAgentSpans != 1 || !assembletest.HasWarning(td, "a Genkit generate run by no prompt or agent") {
			t.Errorf("unread agent spans %d, warnings %q; want the flow's generate counted once", td.Coverage.UnreadAgentSpans, td.Coverage.Warnings)
		}
	})
	t.Run("a span type no rule knows", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "genkit", "captures/run-1.otlp.json")
		extra := spans[0]
		extra.SpanID = trace.SpanID{0xee, 2}
		extra.Name = "planner"
		extra.Attrs = []attribute.KeyValue{attribute.String("genkit:type", "agentTeam"), attribute.String("genkit:name", "planner")}
		td := assemble.Trace(id, append(slices.Clone(spans), extra))
		if td.Coverage.UnreadNamespaces["genkit:*"] != 1 {
			t.Errorf("unread namespaces %v, want genkit:* 1", td.Coverage.UnreadNamespaces)
		}
		if slices.Contains(assembletest.AgentNames(td), "planner") {
			t.Error("a span of an unknown type was read as an agent")
		}
	})
	t.Run("flow and prompt plumbing are read, not unread", func(t *testing.T) {
		// The flow, render (promptTemplate) and generate (util) spans say
		// what they are: no genkit:* span of the program is left unread,
		// and none of them is an agent or a step.
		id, spans := assembletest.LoadLive(t, "genkit", "captures/run-1.otlp.json")
		td := assemble.Trace(id, spans)
		if len(td.Coverage.UnreadNamespaces) != 0 || td.Coverage.UnreadAgentSpans != 0 || td.Coverage.NoEvidence {
			t.Errorf("unread %v, unread agent spans %d, no evidence %v", td.Coverage.UnreadNamespaces, td.Coverage.UnreadAgentSpans, td.Coverage.NoEvidence)
		}
		for _, st := range td.Steps {
			switch st.Name {
			case "answerQuestion", "render", "generate":
				t.Errorf("%s is a step", st.Name)
			}
		}
	})
}
