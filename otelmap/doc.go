// Package otelmap is coordbench's span model and conventions: the Span
// every road of spans yields and every later stage reads, and the span
// names and attribute keys coordbench emits and reads. It is the ground
// floor of the OpenTelemetry side and stays light (the OpenTelemetry API
// and semantic conventions only: no pdata, no SDK, no exporters), so that
// any package can use the conventions. The jobs built on it have packages
// of their own:
//
//   - otelmap/otlpdecode: OTLP bytes (protobuf, JSON, files) -> spans;
//   - otelmap/tracestore: the trace store, span admission, late spans, the
//     settle wait and provenance;
//   - otelmap/otlpreceiver: the OTLP/HTTP receiver, which hands what it
//     decodes to a Consumer (the store is one);
//   - otelmap/sdkbridge: the SDK's spans -> the store (the Recorder), and
//     the process's providers;
//   - otelmap/extension: the Traceability Extension's steps <-> spans;
//   - otelmap/assemble: one trace's spans -> tracedata.TraceData, each span
//     read through the recognizers of otelmap/assemble/recognize.
package otelmap
