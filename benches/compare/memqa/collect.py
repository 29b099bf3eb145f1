"""Collects every system's ranked list for every LoCoMo question (see README.md).

    python collect.py --data LOCOMO --model MODEL_DIR --hopgraph BIN --mcp BIN --work DIR

Writes DIR/lists.json: per conversation, per question, the top 50 of
  fts5     SQLite FTS5, porter tokenizer, bm25, the question's words OR-ed
  text     hopgraph memory_search, query only (engine BM25F), over MCP stdio
  vector   hopgraph memory_search, embedding only (the engine's vector index)
  cosine   exact cosine in numpy over the exported embeddings
  hybrid   hopgraph memory_search, query + embedding (the server's fusion)
  server   hopgraph-mcp --embed-model: query only, the server embeds it (its fusion)
and each conversation's `next` edges, so eval.py can model fusions offline.
"""

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locomo  # noqa: E402

DEPTH = 50


def content(t):
    return f"{t['speaker']}: {t['text']}"


def write_jsonl(path, nodes, edges):
    with open(path, "w") as f:
        for n in nodes:
            f.write(json.dumps({"node": n}) + "\n")
        for e in edges:
            f.write(json.dumps({"edge": e}) + "\n")


def next_edges(turns):
    """Consecutive turns of one session: turn -> the next one, type `next`."""
    out = []
    for a, b in zip(turns, turns[1:]):
        if a["session"] == b["session"]:
            out.append((a["id"], b["id"]))
    return out


def import_store(hopgraph, db, jsonl, model):
    shutil.rmtree(db, ignore_errors=True)
    subprocess.run([hopgraph, "import", "--db", db, "--quiet", "--embed-model", model,
                    "--timestamp", "1", jsonl], check=True, stdout=subprocess.DEVNULL)


def export_embeddings(hopgraph, db):
    out = subprocess.run([hopgraph, "export", "--db", db], check=True,
                         capture_output=True, text=True).stdout
    emb = {}
    for line in out.splitlines():
        d = json.loads(line)
        if "node" in d and d["node"].get("embedding"):
            emb[d["node"]["key"]] = np.asarray(d["node"]["embedding"], dtype=np.float32)
    return emb


class Mcp:
    def __init__(self, binary, data_dir, model=None):
        cmd = [binary, "--data-dir", data_dir, "--prefault-mb", "0"]
        env = dict(os.environ)
        env.pop("HOPGRAPH_EMBED_MODEL", None)
        if model:
            cmd += ["--embed-model", model]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env)
        self.id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "memqa", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def request(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        r = json.loads(self.p.stdout.readline())
        if "error" in r:
            raise RuntimeError(f"{method}: {r['error']}")
        return r["result"]

    def call(self, tool, args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        if r.get("isError"):
            raise RuntimeError(f"{tool}: {r['content'][0]['text']}")
        return r.get("structuredContent") or json.loads(r["content"][0]["text"])

    def search(self, **args):
        r = self.call("memory_search", dict(args, limit=DEPTH))
        return [[h["id"], h["score"]] for h in r["results"]]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def fts5_lists(conv, questions):
    con = sqlite3.connect(":memory:")
    con.execute("create virtual table t using fts5(key unindexed, content, "
                "tokenize='porter unicode61')")
    con.executemany("insert into t values (?, ?)",
                    ((t["id"], content(t)) for t in conv["turns"]))
    sql = f"select key, bm25(t) from t where t match ? order by bm25(t) limit {DEPTH}"
    out = []
    for q in questions:
        words = re.findall(r"\w+", q["question"])
        if not words:
            out.append([])
            continue
        rows = con.execute(sql, (" OR ".join(f'"{w}"' for w in words),)).fetchall()
        out.append([[k, -s] for k, s in rows])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="locomo10.json or locomo10_v2/ directory")
    ap.add_argument("--model", required=True, help="all-MiniLM-L6-v2 model directory")
    ap.add_argument("--hopgraph", required=True, help="release `hopgraph` binary")
    ap.add_argument("--mcp", required=True, help="release `hopgraph-mcp` binary")
    ap.add_argument("--work", required=True, help="scratch directory (stores, lists.json)")
    ap.add_argument("--no-server", action="store_true",
                    help="skip the --embed-model server pass")
    a = ap.parse_args()

    convs = locomo.load(a.data)
    os.makedirs(a.work, exist_ok=True)
    data_dir = os.path.join(a.work, "contexts")
    shutil.rmtree(data_dir, ignore_errors=True)
    os.makedirs(data_dir)
    t0 = time.time()
    # Questions: one store, so their embeddings come from the same Rust model.
    qnodes = [{"key": f"{ci}-{qi}", "content": q["question"]}
              for ci, c in enumerate(convs) for qi, q in enumerate(c["questions"])]
    qjsonl = os.path.join(a.work, "questions.jsonl")
    write_jsonl(qjsonl, qnodes, [])
    qdb = os.path.join(a.work, "questions.hg")
    import_store(a.hopgraph, qdb, qjsonl, a.model)
    qemb = export_embeddings(a.hopgraph, qdb)
    shutil.rmtree(qdb)
    print(f"questions embedded: {len(qemb)} ({time.time() - t0:.0f} s)", file=sys.stderr)

    result = {"data": os.path.abspath(a.data), "conversations": []}
    for ci, c in enumerate(convs):
        ctx = f"c{ci}"
        nodes = [{"key": t["id"], "content": content(t), "kind": "turn",
                  "props": {"session": t["session"]}} for t in c["turns"]]
        edges = [{"source": s, "target": d, "type": "next"} for s, d in next_edges(c["turns"])]
        path = os.path.join(a.work, f"{ctx}.jsonl")
        write_jsonl(path, nodes, edges)
        db = os.path.join(data_dir, ctx)
        import_store(a.hopgraph, db, path, a.model)
        memb = export_embeddings(a.hopgraph, db)
        keys = [t["id"] for t in c["turns"]]
        mat = np.stack([memb[k] for k in keys])
        result["conversations"].append({
            "name": c["name"], "turns": len(keys), "edges": [list(e) for e in next_edges(c["turns"])],
            "questions": [dict(q) for q in c["questions"]],
        })
        entry = result["conversations"][-1]
        fts = fts5_lists(c, c["questions"])
        for qi, q in enumerate(entry["questions"]):
            q["fts5"] = fts[qi]
            qv = qemb[f"{ci}-{qi}"]
            sims = mat @ qv
            top = np.argsort(-sims, kind="stable")[:DEPTH]
            q["cosine"] = [[keys[i], round(float(sims[i]), 6)] for i in top]
        print(f"{c['name']}: {len(keys)} turns, {len(c['questions'])} questions imported "
              f"({time.time() - t0:.0f} s)", file=sys.stderr)

    mcp = Mcp(a.mcp, data_dir)
    for ci, entry in enumerate(result["conversations"]):
        ctx = f"c{ci}"
        for qi, q in enumerate(entry["questions"]):
            emb = [float(x) for x in qemb[f"{ci}-{qi}"]]
            q["text"] = mcp.search(context=ctx, query=q["question"])
            q["vector"] = mcp.search(context=ctx, embedding=emb)
            q["hybrid"] = mcp.search(context=ctx, query=q["question"], embedding=emb)
        print(f"{entry['name']}: searched ({time.time() - t0:.0f} s)", file=sys.stderr)
    mcp.close()
    if not a.no_server:
        mcp = Mcp(a.mcp, data_dir, model=a.model)
        for ci, entry in enumerate(result["conversations"]):
            for q in entry["questions"]:
                q["server"] = mcp.search(context=f"c{ci}", query=q["question"])
        mcp.close()
        print(f"server pass done ({time.time() - t0:.0f} s)", file=sys.stderr)
    describe = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    result["commit"] = describe.stdout.strip()
    result["sqlite"] = sqlite3.sqlite_version
    with open(os.path.join(a.work, "lists.json"), "w") as f:
        json.dump(result, f)
    print(f"wrote {os.path.join(a.work, 'lists.json')}", file=sys.stderr)


if __name__ == "__main__":
    main()
