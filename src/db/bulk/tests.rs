//! The out-of-core edge build against the in-memory one: the same segment bytes whatever
//! the memory limit, scratch files removed on success and on failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::db::Options;
use crate::format::segment::{FOOTER_LEN, HEADER_LEN};
use crate::storage::fault::{FaultIo, FaultKind, Injected, Plan, Trigger};

/// A limit far beyond any test's needs: the in-memory build.
const UNBOUNDED: u64 = u64::MAX;

/// One edge of a generated load: source, target, type, weight code, props, validity.
type GenEdge = (u8, u8, u8, u8, bool, Option<(u8, Option<u8>)>);

fn build_load(edges: &[GenEdge], nodes: &[(u8, bool)], limit: u64) -> BulkLoad {
    let mut load = BulkLoad::new();
    load.memory_limit(limit);
    fill_load(load, edges, nodes)
}

/// [`build_load`] made by [`BulkLoad::spilling_into`] `db`: its edges spilled as they are
/// added whenever they take an eighth of `limit`.
fn build_spilling_load(
    db: &Database,
    edges: &[GenEdge],
    nodes: &[(u8, bool)],
    limit: u64,
) -> BulkLoad {
    fill_load(BulkLoad::spilling_into(db, limit).unwrap(), edges, nodes)
}

fn fill_load(mut load: BulkLoad, edges: &[GenEdge], nodes: &[(u8, bool)]) -> BulkLoad {
    load.set_timestamp(1_000);
    for &(k, titled) in nodes {
        let mut p = NodeProps::default();
        if titled {
            p.title = format!("title {k}");
        }
        load.node(&format!("k{k}"), p).unwrap();
    }
    for &(s, t, ty, w, props, validity) in edges {
        let mut p = EdgeProps {
            weight: [1.0, 0.5, 2.0, -0.0][usize::from(w % 4)],
            ..EdgeProps::default()
        };
        if props {
            p.props.insert("n".into(), serde_json::json!(s));
        }
        if let Some((from, to)) = validity {
            p.valid_from = Some(500 + u64::from(from));
            p.valid_to = to.map(|to| 800 + u64::from(to));
        }
        let ty = ["a", "b", "c"][usize::from(ty % 3)];
        load.edge(&format!("k{s}"), ty, &format!("k{t}"), p)
            .unwrap();
    }
    load
}

/// The newest segment file of `dir` with its database id and the checksum that covers it
/// zeroed (the one thing that differs between two databases given the same input).
fn newest_segment(dir: &Path) -> Vec<u8> {
    let mut segs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hgs"))
        .collect();
    segs.sort_by_key(|p| {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        name.trim_start_matches("seg-").parse::<u64>().unwrap()
    });
    let mut bytes = std::fs::read(segs.last().unwrap()).unwrap();
    bytes[HEADER_LEN - 16..HEADER_LEN].fill(0);
    let crc = bytes.len() - FOOTER_LEN + 36;
    bytes[crc..crc + 4].fill(0);
    bytes
}

fn scratch_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("bulk-"))
        .collect()
}

/// The segment files in `dir`, staging files included, sorted.
fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("seg-"))
        .collect();
    names.sort();
    names
}

/// Loads `before` and then `edges` and `nodes` under `limit` into a new database in `dir`;
/// the report of the second load.
fn load_into(
    dir: &Path,
    before: &[GenEdge],
    edges: &[GenEdge],
    nodes: &[(u8, bool)],
    limit: u64,
) -> BulkReport {
    let db = Database::open(dir).unwrap();
    if !before.is_empty() {
        db.bulk_load(build_load(before, &[], UNBOUNDED)).unwrap();
    }
    let report = db.bulk_load(build_load(edges, nodes, limit)).unwrap();
    db.verify().unwrap();
    report
}

/// Both builds of the same input: same report, same segment bytes, no scratch files left.
fn assert_same_segments(before: &[GenEdge], edges: &[GenEdge], nodes: &[(u8, bool)], limit: u64) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let in_memory = load_into(a.path(), before, edges, nodes, UNBOUNDED);
    let spilled = load_into(b.path(), before, edges, nodes, limit);
    assert_eq!(in_memory, spilled);
    assert!(
        scratch_files(b.path()).is_empty(),
        "{:?}",
        scratch_files(b.path())
    );
    let (x, y) = (newest_segment(a.path()), newest_segment(b.path()));
    assert_eq!(x.len(), y.len());
    assert!(
        x == y,
        "the out-of-core segment differs from the in-memory one"
    );
}

fn gen_edge(keys: u8) -> impl Strategy<Value = GenEdge> {
    (
        0..keys,
        0..keys,
        0u8..3,
        prop_oneof![8 => Just(0u8), 1 => 0u8..4],
        prop::bool::weighted(0.1),
        prop::option::weighted(0.1, (0u8..10, prop::option::of(0u8..10))),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random loads with duplicates (a small key space), existing nodes and edges,
    /// properties, weights, validity and several types: a limit of a few KiB (runs of a few
    /// dozen edges) gives the bytes of the in-memory build.
    #[test]
    fn a_tiny_memory_limit_writes_the_same_segment(
        before in prop::collection::vec(gen_edge(24), 0..40),
        edges in prop::collection::vec(gen_edge(48), 0..400),
        nodes in prop::collection::vec((0u8..60, any::<bool>()), 0..20),
    ) {
        assert_same_segments(&before, &edges, &nodes, 3_000);
    }
}

#[test]
fn many_runs_on_a_larger_load_write_the_same_segment() {
    let mut x = 7u64;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let edges: Vec<GenEdge> = (0..30_000)
        .map(|_| {
            let s = u8::try_from(next(250)).unwrap();
            let t = u8::try_from(next(250)).unwrap();
            (s, t, u8::try_from(next(3)).unwrap(), 0, false, None)
        })
        .collect();
    assert_same_segments(&edges[..100], &edges, &[], 64 << 10);
}

#[test]
fn the_limit_decides_the_build_and_a_too_small_one_says_what_it_needs() {
    assert!(external::fits_in_memory(1 << 20, 1000, 1000));
    assert!(!external::fits_in_memory(1 << 10, 1000, 1000));
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let edges: Vec<GenEdge> = (0..200).map(|i| (i, i + 1, 0, 0, false, None)).collect();
    let err = db.bulk_load(build_load(&edges, &[], 100)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("memory limit") && msg.contains("at least"),
        "{msg}"
    );
    assert!(scratch_files(dir.path()).is_empty());
    assert_eq!(db.snapshot().edge_count(), 0);
    assert!(default_memory_limit() >= 1 << 20);
    assert_eq!(
        mem_total("MemTotal:  2048 kB\nMemFree: 1 kB\n"),
        Some(2 << 20)
    );
    assert_eq!(mem_total("nothing"), None);
}

/// After a load of 550 edges onto 50 failed or succeeded with fault `injected`: no scratch
/// file is left (now, and after reopening), a failed load left no segment file before the
/// manifest switch (`segments_before`: the segment files before the load), and the
/// database holds the 50 edges, or all of
/// them when only the removal of a scratch file failed (best effort: the load committed,
/// and the next open removes what is left). A fault outside the scratch files (the
/// segment, the manifest switch) may leave the load there after the switch's rename.
fn check_after_fault(
    dir: &Path,
    db: Database,
    result: Result<BulkReport>,
    injected: &Injected,
    segments_before: &[String],
) {
    let want_edges = match result {
        Ok(report) => {
            assert!(injected.what.starts_with("unlink"), "{injected:?}");
            assert!(injected.what.contains("bulk-"), "{injected:?}");
            50 + report.edges_created
        }
        Err(_) => {
            assert!(scratch_files(dir).is_empty(), "after {injected:?}");
            // Nor is the load's segment, unless the manifest switch failed (after its
            // rename, the manifest may name it).
            if !injected.what.contains("MANIFEST") && !injected.what.starts_with("fsync directory")
            {
                assert_eq!(segment_files(dir), segments_before, "after {injected:?}");
            }
            50
        }
    };
    drop(db);
    let db = Database::open(dir).unwrap();
    assert!(scratch_files(dir).is_empty(), "after {injected:?}");
    let snap = db.snapshot();
    if injected.what.contains("bulk-") {
        assert_eq!(snap.edge_count(), want_edges, "after {injected:?}");
    } else {
        assert!([50, 600].contains(&snap.edge_count()), "after {injected:?}");
    }
    drop(snap);
    db.verify().unwrap();
}

/// An I/O error at each operation of an out-of-core load in turn: the load fails, its
/// scratch files are gone, and the database reopens as it was.
#[test]
fn an_io_error_mid_way_leaves_no_scratch_files_and_the_database_unchanged() {
    let edges: Vec<GenEdge> = (0..600u32)
        .map(|i| {
            let s = u8::try_from(i % 97).unwrap();
            let t = u8::try_from(i * 7 % 89).unwrap();
            (s, t, u8::try_from(i % 2).unwrap(), 0, false, None)
        })
        .collect();
    let mut spill_faults = 0;
    for n in 1.. {
        let dir = tempfile::tempdir().unwrap();
        let fault = FaultIo::new(dir.path()).unwrap();
        let options = Options {
            io: Arc::new(fault.clone()),
            ..Options::default()
        };
        let db = Database::open_with(dir.path(), options).unwrap();
        db.bulk_load(build_load(&edges[..50], &[], UNBOUNDED))
            .unwrap();
        let start = fault.ops();
        let segments_before = segment_files(dir.path());
        fault.plan(Plan {
            at: Trigger::Op(start + n),
            kind: FaultKind::Eio,
        });
        let result = db.bulk_load(build_load(&edges, &[], 4_000));
        let Some(injected) = fault.injected() else {
            result.unwrap();
            break;
        };
        spill_faults += u32::from(injected.what.contains("bulk-"));
        check_after_fault(dir.path(), db, result, &injected, &segments_before);
    }
    assert!(
        spill_faults > 10,
        "only {spill_faults} faults hit scratch files"
    );
}

#[test]
fn open_removes_the_scratch_files_of_a_crashed_load() {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::open(dir.path()).unwrap());
    std::fs::write(dir.path().join("bulk-3-out-runs.tmp"), b"left by a crash").unwrap();
    let db = Database::open(dir.path()).unwrap();
    assert!(scratch_files(dir.path()).is_empty());
    drop(db);
}

#[test]
fn an_out_of_core_load_reports_its_spill_and_merge_phases() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let edges: Vec<GenEdge> = (0..500u32)
        .map(|i| {
            let s = u8::try_from(i % 97).unwrap();
            (s, s.wrapping_add(1), 0, 0, false, None)
        })
        .collect();
    let seen = parking_lot::Mutex::new(Vec::new());
    let progress = |phase: BulkPhase, _: u64, _: u64| {
        let mut seen = seen.lock();
        if seen.last() != Some(&phase) {
            seen.push(phase);
        }
    };
    db.bulk_load_with_progress(build_load(&edges, &[], 4_000), &progress)
        .unwrap();
    let seen = seen.into_inner();
    let at = |p: BulkPhase| seen.iter().position(|&x| x == p);
    let order = [
        BulkPhase::Ids,
        BulkPhase::Spill,
        BulkPhase::Nodes,
        BulkPhase::MergeOut,
        BulkPhase::MergeIn,
        BulkPhase::Write,
        BulkPhase::Sync,
    ];
    let positions: Vec<usize> = order.iter().map(|&p| at(p).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(at(BulkPhase::BuildOut), None, "{seen:?}");
    assert_eq!(at(BulkPhase::BuildIn), None, "{seen:?}");
}

/// Loads `before` (in memory) and then `edges` and `nodes` through a load that spills its
/// edges as they are added under `limit`, into a new database in `dir`; the report, and
/// the edges the load had spilled before it was loaded.
fn spilling_load_into(
    dir: &Path,
    before: &[GenEdge],
    edges: &[GenEdge],
    nodes: &[(u8, bool)],
    limit: u64,
) -> (BulkReport, usize) {
    let db = Database::open(dir).unwrap();
    if !before.is_empty() {
        db.bulk_load(build_load(before, &[], UNBOUNDED)).unwrap();
    }
    let load = build_spilling_load(&db, edges, nodes, limit);
    let spilled = load.edges.spilled_edges();
    assert_eq!(load.edge_count(), edges.len());
    // The spilled edges are in the scratch file meanwhile, and nowhere else.
    assert_eq!(!scratch_files(dir).is_empty(), spilled > 0);
    let report = db.bulk_load(load).unwrap();
    db.verify().unwrap();
    (report, spilled)
}

/// A load spilled as it is added under `limit` against `BulkLoad::new()`'s in-memory
/// load of the same input: same report, same segment bytes, no scratch files left. The
/// edges the spilling load had spilled.
fn assert_same_when_spilled_while_added(
    before: &[GenEdge],
    edges: &[GenEdge],
    nodes: &[(u8, bool)],
    limit: u64,
) -> usize {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let in_memory = load_into(a.path(), before, edges, nodes, UNBOUNDED);
    let (spilling, spilled) = spilling_load_into(b.path(), before, edges, nodes, limit);
    assert_eq!(in_memory, spilling);
    assert!(
        scratch_files(b.path()).is_empty(),
        "{:?}",
        scratch_files(b.path())
    );
    let (x, y) = (newest_segment(a.path()), newest_segment(b.path()));
    assert_eq!(x.len(), y.len());
    assert!(
        x == y,
        "the segment of the load spilled while added differs from the in-memory one"
    );
    spilled
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Random loads with duplicates, existing nodes and edges, properties, weights,
    /// validity and several types, spilled while they are added (an eighth of the limit:
    /// chunks of 38 edges at 3,000 bytes, 250 at 20,000): the bytes of the in-memory build,
    /// whether the load then builds out of core (3,000) or reads the chunks back into memory
    /// (20,000, where the in-memory build of 400 edges fits).
    #[test]
    fn a_load_spilled_while_added_writes_the_same_segment(
        before in prop::collection::vec(gen_edge(24), 0..40),
        edges in prop::collection::vec(gen_edge(48), 0..400),
        nodes in prop::collection::vec((0u8..60, any::<bool>()), 0..20),
    ) {
        for (limit, chunk) in [(3_000, 38), (20_000, 250)] {
            let spilled = assert_same_when_spilled_while_added(&before, &edges, &nodes, limit);
            // A chunk is spilled when an edge is added to a full one.
            prop_assert_eq!(spilled, edges.len().saturating_sub(1) / chunk * chunk);
        }
    }
}

#[test]
fn many_chunks_spilled_while_added_write_the_same_segment() {
    let mut x = 11u64;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    // Duplicates across chunks, weights from the middle on, props and validity here and
    // there.
    let edges: Vec<GenEdge> = (0..30_000u32)
        .map(|i| {
            let s = u8::try_from(next(250)).unwrap();
            let t = u8::try_from(next(250)).unwrap();
            let w = if i > 15_000 {
                u8::try_from(next(4)).unwrap()
            } else {
                0
            };
            let validity = (i % 97 == 0).then(|| (u8::try_from(i % 10).unwrap(), None));
            (
                s,
                t,
                u8::try_from(next(3)).unwrap(),
                w,
                i % 89 == 0,
                validity,
            )
        })
        .collect();
    // 8,000 edges per chunk: three chunks spilled, the rest in memory.
    let spilled = assert_same_when_spilled_while_added(&edges[..100], &edges, &[], 640_000);
    assert_eq!(spilled, 24_000);
    // The in-memory build fits 2 MB (42 bytes per edge): the chunk of 25,000 edges spilled
    // is read back into memory.
    let spilled = assert_same_when_spilled_while_added(&[], &edges, &[], 2_000_000);
    assert_eq!(spilled, 25_000);
}

/// The scratch file of a load spilled while added is gone after the load, after an error
/// of the load, and when the load is dropped unused, whatever the `edge` errors before.
#[test]
fn the_input_scratch_file_is_removed_after_an_error_and_when_dropped_unused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let edges: Vec<GenEdge> = (0..200).map(|i| (i, i / 2, 0, 0, false, None)).collect();
    // Dropped unused, after a refused edge.
    let mut load = build_spilling_load(&db, &edges, &[], 3_000);
    assert!(load.edges.spilled_edges() > 100);
    let files = scratch_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("bulk-input-") && files[0].ends_with(".tmp"));
    let count = load.edge_count();
    assert!(load.edge("", "a", "k1", EdgeProps::default()).is_err());
    assert!(load.edge("k1", "", "k2", EdgeProps::default()).is_err());
    assert_eq!(load.edge_count(), count);
    assert_eq!(scratch_files(dir.path()), files);
    drop(load);
    assert!(scratch_files(dir.path()).is_empty());
    // A load that fails: a limit too small for the node tables of the out-of-core build.
    let load = build_spilling_load(&db, &edges, &[], 100);
    assert!(!scratch_files(dir.path()).is_empty());
    let err = db.bulk_load(load).unwrap_err();
    assert!(err.to_string().contains("memory limit"), "{err}");
    assert!(scratch_files(dir.path()).is_empty());
    assert_eq!(db.snapshot().edge_count(), 0);
    // A load that panics while it is being filled.
    let dir_path = dir.path().to_path_buf();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _load = build_spilling_load(&db, &edges, &[], 3_000);
        assert!(!scratch_files(&dir_path).is_empty());
        panic!("while loading");
    }));
    assert!(panicked.is_err());
    assert!(scratch_files(dir.path()).is_empty());
    // And the same input loads.
    let report = db.bulk_load(build_spilling_load(&db, &edges, &[], 3_000));
    assert_eq!(report.unwrap().edges_created, 200);
    assert!(scratch_files(dir.path()).is_empty());
    // A read-only database has no loads.
    drop(db);
    let ro = Database::open_with(dir.path(), Options::default().read_only(true)).unwrap();
    assert!(matches!(
        BulkLoad::spilling_into(&ro, 1 << 20),
        Err(Error::ReadOnly)
    ));
}

/// An I/O error at each operation of a load spilled while added (the scratch file's
/// creation and writes while edges are added, then the load's): the error comes from
/// `edge` or from the load, the scratch files are gone once the load is dropped, and the
/// database reopens as it was.
#[test]
fn an_io_error_while_spilling_added_edges_leaves_no_scratch_files() {
    let edges: Vec<GenEdge> = (0..600u32)
        .map(|i| {
            let s = u8::try_from(i % 97).unwrap();
            let t = u8::try_from(i * 7 % 89).unwrap();
            (s, t, u8::try_from(i % 2).unwrap(), 0, false, None)
        })
        .collect();
    let (mut add_faults, mut input_faults) = (0, 0);
    for n in 1.. {
        let dir = tempfile::tempdir().unwrap();
        let fault = FaultIo::new(dir.path()).unwrap();
        let options = Options {
            io: Arc::new(fault.clone()),
            ..Options::default()
        };
        let db = Database::open_with(dir.path(), options).unwrap();
        db.bulk_load(build_load(&edges[..50], &[], UNBOUNDED))
            .unwrap();
        let start = fault.ops();
        let segments_before = segment_files(dir.path());
        fault.plan(Plan {
            at: Trigger::Op(start + n),
            kind: FaultKind::Eio,
        });
        let mut load = BulkLoad::spilling_into(&db, 4_000).unwrap();
        load.set_timestamp(1_000);
        let mut added = Ok(());
        for &(s, t, ty, ..) in &edges {
            added = load.edge(
                &format!("k{s}"),
                ["a", "b"][usize::from(ty)],
                &format!("k{t}"),
                EdgeProps::default(),
            );
            if added.is_err() {
                break;
            }
        }
        let result = match added {
            Err(e) => {
                // The edge that failed was not added, and the load stays usable.
                assert!(matches!(e, Error::Io { .. }), "{e}");
                add_faults += 1;
                assert!(load.edge_count() < edges.len());
                drop(load);
                Err(e)
            }
            Ok(()) => db.bulk_load(load),
        };
        let Some(injected) = fault.injected() else {
            result.unwrap();
            break;
        };
        input_faults += u32::from(injected.what.contains("bulk-input-"));
        check_after_fault(dir.path(), db, result, &injected, &segments_before);
    }
    assert!(add_faults >= 2, "only {add_faults} faults while adding");
    assert!(
        input_faults >= 3,
        "only {input_faults} faults hit the input file"
    );
}

#[test]
fn open_removes_the_input_scratch_file_of_a_crashed_load() {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::open(dir.path()).unwrap());
    let name = "bulk-input-0123456789abcdef0123456789abcdef.tmp";
    std::fs::write(dir.path().join(name), b"left by a crash").unwrap();
    let db = Database::open(dir.path()).unwrap();
    assert!(scratch_files(dir.path()).is_empty());
    drop(db);
}

/// The resident pages of the mapping that starts at `start` (Linux: `/proc/self/smaps`).
#[cfg(target_os = "linux")]
fn mapped_rss_kib(start: *const u8) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let head = format!("{:x}-", start as usize);
    let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
    assert!(lines.next().is_some(), "no mapping at {head}");
    let rss = lines.find(|l| l.starts_with("Rss:")).unwrap();
    rss.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The verification after a load checks what `verify` does without keeping the new
/// segment's pages mapped; it finds damage as `verify` does.
#[cfg(target_os = "linux")]
#[test]
fn the_verification_after_a_load_leaves_no_pages_of_the_segment_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut load = BulkLoad::new();
    for i in 0..200_000u32 {
        let (s, t) = (i % 5_003, i.wrapping_mul(2_654_435_761) % 40_009);
        load.edge(
            &format!("n{s}"),
            "a",
            &format!("n{t}"),
            EdgeProps::default(),
        )
        .unwrap();
    }
    let seg_id = db.bulk_load(load).unwrap().segment.unwrap();
    let (io, db_id) = (db.shared.options.io.clone(), db.shared.db_id);
    drop(db);
    let open = || Segment::open(&io, dir.path(), seg_id, db_id).unwrap();
    let seg = open();
    let len = seg.file.len_bytes() / 1024;
    assert!(len > 2_000, "{len} KiB");
    let at = seg.file.bytes().as_ptr();
    seg.file.verify().unwrap();
    let kept = mapped_rss_kib(at);
    assert!(kept > len / 2, "{kept} of {len} KiB mapped after verify");
    seg.file.verify_releasing().unwrap();
    let left = mapped_rss_kib(at);
    assert!(left < 64, "{left} of {len} KiB still mapped");
    // The bytes read afterwards are the same.
    seg.file.verify().unwrap();
    let range = seg
        .file
        .layout
        .entry(crate::format::segment::SectionKind::OutNeighbors)
        .unwrap()
        .range
        .clone();
    drop(seg);
    // Damage in the out-direction's neighbors is found.
    let path = dir.path().join(crate::storage::segment_file_name(seg_id));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[range.start + range.len() / 2] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let seg = open();
    assert!(seg.file.verify().is_err());
    assert!(seg.file.verify_releasing().is_err());
}

#[test]
fn the_databases_types_and_the_loads_together_stay_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = crate::WriteBatch::new();
    batch.ensure_node("a").ensure_node("b");
    batch.link("a", "existing", "b", EdgeProps::default());
    db.commit(batch).unwrap();
    // As many new types as a load may hold: with the database's one, one too many.
    let mut load = BulkLoad::new();
    for t in 0..limits::EDGE_TYPES_MAX {
        load.edge("a", &format!("t{t}"), "b", EdgeProps::default())
            .unwrap();
    }
    let err = db.bulk_load(load).unwrap_err();
    assert!(err.to_string().contains("edge types"), "{err}");
    // Nothing was written: the database has its one type and its one edge.
    let snap = db.snapshot();
    assert_eq!(snap.type_name(TypeId(1)), None);
    assert_eq!(snap.edge_count(), 1);
    db.verify().unwrap();
}
