//! Vector search: `search_vector` against a brute-force model across commits, updates,
//! deletes, checkpoints, compactions, bulk loads and reopens; the one-dimension rule;
//! the HNSW path of a large segment.

use std::collections::BTreeMap;

use hopgraph::vector::{dot, normalize, row_scale};
use hopgraph::{
    BulkLoad, Database, Error, NodeFilter, NodeId, NodePatch, NodeProps, Options, VectorQuery,
    WriteBatch,
};
use proptest::prelude::*;

use crate::common::tempdir;

const DIM: usize = 4;

fn key(k: u8) -> String {
    format!("v{k}")
}

fn props(kind: &str, e: Option<Vec<f32>>) -> NodeProps {
    NodeProps {
        kind: kind.to_owned(),
        embedding: e,
        ..NodeProps::default()
    }
}

/// The similarity the store gives embedding `e` for the unit query `qn`: the dot product
/// times `e`'s inverse norm (0 for a zero vector).
fn sim(e: &[f32], qn: &[f32]) -> f32 {
    dot(e, qn) * row_scale(e)
}

#[derive(Clone, Debug)]
enum Step {
    /// Upsert key with an embedding (or none) and kind a/b.
    Upsert(u8, Option<[i8; DIM]>, bool),
    /// Patch only the embedding (set or remove).
    Patch(u8, Option<[i8; DIM]>),
    Delete(u8),
    Checkpoint,
    Compact,
    Reopen,
    Bulk(Vec<(u8, [i8; DIM])>),
}

fn emb(v: [i8; DIM]) -> Vec<f32> {
    v.iter().map(|&x| f32::from(x)).collect()
}

fn step() -> impl Strategy<Value = Step> {
    let vec = prop::array::uniform4(-3i8..4);
    prop_oneof![
        6 => (0u8..12, prop::option::weighted(0.8, vec.clone()), any::<bool>())
            .prop_map(|(k, e, a)| Step::Upsert(k, e, a)),
        2 => (0u8..12, prop::option::weighted(0.7, vec.clone())).prop_map(|(k, e)| Step::Patch(k, e)),
        2 => (0u8..12).prop_map(Step::Delete),
        2 => Just(Step::Checkpoint),
        1 => Just(Step::Compact),
        1 => Just(Step::Reopen),
        1 => prop::collection::vec((0u8..12, vec), 0..4).prop_map(Step::Bulk),
    ]
}

fn options() -> Options {
    Options::default()
        .checkpoint_wal_bytes(4096)
        .compaction_segments_max(3)
        .durability(hopgraph::Durability::Buffered)
}

/// key -> (kind is "a", embedding)
type Model = BTreeMap<String, (bool, Option<Vec<f32>>)>;

fn check(db: &Database, model: &Model) -> Result<(), TestCaseError> {
    let snap = db.snapshot();
    let queries: [[f32; DIM]; 3] = [
        [1.0, 0.0, 0.0, 0.0],
        [0.3, -1.0, 2.0, 0.5],
        [-1.0, -1.0, 1.0, 1.0],
    ];
    for q in queries {
        let qn = normalize(&q).unwrap();
        for (filter, only_a) in [
            (NodeFilter::any(), false),
            (NodeFilter::any().kinds(["a"]), true),
        ] {
            for limit in [1usize, 5, 20] {
                let mut want: Vec<(f32, u32)> = model
                    .iter()
                    .filter(|(_, (a, _))| !only_a || *a)
                    .filter_map(|(k, (_, e))| {
                        let e = e.as_ref()?;
                        let id = snap.node_id(k).expect("model node is live").0;
                        Some((sim(e, &qn), id))
                    })
                    .collect();
                want.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
                want.truncate(limit);
                let got = snap.search_vector(
                    &VectorQuery::new(q.to_vec())
                        .limit(limit)
                        .filter(filter.clone()),
                );
                match got {
                    Ok(hits) => {
                        let got: Vec<(f32, u32)> =
                            hits.iter().map(|h| (h.similarity, h.node.0)).collect();
                        prop_assert_eq!(got, want);
                    }
                    Err(e) => prop_assert!(false, "search failed: {e}"),
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Searches equal a brute-force cosine ranking of the live nodes' newest embeddings,
    /// whatever happened to the segments in between.
    #[test]
    fn search_vector_agrees_with_brute_force(steps in prop::collection::vec(step(), 1..30)) {
        let dir = tempdir();
        let mut db = Database::open_with(dir.path(), options()).unwrap();
        let mut model = Model::new();
        for s in &steps {
            match s {
                Step::Upsert(k, e, a) => {
                    let mut b = WriteBatch::new();
                    b.upsert_node(key(*k), props(if *a { "a" } else { "b" }, e.map(emb)));
                    db.commit(b).unwrap();
                    model.insert(key(*k), (*a, e.map(emb)));
                }
                Step::Patch(k, e) => {
                    let mut b = WriteBatch::new();
                    b.update_node(key(*k), NodePatch { embedding: Some(e.map(emb)), ..NodePatch::default() });
                    let got = db.commit(b);
                    match model.get_mut(&key(*k)) {
                        Some(entry) => { got.unwrap(); entry.1 = e.map(emb); }
                        None => prop_assert!(got.is_err()),
                    }
                }
                Step::Delete(k) => {
                    let mut b = WriteBatch::new();
                    b.delete_node(key(*k));
                    db.commit(b).unwrap();
                    model.remove(&key(*k));
                }
                Step::Checkpoint => { db.checkpoint().unwrap(); }
                Step::Compact => { db.compact().unwrap(); }
                Step::Reopen => {
                    drop(db);
                    db = Database::open_with(dir.path(), options()).unwrap();
                }
                Step::Bulk(nodes) => {
                    let mut bl = BulkLoad::new();
                    let mut seen = BTreeMap::new();
                    for (k, e) in nodes {
                        bl.node(&key(*k), props("b", Some(emb(*e)))).unwrap();
                        seen.insert(key(*k), emb(*e));
                    }
                    db.bulk_load(bl).unwrap();
                    for (k, e) in seen {
                        model.insert(k, (false, Some(e)));
                    }
                }
            }
            check(&db, &model)?;
        }
        db.verify().unwrap();
        drop(db);
        let db = Database::open_with(dir.path(), options()).unwrap();
        check(&db, &model)?;
        let any = model.values().any(|(_, e)| e.is_some());
        if any {
            prop_assert_eq!(db.snapshot().embedding_dimension(), Some(DIM));
        }
    }
}

fn invalid(r: hopgraph::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => e.to_string(),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// The first embedding fixes the dimension: a write or a query of another dimension is
/// refused naming both, nothing of the batch is written, and the dimension survives a
/// reopen even when no embedding is left.
#[test]
fn one_dimension_per_store() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.snapshot().embedding_dimension(), None);
    // No dimension yet: any query finds nothing.
    assert!(
        db.snapshot()
            .search_vector(&VectorQuery::new(vec![1.0; 7]))
            .unwrap()
            .is_empty()
    );
    // Two dimensions in one batch: the second is refused and the first is not written.
    let mut b = WriteBatch::new();
    b.upsert_node("a", props("x", Some(vec![1.0, 0.0, 0.0])));
    b.upsert_node("b", props("x", Some(vec![1.0, 0.0])));
    let m = invalid(db.commit(b));
    assert!(m.contains("2 dimensions") && m.contains("have 3"), "{m}");
    assert!(db.snapshot().node_id("a").is_none());
    assert_eq!(db.snapshot().embedding_dimension(), None);

    let mut b = WriteBatch::new();
    b.upsert_node("a", props("x", Some(vec![1.0, 0.0, 0.0])));
    db.commit(b).unwrap();
    assert_eq!(db.snapshot().embedding_dimension(), Some(3));
    let mut b = WriteBatch::new();
    b.upsert_node("c", props("x", None));
    b.update_node(
        "a",
        NodePatch {
            embedding: Some(Some(vec![1.0; 5])),
            ..NodePatch::default()
        },
    );
    let m = invalid(db.commit(b));
    assert!(m.contains("5 dimensions") && m.contains("have 3"), "{m}");
    assert!(db.snapshot().node_id("c").is_none());
    let m = invalid(
        db.snapshot()
            .search_vector(&VectorQuery::new(vec![1.0, 2.0])),
    );
    assert!(m.contains("2 dimensions") && m.contains("have 3"), "{m}");
    // Bulk loads obey the rule too.
    let mut bl = BulkLoad::new();
    bl.node("d", props("x", Some(vec![1.0; 4]))).unwrap();
    invalid(db.bulk_load(bl));
    assert!(db.snapshot().node_id("d").is_none());
    // ... also deep in a load whose texts are being analysed on worker threads (several
    // batches in flight): the load fails whole and nothing is left half-done.
    let mut bl = BulkLoad::new();
    for i in 0..3_000 {
        let dims = if i == 2_000 { 4 } else { 3 };
        let p = NodeProps {
            content: format!("memory number {i} about graphs"),
            ..props("x", Some(vec![1.0; dims]))
        };
        bl.node(&format!("bulk{i}"), p).unwrap();
    }
    let m = invalid(db.bulk_load(bl));
    assert!(m.contains("4 dimensions") && m.contains("have 3"), "{m}");
    assert!(db.snapshot().node_id("bulk0").is_none());
    db.verify().unwrap();

    // Non-finite values, empty vectors and zero queries are refused.
    for bad in [
        vec![f32::NAN, 0.0, 0.0],
        vec![f32::INFINITY, 0.0, 0.0],
        vec![],
    ] {
        let mut b = WriteBatch::new();
        b.upsert_node("e", props("x", Some(bad.clone())));
        invalid(db.commit(b));
        invalid(db.snapshot().search_vector(&VectorQuery::new(bad)));
    }
    invalid(db.snapshot().search_vector(&VectorQuery::new(vec![0.0; 3])));
    invalid(
        db.snapshot()
            .search_vector(&VectorQuery::new(vec![1.0; 3]).limit(1_000_000)),
    );

    // The dimension outlives every embedding: delete, checkpoint, compact, reopen.
    let mut b = WriteBatch::new();
    b.delete_node("a");
    db.commit(b).unwrap();
    db.checkpoint().unwrap();
    db.compact().unwrap();
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.snapshot().embedding_dimension(), Some(3));
    let mut b = WriteBatch::new();
    b.upsert_node("f", props("x", Some(vec![1.0, 2.0])));
    invalid(db.commit(b));
    db.verify().unwrap();
}

/// A segment large enough for an HNSW graph (under a bound of [`GRAPH_MIN`]): recall@10
/// against exact ranking is high, filters hold, deleted and updated nodes are never found
/// from their old rows, and the acknowledged writes are found after a reopen.
#[test]
fn large_segment_uses_hnsw_and_respects_supersession() {
    let dim = 8;
    let n = GRAPH_MIN;
    let mut rng = hopgraph::vector::SplitMix64::new(5);
    #[allow(clippy::cast_possible_truncation, reason = "values in (-1, 1]")]
    let mut uniform = move || rng.next_unit() as f32 * 2.0 - 1.0;
    let centers: Vec<Vec<f32>> = (0..40)
        .map(|_| (0..dim).map(|_| uniform()).collect())
        .collect();
    let vecs: Vec<Vec<f32>> = (0..n)
        .map(|i| {
            centers[i % 40]
                .iter()
                .map(|c| c + 0.3 * uniform())
                .collect()
        })
        .collect();
    let dir = tempdir();
    let db = open_graph_min(dir.path()).unwrap();
    let mut bl = BulkLoad::new();
    for (i, v) in vecs.iter().enumerate() {
        let kind = if i.is_multiple_of(4) {
            "rare"
        } else {
            "common"
        };
        bl.node(&format!("n{i}"), props(kind, Some(v.clone())))
            .unwrap();
    }
    db.bulk_load(bl).unwrap();
    db.verify().unwrap();
    // Delete some nodes and move others far away: neither may come back from old rows.
    let mut b = WriteBatch::new();
    for i in (0..n).step_by(7) {
        b.delete_node(format!("n{i}"));
    }
    for i in (3..n).step_by(11).filter(|i| !i.is_multiple_of(7)) {
        b.update_node(
            format!("n{i}"),
            NodePatch {
                embedding: Some(Some(vec![-1.0; dim])),
                ..NodePatch::default()
            },
        );
    }
    db.commit(b).unwrap();
    let mut db = db;
    // The changes in the delta, then in a newer segment, then after a reopen.
    for phase in 0..3 {
        match phase {
            1 => {
                db.checkpoint().unwrap();
            }
            2 => {
                drop(db);
                db = open_graph_min(dir.path()).unwrap();
            }
            _ => {}
        }
        let snap = db.snapshot();
        let live = |i: usize| !i.is_multiple_of(7);
        let moved = |i: usize| i >= 3 && (i - 3).is_multiple_of(11) && !i.is_multiple_of(7);
        let mut recall = 0.0;
        let queries = 40u32;
        for qi in 0..queries {
            let q = &vecs[(qi as usize * 97) % n];
            let qn = normalize(q).unwrap();
            for only_rare in [false, true] {
                let mut want: Vec<(f32, usize)> = (0..n)
                    .filter(|&i| live(i) && (!only_rare || i.is_multiple_of(4)))
                    .map(|i| {
                        let e = if moved(i) {
                            vec![-1.0; dim]
                        } else {
                            vecs[i].clone()
                        };
                        (sim(&e, &qn), i)
                    })
                    .collect();
                want.sort_by(|x, y| y.0.total_cmp(&x.0));
                want.truncate(10);
                let filter = if only_rare {
                    NodeFilter::any().kinds(["rare"])
                } else {
                    NodeFilter::any()
                };
                let hits = snap
                    .search_vector(&VectorQuery::new(q.clone()).limit(10).filter(filter))
                    .unwrap();
                assert_eq!(hits.len(), 10);
                let keys: Vec<usize> = hits
                    .iter()
                    .map(|h| {
                        let node = snap.node(h.node).unwrap().expect("hits are live nodes");
                        node.key[1..].parse().unwrap()
                    })
                    .collect();
                for &i in &keys {
                    assert!(live(i), "deleted node n{i} found");
                    assert!(!only_rare || i.is_multiple_of(4), "filter broken");
                }
                assert!(hits.windows(2).all(|w| w[0].similarity >= w[1].similarity));
                recall += keys
                    .iter()
                    .filter(|i| want.iter().any(|w| w.1 == **i))
                    .count() as f64
                    / 10.0;
            }
        }
        let recall = recall / f64::from(2 * queries);
        assert!(recall >= 0.95, "phase {phase}: recall@10 {recall}");
        // The moved nodes are found by their new embedding.
        let far = snap
            .search_vector(&VectorQuery::new(vec![-1.0; dim]).limit(5))
            .unwrap();
        assert!(far.iter().all(|h| h.similarity > 0.999), "{far:?}");
        assert!(snap.node(NodeId(0)).is_ok());
        db.verify().unwrap();
    }
}

/// A flipped bit anywhere in a segment's vector sections: opening refuses it or `verify`
/// reports it, and a search of the damaged segment answers or errs, never panics.
#[test]
fn damaged_vector_sections_are_detected_and_harmless() {
    use hopgraph::format::segment::{SectionKind as K, SegmentLayout};
    let dir = tempdir();
    {
        let db = Database::open(dir.path()).unwrap();
        let mut b = WriteBatch::new();
        for i in 0..40u8 {
            let e = emb([i as i8 % 5 - 2, 1, i as i8 % 3, -1]);
            b.upsert_node(key(i), props("a", Some(e)));
        }
        db.commit(b).unwrap();
        db.checkpoint().unwrap();
    }
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "hgs"))
        .unwrap();
    let original = std::fs::read(&seg).unwrap();
    let layout = SegmentLayout::parse(&original).unwrap();
    let ranges: Vec<std::ops::Range<usize>> = [K::VectorMeta, K::VectorIds, K::VectorData]
        .iter()
        .map(|&k| layout.entry(k).expect("vector section").range.clone())
        .collect();
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "LOCK")
        .collect();
    let mut tried = 0;
    for range in ranges {
        for at in range.step_by(3) {
            let copy = tempdir();
            for n in &names {
                std::fs::copy(dir.path().join(n), copy.path().join(n)).unwrap();
            }
            let mut bytes = original.clone();
            bytes[at] ^= 1 << (at % 8);
            let target = copy.path().join(seg.file_name().unwrap());
            let mut perms = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false, reason = "a test copy")]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).unwrap();
            std::fs::write(&target, &bytes).unwrap();
            tried += 1;
            let Ok(db) = Database::open(copy.path()) else {
                continue;
            };
            let _ = db
                .snapshot()
                .search_vector(&VectorQuery::new(vec![1.0, 0.5, 0.0, -1.0]).limit(50));
            assert!(db.verify().is_err(), "flip at {at} went unnoticed");
        }
    }
    assert!(tried > 100);
}

/// Clustered vectors for the large-segment tests.
fn clustered(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = hopgraph::vector::SplitMix64::new(seed);
    #[allow(clippy::cast_possible_truncation, reason = "values in (-1, 1]")]
    let mut uniform = move || rng.next_unit() as f32 * 2.0 - 1.0;
    let centers: Vec<Vec<f32>> = (0..40)
        .map(|_| (0..dim).map(|_| uniform()).collect())
        .collect();
    (0..n)
        .map(|i| {
            centers[i % 40]
                .iter()
                .map(|c| c + 0.3 * uniform())
                .collect()
        })
        .collect()
}

/// The bytes of `kind` in the only segment file of `dir`.
fn section_bytes(
    dir: &std::path::Path,
    kinds: &[hopgraph::format::segment::SectionKind],
) -> Vec<Vec<u8>> {
    use hopgraph::format::segment::SegmentLayout;
    let segs: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hgs"))
        .collect();
    assert_eq!(segs.len(), 1, "{segs:?}");
    let bytes = std::fs::read(&segs[0]).unwrap();
    let layout = SegmentLayout::parse(&bytes).unwrap();
    kinds
        .iter()
        .map(|&k| {
            layout
                .entry(k)
                .map_or_else(Vec::new, |e| bytes[e.range.clone()].to_vec())
        })
        .collect()
}

/// The graph bound of the tests below that need graphs (the default, 100,000, would make
/// each build five times longer in a debug build).
const GRAPH_MIN: usize = 20_000;

/// Opens `dir` with segments of [`GRAPH_MIN`] vectors or more getting a graph.
fn open_graph_min(dir: &std::path::Path) -> hopgraph::Result<Database> {
    Database::open_with(dir, Options::default().vector_graph_min(GRAPH_MIN))
}

/// A bulk load that defers the graph: searches are exact meanwhile (the same hits as a
/// brute-force ranking), `index_vectors` then adds the very graph an immediate build makes
/// (same sections, byte for byte), writes made meanwhile survive, and the store verifies
/// and reopens.
#[test]
fn deferred_graph_is_exact_meanwhile_and_index_vectors_builds_the_same_graph() {
    use hopgraph::format::segment::SectionKind as K;
    let (dim, n) = (8, GRAPH_MIN);
    let vecs = clustered(n, dim, 9);
    let load = |defer: bool| {
        let mut bl = BulkLoad::new();
        bl.set_timestamp(1);
        bl.defer_vector_graph(defer);
        for (i, v) in vecs.iter().enumerate() {
            bl.node(&format!("n{i}"), props("a", Some(v.clone())))
                .unwrap();
        }
        bl
    };
    let (now_dir, later_dir) = (tempdir(), tempdir());
    let now = open_graph_min(now_dir.path()).unwrap();
    now.bulk_load(load(false)).unwrap();
    assert_eq!(now.vectors_awaiting_index(), 0);
    let later = open_graph_min(later_dir.path()).unwrap();
    later.bulk_load(load(true)).unwrap();
    assert_eq!(later.vectors_awaiting_index(), n as u64);
    let graph = [
        K::HnswOffsets,
        K::HnswNeighbors,
        K::HnswMembers,
        K::VectorMeta,
    ];
    assert!(section_bytes(later_dir.path(), &graph)[0].is_empty());

    // Exact meanwhile: every query's hits are the brute-force top 10.
    let snap = later.snapshot();
    for qi in 0..20 {
        let q = &vecs[(qi * 389) % n];
        let qn = normalize(q).unwrap();
        let mut want: Vec<(f32, usize)> = (0..n).map(|i| (sim(&vecs[i], &qn), i)).collect();
        want.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
        let hits = snap
            .search_vector(&VectorQuery::new(q.clone()).limit(10))
            .unwrap();
        let sims: Vec<f32> = hits.iter().map(|h| h.similarity).collect();
        let want_sims: Vec<f32> = want[..10].iter().map(|w| w.0).collect();
        assert_eq!(sims, want_sims, "query {qi}");
    }
    drop(snap);

    // A write while the graph is missing, then the build.
    let mut b = WriteBatch::new();
    b.delete_node("n0");
    later.commit(b).unwrap();
    let report = later.index_vectors().unwrap();
    assert_eq!(report.segments.len(), 1);
    assert_eq!(report.vectors, n as u64);
    assert_eq!(later.vectors_awaiting_index(), 0);
    assert_eq!(
        later.index_vectors().unwrap().segments.len(),
        0,
        "nothing left to do"
    );
    later.verify().unwrap();
    later.checkpoint().unwrap();
    drop(later);
    let later = open_graph_min(later_dir.path()).unwrap();
    later.verify().unwrap();
    let snap = later.snapshot();
    assert!(
        snap.node_id("n0").is_none(),
        "the delete survived the index build"
    );
    assert!(snap.node_id("n1").is_some());
    // The graph sections equal an immediate build's (the rows are the same, and the levels
    // are seeded from the loaded segment's id): compared after compacting both stores to
    // one segment each would rebuild them, so compare before, from the replacement file.
    drop(snap);
    drop(later);
    let later_dir_files: Vec<std::path::PathBuf> = std::fs::read_dir(later_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hgs"))
        .collect();
    let copy = tempdir();
    let indexed = later_dir_files
        .iter()
        .find(|p| {
            let bytes = std::fs::read(p).unwrap();
            hopgraph::format::segment::SegmentLayout::parse(&bytes)
                .unwrap()
                .entry(K::HnswNeighbors)
                .is_some()
        })
        .expect("the replacement segment has the graph");
    std::fs::copy(indexed, copy.path().join("x.hgs")).unwrap();
    assert_eq!(
        section_bytes(copy.path(), &graph),
        section_bytes(now_dir.path(), &graph)
    );
}

/// A store in `dir` (graph bound [`GRAPH_MIN`]) holding [`GRAPH_MIN`] clustered 4-d
/// embeddings (seed `seed`) bulk loaded without their graph.
fn deferred_store(dir: &std::path::Path, seed: u64) -> Database {
    let db = open_graph_min(dir).unwrap();
    let mut bl = BulkLoad::new();
    bl.defer_vector_graph(true);
    for (i, v) in clustered(GRAPH_MIN, 4, seed).into_iter().enumerate() {
        bl.node(&format!("n{i}"), props("a", Some(v))).unwrap();
    }
    db.bulk_load(bl).unwrap();
    db
}

/// One vector-graph build at a time: while another holder has the index lock (here the
/// test, as another process would, by `flock` on `INDEX.LOCK`), `index_vectors` waits
/// before linking a single row, and `vector_index_build_running` says so; once the lock
/// is free the call builds the graph. A second handle's call while the first one builds
/// waits too, then finds nothing left (no graph built twice, none thrown away).
#[test]
fn index_vectors_waits_for_another_build() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let n = GRAPH_MIN;
    let dir = tempdir();
    let db = deferred_store(dir.path(), 5);
    assert!(!db.vector_index_build_running());

    let other = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.path().join("INDEX.LOCK"))
        .unwrap();
    other.lock().unwrap();
    assert!(db.vector_index_build_running());
    let linked = AtomicU64::new(0);
    let second = open_graph_min(dir.path()).unwrap();
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| {
            db.index_vectors_reporting(&mut |done, _| linked.store(done.max(1), Ordering::SeqCst))
        });
        // Rows are linked in batches of at most 256 and each reported: without the wait
        // the first report would come within milliseconds.
        std::thread::sleep(std::time::Duration::from_millis(800));
        assert_eq!(
            linked.load(Ordering::SeqCst),
            0,
            "linked rows while locked out"
        );
        assert!(!first.is_finished());
        assert_eq!(db.vectors_awaiting_index(), n as u64);
        other.unlock().unwrap();
        // Wait until the first call builds, then start the second handle's.
        while linked.load(Ordering::SeqCst) == 0 && !first.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let second = s.spawn(|| {
            // The first call holds the lock, unless it has finished already.
            assert!(second.vector_index_build_running() || second.vectors_awaiting_index() == 0);
            second.index_vectors()
        });
        (first.join().unwrap(), second.join().unwrap())
    });
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!((first.vectors, first.pending), (n as u64, 0));
    assert_eq!((second.vectors, second.pending), (0, 0), "{second:?}");
    assert_eq!(db.vectors_awaiting_index(), 0);
    db.verify().unwrap();
}

/// A damaged section of a segment awaiting its graph: `index_vectors` refuses to copy it
/// (it would launder the damage under a fresh checksum) and changes nothing.
#[test]
fn index_vectors_refuses_a_damaged_segment_and_changes_nothing() {
    use hopgraph::format::segment::{SectionKind as K, SegmentLayout};
    let n = GRAPH_MIN;
    let dir = tempdir();
    drop(deferred_store(dir.path(), 3));
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "hgs"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let layout = SegmentLayout::parse(&bytes).unwrap();
    let at = layout.entry(K::NodeBlob).unwrap().range.start + 3;
    bytes[at] ^= 0x10;
    let mut perms = std::fs::metadata(&seg).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false, reason = "a test's damage")]
    perms.set_readonly(false);
    std::fs::set_permissions(&seg, perms).unwrap();
    std::fs::write(&seg, &bytes).unwrap();
    let names = |d: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let before = names(dir.path());
    let manifest = std::fs::read(dir.path().join("MANIFEST")).unwrap();
    let db = open_graph_min(dir.path()).unwrap();
    let err = db.index_vectors().unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert_eq!(db.vectors_awaiting_index(), n as u64);
    drop(db);
    // The index lock file stays (it holds no data, as `LOCK`).
    let after: Vec<String> = names(dir.path())
        .into_iter()
        .filter(|n| n != "INDEX.LOCK")
        .collect();
    assert_eq!(after, before, "no staged file left behind");
    assert_eq!(
        std::fs::read(dir.path().join("MANIFEST")).unwrap(),
        manifest
    );
}

/// Below the graph bound (default 100,000) vector search is exact: a load of 20,000
/// uniformly random 40-d vectors (hard for an approximate index) under the default bound
/// gets no graph, and every query's top 10 is the brute-force top 10. The same rows
/// written under a bound of 20,000 get a graph; a handle opened with the default bound
/// still scans that segment exactly (same answers), where one opened with the lower bound
/// searches the graph and misses some of the true top 10 (so the test can tell).
#[test]
fn search_below_the_graph_bound_is_exact() {
    use hopgraph::format::segment::SectionKind as K;
    let (dim, n) = (40, GRAPH_MIN);
    let mut rng = hopgraph::vector::SplitMix64::new(17);
    #[allow(clippy::cast_possible_truncation, reason = "values in (-1, 1]")]
    let mut uniform = move || rng.next_unit() as f32 * 2.0 - 1.0;
    let vecs: Vec<Vec<f32>> = (0..n)
        .map(|_| (0..dim).map(|_| uniform()).collect())
        .collect();
    let queries: Vec<Vec<f32>> = (0..60)
        .map(|_| (0..dim).map(|_| uniform()).collect())
        .collect();
    let load = |db: &Database| {
        let mut bl = BulkLoad::new();
        for (i, v) in vecs.iter().enumerate() {
            bl.node(&format!("n{i}"), props("a", Some(v.clone())))
                .unwrap();
        }
        db.bulk_load(bl).unwrap();
    };
    // Top 10 by brute force, as (node key number, similarity) pairs.
    let want: Vec<Vec<usize>> = queries
        .iter()
        .map(|q| {
            let qn = normalize(q).unwrap();
            let mut all: Vec<(f32, usize)> = (0..n).map(|i| (sim(&vecs[i], &qn), i)).collect();
            all.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
            all[..10].iter().map(|x| x.1).collect()
        })
        .collect();
    let top10 = |db: &Database| -> Vec<Vec<usize>> {
        let snap = db.snapshot();
        queries
            .iter()
            .map(|q| {
                snap.search_vector(&VectorQuery::new(q.clone()).limit(10))
                    .unwrap()
                    .iter()
                    .map(|h| {
                        let key = snap.node(h.node).unwrap().unwrap().key.clone();
                        key[1..].parse::<usize>().unwrap()
                    })
                    .collect()
            })
            .collect()
    };
    let graph = [K::HnswNeighbors];

    let default_dir = tempdir();
    let db = Database::open(default_dir.path()).unwrap();
    load(&db);
    assert_eq!(db.vectors_awaiting_index(), 0);
    assert!(section_bytes(default_dir.path(), &graph)[0].is_empty());
    assert_eq!(top10(&db), want, "default bound: exact");

    let low_dir = tempdir();
    let low = open_graph_min(low_dir.path()).unwrap();
    load(&low);
    assert!(!section_bytes(low_dir.path(), &graph)[0].is_empty());
    let approximate = top10(&low);
    let missed: usize = approximate
        .iter()
        .zip(&want)
        .map(|(got, want)| want.iter().filter(|i| !got.contains(i)).count())
        .sum();
    assert!(
        missed > 0,
        "the graph found every true neighbour: the test cannot tell"
    );
    drop(low);
    let reopened = Database::open(low_dir.path()).unwrap();
    assert_eq!(
        top10(&reopened),
        want,
        "a graph below the bound is not used"
    );
}
