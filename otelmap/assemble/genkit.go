package assemble

import "github.com/coordbench/coordbench/otelmap/assemble/recognize"

// Genkit's generate loops (recognize/genkit.go reads the genkit:* spans).

// resolveGenkit marks the generate loops no prompt or agent ran as agents
// no attribute names: a generate whose parent, past flowStep spans, is not
// a Genkit agent span. A generate under a generate is the same loop's next
// turn and is not counted again. Called once the parents are known.
func (a *assembler) resolveGenkit() {
	if len(a.gkGenerates) == 0 {
		return
	}
	loop := make(map[int32]bool, len(a.gkGenerates))
	for _, i := range a.gkGenerates {
		loop[i] = true
	}
	for _, i := range a.gkGenerates {
		p := a.nodes[i].parent
		if p >= 0 && loop[p] {
			continue
		}
		for p >= 0 && a.nodes[p].proc == a.nodes[i].proc && recognize.GenkitFlowStep(a.span(p)) {
			p = a.nodes[p].parent
		}
		if p >= 0 && a.nodes[p].flags&fAgent != 0 && a.nodes[p].selfIdent >= 0 {
			continue // the prompt's or agent's own loop
		}
		n := &a.nodes[i]
		if n.flags&fAgentLike == 0 {
			n.flags |= fAgentLike
			a.agentLike++
		}
		n.flags |= fUnnamedAgent
	}
}
