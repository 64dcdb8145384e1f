package crewai_test

import (
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
)

// setInput replaces a delegation's input.value by in.
func setInput(in string) func([]attribute.KeyValue) []attribute.KeyValue {
	return func(a []attribute.KeyValue) []attribute.KeyValue {
		a = slices.Clone(a)
		for i := range a {
			if a[i].Key == "input.value" {
				a[i] = attribute.String("input.value", in)
			}
		}
		return a
	}
}

// delegationTo picks the delegation span whose input names coworker.
func delegationTo(coworker string) func(*otelmap.Span) bool {
	return func(sp *otelmap.Span) bool {
		for _, kv := range sp.Attrs {
			if kv.Key == "input.value" && strings.Contains(kv.Value.String(), `"coworker": "`+coworker+`"`) {
				return true
			}
		}
		return false
	}
}

// TestCrewAI attacks the crewai family (crewai.go) on the real capture of
// crewai-hierarchical-py edited, with what the run does not show.
func TestCrewAI(t *testing.T) {
	t.Run("the capture as recorded", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		td := assemble.Trace(id, spans)
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"Crew Manager->Researcher", "Crew Manager->Writer"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("a coworker the crew does not have", func(t *testing.T) {
		// CrewAI answers a delegation to an unknown coworker with an
		// error text: no agent ran, and none may be made up. The Writer
		// is then not in the graph; the Researcher still is.
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, delegationTo("Writer"), setInput(`{"task": "x", "context": "y", "coworker": "Editor"}`))
		td := assemble.Trace(id, spans)
		if got := assembletest.AgentNames(td); slices.Contains(got, "Editor") || !slices.Contains(got, "Researcher") {
			t.Errorf("agents %v", got)
		}
	})

	t.Run("a coworker of another crew in the trace", func(t *testing.T) {
		// Another crew shares the trace (another participant's, or one
		// forged beside the run): its kickoff lists an Auditor. The
		// manager's delegation to "Auditor" is answered by CrewAI with an
		// error text (its own crew has no such role): no agent ran, and
		// no call into the other crew's agent may be read from it.
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, delegationTo("Writer"), setInput(`{"task": "x", "context": "y", "coworker": "Auditor"}`))
		other := spans[0]
		other.SpanID, other.ParentSpanID = trace.SpanID{0xc7, 0xe1}, trace.SpanID{}
		other.Name, other.Resource = "Crew.kickoff", &otelmap.Resource{ServiceName: "other-crew"}
		other.Attrs = []attribute.KeyValue{attribute.String("crew_agents", `[{"role": "Auditor"}]`)}
		spans = append(spans, other)
		td := assemble.Trace(id, spans)
		if got := assembletest.AgentNames(td); slices.Contains(got, "Auditor") || !slices.Contains(got, "Researcher") {
			t.Errorf("agents %v (edges %v)", got, assembletest.Edges(td))
		}
	})

	t.Run("a parent cycle above a delegation", func(t *testing.T) {
		// The span above the Writer's delegation names the delegation as
		// its parent (a cycle of two, no crew in it; families read the
		// trace before cycles are cut): the walk up to the delegation's
		// crew ends, and the assembly with it.
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		d := -1
		for i := range spans {
			if delegationTo("Writer")(&spans[i]) {
				d = i
			}
		}
		p := -1
		for i := range spans {
			if d >= 0 && spans[i].SpanID == spans[d].ParentSpanID {
				p = i
			}
		}
		if p < 0 {
			t.Fatalf("no delegation to the Writer (%d) or no span above it", d)
		}
		spans[p].ParentSpanID = spans[d].SpanID
		td := assemble.Trace(id, spans)
		if !assembletest.HasWarning(td, "parent links form a cycle") {
			t.Errorf("no parent cycle warning: %q", td.Coverage.Warnings)
		}
	})

	t.Run("the coworker spelt as the model wrote it", func(t *testing.T) {
		// CrewAI matches the role case-insensitively after trimming: the
		// agent takes the crew's spelling, not the model's.
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, delegationTo("Writer"), setInput(`{"task": "x", "context": "y", "coworker": "  wRITER "}`))
		td := assemble.Trace(id, spans)
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"Crew Manager->Researcher", "Crew Manager->Writer"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("input that is not the tool's arguments", func(t *testing.T) {
		// A delegation whose input is no JSON object (an instrumentation
		// that records the text the model wrote) names no one.
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, delegationTo("Writer"), setInput(`coworker: Writer`))
		td := assemble.Trace(id, spans)
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"Crew Manager->Researcher"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("another tool naming a coworker", func(t *testing.T) {
		// Only CrewAI's delegation tools run a coworker: a tool of the
		// application's whose arguments say "coworker" does not.
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		rename := func(a []attribute.KeyValue) []attribute.KeyValue {
			a = slices.Clone(a)
			for i := range a {
				if a[i].Key == "tool.name" {
					a[i] = attribute.String("tool.name", "notify_coworker")
				}
			}
			return a
		}
		spans = assembletest.EditAttrs(spans, delegationTo("Writer"), rename)
		td := assemble.Trace(id, spans)
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"Crew Manager->Researcher"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("the order spans arrive in", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "crewai-hierarchical-py", "captures/run-1.otlp.json")
		assembletest.AssertPermutationStable(t, id, spans, 20)
	})
}
