# shellcheck shell=bash
# Shared settings and helpers for the local e2e control plane.
# Sourced by the scripts in this directory and by env.sh; it sets variables and
# defines functions only (no `set -e`, no side effects), so sourcing it from an
# interactive shell is safe.

# The variables are used by the scripts that source this file.
# shellcheck disable=SC2034

# Pinned versions. tools/*/go.mod must resolve to exactly these; build-tools.sh
# checks that with `go list -m` before building.
E2E_K8S_VERSION=v1.36.3
E2E_ETCD_VERSION=v3.6.14
E2E_KWOK_VERSION=v0.8.0
# Bump when the way the binaries are built changes, to force a rebuild.
E2E_RECIPE=2

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_REPO=$(cd "$E2E_DIR/.." && pwd)
E2E_CACHE=${VOLCANO_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volcano-rs}
E2E_VERSION_KEY="k8s-${E2E_K8S_VERSION}_etcd-${E2E_ETCD_VERSION}_kwok-${E2E_KWOK_VERSION}_r${E2E_RECIPE}"
E2E_BIN=$E2E_CACHE/bin/$E2E_VERSION_KEY
E2E_RUN=${VOLCANO_E2E_RUN_DIR:-$E2E_CACHE/run}

# Loopback ports; the defaults avoid the usual 2379/2380/6443.
E2E_ETCD_CLIENT_PORT=${VOLCANO_E2E_ETCD_PORT:-23790}
E2E_ETCD_PEER_PORT=${VOLCANO_E2E_ETCD_PEER_PORT:-23800}
E2E_APISERVER_PORT=${VOLCANO_E2E_APISERVER_PORT:-16443}
# kwok's own HTTP server, used only for its /healthz.
E2E_KWOK_PORT=${VOLCANO_E2E_KWOK_PORT:-16447}
# etcd lives on tmpfs: it is throw-away state and fsync-free writes keep the
# apiserver fast on a 2-core machine.
E2E_ETCD_DATA=${VOLCANO_E2E_ETCD_DATA:-/dev/shm/volcano-rs-etcd-$(id -u)-$E2E_ETCD_CLIENT_PORT}

E2E_SERVER=https://127.0.0.1:$E2E_APISERVER_PORT
E2E_KUBECONFIG=$E2E_RUN/kubeconfig
# Nodes carrying this label are the ones kwok simulates.
E2E_KWOK_LABEL_KEY="type"
E2E_KWOK_LABEL_VALUE="kwok"

e2e_log() { printf '[e2e] %s\n' "$*" >&2; }
e2e_die() {
	printf '[e2e] error: %s\n' "$*" >&2
	exit 1
}

# kubectl built from the same release as the apiserver (the machine's one, if
# any, may be outside the supported version skew).
e2e_kubectl() { "$E2E_BIN/kubectl" --kubeconfig "$E2E_KUBECONFIG" "$@"; }

# Every daemon cluster-up starts carries this variable in its environment; it
# identifies "our" processes exactly (a pid file alone could point at a reused
# pid), and still finds them if the run directory was deleted under them.
E2E_MARKER=VOLCANO_E2E_CLUSTER=$E2E_RUN

# e2e_pids [NAME]: pids of this cluster's daemons (of one component if NAME is
# given), one per line.
e2e_pids() {
	local dir comm
	for dir in /proc/[0-9]*; do
		# environ is readable only for our own processes; others are skipped.
		grep -qzxF "$E2E_MARKER" "$dir/environ" 2>/dev/null || continue
		if [[ -n ${1-} ]]; then
			read -r comm 2>/dev/null <"$dir/comm" || continue
			# comm is the executable name cut to 15 characters.
			[[ $comm == "${1:0:15}" ]] || continue
		fi
		printf '%s\n' "${dir#/proc/}"
	done
}

# e2e_port_in_use PORT: true when something listens on 127.0.0.1:PORT or on
# the wildcard address.
e2e_port_in_use() {
	ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# e2e_build_once NAME FORCE RESULT: the start of a cached build script that defines
# `complete` (true when the cached build is whole). Unless FORCE is true, prints RESULT
# and exits when the build is complete, before and after taking the build's own lock
# (fd 9), so that callers racing for one build wait for the first and then reuse it;
# otherwise returns holding the lock, with the Go toolchain checked.
e2e_build_once() {
	local name=$1 force=$2 result=$3
	if ! $force && complete; then
		printf '%s\n' "$result"
		exit 0
	fi
	command -v go >/dev/null || e2e_die "the Go toolchain (>= 1.26) is needed to build $name"
	mkdir -p "$E2E_CACHE/bin"
	# Own lock: one build neither waits for nor blocks the builds of other tools.
	exec 9>"$E2E_CACHE/bin/.build-$name.lock"
	flock 9
	if ! $force && complete; then
		printf '%s\n' "$result"
		exit 0
	fi
}
