#!/usr/bin/env python3
"""create_memory latency through hopgraph-mcp over stdio, with and without a model.

The issue's goal: `create_memory` with server-side embedding p50 <= 15 ms for a
40-word memory. Texts: consecutive 40-word pieces of the GNU GPL v3 text shipped with
Debian (/usr/share/common-licenses/GPL-3), so every call embeds a different real text.
Each call is sent alone and timed from write to the response line (one client, one
request in flight), after 20 warm-up calls. Fresh data directory per run.

Usage: create_latency.py HOPGRAPH_MCP MODEL_DIR [CALLS]
"""
import json, os, statistics, subprocess, sys, tempfile, time


def pieces(n, words=40):
    text = open("/usr/share/common-licenses/GPL-3").read().split()
    out, i = [], 0
    while len(out) < n:
        out.append(" ".join(text[i % len(text):][:words]))
        i += words
    return out


def run(binary, model, texts):
    with tempfile.TemporaryDirectory() as d:
        cmd = [binary, "--data-dir", d]
        env = dict(os.environ)
        env.pop("HOPGRAPH_EMBED_MODEL", None)
        if model:
            cmd += ["--embed-model", model]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env)
        rid = 0

        def request(method, params):
            nonlocal rid
            rid += 1
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                      "params": params}) + "\n")
            p.stdin.flush()
            r = json.loads(p.stdout.readline())
            if "error" in r or r.get("result", {}).get("isError"):
                raise RuntimeError(str(r)[:300])
            return r

        request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "latency", "version": "1"}})
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        p.stdin.flush()
        ms = []
        for i, t in enumerate(texts):
            start = time.perf_counter()
            request("tools/call", {"name": "create_memory", "arguments": {"type": "semantic", "content": t}})
            if i >= 20:
                ms.append((time.perf_counter() - start) * 1e3)
        p.stdin.close()
        p.wait(timeout=60)
        return ms


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    binary, model = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    texts = pieces(calls + 20)
    print(f"load average before: {os.getloadavg()}")
    for name, m in (("no model", None), ("with model", model), ("no model", None), ("with model", model)):
        ms = run(binary, m, texts)
        print(f"{name:10}: {len(ms)} calls, p50 {pct(ms, .5):.2f} ms, p99 {pct(ms, .99):.2f} ms, "
              f"mean {statistics.mean(ms):.2f} ms", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
