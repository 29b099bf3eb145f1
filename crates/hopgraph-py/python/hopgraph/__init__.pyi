"""Type stubs for the hopgraph package (the native module ``hopgraph._native``)."""

import datetime
import os
from typing import Any, Iterable, Literal, Optional, Sequence, Union

__version__: str
FORMAT_VERSION: int

Direction = Literal["out", "in", "both"]
Types = Union[None, str, Sequence[str]]
Vector = Any  # a 1-d numpy array (any float dtype) or a sequence of numbers
# A moment: a datetime (naive: UTC), an RFC 3339 string ("2024-05-01T12:00:00Z") or
# milliseconds since 1970.
Time = Union[datetime.datetime, str, int]

class Error(Exception): ...
class NotFoundError(Error): ...
class InvalidArgumentError(Error): ...
class CorruptError(Error): ...
class IoError(Error): ...
class WriterPoisonedError(Error): ...
class LimitReachedError(Error): ...
class ReadOnlyError(Error): ...
class ConflictError(Error): ...

class Node:
    key: str
    id: int
    type: str
    title: str
    content: str
    importance: float
    status: str
    metadata: dict[str, Any]
    embedding: Optional[list[float]]
    created_at: datetime.datetime
    updated_at: datetime.datetime
    valid_from: datetime.datetime
    valid_to: Optional[datetime.datetime]  # None: never ends

class Edge:
    id: int
    source: str
    type: str
    target: str
    weight: float
    metadata: dict[str, Any]
    created_at: datetime.datetime
    valid_from: datetime.datetime
    valid_to: Optional[datetime.datetime]  # None: never ends

class Step:
    edge_id: int
    type: str
    forward: bool

class Path:
    keys: list[str]
    steps: list[Step]
    def __len__(self) -> int: ...

class Neighbor:
    key: str
    edge_id: int
    type: str
    outgoing: bool

class Reached:
    key: str
    seed: str
    hops: int
    edge_id: int
    type: str
    forward: bool

class Visit:
    key: str
    depth: int
    steps: list[Step]

class Hit:
    key: str
    score: float
    field: Optional[Literal["title", "content", "props"]]
    snippet: Optional[str]

class WriteBatch:
    def __init__(self) -> None: ...
    def put_node(
        self,
        key: str,
        *,
        type: str = "",
        title: str = "",
        content: str = "",
        importance: float = 0.0,
        status: str = "",
        metadata: Optional[dict[str, Any]] = None,
        embedding: Optional[Vector] = None,
        create_only: bool = False,
        valid_from: Optional[Time] = None,
        valid_to: Optional[Time] = None,
    ) -> "WriteBatch": ...
    def update_node(
        self,
        key: str,
        *,
        type: Optional[str] = None,
        title: Optional[str] = None,
        content: Optional[str] = None,
        importance: Optional[float] = None,
        status: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        merge_metadata: Optional[dict[str, Any]] = None,
        embedding: Optional[Vector] = None,
        clear_embedding: bool = False,
        valid_from: Optional[Time] = None,
        valid_to: Optional[Time] = None,
        clear_valid_to: bool = False,
    ) -> "WriteBatch": ...
    def delete_node(self, key: str) -> "WriteBatch": ...
    def link(
        self,
        source: str,
        type: str,
        target: str,
        *,
        weight: float = 1.0,
        metadata: Optional[dict[str, Any]] = None,
        create_missing: bool = False,
        valid_from: Optional[Time] = None,
        valid_to: Optional[Time] = None,
    ) -> "WriteBatch": ...
    def end_edge(self, edge_id: int, at: Time) -> "WriteBatch": ...
    def expect_lsn(self, lsn: int) -> "WriteBatch": ...
    def expect_node(self, key: str, snapshot: "Snapshot") -> "WriteBatch": ...
    def unlink(
        self, edge_or_source: Union[int, str], type: Optional[str] = None, target: Optional[str] = None
    ) -> "WriteBatch": ...
    def __len__(self) -> int: ...
    def __enter__(self) -> "WriteBatch": ...
    def __exit__(self, *exc: Any) -> bool: ...

class Snapshot:
    lsn: int
    node_count: int
    edge_count: int
    def __contains__(self, key: str) -> bool: ...
    def get(self, key: str, *, as_of: Optional[Time] = None) -> Optional[Node]: ...
    def edge(self, edge_id: int) -> Optional[Edge]: ...
    def shortest_path(
        self,
        source: str,
        target: str,
        *,
        types: Types = None,
        direction: Direction = "both",
        max_hops: int = 10,
        visited_max: Optional[int] = None,
        timeout: Optional[float] = None,
        as_of: Optional[Time] = None,
    ) -> Optional[Path]: ...
    def all_shortest_paths(
        self,
        source: str,
        target: str,
        *,
        types: Types = None,
        direction: Direction = "both",
        max_hops: int = 10,
        max_paths: int = 100,
        as_of: Optional[Time] = None,
    ) -> list[Path]: ...
    def neighbors(
        self, key: str, *, types: Types = None, direction: Direction = "both", as_of: Optional[Time] = None
    ) -> list[Neighbor]: ...
    def expand(
        self,
        seeds: Sequence[str],
        *,
        hops: int = 2,
        types: Types = None,
        direction: Direction = "both",
        limit: int = 1000,
        as_of: Optional[Time] = None,
    ) -> list[Reached]: ...
    def traverse(
        self,
        start: str,
        *,
        max_depth: int = 3,
        types: Types = None,
        direction: Direction = "out",
        limit: int = 1000,
        as_of: Optional[Time] = None,
    ) -> list[Visit]: ...
    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        kinds: Types = None,
        min_importance: Optional[float] = None,
        as_of: Optional[Time] = None,
        snippets: bool = True,
    ) -> list[Hit]: ...
    def search_vector(
        self,
        embedding: Vector,
        *,
        limit: int = 10,
        kinds: Types = None,
        ef: Optional[int] = None,
        as_of: Optional[Time] = None,
    ) -> list[Hit]: ...

class Database:
    path: os.PathLike[str]
    def snapshot(self) -> Snapshot: ...
    def batch(self) -> WriteBatch: ...
    def commit(self, batch: WriteBatch) -> dict[str, int]: ...
    def bulk_load(
        self,
        nodes: Optional[Iterable[dict[str, Any]]] = None,
        edges: Optional[Iterable[tuple[str, str, str]]] = None,
        *,
        memory_limit: Optional[int] = None,
    ) -> dict[str, int]: ...
    def stats(self) -> dict[str, Any]: ...
    def check(self, deep: bool = False) -> dict[str, Any]:
        """Reads and checksums every file; raises CorruptError naming the first damage.
        deep=True also rebuilds each segment's text index from its records and compares
        it byte for byte (adds text_segments, text_records, text_older_format)."""
        ...
    def checkpoint(self) -> dict[str, Any]: ...
    def compact(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Database": ...
    def __exit__(self, *exc: Any) -> bool: ...
    # The reads of Snapshot, on the latest commit.
    get = Snapshot.get
    edge = Snapshot.edge
    shortest_path = Snapshot.shortest_path
    all_shortest_paths = Snapshot.all_shortest_paths
    neighbors = Snapshot.neighbors
    expand = Snapshot.expand
    traverse = Snapshot.traverse
    search = Snapshot.search
    search_vector = Snapshot.search_vector

def open(
    path: Union[str, os.PathLike[str]],
    *,
    read_only: bool = False,
    create: bool = True,
    durability: Literal["sync", "buffered"] = "sync",
) -> Database: ...
