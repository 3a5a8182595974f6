#!/usr/bin/env bash
# Builds, once, Volcano's controller-manager (the Job, PodGroup, Queue and
# garbage-collection controllers) from the Go module proxy into its own
# version-keyed directory next to the other e2e tools, with the CRDs of the
# kinds it serves (batch.volcano.sh Jobs, bus.volcano.sh Commands) taken from
# the very module version that was built. Prints the directory.
#
# The e2e test `volcano-job` runs it next to volcano-rs: Volcano users keep
# Volcano's controllers and swap only the scheduler, and that is what the test
# shows works.
#
# v1.10.0 is the newest volcano.sh/volcano release the module proxy serves here
# (v1.11 and later answer 403), and every module it needs resolves there. Its
# go.mod has `replace` directives, so it is built inside a copy of its own
# module (where they apply) rather than with `go install pkg@version`.
#
# Usage: e2e/build-volcano.sh [--force]
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VOLCANO_VERSION=v1.10.0
# Bump when the way the binary is built changes, to force a rebuild.
VOLCANO_RECIPE=1
VOLCANO_BIN=$E2E_CACHE/bin/volcano-${VOLCANO_VERSION}_r${VOLCANO_RECIPE}
STAMP=$VOLCANO_BIN/.stamp
CRDS=(batch.volcano.sh_jobs.yaml bus.volcano.sh_commands.yaml)

force=false
case ${1-} in
"") ;;
--force) force=true ;;
*) e2e_die "usage: $0 [--force]" ;;
esac

complete() {
	local c
	[[ -f $STAMP && -x $VOLCANO_BIN/vc-controller-manager ]] || return 1
	for c in "${CRDS[@]}"; do [[ -s $VOLCANO_BIN/crds/$c ]] || return 1; done
}

e2e_build_once volcano "$force" "$VOLCANO_BIN"

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

e2e_log "building Volcano's controller-manager $VOLCANO_VERSION (a few minutes cold on 2 cores)"
pkg=volcano.sh/volcano/pkg/version
ldflags="-s -w -X $pkg.Version=$VOLCANO_VERSION -X $pkg.Built=e2e"
# Go builds share the 2 cores with everyone's Rust builds: always niced.
(cd "$tmp/src" && nice -n 19 go build -ldflags "$ldflags" -o "$tmp/vc-controller-manager" ./cmd/controller-manager)
[[ -x $tmp/vc-controller-manager ]] || e2e_die "build produced no vc-controller-manager"

mkdir -p "$tmp/crds"
for c in "${CRDS[@]}"; do
	cp "$tmp/src/config/crd/volcano/bases/$c" "$tmp/crds/$c"
done
chmod -R u+w "$tmp/src"
rm -rf "$tmp/src"

{
	echo "versions=volcano-$VOLCANO_VERSION"
	echo "go=$go_version"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "build_seconds=$((SECONDS - start))"
} >"$tmp/.stamp"

rm -rf "$VOLCANO_BIN"
mv "$tmp" "$VOLCANO_BIN"
trap - EXIT
e2e_log "built in $((SECONDS - start))s into $VOLCANO_BIN"
printf '%s\n' "$VOLCANO_BIN"
