"""Console entry points: ``hopgraph`` and ``hopgraph-mcp`` run the native commands."""

import signal
import sys

from . import _native


def _native_signals() -> None:
    # Python's own SIGINT handler only runs between bytecodes, never while the native
    # command holds the thread: restore the default so Ctrl-C stops the command as it
    # stops the standalone binaries.
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    except (ValueError, OSError):  # not the main thread, or no such signal here
        pass


def hopgraph() -> None:
    """``hopgraph``: the command-line tool (import, query, search, export, ...)."""
    _native_signals()
    sys.exit(_native.run_cli(["hopgraph", *sys.argv[1:]]))


def hopgraph_mcp() -> None:
    """``hopgraph-mcp``: the MCP memory server (stdio, or streamable HTTP with --http)."""
    _native_signals()
    sys.exit(_native.run_mcp(sys.argv[1:]))
