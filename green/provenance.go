package green

import (
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/tracedata"
)

// Provenance (docs/trace-assembly.md, "Provenance"): before a task's trace
// is assembled, the spans the assessor cannot vouch for (received spans
// claiming to be its own, or outside the subtrees of its calls) are set
// aside, and the result says so. Offline assessment (AssessOTLPFiles) has
// no in-process road and trusts its files as given.

// vouchedSpans keeps the spans of a task's trace the assessor vouches for,
// and says what it set aside (nil when nothing was) and, if anything was,
// a warning naming the task.
func vouchedSpans(taskID string, spans []otelmap.Span, root trace.SpanID) ([]otelmap.Span, *tracedata.SetAside, string) {
	kept, aside := tracestore.Vouch(spans, root)
	if aside.Spans == 0 {
		return kept, nil, ""
	}
	return kept, &aside, fmt.Sprintf("task %s: %s (set_aside; see docs/trace-assembly.md#provenance)", taskID, report.DescribeSetAside(&aside))
}
