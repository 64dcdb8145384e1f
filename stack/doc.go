// Package stack holds the tests of coordbench's local OpenTelemetry stack:
// the files that describe it (collector-config.yaml, jaeger-config.yaml,
// docker-compose-local.yaml, Dockerfile.green, Dockerfile.purple) and the
// stack itself run for real on loopback — the Collector distributions and
// Jaeger built from tools/ (`make otelcol otelcol-router jaeger-build`), the
// green agent and a purple team, every agent exporting its spans only to the
// collector; and the coordbench connector's pipelines, one collector and two
// tiers (collector-coordbench.yaml, collector-tier1.yaml).
//
// The package has no code of its own: it exists so `make test` checks what
// would otherwise be checked only by starting containers. It is a module of
// its own (stack/go.mod, the main module through a replace directive), so
// what only its tests need (moby/buildkit's Dockerfile parser) stays out of
// the main module's go.mod; `make test-stack`, part of `make test`, runs
// it. A test that needs a built tool or docker-compose skips when it is
// absent, except under CI=true, where an absent tool is a failure (.ci/run
// builds and installs them first; internal/testenv holds the rule).
package stack
