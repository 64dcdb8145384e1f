package assemble

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/extension"
	"github.com/coordbench/coordbench/tracedata"
)

// ResponseTraceForCall is what an agent answers a call with through the
// extension: the steps of its own work on that call. spans are the agent's
// spans of the trace (from its in-process store); root is the span of its
// own handling of the call (its server-side invoke_agent span). The trace is
// assembled, and the steps whose spans are root or below it are kept, root's
// parent_step_id cleared, since the caller attaches it to its own span. An
// invalid root keeps every step; a root not among the spans keeps none.
func ResponseTraceForCall(traceID trace.TraceID, spans []otelmap.Span, root trace.SpanID) *tracedata.ResponseTrace {
	td := Trace(traceID, spans)
	steps := td.Steps
	if root.IsValid() {
		under := spansUnder(traceID, spans, root)
		kept := make([]tracedata.Step, 0, len(under))
		for _, s := range steps {
			if _, ok := under[s.StepID]; ok {
				kept = append(kept, s)
			}
		}
		ids := make(map[string]struct{}, len(kept))
		for _, s := range kept {
			ids[s.StepID] = struct{}{}
		}
		for i := range kept {
			if _, ok := ids[kept[i].ParentStepID]; !ok || kept[i].StepID == root.String() {
				kept[i].ParentStepID = ""
			}
		}
		steps = kept
	}
	return extension.ResponseTraceFromSteps(traceID.String(), steps)
}

// spansUnder returns the hex ids of root and the spans below it in the
// parent links of spans (those of traceID). The walk goes down from root
// and visits each span once, so cycles end it.
func spansUnder(traceID trace.TraceID, spans []otelmap.Span, root trace.SpanID) map[string]struct{} {
	kids := make(map[trace.SpanID][]trace.SpanID)
	present := false
	for i := range spans {
		sp := &spans[i]
		if sp.TraceID != traceID {
			continue
		}
		if sp.SpanID == root {
			present = true
		}
		if sp.ParentSpanID.IsValid() && sp.ParentSpanID != sp.SpanID {
			kids[sp.ParentSpanID] = append(kids[sp.ParentSpanID], sp.SpanID)
		}
	}
	under := make(map[string]struct{})
	if !present {
		return under
	}
	seen := map[trace.SpanID]struct{}{root: {}}
	queue := []trace.SpanID{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		under[id.String()] = struct{}{}
		for _, k := range kids[id] {
			if _, ok := seen[k]; !ok {
				seen[k] = struct{}{}
				queue = append(queue, k)
			}
		}
	}
	return under
}
