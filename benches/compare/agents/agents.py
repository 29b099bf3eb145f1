#!/usr/bin/env python3
"""Many agents on one hopgraph-mcp server over streamable HTTP (issue #44 item 4).

One server (`--http 127.0.0.1:0`) on a fresh data directory, filled with M memories
(linked in a chain plus random links). Then, for each N in the client counts and each
mix, N client *processes* (one MCP session each, so the Python client's GIL is not the
limit) call tools back to back for D seconds:

- read:  memory_search / get_memory / memory_path in equal parts;
- mixed: the same with 20% of calls create_memory (each a durable commit);
- write: every call a create_memory (N concurrent writers: what group commit is for).

Reported per (mix, N): calls/s, p50 and p99 latency (ms), the throughput ratio to N = 1
of the same mix in the same run, and for the mixed runs the acknowledged writes/s, the
writes ratio to N = 1, and fsync + fdatasync calls of the server per acknowledged write
(counted by `perf stat` on the server's syscall tracepoints while the clients run; the
WAL's group commit lets one fsync acknowledge several writers).

The client speaks the transport directly (http.client, JSON-RPC in POST bodies, answers
as JSON or as one SSE event) to keep its per-call cost small and fixed; the official
Python SDK drives the same transport in the crate's tests. Even so, a Python client
costs about as much CPU per call as the server's answer, and on a small machine the
clients take the cores the server would scale onto. `--load BIN` runs the calls from
`BIN` instead (the `agents_load` example of hopgraph-mcp: the same calls and mixes, one
thread per session, plain `std::net`, a few microseconds per call):

    cargo build --release -p hopgraph-mcp --bin hopgraph-mcp --example agents_load
    agents.py target/release/hopgraph-mcp --load target/release/examples/agents_load

`--protocol 2026-07-28` (with `--load` only) makes the clients stateless, as that revision
of MCP is: no session, every request carrying its protocol version and capabilities. The
default, 2025-06-18, opens one session per client. `--rounds R` runs the client counts R
times over (N = 1, 2, ..., 1, 2, ...), so that the host's noise falls on every N alike,
and ends with each N's calls summed over the rounds against N = 1's.

Usage: agents.py HOPGRAPH_MCP [--clients 1,2,4,8,32] [--seconds 10] [--memories 2000]
       [--mixes read,mixed,write] [--load AGENTS_LOAD] [--protocol VERSION]
       [--rounds R] [--json OUT]
"""
import argparse, http.client, json, multiprocessing as mp, os, random, re, shutil
import signal, statistics, subprocess, sys, tempfile, time

WORDS = ("memory graph agent session tool search path link note fact user project task "
         "plan result error fix test build release design storage index query answer "
         "source reason context time change version record event topic idea").split()


class Client:
    """One MCP session over streamable HTTP."""

    def __init__(self, host, port):
        self.conn = http.client.HTTPConnection(host, port, timeout=120)
        self.session = None
        self.next_id = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "agents-bench", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", "/mcp", json.dumps(msg), headers)
        r = self.conn.getresponse()
        body = r.read().decode()
        if r.status >= 400:
            raise RuntimeError(f"HTTP {r.status}: {body[:300]}")
        self.session = r.getheader("Mcp-Session-Id") or self.session
        return r.getheader("Content-Type") or "", body

    def rpc(self, method, params):
        self.next_id += 1
        ctype, body = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                 "params": params})
        if ctype.startswith("text/event-stream"):
            for line in body.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    msg = json.loads(line[5:])
                    if msg.get("id") == self.next_id:
                        break
            else:
                raise RuntimeError(f"no answer in the event stream: {body[:300]}")
        else:
            msg = json.loads(body)
        if "error" in msg:
            raise RuntimeError(str(msg["error"])[:300])
        return msg["result"]

    def call(self, tool, args):
        res = self.rpc("tools/call", {"name": tool, "arguments": args})
        if res.get("isError"):
            raise RuntimeError(f"{tool}: {str(res)[:300]}")
        return res


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def fill(host, port, memories, seed):
    c = Client(host, port)
    rng = random.Random(seed)
    ids = []
    for i in range(memories):
        r = c.call("create_memory", {"type": "semantic", "content": text(rng, 20)})
        ids.append(r["structuredContent"]["id"])
        if i:
            c.call("link", {"source_id": ids[-1], "target_id": ids[-2],
                            "edge_type": "related_to"})
        if i > 10 and rng.random() < 0.5:
            c.call("link", {"source_id": ids[-1], "target_id": rng.choice(ids[:-1]),
                            "edge_type": "caused_by"})
    return ids


def worker(host, port, ids, mix, seconds, seed, start_at, out):
    rng = random.Random(seed)
    c = Client(host, port)
    while time.time() < start_at:
        time.sleep(0.001)
    lat, writes, end = [], 0, start_at + seconds
    while True:
        now = time.perf_counter()
        if time.time() >= end:
            break
        op = rng.random()
        if mix == "write" or (mix == "mixed" and op < 0.2):
            c.call("create_memory", {"type": "episodic", "content": text(rng, 20)})
            writes += 1
        else:
            kind = rng.randrange(3)
            if kind == 0:
                c.call("memory_search", {"query": text(rng, 2), "limit": 10})
            elif kind == 1:
                c.call("get_memory", {"memory_id": rng.choice(ids)})
            else:
                c.call("memory_path", {"from_id": rng.choice(ids),
                                       "to_id": rng.choice(ids)})
        lat.append((time.perf_counter() - now) * 1e3)
    out.put((lat, writes))


def fsync_counter(pid):
    """perf stat on the server's fsync/fdatasync tracepoints; None if perf is missing."""
    if not shutil.which("perf"):
        return None
    return subprocess.Popen(
        ["perf", "stat", "-x", ",", "-e",
         "syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync", "-p", str(pid)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def fsync_total(perf):
    if perf is None:
        return None
    perf.send_signal(signal.SIGINT)
    _, err = perf.communicate(timeout=30)
    total = 0
    for line in err.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and "sys_enter_f" in fields[2]:
            if not fields[0].strip().isdigit():
                return None  # "<not supported>": no tracepoint access
            total += int(fields[0])
    return total


def run(host, port, pid, ids, mix, n, seconds, load=None, ids_file=None, protocol=None):
    start_at = time.time() + 1.0 + 0.05 * n  # every session initialized before the start
    if load:
        proc = subprocess.Popen(
            [load, f"{host}:{port}", "--clients", str(n), "--mix", mix, "--seconds",
             str(seconds), "--ids", ids_file, "--seed", str(n), "--start-at", f"{start_at:.6f}"]
            + (["--protocol", protocol] if protocol else []),
            stdout=subprocess.PIPE, text=True)
    else:
        q = mp.Queue()
        procs = [mp.Process(target=worker, args=(host, port, ids, mix, seconds, 1000 * n + i,
                                                 start_at, q)) for i in range(n)]
        for p in procs:
            p.start()
    while time.time() < start_at - 0.2:
        time.sleep(0.01)
    perf = fsync_counter(pid)
    time.sleep(max(0.0, start_at - time.time()))
    if load:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"{load} failed (exit {proc.returncode})")
        answer = json.loads(out)
        results = [(answer["latencies_ms"], answer["writes"])]
    else:
        results = [q.get() for _ in procs]
    fsyncs = fsync_total(perf)
    if not load:
        for p in procs:
            p.join()
    lat = sorted(x for r, _ in results for x in r)
    writes = sum(w for _, w in results)
    return {
        "mix": mix, "clients": n, "calls": len(lat), "calls_per_s": len(lat) / seconds,
        "p50_ms": statistics.median(lat), "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "writes": writes, "writes_per_s": writes / seconds,
        "fsyncs": fsyncs, "fsyncs_per_write": (fsyncs / writes) if writes and fsyncs is not None else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("server")
    ap.add_argument("--clients", default="1,2,4,8,32")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--memories", type=int, default=2000)
    ap.add_argument("--mixes", default="read,mixed,write")
    ap.add_argument("--load", help="the agents_load client binary (default: Python clients)")
    ap.add_argument("--protocol", choices=["2025-06-18", "2026-07-28"],
                    help="the clients' MCP revision (with --load; default 2025-06-18: sessions)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the client counts this many times over (default 1)")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.protocol and not a.load:
        ap.error("--protocol needs --load (the Python clients open sessions)")
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    data = tempfile.mkdtemp(prefix="agents-bench-")
    ids_file = None
    env = dict(os.environ)
    env.pop("HOPGRAPH_EMBED_MODEL", None)
    srv = subprocess.Popen([a.server, "--data-dir", data, "--http", "127.0.0.1:0"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in srv.stderr:
            m = re.search(r"listening on http://([\d.]+):(\d+)/mcp", line)
            if m:
                host, port = m.group(1), int(m.group(2))
                break
        else:
            sys.exit("the server exited before listening")
        t = time.time()
        ids = fill(host, port, a.memories, 1)
        print(f"filled {a.memories} memories in {time.time() - t:.1f} s; clients: "
              f"{a.load or 'Python processes'}", flush=True)
        with tempfile.NamedTemporaryFile("w", prefix="agents-ids-", suffix=".txt",
                                         delete=False) as f:
            f.write("\n".join(ids) + "\n")
            ids_file = f.name
        rows = []
        counts = [int(x) for x in a.clients.split(",")]
        sums = {}  # (mix, N): calls over the rounds
        rounds = [mix for mix in a.mixes.split(",") for _ in range(a.rounds)]
        for i, mix in enumerate(rounds):
            base = None
            for n in counts:
                r = run(host, port, srv.pid, ids, mix, n, a.seconds, a.load, ids_file,
                        a.protocol)
                sums[mix, n] = sums.get((mix, n), 0) + r["calls"]
                base = base or r
                r["calls_ratio"] = r["calls_per_s"] / base["calls_per_s"]
                r["writes_ratio"] = (r["writes_per_s"] / base["writes_per_s"]) if base["writes"] else None
                rows.append(r)
                extra = ""
                if mix != "read":
                    f = r["fsyncs_per_write"]
                    extra = (f"  writes/s {r['writes_per_s']:7.1f} ({r['writes_ratio']:.2f}x)"
                             f"  fsyncs/write {'n/a' if f is None else f'{f:.2f}'}")
                print(f"{mix:5} N={n:2}: {r['calls_per_s']:7.1f} calls/s ({r['calls_ratio']:.2f}x)"
                      f"  p50 {r['p50_ms']:6.2f} ms  p99 {r['p99_ms']:7.2f} ms{extra}", flush=True)
            if a.rounds > 1 and (i + 1) % a.rounds == 0:
                print(f"{mix:5} over {a.rounds} rounds, calls against N={counts[0]}: " + ", ".join(
                    f"N={n} {sums[mix, n] / sums[mix, counts[0]]:.2f}x" for n in counts), flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
    finally:
        srv.terminate()
        srv.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)
        if ids_file:
            os.unlink(ids_file)


if __name__ == "__main__":
    main()
