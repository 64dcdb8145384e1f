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

.PHONY: all build test test_all validate lint type_check ruff fmt-check vet race fuzz \
	bench bench-graph demo clean tools

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# The whole suite: formatting, vet, the race-enabled tests (networkx and
# Python oracles included), and a short run of every fuzz target.
test: fmt-check vet fuzz race

test_all: test lint

validate: test_all

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

ruff: fmt-check

vet:
	$(GO) vet $(PKGS)

type_check: vet
	$(GO) build $(PKGS)

lint: vet
	@command -v $(GOBIN)/staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck $(PKGS)

race:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# Runs each Fuzz* target for FUZZTIME; `go test -fuzz` takes one target per
# package run.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg >/dev/null || \
	      { $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; exit 1; }; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

bench-graph:
	$(GO) run ./cmd/bench-graph

# The main job on the embedded default: no network, in-memory traces,
# rule-based judge.
demo:
	$(GO) run ./cmd/green demo

clean:
	rm -rf $(BIN)
