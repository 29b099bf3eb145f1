#!/usr/bin/env bash
# The main job in one command: build the hopgraph Python package (the library plus the
# `hopgraph` and `hopgraph-mcp` commands) into a virtual environment (.venv), import the
# sample agent-memory graph, and answer a path query, a search and a lookup from the
# command line and from Python. Then it prints what to try next.
#
# Needs: the Rust toolchain and Python >= 3.9 with venv. A first build compiles the
# workspace in release mode (about 2 minutes on 2 cores; cargo shows its progress).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HOPGRAPH_VENV:-.venv}
shown=$venv                                          # as given, for the messages
case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac # absolute, for PATH below
db=${HOPGRAPH_DEMO_DB:-target/demo-memory.hg}
sample=examples/memory-2k-text
step() { printf '\n== %s\n' "$*"; }

step "1/5 build the package (wheel) and install it into $shown"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check maturin
rm -rf target/wheels
"$venv/bin/maturin" build --manifest-path crates/hopgraph-py/Cargo.toml --out target/wheels
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall target/wheels/hopgraph-*.whl
export PATH="$venv/bin:$PATH"
echo "installed: $(command -v hopgraph) and $(command -v hopgraph-mcp)"

step "2/5 import the sample ($sample.*: 2,000 memories with titles and text, 7,914 typed edges)"
rm -rf "$db"
hopgraph import --db "$db" "$sample.nodes.jsonl" "$sample.edges.tsv"

step "3/5 a shortest path (all edge types, either direction, at most 10 hops)"
read -r from to < "$sample.pairs.tsv"
hopgraph path --db "$db" "$from" "$to"

step "4/5 full-text search, one memory, and pairs joined by caused_by edges only"
hopgraph search --db "$db" "pooled connections" --limit 3
hopgraph get --db "$db" deploy-billing-api-2-3
hopgraph path --db "$db" --pairs "$sample.pairs-walk-caused_by.tsv" --type caused_by --max-hops 4 | head -n 2

step "5/5 the same database from Python"
python - "$db" "$from" "$to" <<'PY'
import sys, hopgraph
db_dir, a, b = sys.argv[1:]
with hopgraph.open(db_dir, read_only=True) as db:
    print(db.snapshot())
    print(db.shortest_path(a, b))
    print(db.neighbors(a)[:3])
    print(db.search("pooled connections", limit=2))
PY

cat <<EOF

Next:
  source $shown/bin/activate                     # puts hopgraph and hopgraph-mcp on PATH
  hopgraph --help                               # every command; hopgraph <command> --help
  hopgraph stats --db $db
  hopgraph export --db $db --format dot --seed deploy-billing-api-2-3 --max-hops 2
  hopgraph-mcp --help                           # the MCP memory server for agents
  python -c 'import hopgraph; help(hopgraph)'   # the Python API
EOF
