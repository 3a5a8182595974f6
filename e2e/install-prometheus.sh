#!/usr/bin/env bash
# Installs (once, cached outside the clone) the Prometheus server from Debian's
# `prometheus` package, for the e2e test of the `usage` plugin's metrics source:
# the package is downloaded with `apt-get download` (no root, nothing installed
# system-wide) and only its `prometheus` binary is kept, at
#   ~/.cache/volcano-rs/prometheus/<version>/prometheus
# with a `current` symlink next to it. Prints the binary's path.
#
# Usage: e2e/install-prometheus.sh
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir=$E2E_CACHE/prometheus
if [[ -x $dir/current/prometheus ]]; then
	echo "$dir/current/prometheus"
	exit 0
fi
command -v apt-get >/dev/null || e2e_die "apt-get is needed to fetch Debian's prometheus package"
command -v dpkg-deb >/dev/null || e2e_die "dpkg-deb is needed to unpack Debian's prometheus package"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A machine whose package lists are missing or stale gets them refreshed once.
if ! (cd "$work" && apt-get download prometheus >/dev/null 2>&1); then
	e2e_log "apt-get download prometheus failed; refreshing the package lists"
	apt-get update >/dev/null 2>&1 || e2e_die "apt-get update failed (run as root, or install prometheus yourself)"
	(cd "$work" && apt-get download prometheus >/dev/null 2>&1) || e2e_die "apt-get download prometheus failed"
fi
deb=$(ls "$work"/prometheus_*.deb)
version=$(dpkg-deb -f "$deb" Version)
dpkg-deb -x "$deb" "$work/root"
mkdir -p "$dir/$version"
install -m 0755 "$work/root/usr/bin/prometheus" "$dir/$version/prometheus"
ln -sfn "$version" "$dir/current"
e2e_log "installed Prometheus $version from Debian's package"
echo "$dir/current/prometheus"
