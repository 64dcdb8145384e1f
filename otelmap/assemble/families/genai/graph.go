package genai

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Callers returns the nodes a Strands TS Graph node's agent took its input
// from: the graph passes each source's output to the target agent after a
// text block "[node: <source id>]" (multiagent/graph.js _resolveNodeInput
// in @strands-agents/sdk 1.19.0; the live corpus's strands-graph program),
// which the agent's invoke_agent span records in its gen_ai.user.message
// event. Only a text block that is exactly such a marker counts, so prose
// that mentions one does not. Each source is a caller of the agent: the
// graph's edge, which leaves no attribute. None for any span but a GenAI
// invoke_agent span.
func (g *reader) Callers(r *recognize.Reading, sp *otelmap.Span, out []recognize.Caller) []recognize.Caller {
	if g.op != otelmap.OpInvokeAgent || len(sp.Events()) == 0 {
		return out
	}
	first := len(out)
	rank := r.Rank(idGraphNode)
	for _, e := range sp.Events() {
		if e.Name != "gen_ai.user.message" {
			continue
		}
		for k := range e.Attrs {
			if e.Attrs[k].Key != "content" {
				continue
			}
			v := recognize.Quiet(&e.Attrs[k])
			if !strings.Contains(v, "[node: ") {
				continue
			}
			var blocks []struct {
				Text string `json:"text"`
			}
			if json.Unmarshal([]byte(v), &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				src, ok := strings.CutPrefix(b.Text, "[node: ")
				if !ok {
					continue
				}
				src, ok = strings.CutSuffix(src, "]")
				if !ok || src == "" || slices.ContainsFunc(out[first:], func(c recognize.Caller) bool { return c.Name == src }) {
					continue
				}
				out = append(out, recognize.Caller{Name: src, Rank: rank})
			}
		}
	}
	return out
}
