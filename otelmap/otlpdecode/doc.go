// Package otlpdecode turns OTLP trace data into otelmap spans: protobuf
// ExportTraceServiceRequests straight from the wire (SpansFromProto, with
// protowire; no intermediate tree), pdata's ptrace.Traces
// (SpansFromTraces, the JSON path and the protobuf reference), and OTLP
// JSON files as backends and the Collector's file exporter write them
// (ReadOTLPJSONFile). Decoder is the one reusable, bounded decoder of
// whole request bodies that the OTLP receiver pools.
package otlpdecode
