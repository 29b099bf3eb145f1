#!/usr/bin/env python3
"""Import of memories with text and embeddings: `hopgraph import` vs SQLite FTS5 + sqlite-vec.

The retrieval issue's goal: importing N memories with text and embeddings into hopgraph is
no slower than loading the same into SQLite FTS5 (text) plus sqlite-vec (vectors) would be.

Input: the first N documents of the text comparison corpus (`benches/compare/text/corpus.py
OUT N Q`: real man pages and package documentation) and, per document, a synthetic
embedding of DIM floats drawn around 1,000 seeded random centres (no real model embeds a
million texts here in reasonable time; load time does not depend on what the numbers mean).

- hopgraph: one JSONL file in hopgraph's export format (key, title, content, embedding),
  no header line, written once, then `hopgraph import --db DIR FILE --quiet` timed end to end: parsing,
  the text index, the vectors, fsync. The import stores the vectors flat and leaves their
  HNSW graph for later (its default, `--vector-index later`), as sqlite-vec stores them:
  both stores then answer vector queries by exact scan. With `--index`, `hopgraph index`
  (the graph build) is timed after it and reported on its own line.
- SQLite (apsw, which can load extensions, + the `sqlite-vec` package): the same rows
  already parsed in memory (so SQLite is not charged for JSON parsing), inserted in one
  transaction into `fts5(key UNINDEXED, title, content, tokenize='porter unicode61')` and
  a `vec0(embedding float[DIM])` table, then committed. Then again from the same JSONL
  file hopgraph imports: Python hands SQLite each line as text, `json_extract` takes the
  fields and sqlite-vec parses the embedding's JSON array (both stores read the same bytes). sqlite-vec's vec0 table is a flat
  (exact-scan) index; hopgraph also builds an approximate (HNSW) index.

Usage: import.py CORPUS_DIR HOPGRAPH_BINARY WORK_DIR [N] [DIM] [--index] [--no-jsonl]
(--no-jsonl: skip SQLite's load from the JSONL file, the slowest of the three, when only
the first two are compared.)
Needs: pip install numpy apsw sqlite-vec
"""
import json, os, shutil, struct, subprocess, sys, time

import numpy as np


def new_sqlite(path):
    """A connection to a new SQLite database at `path` with sqlite-vec loaded."""
    import apsw, sqlite_vec
    for suffix in ("", "-wal", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    con = apsw.Connection(path)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    return con


def create_tables(con, dim):
    """The FTS5 and vec0 tables, and the transaction the load runs in."""
    con.execute("create virtual table docs using fts5(key unindexed, title, content, "
                "tokenize='porter unicode61')")
    con.execute(f"create virtual table vecs using vec0(embedding float[{dim}])")
    con.execute("begin")


def main():
    index = "--index" in sys.argv
    from_jsonl = "--no-jsonl" not in sys.argv
    argv = [a for a in sys.argv if a not in ("--index", "--no-jsonl")]
    corpus, binary, work = argv[1], argv[2], argv[3]
    n = int(argv[4]) if len(argv) > 4 else 1_000_000
    dim = int(argv[5]) if len(argv) > 5 else 128
    os.makedirs(work, exist_ok=True)
    docs = []
    with open(os.path.join(corpus, "docs.jsonl")) as f:
        for line in f:
            docs.append(json.loads(line))
            if len(docs) == n:
                break
    n = len(docs)
    rng = np.random.default_rng(42)
    centres = rng.uniform(-1, 1, size=(1000, dim)).astype(np.float32)
    vecs = centres[rng.integers(0, 1000, size=n)] + rng.normal(0, 0.5, size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    print(f"{n} documents, {dim}-d embeddings", flush=True)

    # hopgraph
    jsonl = os.path.join(work, f"memories-{n}-{dim}.jsonl")
    if not os.path.exists(jsonl):
        with open(jsonl, "w") as out:
            for d, v in zip(docs, vecs):
                node = {"key": d["key"], "title": d["title"], "content": d["content"],
                        "embedding": [round(float(x), 6) for x in v]}
                out.write(json.dumps({"node": node}) + "\n")
    db = os.path.join(work, "hopgraph.db")
    shutil.rmtree(db, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([binary, "import", "--db", db, jsonl, "--quiet"], check=True)
    hg = time.perf_counter() - t
    hg_size = sum(os.path.getsize(os.path.join(db, x)) for x in os.listdir(db))
    print(f"hopgraph import: {hg:.1f} s, {hg_size / 1e6:.1f} MB", flush=True)
    if index:
        t = time.perf_counter()
        subprocess.run([binary, "index", "--db", db, "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"hopgraph index (HNSW graph, after the import): {time.perf_counter() - t:.1f} s",
              flush=True)

    # SQLite FTS5 + sqlite-vec
    path = os.path.join(work, "sqlite.db")
    blobs = [struct.pack(f"{dim}f", *v) for v in vecs]
    con = new_sqlite(path)
    t = time.perf_counter()
    create_tables(con, dim)
    con.executemany("insert into docs(rowid, key, title, content) values (?, ?, ?, ?)",
                    ((i + 1, d["key"], d["title"], d["content"]) for i, d in enumerate(docs)))
    t_text = time.perf_counter() - t
    con.executemany("insert into vecs(rowid, embedding) values (?, ?)",
                    ((i + 1, b) for i, b in enumerate(blobs)))
    con.execute("commit")
    sq = time.perf_counter() - t
    con.close()
    sq_size = os.path.getsize(path)
    print(f"sqlite fts5 + sqlite-vec: {sq:.1f} s (text {t_text:.1f} s, vectors {sq - t_text:.1f} s), "
          f"{sq_size / 1e6:.1f} MB", flush=True)
    print(f"hopgraph / sqlite: {hg / sq:.2f}x the time", flush=True)
    if not from_jsonl:
        return

    # SQLite FTS5 + sqlite-vec loading the same JSONL file hopgraph imports: Python only
    # splits lines; SQLite's json_extract takes the fields and sqlite-vec parses each
    # embedding's JSON array itself (it accepts vectors as JSON text), so both stores
    # are charged for reading the same bytes.
    path2 = os.path.join(work, "sqlite-jsonl.db")
    con = new_sqlite(path2)
    t = time.perf_counter()
    create_tables(con, dim)
    with open(jsonl) as f:
        con.executemany(
            "insert into docs(rowid, key, title, content) values (?1, "
            "json_extract(?2, '$.node.key'), json_extract(?2, '$.node.title'), "
            "json_extract(?2, '$.node.content'))",
            ((i + 1, line) for i, line in enumerate(f)))
    with open(jsonl) as f:
        con.executemany(
            "insert into vecs(rowid, embedding) values (?1, json_extract(?2, '$.node.embedding'))",
            ((i + 1, line) for i, line in enumerate(f)))
    con.execute("commit")
    sq2 = time.perf_counter() - t
    con.close()
    print(f"sqlite fts5 + sqlite-vec from the same JSONL: {sq2:.1f} s, "
          f"{os.path.getsize(path2) / 1e6:.1f} MB", flush=True)
    print(f"hopgraph / sqlite from the same JSONL: {hg / sq2:.2f}x the time", flush=True)


if __name__ == "__main__":
    main()
