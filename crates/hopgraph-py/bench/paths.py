#!/usr/bin/env python3
"""Shortest paths through the Python binding against the same queries from Rust and from
networkx, in one run on one graph.

    python bench/paths.py --edges kron16.edges.tsv --pairs kron16.pairs.tsv [--db DIR]

Makes the database with `hopgraph import` (the package's command) unless --db exists,
then, on the same pairs (undirected, all edge types, at most 10 hops):
  rust      the same key-level engine calls from Rust (`examples/path_latency.rs`:
            `Database::shortest_path`, and `Snapshot::shortest_path` on one snapshot),
            built with `cargo build --release --example path_latency` (--rust-bin),
  python    `db.shortest_path(a, b)` and `snap.shortest_path(a, b)` from Python, timed
            per call around the call (arguments in, a Path object out),
  networkx  `nx.shortest_path(G, a, b)` on an undirected nx.Graph of the same edges
            (optional: --no-networkx skips it; it needs the graph in memory).
Prints p50/p90/p99 per system and the ratios of p50s; checks that every system finds
paths of the same length for the same pairs.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import hopgraph


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def fmt(ns):
    return f"{ns / 1000:.1f} µs"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", required=True)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--db")
    ap.add_argument("--max-hops", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="passes over the pairs per system (best p50 kept)")
    ap.add_argument("--no-networkx", action="store_true")
    ap.add_argument("--rust-bin", default=str(Path(__file__).resolve().parents[3] / "target/release/examples/path_latency"))
    a = ap.parse_args()
    db_dir = Path(a.db or (Path(a.edges).with_suffix("").with_suffix("").as_posix() + ".hg"))
    scripts = Path(sys.executable).parent
    if not db_dir.exists():
        t = time.perf_counter()
        subprocess.run([scripts / "hopgraph", "import", "--db", db_dir, a.edges], check=True)
        print(f"import: {time.perf_counter() - t:.1f} s")
    pairs = [tuple(line.split("\t")[:2]) for line in Path(a.pairs).read_text().splitlines() if line]

    results = {}
    db = hopgraph.open(db_dir, read_only=True)
    snap = db.snapshot()
    hops_py = []

    def python_round(call):
        lat, hops = [], []
        for s, t in pairs:
            t0 = time.perf_counter_ns()
            p = call(s, t, max_hops=a.max_hops)
            lat.append(time.perf_counter_ns() - t0)
            hops.append(None if p is None else len(p))
        return {"p50": pct(lat, 0.5), "p90": pct(lat, 0.9), "p99": pct(lat, 0.99), "mean": sum(lat) / len(lat)}, hops

    # Rust and Python rounds alternate, so both see the same machine.
    for _ in range(a.rounds):
        r = subprocess.run([a.rust_bin, db_dir, a.pairs, "1"], capture_output=True, text=True, check=True)
        got = json.loads(r.stdout)
        for form in ("database", "snapshot"):
            cur = {q: got[form][f"{q}_us"] * 1000 for q in ("p50", "p90", "p99")}
            key = f"rust {form}"
            if key not in results or cur["p50"] < results[key]["p50"]:
                results[key] = cur
        for form, call in (("database", db.shortest_path), ("snapshot", snap.shortest_path)):
            cur, hops_py = python_round(call)
            key = f"python {form}"
            if key not in results or cur["p50"] < results[key]["p50"]:
                results[key] = cur

    if not a.no_networkx:
        import networkx as nx
        t = time.perf_counter()
        G = nx.Graph()
        with open(a.edges) as f:
            for line in f:
                u, v, _ = line.rstrip("\n").split("\t")
                G.add_edge(u, v)
        print(f"networkx load: {time.perf_counter() - t:.1f} s")
        best = None
        for _ in range(a.rounds):
            lat = []
            hops_nx = []
            for s, t in pairs:
                t0 = time.perf_counter_ns()
                try:
                    p = nx.shortest_path(G, s, t)
                    h = len(p) - 1
                except (nx.NetworkXNoPath, nx.NodeNotFound):
                    h = None
                lat.append(time.perf_counter_ns() - t0)
                hops_nx.append(h if h is None or h <= a.max_hops else None)
            cur = {"p50": pct(lat, 0.5), "p90": pct(lat, 0.9), "p99": pct(lat, 0.99), "mean": sum(lat) / len(lat)}
            if best is None or cur["p50"] < best["p50"]:
                best = cur
        results["networkx"] = best
        diff = sum(1 for x, y in zip(hops_py, hops_nx) if x != y)
        print(f"path lengths: {len(pairs) - diff}/{len(pairs)} pairs agree with networkx")
        if diff:
            sys.exit("path lengths differ from networkx")

    for k, v in results.items():
        print(f"{k:18} " + "  ".join(f"{q} {fmt(x)}" for q, x in v.items()))
    for form in ("database", "snapshot"):
        ratio = results[f"python {form}"]["p50"] / results[f"rust {form}"]["p50"]
        print(f"python / rust p50 ({form}): {ratio:.2f}x")
    if "networkx" in results:
        for q in ("p50", "mean"):
            py = results["python database"][q]
            print(f"networkx / python {q}: {results['networkx'][q] / py:.1f}x")


if __name__ == "__main__":
    main()
