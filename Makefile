# Sluice developer commands. `make dev` runs Sluice locally, `make test` runs
# the whole test suite; both start a private Postgres when no URL is set.

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build test test-citus reliability bench lint dev clean

build: ## build bin/sluice
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/sluice ./cmd/sluice

test: ## run every test against TEST_DATABASE_URL or a private Postgres
	scripts/test

test-citus: ## the queue contract and trigger tests on a local Citus cluster (builds Citus into a cache folder when none is installed; see docs/scale-out.md)
	scripts/test-citus

reliability: ## the reliability suite at the issue's full sizes (~30 min; TEST_DATABASE_URL or a private Postgres; see RELIABILITY.md)
	SLUICE_RELIABILITY=full scripts/test -v -timeout 90m ./reliability/

bench: ## run the Go benchmarks (BENCH=regexp, PKG=./pgqueue/ to narrow)
	scripts/bench $(or $(PKG),./...) $(or $(BENCH),.)

lint: ## gofmt, go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

dev: build ## run Sluice locally with the example functions
	bin/sluice dev

clean:
	rm -rf bin
