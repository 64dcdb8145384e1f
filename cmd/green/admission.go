package main

import (
	"flag"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// registerAdmissionFlags adds the span admission knobs of `green serve`
// (docs/span-admission.md) to fs, reading into l.
func registerAdmissionFlags(fs *flag.FlagSet, l *tracestore.AdmissionLimits) {
	fs.IntVar(&l.MaxTracesPerSource, "otlp-traces-per-source", tracestore.DefaultMaxTraces/4,
		"most traces one exporter (remote IP) may hold in the span store that no running assessment reserved; further ones are refused")
	fs.IntVar(&l.MaxReserved, "otlp-reserved-traces", tracestore.DefaultMaxReserved,
		"most task traces reserved at once for running assessments (each admitted whatever else the store holds)")
	fs.BoolVar(&l.StrictIngest, "otlp-strict-ingest", false,
		"refuse spans of a running assessment's traces unless their export carries its ingest token (header "+otelmap.IngestTokenHeader+")")
}
