#!/usr/bin/env bash
# The main job in one command: build hopgraph, import the sample agent-memory graph
# (2,000 memories, ~7,900 typed edges, made by shared/workloads/gen_graph.py), answer
# shortest-path queries, and show the database statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin hopgraph
bin=target/release/hopgraph
db=${HOPGRAPH_DEMO_DB:-target/demo-memory.hg}
rm -rf "$db"

echo "# import"
"$bin" import --db "$db" examples/memory-2k.edges.tsv

echo; echo "# one path, all edge types, undirected, at most 10 hops"
read -r from to < examples/memory-2k.pairs.tsv
"$bin" path --db "$db" "$from" "$to"

echo; echo "# a batch of pairs connected through caused_by edges only (JSON lines)"
"$bin" path --db "$db" --pairs examples/memory-2k.pairs-walk-caused_by.tsv --type caused_by --max-hops 4 | head -n 3

echo; echo "# statistics"
"$bin" stats --db "$db"
