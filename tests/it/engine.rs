//! Engine basics: commits, reads, checkpoint, compaction, reopen.

use hopgraph::{Database, Direction, EdgeProps, OpResult, Options, TypeFilter, WriteBatch};

use crate::common::{commit_edges, edge_list, tempdir, titled};

#[test]
fn commit_read_checkpoint_compact_reopen() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    commit_edges(
        &db,
        &[
            ("a", "caused_by", "b"),
            ("b", "related_to", "c"),
            ("a", "caused_by", "c"),
        ],
    );
    let snap = db.snapshot();
    assert_eq!(snap.node_count(), 3);
    assert_eq!(snap.edge_count(), 3);
    let a = snap.node_id("a").unwrap();
    let ns = snap.neighbors(a, Direction::Out, &snap.type_filter(&["caused_by"]));
    assert_eq!(ns.len(), 2);
    let before = edge_list(&snap);

    db.checkpoint().unwrap();
    assert_eq!(edge_list(&db.snapshot()), before);
    commit_edges(&db, &[("c", "supersedes", "d")]);
    let mut b = WriteBatch::new();
    b.unlink_triple("a", "caused_by", "b");
    let info = db.commit(b).unwrap();
    assert!(matches!(
        info.results[0],
        OpResult::Unlinked { edge: Some(_) }
    ));
    db.checkpoint().unwrap();
    let after = edge_list(&db.snapshot());
    assert_eq!(after.len(), 3);
    db.compact().unwrap();
    assert_eq!(edge_list(&db.snapshot()), after);
    // The old snapshot still reads its own version.
    assert_eq!(edge_list(&snap), before);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(edge_list(&db.snapshot()), after);
    db.verify().unwrap();
}

#[test]
fn link_dedups_triples_and_delete_node_removes_edges() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    b.upsert_node("x", titled("X"))
        .upsert_node("y", titled("Y"));
    b.link("x", "t", "y", EdgeProps::default());
    b.link("x", "t", "y", EdgeProps::default());
    let info = db.commit(b).unwrap();
    let (
        OpResult::Linked {
            edge: e1,
            created: true,
        },
        OpResult::Linked {
            edge: e2,
            created: false,
        },
    ) = (&info.results[2], &info.results[3])
    else {
        panic!("unexpected results {:?}", info.results);
    };
    assert_eq!(e1, e2);
    db.checkpoint().unwrap();
    let mut b = WriteBatch::new();
    b.link("x", "t", "y", EdgeProps::default());
    let info = db.commit(b).unwrap();
    assert_eq!(
        info.results[0],
        OpResult::Linked {
            edge: *e1,
            created: false
        }
    );
    let mut b = WriteBatch::new();
    b.delete_node("y");
    let info = db.commit(b).unwrap();
    assert!(matches!(
        info.results[0],
        OpResult::NodeDeleted {
            id: Some(_),
            edges_removed: 1
        }
    ));
    let snap = db.snapshot();
    assert_eq!(snap.edge_count(), 0);
    assert!(snap.node_id("y").is_none());
    let x = snap.node_id("x").unwrap();
    assert_eq!(snap.degree(x, Direction::Both, &TypeFilter::All), 0);
    assert_eq!(snap.node(x).unwrap().unwrap().props.title, "X");
}

#[test]
fn failed_batch_changes_nothing() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    b.ensure_node("a")
        .link("a", "t", "missing", EdgeProps::default());
    assert!(db.commit(b).is_err());
    assert_eq!(db.snapshot().node_count(), 0);
    let mut b = WriteBatch::new();
    b.ensure_node("");
    assert!(db.commit(b).is_err());
}

#[test]
fn buffered_mode_and_reopen_replays_wal() {
    let dir = tempdir();
    {
        let db = Database::open_with(
            dir.path(),
            Options::default().durability(hopgraph::Durability::Buffered),
        )
        .unwrap();
        for i in 0..50 {
            commit_edges(&db, &[(&format!("n{i}"), "next", &format!("n{}", i + 1))]);
        }
    }
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.snapshot().edge_count(), 50);
    assert_eq!(db.recovery_report().wal_records_replayed, 50);
}

/// A bulk load numbers its new nodes hubs first (degree-based groups, input order within
/// a group and among the rest), existing nodes keep their ids, and the graph reads the same.
#[test]
fn bulk_load_numbers_new_hubs_first_and_keeps_existing_ids() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    commit_edges(&db, &[("old", "t", "leaf0")]);
    let before = db.snapshot();
    let (old, leaf0) = (
        before.node_id("old").unwrap(),
        before.node_id("leaf0").unwrap(),
    );
    let mut bl = hopgraph::BulkLoad::new();
    // Leaves first in the input, then a small hub, then the big hub last.
    for i in 1..=12 {
        bl.edge(&format!("leaf{i}"), "t", "big", EdgeProps::default())
            .unwrap();
    }
    for i in 1..=4 {
        bl.edge("small", "t", &format!("leaf{i}"), EdgeProps::default())
            .unwrap();
    }
    bl.edge("old", "t", "big", EdgeProps::default()).unwrap();
    let r = db.bulk_load(bl).unwrap();
    assert_eq!(r.nodes_created, 14);
    let snap = db.snapshot();
    assert_eq!(snap.node_id("old"), Some(old));
    assert_eq!(snap.node_id("leaf0"), Some(leaf0));
    let id = |k: &str| snap.node_id(k).unwrap().0;
    // New ids start after the existing two. Degrees in this load: big 13, small 4, leaf1..4
    // 2, leaf5..12 1 (mean of the new nodes 33 / 14 -> 3): big (13 / 3 = 4, group 3) first,
    // then small (4 / 3 = 1, group 1), then the leaves in input order.
    assert_eq!(id("big"), 2);
    assert_eq!(id("small"), 3);
    let leaves: Vec<u32> = (1..=12).map(|i| id(&format!("leaf{i}"))).collect();
    assert_eq!(leaves, (4..16).collect::<Vec<u32>>());
    let big = snap.node_id("big").unwrap();
    let into_big = snap.neighbors(big, Direction::In, &TypeFilter::All);
    assert_eq!(into_big.len(), 13);
    db.verify().unwrap();
}

#[test]
fn bulk_load_builds_a_segment() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    commit_edges(&db, &[("a", "t", "b")]);
    let mut bl = hopgraph::BulkLoad::new();
    bl.edge("a", "t", "b", EdgeProps::default()).unwrap();
    bl.edge("b", "t", "c", EdgeProps::default()).unwrap();
    bl.edge("b", "t", "c", EdgeProps::default()).unwrap();
    bl.edge("c", "u", "a", EdgeProps::default()).unwrap();
    let r = db.bulk_load(bl).unwrap();
    assert_eq!(r.edges_created, 2);
    assert_eq!(r.duplicates_skipped, 2);
    assert_eq!(r.nodes_created, 1);
    let snap = db.snapshot();
    assert_eq!(snap.edge_count(), 3);
    assert_eq!(edge_list(&snap).len(), 3);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.snapshot().edge_count(), 3);
    db.verify().unwrap();
}

/// A bulk load reports its phases in order, each from 0 to its total without going
/// back, and the node phase more than once on a load of many nodes (so that a
/// progress line moves while a large load's texts are analysed).
#[test]
fn bulk_load_reports_every_phase_in_order() {
    use hopgraph::BulkPhase;
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut bl = hopgraph::BulkLoad::new();
    let n = 40_000u32;
    for i in 0..n {
        bl.node(&format!("k{i}"), titled(&format!("note {i}")))
            .unwrap();
        bl.edge(
            &format!("k{i}"),
            "next",
            &format!("k{}", (i + 1) % n),
            EdgeProps::default(),
        )
        .unwrap();
    }
    let seen = std::sync::Mutex::new(Vec::new());
    db.bulk_load_with_progress(bl, &|phase, done, total| {
        seen.lock().unwrap().push((phase, done, total));
    })
    .unwrap();
    let seen = seen.into_inner().unwrap();
    // The in-direction is reported from its own thread, alongside the write: check the
    // others' order on their own.
    let order = [
        BulkPhase::Ids,
        BulkPhase::Nodes,
        BulkPhase::BuildOut,
        BulkPhase::Write,
        BulkPhase::Sync,
    ];
    let mut rank = 0;
    for &(phase, done, total) in seen.iter().filter(|r| r.0 != BulkPhase::BuildIn) {
        let r = order.iter().position(|&p| p == phase).unwrap();
        assert!(r >= rank, "{phase:?} after {:?}", order[rank]);
        rank = r;
        assert!(done <= total, "{phase:?} {done}/{total}");
    }
    for phase in order.iter().copied().chain([BulkPhase::BuildIn]) {
        let reports: Vec<(u64, u64)> = seen
            .iter()
            .filter(|r| r.0 == phase)
            .map(|r| (r.1, r.2))
            .collect();
        assert!(
            reports.windows(2).all(|w| w[0].0 <= w[1].0),
            "{phase:?}: {reports:?}"
        );
        let (first, last) = (reports.first().unwrap(), reports.last().unwrap());
        assert_eq!(first.0, 0, "{phase:?}: {reports:?}");
        assert_eq!(last.0, last.1, "{phase:?}: {reports:?}");
    }
    let nodes = seen.iter().filter(|r| r.0 == BulkPhase::Nodes).count();
    assert!(nodes > 2, "{nodes} node reports");
}

/// Commits `rounds` rounds of 200 edges among 200 new nodes each, with a checkpoint
/// after each: one segment per round.
fn checkpointed_rounds(db: &Database, rounds: usize) {
    for round in 0..rounds {
        let edges: Vec<(String, String)> = (0..200)
            .map(|i| {
                (
                    format!("n{round}-{i}"),
                    format!("n{round}-{}", (i * 7 + 1) % 200),
                )
            })
            .collect();
        let list: Vec<(&str, &str, &str)> = edges
            .iter()
            .map(|(a, b)| (a.as_str(), "t", b.as_str()))
            .collect();
        commit_edges(db, &list);
        db.checkpoint().unwrap();
    }
}

/// `prefault_within` reads every file when they fit the budget, only per-node sections of
/// the newest segments when they do not, and nothing for a zero budget; it never reports
/// more than the budget unless it read everything.
#[test]
fn prefault_within_respects_its_budget() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let empty = db.snapshot();
    assert_eq!(empty.segment_bytes(), 0);
    assert_eq!(empty.prefault_within(0), 0);
    checkpointed_rounds(&db, 3);
    let snap = db.snapshot();
    let total = snap.segment_bytes();
    assert!(total > 0);
    assert_eq!(snap.prefault(), total);
    assert_eq!(snap.prefault_within(total), total);
    assert_eq!(snap.prefault_within(u64::MAX), total);
    assert_eq!(snap.prefault_within(0), 0);
    let indexes = snap.prefault_within(total - 1);
    assert!(indexes > 0 && indexes < total, "{indexes} of {total}");
    // A budget for about one segment's indexes covers fewer segments than all three.
    let one = snap.prefault_within(indexes / 2);
    assert!(one <= indexes / 2 && one < indexes, "{one} of {indexes}");
}

/// Compactions run while another thread commits, deletes and checkpoints: the merge is
/// done without the locks and commits only if the segment list did not change meanwhile
/// (else it merges again under the locks). Either way nothing committed is lost, nothing
/// deleted comes back, and the files verify and reopen to the same graph.
#[test]
fn compaction_runs_alongside_commits_and_checkpoints() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let rounds = 300u32;
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = db.clone();
        let done = &done;
        s.spawn(move || {
            for i in 0..rounds {
                let mut b = WriteBatch::new();
                b.link_creating_missing(
                    format!("n{i}"),
                    "next",
                    format!("n{}", i + 1),
                    EdgeProps::default(),
                );
                if i % 3 == 0 && i > 0 {
                    // A delete of an edge that may sit in a segment being merged.
                    b.unlink_triple(format!("n{}", i - 1), "next", format!("n{i}"));
                }
                writer.commit(b).unwrap();
                if i % 4 == 0 {
                    writer.checkpoint().unwrap();
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            db.compact().unwrap();
        }
    });
    db.compact().unwrap();
    let want: Vec<(String, String, String)> = (0..rounds)
        .filter(|&i| !(i + 1 < rounds && (i + 1) % 3 == 0))
        .map(|i| (format!("n{i}"), "next".to_owned(), format!("n{}", i + 1)))
        .collect();
    let mut want = want;
    want.sort();
    let got = edge_list(&db.snapshot());
    assert_eq!(got, want);
    db.verify().unwrap();
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(edge_list(&db.snapshot()), want);
    db.verify().unwrap();
}

/// Checkpoints write their segment without the locks while commits go on: the commits
/// made meanwhile are carried to the next WAL and stay visible, in this process and after
/// a reopen, with their text searchable; compactions interleave with both.
#[test]
fn checkpoints_run_alongside_commits() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let carried = std::sync::atomic::AtomicU64::new(0);
    let committed = std::thread::scope(|s| {
        let writer = db.clone();
        let (done, carried) = (&done, &carried);
        let commits = s.spawn(move || {
            let mut i = 0u32;
            // Until several checkpoints carried commits over (or a generous bound).
            while carried.load(std::sync::atomic::Ordering::Acquire) < 20 && i < 20_000 {
                let mut b = WriteBatch::new();
                b.upsert_node(format!("n{i}"), titled(&format!("{} shared", tag(i))));
                if i > 0 {
                    b.link(
                        format!("n{}", i - 1),
                        "next",
                        format!("n{i}"),
                        EdgeProps::default(),
                    );
                }
                if i % 5 == 4 {
                    // Deletes of nodes that may sit in the segment being written.
                    b.delete_node(format!("n{}", i - 3));
                }
                writer.commit(b).unwrap();
                i += 1;
            }
            done.store(true, std::sync::atomic::Ordering::Release);
            i
        });
        let mut rounds = 0u32;
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            let r = db.checkpoint().unwrap();
            carried.fetch_add(r.carried, std::sync::atomic::Ordering::AcqRel);
            rounds += 1;
            if rounds.is_multiple_of(7) {
                db.compact().unwrap();
            }
        }
        commits.join().unwrap()
    });
    assert!(
        carried.load(std::sync::atomic::Ordering::Acquire) > 0,
        "no checkpoint overlapped a commit in {committed} commits"
    );
    let deleted = |i: u32| i % 5 == 1 && i + 3 < committed;
    let check = |db: &Database| {
        let snap = db.snapshot();
        for i in 0..committed {
            assert_eq!(
                snap.node_id(&format!("n{i}")).is_some(),
                !deleted(i),
                "n{i}"
            );
        }
        let live = (0..committed).filter(|&i| !deleted(i)).count();
        assert_eq!(snap.node_count(), live as u64);
        let want: Vec<(String, String, String)> = (1..committed)
            .filter(|&i| !deleted(i) && !deleted(i - 1))
            .map(|i| (format!("n{}", i - 1), "next".to_owned(), format!("n{i}")))
            .collect();
        let mut want = want;
        want.sort();
        assert_eq!(edge_list(&snap), want);
        let last = committed - 1;
        let hits = snap
            .search_text(&hopgraph::TextQuery::new(tag(last)))
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(Some(hits[0].node), snap.node_id(&format!("n{last}")));
        db.verify().unwrap();
    };
    check(&db);
    db.checkpoint().unwrap();
    check(&db);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    check(&db);
}

/// A word of consonants naming `i` (no stemmer rule applies to it, no two are alike).
fn tag(mut i: u32) -> String {
    const LETTERS: &[u8; 16] = b"bcdfghjklmnpqrtv";
    let mut out = String::from("zz");
    loop {
        out.push(char::from(LETTERS[(i % 16) as usize]));
        i /= 16;
        if i == 0 {
            return out;
        }
    }
}

#[test]
fn verify_reports_its_progress_to_the_end() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    // Two segments and WAL records after them.
    checkpointed_rounds(&db, 2);
    commit_edges(&db, &[("w1", "t", "w2")]);
    commit_edges(&db, &[("w2", "t", "w3")]);
    let seen = std::sync::Mutex::new(Vec::new());
    let report = db
        .verify_with_progress(&|phase, done, total| seen.lock().unwrap().push((phase, done, total)))
        .unwrap();
    assert_eq!(report, db.verify().unwrap());
    assert_eq!(report.segments, 2);
    assert_eq!(report.wal_records, 2);
    let seen = seen.into_inner().unwrap();
    // The segments' bytes, as the directory has them.
    let segment_bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("seg-"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(segment_bytes > 0 && segment_bytes < report.bytes);
    for phase in [
        hopgraph::VerifyPhase::Checksums,
        hopgraph::VerifyPhase::Contents,
        hopgraph::VerifyPhase::Wal,
    ] {
        let of: Vec<(u64, u64)> = seen
            .iter()
            .filter(|s| s.0 == phase)
            .map(|s| (s.1, s.2))
            .collect();
        assert!(!of.is_empty(), "{phase:?} reported");
        // Within one phase: one total, never going back, never past the total, and the
        // last report says done.
        let total = of[0].1;
        assert!(of.iter().all(|&(_, t)| t == total), "{phase:?}: {of:?}");
        assert!(of.windows(2).all(|w| w[0].0 <= w[1].0), "{phase:?}: {of:?}");
        assert_eq!(of.last().unwrap().0, total, "{phase:?}");
        match phase {
            hopgraph::VerifyPhase::Wal => assert_eq!(total, 2),
            _ => assert_eq!(total, segment_bytes),
        }
    }
}
