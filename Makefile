# agentplane: the two commands are `make run` and `make test`.
# Everything a target needs it installs itself, from pinned versions.

GO        ?= go
SHELL     := /bin/bash
export JSII_RUNTIME_PACKAGE_CACHE_ROOT := $(CURDIR)/.cache/jsii
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: run test test-go build synth bench bench-peer openapi lint clean

## run: build and start the all-in-one local server on 127.0.0.1:8000
run:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/agentplane ./cmd/agentplane
	./bin/agentplane serve

## test: every test (Go with -race, AWS adapters against emulators, CDK, node clients)
test:
	bash scripts/test.sh

## test-go: only the product's Go tests (emulators started and stopped around them)
test-go:
	bash scripts/test.sh go

## build: linux/arm64 Lambda bootstrap binaries, zipped under dist/
build:
	bash scripts/build-lambdas.sh

## synth: synthesize the US and EU stacks into cdk.out/, state machines into cdk.out/asl/
## (builds the Lambda zips first when they are missing or older than the sources)
synth:
	bash scripts/synth.sh

## infra-test: CDK assertion tests, synth, cdk-nag and asl-validator
.PHONY: infra-test
infra-test:
	bash scripts/infra-test.sh

## bench: benchmarks of the store adapters and the HTTP services
bench:
	bash scripts/bench.sh

## bench-peer: agentplane's thread API against the reference server (langgraphjs dev,
## in memory), side by side on loopback; prints a table of ratios. Not a test.
## Tune with BENCH_PEER_FLAGS, e.g. "-threads 10000 -d 5s".
bench-peer:
	npm ci --prefix scripts/bench-peer/ref --no-audit --no-fund --loglevel=error
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/agentplane ./cmd/agentplane
	$(GO) run ./scripts/benchpeer -agentplane bin/agentplane -ref scripts/bench-peer/ref $(BENCH_PEER_FLAGS)

## openapi: regenerate the served OpenAPI document from the route declarations
openapi:
	$(GO) test ./shared/compose/catalog -run OpenAPI -count=1 -update

## lint: gofmt, go vet, staticcheck (pinned)
lint:
	@dirs=$$(ls -d cmd functions shared infra 2>/dev/null); test -z "$$(gofmt -l $$dirs)" || (gofmt -l $$dirs; exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

clean:
	rm -rf bin dist cdk.out .cache
