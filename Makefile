# volcano-rs — common tasks. `make test` is what CI runs.
CARGO ?= cargo
EXAMPLE ?= examples/cluster.yaml

.PHONY: all build simulate test fmt-check clippy unit bench clean

all: build

build:
	$(CARGO) build --release -p volcano-rs

## Run the simulator on the shipped example cluster.
simulate:
	$(CARGO) run --release -q -p volcano-rs -- simulate $(EXAMPLE)

## Formatting, lints, and every test (unit, scenario, property).
test: fmt-check clippy unit

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace

## One session of the default configuration on synthetic clusters; see docs/benchmarks.md.
bench:
	$(CARGO) build --release -p volcano-rs --example bench_session
	./scripts/bench.sh

clean:
	$(CARGO) clean
