// Package jaegerquery reads traces where they rest: from Jaeger's query
// service, through its HTTP API v3, which answers in OTLP JSON. A trace is
// fetched by id (GET /api/v3/traces/{trace_id}); a selection by service,
// operation and span start time is searched (GET /api/v3/traces with
// query.service_name, query.operation_name, query.start_time_min,
// query.start_time_max and query.num_traces), and Search pages a large
// selection into requests of at most a page of traces each, so that no
// answer holds the whole selection.
//
// The answers are decoded by otlpdecode.ReadOTLPJSON, the reader of OTLP
// JSON files (which already knows Jaeger's {"result": ...} envelope): one
// decoder for files and for Jaeger, so a trace read here is the trace
// `green assess --otlp` reads from the same bytes saved to a file.
//
// The routes and parameter names are Jaeger's, from
// cmd/query/app/apiv3/http_gateway.go of github.com/jaegertracing/jaeger
// v1.76.0 (Jaeger v2.13.0, the version tools/jaeger builds): every
// request has a deadline, every answer a size bound, and every failure
// says which of three it is (ErrUnreachable, ErrNotFound, ErrMalformed) or
// carries Jaeger's own message.
package jaegerquery
