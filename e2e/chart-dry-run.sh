#!/usr/bin/env bash
# Server-side dry run of the Helm chart's output against the local control plane: the rendered
# objects with default values and with every option on (charts/volcano-rs/ci/all-on-values.yaml),
# and deploy/volcano-rs.yaml, go through `kubectl apply --dry-run=server`, i.e. the apiserver's
# decoding, defaulting, validation (including the CRDs' schemas) and admission, without being
# stored.
#
# Uses the e2e cluster if one is running (and leaves it running); otherwise brings one up for
# the run and down after it (e2e/with-cluster.sh). The dry run needs the target namespaces to
# exist and the ServiceMonitor kind to be known, so it creates two namespaces and a test double
# of the ServiceMonitor CRD (charts/volcano-rs/ci/servicemonitor-crd.yaml) for real in that
# local, throw-away cluster; nothing else is written.
#
# Usage: e2e/chart-dry-run.sh
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHART=$E2E_REPO/charts/volcano-rs
RELEASE=volcano-rs
TEST_NAMESPACE=volcano-rs-chart-test
KUBE_VERSION=1.36.0

if [[ ${1-} != --in-cluster ]]; then
	"$E2E_DIR/build-helm.sh" >/dev/null # before any cluster start-up
	if [[ -n $(e2e_pids "") ]]; then
		e2e_log "chart dry run: using the running e2e cluster"
		exec "$0" --in-cluster
	fi
	exec "$E2E_DIR/with-cluster.sh" "$0" --in-cluster
fi

helm=$("$E2E_DIR/build-helm.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$helm" template "$RELEASE" "$CHART" --namespace "$TEST_NAMESPACE" --kube-version "$KUBE_VERSION" \
	>"$tmp/defaults.yaml"
"$helm" template "$RELEASE" "$CHART" --namespace "$TEST_NAMESPACE" --kube-version "$KUBE_VERSION" \
	-f "$CHART/ci/all-on-values.yaml" --api-versions monitoring.coreos.com/v1/ServiceMonitor >"$tmp/all-on.yaml"

for ns in "$TEST_NAMESPACE" volcano-system; do
	e2e_kubectl get namespace "$ns" >/dev/null 2>&1 || e2e_kubectl create namespace "$ns" >/dev/null
done
# The real CRD, if a Prometheus Operator's is installed, is left alone.
if ! e2e_kubectl get crd servicemonitors.monitoring.coreos.com >/dev/null 2>&1; then
	e2e_kubectl apply -f "$CHART/ci/servicemonitor-crd.yaml" >/dev/null
fi
e2e_kubectl wait --for condition=Established --timeout=60s crd/servicemonitors.monitoring.coreos.com >/dev/null

status=0
for f in "$tmp/defaults.yaml" "$tmp/all-on.yaml" "$E2E_REPO/deploy/volcano-rs.yaml"; do
	name=${f#"$E2E_REPO"/}
	name=${name#"$tmp"/}
	if out=$(e2e_kubectl apply --dry-run=server -f "$f" 2>&1); then
		e2e_log "chart dry run: $name: $(grep -c . <<<"$out") objects accepted by the server"
	else
		printf '%s\n' "$out" >&2
		e2e_log "chart dry run: $name: refused by the server"
		status=1
	fi
done
exit "$status"
