#!/usr/bin/env python3
"""hopgraph vs SQLite FTS5 and tantivy on the corpus of corpus.py (see RESULTS.md).

FTS5: one table fts5(title, content, tokenize='porter unicode61'), ranked by bm25() with
the same field weights as hopgraph's default (title 2, content 1); a query's words are
quoted and OR-ed (hopgraph ranks any-word matches too), punctuation dropped since FTS5's
query syntax would reject it. hopgraph: examples/text_bench.rs (release build), in-process,
the store built by the bulk loader (`text_bench bulk`), timed keys only as the others
return them, then with the snippets its searches make by default. Also reported: success@10 counting a
document with exactly the target's content as a hit ("dup-aware").
Both: a warm-up pass over every query, then each query timed once; top 10 compared
with the query's target document (success@10).
Usage: run.py DATA_DIR TEXT_BENCH_BINARY
"""
import json, os, re, sqlite3, statistics, subprocess, sys, time


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


CONTENT = {}  # key -> content, for the duplicate-aware success


def report(name, qs, ms, keys, build_s, size):
    """success@10: the target's key in the top 10; "dup-aware": the target or a document
    with exactly the target's content (the corpus repeats licenses, changelog entries and
    API pages verbatim, and which copy ranks first is a tie-break, not retrieval)."""
    fams, dups = {}, {}
    for q, k in zip(qs, keys):
        fams.setdefault(q["family"], []).append(q["target"] in k)
        c = CONTENT.get(q["target"])
        dups.setdefault(q["family"], []).append(any(CONTENT.get(x) == c for x in k))
    succ = ", ".join(f"{f} {sum(v)/len(v):.3f} (n={len(v)})" for f, v in sorted(fams.items()))
    dup = ", ".join(f"{f} {sum(v)/len(v):.3f}" for f, v in sorted(dups.items()))
    print(f"{name}: build {build_s:.1f} s, size {size/1e6:.1f} MB, "
          f"p50 {pct(ms,50):.3f} ms, p99 {pct(ms,99):.3f} ms, mean {statistics.mean(ms):.3f} ms; "
          f"success@10: {succ}; dup-aware: {dup}", flush=True)


def tantivy_run(data, qs):
    """The `tantivy` Python package (the Rust engine through its bindings): fields
    title and content with its `en_stem` tokenizer (lower case + Porter-style English
    stemmer), BM25, title boosted 2 as above; the query's words quoted and OR-ed (the
    query parser's default). Skipped with a note when the package is missing."""
    try:
        import tantivy
        # The index and the search, as tantivy_pass.py (beside this file) makes them.
        from tantivy_pass import build_index, searcher_of
    except ImportError:
        print("tantivy: skipped (pip install tantivy)")
        return
    path = os.path.join(data, "tantivy.idx")
    subprocess.run(["rm", "-rf", path], check=True)
    index, build = build_index(data)
    search = searcher_of(index)

    for q in qs:
        search(q["q"])
    ms, keys = [], []
    for q in qs:
        t = time.perf_counter()
        k = search(q["q"])
        ms.append((time.perf_counter() - t) * 1e3)
        keys.append(k)
    report("tantivy (python bindings) " + tantivy.__version__, qs, ms, keys, build, du(path))


def main():
    data, binary = sys.argv[1], sys.argv[2]
    qs = [json.loads(l) for l in open(os.path.join(data, "queries.jsonl"))]
    with open(os.path.join(data, "docs.jsonl")) as f:
        for d in map(json.loads, f):
            CONTENT[d["key"]] = d["content"]
    # FTS5
    path = os.path.join(data, "fts5.db")
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    t = time.perf_counter()
    con.execute("create virtual table docs using fts5(key unindexed, title, content, "
                "tokenize='porter unicode61')")
    with open(os.path.join(data, "docs.jsonl")) as f:
        con.executemany("insert into docs values (?, ?, ?)",
                        ((d["key"], d["title"], d["content"]) for d in map(json.loads, f)))
    con.commit()
    fts_build = time.perf_counter() - t
    sql = "select key from docs where docs match ? order by bm25(docs, 0, 2, 1) limit 10"

    def fts(q):
        words = re.findall(r"\w+", q)
        return [r[0] for r in con.execute(sql, (" OR ".join(f'"{w}"' for w in words),))]

    for q in qs:
        fts(q["q"])
    ms, keys = [], []
    for q in qs:
        t = time.perf_counter()
        k = fts(q["q"])
        ms.append((time.perf_counter() - t) * 1e3)
        keys.append(k)
    report("sqlite fts5 " + sqlite3.sqlite_version, qs, ms, keys, fts_build, du(path))
    con.close()
    tantivy_run(data, qs)
    # hopgraph
    dbdir = os.path.join(data, "hopgraph.db")
    subprocess.run(["rm", "-rf", dbdir], check=True)
    # The bulk loader (what `hopgraph import` of a new store uses); `text_bench build`
    # is the transactional path (commits of 5,000 documents, then a checkpoint).
    out = subprocess.run([binary, "bulk", dbdir, os.path.join(data, "docs.jsonl")],
                         check=True, capture_output=True, text=True).stdout
    hg_build = json.loads(out)["build_s"]
    # Keys only, as FTS5 and tantivy return them above (like for like); then with the
    # snippets a search makes by default (each hit's first match found in its text).
    for name, snippets in [("hopgraph", "0"), ("hopgraph, with snippets", "1")]:
        out = subprocess.run([binary, "query", dbdir, os.path.join(data, "queries.jsonl")],
                             check=True, capture_output=True, text=True,
                             env={**os.environ, "TEXT_BENCH_SNIPPETS": snippets}).stdout
        rows = [json.loads(l) for l in out.splitlines()]
        report(name, qs, [r["ms"] for r in rows], [r["keys"] for r in rows], hg_build,
               du(dbdir))


if __name__ == "__main__":
    main()
