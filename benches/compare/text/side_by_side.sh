#!/usr/bin/env bash
# Compares two builds of `examples/text_bench` on the same store by running them at the
# same time, one pinned to each core, then swapped: both passes share whatever else the
# (shared, noisy) machine is doing, so their ratio is steadier than runs one after the
# other. Prints p50 and mean of each pass, and its CPU times for binaries that report
# them (`cpu_ms`).
#
#   side_by_side.sh OLD_BINARY NEW_BINARY STORE QUERIES [ROUNDS]
#
# STORE is a store the binaries can read (e.g. the `hopgraph.db` that run.py leaves);
# QUERIES a queries.jsonl of corpus.py. Needs 2 cores and `taskset` (util-linux). When a
# change of format means the new binary reads a store of its own (the same corpus loaded
# by it), NEW_STORE=path gives that store to the new binary.
set -euo pipefail
a=$1 b=$2 store=$3 queries=$4 rounds=${5:-2}
new_store=${NEW_STORE:-$store}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
stats() {
    python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"ms"' in l]
ms = sorted(r["ms"] for r in rows)
print(f"p50 {ms[len(ms) // 2]:.3f} ms, mean {sum(ms) / len(ms):.3f} ms", end="")
# The query's thread CPU time, when the binary reports it (a shared host's wall times
# are mostly waiting for a core).
cpu = sorted(r["cpu_ms"] for r in rows if "cpu_ms" in r)
if cpu:
    print(f" (cpu p50 {cpu[len(cpu) // 2]:.3f}, p99 {cpu[int(0.99 * len(cpu))]:.2f},"
          f" mean {sum(cpu) / len(cpu):.3f} ms)", end="")
PY
}
for _ in $(seq "$rounds"); do
    for cores in "0 1" "1 0"; do
        set -- $cores
        taskset -c "$1" "$a" query "$store" "$queries" > "$out/a" &
        taskset -c "$2" "$b" query "$new_store" "$queries" > "$out/b" &
        wait
        echo "old (core $1): $(stats "$out/a")   new (core $2): $(stats "$out/b")"
    done
done
