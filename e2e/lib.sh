# shellcheck shell=bash
# Shared settings and helpers for the local e2e control plane.
# Sourced by the scripts in this directory and by env.sh; it sets variables and
# defines functions only (no `set -e`, no side effects), so sourcing it from an
# interactive shell is safe.

# Pinned versions. tools/*/go.mod must resolve to exactly these; build-tools.sh
# checks that with `go list -m` before building.
E2E_K8S_VERSION=v1.36.3
E2E_ETCD_VERSION=v3.6.14
E2E_KWOK_VERSION=v0.8.0
# Bump when the way the binaries are built changes, to force a rebuild.
E2E_RECIPE=1

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
# etcd lives on tmpfs: it is throw-away state and fsync-free writes keep the
# apiserver fast on a 2-core machine.
E2E_ETCD_DATA=${VOLCANO_E2E_ETCD_DATA:-/dev/shm/volcano-rs-etcd-$(id -u)-$E2E_ETCD_CLIENT_PORT}

E2E_SERVER=https://127.0.0.1:$E2E_APISERVER_PORT
E2E_KUBECONFIG=$E2E_RUN/kubeconfig
# Nodes carrying this label are the ones kwok simulates.
E2E_KWOK_LABEL_KEY=type
E2E_KWOK_LABEL_VALUE=kwok

# The processes cluster-up starts, in start order.
E2E_COMPONENTS=(etcd kube-apiserver kwok)

e2e_log() { printf '[e2e] %s\n' "$*" >&2; }
e2e_die() {
	printf '[e2e] error: %s\n' "$*" >&2
	exit 1
}

# kubectl built from the same release as the apiserver (the machine's one, if
# any, may be outside the supported version skew).
e2e_kubectl() { "$E2E_BIN/kubectl" --kubeconfig "$E2E_KUBECONFIG" "$@"; }

# e2e_pid NAME: the recorded pid of a component if that process is still ours
# and alive; prints nothing otherwise. The executable check guards against a
# stale pid file whose pid was reused by an unrelated process.
e2e_pid() {
	local pidfile=$E2E_RUN/$1.pid pid exe
	[[ -r $pidfile ]] || return 0
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 0
	[[ $exe == "$E2E_BIN/$1" ]] && printf '%s\n' "$pid"
	return 0
}

# e2e_port_in_use PORT: true when something listens on 127.0.0.1:PORT or on
# the wildcard address.
e2e_port_in_use() {
	ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# e2e_wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.2 s.
e2e_wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || {
			e2e_log "timed out after ${timeout}s waiting for $what"
			return 1
		}
		sleep 0.2
	done
}
