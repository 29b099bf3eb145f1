"""The Python API against the engine: writes, reads, snapshots, errors, threads."""

import threading

import pytest

import hopgraph


def test_nodes_round_trip(incident):
    n = incident.get("outage")
    assert isinstance(n, hopgraph.Node)
    assert (n.key, n.type, n.title) == ("outage", "incident", "API outage")
    assert n.importance == pytest.approx(0.9)
    assert n.metadata == {"severity": "high", "tags": ["api", "db"]}
    assert n.embedding is None
    assert n.created_at.tzinfo is not None
    assert "outage" in repr(n)
    assert incident.get("nope") is None


def test_paths(incident):
    p = incident.shortest_path("outage", "config-pool")
    assert p.keys == ["outage", "deploy-42", "config-pool"]
    assert len(p) == 2
    assert [s.type for s in p.steps] == ["caused_by", "changed"]
    assert all(s.forward for s in p.steps)
    assert repr(p) == "Path(outage -caused_by-> deploy-42 -changed-> config-pool)"
    # Types and direction restrict the walk.
    assert incident.shortest_path("outage", "config-pool", types=["caused_by"]) is None
    back = incident.shortest_path("config-pool", "outage", direction="in")
    assert back.keys == ["config-pool", "deploy-42", "outage"]
    assert incident.shortest_path("config-pool", "outage", direction="out") is None
    assert incident.shortest_path("outage", "config-pool", max_hops=1) is None
    # Two shortest routes outage -> pool? One direct edge: one path of one hop.
    all_paths = incident.all_shortest_paths("deploy-42", "pool")
    assert sorted(tuple(x.keys) for x in all_paths) == [
        ("deploy-42", "config-pool", "pool"),
        ("deploy-42", "outage", "pool"),
    ]


def test_neighbors_expand_traverse(incident):
    out = incident.neighbors("outage", direction="out")
    assert sorted((x.key, x.type, x.outgoing) for x in out) == [
        ("deploy-42", "caused_by", True),
        ("pool", "mentions", True),
    ]
    near = incident.expand(["outage"], hops=1)
    assert sorted(r.key for r in near) == ["deploy-42", "pool"]
    assert all(r.seed == "outage" and r.hops == 1 for r in near)
    two = incident.expand(["outage"], hops=2, direction="out")
    assert {r.key: r.hops for r in two} == {"deploy-42": 1, "pool": 1, "config-pool": 2}
    walk = incident.traverse("outage", max_depth=2)
    assert [(v.key, v.depth) for v in walk][-1] == ("config-pool", 2)
    assert [s.type for s in walk[-1].steps] == ["caused_by", "changed"]


def test_text_search(incident):
    hits = incident.search("pooled connections")
    by_key = {h.key: h for h in hits}
    # "Connection pooling" (a title) and the outage's content both match; the engine ranks.
    assert set(by_key) == {"outage", "pool", "config-pool"}
    assert hits == sorted(hits, key=lambda h: -h.score)
    assert by_key["outage"].field == "content"
    assert "pooled connections" in by_key["outage"].snippet
    assert incident.search("connection", kinds=["config"])[0].key == "config-pool"
    assert incident.search("zzzunmatched") == []
    # Without snippets: the same hits, no snippet.
    bare = incident.search("pooled connections", snippets=False)
    assert [(h.key, h.score, h.field) for h in bare] == [(h.key, h.score, h.field) for h in hits]
    assert all(h.snippet is None for h in bare)


def test_vector_search_numpy_and_lists(db):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((50, 16)).astype(np.float32)
    with db.batch() as b:
        for i, v in enumerate(vecs):
            b.put_node(f"v{i}", type="even" if i % 2 == 0 else "odd", embedding=v)
    hits = db.search_vector(vecs[7], limit=3)
    assert hits[0].key == "v7"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert db.search_vector(vecs[7].tolist(), limit=1)[0].key == "v7"
    # A strided view is read too.
    strided = np.ascontiguousarray(np.repeat(vecs[9], 2))[::2]
    assert db.search_vector(strided, limit=1)[0].key == "v9"
    assert all(h.key in {f"v{i}" for i in range(0, 50, 2)}
               for h in db.search_vector(vecs[7], limit=5, kinds="even"))
    got = db.get("v3").embedding
    assert got == pytest.approx(vecs[3].tolist(), rel=1e-6)
    # float64 arrays are converted; a 2-d array or a non-numeric one is refused.
    assert db.search_vector(vecs[11].astype(np.float64), limit=1)[0].key == "v11"
    with pytest.raises(hopgraph.InvalidArgumentError):
        db.search_vector(vecs[:2], limit=1)
    with pytest.raises(hopgraph.InvalidArgumentError):
        db.search_vector(np.array(["a", "b"]), limit=1)


def test_snapshots_are_consistent(incident):
    snap = incident.snapshot()
    with incident.batch() as b:
        b.link("pool", "part_of", "database", create_missing=True)
    assert "database" not in snap
    assert "database" in incident.snapshot()
    assert snap.lsn < incident.snapshot().lsn
    assert snap.edge_count + 1 == incident.snapshot().edge_count


def test_batches_are_atomic(incident):
    before = incident.snapshot().edge_count
    with pytest.raises(hopgraph.NotFoundError):
        with incident.batch() as b:
            b.link("outage", "blames", "pool")
            b.link("outage", "blames", "nobody")  # unknown: the whole batch fails
    assert incident.snapshot().edge_count == before
    # An exception inside the block discards the batch.
    with pytest.raises(RuntimeError):
        with incident.batch() as b:
            b.link("outage", "blames", "pool")
            raise RuntimeError("changed my mind")
    assert incident.snapshot().edge_count == before
    wb = hopgraph.WriteBatch().put_node("x").put_node("y").link("x", "t", "y")
    assert len(wb) == 3
    assert incident.commit(wb)["operations"] == 3
    edge = incident.neighbors("x")[0]
    e = incident.snapshot().edge(edge.edge_id)
    assert (e.source, e.type, e.target) == ("x", "t", "y")
    with incident.batch() as b:
        b.unlink("x", "t", "y")
        b.update_node("outage", title="API outage (resolved)", merge_metadata={"resolved": True})
        b.delete_node("pool")
    assert incident.neighbors("x") == []
    n = incident.get("outage")
    assert n.title == "API outage (resolved)"
    assert n.metadata["resolved"] is True and n.metadata["severity"] == "high"
    assert incident.get("pool") is None


def test_errors(incident, tmp_path):
    for cls in (hopgraph.NotFoundError, hopgraph.InvalidArgumentError, hopgraph.CorruptError,
                hopgraph.IoError, hopgraph.WriterPoisonedError, hopgraph.LimitReachedError,
                hopgraph.ReadOnlyError, hopgraph.ConflictError):
        assert issubclass(cls, hopgraph.Error)
    with pytest.raises(hopgraph.NotFoundError, match="nope"):
        incident.shortest_path("outage", "nope")
    with pytest.raises(hopgraph.InvalidArgumentError, match="direction"):
        incident.neighbors("outage", direction="sideways")
    with pytest.raises(hopgraph.InvalidArgumentError):
        with incident.batch() as b:
            b.put_node("")  # empty key
    with pytest.raises(hopgraph.InvalidArgumentError):
        with incident.batch() as b:
            b.put_node("outage", create_only=True)  # exists already
    with pytest.raises(hopgraph.InvalidArgumentError, match="metadata"):
        hopgraph.WriteBatch().put_node("k", metadata={"x": object()})
    with pytest.raises(hopgraph.NotFoundError):
        hopgraph.open(tmp_path / "absent", create=False)
    with pytest.raises(hopgraph.InvalidArgumentError, match="durability"):
        hopgraph.open(tmp_path / "d", durability="sometimes")
    with pytest.raises(hopgraph.LimitReachedError):
        incident.shortest_path("outage", "pool", types=["related_to"], visited_max=1)


def test_read_only_and_close(tmp_path):
    path = tmp_path / "ro.hg"
    with hopgraph.open(path) as db:
        with db.batch() as b:
            b.link("a", "t", "b", create_missing=True)
        snap = db.snapshot()
    assert "closed" in repr(db)
    with pytest.raises(hopgraph.Error, match="closed"):
        db.get("a")
    assert snap.shortest_path("a", "b").keys == ["a", "b"]  # snapshots outlive the handle
    with hopgraph.open(path, read_only=True) as ro:
        assert ro.shortest_path("a", "b") is not None
        with pytest.raises(hopgraph.ReadOnlyError):
            with ro.batch() as b:
                b.put_node("c")


def test_conditional_batch(incident):
    seen = incident.snapshot().lsn
    incident.commit(hopgraph.WriteBatch().put_node("other"))
    late = hopgraph.WriteBatch().put_node("late").expect_lsn(seen)
    with pytest.raises(hopgraph.ConflictError, match="retry"):
        incident.commit(late)
    assert "late" not in incident.snapshot()  # nothing written
    fresh = hopgraph.WriteBatch().put_node("late").expect_lsn(incident.snapshot().lsn)
    assert incident.commit(fresh)["lsn"] == incident.snapshot().lsn


def test_conditional_on_one_node(incident):
    snap = incident.snapshot()
    incident.commit(hopgraph.WriteBatch().put_node("other"))  # another node: no conflict
    first = hopgraph.WriteBatch().put_node("fresh", title="one").expect_node("fresh", snap)
    incident.commit(first)  # absent in snap, still absent: commits
    again = hopgraph.WriteBatch().put_node("fresh", title="two").expect_node("fresh", snap)
    with pytest.raises(hopgraph.ConflictError):
        incident.commit(again)  # "fresh" exists now
    assert incident.get("fresh").title == "one"  # nothing written
    now = incident.snapshot()
    retry = hopgraph.WriteBatch().put_node("fresh", title="two").expect_node("fresh", now)
    incident.commit(retry)
    assert incident.get("fresh").title == "two"


def test_maintenance_and_corruption(incident, tmp_path):
    assert incident.stats()["nodes"] == 4
    assert incident.stats()["edge_types"]["caused_by"] == 1
    cp = incident.checkpoint()
    assert cp["segment"] is not None
    assert incident.check()["segments"] >= 1
    with incident.batch() as b:
        b.link("pool", "part_of", "database", create_missing=True)
    incident.checkpoint()
    merged = incident.compact()
    assert merged["segments_merged"] == 2
    assert merged["edges"] == 5
    deep = incident.check(deep=True)  # the text index rebuilt from the records: equal
    assert (deep["text_segments"], deep["text_older_format"]) == (1, [])
    assert deep["text_records"] == incident.stats()["nodes"]
    assert "text_segments" not in incident.check()
    path = incident.path
    incident.close()
    segs = sorted(p for p in path.iterdir() if p.suffix == ".seg" or "seg" in p.name)
    assert segs, list(path.iterdir())
    target = segs[-1]
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(64)
    target.write_bytes(bytes(data))
    with pytest.raises(hopgraph.CorruptError):
        with hopgraph.open(path) as db:
            db.check()


def test_threads_share_a_database(incident):
    errors = []

    def reader():
        try:
            for _ in range(300):
                p = incident.shortest_path("outage", "config-pool")
                assert p.keys == ["outage", "deploy-42", "config-pool"]
                assert "outage" in {h.key for h in incident.search("checkout")}
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def writer():
        try:
            for i in range(50):
                with incident.batch() as b:
                    b.link(f"w{i}", "next", f"w{i + 1}", create_missing=True)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(4)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(incident.shortest_path("w0", "w50", max_hops=60)) == 50


def test_bulk_load(db):
    np = pytest.importorskip("numpy")
    nodes = [{"key": f"n{i}", "type": "memory", "title": f"memory {i}", "content": "pooled connections" if i == 3 else "",
              "embedding": np.full(4, i + 1, dtype=np.float32)} for i in range(10)]
    edges = [(f"n{i}", "next", f"n{i + 1}") for i in range(9)] + [("n0", "next", "n1"), ("n9", "loops", "n0")]
    r = db.bulk_load(nodes=nodes, edges=edges)
    assert r == {"nodes_created": 10, "nodes_updated": 0, "edges_created": 10, "duplicates_skipped": 1}
    assert len(db.shortest_path("n0", "n9", direction="out")) == 9
    assert db.search("pooled")[0].key == "n3"
    assert db.get("n5").title == "memory 5"
    with pytest.raises(hopgraph.InvalidArgumentError, match="edges"):
        db.bulk_load(edges=[("a", "b")])
    with pytest.raises(hopgraph.InvalidArgumentError, match="key"):
        db.bulk_load(nodes=[{"title": "no key"}])


def test_bulk_load_under_a_tiny_memory_limit(tmp_path):
    """Edges beyond the limit's share go to a scratch file and come back: same graph."""
    edges = [(f"k{i % 97}", "next" if i % 3 else "cites", f"k{(i * 7 + i // 97) % 97}") for i in range(3000)]
    edges += edges[:100]  # duplicates, dropped by both
    counts, paths = [], []
    for name, limit in (("mem", None), ("tiny", 4096)):
        path = tmp_path / name
        with hopgraph.open(str(path)) as db:
            counts.append(db.bulk_load(edges=edges, memory_limit=limit))
            assert db.stats()["edges"] == counts[-1]["edges_created"]
            paths.append([db.shortest_path(f"k{a}", f"k{b}", direction="out") for a, b in ((0, 50), (3, 96), (40, 2))])
        assert not [p.name for p in path.iterdir() if p.name.endswith(".tmp")]
    assert counts[0] == counts[1]
    assert counts[0]["duplicates_skipped"] == 100
    assert all(p is not None for p in paths[1])
    assert [p.keys for p in paths[0]] == [p.keys for p in paths[1]]


def test_validity_intervals_and_as_of(db):
    """Intervals set on write, shown on Node/Edge, ended with end_edge; every read as_of."""
    import datetime

    utc = datetime.timezone.utc
    jan = datetime.datetime(2024, 1, 1, tzinfo=utc)
    mar, jun, sep = "2024-03-01T00:00:00Z", "2024-06-01T00:00:00+00:00", 1725148800000
    with db.batch() as b:
        for key in ("a", "b", "c"):
            b.put_node(key, title=f"note {key}", valid_from=jan)
        b.put_node("old", title="old pooled connections", valid_from=jan, valid_to=mar)
        b.link("a", "r", "b", valid_from=jan)
        b.link("b", "r", "c", valid_from=jan, valid_to=jun)
    old = db.get("old")
    assert (old.valid_from, old.valid_to) == (jan, datetime.datetime(2024, 3, 1, tzinfo=utc))
    assert db.get("a").valid_to is None
    ab = [n for n in db.neighbors("a", direction="out")][0]
    with db.batch() as b:
        b.end_edge(ab.edge_id, sep)
    e = db.edge(ab.edge_id)
    assert (e.valid_from, e.valid_to) == (jan, datetime.datetime(2024, 9, 1, tzinfo=utc))

    may, jul = "2024-05-01T00:00:00Z", datetime.datetime(2024, 7, 1)  # naive: UTC
    assert db.get("old", as_of="2024-02-01T00:00:00Z").key == "old"
    assert db.get("old", as_of=mar) is None  # the end is exclusive
    assert db.get("old", as_of=1704067200000 - 1) is None  # before the start
    assert db.shortest_path("a", "c", as_of=may).keys == ["a", "b", "c"]
    assert db.shortest_path("a", "c", as_of=jul) is None
    assert db.shortest_path("a", "c") is not None  # no time: ended edges too
    assert len(db.all_shortest_paths("a", "c", as_of=may)) == 1
    assert db.all_shortest_paths("a", "c", as_of=jul) == []
    with pytest.raises(hopgraph.NotFoundError):
        db.shortest_path("a", "old", as_of=jul)
    assert sorted(n.key for n in db.neighbors("b", as_of=may)) == ["a", "c"]
    assert [n.key for n in db.neighbors("b", as_of=jul)] == ["a"]
    assert [r.key for r in db.expand(["a"], hops=2, as_of=may)] == ["b", "c"]
    assert [r.key for r in db.expand(["a"], hops=2, as_of=jul)] == ["b"]
    assert [v.key for v in db.traverse("a", as_of=may)] == ["b", "c"]
    assert [v.key for v in db.snapshot().traverse("a", as_of=jul)] == ["b"]
    assert [h.key for h in db.search("pooled", as_of="2024-02-01T00:00:00Z")] == ["old"]
    assert db.search("pooled", as_of=jul) == []
    assert [h.key for h in db.search("pooled")] == ["old"]

    with db.batch() as b:
        b.update_node("old", clear_valid_to=True)
    assert db.get("old", as_of=jul).valid_to is None
    with pytest.raises(hopgraph.InvalidArgumentError, match="valid_to"):
        with db.batch() as b:
            b.link("a", "s", "c", valid_from=jun, valid_to=may)
    with pytest.raises(hopgraph.InvalidArgumentError, match="as_of"):
        db.get("a", as_of="last tuesday")
    with pytest.raises(hopgraph.InvalidArgumentError, match="valid_to"):
        hopgraph.WriteBatch().update_node("a", valid_to=mar, clear_valid_to=True)
