"""The package's console scripts: `hopgraph` and `hopgraph-mcp` (over MCP stdio with the
official Python SDK), as `pip install hopgraph` puts them on PATH."""

import asyncio
import json
import os
import subprocess
import sysconfig
from pathlib import Path

import pytest


def script(name):
    """The console script installed next to this interpreter."""
    for folder in (sysconfig.get_path("scripts"), *os.environ.get("PATH", "").split(os.pathsep)):
        for candidate in (Path(folder) / name, Path(folder) / f"{name}.exe"):
            if candidate.is_file():
                return str(candidate)
    pytest.fail(f"{name} is not installed with the package (looked in {sysconfig.get_path('scripts')})")


def run(*args, **kw):
    return subprocess.run([script("hopgraph"), *args], capture_output=True, text=True, timeout=120, **kw)


def test_hopgraph_command(tmp_path):
    r = run("--help")
    assert r.returncode == 0, r.stderr
    assert "import" in r.stdout and "path" in r.stdout
    db = tmp_path / "cli.hg"
    # Only import creates a database: a write elsewhere is "not found" (exit 1).
    r = run("add", "--db", str(db), "edge", "outage", "caused_by", "deploy", "--create-missing")
    assert r.returncode == 1
    assert r.stderr.startswith("error:") and "no hopgraph database" in r.stderr
    assert not db.exists()
    src = tmp_path / "edges.tsv"
    src.write_text("outage\tdeploy\tcaused_by\ndeploy\tconfig\tchanged\n")
    db2 = tmp_path / "import.hg"
    r = run("import", "--db", str(db2), str(src))
    assert r.returncode == 0, r.stderr
    r = run("path", "--db", str(db2), "outage", "config")
    assert r.returncode == 0, r.stderr
    assert "outage" in r.stdout and "config" in r.stdout
    r = run("add", "--db", str(db2), "edge", "config", "owned_by", "team-db", "--create-missing")
    assert r.returncode == 0, r.stderr
    r = run("path", "--db", str(db2), "outage", "team-db")
    assert r.returncode == 0 and "team-db" in r.stdout, r.stderr
    r = run("path", "--db", str(db2), "outage", "nowhere")
    assert r.returncode == 1
    assert "nowhere" in r.stdout + r.stderr
    r = run("stats", "--db", str(tmp_path / "absent"))
    assert r.returncode == 1


def test_hopgraph_mcp_over_stdio(tmp_path):
    pytest.importorskip("mcp", reason="the official MCP Python SDK (pip install mcp)")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    def error_of(result):
        # The SDK's field names changed between releases (isError -> is_error).
        return getattr(result, "is_error", getattr(result, "isError", None))

    def structured(result):
        return getattr(result, "structured_content", getattr(result, "structuredContent", None))

    async def session():
        params = StdioServerParameters(command=script("hopgraph-mcp"), args=["--data-dir", str(tmp_path / "data")])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                assert {"create_memory", "memory_search", "memory_path"} <= names
                # A fresh server's first call is a search: an empty answer, not an error.
                first = await s.call_tool("memory_search", {"query": "pooled connections"})
                assert error_of(first) is False, first
                assert structured(first)["results"] == []
                made = await s.call_tool("create_memory", {
                    "type": "episodic", "title": "API outage",
                    "content": "Checkout failed: pooled connections ran out.", "id": "outage"})
                assert error_of(made) is False, made
                found = await s.call_tool("memory_search", {"query": "pooled connections"})
                assert [h["id"] for h in structured(found)["results"]] == ["outage"]
                stats = await s.call_tool("graph_stats", {})
                assert json.loads(stats.content[0].text)["nodes"] == 1

    asyncio.run(asyncio.wait_for(session(), timeout=120))
