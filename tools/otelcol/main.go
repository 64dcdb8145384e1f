// Written by hand in the form the OpenTelemetry Collector Builder
// (go.opentelemetry.io/collector/cmd/builder) v0.164.0 generates from
// builder-config.yaml; keep it in step with that manifest and with
// collector-config.yaml and collector-coordbench.yaml.

// Program otelcol is the OpenTelemetry Collector distribution coordbench's
// local stack runs: exactly the components collector-config.yaml and
// collector-coordbench.yaml use (the OTLP receiver, the memory_limiter and
// batch processors, the OTLP/HTTP and debug exporters, the coordbench
// connector) and the env, file and yaml config providers, so `otelcol
// validate --config FILE` checks those files against the same component
// versions the tests run. It lives in its own module so the Collector's
// dependency tree stays out of coordbench's go.mod.
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
		Command:     "otelcol",
		Description: "coordbench's OpenTelemetry Collector distribution for the local stack.",
		Version:     "0.164.0-coordbench",
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
			envprovider.NewFactory().Create(confmap.ProviderSettings{}).Scheme():  "go.opentelemetry.io/collector/confmap/provider/envprovider v1.70.0",
			fileprovider.NewFactory().Create(confmap.ProviderSettings{}).Scheme(): "go.opentelemetry.io/collector/confmap/provider/fileprovider v1.70.0",
			yamlprovider.NewFactory().Create(confmap.ProviderSettings{}).Scheme(): "go.opentelemetry.io/collector/confmap/provider/yamlprovider v1.70.0",
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
