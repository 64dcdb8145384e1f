// Package sdkbridge joins the OpenTelemetry Go SDK to coordbench: the
// Recorder, a span processor that puts the assessor's own ended spans into
// the trace store (the in-process road of spans), and NewProviders, which
// builds a process's tracer and meter providers from the standard
// OpenTelemetry environment variables. It is the only package of otelmap
// that links the SDK's exporters.
package sdkbridge
