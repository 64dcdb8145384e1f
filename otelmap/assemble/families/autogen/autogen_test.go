package autogen_test

import (
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
)

func load(t *testing.T) ([]otelmap.Span, func([]otelmap.Span) ([]string, int)) {
	t.Helper()
	id, spans := assembletest.LoadLive(t, "autogen-selector-guide-py", "captures/run-1.otlp.json")
	read := func(spans []otelmap.Span) ([]string, int) {
		td := assemble.Trace(id, spans)
		return assembletest.Edges(td), td.Coverage.UnwiredAgents
	}
	return spans, read
}

// turn returns the index of agent name's invoke_agent span.
func turn(t *testing.T, spans []otelmap.Span, name string) int {
	t.Helper()
	for i := range spans {
		if spans[i].Name == "invoke_agent "+name {
			return i
		}
	}
	t.Fatalf("no turn of %s", name)
	return -1
}

// TestAutoGen attacks the autogen family (autogen.go) on the real capture
// of autogen-selector-guide-py (the group chat manager recording no span)
// edited, with what the run does not show. Where the family gives no
// edge, the agents share the trace unexplained: never complete.
func TestAutoGen(t *testing.T) {
	t.Run("the capture as recorded", func(t *testing.T) {
		spans, read := load(t)
		if edges, unwired := read(spans); !slices.Equal(edges, []string{"planner->researcher", "researcher->writer"}) || unwired != 0 {
			t.Errorf("edges %v, unwired %d", edges, unwired)
		}
	})

	t.Run("turns that overlap are no chat", func(t *testing.T) {
		// A team whose agents ran at once (not one speaker after
		// another): no turn passed control to the next.
		spans, read := load(t)
		r := turn(t, spans, "researcher")
		spans[r].Start = spans[turn(t, spans, "planner")].End.Add(-time.Millisecond)
		if edges, unwired := read(spans); len(edges) != 0 || unwired != 3 {
			t.Errorf("edges %v, unwired %d", edges, unwired)
		}
	})

	t.Run("a turn of another team", func(t *testing.T) {
		// The writer's container id names another team: its turn is not
		// the researcher's successor, and it stays unexplained.
		spans, read := load(t)
		spans = assembletest.EditAttrs(spans, assembletest.AttrIs(string(otelmap.AttrGenAIAgentName), "writer"), func(a []attribute.KeyValue) []attribute.KeyValue {
			a = slices.Clone(a)
			for i := range a {
				if a[i].Key == otelmap.AttrGenAIAgentID {
					a[i] = otelmap.AttrGenAIAgentID.String("writer_other-team/other-team")
				}
			}
			return a
		})
		if edges, unwired := read(spans); !slices.Equal(edges, []string{"planner->researcher"}) || unwired == 0 {
			t.Errorf("edges %v, unwired %d", edges, unwired)
		}
	})

	t.Run("an agent id that is no container's", func(t *testing.T) {
		// A gen_ai.agent.id that does not spell "<name>_<team>/<team>"
		// (another framework's, or forged to join a team) is no turn.
		spans, read := load(t)
		spans = assembletest.EditAttrs(spans, assembletest.AttrIs(string(otelmap.AttrGenAIAgentName), "researcher"), func(a []attribute.KeyValue) []attribute.KeyValue {
			a = slices.Clone(a)
			for i := range a {
				if a[i].Key == otelmap.AttrGenAIAgentID {
					a[i] = otelmap.AttrGenAIAgentID.String("planner_" + a[i].Value.AsString()[len("researcher_"):])
				}
			}
			return a
		})
		edges, unwired := read(spans)
		if slices.Contains(edges, "planner->researcher") || unwired == 0 {
			t.Errorf("edges %v, unwired %d", edges, unwired)
		}
	})

	t.Run("the order spans arrive in", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "autogen-selector-guide-py", "captures/run-1.otlp.json")
		assembletest.AssertPermutationStable(t, id, spans, 20)
	})
}
