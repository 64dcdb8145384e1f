package assemble_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// TestWithoutStepsLeavesTheRest holds Options.WithoutSteps to its word on
// the framework fixtures, broken input and 300 mixes of conventions: the
// result equals the whole assembly's once the steps, the agents' step and
// error counts and the warnings about attributes are taken out of it,
// and the warnings about attributes it does give are the whole
// assembly's (the steps' own are the ones left out).
func TestWithoutStepsLeavesTheRest(t *testing.T) {
	type input struct {
		name  string
		id    trace.TraceID
		spans []otelmap.Span
	}
	var inputs []input
	for _, name := range frameworkNames(t) {
		id, spans, _ := loadFramework(t, name)
		inputs = append(inputs, input{name, id, spans})
	}
	broken := trace.TraceID{0xb0, 1}
	inputs = append(inputs, input{"broken", broken, brokenSpans(broken)})
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
		inputs = append(inputs, input{fmt.Sprintf("mix%d", seed), id, spans})
	}
	stepAgents := 0 // inputs with an agent known only by its steps
	for _, in := range inputs {
		whole := assemble.TraceWith(in.id, in.spans, assemble.Options{})
		graph := assemble.TraceWith(in.id, in.spans, assemble.Options{WithoutSteps: true})
		if len(graph.Steps) != 0 {
			t.Fatalf("%s: %d steps built without steps", in.name, len(graph.Steps))
		}
		for _, a := range graph.Agents {
			if a.Steps != 0 || a.Errors != 0 {
				t.Fatalf("%s: agent %s counts %d steps and %d errors without steps", in.name, a.Name, a.Steps, a.Errors)
			}
		}
		wholeAttr, wholeRest := splitAttrWarnings(whole.Coverage.Warnings)
		graphAttr, graphRest := splitAttrWarnings(graph.Coverage.Warnings)
		capped := slices.ContainsFunc(wholeAttr, func(w string) bool { return strings.Contains(w, "more attributes") })
		for _, w := range graphAttr {
			if !capped && !slices.Contains(wholeAttr, w) {
				t.Fatalf("%s: warning %q only without steps", in.name, w)
			}
		}
		if !slices.Equal(wholeRest, graphRest) {
			t.Fatalf("%s: warnings differ:\nwhole   %q\nwithout %q", in.name, wholeRest, graphRest)
		}
		for _, a := range whole.Agents {
			if a.Steps > 0 && !slices.ContainsFunc(whole.Interactions, func(it tracedata.Interaction) bool {
				return it.From == a.Name || it.To == a.Name
			}) {
				stepAgents++
			}
		}
		strip(whole)
		strip(graph)
		if w, g := mustJSON(t, whole), mustJSON(t, graph); w != g {
			t.Fatalf("%s: the graph differs without steps:\nwhole   %s\nwithout %s", in.name, w, g)
		}
	}
	// Agents that only did steps are kept without them: the inputs must
	// hold such agents for the comparison to show it.
	if stepAgents == 0 {
		t.Fatal("no input has an agent known only by its steps")
	}
}

// splitAttrWarnings separates the warnings about attributes (the
// reader's and the steps', capped together) from the others.
func splitAttrWarnings(ws []string) (attr, rest []string) {
	for _, w := range ws {
		if strings.HasPrefix(w, "attribute ") || strings.Contains(w, "more attributes of the wrong type") {
			attr = append(attr, w)
		} else {
			rest = append(rest, w)
		}
	}
	return attr, rest
}

// strip takes out what Options.WithoutSteps leaves out.
func strip(td *tracedata.TraceData) {
	td.Steps = []tracedata.Step{}
	for i := range td.Agents {
		td.Agents[i].Steps, td.Agents[i].Errors = 0, 0
	}
	_, td.Coverage.Warnings = splitAttrWarnings(td.Coverage.Warnings)
}
