//! The out-of-core edge build against the in-memory one: the same segment bytes whatever
//! the memory limit, scratch files removed on success and on failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::db::Options;
use crate::format::segment::{FOOTER_LEN, HEADER_LEN};
use crate::storage::fault::{FaultIo, FaultKind, Plan, Trigger};

/// A limit far beyond any test's needs: the in-memory build.
const UNBOUNDED: u64 = u64::MAX;

/// One edge of a generated load: source, target, type, weight code, props, validity.
type GenEdge = (u8, u8, u8, u8, bool, Option<(u8, Option<u8>)>);

fn build_load(edges: &[GenEdge], nodes: &[(u8, bool)], limit: u64) -> BulkLoad {
    let mut load = BulkLoad::new();
    load.set_timestamp(1_000);
    load.memory_limit(limit);
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
        let want_edges = match result {
            // The fault hit the removal of a scratch file after the commit: best effort,
            // the next open removes what is left.
            Ok(report) => {
                assert!(injected.what.starts_with("unlink"), "{injected:?}");
                assert!(injected.what.contains("bulk-"), "{injected:?}");
                50 + report.edges_created
            }
            Err(_) => {
                assert!(scratch_files(dir.path()).is_empty(), "after {injected:?}");
                50
            }
        };
        drop(db);
        let db = Database::open(dir.path()).unwrap();
        assert!(scratch_files(dir.path()).is_empty(), "after {injected:?}");
        let snap = db.snapshot();
        if injected.what.contains("bulk-") {
            assert_eq!(snap.edge_count(), want_edges, "after {injected:?}");
        } else {
            // Other faults (the segment, the manifest switch) are the in-memory build's:
            // after the switch's rename the load may be there.
            assert!([50, 600].contains(&snap.edge_count()), "after {injected:?}");
        }
        drop(snap);
        db.verify().unwrap();
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
