package recognize

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
)

// Handoffs: spans that record one agent passing control to another, where
// the target agent's span is not nested in the caller's (it runs after it,
// as a sibling, or under the orchestration). Read, across conventions:
//
//   - gen_ai.operation.name=handoff or traceloop.span.kind=handoff
//     (OpenLLMetry's OpenAI Agents instrumentation), from
//     gen_ai.handoff.from_agent to gen_ai.handoff.to_agent;
//   - an OpenInference TOOL span named "handoff to <agent>" (the OpenAI
//     Agents SDK);
//   - a tool call named transfer_to_<agent> (LangGraph supervisor, the
//     OpenAI Agents SDK's default handoff tool), handoff_to_<agent>
//     (Microsoft Agent Framework), or with such a name after a plugin
//     prefix ("Handoff-transfer_to_<agent>", Semantic Kernel);
//   - the tools transfer_to_agent (Google ADK) and handoff_to_agent
//     (Strands Python swarm), whose target is an argument named
//     agent_name, agentName, agent_id or agentId: read from
//     gen_ai.tool.call.arguments, the OpenInference input.value, or the
//     span's events (Strands records it only in a gen_ai.tool.message
//     event);
//   - Strands TS Swarm's strands_structured_output tool when its output
//     names an agentId (without one it is the swarm's final answer).
//
// transfer_back_to_<agent> is the reply of a delegation (LangGraph
// supervisor), not a handoff. A handoff whose target is not named is
// resolved to the next agent span after it (otelmap/assemble/calls_evidence.go).

// readHandoff reports whether the span is a handoff, and its target.
func (r *Reading) readHandoff(sp *otelmap.Span) (bool, string) {
	if r.gen.op == "handoff" || r.tl.kind == tlHandoff {
		return true, r.gen.handoffTo
	}
	if r.Op != OpTool {
		return false, ""
	}
	if r.oi.kind == oiTool {
		if to, ok := strings.CutPrefix(sp.Name, "handoff to "); ok {
			return true, strings.TrimSpace(to)
		}
	}
	name := r.toolName(sp)
	switch name {
	case "transfer_to_agent", "handoff_to_agent":
		return true, handoffArgument(r, sp)
	case "strands_structured_output":
		// Strands TS routes a Swarm by structured output: {agentId,
		// message} hands off, {message} alone is the final answer.
		if to := handoffArgument(r, sp); to != "" {
			return true, to
		}
		return false, ""
	}
	for _, verb := range [...]string{"transfer_to_", "handoff_to_"} {
		i := strings.Index(name, verb)
		if i < 0 || (i > 0 && isNameChar(name[i-1])) {
			continue
		}
		if to := name[i+len(verb):]; to != "" {
			return true, to
		}
	}
	return false, ""
}

func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// handoffArgument reads the agent_name argument of a handoff tool: from the
// tool call's arguments, else from the span's events.
func handoffArgument(r *Reading, sp *otelmap.Span) string {
	if name := agentNameArg(r.gen.toolArgs); name != "" {
		return name
	}
	for _, e := range sp.Events() {
		for k := range e.Attrs {
			if name := agentNameArg(quiet(&e.Attrs[k])); name != "" {
				return name
			}
		}
	}
	for k := range sp.Attrs {
		switch sp.Attrs[k].Key {
		case "input.value", "tool_arguments", "gcp.vertex.agent.tool_call_args":
			if name := agentNameArg(quiet(&sp.Attrs[k])); name != "" {
				return name
			}
		}
	}
	return ""
}

// handoffArgNames are the members a handoff's arguments name its target
// by, in the order read: ADK's and Strands Python's agent_name, and the
// camelCase and id forms JS frameworks use (Strands TS Swarm's agentId).
var handoffArgNames = [...]string{"agent_name", "agentName", "agent_id", "agentId"}

// agentNameArg returns the target a handoff's JSON arguments name (the
// first of handoffArgNames that holds a non-empty string), or "".
func agentNameArg(s string) string {
	if !strings.Contains(s, `"agent`) {
		return ""
	}
	var args map[string]any
	if json.Unmarshal([]byte(s), &args) != nil {
		return ""
	}
	for _, k := range handoffArgNames {
		if v, ok := args[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// GraphSources returns the nodes a Strands TS Graph node's agent
// took its input from: the graph passes each source's output to the
// target agent after a text block "[node: <source id>]"
// (multiagent/graph.js _resolveNodeInput in @strands-agents/sdk 1.19.0),
// which the agent's invoke_agent span records in its gen_ai.user.message
// event. Only a text block that is exactly such a marker counts, so prose
// that mentions one does not. Each source is a caller of the agent: the
// graph's edge, which leaves no attribute. Nil for any span but a GenAI
// invoke_agent span.
func (r *Reading) GraphSources(sp *otelmap.Span) []string {
	if !r.Agent || r.gen.op != otelmap.OpInvokeAgent {
		return nil
	}
	var out []string
	for _, e := range sp.Events() {
		if e.Name != "gen_ai.user.message" {
			continue
		}
		for k := range e.Attrs {
			if e.Attrs[k].Key != "content" {
				continue
			}
			v := quiet(&e.Attrs[k])
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
				if src, ok := strings.CutPrefix(b.Text, "[node: "); ok {
					if src, ok = strings.CutSuffix(src, "]"); ok && src != "" && !slices.Contains(out, src) {
						out = append(out, src)
					}
				}
			}
		}
	}
	return out
}
