#!/usr/bin/env bash
# Brings the local control plane up, runs COMMAND with KUBECONFIG (and PATH,
# for the matching kubectl) pointing at it, and always brings it down again,
# whether COMMAND succeeds, fails or is interrupted. COMMAND runs in its own
# process group, which is killed afterwards too, so nothing it spawned (e.g. a
# scheduler under test) outlives the run. Exits with COMMAND's status.
#
# Usage: e2e/with-cluster.sh COMMAND [ARGS...]
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# > 0)) || e2e_die "usage: $0 COMMAND [ARGS...]"

child=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $child ]]; then
		# The command's group may outlive the command itself (background
		# helpers); TERM the whole group, then KILL what is left.
		kill -TERM -- "-$child" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 -- "-$child" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$child" 2>/dev/null || true
	fi
	"$E2E_DIR/cluster-down.sh" || rc=1
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$E2E_DIR/cluster-up.sh" >/dev/null
# shellcheck source=e2e/env.sh
source "$E2E_DIR/env.sh"

# setsid makes COMMAND the leader of a new process group (and session) whose
# id is its pid. A backgrounded child of a non-interactive shell is never a
# group leader, so setsid does not fork and $! is COMMAND's own pid.
setsid "$@" &
child=$!
set +e
wait "$child"
rc=$?
set -e
exit "$rc"
