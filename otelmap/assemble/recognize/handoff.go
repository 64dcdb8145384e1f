package recognize

import (
	"encoding/json"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
)

// Handoffs: spans that record one agent passing control to another, where
// the target agent's span is not nested in the caller's (it runs after it,
// as a sibling, or under the orchestration). Read, in this order:
//
//   - a span a family's kind says is a handoff (HandoffKind), to the
//     target a family gives (HandoffTo);
//   - a tool call whose target a family names (HandoffNamed);
//   - a tool call named transfer_to_<agent> or handoff_to_<agent>, or
//     with such a name after a plugin's prefix
//     ("Handoff-transfer_to_<agent>"): the naming convention of handoff
//     tools across frameworks;
//   - a tool of a family's HandoffTools, whose target is an argument named
//     agent_name, agentName, agent_id or agentId: read from the tool
//     call's arguments (ToolArguments), the span's events, or the
//     attributes families list as holding arguments (ArgumentKeys).
//
// transfer_back_to_<agent> is the reply of a delegation, not a handoff. A
// handoff whose target is not named is resolved to the next agent span
// after it (otelmap/assemble/calls_evidence.go).

// readHandoff reports whether the span is a handoff, and its target.
func (r *Reading) readHandoff(sp *otelmap.Span) (bool, string) {
	if r.s.handoffKind {
		return true, r.s.handoffTo
	}
	if r.Op != OpTool {
		return false, ""
	}
	if r.s.handoffNamed {
		return true, r.s.handoffNamedTo
	}
	name := r.toolName(sp)
	for _, t := range r.rd.reg.handoffTools {
		if t.Name != name {
			continue
		}
		to := r.handoffArgument(sp)
		if t.WithTarget && to == "" {
			return false, ""
		}
		return true, to
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
// tool call's arguments, else from the span's events, else from the
// attributes that hold arguments.
func (r *Reading) handoffArgument(sp *otelmap.Span) string {
	if name := agentNameArg(r.s.toolArgs); name != "" {
		return name
	}
	for _, e := range sp.Events() {
		for k := range e.Attrs {
			if name := agentNameArg(Quiet(&e.Attrs[k])); name != "" {
				return name
			}
		}
	}
	keys := r.rd.reg.argumentKeys
	for k := range sp.Attrs {
		for _, key := range keys {
			if string(sp.Attrs[k].Key) == key {
				if name := agentNameArg(Quiet(&sp.Attrs[k])); name != "" {
					return name
				}
				break
			}
		}
	}
	return ""
}

// handoffArgNames are the members a handoff's arguments name its target
// by, in the order read: snake_case and camelCase, name and id.
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
