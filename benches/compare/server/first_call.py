#!/usr/bin/env python3
"""First call after a restart against warm calls, hopgraph-mcp over stdio.

Fills a fresh data directory with N memories (content from the GPL text shipped with
Debian), linked in a chain, through one server; then R times: start the server, send
initialize, and time the first get_memory, then 50 warm get_memory calls and the first
and warm memory_search. Reports the medians over the R restarts of the first call and of
the warm medians. Usage: first_call.py HOPGRAPH_MCP [N] [R] [BINARY_B]
(with BINARY_B, both binaries are restarted alternately on the same directory).
"""
import json, os, statistics, subprocess, sys, tempfile, time


class Server:
    def __init__(self, binary, data):
        env = dict(os.environ)
        env.pop("HOPGRAPH_EMBED_MODEL", None)
        self.p = subprocess.Popen([binary, "--data-dir", data], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, env=env)
        self.id = 0
        self.req("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "first-call", "version": "1"}})
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.p.stdin.flush()

    def req(self, method, params):
        self.id += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                                       "params": params}) + "\n")
        self.p.stdin.flush()
        r = json.loads(self.p.stdout.readline())
        if "error" in r or r.get("result", {}).get("isError"):
            raise RuntimeError(str(r)[:300])
        return r["result"]

    def call(self, tool, args):
        t = time.perf_counter()
        r = self.req("tools/call", {"name": tool, "arguments": args})
        return (time.perf_counter() - t) * 1e3, r

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def main():
    a = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    binaries = [a] + sys.argv[4:5]
    words = open("/usr/share/common-licenses/GPL-3").read().split()
    with tempfile.TemporaryDirectory() as data:
        s = Server(a, data)
        ids = []
        for i in range(n):
            text = " ".join(words[(i * 7) % (len(words) - 40):][:30])
            _, r = s.call("create_memory", {"type": "semantic", "content": text})
            ids.append(r["structuredContent"]["id"])
            if i:
                s.call("link", {"source_id": ids[-1], "target_id": ids[-2], "edge_type": "related_to"})
        s.close()
        probe = ids[n // 2]
        res = {b: {"first_get": [], "warm_get": [], "first_search": [], "warm_search": []} for b in binaries}
        for r in range(rounds):
            for b in binaries:
                s = Server(b, data)
                fg, _ = s.call("get_memory", {"memory_id": probe})
                wg = statistics.median(s.call("get_memory", {"memory_id": probe})[0] for _ in range(50))
                fs, _ = s.call("memory_search", {"query": "software license"})
                ws = statistics.median(s.call("memory_search", {"query": "software license"})[0] for _ in range(20))
                s.close()
                for k, v in (("first_get", fg), ("warm_get", wg), ("first_search", fs), ("warm_search", ws)):
                    res[b][k].append(v)
        for b in binaries:
            m = {k: statistics.median(v) for k, v in res[b].items()}
            print(f"{b}: {n} memories, {rounds} restarts: first get_memory {m['first_get']:.2f} ms vs warm "
                  f"{m['warm_get']:.2f} ms ({m['first_get']/m['warm_get']:.1f}x); first memory_search "
                  f"{m['first_search']:.2f} vs warm {m['warm_search']:.2f} ms "
                  f"({m['first_search']/m['warm_search']:.1f}x)")


if __name__ == "__main__":
    main()
