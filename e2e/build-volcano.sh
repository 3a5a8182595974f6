#!/usr/bin/env bash
# Builds, once, a component of Volcano from the Go module proxy into its own
# version-keyed directory next to the other e2e tools, and prints the directory:
#
# - `controller-manager` (the default): the Job, PodGroup, Queue and
#   garbage-collection controllers, with the CRDs of the kinds it serves
#   (batch.volcano.sh Jobs, bus.volcano.sh Commands) taken from the very module
#   version that was built. The e2e test `volcano-job` runs it next to
#   volcano-rs: Volcano users keep Volcano's controllers and swap only the
#   scheduler, and that is what the test shows works.
# - `scheduler`: Volcano's own scheduler, which `make bench-e2e-volcano` runs
#   side by side with volcano-rs on the same cluster and load.
#
# v1.10.0 is the newest volcano.sh/volcano release the module proxy serves here
# (v1.11 and later answer 403), and every module it needs resolves there. Its
# go.mod has `replace` directives, so it is built inside a copy of its own
# module (where they apply) rather than with `go install pkg@version`.
#
# Usage: e2e/build-volcano.sh [controller-manager|scheduler] [--force]
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VOLCANO_VERSION=v1.10.0
# Bump when the way the binary is built changes, to force a rebuild.
VOLCANO_RECIPE=1

component=controller-manager
force=false
for arg in "$@"; do
	case $arg in
	controller-manager | scheduler) component=$arg ;;
	--force) force=true ;;
	*) e2e_die "usage: $0 [controller-manager|scheduler] [--force]" ;;
	esac
done

if [[ $component == controller-manager ]]; then
	build_name=volcano
	CRDS=(batch.volcano.sh_jobs.yaml bus.volcano.sh_commands.yaml)
else
	build_name=volcano-scheduler
	CRDS=()
fi
VOLCANO_BIN=$E2E_CACHE/bin/$build_name-${VOLCANO_VERSION}_r${VOLCANO_RECIPE}
BINARY=vc-$component
STAMP=$VOLCANO_BIN/.stamp

complete() {
	local c
	[[ -f $STAMP && -x $VOLCANO_BIN/$BINARY ]] || return 1
	for c in "${CRDS[@]}"; do [[ -s $VOLCANO_BIN/crds/$c ]] || return 1; done
}

e2e_build_once "$build_name" "$force" "$VOLCANO_BIN"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false -trimpath"
go_version=$(go env GOVERSION)

tmp=$(mktemp -d "$E2E_CACHE/bin/.build-volcano.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

start=$SECONDS
e2e_log "fetching volcano.sh/volcano@$VOLCANO_VERSION"
src=$(cd "$tmp" && go mod download -json "volcano.sh/volcano@$VOLCANO_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[[ -f $src/go.mod ]] || e2e_die "volcano.sh/volcano@$VOLCANO_VERSION source not found (got '$src')"
# The module cache is read-only; the build writes go.sum updates into its copy.
cp -r "$src" "$tmp/src"
chmod -R u+w "$tmp/src"

e2e_log "building Volcano's $component $VOLCANO_VERSION (a few minutes cold on 2 cores)"
pkg=volcano.sh/volcano/pkg/version
ldflags="-s -w -X $pkg.Version=$VOLCANO_VERSION -X $pkg.Built=e2e"
# Go builds share the 2 cores with everyone's Rust builds: always niced.
(cd "$tmp/src" && nice -n 19 go build -ldflags "$ldflags" -o "$tmp/$BINARY" "./cmd/$component")
[[ -x $tmp/$BINARY ]] || e2e_die "build produced no $BINARY"

mkdir -p "$tmp/crds"
for c in "${CRDS[@]}"; do
	cp "$tmp/src/config/crd/volcano/bases/$c" "$tmp/crds/$c"
done
chmod -R u+w "$tmp/src"
rm -rf "$tmp/src"

{
	echo "versions=volcano-$VOLCANO_VERSION"
	echo "component=$component"
	echo "go=$go_version"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "build_seconds=$((SECONDS - start))"
} >"$tmp/.stamp"

rm -rf "$VOLCANO_BIN"
mv "$tmp" "$VOLCANO_BIN"
trap - EXIT
e2e_log "built in $((SECONDS - start))s into $VOLCANO_BIN"
printf '%s\n' "$VOLCANO_BIN"
