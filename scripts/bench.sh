#!/usr/bin/env bash
# Runs the session benchmark (docs/benchmarks.md), each size in its own process (so peak memory
# is per size): the uniform workload on one core and on all cores, then the mixed workload on
# one core, then the steady workload (a new single-pod job per session among running ones) on
# one core, and once more at the end-to-end benchmark's size with the caches emptied before each
# session, as a daemon's are (`--evict-mib`). Prints one JSON line per run. BENCH_MIXED_MAX caps the mixed sizes by pod count
# (default 100000: every size; the largest needs about 0.9 GiB, see docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/examples/bench_session
[ -x "$bin" ] || cargo build --release -p volcano-rs --example bench_session
sizes=("1000 10000 100" "5000 50000 500" "10000 100000 1000")
for threads in 1 "$(nproc)"; do
  for size in "${sizes[@]}"; do
    set -- $size
    RAYON_NUM_THREADS=$threads "$bin" --nodes "$1" --pods "$2" --jobs "$3"
  done
done
for size in "1000 10000" "3000 30000" "5000 50000" "10000 100000"; do
  set -- $size
  [ "$2" -le "${BENCH_MIXED_MAX:-100000}" ] || continue
  RAYON_NUM_THREADS=1 "$bin" --nodes "$1" --pods "$2" --workload mixed
done
for size in "500 1200" "500 5000" "2000 20000"; do
  set -- $size
  RAYON_NUM_THREADS=1 "$bin" --nodes "$1" --pods "$2" --workload steady --sessions 200
done
RAYON_NUM_THREADS=1 "$bin" --nodes 500 --pods 1200 --workload steady --sessions 200 --evict-mib 64
