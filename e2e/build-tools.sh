#!/usr/bin/env bash
# Builds, once, the pinned etcd, kube-apiserver, kube-controller-manager (only its
# ResourceQuota controller is run), kubectl and kwok binaries from
# the Go module proxy into $E2E_BIN (outside the clone, keyed by version). A
# stamp file marks a complete build, so later calls return at once.
#
# Usage: e2e/build-tools.sh [--force]
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

force=false
case ${1-} in
"") ;;
--force) force=true ;;
*) e2e_die "usage: $0 [--force]" ;;
esac

BINARIES=(etcd kube-apiserver kube-controller-manager kubectl kwok)
STAMP=$E2E_BIN/.stamp

complete() {
	local b
	[[ -f $STAMP ]] || return 1
	for b in "${BINARIES[@]}"; do [[ -x $E2E_BIN/$b ]] || return 1; done
	[[ -s $E2E_BIN/kwok-stages.yaml ]]
}

if ! $force && complete; then
	exit 0
fi
# Rebuilding replaces the binaries of a running cluster under its feet.
if $force && [[ -n $(e2e_pids "") ]]; then
	e2e_die "the e2e cluster is running; stop it first (make cluster-down)"
fi

command -v go >/dev/null || e2e_die "the Go toolchain (>= 1.26) is needed to build the e2e binaries"

mkdir -p "$E2E_CACHE/bin"
# Serialise concurrent builds (two `make cluster-up` at once); whoever waits
# finds the stamp written by the first.
exec 9>"$E2E_CACHE/bin/.build.lock"
flock 9
if ! $force && complete; then
	exit 0
fi

# Build for the machine's own toolchain only (never download another one),
# static binaries, no VCS stamping of the wrapper modules, reproducible paths.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false -trimpath"
go_version=$(go env GOVERSION)
case $go_version in
go1.2[6-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
*) e2e_die "Go >= 1.26 is needed (Kubernetes ${E2E_K8S_VERSION} declares go 1.26.0); found $go_version" ;;
esac

# Refuse to build if a wrapper module resolves to something other than the
# pinned version (e.g. go.mod edited without updating lib.sh).
check_pin() { # DIR MODULE WANT
	local got
	got=$(cd "$E2E_REPO/tools/$1" && go list -m -f '{{.Version}}' "$2")
	[[ $got == "$3" ]] || e2e_die "tools/$1 resolves $2 to $got, but lib.sh pins $3"
}
check_pin k8s k8s.io/kubernetes "$E2E_K8S_VERSION"
check_pin etcd go.etcd.io/etcd/server/v3 "$E2E_ETCD_VERSION"
check_pin kwok sigs.k8s.io/kwok "$E2E_KWOK_VERSION"

tmp=$(mktemp -d "$E2E_CACHE/bin/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Go builds share the 2 cores with everyone's Rust builds: always niced.
gobuild() { # DIR ARGS...
	local dir=$1
	shift
	(cd "$E2E_REPO/tools/$dir" && nice -n 19 go build "$@")
}

start=$SECONDS

# Without these the binaries report gitVersion "v0.0.0-master+$Format:%H$";
# anything parsing `--version` or /version would see 0.0.0.
minor=${E2E_K8S_VERSION#v1.}
minor=${minor%%.*}
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	k8s_ldflags+=" -X $pkg.gitVersion=$E2E_K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
	k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

e2e_log "building etcd $E2E_ETCD_VERSION"
gobuild etcd -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
e2e_log "building kwok $E2E_KWOK_VERSION"
gobuild kwok -ldflags "-s -w" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok
e2e_log "building kube-apiserver, kube-controller-manager and kubectl $E2E_K8S_VERSION (the long one: ~10 min cold on 2 cores)"
# `-o DIR/` writes one binary per main package.
gobuild k8s -ldflags "$k8s_ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kubectl

# kwok refuses to start without Stage definitions; take the upstream "fast"
# stages from the very module version that was built.
kwok_dir=$(cd "$E2E_REPO/tools/kwok" && go mod download -json sigs.k8s.io/kwok |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[[ -d $kwok_dir/kustomize/stage ]] || e2e_die "kwok module source not found (got '$kwok_dir')"
for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml \
	pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
	printf -- '---\n'
	cat "$kwok_dir/kustomize/stage/$f"
done >"$tmp/kwok-stages.yaml"

for b in "${BINARIES[@]}"; do [[ -x $tmp/$b ]] || e2e_die "build produced no $b"; done
"$tmp/kube-apiserver" --version | grep -qx "Kubernetes $E2E_K8S_VERSION" ||
	e2e_die "kube-apiserver reports '$("$tmp/kube-apiserver" --version)', expected $E2E_K8S_VERSION"

{
	echo "versions=$E2E_VERSION_KEY"
	echo "go=$go_version"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "build_seconds=$((SECONDS - start))"
} >"$tmp/.stamp"

rm -rf "$E2E_BIN"
mv "$tmp" "$E2E_BIN"
trap - EXIT
e2e_log "built in $((SECONDS - start))s into $E2E_BIN"
