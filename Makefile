# volcano-rs — common tasks. `make test` is what CI runs.
CARGO ?= cargo
EXAMPLE ?= examples/cluster.yaml

.PHONY: all build simulate test fmt-check clippy unit e2e bench clean

all: build

build:
	$(CARGO) build --release -p volcano-rs

## Run the simulator on the shipped example cluster.
simulate:
	$(CARGO) run --release -q -p volcano-rs -- simulate $(EXAMPLE)

## Formatting, lints, and every test (unit, scenario, property).
test: fmt-check clippy unit chart-lint manifests-check e2e

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace

## End-to-end: the daemon against local control planes brought up for the run and always
## brought down after it (e2e/README.md); tests in crates/e2e, in two shards run at once, each
## on its own control plane (e2e/run-shards.sh). Daemons a crashed runner left behind are
## killed from the pid lists the harness keeps.
E2E_TARGET := $(or $(CARGO_TARGET_DIR),target)
e2e:
	$(CARGO) build -p volcano-rs -p volcano-rs-e2e
	./e2e/run-shards.sh $(E2E_TARGET)/debug/volcano-rs-e2e; status=$$?; \
	for pids in $(E2E_TARGET)/e2e-logs/*/pids; do \
		[ -f $$pids ] || continue; \
		for pid in $$(cat $$pids); do \
			if tr '\0' ' ' 2>/dev/null </proc/$$pid/cmdline | grep -q -- ' run .*--scheduler-name=e2e-'; then \
				kill -KILL $$pid 2>/dev/null || true; \
			fi; \
		done; \
		rm -f $$pids; \
	done; \
	exit $$status

## One session of the default configuration on synthetic clusters; see docs/benchmarks.md.
bench:
	$(CARGO) build --release -p volcano-rs --example bench_session
	./scripts/bench.sh

## End to end on a local control plane brought up and down for the run: the API server's raw
## bind ceiling, a backlog of gangs, one large gang, a steady stream; docs/benchmarks.md.
.PHONY: bench-e2e
bench-e2e:
	$(CARGO) build --release -p volcano-rs -p volcano-rs-e2e
	VOLCANO_RS_BIN=$(E2E_TARGET)/release/volcano-rs \
	VOLCANO_E2E_ETCD_PORT=24090 VOLCANO_E2E_ETCD_PEER_PORT=24100 \
	VOLCANO_E2E_APISERVER_PORT=16743 VOLCANO_E2E_KWOK_PORT=16747 \
	VOLCANO_E2E_RUN_DIR=$${XDG_CACHE_HOME:-$$HOME/.cache}/volcano-rs/run-bench \
	VOLCANO_E2E_ETCD_DATA=/dev/shm/volcano-rs-etcd-$$(id -u)-bench \
	E2E_LOG_DIR=$(E2E_TARGET)/e2e-logs/bench \
	./e2e/with-cluster.sh $(E2E_TARGET)/release/volcano-rs-bench-e2e

## The same, with each scheduler phase run again by Volcano's own scheduler (built once by
## e2e/build-volcano.sh, cached outside the clone) on the same cluster and load.
.PHONY: bench-e2e-volcano
bench-e2e-volcano:
	BENCH_VOLCANO_SCHEDULER=$$(./e2e/build-volcano.sh scheduler)/vc-scheduler $(MAKE) bench-e2e

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

## Helm chart (charts/volcano-rs) and the rendered install manifest (deploy/volcano-rs.yaml).
.PHONY: helm chart-lint manifests manifests-check

## Build (once, cached outside the clone) the pinned helm v3 from the Go module proxy.
helm:
	./e2e/build-helm.sh

## helm lint --strict, helm template with defaults and with every option on plus checks of the
## output, then `kubectl apply --dry-run=server` of the renders against the local control plane
## (the running e2e cluster, or one brought up and down for the check).
chart-lint:
	./scripts/chart-lint.sh
	./e2e/chart-dry-run.sh

## Regenerate deploy/volcano-rs.yaml from the chart's defaults.
manifests:
	./scripts/render-manifests.sh

## Fail when deploy/volcano-rs.yaml is not what `make manifests` would write.
manifests-check:
	./scripts/render-manifests.sh --check
