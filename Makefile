# coordbench — build, test and run targets. `make test` is the one command
# that runs the whole suite; `.ci/run` installs what a fresh machine lacks and
# then runs it.

GO        ?= go
PKGS      := ./...
BIN       := bin
# Each fuzz target runs briefly in `make test`; longer with FUZZTIME=1m.
FUZZTIME  ?= 5s
STATICCHECK_VERSION := v0.8.2
GOBIN     := $(shell $(GO) env GOPATH)/bin

.PHONY: all build test test_all validate lint staticcheck type_check ruff fmt-check vet race fuzz \
	test-stack test-connector conformance live mcp-clients python-participants bench bench-graph bench-ingest bench-collector demo clean tools otelcol otelcol-router jaeger-build jaeger

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# The whole suite: formatting, vet, staticcheck, the race-enabled tests (networkx and
# Python oracles included, and internal/doctest, which runs every shell
# block of README.md and docs/), a short run of every fuzz target, the
# stack's tests (a module of their own), and the A2A conformance suites.
test: fmt-check vet staticcheck fuzz race test-stack test-connector conformance

test_all: test lint

validate: test_all

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

ruff: fmt-check

# go vet for this system, and for darwin and windows: the module (its
# tests too) must build for a developer's laptop, even where the SciCode
# sandbox and the benchmarks' CPU readings do not run.
vet:
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)

type_check: vet
	$(GO) build $(PKGS)

lint: vet staticcheck

# staticcheck of the three modules; a finding fails the suite (a
# deliberate one is kept with a //lint:ignore that says why).
staticcheck:
	@command -v $(GOBIN)/staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck $(PKGS)
	cd stack && $(GOBIN)/staticcheck ./...
	cd collector/coordbenchconnector && $(GOBIN)/staticcheck ./...

race:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# The tests of the local OpenTelemetry stack (stack/), a module of its own
# so that their dependencies (moby/buildkit's Dockerfile parser) stay out of
# go.mod; it reaches the main module by a replace directive. They need the
# tools below (`make otelcol otelcol-router jaeger-build`) and docker-compose: without
# them they skip, under CI=true they fail (internal/testenv). Their
# TestCollectorSoak keeps the connector under load for 10 minutes under
# CI=true, 3 otherwise (docs/collector.md, "Under load for hours").
test-stack:
	cd stack && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 45m ./...

# The Collector connector (collector/coordbenchconnector, docs/collector.md),
# a module of its own so that the Collector's dependencies stay out of
# go.mod: end to end through its factory, on the framework fixtures and the
# live corpus, against `green assess`.
test-connector:
	cd collector/coordbenchconnector && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 20m ./...

# The virtual environments of the AgentBeats Python test
# (e2e.TestAgentBeatsPython, docs/python-participants.md): AgentBeats'
# client and the Python participants, each from its hashed requirements
# file with uv. .ci/run makes them before `make test`; without them the
# test skips (under CI=true it fails).
python-participants:
	e2e/testdata/agentbeats-py/setup.sh

# Runs each Fuzz* target for FUZZTIME (`go test -fuzz` takes one target per
# package run). scripts/fuzz.sh fails on what fuzzing finds and retries the Go
# fuzzer's own flakes (its header says which and why).
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh $(PKGS)

# The live framework corpus (docs/trace-assembly.md, "The live corpus"):
# the harness's own tests, then every program of
# otelmap/assemble/testdata/live run again (a Node program `npm ci` from
# its lockfile, a Python program its own .venv synced by uv from its hashed
# requirements.txt; LIVE_RUNS runs each, captures written under $(BIN)/live, the committed
# ones left alone, a program's `variants` too) and assessed against its
# truth by TestLiveCorpus, and by the recognizer attacks that read live
# captures (TestVercelAI, TestGenkit, TestVoltAgent,
# TestA2AServicesHostingSeveralAgents). Needs
# Node.js, npm and the npm registry, Debian's python3 with python3-venv
# and PyPI; `make test` assesses the committed captures only.
LIVE_RUNS ?= 3
# Programs run side by side, LIVE_JOBS at a time (run.sh -j): each run is
# mostly one process's imports, so two keep this kind's two cores busy.
LIVE_JOBS ?= 2
live:
	cd otelmap/assemble/testdata/live/harness && node --test
	rm -rf $(BIN)/live
	otelmap/assemble/testdata/live/run.sh -n $(LIVE_RUNS) -j $(LIVE_JOBS) -o $(BIN)/live
	LIVE_CAPTURES=$(CURDIR)/$(BIN)/live $(GO) test -count=1 -timeout 20m -run '^(TestLiveCorpus|TestVercelAI|TestGenkit|TestVoltAgent|TestA2AServicesHostingSeveralAgents|TestOTelGenAIManualClientKind)$$' -v ./otelmap/assemble/... >$(BIN)/live.log 2>&1; \
	rc=$$?; grep -E -- '--- FAIL|^FAIL|^ok|live corpus[:,]' $(BIN)/live.log; \
	[ $$rc = 0 ] || echo "make live: TestLiveCorpus failed; the whole log is $(BIN)/live.log"; exit $$rc

# The participants that work tasks through MCP with the official MCP SDKs,
# unpatched (docs/mcp.md, "A participant's quick start"), which the e2e tests
# run (TestOfficialMCPSDKs): the TypeScript one's npm lockfile, and the Python
# one's hashed requirements in a virtual environment of its own, made by uv
# (scripts/uv.sh) with Debian's Python. Needs Node.js, npm, python3-venv, the
# npm registry and PyPI; without them installed the tests skip, under CI=true
# they fail.
MCP_JS := e2e/testdata/mcp-js
MCP_PY := e2e/testdata/mcp-py
mcp-clients:
	cd $(MCP_JS) && npm ci --no-audit --no-fund
	uv="$$(scripts/uv.sh)" && \
	{ [ -x $(MCP_PY)/.venv/bin/python ] || "$$uv" venv --quiet --python /usr/bin/python3 $(MCP_PY)/.venv; } && \
	"$$uv" pip sync --quiet --python $(MCP_PY)/.venv/bin/python --require-hashes $(MCP_PY)/requirements.txt

# The official A2A conformance suites (the a2a-tck snapshots in
# ../shared/conformance: 0.3.x mandatory, 1.0-dev must) against the green
# and the purple agent over JSON-RPC, judged by conformance/expected-failures.txt:
# an unexpected failure or pass fails the target. The summary goes to
# $(BIN)/conformance.md. Needs Debian's Python packages and protoc, which
# .ci/run installs (docs/conformance.md).
conformance:
	$(GO) build -o $(BIN)/ ./cmd/green ./cmd/purple
	$(GO) run ./cmd/conformance -green $(BIN)/green -purple $(BIN)/purple -summary $(BIN)/conformance.md

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

bench-graph:
	$(GO) run ./cmd/bench-graph

# Green's OTLP/HTTP ingest against Jaeger v2's (docs/performance.md): the
# same generated 1M-span payload posted to fresh processes of each,
# interleaved; spans/s, spans per CPU-second, peak RSS and the ratios.
# BENCH_INGEST_FLAGS passes flags, e.g. BENCH_INGEST_FLAGS="--runs 5".
bench-ingest: jaeger-build
	$(GO) build -o $(BIN)/ ./cmd/green ./cmd/bench-ingest
	$(BIN)/bench-ingest --green $(BIN)/green --jaeger $(BIN)/jaeger $(BENCH_INGEST_FLAGS)

# The coordbench connector in a Collector against the contrib span_metrics
# connector and the receiver alone (docs/performance.md): the same OTLP
# payload (framework captures and generated traces) posted to fresh
# bin/otelcol processes of each configuration, interleaved; spans per
# CPU-second, peak RSS and the ratios. BENCH_COLLECTOR_FLAGS passes flags.
bench-collector: otelcol
	$(GO) build -o $(BIN)/ ./cmd/bench-collector
	$(BIN)/bench-collector --otelcol $(BIN)/otelcol $(BENCH_COLLECTOR_FLAGS)

# The main job on the embedded default: no network, in-memory traces,
# rule-based judge.
demo:
	$(GO) run ./cmd/green demo

# The reconstruction benchmark: every ground-truth scenario's purple
# topology on loopback, unperturbed, assessed by a real green agent through
# A2A; prints expected and found labels, coverage, outcomes and the
# classification accuracy (exit 1 below 100%). It shows the green agent
# recovers the topology from the spans; `make test` runs the same suite as
# the Go tests of ./e2e. `make e2e` is its old name.
.PHONY: e2e e2e-reconstruction e2e-perturb
e2e-reconstruction:
	$(GO) run ./cmd/e2e

e2e: e2e-reconstruction

# The validity benchmark: the perturbation matrix (docs/validity.md), every
# ground-truth topology under late batches, duplicate exports, a silent,
# slow or failing reviewer, a dropped exporter and clock skew, each case
# against the verdict the documented rules call for (exit 1 when one does
# not hold). It takes minutes, so `make test` runs only a corner of it
# (e2e.TestPerturbShort).
e2e-perturb:
	$(GO) run ./cmd/e2e -perturb

# The soak test (docs/operations.md): 1,000 sequential and 10 x 20
# concurrent assessments against one green agent and purple team on
# loopback, with RSS, live heap and goroutines sampled; it fails when they
# do not level off. Not part of `make test`. Scale it with SOAK_FLAGS, e.g.
# SOAK_FLAGS="-soak.sequential 200"; the samples go to $(BIN)/soak.csv.
SOAK_FLAGS ?=
.PHONY: soak
soak:
	@mkdir -p $(BIN)
	$(GO) test -tags soak -count=1 -run '^TestSoak$$' -v -timeout 3h ./internal/soak/ -soak.csv $(CURDIR)/$(BIN)/soak.csv $(SOAK_FLAGS)

clean:
	rm -rf $(BIN)

# The local OpenTelemetry stack (docs/jaeger.md): the Collector distribution
# that checks and runs collector-config.yaml, and Jaeger v2. Each is built
# from its own module under tools/, so their dependency trees stay out of
# go.mod, into bin/; tools/build.sh skips the build when the binary was
# built from the same module, sources and Go version, and copies it from
# ~/.cache/coordbench/tools when this machine built it before (a fresh
# clone, as CI's). The stack's tests in stack/ use these binaries.
JAEGER_BUILDINFO := github.com/jaegertracing/jaeger/internal/version
JAEGER_LDFLAGS   := -X $(JAEGER_BUILDINFO).latestVersion=v2.13.0 \
	-X $(JAEGER_BUILDINFO).commitSHA=63b27e1810a710ac54dc4522da0538e540bdc545 \
	-X $(JAEGER_BUILDINFO).date=2025-12-03T16:07:08Z

otelcol:
	@GO=$(GO) BIN=$(BIN) tools/build.sh otelcol .

# The first-tier Collector of the two-tier configuration (collector-tier1.yaml,
# docs/collector.md "Scaling out"): the contrib routing connector sends each
# trace's spans to one of the second-tier bin/otelcol collectors.
otelcol-router:
	@GO=$(GO) BIN=$(BIN) tools/build.sh otelcol-router .

jaeger-build:
	@GO=$(GO) BIN=$(BIN) tools/build.sh jaeger github.com/jaegertracing/jaeger/cmd/jaeger $(JAEGER_LDFLAGS)

# Jaeger on loopback with in-memory storage, in the foreground: OTLP on
# 127.0.0.1:4317/4318 (gRPC/HTTP), the UI and API on http://127.0.0.1:16686
# (each port can be moved: jaeger-config.yaml lists the variables).
jaeger: jaeger-build
	$(BIN)/jaeger --config jaeger-config.yaml
