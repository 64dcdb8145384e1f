package example_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/families"
	"github.com/coordbench/coordbench/otelmap/assemble/families/example"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// acmeTeam is an Acme team run in one process: a team run, under it the
// planner agent, which calls a model, then its tool hands off to the
// writer, which runs beside it under the team; the planner's research tool
// runs the researcher inside it (a call by nesting). Every span copies its
// agent's name, as Acme does. The team's run is the root: no span shows
// who started it.
func acmeTeam() (trace.TraceID, []otelmap.Span) {
	id := trace.TraceID{0xac, 0xe}
	res := &otelmap.Resource{ServiceName: "acme-app"}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var spans []otelmap.Span
	add := func(n, parent byte, name string, kvs ...attribute.KeyValue) {
		var p trace.SpanID
		if parent != 0 {
			p = trace.SpanID{parent}
		}
		start := t0.Add(time.Duration(n) * time.Millisecond)
		spans = append(spans, otelmap.Span{TraceID: id, SpanID: trace.SpanID{n}, ParentSpanID: p, Name: name,
			Kind: trace.SpanKindInternal, Start: start, End: start.Add(100 * time.Millisecond), Attrs: kvs, Resource: res})
	}
	kind := func(k string) attribute.KeyValue { return attribute.String("acme.kind", k) }
	agent := func(a string) attribute.KeyValue { return attribute.String("acme.agent", a) }
	add(1, 0, "team", kind("team"))
	add(2, 1, "planner", kind("agent"), agent("planner"))
	add(3, 2, "model", kind("model"), agent("planner"))
	add(4, 2, "research", kind("tool"), agent("planner"))
	add(5, 4, "researcher", kind("agent"), agent("researcher"))
	add(6, 5, "model", kind("model"), agent("researcher"))
	add(7, 2, "pass", kind("tool"), agent("planner"), attribute.String("acme.handoff.to", "writer"))
	add(8, 1, "writer", kind("agent"), agent("writer"))
	add(9, 8, "model", kind("model"), agent("writer"))
	return id, spans
}

// TestAddedFamily: adding a family is its folder and one line in the
// registry (here, the registry of this test); with it an Acme team reads
// exactly, identified by acme.agent; without it nothing names an agent and
// the unread acme.* namespace is reported.
func TestAddedFamily(t *testing.T) {
	reg, err := recognize.NewRegistry(append(families.Builtin(), example.Family)...)
	if err != nil {
		t.Fatal(err)
	}
	id, spans := acmeTeam()

	td := assemble.TraceWith(id, spans, assemble.Options{Families: reg})
	var agents []string
	for _, a := range td.Agents {
		if !a.Virtual {
			agents = append(agents, a.Name)
			if a.IdentifiedBy != "acme.agent" {
				t.Errorf("%s identified by %q, want acme.agent", a.Name, a.IdentifiedBy)
			}
		}
	}
	var edges []string
	for _, in := range td.Interactions {
		edges = append(edges, in.From+" -> "+in.To)
	}
	if want := []string{"planner", "researcher", "writer"}; !slices.Equal(agents, want) {
		t.Errorf("agents %v, want %v", agents, want)
	}
	if want := []string{"planner -> researcher", "planner -> writer"}; !slices.Equal(edges, want) {
		t.Errorf("interactions %v, want %v", edges, want)
	}
	if c := td.Coverage; c.Recognized["acme"] != len(spans) || c.Complete != 1 || len(c.Warnings) != 0 {
		t.Errorf("coverage %+v", c)
	}

	without := assemble.Trace(id, spans)
	if len(without.Interactions) != 0 || !without.Coverage.NoEvidence || without.Coverage.UnreadNamespaces["acme.*"] == 0 {
		t.Errorf("without the family: interactions %v, coverage %+v; want none, no evidence, acme.* unread", without.Interactions, without.Coverage)
	}
}

// TestAddedFamilyUnnamed: an Acme agent run without acme.agent is counted
// as an agent no attribute names, with the family's own words in the
// warning.
func TestAddedFamilyUnnamed(t *testing.T) {
	reg, err := recognize.NewRegistry(append(families.Builtin(), example.Family)...)
	if err != nil {
		t.Fatal(err)
	}
	id, spans := acmeTeam()
	for i := range spans {
		if spans[i].Name == "researcher" {
			spans[i].Attrs = spans[i].Attrs[:1] // acme.kind alone
		}
	}
	td := assemble.TraceWith(id, spans, assemble.Options{Families: reg})
	found := slices.ContainsFunc(td.Coverage.Warnings, func(w string) bool {
		return strings.Contains(w, "1 span is an agent its framework ran with no name recorded") && strings.Contains(w, "an Acme agent run without acme.agent")
	})
	if !found || td.Coverage.UnreadAgentSpans != 1 || td.Agent("researcher") != nil {
		t.Errorf("unnamed Acme agent: agents %v, coverage %+v", td.Agents, td.Coverage)
	}
}
