package genai

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Callers returns the nodes a Strands Graph node's agent took its input
// from, the graph's edges, which leave no attribute: the graph passes each
// source's output to the target agent, and the agent's invoke_agent span
// records that input in its gen_ai.user.message event.
//
//   - Strands TS (multiagent/graph.js _resolveNodeInput in
//     @strands-agents/sdk 1.19.0; the live corpus's strands-graph) puts each
//     source's output after a text block "[node: <source id>]".
//   - Strands Python (strands/multiagent/graph.py _build_node_input in
//     strands-agents 1.62.0; strands-graph-py) writes a text block
//     "Inputs from previous nodes:", then for each source a block
//     "From <source id>:" followed by its results ("  - Agent: ...").
//
// Only text blocks that are exactly such markers count (the Python ones
// only after the "Inputs from previous nodes:" block), so prose that
// mentions one does not. Each source is a caller of the agent; a node id
// that is no agent's name is no call (calls_evidence.go). None for any span
// but a GenAI invoke_agent span.
func (g *reader) Callers(r *recognize.Reading, sp *otelmap.Span, out []recognize.Caller) []recognize.Caller {
	if g.op != otelmap.OpInvokeAgent || len(sp.Events()) == 0 {
		return out
	}
	first := len(out)
	rank := r.Rank(idGraphNode)
	add := func(src string) {
		if src != "" && !slices.ContainsFunc(out[first:], func(c recognize.Caller) bool { return c.Name == src }) {
			out = append(out, recognize.Caller{Name: src, Rank: rank})
		}
	}
	for _, e := range sp.Events() {
		if e.Name != "gen_ai.user.message" {
			continue
		}
		for k := range e.Attrs {
			if e.Attrs[k].Key != "content" {
				continue
			}
			v := recognize.Quiet(&e.Attrs[k])
			ts, py := strings.Contains(v, "[node: "), strings.Contains(v, pyInputsMarker)
			if !ts && !py {
				continue
			}
			var blocks []struct {
				Text string `json:"text"`
			}
			if json.Unmarshal([]byte(v), &blocks) != nil {
				continue
			}
			inputs := false
			for _, b := range blocks {
				if src, ok := strings.CutPrefix(b.Text, "[node: "); ok {
					if src, ok = strings.CutSuffix(src, "]"); ok {
						add(src)
					}
					continue
				}
				text := strings.TrimSpace(b.Text)
				if text == pyInputsMarker {
					inputs = true
					continue
				}
				if src, ok := strings.CutPrefix(text, "From "); ok && inputs {
					if src, ok = strings.CutSuffix(src, ":"); ok && !strings.ContainsAny(src, "\n:") {
						add(src)
					}
				}
			}
		}
	}
	return out
}

// pyInputsMarker is the text block before the sources of a Strands Python
// graph node's input.
const pyInputsMarker = "Inputs from previous nodes:"
