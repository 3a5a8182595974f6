#!/usr/bin/env bash
# `make chart-lint`: checks the Helm chart without a cluster.
#   1. the chart's CRDs and default scheduler configuration are identical to deploy/crds/ and
#      config/volcano-chart.conf (the chart carries copies: Helm reads only files in the chart);
#   2. helm lint --strict with the default values and with ci/all-on-values.yaml;
#   3. helm template with both, and scripts/chart-check.py on the output (what the Deployment,
#      RBAC, PDB and Service must be);
#   4. values that must be refused are refused (schema, replicas without leader election).
# The renders are left in $OUT for e2e/chart-dry-run.sh. The server-side dry run is
# e2e/chart-dry-run.sh (part of `make chart-lint` through the Makefile).
#
# Usage: scripts/chart-lint.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CHART=charts/volcano-rs
ALL_ON=$CHART/ci/all-on-values.yaml
RELEASE=volcano-rs
NAMESPACE=volcano-rs-chart-test
KUBE_VERSION=1.36.0
OUT=${CHART_LINT_OUT:-$(pwd)/${CARGO_TARGET_DIR:-target}/chart-lint}

fail() {
	printf 'chart-lint: %s\n' "$*" >&2
	exit 1
}
step() { printf 'chart-lint: %s\n' "$*" >&2; }

helm=$(./e2e/build-helm.sh)
mkdir -p "$OUT"

step "chart copies are identical to their sources"
for src in deploy/crds/*.yaml; do
	cmp -s "$src" "$CHART/crds/$(basename "$src")" ||
		fail "$CHART/crds/$(basename "$src") differs from $src (copy it: cp deploy/crds/*.yaml $CHART/crds/)"
done
for copy in "$CHART"/crds/*.yaml; do
	[[ -f deploy/crds/$(basename "$copy") ]] || fail "$copy has no source in deploy/crds/"
done
cmp -s config/volcano-chart.conf "$CHART/files/volcano-scheduler.conf" ||
	fail "$CHART/files/volcano-scheduler.conf differs from config/volcano-chart.conf"

step "helm lint --strict (defaults, all options on)"
"$helm" lint --strict --kube-version "$KUBE_VERSION" "$CHART" >/dev/null ||
	"$helm" lint --strict --kube-version "$KUBE_VERSION" "$CHART" >&2 || fail "helm lint (defaults)"
"$helm" lint --strict --kube-version "$KUBE_VERSION" -f "$ALL_ON" "$CHART" >/dev/null ||
	"$helm" lint --strict --kube-version "$KUBE_VERSION" -f "$ALL_ON" "$CHART" >&2 || fail "helm lint (all on)"

step "helm template (defaults, all options on) and checks of the output"
render() { # OUTFILE HELM-ARGS...
	local out=$1
	shift
	"$helm" template "$RELEASE" "$CHART" --namespace "$NAMESPACE" --kube-version "$KUBE_VERSION" \
		"$@" >"$out" || fail "helm template $*"
}
render "$OUT/defaults.yaml"
# As on a cluster with the Prometheus Operator (the ServiceMonitor is rendered only then).
render "$OUT/all-on.yaml" -f "$ALL_ON" --api-versions monitoring.coreos.com/v1/ServiceMonitor
python3 scripts/chart-check.py defaults "$OUT/defaults.yaml" "$NAMESPACE" || fail "defaults render"
python3 scripts/chart-check.py all-on "$OUT/all-on.yaml" "$NAMESPACE" || fail "all-on render"

step "values that must be refused are refused"
refused() { # WHY HELM-ARGS...
	local why=$1
	shift
	if "$helm" template "$RELEASE" "$CHART" --kube-version "$KUBE_VERSION" "$@" >/dev/null 2>&1; then
		fail "accepted $*, which should be refused ($why)"
	fi
}
refused "unknown key" --set replicasCount=2
refused "zero replicas" --set replicaCount=0
refused "duration without unit" --set schedulePeriod=1
refused "log format" --set logging.format=xml
refused "node selector entry without a colon" --set 'nodeSelectorLabels[0]=pool'
refused "several replicas without leader election" --set leaderElection.enabled=false
refused "no ServiceAccount name" --set serviceAccount.create=false
# ...and the single-replica form of the last two is accepted.
"$helm" template "$RELEASE" "$CHART" --kube-version "$KUBE_VERSION" \
	--set replicaCount=1,leaderElection.enabled=false >/dev/null ||
	fail "one replica without leader election should be accepted"

step "ok (renders in $OUT)"
