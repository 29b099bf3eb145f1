"""hopgraph: an embedded graph database for typed, directed edges (agent memory).

Open a directory, write nodes and typed edges in atomic batches, and query shortest
paths, neighbourhoods, full text and embeddings from consistent snapshots::

    import hopgraph

    with hopgraph.open("memory.hg") as db:
        with db.batch() as b:
            b.put_node("outage", type="incident", title="API outage after deploy 42")
            b.link("outage", "caused_by", "deploy-42", create_missing=True)
        print(db.shortest_path("outage", "deploy-42"))
        print(db.search("outage"))

Errors are ``hopgraph.Error`` and its subclasses (``NotFoundError``,
``InvalidArgumentError``, ``CorruptError``, ``IoError``, ``WriterPoisonedError``,
``LimitReachedError``, ``ReadOnlyError``, ``ConflictError``). Engine calls release the GIL; a ``Database``
and its snapshots may be shared between threads.

The package also installs the ``hopgraph`` command line and the ``hopgraph-mcp`` MCP
memory server.
"""

from ._native import (  # noqa: F401
    FORMAT_VERSION,
    ConflictError,
    CorruptError,
    Database,
    Edge,
    Error,
    Hit,
    InvalidArgumentError,
    IoError,
    LimitReachedError,
    Neighbor,
    Node,
    NotFoundError,
    Path,
    Reached,
    ReadOnlyError,
    Snapshot,
    Step,
    Visit,
    WriteBatch,
    WriterPoisonedError,
    __version__,
    open,
)

__all__ = [
    "FORMAT_VERSION",
    "ConflictError",
    "CorruptError",
    "Database",
    "Edge",
    "Error",
    "Hit",
    "InvalidArgumentError",
    "IoError",
    "LimitReachedError",
    "Neighbor",
    "Node",
    "NotFoundError",
    "Path",
    "Reached",
    "ReadOnlyError",
    "Snapshot",
    "Step",
    "Visit",
    "WriteBatch",
    "WriterPoisonedError",
    "__version__",
    "open",
]
