// Package coordbenchconnector is an OpenTelemetry Collector connector
// (traces to metrics and logs, component type "coordbench") that assesses
// multi-agent traces as they flow: it holds each trace's spans until the
// trace is complete by the assessor's settle rule (every agent call's
// server side seen, then quiet) or a maximum wait, assembles it and runs
// the model-free evaluators (graph, latency, text) through the same code
// as `green assess`, and emits agent-level call metrics, per-trace graph
// metric distributions and one log record per assessed trace carrying its
// coordbench.result/v2 task JSON. README.md says what it emits.
package coordbenchconnector
