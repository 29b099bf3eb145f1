#!/usr/bin/env python3
"""gen_graph.py - deterministic typed-edge graph workloads for hopgraph benchmarks and samples.

Origin: the team's shared workload generator (shared/workloads/gen_graph.py, the one the
benchmarks in benches/compare and the engine's Rust ports in benches/workload/mod.rs
follow), copied into the repository with its graph shapes unchanged.  Added here: the
memory family's --text option (readable keys, titles, contents and kinds, for the example
data in examples/) and the 'jsonl' output format.  Without --text, the same arguments give
the same bytes as the shared copy.

Usage
-----
  # Graph500 Kronecker / R-MAT graph, 2^16 nodes, ~1M directed edges
  python3 gen_graph.py kron   --scale 16 --seed 1 --out data/kron16
  # agent-memory-like graph, 1M memories with UUID ids, avg out-degree ~4
  python3 gen_graph.py memory --nodes 1000000 --seed 1 --out data/mem1m
  # extra formats for peers (can be combined): nodes list, GAP .el / .wel
  python3 gen_graph.py kron --scale 20 --out data/kron20 --formats tsv,nodes,el
  # convert an existing edges TSV afterwards (streaming, any generator output)
  python3 gen_graph.py convert --edges data/mem1m.edges.tsv --formats nodes,el
  # extra pairs that are connected through one edge type (random walk over it)
  python3 gen_graph.py memory --nodes 1000000 --out data/mem1m --walk-pairs caused_by
  # the sample in examples/: readable keys, a node file with titles and contents
  python3 benches/workload/gen_graph.py memory --nodes 2000 --seed 1 --pairs 20 \
      --walk-pairs caused_by --text --out examples/memory-2k-text

Requires Python >= 3.10 and numpy.  Same seed + same numpy version => same
bytes (sha256 of every output is recorded in PREFIX.meta.json).

Outputs (PREFIX = --out; no header lines anywhere)
  PREFIX.edges.tsv  one directed edge per line: src<TAB>dst<TAB>type
                    kron: ids are decimal integers in [0, 2^scale)
                    memory: ids are UUID-like strings (8-4-4-4-12 hex), or with
                    --text readable keys (deploy-billing-api-2-3, incident-ledger-oom)
  PREFIX.pairs.tsv  --pairs Q query pairs: src<TAB>dst (src != dst), drawn
                    uniformly with replacement from nodes with degree > 0
  PREFIX.nodes.tsv  (format 'nodes') every node id with degree > 0, one a line,
                    in order of first appearance in edges.tsv
  PREFIX.el         (format 'el')  GAP edge list "u v", 0-based integer ids
                    (kron: the same ids; memory/convert: line number in
                    nodes.tsv order).  Types are dropped.
  PREFIX.wel        (format 'wel') as .el plus a weight = type code 1..4
  PREFIX.pairs-walk-TYPE.tsv  (--walk-pairs TYPE) Q pairs src<TAB>dst where dst is
                    the end of a random walk of 1..--walk-len steps from src over TYPE
                    edges in either direction, so a TYPE-only path of <= walk-len hops
                    exists (uniform random pairs are rarely connected through a sparse
                    type: on the memory graph caused_by alone is far below the
                    percolation threshold). src is uniform over nodes with a TYPE edge.
  PREFIX.nodes.jsonl  (memory --text) one line per memory, in time order, in the JSON
                    line format of `hopgraph import` / `hopgraph export`:
                    {"node":{"key":..,"kind":..,"title":..,"content":..}}
  PREFIX.jsonl      (format 'jsonl') hopgraph's JSON lines in one file: a header line,
                    the node lines of --text (none without it), one
                    {"edge":{"source":..,"target":..,"type":..}} line per edge and the
                    closing {"hopgraph":"end","nodes":N,"edges":M} line
  PREFIX.meta.json  parameters, counts, per-type counts, sha256 of outputs

Edge types (both families): caused_by 0.15, contradicts 0.05,
supersedes 0.10, related_to 0.70 (codes 1..4 in that order in .wel).
Self-loops and duplicate (src, dst, type) triples are removed; the first
occurrence is kept, so the edge order of the generator is preserved.

Families
  kron    Graph500 Kronecker generator (A,B,C,D = 0.57,0.19,0.19,0.05),
          edge-factor 16, then a random node-id permutation and a random
          edge-order permutation, exactly as the Graph500 reference does, so
          ids carry no locality.
  memory  Nodes arrive in time order; node i (i >= 1) gets 1 + Poisson(d-1)
          out-edges (d = --avg-degree, default 4) to older nodes, each target
          chosen as: recent (p=0.6, i-1-Geometric(mean --window=32)),
          preferential attachment (p=0.3, endpoint of a uniformly chosen
          existing edge => hubs), or uniform over older nodes (p=0.1).
          Edges are written in creation (time) order, src = newer memory.
          --text: each memory also gets a kind (incident, deploy, decision, person,
          service, config), a title and two or three sentences of content, drawn from
          small built-in vocabularies of agent-memory topics (services, data stores,
          people, symptoms, causes, settings) by a separate random stream
          ([seed, 0x7E47]), so the graph is the same as without --text; its key is a
          slug of the title's parts, made unique with -2, -3, ... suffixes.  Memory 0
          (the oldest, a hub) is always the decision "Use pooled connections for
          billing-api", so a search for "pooled connections" always has a hit.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

TYPES = ("caused_by", "contradicts", "supersedes", "related_to")
TYPE_P = (0.15, 0.05, 0.10, 0.70)


def log(msg: str) -> None:
    print(f"[gen_graph {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def dedupe(src: np.ndarray, dst: np.ndarray, typ: np.ndarray, n: int):
    """Drop self-loops and duplicate (src,dst,type), keep first occurrence order."""
    keep = src != dst
    src, dst, typ = src[keep], dst[keep], typ[keep]
    key = (src.astype(np.int64) * n + dst.astype(np.int64)) * 4 + typ.astype(np.int64)
    _, first = np.unique(key, return_index=True)
    first.sort()
    return src[first], dst[first], typ[first]


def gen_kron(scale: int, edge_factor: int, rng: np.random.Generator):
    """Graph500 reference kronecker_generator, vectorised."""
    n = 1 << scale
    m = edge_factor * n
    a, b, c = 0.57, 0.19, 0.19
    ab = a + b
    c_norm = c / (1.0 - ab)
    a_norm = a / ab
    ii = np.zeros(m, dtype=np.int64)
    jj = np.zeros(m, dtype=np.int64)
    for ib in range(scale):
        ii_bit = rng.random(m) > ab
        jj_bit = rng.random(m) > np.where(ii_bit, c_norm, a_norm)
        ii += ii_bit.astype(np.int64) << ib
        jj += jj_bit.astype(np.int64) << ib
    perm = rng.permutation(n)          # node-id permutation
    ii, jj = perm[ii], perm[jj]
    eperm = rng.permutation(m)         # edge-order permutation
    ii, jj = ii[eperm], jj[eperm]
    typ = rng.choice(4, size=m, p=TYPE_P).astype(np.int8)
    return n, ii, jj, typ


def gen_memory(n: int, avg_degree: float, window: float, rng: np.random.Generator):
    """Recency + preferential-attachment + uniform mixture (see module doc)."""
    k = np.minimum(1 + rng.poisson(avg_degree - 1.0, size=n), np.arange(n))
    m = int(k.sum())
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    mode_u = rng.random(m)
    pick_u = rng.random(m)
    back = rng.geometric(1.0 / window, size=m) - 1
    dst = np.empty(m, dtype=np.int64)
    src_l = src.tolist()
    mode_l, pick_l, back_l = mode_u.tolist(), pick_u.tolist(), back.tolist()
    ends: list[int] = []               # all edge endpoints so far (degree-proportional)
    for e in range(m):
        i = src_l[e]
        r = mode_l[e]
        if r < 0.6:
            t = i - 1 - min(back_l[e], i - 1)
        elif r < 0.9 and ends:
            t = ends[int(pick_l[e] * len(ends))]
        else:
            t = int(pick_l[e] * i)
        dst[e] = t
        ends.append(i)
        ends.append(t)
    typ = rng.choice(4, size=m, p=TYPE_P).astype(np.int8)
    return src, dst, typ


def uuid_ids(n: int, rng: np.random.Generator) -> list[str]:
    hi = rng.integers(0, 1 << 63, size=n, dtype=np.int64).tolist()
    lo = rng.integers(0, 1 << 63, size=n, dtype=np.int64).tolist()
    out = []
    for a, b in zip(hi, lo):
        h = f"{a:016x}{b:016x}"
        out.append(f"{h[0:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}")
    return out


# --- --text: readable memories ---------------------------------------------------------
# Small vocabularies of agent-memory topics. Every title and content is drawn from these,
# so that a text search for a service, a store, a person or a symptom finds memories.

KINDS = ("incident", "deploy", "decision", "person", "service", "config")
KIND_P = (0.24, 0.26, 0.18, 0.10, 0.06, 0.16)
SERVICES = (
    "billing-api", "checkout", "auth", "search-indexer", "payments", "notifier",
    "profile", "inventory", "ledger", "gateway", "image-resizer", "feature-flags",
)
STORES = ("postgres", "redis", "kafka", "elasticsearch", "s3")
PEOPLE = (
    ("alice", "Alice Chen"), ("bob", "Bob Okafor"), ("carmen", "Carmen Diaz"),
    ("dmitri", "Dmitri Ivanov"), ("erin", "Erin Walsh"), ("farah", "Farah Haddad"),
    ("gus", "Gustavo Lima"), ("hana", "Hana Sato"), ("ivan", "Ivan Petrov"), ("jia", "Jia Li"),
)
# (key slug, deploy title ending, incident title ending, what happened)
SYMPTOMS = (
    ("p99", "raised p99 latency", "p99 latency spike", "p99 latency went from 120 ms to 900 ms."),
    ("errors", "doubled the error rate", "5xx error spike", "5xx responses doubled within ten minutes."),
    ("pool", "exhausted the connection pool", "connection pool exhausted",
     "Every worker waited for pooled connections to {store}."),
    ("disk", "filled the disk", "disk full", "The {store} volume reached 100% and writes failed."),
    ("oom", "caused OOM kills", "OOM kills", "Pods were OOM-killed every few minutes."),
    ("cache", "dropped the cache hit rate", "cache misses", "The cache hit rate fell from 95% to 40%."),
    ("lag", "backed up the queue", "consumer lag", "Kafka consumer lag grew past a million messages."),
    ("cpu", "pinned the CPU", "CPU saturation", "CPU stayed at 100% on every node."),
)
CAUSES = (
    "a missing index on the {svc} tables",
    "too few pooled connections for the new traffic",
    "a retry storm from {other}",
    "an expired TLS certificate",
    "a feature flag turned on for everyone",
    "a noisy neighbour on the {store} host",
    "an unbounded cache of sessions",
    "a slow query after the {store} upgrade",
)
FOLLOWUPS = (
    "Rolled back after 20 minutes.",
    "Fixed forward with a config change.",
    "Kept it and watched the dashboards.",
    "Reverted, then shipped again behind a flag.",
    "Paged {first} to confirm the rollback.",
)
# (key slug, title, content sentence)
DECISIONS = (
    ("pooling", "Use pooled connections for {svc}",
     "Every {svc} worker now takes pooled connections from pgbouncer instead of opening its own."),
    ("{store}", "Move {svc} sessions to {store}",
     "Sessions of {svc} live in {store} from now on; the old table is read-only."),
    ("retries", "Cap retries from {svc} at 3",
     "Clients of {svc} retry at most three times with jittered backoff."),
    ("canary", "Canary every {svc} deploy for 30 minutes",
     "Each {svc} deploy goes to 5% of traffic first and waits 30 minutes."),
    ("timeout", "Set the {svc} request timeout to 2 s",
     "Requests to {svc} give up after 2 s so that callers fail fast."),
    ("freeze", "Freeze {svc} deploys on Fridays",
     "No {svc} deploy after Friday noon unless it fixes an incident."),
)
REASONS = (
    "the last pool exhaustion incident", "a load test at twice the peak",
    "the postmortem review", "a week of paging at night", "the capacity plan for Q3",
)
# (key slug, title, content)
ROLES = (
    ("owner", "{name} owns {svc}", "{name} owns {svc} and reviews every change to its {store} schema."),
    ("oncall", "{name} is on call for {svc}", "{name} carries the {svc} pager this week; escalate to {other_name}."),
    ("expert", "{name} knows the {svc} {store} setup",
     "Ask {name} about how {svc} uses {store}, including its pooled connections."),
)
# (name, key slug, values, unit)
SETTINGS = (
    ("max_connections", "max-connections", (100, 200, 400, 800), ""),
    ("pool_size", "pool-size", (10, 20, 40, 80), ""),
    ("request_timeout", "timeout", (500, 1000, 2000, 5000), " ms"),
    ("cache_ttl", "cache-ttl", (30, 60, 300, 900), " s"),
    ("worker_threads", "workers", (4, 8, 16, 32), ""),
    ("rate_limit", "rate-limit", (250, 500, 1000, 2000), " rps"),
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def memory_texts(n: int, seed: int) -> tuple[list[str], list[dict]]:
    """Keys and node records ({key, kind, title, content}) of n memories (see --text)."""
    rng = np.random.default_rng([seed, 0x7E47])
    kind_of = rng.choice(len(KINDS), size=n, p=KIND_P).tolist()
    u = rng.random((n, 10)).tolist()
    keys: list[str] = []
    nodes: list[dict] = []
    used: dict[str, int] = {}
    releases = {svc: 0 for svc in SERVICES}   # deploys so far per service: its version

    def pick(x: float, seq):
        return seq[int(x * len(seq))]

    for i in range(n):
        r = u[i]
        kind = KINDS[kind_of[i]]
        svc = pick(r[0], SERVICES)
        other = pick(r[1], [s for s in SERVICES if s != svc])
        store = pick(r[2], STORES)
        first, name = pick(r[3], PEOPLE)
        other_name = pick(r[4], [p for p in PEOPLE if p[0] != first])[1]
        fill = dict(svc=svc, other=other, store=store, name=name, first=first.capitalize(),
                    other_name=other_name)
        if i == 0:                     # the guaranteed hub: see the module doc
            kind, svc, r = "decision", "billing-api", [0.0] * 10
            fill["svc"] = svc
        if kind == "deploy":
            major, minor = divmod(10 + releases[svc], 10)
            releases[svc] += 1
            slug, title_end, _, what = pick(r[7], SYMPTOMS)
            if r[8] < 0.35:
                title = f"Deploy of {svc} {major}.{minor} went out cleanly"
                content = f"{name} shipped {svc} {major}.{minor} on {pick(r[9], DAYS)}. No alerts fired."
            else:
                title = f"Deploy of {svc} {major}.{minor} {title_end}"
                content = (f"{name} shipped {svc} {major}.{minor} on {pick(r[9], DAYS)}. "
                           f"{what.format(**fill)} {pick(r[4], FOLLOWUPS).format(**fill)}")
            key = f"deploy-{svc}-{major}-{minor}"
        elif kind == "incident":
            slug, _, title_end, what = pick(r[5], SYMPTOMS)
            title = f"Incident: {svc} {title_end}"
            cause = pick(r[6], CAUSES).format(**fill)
            content = f"{what.format(**fill)} Root cause: {cause}. {name} was on call."
            key = f"incident-{svc}-{slug}"
        elif kind == "decision":
            slug, title, why = pick(r[5], DECISIONS)
            title, why = title.format(**fill), why.format(**fill)
            content = f"{why} Decided by {name} after {pick(r[6], REASONS)}."
            key = f"decision-{svc}-{slug.format(**fill)}"
        elif kind == "person":
            slug, title, content = pick(r[5], ROLES)
            title, content = title.format(**fill), content.format(**fill)
            key = f"person-{first}-{slug}-{svc}"
        elif kind == "service":
            title = f"{svc} depends on {store}"
            content = (f"{svc} keeps its state in {store} and reads it through pooled connections. "
                       f"It calls {other} on every request.")
            key = f"service-{svc}-{store}"
        else:
            setting, slug, values, unit = pick(r[5], SETTINGS)
            j = int(r[7] * len(values))
            old, new = values[j], values[(j + 1 + int(r[8] * (len(values) - 1))) % len(values)]
            title = f"{svc} {setting} set to {new}{unit}"
            content = (f"Changed {setting} on {svc} from {old}{unit} to {new}{unit} "
                       f"after {pick(r[6], REASONS)}.")
            key = f"config-{svc}-{slug}-{new}"
        seen = used.get(key, 0) + 1
        used[key] = seen
        if seen > 1:
            key = f"{key}-{seen}"
            while key in used:         # e.g. a base key that itself ends in -2
                seen += 1
                key = f"{key.rsplit('-', 1)[0]}-{seen}"
            used[key] = 1
        keys.append(key)
        nodes.append({"key": key, "kind": kind, "title": title, "content": content})
    return keys, nodes


def write_nodes_jsonl(path: str, nodes: list[dict]) -> None:
    write_lines(path, ["".join(json.dumps({"node": nd}, separators=(",", ":")) + "\n" for nd in nodes)])


def write_lines(path: str, lines_iter) -> None:
    with open(path, "w", newline="\n") as f:
        for chunk in lines_iter:
            f.write(chunk)


def chunks(total: int, size: int = 1 << 20):
    for lo in range(0, total, size):
        yield lo, min(total, lo + size)


def write_outputs(prefix, ids, src, dst, typ, formats, pairs_q, rng_pairs, records=None):
    """ids: None (decimal ints) or list[str] indexed by node number; records: the node
    records of --text (for format 'jsonl') or None."""
    files = {}
    name = (lambda v: str(v)) if ids is None else (lambda v: ids[v])
    tn = TYPES
    if "tsv" in formats:
        p = prefix + ".edges.tsv"

        def gen():
            for lo, hi in chunks(len(src)):
                s, d, t = src[lo:hi].tolist(), dst[lo:hi].tolist(), typ[lo:hi].tolist()
                yield "".join(f"{name(a)}\t{name(b)}\t{tn[c]}\n" for a, b, c in zip(s, d, t))
        write_lines(p, gen())
        files["edges"] = p
    if "jsonl" in formats:
        p = prefix + ".jsonl"
        q = json.dumps

        def gen():
            yield '{"hopgraph":"export","version":1}\n'
            for nd in records or ():
                yield q({"node": nd}, separators=(",", ":")) + "\n"
            for lo, hi in chunks(len(src)):
                s, d, t = src[lo:hi].tolist(), dst[lo:hi].tolist(), typ[lo:hi].tolist()
                yield "".join(f'{{"edge":{{"source":{q(name(a))},"target":{q(name(b))},"type":"{tn[c]}"}}}}\n'
                              for a, b, c in zip(s, d, t))
            yield f'{{"hopgraph":"end","nodes":{len(records or ())},"edges":{len(src)}}}\n'
        write_lines(p, gen())
        files["jsonl"] = p
    # nodes with degree > 0, in first-appearance order (src, dst interleaved)
    inter = np.empty(2 * len(src), dtype=np.int64)
    inter[0::2], inter[1::2] = src, dst
    uniq, first = np.unique(inter, return_index=True)
    nodes = uniq[np.argsort(first, kind="stable")]
    if "nodes" in formats:
        p = prefix + ".nodes.tsv"
        write_lines(p, ("".join(f"{name(v)}\n" for v in nodes[lo:hi].tolist()) for lo, hi in chunks(len(nodes))))
        files["nodes"] = p
    if "el" in formats or "wel" in formats:
        if ids is None:
            es, ed = src, dst
        else:                           # dense ids in nodes.tsv order
            remap = np.empty(int(nodes.max()) + 1, dtype=np.int64)
            remap[nodes] = np.arange(len(nodes))
            es, ed = remap[src], remap[dst]
        for fmt in ("el", "wel"):
            if fmt not in formats:
                continue
            p = prefix + "." + fmt

            def gen(fmt=fmt):
                for lo, hi in chunks(len(es)):
                    s, d = es[lo:hi].tolist(), ed[lo:hi].tolist()
                    if fmt == "el":
                        yield "".join(f"{a} {b}\n" for a, b in zip(s, d))
                    else:
                        t = typ[lo:hi].tolist()
                        yield "".join(f"{a} {b} {c + 1}\n" for a, b, c in zip(s, d, t))
            write_lines(p, gen())
            files[fmt] = p
    if pairs_q > 0:
        ps = rng_pairs.choice(nodes, size=pairs_q)
        pd = rng_pairs.choice(nodes, size=pairs_q)
        same = ps == pd
        while same.any():
            pd[same] = rng_pairs.choice(nodes, size=int(same.sum()))
            same = ps == pd
        p = prefix + ".pairs.tsv"
        write_lines(p, ["".join(f"{name(a)}\t{name(b)}\n" for a, b in zip(ps.tolist(), pd.tolist()))])
        files["pairs"] = p
    return files, int(len(nodes))


def write_walk_pairs(prefix, ids, src, dst, typ, tname, q, walk_len, rng):
    """Pairs joined by a random walk of 1..walk_len steps over edges of one type."""
    name = (lambda v: str(v)) if ids is None else (lambda v: ids[v])
    t = TYPES.index(tname)
    sel = typ == t
    a = np.concatenate([src[sel], dst[sel]])
    b = np.concatenate([dst[sel], src[sel]])
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    nodes, start, count = np.unique(a, return_index=True, return_counts=True)
    pos = {int(v): (int(st), int(c)) for v, st, c in zip(nodes, start, count)}
    lines = []
    while len(lines) < q:
        s0 = int(nodes[int(rng.integers(len(nodes)))])
        steps = int(rng.integers(1, walk_len + 1))
        v = s0
        for _ in range(steps):
            st, c = pos[v]
            v = int(b[st + int(rng.integers(c))])
        if v != s0:
            lines.append(f"{name(s0)}\t{name(v)}\n")
    p = f"{prefix}.pairs-walk-{tname}.tsv"
    write_lines(p, ["".join(lines)])
    return p


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for blk in iter(lambda: f.read(1 << 22), b""):
            h.update(blk)
    return h.hexdigest()


def convert(edges_path: str, formats: set[str]) -> None:
    """Stream an edges TSV into nodes.tsv / .el / .wel (dense ids, first-appearance order)."""
    prefix = edges_path[: -len(".edges.tsv")] if edges_path.endswith(".edges.tsv") else edges_path
    tcode = {t: i + 1 for i, t in enumerate(TYPES)}
    idmap: dict[str, int] = {}
    outs = {f: open(f"{prefix}.{f}", "w") for f in ("el", "wel") if f in formats}
    with open(edges_path) as f:
        for line in f:
            s, d, t = line.rstrip("\n").split("\t")
            a = idmap.setdefault(s, len(idmap))
            b = idmap.setdefault(d, len(idmap))
            if "el" in outs:
                outs["el"].write(f"{a} {b}\n")
            if "wel" in outs:
                outs["wel"].write(f"{a} {b} {tcode[t]}\n")
    for o in outs.values():
        o.close()
    if "nodes" in formats:
        with open(prefix + ".nodes.tsv", "w") as f:
            f.writelines(k + "\n" for k in idmap)
    log(f"converted {edges_path}: {len(idmap)} nodes -> {sorted(formats)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=("kron", "memory", "convert"))
    ap.add_argument("--out", help="output prefix (kron/memory)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=int, default=16, help="kron: 2^scale nodes")
    ap.add_argument("--edge-factor", type=int, default=16, help="kron: edges per node")
    ap.add_argument("--nodes", type=int, default=1_000_000, help="memory: number of memories")
    ap.add_argument("--avg-degree", type=float, default=4.0, help="memory: mean out-degree")
    ap.add_argument("--window", type=float, default=32.0, help="memory: mean recency look-back")
    ap.add_argument("--pairs", type=int, default=1000, help="number of query pairs (0 = none)")
    ap.add_argument("--formats", default="tsv", help="comma list of tsv,nodes,el,wel,jsonl")
    ap.add_argument("--edges", help="convert: input edges TSV")
    ap.add_argument("--walk-pairs", default="", help="comma list of edge types: also write pairs-walk-TYPE.tsv")
    ap.add_argument("--walk-len", type=int, default=4, help="max random-walk length for --walk-pairs")
    ap.add_argument("--text", action="store_true",
                    help="memory: readable keys, and PREFIX.nodes.jsonl with kinds, titles, contents")
    a = ap.parse_args(argv)
    formats = {f.strip() for f in a.formats.split(",") if f.strip()}
    bad = formats - {"tsv", "nodes", "el", "wel", "jsonl"}
    if bad:
        ap.error(f"unknown formats {sorted(bad)}")
    if a.family == "convert":
        if not a.edges:
            ap.error("convert needs --edges")
        if "jsonl" in formats:
            ap.error("convert writes nodes, el and wel, not jsonl")
        convert(a.edges, formats - {"tsv"})
        return 0
    if not a.out:
        ap.error("--out is required")
    if a.text and a.family != "memory":
        ap.error("--text is an option of the memory family")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    t0 = time.time()
    rng = np.random.default_rng(a.seed)
    rng_pairs = np.random.default_rng([a.seed, 0x9A125])
    records = None                      # node records of --text
    params: dict = {"family": a.family, "seed": a.seed, "numpy": np.__version__}
    if a.family == "kron":
        n, src, dst, typ = gen_kron(a.scale, a.edge_factor, rng)
        params.update(scale=a.scale, edge_factor=a.edge_factor, A=0.57, B=0.19, C=0.19, D=0.05)
        raw = len(src)
        src, dst, typ = dedupe(src, dst, typ, n)
        ids = None
    else:
        n = a.nodes
        src, dst, typ = gen_memory(n, a.avg_degree, a.window, rng)
        params.update(nodes=n, avg_degree=a.avg_degree, window=a.window)
        raw = len(src)
        src, dst, typ = dedupe(src, dst, typ, n)
        if a.text:
            params.update(text=True)
            ids, records = memory_texts(n, a.seed)
        else:
            ids = uuid_ids(n, rng)
    log(f"{a.family}: generated {raw} raw edges -> {len(src)} after dedupe ({time.time() - t0:.1f}s)")
    files, n_nonisolated = write_outputs(a.out, ids, src, dst, typ, formats, a.pairs, rng_pairs, records)
    if records is not None:
        files["nodes-jsonl"] = a.out + ".nodes.jsonl"
        write_nodes_jsonl(files["nodes-jsonl"], records)
    for i, tname in enumerate(t for t in a.walk_pairs.split(",") if t):
        if tname not in TYPES:
            ap.error(f"unknown type {tname}")
        rng_walk = np.random.default_rng([a.seed, 0x3A1C, i])
        files[f"pairs-walk-{tname}"] = write_walk_pairs(a.out, ids, src, dst, typ, tname, a.pairs, a.walk_len, rng_walk)
    deg = np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)
    meta = {
        "params": params,
        "id_space": n,
        "nodes_with_degree": n_nonisolated,
        "edges": int(len(src)),
        "raw_edges": raw,
        "max_total_degree": int(deg.max()),
        "type_counts": {TYPES[i]: int(c) for i, c in enumerate(np.bincount(typ, minlength=4))},
        "pairs": a.pairs,
        "files": {k: {"path": os.path.basename(v), "sha256": sha256(v)} for k, v in files.items()},
    }
    with open(a.out + ".meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    log(f"wrote {sorted(files)} for {a.out} in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
