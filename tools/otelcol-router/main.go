// Written by hand in the form the OpenTelemetry Collector Builder
// (go.opentelemetry.io/collector/cmd/builder) v0.149.0 generates from
// builder-config.yaml; keep it in step with that manifest and with
// collector-tier1.yaml.

// Program otelcol-router is coordbench's first-tier OpenTelemetry Collector:
// it takes OTLP spans from anywhere and sends each trace's spans, all of
// them, to one of N second-tier collectors that run the coordbench
// connector (bin/otelcol), so that every trace is assessed once and whole
// however many collectors there are (docs/collector.md, "Scaling out"). It
// stands in for the contrib loadbalancing exporter, which this machine's
// module proxy does not serve, with the contrib routing connector
// partitioning by trace id (collector-tier1.yaml). Its components: the OTLP
// receiver, the routing connector, the batch processor, the OTLP (gRPC),
// OTLP/HTTP and debug exporters, and the env, file and yaml config
// providers. It lives in its own module, at the Collector release the
// routing connector is built against (v0.149.0), so neither the Collector's
// dependency tree nor that release reaches coordbench's go.mod or
// tools/otelcol's.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	envprovider "go.opentelemetry.io/collector/confmap/provider/envprovider"
	fileprovider "go.opentelemetry.io/collector/confmap/provider/fileprovider"
	yamlprovider "go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	info := component.BuildInfo{
		Command:     "otelcol-router",
		Description: "coordbench's first-tier OpenTelemetry Collector, routing spans by trace id.",
		Version:     "0.149.0-coordbench",
	}

	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
			},
		},
		ProviderModules: map[string]string{
			envprovider.NewFactory().Create(confmap.ProviderSettings{}).Scheme():  "go.opentelemetry.io/collector/confmap/provider/envprovider v1.55.0",
			fileprovider.NewFactory().Create(confmap.ProviderSettings{}).Scheme(): "go.opentelemetry.io/collector/confmap/provider/fileprovider v1.55.0",
			yamlprovider.NewFactory().Create(confmap.ProviderSettings{}).Scheme(): "go.opentelemetry.io/collector/confmap/provider/yamlprovider v1.55.0",
		},
		ConverterModules: []string{},
	}

	if err := run(set); err != nil {
		log.Fatal(err)
	}
}

func runInteractive(params otelcol.CollectorSettings) error {
	cmd := otelcol.NewCommand(params)
	if err := cmd.Execute(); err != nil {
		log.Fatalf("collector server run finished with error: %v", err)
	}

	return nil
}
