#!/usr/bin/env python3
"""`memory_search` latency end to end: hopgraph-mcp over stdio on an existing store.

The text comparison's hopgraph store (`run.py` builds DATA/hopgraph.db) is served as the
default context of a temporary data directory (a symbolic link, nothing copied), and every
query of DATA/queries.jsonl is sent as `memory_search {query, limit 10}`, one call in
flight: a warm-up pass, then each call timed from writing the request line to reading the
response line (JSON-RPC, the tool's result with snippets, the pipe). The goal: at most
2 ms per call at 1M documents. Prints p50 / p99 / mean in ms. The client is
`benches/compare/server/first_call.py`'s.

Usage: mcp_latency.py DATA HOPGRAPH_MCP
"""
import json, os, statistics, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from first_call import Server  # noqa: E402


def main():
    data, binary = sys.argv[1], sys.argv[2]
    store = os.path.abspath(os.path.join(data, "hopgraph.db"))
    queries = [json.loads(l)["q"] for l in open(os.path.join(data, "queries.jsonl"))]
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(store, os.path.join(tmp, "default"))
        server = Server(binary, tmp)
        search = lambda q: server.call("memory_search", {"query": q, "limit": 10})[0]
        for q in queries:
            search(q)
        ms = sorted(search(q) for q in queries)
        server.close()
    print(f"hopgraph-mcp memory_search over stdio, {len(ms)} queries: "
          f"p50 {statistics.median(ms):.3f} ms, p99 {ms[int(len(ms) * 0.99)]:.3f} ms, "
          f"mean {statistics.mean(ms):.3f} ms", flush=True)


if __name__ == "__main__":
    main()
