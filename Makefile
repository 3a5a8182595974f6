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

## Local control plane for e2e tests (etcd, kube-apiserver, kwok on 127.0.0.1); see e2e/README.md.
.PHONY: e2e-tools cluster-up cluster-down

## Build (once, cached outside the clone) the pinned etcd, kube-apiserver, kubectl and kwok.
e2e-tools:
	./e2e/build-tools.sh

## Start the cluster (builds e2e-tools first if needed); prints the kubeconfig path.
cluster-up:
	./e2e/cluster-up.sh

## Stop the cluster and remove its state.
cluster-down:
	./e2e/cluster-down.sh
