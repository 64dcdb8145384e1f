package langgraph

import (
	"regexp"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
)

// controlFlow are the exception types LangGraph raises to move control,
// recorded as an error status with an exception event though nothing
// failed: subclasses of its GraphBubbleUp.
var controlFlow = regexp.MustCompile(`^(ParentCommand|GraphBubbleUp|GraphInterrupt|NodeInterrupt)$`)

// controlFlowRepr is how LangSmith's OpenTelemetry export records one: an
// exception event of the generic type Exception whose message is the
// exception's repr, "ParentCommand(Command(graph='__parent__', ...))"
// (langsmith 0.15.1, seen on the live corpus's
// langgraph-swarm-langsmith-py).
var controlFlowRepr = regexp.MustCompile(`^(ParentCommand|GraphBubbleUp|GraphInterrupt|NodeInterrupt)\(`)

// ControlFlow reports whether sp failed with one of LangGraph's
// control-flow exceptions, recorded by its type (types, from
// recognize.ErrorTypes) or, by LangSmith, as an Exception whose message is
// its repr. Not on the run of a whole graph that no node holds (run
// metadata without langgraph_node, such as the root "LangGraph" run): a
// Command routed to the parent of the outermost graph, or an interrupt
// the graph did not suppress, reached the graph's caller, and the run
// failed.
func (family) ControlFlow(sp *otelmap.Span, types []string) bool {
	if !controlFlowType(sp, types) {
		return false
	}
	meta, node := graphPlace(sp)
	return !meta || node
}

// controlFlowType reports a control-flow exception in either record.
func controlFlowType(sp *otelmap.Span, types []string) bool {
	for _, t := range types {
		if controlFlow.MatchString(t) {
			return true
		}
	}
	for _, e := range sp.Events() {
		if e.Name != "exception" {
			continue
		}
		var typ, msg string
		for _, kv := range e.Attrs {
			switch kv.Key {
			case "exception.type":
				typ = kv.Value.String()
			case "exception.message":
				msg = kv.Value.String()
			}
		}
		if typ == "Exception" && controlFlowRepr.MatchString(msg) {
			return true
		}
	}
	return false
}

// graphPlace reports whether sp carries LangChain run metadata in any
// exporter's shape (meta), and whether that metadata places it in a graph
// node (node).
func graphPlace(sp *otelmap.Span) (meta, node bool) {
	for k := range sp.Attrs {
		key := string(sp.Attrs[k].Key)
		switch {
		case key == "metadata":
			meta = true
			node = node || strings.Contains(sp.Attrs[k].Value.String(), `"`+mdNode+`"`)
		case strings.HasPrefix(key, langsmithPrefix):
			meta = true
			node = node || key[len(langsmithPrefix):] == mdNode
		case strings.HasPrefix(key, langfusePrefix):
			meta = true
			node = node || key[len(langfusePrefix):] == mdNode
		}
	}
	return meta, node
}
