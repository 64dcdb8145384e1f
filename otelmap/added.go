package otelmap

import "go.opentelemetry.io/otel/trace"

// AddResult tells what became of spans handed to a consumer of spans:
// the trace store's Add, or whatever stands behind the OTLP receiver.
type AddResult struct {
	Accepted int
	// Duplicates were already held (same trace and span id) and were
	// dropped; they are not errors.
	Duplicates int
	// Rejected spans were not stored; Reason says why (the first reason
	// met).
	Rejected int
	Reason   string
	// Late spans arrived for a trace that was already assessed
	// (MarkAssessed); they are counted, not stored. LateTrace is the first
	// such trace, for a log line.
	Late      int
	LateTrace trace.TraceID
}
