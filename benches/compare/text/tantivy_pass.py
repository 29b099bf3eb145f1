#!/usr/bin/env python3
"""tantivy's side of `side_by_side.sh`: the same index and queries as `run.py`'s tantivy
run, with `text_bench query`'s command line and output, so the two engines can run at the
same time, one per core (see RESULTS.md, "Against tantivy at the same time").

  tantivy_pass.py build DATA_DIR          # DATA_DIR/tantivy.idx from DATA_DIR/docs.jsonl
  tantivy_pass.py query STORE QUERIES     # STORE: any path in DATA_DIR (e.g. hopgraph.db);
                                          # the index read is the sibling tantivy.idx

`query` runs every query once to warm up, then prints one JSON line per query: {"ms",
"cpu_ms", "keys"}, where cpu_ms is the thread's CPU time around the search
(`time.thread_time()`, the Python bindings' cost included, as in run.py's wall time).
"""
import json, os, re, sys, time

import tantivy


def schema():
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("key", stored=True, tokenizer_name="raw")
    sb.add_text_field("title", tokenizer_name="en_stem")
    sb.add_text_field("content", tokenizer_name="en_stem")
    return sb.build()


def build_index(data):
    """DATA_DIR/tantivy.idx from DATA_DIR/docs.jsonl (the directory must not exist);
    returns the index and the build's seconds."""
    path = os.path.join(data, "tantivy.idx")
    os.makedirs(path, exist_ok=False)
    index = tantivy.Index(schema(), path=path)
    t = time.perf_counter()
    w = index.writer(heap_size=500_000_000, num_threads=2)
    with open(os.path.join(data, "docs.jsonl")) as f:
        for d in map(json.loads, f):
            w.add_document(tantivy.Document(key=d["key"], title=d["title"], content=d["content"]))
    w.commit()
    w.wait_merging_threads()
    return index, time.perf_counter() - t


def searcher_of(index):
    """A function from a query to the keys of its top 10: the query's words quoted and
    OR-ed (the query parser's default), title boosted 2."""
    index.reload()
    searcher = index.searcher()

    def search(q):
        words = re.findall(r"\w+", q)
        if not words:
            return []
        query = index.parse_query(" ".join(f'"{x}"' for x in words), ["title", "content"],
                                  field_boosts={"title": 2.0})
        return [searcher.doc(a)["key"][0] for _, a in searcher.search(query, 10).hits]

    return search


def build(data):
    _, seconds = build_index(data)
    print(json.dumps({"build_s": seconds}))


def query(store, queries):
    index = tantivy.Index(schema(), path=os.path.join(os.path.dirname(os.path.abspath(store)), "tantivy.idx"))
    search = searcher_of(index)
    qs = [json.loads(l)["q"] for l in open(queries)]
    for q in qs:
        search(q)
    out = sys.stdout
    for q in qs:
        t, c = time.perf_counter(), time.thread_time()
        keys = search(q)
        cpu, ms = time.thread_time() - c, time.perf_counter() - t
        out.write(json.dumps({"ms": ms * 1e3, "cpu_ms": cpu * 1e3, "keys": keys}) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["build"] and len(sys.argv) == 3:
        build(sys.argv[2])
    elif sys.argv[1:2] == ["query"] and len(sys.argv) == 4:
        query(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
