#!/usr/bin/env bash
# Stops the local control plane started by cluster-up.sh and removes its state
# (etcd data on tmpfs, PKI, kubeconfig). Idempotent: with nothing running it
# only cleans up. Finds the daemons by the marker in their environment (see
# e2e_pids in lib.sh), so it also catches ones whose run directory is gone.
# Logs are kept in the run directory for post-mortems until the next start.
#
# Usage: e2e/cluster-down.sh
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$E2E_RUN"
exec 8>"$E2E_RUN/.lock"
flock 8

# stop NAME: SIGTERM to each daemon's process group (each is a session leader,
# so its group holds whatever it spawned), then SIGKILL after 15 s.
stop() {
	local name=$1 pids pid deadline
	pids=$(e2e_pids "$name")
	[[ -n $pids ]] || return 0
	e2e_log "stopping ${name:-leftover processes} (${pids//$'\n'/ })"
	for pid in $pids; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
	deadline=$((SECONDS + 15))
	while [[ -n $(e2e_pids "$name") ]] && ((SECONDS < deadline)); do sleep 0.2; done
	pids=$(e2e_pids "$name")
	if [[ -n $pids ]]; then
		e2e_log "${name:-leftover processes} did not stop in 15s; killing"
		for pid in $pids; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
		# Reaping is up to init; just wait until the kernel has released them.
		deadline=$((SECONDS + 5))
		while [[ -n $(e2e_pids "$name") ]] && ((SECONDS < deadline)); do sleep 0.2; done
	fi
}

# Clients first, storage last, so that nothing logs errors about a vanished
# backend on the way down.
stop kube-controller-manager
stop kwok
stop kube-apiserver
stop etcd
# Anything else carrying the marker (should be nothing).
stop ""

left=$(e2e_pids)
[[ -z $left ]] || e2e_die "processes still running: ${left//$'\n'/ }"

rm -rf "$E2E_ETCD_DATA" "$E2E_RUN/pki" "$E2E_RUN/admin.token" "$E2E_KUBECONFIG" "$E2E_RUN/kwok.yaml"

for port in "$E2E_ETCD_CLIENT_PORT" "$E2E_ETCD_PEER_PORT" "$E2E_APISERVER_PORT" "$E2E_KWOK_PORT"; do
	if e2e_port_in_use "$port"; then
		e2e_log "warning: port $port is still bound by a process that is not ours"
	fi
done
e2e_log "cluster stopped"
