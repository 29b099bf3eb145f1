#!/usr/bin/env python3
"""`memory_search` latency end to end: hopgraph-mcp over stdio on an existing store.

The text comparison's hopgraph store (`run.py` builds DATA/hopgraph.db) is served as the
default context of a temporary data directory (a symbolic link, nothing copied), and every
query of DATA/queries.jsonl is sent as `memory_search {query, limit 10}`, one call in
flight: a warm-up pass, then each call timed from writing the request line to reading the
response line (JSON-RPC, the tool's result with snippets, the pipe). The goal: at most
2 ms per call at 1M documents. Prints p50 / p99 / mean in ms.

Usage: mcp_latency.py DATA HOPGRAPH_MCP
"""
import json, os, statistics, subprocess, sys, tempfile, time


def main():
    data, binary = sys.argv[1], sys.argv[2]
    store = os.path.abspath(os.path.join(data, "hopgraph.db"))
    queries = [json.loads(l)["q"] for l in open(os.path.join(data, "queries.jsonl"))]
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(store, os.path.join(tmp, "default"))
        env = dict(os.environ)
        env.pop("HOPGRAPH_EMBED_MODEL", None)
        p = subprocess.Popen([binary, "--data-dir", tmp], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=env)
        next_id = 0

        def req(method, params):
            nonlocal next_id
            next_id += 1
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method,
                                      "params": params}) + "\n")
            p.stdin.flush()
            r = json.loads(p.stdout.readline())
            if "error" in r or r.get("result", {}).get("isError"):
                raise RuntimeError(str(r)[:300])
            return r

        req("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "mcp-latency", "version": "1"}})
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        p.stdin.flush()
        call = lambda q: req("tools/call", {"name": "memory_search",
                                            "arguments": {"query": q, "limit": 10}})
        for q in queries:
            call(q)
        ms = []
        for q in queries:
            t = time.perf_counter()
            call(q)
            ms.append((time.perf_counter() - t) * 1e3)
        p.stdin.close()
        p.wait()
    ms.sort()
    print(f"hopgraph-mcp memory_search over stdio, {len(ms)} queries: "
          f"p50 {statistics.median(ms):.3f} ms, p99 {ms[int(len(ms) * 0.99)]:.3f} ms, "
          f"mean {statistics.mean(ms):.3f} ms", flush=True)


if __name__ == "__main__":
    main()
