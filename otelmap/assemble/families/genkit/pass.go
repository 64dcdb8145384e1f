package genkit

import (
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

func (g *reader) Begin() { g.generates = g.generates[:0] }

// Keep keeps the generate loops (genkit:type util named generate) the
// family's word settled.
func (g *reader) Keep(r *recognize.Reading, _ *otelmap.Span, i int32) {
	if r.Taken() && g.typ == typUtil && g.name == "generate" {
		g.generates = append(g.generates, i)
	}
}

// Resolve marks the generate loops no prompt or agent ran as agents no
// attribute names: a generate whose parent, past flowStep spans, is not
// an agent span that names its agent. A generate under a generate is the
// same loop's next turn and is not counted again.
func (g *reader) Resolve(t recognize.Tree) {
	if len(g.generates) == 0 {
		return
	}
	loop := make(map[int32]bool, len(g.generates))
	for _, i := range g.generates {
		loop[i] = true
	}
	for _, i := range g.generates {
		p := t.Parent(i)
		if p >= 0 && loop[p] {
			continue
		}
		for p >= 0 && t.Process(p) == t.Process(i) && flowStep(t.Span(p)) {
			p = t.Parent(p)
		}
		if p >= 0 && t.Named(p) {
			continue // the prompt's or agent's own loop
		}
		t.MarkUnnamed(i)
	}
}

// flowStep reports a Genkit flowStep span (genkit:type flowStep), a step of
// a flow, through which a generate loop looks for the prompt or agent that
// runs it.
func flowStep(sp *otelmap.Span) bool {
	for k := range sp.Attrs {
		if sp.Attrs[k].Key == "genkit:type" {
			return recognize.Quiet(&sp.Attrs[k]) == "flowStep"
		}
	}
	return false
}
