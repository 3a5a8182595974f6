#!/usr/bin/env bash
# Runs the standard session benchmark sizes, each in its own process (so peak memory is per
# size), on one core and on all cores. Prints one JSON line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/examples/bench_session
[ -x "$bin" ] || cargo build --release -p volcano-rs --example bench_session
for threads in 1 "$(nproc)"; do
  for size in "1000 10000 100" "5000 50000 500" "10000 100000 1000"; do
    set -- $size
    RAYON_NUM_THREADS=$threads "$bin" --nodes "$1" --pods "$2" --jobs "$3"
  done
done
