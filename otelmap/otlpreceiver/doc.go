// Package otlpreceiver is the OTLP/HTTP trace receiver (POST /v1/traces,
// protobuf or JSON, optionally gzip), shaped as the Collector's receivers
// are: it reads, bounds and decodes requests, and hands their spans to the
// Consumer it is given, which it knows only by that small interface (the
// trace store is one). It answers as OTLP/HTTP asks, partial success
// included, and counts and rate-limits what it rejects.
package otlpreceiver
