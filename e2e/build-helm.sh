#!/usr/bin/env bash
# Builds, once, the pinned helm v3 binary from the Go module proxy into its own
# version-keyed directory next to the e2e tools ($E2E_CACHE/bin/<key>/), and
# prints the binary's path. A stamp file marks a complete build, so later calls
# return at once. Kept apart from build-tools.sh so that linting the chart does
# not need the (much longer) control-plane build, and vice versa.
#
# Usage: e2e/build-helm.sh [--force]
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HELM_VERSION=v3.21.4
# Bump when the way the binary is built changes, to force a rebuild.
HELM_RECIPE=1
HELM_BIN=$E2E_CACHE/bin/helm-${HELM_VERSION}_r${HELM_RECIPE}
STAMP=$HELM_BIN/.stamp

force=false
case ${1-} in
"") ;;
--force) force=true ;;
*) e2e_die "usage: $0 [--force]" ;;
esac

complete() { [[ -f $STAMP && -x $HELM_BIN/helm ]]; }

e2e_build_once helm "$force" "$HELM_BIN/helm"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false -trimpath"
go_version=$(go env GOVERSION)
case $go_version in
go1.2[6-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
*) e2e_die "Go >= 1.26 is needed (helm $HELM_VERSION declares go 1.26.0); found $go_version" ;;
esac

tmp=$(mktemp -d "$E2E_CACHE/bin/.build-helm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# helm's go.mod has no replace directives, so `go install pkg@version` works
# and needs no wrapper module. The -X flags are the ones helm's own Makefile
# sets: without them `helm version` prints "v3.21" and .Capabilities.KubeVersion
# defaults to v1.20.0 (its client-go is v0.36, i.e. Kubernetes 1.36).
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
	ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=36"
done

start=$SECONDS
e2e_log "building helm $HELM_VERSION"
# Go builds share the 2 cores with everyone's Rust builds: always niced.
GOBIN=$tmp nice -n 19 go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"

[[ -x $tmp/helm ]] || e2e_die "build produced no helm"
got=$("$tmp/helm" version --template '{{.Version}}')
[[ $got == "$HELM_VERSION" ]] || e2e_die "helm reports '$got', expected $HELM_VERSION"

{
	echo "versions=helm-$HELM_VERSION"
	echo "go=$go_version"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "build_seconds=$((SECONDS - start))"
} >"$tmp/.stamp"

rm -rf "$HELM_BIN"
mv "$tmp" "$HELM_BIN"
trap - EXIT
e2e_log "built in $((SECONDS - start))s into $HELM_BIN"
printf '%s\n' "$HELM_BIN/helm"
