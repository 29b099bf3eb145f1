#!/usr/bin/env bash
# One command for the comparison benchmark: bash benches/compare/run.sh [--quick]
#   --quick   kron-16 only (a few minutes)
#   default   kron-16, kron-20 and the 1M-node agent-memory graph (an hour or more)
# Extra arguments after the mode go to compare.py run (e.g. --systems hopgraph,kuzu,
# --reuse-loads). Environment: GEN_GRAPH, BENCH_BUDGET_S, BENCH_GRACE_S, BENCH_PAIRS,
# BENCH_DATA, CARGO_TARGET_DIR, PYTHON (interpreter for the venv, default python3).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CMDLINE="bash benches/compare/run.sh $*"

MODE=full
if [[ "${1:-}" == "--quick" ]]; then MODE=quick; shift; fi
if [[ "$MODE" == quick ]]; then DATASETS=kron16; else DATASETS=kron16,kron20,mem1m; fi

export GEN_GRAPH="${GEN_GRAPH:-$HERE/../../../shared/workloads/gen_graph.py}"
if [[ ! -f "$GEN_GRAPH" ]]; then
  echo "error: gen_graph.py not found at $GEN_GRAPH" >&2
  echo "Set GEN_GRAPH=/path/to/gen_graph.py (shared/workloads/gen_graph.py beside the repo)." >&2
  exit 1
fi

# 1. the pinned virtualenv (re-installed when requirements.txt changes)
VENV="$HERE/.venv"
PY="${PYTHON:-python3}"
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PY" -m venv "$VENV"
fi
if ! cmp -s "$HERE/requirements.txt" "$VENV/.requirements.installed"; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
  cp "$HERE/requirements.txt" "$VENV/.requirements.installed"
fi

# 2. hopgraph, release build of the CLI, copied so that a rebuild while the run goes on
#    (an hour for the full run) cannot change the binary being measured
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build --release --bin hopgraph)
HOPGRAPH="$TARGET/release/hopgraph-compare-run"
cp "$TARGET/release/hopgraph" "$HOPGRAPH"

# 3. generate, load, query, report
export BENCH_COMMAND="$CMDLINE"
exec "$VENV/bin/python" "$HERE/compare.py" run --hopgraph "$HOPGRAPH" --datasets "$DATASETS" --name "$MODE" "$@"
