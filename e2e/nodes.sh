#!/usr/bin/env bash
# Creates fake nodes for the local e2e cluster: kwok-node-0 .. kwok-node-<COUNT-1>,
# each with the given allocatable = capacity, labelled so that kwok manages
# them (kwok then marks them Ready and runs every pod bound to them). Waits
# until all of them are Ready. Idempotent: existing nodes of those names are
# updated to the given size; nodes beyond COUNT are left alone.
#
# Usage: e2e/nodes.sh COUNT CPU MEMORY [PODS]    e.g. e2e/nodes.sh 100 32 256Gi
#        e2e/nodes.sh --delete                   deletes every kwok-managed node
# Environment:
#   E2E_NODE_PREFIX  name prefix (default kwok-node-)
#   E2E_NODE_LABELS  extra labels, comma-separated k=v (e.g. volcano.sh/nodegroup-name=a)
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { e2e_die "usage: $0 COUNT CPU MEMORY [PODS]  |  $0 --delete"; }

[[ -r $E2E_KUBECONFIG ]] || e2e_die "no cluster running (start it with: make cluster-up)"
selector=$E2E_KWOK_LABEL_KEY=$E2E_KWOK_LABEL_VALUE

if [[ ${1-} == --delete ]]; then
	(($# == 1)) || usage
	# One DELETE-collection request: `kubectl delete nodes -l` deletes them one
	# by one (minutes for a thousand nodes). Nodes have no finalizers here, so
	# they are gone when it returns.
	e2e_kubectl delete --raw "/api/v1/nodes?labelSelector=$E2E_KWOK_LABEL_KEY%3D$E2E_KWOK_LABEL_VALUE" >/dev/null
	e2e_log "deleted all nodes labelled $selector (pods bound to them are left as they are)"
	exit 0
fi

(($# == 3 || $# == 4)) || usage
count=$1 cpu=$2 memory=$3 pods=${4:-110}
prefix=${E2E_NODE_PREFIX:-kwok-node-}

# Reject obviously wrong input here with a clear message; the apiserver
# validates the quantities fully.
quantity='^[0-9]+(\.[0-9]+)?([numkMGTPE]|[KMGTPE]i)?$'
if ! [[ $count =~ ^[0-9]{1,6}$ ]] || ((10#$count == 0)); then
	e2e_die "COUNT must be a positive integer (at most 999999), got '$count'"
fi
count=$((10#$count))
[[ $cpu =~ $quantity ]] || e2e_die "CPU must be a quantity such as 32 or 500m, got '$cpu'"
[[ $memory =~ $quantity ]] || e2e_die "MEMORY must be a quantity such as 256Gi, got '$memory'"
[[ $pods =~ ^[0-9]+$ ]] || e2e_die "PODS must be an integer, got '$pods'"
[[ $prefix =~ ^[a-z0-9]([-a-z0-9.]*)?$ ]] || e2e_die "E2E_NODE_PREFIX '$prefix' is not a valid name prefix"

extra_labels=
if [[ -n ${E2E_NODE_LABELS-} ]]; then
	IFS=, read -ra pairs <<<"$E2E_NODE_LABELS"
	for pair in "${pairs[@]}"; do
		[[ $pair =~ ^([A-Za-z0-9./_-]+)=([A-Za-z0-9._-]*)$ ]] ||
			e2e_die "E2E_NODE_LABELS entry '$pair' is not key=value"
		extra_labels+="    ${BASH_REMATCH[1]}: \"${BASH_REMATCH[2]}\""$'\n'
	done
fi

manifest=$(mktemp)
trap 'rm -f "$manifest"' EXIT
for ((i = 0; i < count; i++)); do
	name=$prefix$i
	# The status given at creation is stored as is (nodes self-register that
	# way), so allocatable/capacity go in the same object; kwok's
	# node-initialize stage keeps them and adds the Ready condition. No
	# not-ready taint: the TaintNodesByCondition admission plugin is off.
	cat <<-EOF
		---
		apiVersion: v1
		kind: Node
		metadata:
		  name: $name
		  labels:
		    $E2E_KWOK_LABEL_KEY: $E2E_KWOK_LABEL_VALUE
		    kubernetes.io/hostname: $name
		    kubernetes.io/os: linux
		    kubernetes.io/arch: amd64
		${extra_labels}  annotations:
		    kwok.x-k8s.io/node: fake
		    node.alpha.kubernetes.io/ttl: "0"
		status:
		  allocatable: {cpu: "$cpu", memory: "$memory", pods: "$pods"}
		  capacity: {cpu: "$cpu", memory: "$memory", pods: "$pods"}
	EOF
done >"$manifest"

apply() {
	e2e_kubectl apply --server-side --force-conflicts --field-manager=volcano-rs-e2e "$@" \
		-f "$manifest" >/dev/null
}
# The first apply creates missing nodes (with their status); the second sets
# the status of nodes that already existed, since updates of the main resource
# ignore status.
apply
apply --subresource=status

# Wait with one LIST per poll (`kubectl wait` watches node by node, ~0.1 s
# each). Generous timeout: kwok initialises nodes in parallel, but a 2-core
# machine shared with builds can be slow.
ready_count() {
	e2e_kubectl get nodes -l "$selector" -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
		awk -v prefix="$prefix" -v count="$count" '
			index($1, prefix) == 1 && $2 == "True" {
				i = substr($1, length(prefix) + 1)
				if (i ~ /^(0|[1-9][0-9]*)$/ && i + 0 < count) n++
			}
			END { print n + 0 }'
}
timeout=$((60 + count / 20))
deadline=$((SECONDS + timeout))
until (($(ready_count) == count)); do
	((SECONDS < deadline)) || e2e_die "only $(ready_count) of $count nodes Ready after ${timeout}s (kwok log: $E2E_RUN/logs/kwok.log)"
	sleep 0.2
done
e2e_log "$count nodes ready: $prefix{0..$((count - 1))} (cpu $cpu, memory $memory, pods $pods)"
