#!/usr/bin/env bash
# Runs the e2e tests in two shards at the same time, each against its own local
# control plane (own ports, run directory, etcd data and log directory), each
# brought up and down by with-cluster.sh. Tests of one shard cannot see the
# other's PodGroups and Queues, whose accounting would otherwise leak between
# them (crates/e2e/src/main.rs), and the API-server restart only takes down its
# own shard's API server.
#
#   shard "faults": the tests that stop the API server or pause a daemon for
#                   long stretches (apiserver-restart, leader-pause), and the
#                   one that waits for a wall-clock minute to turn (tdm-zone);
#   shard "main":   every other test.
#
# Output lines are prefixed with the shard's name. Exits 0 only when both
# shards passed.
#
# Usage: e2e/run-shards.sh RUNNER   (RUNNER: the volcano-rs-e2e binary)
# Environment: E2E_LOG_DIR (default <target>/e2e-logs; each shard writes to a
# subdirectory), E2E_SHARD_PORT_OFFSET (default 100): the "main" shard's ports
# are the defaults (lib.sh) plus this, the "faults" shard's plus twice this, so
# a cluster left up with the defaults for development is not disturbed.
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# == 1)) || e2e_die "usage: $0 RUNNER"
runner=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[[ -x $runner ]] || e2e_die "$runner is not an executable"
logs=${E2E_LOG_DIR:-$(dirname "$runner")/../e2e-logs}
offset=${E2E_SHARD_PORT_OFFSET:-100}
faults=(apiserver-restart leader-pause tdm-zone)

# Build (or find cached) the control-plane binaries once, before the shards
# would both try.
"$E2E_DIR/build-tools.sh"
# The Prometheus server the usage test scrapes through (Debian's package).
VOLCANO_E2E_PROMETHEUS=$("$E2E_DIR/install-prometheus.sh")
export VOLCANO_E2E_PROMETHEUS
# Volcano's controller-manager and its Job CRDs, for the volcano-job test (cluster-up.sh
# installs the CRDs when this is set).
VOLCANO_E2E_VOLCANO_DIR=$("$E2E_DIR/build-volcano.sh")
export VOLCANO_E2E_VOLCANO_DIR

# shard NAME PORT_OFFSET RUNNER_ARGS...
shard() {
	local name=$1 off=$2
	shift 2
	mkdir -p "$logs/$name"
	VOLCANO_E2E_ETCD_PORT=$((E2E_ETCD_CLIENT_PORT + off)) \
		VOLCANO_E2E_ETCD_PEER_PORT=$((E2E_ETCD_PEER_PORT + off)) \
		VOLCANO_E2E_APISERVER_PORT=$((E2E_APISERVER_PORT + off)) \
		VOLCANO_E2E_KWOK_PORT=$((E2E_KWOK_PORT + off)) \
		VOLCANO_E2E_RUN_DIR=$E2E_CACHE/run-$name \
		VOLCANO_E2E_ETCD_DATA=/dev/shm/volcano-rs-etcd-$(id -u)-$name \
		E2E_LOG_DIR=$logs/$name \
		"$E2E_DIR/with-cluster.sh" "$runner" "$@" 2>&1 | sed -u "s/^/[$name] /"
	return "${PIPESTATUS[0]}"
}

skips=()
for t in "${faults[@]}"; do skips+=(--skip "$t"); done

shard main "$offset" "${skips[@]}" &
main=$!
shard faults $((2 * offset)) "${faults[@]}" &
faults_pid=$!

rc=0
wait "$main" || rc=1
wait "$faults_pid" || rc=1
if ((rc == 0)); then
	echo "e2e: both shards passed"
else
	echo "e2e: a shard failed (logs: $logs/{main,faults})"
fi
exit "$rc"
