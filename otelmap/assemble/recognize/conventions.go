package recognize

import "github.com/coordbench/coordbench/otelmap/assemble/convmap"

// A user's convention map (package convmap) is one more family,
// "conventions": a rule that matches a span says its operation, agent name
// and handoff target before any built-in family (decide; precedence 2 in
// reading.go).

// mappedOperation is the operation a convention map's rule says a span is.
func mappedOperation(is convmap.Is) (op Op, workflow bool) {
	switch is {
	case convmap.Agent:
		return OpInvoke, false
	case convmap.LLM:
		return OpLLM, false
	case convmap.Tool, convmap.Handoff:
		return OpTool, false
	case convmap.Workflow:
		return OpNone, true
	}
	return OpNone, false
}
