#!/usr/bin/env python3
"""crosscheck.py - does Spark read `hopgraph export --format graphframes` as the same graph?

For each graph: generate it with benches/workload/gen_graph.py (or take an existing edges
TSV), add a hand-made set of awkward nodes and edges (validity intervals that ended, quotes,
commas, line breaks, backslashes, leading spaces, non-ASCII text), `hopgraph import` it,
`hopgraph export --format graphframes`, load the two CSV files in a local Spark session
(PySpark, local[2]) with the read options the export's --help documents, and compare:

  1. counts: vertices and edges in Spark == `hopgraph stats --json` == the input;
     current edges (valid_to null or in the future, both ends current) in Spark == the
     input's count of current edges;
  2. per-type out-degree and in-degree histograms ({type: {degree: number of nodes}}, over
     every exported edge, ended ones included) in Spark == the same computed in Python from
     the input files;
  3. per sampled node (--samples, default 100, drawn with a fixed seed; the awkward nodes are
     always among them): its out- and in-degree per type among current edges in Spark ==
     `hopgraph neighbors KEY --as-of NOW --json` (hopgraph's own answer; NOW is the one
     moment both sides use);
  4. per sampled node: the size of its 2-hop neighbourhood in Spark == `hopgraph traverse
     KEY --max-hops 2 --as-of NOW --json` (hopgraph's own answer), in two senses:
       both: distinct nodes other than the seed reachable in 1 or 2 hops over current edges
             taken either way (the graph as undirected);
       out:  the same following edges from source to target only;
     Spark computes this with DataFrame joins (GraphFrames' motif finding and BFS are joins
     of the same kind; its jar is not reachable here, see README.md);
  5. the text of every node (kind, title, content, props) and every edge's props, weight,
     validity and id: Spark's values == the lossless `hopgraph export` (JSONL) values
     (above --value-rows rows: the sampled nodes plus a fixed-seed draw of --value-rows
     keys, and the edges whose id is a multiple of ceil(edges / --value-rows) plus every
     edge at an awkward node).

Any mismatch is printed and the script exits 1; a missing tool or a failed command exits 2.

Usage (from the repository root; needs Java 17 and `pip install pyspark`, numpy):
  python3 benches/compare/spark/crosscheck.py --hopgraph target/debug/hopgraph \\
      --kron-scale 12 --mem-nodes 20000 --workdir /tmp/hg-spark
  python3 benches/compare/spark/crosscheck.py --hopgraph ... --edges data/kron16.edges.tsv
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "workload", "gen_graph.py")

# Spark's CSV reader, as `hopgraph export --help` documents it for --format graphframes:
# escape='"' (Spark's default escape is a backslash), multiLine (text may hold line breaks),
# nullValue a string no field holds, so that a quoted empty field reads as '' and only an
# unquoted empty one (valid_to of an interval that never ends) as null.
READ_OPTS = dict(header=True, multiLine=True, escape='"', nullValue="\u0000", mode="FAILFAST")
VERTEX_SCHEMA = (
    "id STRING, kind STRING, title STRING, content STRING, importance DOUBLE, "
    "status STRING, props STRING, valid_from TIMESTAMP, valid_to TIMESTAMP"
)
EDGE_SCHEMA = (
    "src STRING, dst STRING, relationship STRING, weight DOUBLE, props STRING, "
    "valid_from TIMESTAMP, valid_to TIMESTAMP, edge_id LONG"
)

failures: list[str] = []


def fail(what: str) -> None:
    failures.append(what)
    print(f"  MISMATCH {what}", flush=True)


def check(name: str, got, want) -> None:
    if got == want:
        print(f"  ok  {name}", flush=True)
    elif isinstance(got, dict) and isinstance(want, dict):
        keys = sorted({k for k in got.keys() | want.keys() if got.get(k) != want.get(k)},
                      key=repr)
        diff = ", ".join(f"{k!r}: spark {got.get(k)!r} expected {want.get(k)!r}"
                         for k in keys[:6])
        fail(f"{name}: {len(keys)} keys differ: {diff}")
    else:
        g, w = repr(got), repr(want)
        fail(f"{name}: spark {g[:300]} != expected {w[:300]}")


def run(cmd: list[str], **kw) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        print(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}", file=sys.stderr)
        sys.exit(2)
    return r.stdout


def awkward(anchor: str) -> tuple[list[dict], list[dict]]:
    """Nodes and edges that test the CSV layer: every text a CSV writer can get wrong, and
    validity intervals (one node and two edges that ended, one node that starts later)."""
    texts = [
        ("quote", 'He said "hi", then left', 'a "quoted" word, a comma'),
        ("newline", "two\nlines", "line 1\r\nline 2\n\nline 4"),
        ("unicode", "Zürich — naïve café ✓", "日本語のテキスト 🚀 Ελληνικά"),
        ("backslash", 'C:\\dir\\"file"', 'ends with a backslash \\'),
        ("space", "  leading and trailing  ", "\ttab first"),
        ("empty", "", ""),
        ("json-ish", '{"not": "props"}', "[1, 2, 3]"),
        ("hash", "#not a comment", "# neither"),
    ]
    nodes = []
    for i, (kind, title, content) in enumerate(texts):
        nodes.append({"node": {
            "key": f"awk-{i}-{kind}", "kind": kind, "title": title, "content": content,
            "importance": round(0.1 * i, 3),
            "props": {"note": f'props with "quotes", commas, \\ and\nnewline {i}',
                      "tags": ["a,b", 'c"d'], "n": i},
            "valid_from": "2024-01-01T00:00:00Z",
        }})
    nodes.append({"node": {"key": "awk, key \"with\" comma", "kind": "key",
                           "title": "a key that needs quoting"}})
    nodes.append({"node": {"key": "awk-ended", "kind": "ended", "title": "ended in March",
                           "valid_from": "2024-01-01T00:00:00Z",
                           "valid_to": "2024-03-01T00:00:00Z"}})
    nodes.append({"node": {"key": "awk-future", "kind": "future", "title": "starts in 2999",
                           "valid_from": "2999-01-01T00:00:00Z"}})
    keys = [n["node"]["key"] for n in nodes]
    edges = []
    for a, b in zip(keys, keys[1:]):
        edges.append({"edge": {"source": a, "target": b, "type": "awk_next",
                               "weight": 0.5, "props": {"why": 'a "reason", with\nlines'}}})
    edges.append({"edge": {"source": keys[0], "target": anchor, "type": "related_to"}})
    edges.append({"edge": {"source": anchor, "target": keys[1], "type": "caused_by"}})
    # Edges that ended: exported (with their interval), not current.
    edges.append({"edge": {"source": keys[2], "target": anchor, "type": "awk_old",
                           "valid_from": "2024-01-01T00:00:00Z",
                           "valid_to": "2024-02-01T00:00:00Z"}})
    edges.append({"edge": {"source": keys[3], "target": keys[0], "type": "awk_old",
                           "valid_from": "2024-01-01T00:00:00Z",
                           "valid_to": "2024-02-01T00:00:00Z"}})
    return nodes, edges


def read_input(paths: list[str]) -> tuple[set[str], list[tuple], dict]:
    """The input's nodes, edges (src, dst, type, valid_to-or-None) and node records."""
    nodes: set[str] = set()
    edges: list[tuple] = []
    records: dict[str, dict] = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            if p.endswith(".tsv"):
                for line in f:
                    s, d, t = line.rstrip("\n").split("\t")[:3]
                    nodes.update((s, d))
                    edges.append((s, d, t, None))
            else:
                for line in f:
                    o = json.loads(line)
                    if "node" in o:
                        nodes.add(o["node"]["key"])
                        records[o["node"]["key"]] = o["node"]
                    elif "edge" in o:
                        e = o["edge"]
                        nodes.update((e["source"], e["target"]))
                        edges.append((e["source"], e["target"], e["type"], e.get("valid_to")))
    return nodes, edges, records


def histograms(edges, col: int) -> dict:
    per = collections.Counter((e[2], e[col]) for e in edges)
    h: dict = collections.defaultdict(collections.Counter)
    for (t, _), deg in per.items():
        h[t][deg] += 1
    return {t: dict(c) for t, c in h.items()}


def ms(ts) -> int | None:
    if ts is None:
        return None
    return int(ts.replace(tzinfo=dt.timezone.utc).timestamp() * 1000) if ts.tzinfo is None \
        else int(ts.timestamp() * 1000)


def rfc(ms_value) -> int | None:
    """An RFC 3339 string or milliseconds (JSONL export) as milliseconds."""
    if ms_value is None:
        return None
    if isinstance(ms_value, int):
        return ms_value
    return int(dt.datetime.fromisoformat(ms_value.replace("Z", "+00:00")).timestamp() * 1000)


def crosscheck(spark, hg: str, name: str, inputs: list[str], work: str, samples: int,
               seed: int, value_rows: int) -> dict:
    from pyspark.sql import functions as F

    print(f"\n== {name}", flush=True)
    db = os.path.join(work, f"{name}.hg")
    out = os.path.join(work, f"{name}.graphframes")
    timings = {}
    t = time.time()
    run(["rm", "-rf", db])
    run([hg, "import", "--db", db, "--quiet", *inputs])
    timings["import_s"] = time.time() - t
    t = time.time()
    run([hg, "export", "--db", db, "--format", "graphframes", "--out", out])
    timings["export_s"] = time.time() - t
    stats = json.loads(run([hg, "stats", "--db", db, "--json"]))

    in_nodes, in_edges, records = read_input(inputs)
    now_ms = int(time.time() * 1000)

    t = time.time()
    v = spark.read.csv(os.path.join(out, "vertices.csv"), schema=VERTEX_SCHEMA, **READ_OPTS)
    e = spark.read.csv(os.path.join(out, "edges.csv"), schema=EDGE_SCHEMA, **READ_OPTS)
    v = v.cache()
    e = e.cache()
    try:
        nv, ne = v.count(), e.count()
    except Exception as err:  # FAILFAST: a record Spark cannot parse is a mismatch
        first = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
        cause = [ln for ln in str(err).splitlines() if "Malformed CSV record" in ln]
        fail(f"Spark cannot read the export: {first[:300]} {cause[0][:300] if cause else ''}")
        return dict(graph=name, error="spark read failed")
    timings["spark_load_s"] = time.time() - t
    t = time.time()

    # 1. counts
    check("vertex count == hopgraph stats", nv, stats["nodes"])
    check("edge count == hopgraph stats", ne, stats["edges"])
    check("vertex count == input", nv, len(in_nodes))
    check("edge count == input", ne, len(in_edges))
    check("distinct vertex ids", v.select("id").distinct().count(), nv)
    check("every edge end is a vertex",
          e.join(v, e.src == v.id, "left_anti").count()
          + e.join(v, e.dst == v.id, "left_anti").count(), 0)
    now = F.lit(dt.datetime.fromtimestamp(now_ms / 1000, dt.timezone.utc)).cast("timestamp")
    cur_v = v.where((F.col("valid_from") <= now)
                    & (F.col("valid_to").isNull() | (F.col("valid_to") > now))).select("id")
    cur_e = (e.where((F.col("valid_from") <= now)
                     & (F.col("valid_to").isNull() | (F.col("valid_to") > now)))
             .join(cur_v.withColumnRenamed("id", "src"), "src", "left_semi")
             .join(cur_v.withColumnRenamed("id", "dst"), "dst", "left_semi")
             .select("src", "dst", "relationship").cache())
    ended = [x for x in in_edges if x[3] is not None and rfc(x[3]) <= now_ms]
    ended_nodes = {k for k, r in records.items()
                   if (r.get("valid_to") and rfc(r["valid_to"]) <= now_ms)
                   or (r.get("valid_from") and rfc(r["valid_from"]) > now_ms)}
    want_cur = [x for x in in_edges if x not in ended
                and x[0] not in ended_nodes and x[1] not in ended_nodes]
    check("current edge count", cur_e.count(), len(want_cur))

    # 2. degree histograms per type, every exported edge
    for label, col, key in (("out", 0, "src"), ("in", 1, "dst")):
        rows = (e.groupBy("relationship", key).count()
                .groupBy("relationship", "count").agg(F.count("*").alias("nodes")).collect())
        got: dict = collections.defaultdict(dict)
        for r in rows:
            got[r["relationship"]][r["count"]] = r["nodes"]
        check(f"{label}-degree histograms per type ({len(got)} types)", dict(got),
              histograms(in_edges, col))

    # Samples: the awkward nodes and a fixed-seed draw of the rest.
    rng = random.Random(seed)
    pool = sorted(in_nodes)
    awk = [k for k in pool if k.startswith("awk")]
    rest = [k for k in pool if not k.startswith("awk")]
    sample = awk + rng.sample(rest, max(0, min(len(rest), samples - len(awk))))
    sdf = spark.createDataFrame([(k,) for k in sample], "seed STRING").cache()

    # 3. per-type degrees of the samples among current edges vs `hopgraph neighbors`
    deg_rows = (cur_e.join(sdf, cur_e.src == sdf.seed)
                .groupBy("seed", "relationship").count().collect())
    got_out = {(r["seed"], r["relationship"]): r["count"] for r in deg_rows}
    deg_rows = (cur_e.join(sdf, cur_e.dst == sdf.seed)
                .groupBy("seed", "relationship").count().collect())
    got_in = {(r["seed"], r["relationship"]): r["count"] for r in deg_rows}
    want_out: dict = collections.Counter()
    want_in: dict = collections.Counter()
    hg_calls = time.time()
    for k in sample:
        if k in ended_nodes:
            continue  # an unknown key for reads as of now
        res = json.loads(run([hg, "neighbors", "--db", db, k, "--json", "--limit", "100000000",
                              "--as-of", str(now_ms)]))
        assert not res["truncated"], k
        for r in res["results"]:
            if r["direction"] == "outgoing":
                want_out[(k, r["edge_type"])] += 1
            else:
                want_in[(k, r["edge_type"])] += 1
    check(f"per-type out-degrees of {len(sample)} samples == hopgraph neighbors", got_out,
          dict(want_out))
    check(f"per-type in-degrees of {len(sample)} samples == hopgraph neighbors", got_in,
          dict(want_in))

    # 4. 2-hop neighbourhood sizes vs `hopgraph traverse --max-hops 2`
    fwd = cur_e.select(F.col("src").alias("a"), F.col("dst").alias("b"))
    both = fwd.union(cur_e.select(F.col("dst").alias("a"), F.col("src").alias("b"))).distinct()
    for direction, adj in (("both", both.cache()), ("out", fwd.distinct().cache())):
        hop1 = sdf.join(adj, sdf.seed == adj.a).select("seed", F.col("b").alias("n"))
        hop2 = (hop1.join(adj, hop1.n == adj.a).select("seed", F.col("b").alias("n")))
        reach = hop1.union(hop2).where(F.col("n") != F.col("seed")).distinct()
        # Every current sample, those that reach nothing (size 0) included.
        got = {k: 0 for k in sample if k not in ended_nodes}
        got.update({r["seed"]: r["count"] for r in reach.groupBy("seed").count().collect()})
        want = {}
        for k in sample:
            if k in ended_nodes:
                continue
            res = json.loads(run([hg, "traverse", "--db", db, k, "--max-hops", "2",
                                  "--direction", direction, "--limit", "100000000",
                                  "--as-of", str(now_ms), "--json"]))
            if res["truncated"]:
                fail(f"traverse {k!r} truncated")
            want[k] = len({r["memory_id"] for r in res["results"]})
        sizes = sorted(want.values())
        check(f"2-hop ({direction}) sizes of {len(want)} samples == hopgraph traverse "
              f"(sizes {sizes[0] if sizes else 0}..{sizes[-1] if sizes else 0}, "
              f"sum {sum(sizes)})", got, want)
    timings["hopgraph_cli_s"] = time.time() - hg_calls

    # 5. values against the lossless JSONL export: every row, or above --value-rows a
    # sample (the sampled nodes, a fixed-seed draw of keys, the edges whose id is a
    # multiple of K, and every edge at an awkward node).
    jsonl_path = os.path.join(work, f"{name}.export.jsonl")
    run([hg, "export", "--db", db, "--out", jsonl_path])
    all_nodes, all_edges = nv <= value_rows, ne <= value_rows
    node_keys = set(sample) | (set() if all_nodes else set(rng.sample(pool, value_rows)))
    k_mod = 1 if all_edges else -(-ne // value_rows)

    def edge_kept(eid, s_, d_) -> bool:
        return all_edges or eid % k_mod == 0 or s_.startswith("awk") or d_.startswith("awk")

    want_nodes = {}
    want_edges = {}
    with open(jsonl_path, encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            if "node" in o:
                n = o["node"]
                if all_nodes or n["key"] in node_keys:
                    want_nodes[n["key"]] = (
                        n.get("kind", ""), n.get("title", ""), n.get("content", ""),
                        float(n.get("importance", 0.0)), n.get("status", ""),
                        n.get("props", {}), rfc(n.get("valid_from")), rfc(n.get("valid_to")))
            elif "edge" in o:
                x = o["edge"]
                if edge_kept(x["id"], x["source"], x["target"]):
                    want_edges[x["id"]] = (
                        x["source"], x["target"], x["type"], float(x.get("weight", 1.0)),
                        x.get("props", {}), rfc(x.get("valid_from")), rfc(x.get("valid_to")))
    os.remove(jsonl_path)
    v_sel = v
    if not all_nodes:
        keys_df = spark.createDataFrame([(k,) for k in sorted(node_keys)], "id STRING")
        v_sel = v.join(F.broadcast(keys_df), "id", "left_semi")
    e_sel = e
    if not all_edges:
        e_sel = e.where((F.col("edge_id") % k_mod == 0) | F.col("src").startswith("awk")
                        | F.col("dst").startswith("awk"))
    got_nodes = {}
    for r in v_sel.toLocalIterator():
        got_nodes[r["id"]] = (r["kind"], r["title"], r["content"], r["importance"],
                              r["status"], json.loads(r["props"]), ms(r["valid_from"]),
                              ms(r["valid_to"]))
    bad = sorted(k for k in want_nodes.keys() | got_nodes.keys()
                 if got_nodes.get(k) != want_nodes.get(k))
    what = "every vertex's" if all_nodes else "sampled vertices'"
    check(f"{what} kind, title, content, importance, status, props, validity "
          f"== JSONL export ({len(want_nodes)} nodes)", [(k, got_nodes.get(k)) for k in bad[:3]],
          [(k, want_nodes.get(k)) for k in bad[:3]])
    got_edges = {}
    for r in e_sel.toLocalIterator():
        got_edges[r["edge_id"]] = (r["src"], r["dst"], r["relationship"], r["weight"],
                                   json.loads(r["props"]), ms(r["valid_from"]),
                                   ms(r["valid_to"]))
    bad = sorted(k for k in want_edges.keys() | got_edges.keys()
                 if got_edges.get(k) != want_edges.get(k))
    what = "every edge's" if all_edges else f"sampled (id % {k_mod} == 0) edges'"
    check(f"{what} ends, type, weight, props, validity, id == JSONL export "
          f"({len(want_edges)} edges)", [(k, got_edges.get(k)) for k in bad[:3]],
          [(k, want_edges.get(k)) for k in bad[:3]])
    # The awkward text really was awkward: it came through byte for byte.
    for r in records.values():
        if r["key"].startswith("awk-") and r.get("title"):
            if got_nodes.get(r["key"], (None, None))[1] != r["title"]:
                fail(f"title of {r['key']!r}")
    timings["checks_s"] = time.time() - t
    summary = dict(graph=name, nodes=nv, edges=ne, samples=len(sample), **{
        k: round(x, 1) for k, x in timings.items()})
    print(f"  {json.dumps(summary)}", flush=True)
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hopgraph", required=True, help="the hopgraph binary")
    ap.add_argument("--workdir", default="/tmp/hopgraph-spark-crosscheck")
    ap.add_argument("--kron-scale", type=int, action="append", default=[],
                    help="generate a Kronecker graph of 2^N nodes (repeatable)")
    ap.add_argument("--mem-nodes", type=int, action="append", default=[],
                    help="generate a memory graph of N nodes with text (repeatable)")
    ap.add_argument("--edges", action="append", default=[],
                    help="an existing src<TAB>dst<TAB>type file (repeatable)")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument("--value-rows", type=int, default=500_000,
                    help="compare every row's values up to this many rows, a sample above")
    a = ap.parse_args(argv)
    if not (a.kron_scale or a.mem_nodes or a.edges):
        ap.error("give at least one of --kron-scale, --mem-nodes, --edges")
    if not os.access(a.hopgraph, os.X_OK):
        print(f"error: {a.hopgraph} is not an executable", file=sys.stderr)
        return 2
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print("error: pyspark is not installed (pip install pyspark; needs Java 17)",
              file=sys.stderr)
        return 2
    os.makedirs(a.workdir, exist_ok=True)
    # PySpark hands timestamps to Python as naive local times: make local time UTC.
    os.environ["TZ"] = "UTC"
    time.tzset()

    graphs = []
    for s in a.kron_scale:
        prefix = os.path.join(a.workdir, f"kron{s}")
        if not os.path.exists(prefix + ".edges.tsv"):
            run([sys.executable, GEN, "kron", "--scale", str(s), "--seed", str(a.seed),
                 "--pairs", "0", "--out", prefix])
        graphs.append((f"kron{s}", [prefix + ".edges.tsv"]))
    for n in a.mem_nodes:
        prefix = os.path.join(a.workdir, f"mem{n}")
        if not os.path.exists(prefix + ".jsonl"):
            run([sys.executable, GEN, "memory", "--nodes", str(n), "--seed", str(a.seed),
                 "--pairs", "0", "--text", "--formats", "jsonl", "--out", prefix])
        graphs.append((f"mem{n}", [prefix + ".jsonl"]))
    for path in a.edges:
        graphs.append((os.path.basename(path).split(".")[0], [path]))

    spark = (SparkSession.builder.master("local[2]").appName("hopgraph-crosscheck")
             .config("spark.driver.memory", a.driver_memory)
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    for name, inputs in graphs:
        with open(inputs[0], encoding="utf-8") as f:
            first = f.readline()
        anchor = (json.loads(first).get("node", {}).get("key")
                  or json.loads(first).get("edge", {}).get("source")
                  if first.startswith("{") else first.split("\t")[0])
        if not anchor:  # a JSONL header line: take the next line
            with open(inputs[0], encoding="utf-8") as f:
                f.readline()
                o = json.loads(f.readline())
                anchor = o.get("node", {}).get("key") or o["edge"]["source"]
        nodes, edges = awkward(anchor)
        extra = os.path.join(a.workdir, f"{name}.awkward.jsonl")
        with open(extra, "w", encoding="utf-8") as f:
            for o in nodes + edges:
                f.write(json.dumps(o, ensure_ascii=False) + "\n")
        results.append(crosscheck(spark, a.hopgraph, name, inputs + [extra], a.workdir,
                                  a.samples, a.seed, a.value_rows))
    spark.stop()
    print("\n" + json.dumps(results, indent=1))
    if failures:
        print(f"\nFAILED: {len(failures)} mismatches", file=sys.stderr)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
