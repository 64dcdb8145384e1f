// Written by hand in the form the OpenTelemetry Collector Builder
// (go.opentelemetry.io/collector/cmd/builder) v0.149.0 generates from
// builder-config.yaml; keep it in step with that manifest and with
// collector-tier1.yaml.

package main

import "go.opentelemetry.io/collector/otelcol"

// run starts the collector in the foreground. The builder also generates a
// main_windows.go that runs it as a Windows service; the local stack runs on
// Linux only, so this distribution leaves it out and runs interactively
// everywhere.
func run(params otelcol.CollectorSettings) error {
	return runInteractive(params)
}
