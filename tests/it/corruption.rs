//! Damaged files: truncation and bit flips in every file kind, plus the WAL recovery rules.
//!
//! A fixture database has two segments (two checkpoints) and a WAL tail of several
//! records. Each attempt writes a fresh copy of its files with one file damaged, then
//! opens it, verifies it and reads every node and edge through a snapshot. The law: either
//! everything succeeds and the graph equals a committed prefix (the full history for
//! MANIFEST and segment damage, at least everything in the segments for WAL damage), or
//! an error whose message names the damaged file. Never a panic or a hang: each attempt
//! runs on its own thread under a deadline, and a panic fails the test with the file,
//! offset and seed.
//!
//! Default: every offset of files up to 4 KiB and 600 seeded offsets of larger ones;
//! `HOPGRAPH_SLOW_TESTS=1` takes every offset everywhere. `HOPGRAPH_CORRUPTION_SEED`
//! replays the bit choices.

// Test code: a failed unwrap is a failed test with a backtrace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use hopgraph::format::wal::{FRAME_LEN, Frame, WAL_HEADER_LEN, WalHeader, decode_record};
use hopgraph::{Database, Direction, EdgeProps, Error, Options, TypeFilter, WriteBatch};

use crate::common::{tempdir, titled};
use crate::crash::{SplitMix64, seed_from_env, slow_tests};

/// Nodes (key, title) and edges (source key, type, target key, weight bits).
type Graph = (
    BTreeSet<(String, String)>,
    BTreeSet<(String, String, String, u32)>,
);

/// Reads every live node and edge, reporting (not panicking on) anything unreadable.
fn read_graph(db: &Database) -> Result<Graph, String> {
    let snap = db.snapshot();
    let (mut nodes, mut edges) = Graph::default();
    for id in snap.node_ids() {
        let node = snap
            .node(id)
            .map_err(|e| e.to_string())?
            .ok_or(format!("live node {id} has no record"))?;
        nodes.insert((node.key.clone(), node.props.title.clone()));
        for nb in snap.neighbors(id, Direction::Out, &TypeFilter::All) {
            let other = snap
                .node(nb.node)
                .map_err(|e| e.to_string())?
                .ok_or(format!(
                    "edge {} leads to missing node {}",
                    nb.edge, nb.node
                ))?;
            let ty = snap
                .type_name(nb.edge_type)
                .ok_or(format!("edge {} has unknown type", nb.edge))?;
            let edge = snap
                .edge(nb.edge)
                .map_err(|e| e.to_string())?
                .ok_or(format!("edge {} has no record", nb.edge))?;
            edges.insert((
                node.key.clone(),
                ty.to_owned(),
                other.key.clone(),
                edge.weight.to_bits(),
            ));
        }
    }
    Ok((nodes, edges))
}

fn batch(n: u64) -> WriteBatch {
    let k = |i: u32| format!("k{n}-{i}");
    let mut b = WriteBatch::new();
    for i in 0..3 {
        b.upsert_node(k(i), titled(&format!("title {n}/{i}")));
    }
    b.link(k(0), "caused_by", k(1), EdgeProps::default());
    let mut heavy = EdgeProps {
        weight: 0.25 + n as f32,
        ..EdgeProps::default()
    };
    heavy.props.insert("batch".into(), serde_json::json!(n));
    b.link(k(1), "related_to", k(2), heavy);
    // Batch 100 stands alone: it is committed after damaged histories of any length.
    if n > 0 && n < 100 {
        b.link(
            k(0),
            "supersedes",
            format!("k{}-0", n - 1),
            EdgeProps::default(),
        );
    }
    // Deletions of nodes and edges that live in older segments, so that tombstones are in
    // the second segment and in the WAL tail.
    if n == 6 {
        b.delete_node("k1-2");
    }
    if n == 10 {
        b.delete_node("k6-1")
            .unlink_triple("k3-1", "related_to", "k3-2");
    }
    b
}

/// Batches in the first segment, in both segments, and in total.
const FIRST_SEGMENT: usize = 5;
const IN_SEGMENTS: usize = 8;
const BATCHES: usize = 14;

struct Fixture {
    /// (file name, bytes) of every file but LOCK.
    files: Vec<(String, Vec<u8>)>,
    /// `prefixes[k]`: the graph after the first `k` batches.
    prefixes: Vec<Graph>,
}

impl Fixture {
    fn build() -> Fixture {
        let tmp = tempdir();
        let db = Database::open(tmp.path()).unwrap();
        let mut prefixes = vec![read_graph(&db).unwrap()];
        for n in 0..BATCHES {
            db.commit(batch(n as u64)).unwrap();
            prefixes.push(read_graph(&db).unwrap());
            if n + 1 == FIRST_SEGMENT || n + 1 == IN_SEGMENTS {
                db.checkpoint().unwrap();
            }
        }
        drop(db);
        let mut files = Vec::new();
        for entry in std::fs::read_dir(tmp.path()).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != "LOCK" {
                files.push((name, std::fs::read(entry.path()).unwrap()));
            }
        }
        files.sort();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "MANIFEST",
                "seg-000001.hgs",
                "seg-000002.hgs",
                "wal-000003.log"
            ]
        );
        Fixture { files, prefixes }
    }

    fn bytes(&self, name: &str) -> &[u8] {
        &self.files.iter().find(|(n, _)| n == name).unwrap().1
    }

    fn write_to(&self, dir: &Path, name: &str, damaged: &[u8]) {
        for (n, b) in &self.files {
            let bytes = if n == name { damaged } else { b };
            std::fs::write(dir.join(n), bytes).unwrap();
        }
    }

    /// The offsets of the WAL's records (frame starts) and its end.
    fn wal_records(&self) -> (Vec<usize>, usize) {
        let wal = self.bytes("wal-000003.log");
        let h = WalHeader::decode(wal).unwrap();
        let (mut pos, mut lsn, mut starts) = (WAL_HEADER_LEN, h.start_lsn, Vec::new());
        while let Frame::Record { len, .. } = decode_record(&wal[pos..], h.db_id, lsn) {
            starts.push(pos);
            pos += len;
            lsn += 1;
        }
        assert_eq!(pos, wal.len());
        assert_eq!(starts.len(), BATCHES - IN_SEGMENTS);
        (starts, pos)
    }
}

/// What one damaged copy did.
#[derive(Debug)]
enum Outcome {
    /// Opened, verified and read back as the prefix of this many batches.
    Prefix(usize),
    /// Refused with this message (open or verify).
    Refused(String),
}

/// Opens, verifies and reads a damaged copy; `Err` describes a broken law.
fn attempt(
    fx: &Fixture,
    name: &str,
    damaged: Vec<u8>,
    allowed: std::ops::RangeInclusive<usize>,
) -> Result<Outcome, String> {
    let tmp = tempdir();
    fx.write_to(tmp.path(), name, &damaged);
    let names_file = |e: &Error| -> Result<Outcome, String> {
        let msg = e.to_string();
        if msg.contains(name) {
            Ok(Outcome::Refused(msg))
        } else {
            Err(format!("error does not name {name}: {msg}"))
        }
    };
    let db = match Database::open_with(tmp.path(), Options::default()) {
        Ok(db) => db,
        Err(e) => return names_file(&e),
    };
    let verified = db.verify();
    // Reading must never panic, whatever verify said.
    let read = read_graph(&db);
    if let Err(e) = verified {
        return names_file(&e);
    }
    let got = read.map_err(|e| format!("verify passed but reading failed: {e}"))?;
    match fx.prefixes.iter().rposition(|p| *p == got) {
        Some(k) if allowed.contains(&k) => Ok(Outcome::Prefix(k)),
        Some(k) => Err(format!(
            "opened as the prefix of {k} batches, allowed {allowed:?}"
        )),
        None => Err(format!(
            "opened and verified, but the graph ({} nodes, {} edges) is no committed prefix",
            got.0.len(),
            got.1.len()
        )),
    }
}

/// Runs `attempt` on its own thread with a deadline, turning a panic or hang into an error.
fn guarded(
    fx: &std::sync::Arc<Fixture>,
    name: &str,
    damaged: Vec<u8>,
    allowed: std::ops::RangeInclusive<usize>,
) -> Result<Outcome, String> {
    let (tx, rx) = mpsc::channel();
    let (fx2, name2) = (fx.clone(), name.to_owned());
    let handle = std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            attempt(&fx2, &name2, damaged, allowed)
        }));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(r)) => {
            let _ = handle.join();
            r
        }
        Ok(Err(panic)) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Err(format!("panicked: {msg}"))
        }
        Err(_) => Err("did not finish within 20 s (hang?)".into()),
    }
}

/// Offsets to damage in a file of `len` bytes: all of them when small (or in slow mode),
/// else a seeded sample that always includes both ends.
fn offsets(len: usize, rng: &mut SplitMix64) -> Vec<usize> {
    if len <= 4096 || slow_tests() {
        return (0..len).collect();
    }
    let mut v: Vec<usize> = (0..600)
        .map(|_| usize::try_from(rng.below(len as u64)).unwrap())
        .collect();
    v.extend([0, 1, len / 2, len - 2, len - 1]);
    v.sort_unstable();
    v.dedup();
    v
}

#[derive(Default, Debug)]
struct Tally {
    attempts: usize,
    refused: usize,
    /// Prefix lengths that damaged copies recovered.
    prefixes: BTreeSet<usize>,
    /// One refusal message, to show what users would read.
    example: Option<String>,
}

fn damage_file(name: &str, allowed: std::ops::RangeInclusive<usize>) {
    let seed = seed_from_env("HOPGRAPH_CORRUPTION_SEED", &format!("corruption of {name}"));
    let mut rng = SplitMix64::new(seed);
    let fx = std::sync::Arc::new(Fixture::build());
    let original = fx.bytes(name).to_vec();
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    let mut record = |what: String, r: Result<Outcome, String>| {
        tally.attempts += 1;
        match r {
            Ok(Outcome::Refused(msg)) => {
                tally.refused += 1;
                tally.example.get_or_insert(msg);
            }
            Ok(Outcome::Prefix(k)) => {
                tally.prefixes.insert(k);
            }
            Err(e) => failures.push(format!("{name}: {what}: {e}")),
        }
    };
    for cut in offsets(original.len(), &mut rng) {
        let r = guarded(&fx, name, original[..cut].to_vec(), allowed.clone());
        record(format!("truncated to {cut} bytes"), r);
    }
    for at in offsets(original.len(), &mut rng) {
        let bit = rng.below(8);
        let mut damaged = original.clone();
        damaged[at] ^= 1 << bit;
        let r = guarded(&fx, name, damaged, allowed.clone());
        record(format!("bit {bit} flipped at byte {at}"), r);
    }
    eprintln!("{name} (seed {seed}): {tally:?}");
    assert!(
        failures.is_empty(),
        "{} of {} damaged copies broke the law (seed {seed}):\n{}",
        failures.len(),
        tally.attempts,
        failures[..failures.len().min(20)].join("\n")
    );
}

const ALL: usize = BATCHES;

#[test]
fn damaged_manifest_is_refused_or_harmless() {
    damage_file("MANIFEST", ALL..=ALL);
}

#[test]
fn damaged_first_segment_is_refused_or_harmless() {
    damage_file("seg-000001.hgs", ALL..=ALL);
}

#[test]
fn damaged_second_segment_is_refused_or_harmless() {
    damage_file("seg-000002.hgs", ALL..=ALL);
}

#[test]
fn damaged_wal_recovers_a_prefix_or_is_refused() {
    damage_file("wal-000003.log", IN_SEGMENTS..=ALL);
}

fn open_copy(
    fx: &Fixture,
    name: &str,
    damaged: &[u8],
) -> (tempfile::TempDir, hopgraph::Result<Database>) {
    let tmp = tempdir();
    fx.write_to(tmp.path(), name, damaged);
    let db = Database::open(tmp.path());
    (tmp, db)
}

#[test]
fn bad_wal_record_followed_by_good_ones_is_an_error_naming_file_and_offset() {
    let fx = Fixture::build();
    let (starts, _) = fx.wal_records();
    for (i, &start) in starts[..starts.len() - 1].iter().enumerate() {
        // Damage the payload, the length and the LSN of a record that is not the last.
        for at in [start + FRAME_LEN + 3, start, start + 9] {
            let mut wal = fx.bytes("wal-000003.log").to_vec();
            wal[at] ^= 0x40;
            let (_tmp, r) = open_copy(&fx, "wal-000003.log", &wal);
            let e = r.expect_err("a damaged record in the middle of the log was skipped");
            let msg = e.to_string();
            assert!(e.is_corruption(), "record {i}, byte {at}: {msg}");
            assert!(msg.contains("wal-000003.log"), "{msg}");
            assert!(
                msg.contains(&format!("at byte {start}")),
                "record {i} starts at {start}: {msg}"
            );
            // A read-only handle refuses it just the same.
            let tmp = tempdir();
            fx.write_to(tmp.path(), "wal-000003.log", &wal);
            let ro = Database::open_with(tmp.path(), Options::default().read_only(true));
            assert!(ro.is_err(), "read-only open skipped the damaged record {i}");
        }
    }
}

#[test]
fn stray_wal_from_another_database_is_refused() {
    let a = tempdir();
    let b = tempdir();
    for dir in [a.path(), b.path()] {
        let db = Database::open(dir).unwrap();
        db.commit(batch(0)).unwrap();
    }
    std::fs::copy(
        b.path().join("wal-000001.log"),
        a.path().join("wal-000001.log"),
    )
    .unwrap();
    for read_only in [false, true] {
        let e = Database::open_with(a.path(), Options::default().read_only(read_only))
            .expect_err("a WAL of another database was accepted");
        let msg = e.to_string();
        assert!(matches!(e, Error::ForeignFile { .. }), "{msg}");
        assert!(
            msg.contains("wal-000001.log") && msg.contains("another database"),
            "{msg}"
        );
    }
}

#[test]
fn torn_last_record_is_truncated_and_the_next_commit_appends_after_it() {
    let fx = Fixture::build();
    let (starts, end) = fx.wal_records();
    let last = *starts.last().unwrap();
    let wal = fx.bytes("wal-000003.log");
    // Torn inside the frame, inside the payload, and garbage appended after the end.
    let mut garbage_tail = wal.to_vec();
    garbage_tail.extend_from_slice(&wal[starts[0]..starts[0] + 20]);
    for (what, damaged, keeps) in [
        ("cut in the frame", wal[..last + 7].to_vec(), BATCHES - 1),
        ("cut in the payload", wal[..end - 3].to_vec(), BATCHES - 1),
        ("half a stale frame appended", garbage_tail, BATCHES),
    ] {
        let tmp = tempdir();
        fx.write_to(tmp.path(), "wal-000003.log", &damaged);
        let db = Database::open(tmp.path()).unwrap();
        let report = db.recovery_report();
        assert!(report.torn_tail_bytes > 0, "{what}: {report:?}");
        assert!(report.torn_tail_reason.is_some(), "{what}");
        assert_eq!(read_graph(&db).unwrap(), fx.prefixes[keeps], "{what}");
        let wal_path = tmp.path().join("wal-000003.log");
        let valid_end = if keeps == BATCHES { end } else { last } as u64;
        assert_eq!(
            std::fs::metadata(&wal_path).unwrap().len(),
            valid_end,
            "{what}: not truncated"
        );
        // The next commit goes right after the last valid record and survives a reopen.
        db.commit(batch(100)).unwrap();
        let want = read_graph(&db).unwrap();
        drop(db);
        let db = Database::open(tmp.path()).unwrap();
        assert_eq!(db.recovery_report().torn_tail_bytes, 0, "{what}");
        assert_eq!(read_graph(&db).unwrap(), want, "{what}");
        let v = db.verify().unwrap();
        assert_eq!(v.wal_trailing_bytes, 0, "{what}");
        assert_eq!(v.wal_records, (keeps - IN_SEGMENTS + 1) as u64, "{what}");
        assert!(
            want.0
                .contains(&("k100-0".to_owned(), "title 100/0".to_owned()))
        );
    }
}

/// Regression for an engine bug found by `damaged_second_segment_is_refused_or_harmless`.
///
/// Symptom: one flipped bit in the newest segment's `Summary` (e.g. `next_edge_id`) or
/// `NodeTombstones` section makes `Database::open` fail with "corrupt database file
/// …/wal-000003.log at byte 56: record LSN 9: edge id 23 was already allocated" (or "delete
/// of node 19, which does not exist"): the intact WAL is blamed, the damaged segment is
/// never named, and since open fails, `verify()` (which would find the section checksum
/// mismatch) cannot even run.
///
/// Cause: open validates segment structure only; section checksums are checked only by
/// `verify()`. Yet `Segment::open` decodes the summary, tombstones and type bitmaps and
/// `State::from_segments` builds the catalog from the newest summary, and `replay_tail`
/// then applies the WAL on top of that unverified state and reports any mismatch against
/// the WAL file.
#[test]
fn damaged_segment_sections_decoded_at_open_are_blamed_on_the_segment() {
    use hopgraph::format::segment::{SectionKind, SegmentLayout};
    let fx = std::sync::Arc::new(Fixture::build());
    let name = "seg-000002.hgs";
    let original = fx.bytes(name).to_vec();
    let layout = SegmentLayout::parse(&original).unwrap();
    let mut failures = Vec::new();
    for kind in [
        SectionKind::Summary,
        SectionKind::NodeTombstones,
        SectionKind::EdgeTombstones,
        SectionKind::TypeBitmaps,
    ] {
        let range = layout.entry(kind).unwrap().range.clone();
        for at in range {
            for bit in 0..8 {
                let mut damaged = original.clone();
                damaged[at] ^= 1 << bit;
                if let Err(e) = guarded(&fx, name, damaged, ALL..=ALL) {
                    failures.push(format!("{kind:?} byte {at} bit {bit}: {e}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} flips were blamed on another file or broke the law:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
}

/// Writes the fixture's files as fuzz seeds into `HOPGRAPH_FUZZ_SEEDS=<fuzz/corpus>`: valid
/// inputs let the fuzzers get past the checksums at once. A tool, not a check, so ignored;
/// run without the variable it fails.
/// `HOPGRAPH_FUZZ_SEEDS=$PWD/fuzz/corpus cargo test --test it write_fuzz_seeds -- --ignored`
#[test]
#[ignore = "writes fuzz seeds, not a check: HOPGRAPH_FUZZ_SEEDS=$PWD/fuzz/corpus \
            cargo test --test it write_fuzz_seeds -- --ignored"]
fn write_fuzz_seeds() {
    let root = std::env::var_os("HOPGRAPH_FUZZ_SEEDS")
        .filter(|r| !r.is_empty())
        .expect(
            "HOPGRAPH_FUZZ_SEEDS is not set: set it to the fuzz corpus directory (fuzz/corpus)",
        );
    let root = Path::new(&root);
    let fx = Fixture::build();
    let put = |target: &str, name: &str, bytes: &[u8]| {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    };
    put("manifest", "fixture", fx.bytes("MANIFEST"));
    for seg in ["seg-000001.hgs", "seg-000002.hgs"] {
        put("segment", seg, fx.bytes(seg));
    }
    // wal_record takes the database id and the first LSN, then the records.
    let wal = fx.bytes("wal-000003.log");
    let h = WalHeader::decode(wal).unwrap();
    let mut input = h.db_id.to_le_bytes().to_vec();
    input.extend_from_slice(&h.start_lsn.to_le_bytes());
    input.extend_from_slice(&wal[WAL_HEADER_LEN..]);
    put("wal_record", "records", &input);
    put("wal_record", "header", &wal[..WAL_HEADER_LEN]);
    let (starts, end) = fx.wal_records();
    for (i, w) in starts
        .iter()
        .chain([&end])
        .collect::<Vec<_>>()
        .windows(2)
        .enumerate()
    {
        put(
            "commit_payload",
            &format!("record{i}"),
            &wal[w[0] + FRAME_LEN..*w[1]],
        );
    }
}

/// A segment whose summary claims dense edge ids starting near `u64::MAX` (the section
/// checksum is only checked by `verify`, so open accepts it).
fn segment_with_dense_base(fx: &Fixture, name: &str, base: u64) -> Vec<u8> {
    use hopgraph::format::segment::{SectionKind, SegmentLayout};
    let mut bytes = fx.bytes(name).to_vec();
    let layout = SegmentLayout::parse(&bytes).unwrap();
    assert!(
        layout.summary.dense_edge_base.is_some(),
        "fixture segment lost its dense ids"
    );
    let at = layout.entry(SectionKind::Summary).unwrap().range.start;
    // Summary: node_bound u32, four u64 counts, then the dense-base flag and value.
    assert_eq!(bytes[at + 36], 1);
    bytes[at + 37..at + 45].copy_from_slice(&base.to_le_bytes());
    bytes
}

/// Symptom: `SegmentLayout::verify_contents` on a segment whose summary says
/// `dense_edge_base = u64::MAX - 1` panics with "attempt to add with overflow" in debug
/// builds (and silently wraps in release), instead of returning a `DecodeError`.
///
/// Cause: `verify_contents` computes `b + rows as u64` (src/format/segment.rs, the
/// `if let Some(last) = ids.last()...or(s.dense_edge_base.map(|b| b + rows as u64)`
/// expression) without a checked add; the base is never bounds-checked by `parse`.
#[test]
fn dense_edge_base_near_u64_max_is_an_error_not_an_overflow() {
    use hopgraph::format::segment::SegmentLayout;
    let fx = Fixture::build();
    let mut words = vec![0u64; fx.bytes("seg-000001.hgs").len().div_ceil(8)];
    let damaged = segment_with_dense_base(&fx, "seg-000001.hgs", u64::MAX - 1);
    let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    aligned[..damaged.len()].copy_from_slice(&damaged);
    let bytes = &aligned[..damaged.len()];
    // The summary checksum now catches the change at parse; either refusal is right.
    let Ok(layout) = SegmentLayout::parse(bytes) else {
        return;
    };
    let r = std::panic::catch_unwind(|| layout.verify_contents(bytes));
    assert!(
        matches!(r, Ok(Err(_))),
        "verify_contents must report the impossible edge ids, got {r:?}"
    );
}

/// Symptom: with the same damage in a database's older segment, `Database::open`
/// succeeds and then reading edges through a snapshot panics with "attempt to add with
/// overflow" in debug builds (release wraps and reports edge ids that do not exist).
///
/// Cause: `SegView::edge_id` and `Segment::edge_at`/`edge_row` (src/db/segment.rs) compute
/// `base + row as u64` unchecked, and nothing at open bounds `dense_edge_base + edge_rows`
/// by `next_edge_id`.
#[test]
fn dense_edge_base_near_u64_max_never_panics_a_reader() {
    let fx = std::sync::Arc::new(Fixture::build());
    let damaged = segment_with_dense_base(&fx, "seg-000001.hgs", u64::MAX - 1);
    guarded(&fx, "seg-000001.hgs", damaged, ALL..=ALL).unwrap();
}

/// `verify_contents` (what `hopgraph check` and every write run after the checksums) finds
/// content that is well-formed piece by piece but inconsistent: two in-CSR entries whose
/// rows are swapped (still a permutation, still sorted, every id in range: only the
/// in/out edge-set fingerprint differs), and two out-CSR entries whose rows are swapped
/// (no longer the inverse of `EdgeOutPos`). Section checksums would catch both on disk;
/// this checks the layer below them.
#[test]
fn swapped_csr_rows_are_caught_by_verify_contents() {
    use hopgraph::format::segment::{SectionKind, SegmentLayout};
    let fx = Fixture::build();
    let original = fx.bytes("seg-000001.hgs");
    let mut words = vec![0u64; original.len().div_ceil(8)];
    let len = original.len();
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..len].copy_from_slice(original);
    let aligned: &[u8] = bytemuck::cast_slice(&words);
    let layout = SegmentLayout::parse(&aligned[..len]).unwrap();
    layout.verify_contents(&aligned[..len]).unwrap();
    for (pos, neighbors, types, want) in [
        (
            SectionKind::InEdgePos,
            SectionKind::InNeighbors,
            SectionKind::InTypes,
            "does not hold the same edges",
        ),
        (
            SectionKind::OutEdgePos,
            SectionKind::OutNeighbors,
            SectionKind::OutTypes,
            "is not the inverse of OutEdgePos",
        ),
    ] {
        let mut damaged = words.clone();
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut damaged);
        let nbrs = layout.u32s(&aligned[..len], neighbors).to_vec();
        let tys = layout.u16s(&aligned[..len], types).to_vec();
        // Two entries that differ in neighbor or type, so their rows carry different edges.
        let j = (1..nbrs.len())
            .find(|&j| (nbrs[j], tys[j]) != (nbrs[0], tys[0]))
            .expect("two different entries");
        let at = layout.entry(pos).unwrap().range.start;
        let (a, b) = (at, at + 4 * j);
        let (x, y) = (
            <[u8; 4]>::try_from(&bytes[a..a + 4]).unwrap(),
            <[u8; 4]>::try_from(&bytes[b..b + 4]).unwrap(),
        );
        bytes[a..a + 4].copy_from_slice(&y);
        bytes[b..b + 4].copy_from_slice(&x);
        let err = layout
            .verify_contents(&bytes[..len])
            .expect_err("swapped rows must not verify");
        assert!(err.what.contains(want), "{pos:?}: {}", err.what);
    }
    // An EdgeOutPos entry beyond the out-CSR is named as such.
    let mut damaged = words.clone();
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut damaged);
    let at = layout.entry(SectionKind::EdgeOutPos).unwrap().range.start;
    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = layout
        .verify_contents(&bytes[..len])
        .expect_err("an out-of-range EdgeOutPos must not verify");
    assert!(err.what.contains("names out-CSR entry"), "{}", err.what);
}
