#!/usr/bin/env bash
# Kills the local control plane's kube-apiserver with SIGKILL, keeps it down for SECONDS, then
# starts it again with the very same command line and waits until it is ready. For fault tests
# (crates/e2e/src/tests/faults.rs); prints the seconds since the epoch at which it was ready.
#
# Usage: e2e/apiserver-restart.sh SECONDS
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

down=${1:?usage: $0 SECONDS}
pid=$(e2e_pids kube-apiserver | head -n 1)
[[ -n $pid ]] || e2e_die "no kube-apiserver of the e2e cluster is running"
# The command line as it was started (NUL-separated), to start it again identically.
mapfile -d '' -t cmd <"/proc/$pid/cmdline"
((${#cmd[@]} > 0)) || e2e_die "cannot read the command line of kube-apiserver ($pid)"
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
sleep "$down"

LOGS=$E2E_RUN/logs
env "$E2E_MARKER" setsid "${cmd[@]}" </dev/null >>"$LOGS/kube-apiserver.log" 2>&1 &
token=$(cat "$E2E_RUN/admin.token")
deadline=$((SECONDS + 120))
until [[ $(curl -fsS --max-time 2 --cacert "$E2E_RUN/pki/ca.crt" -H "Authorization: Bearer $token" \
	"$E2E_SERVER/readyz" 2>/dev/null) == ok ]]; do
	((SECONDS < deadline)) || e2e_die "kube-apiserver not ready 120 s after the restart"
	sleep 0.05
done
date +%s.%N
