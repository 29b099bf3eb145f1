#!/usr/bin/env python3
"""hopgraph-mcp --http driven by the official MCP Python SDK (`pip install mcp`).

Usage: test_http.py PATH/TO/hopgraph-mcp

Run by `cargo test -p hopgraph-mcp --test http python_sdk_client` (which skips it when the
SDK is not installed). Each check starts its own server on a free port in a temporary data
directory. Prints one line per check and "python sdk: N passed, N failed"; exits non-zero
on a failure.
"""

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import traceback
import urllib.error
import urllib.request

from mcp import ClientSession

try:  # SDK 2.x
    from mcp.client.streamable_http import streamable_http_client as _sdk_client

    SDK2 = True
except ImportError:  # SDK 1.x
    from mcp.client.streamable_http import streamablehttp_client as _sdk_client

    SDK2 = False
from mcp.shared._httpx_utils import create_mcp_http_client

TOKEN = "py-test-token-0123456789abcdef"
LINE_BYTES_MAX = 2 * 1024 * 1024 + 64 * 1024


class Server:
    """A running hopgraph-mcp --http, stopped on exit."""

    def __init__(self, binary, args):
        self.data = tempfile.TemporaryDirectory()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("HOPGRAPH_")
        }
        self.proc = subprocess.Popen(
            [binary, "--data-dir", self.data.name, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        port = None
        for line in self.proc.stderr:
            m = re.search(r"listening on http://\S+:(\d+)/mcp", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            raise RuntimeError("the server did not start")
        # Keep draining the log so the server never blocks on it.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        self.url = f"http://127.0.0.1:{port}/mcp"

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.data.cleanup()


@contextlib.asynccontextmanager
async def session(url, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    if SDK2:
        async with create_mcp_http_client(headers=headers) as http:
            async with _sdk_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    yield s
    else:
        async with _sdk_client(url, headers=headers) as (read, write, _):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def raw_post(url, token=None, body=None):
    """One POST with urllib: (status, body text)."""
    body = body or json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
    ).encode()
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def is_error(result):
    """`isError` of a tool result (`is_error` in SDK 2.x)."""
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def structured(result):
    """The structured content of a successful tool result."""
    assert not is_error(result), result.content
    value = getattr(result, "structured_content", None)
    if value is None:
        value = getattr(result, "structuredContent", None)
    assert value is not None, result
    return value


async def check_tools_write_read_path(binary):
    """initialize, tools/list, a write, a read, a path; a second client sees the data."""
    srv = Server(binary, ["--http", "127.0.0.1:0"])
    try:
        async with session(srv.url) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            for n in ("create_memory", "memory_search", "memory_path", "link"):
                assert n in names, names
            assert "search_nodes" not in names, "default profile only"
            for mid, text in (("a", "The deploy broke the cache."), ("b", "The cache went cold.")):
                m = structured(
                    await s.call_tool("create_memory", {"type": "episodic", "id": mid, "content": text})
                )
                assert m["id"] == mid, m
            structured(await s.call_tool("link", {"source_id": "b", "target_id": "a", "edge_type": "caused_by"}))
            found = structured(await s.call_tool("memory_search", {"query": "cold cache"}))
            assert "b" in json.dumps(found), found
            path = structured(await s.call_tool("memory_path", {"from_id": "a", "to_id": "b"}))
            assert [step["id"] for step in path["path"]] == ["a", "b"], path
        # Another agent, another session, the same graph.
        async with session(srv.url) as s2:
            got = structured(await s2.call_tool("get_memory", {"memory_id": "a"}))
            assert got["content"] == "The deploy broke the cache.", got
            bad = await s2.call_tool("get_memory", {"memory_id": "nope"})
            assert is_error(bad), bad
    finally:
        srv.close()


async def check_token_off_loopback(binary):
    """Bound on 0.0.0.0 with a token: without or with a wrong token 401, with it served."""
    srv = Server(binary, ["--http", "0.0.0.0:0", "--http-token", TOKEN, "--tools", "server-memory"])
    try:
        assert raw_post(srv.url)[0] == 401
        assert raw_post(srv.url, token="wrong-" + TOKEN)[0] == 401
        status, _ = raw_post(srv.url, token=TOKEN)
        assert status == 200, status
        failed = False
        try:
            async with session(srv.url, token="wrong-" + TOKEN) as s:
                await s.list_tools()
        except BaseException:  # the SDK raises (an ExceptionGroup in 2.x)
            failed = True
        assert failed, "a client with a wrong token was served"
        async with session(srv.url, token=TOKEN) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert "search_nodes" in names and "create_memory" not in names, names
            structured(
                await s.call_tool(
                    "create_entities",
                    {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote notes"]}]},
                )
            )
            found = structured(await s.call_tool("search_nodes", {"query": "notes"}))
            assert [e["name"] for e in found["entities"]] == ["Ada"], found
    finally:
        srv.close()


async def check_limits(binary):
    """An oversized body is refused, an argument over its limit is a tool error, and the
    server keeps serving."""
    srv = Server(binary, ["--http", "127.0.0.1:0"])
    try:
        async with session(srv.url) as s:
            refused = False
            try:
                r = await s.call_tool("create_memory", {"type": "semantic", "content": "x" * LINE_BYTES_MAX})
                refused = is_error(r)
            except Exception as e:  # the 413's JSON-RPC error, raised as an McpError
                print(f"     oversized call raised {type(e).__name__}: {e}")
                refused = "larger than the limit" in str(e)
            assert refused, "an oversized body was accepted"
            r = await s.call_tool("create_memory", {"type": "semantic", "content": "y" * ((1 << 20) + 1)})
            assert is_error(r), r
            assert "Invalid argument `content`" in r.content[0].text, r.content
            m = structured(await s.call_tool("create_memory", {"type": "semantic", "id": "ok", "content": "fine"}))
            assert m["id"] == "ok", m
        status, body = raw_post(srv.url, body=b"{" + b" " * LINE_BYTES_MAX + b"}")
        assert status == 413, (status, body[:200])
        async with session(srv.url) as s:
            got = structured(await s.call_tool("get_memory", {"memory_id": "ok"}))
            assert got["content"] == "fine", got
    finally:
        srv.close()


async def main(binary):
    checks = [check_tools_write_read_path, check_token_off_loopback, check_limits]
    passed = failed = 0
    for check in checks:
        try:
            await asyncio.wait_for(check(binary), timeout=120)
            print(f"ok   {check.__name__}")
            passed += 1
        except BaseException:  # noqa: BLE001 - report every failure, keep going
            print(f"FAIL {check.__name__}")
            traceback.print_exc(file=sys.stdout)
            failed += 1
    print(f"python sdk: {failed} failed, {passed} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(sys.argv[1])))
