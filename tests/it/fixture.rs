//! Tiny databases written by each format version, committed under `tests/fixtures/db-vN/`,
//! must keep opening with the same content in every later build. When a new format version
//! is introduced, add a fixture for it beside the others and write it (only it) with
//! `HOPGRAPH_WRITE_FIXTURE=N cargo test --test it fixture`.

use std::path::{Path, PathBuf};

use hopgraph::{
    Database, Direction, EdgeProps, NodeProps, Options, TextQuery, TypeFilter, WriteBatch,
};
use serde_json::json;

fn fixture_dir(version: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/db-v{version}"))
}

/// A temporary copy of the database directory `src` (fixtures are never opened in place:
/// opening one may write to it).
fn copy_of(src: &Path) -> tempfile::TempDir {
    let tmp = crate::common::tempdir();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    tmp
}

/// The segment `seg` written again as format `version` with valid checksums, each of its
/// sections passed through `edit` first (which returns false to leave the section out).
fn rewritten_segment(
    seg: &[u8],
    version: u32,
    mut edit: impl FnMut(hopgraph::format::segment::SectionKind, &mut Vec<u8>) -> bool,
) -> Vec<u8> {
    use hopgraph::format::segment::{SectionKind, SegmentEncoder, SegmentLayout};
    let layout = SegmentLayout::parse(seg).unwrap();
    let mut enc = SegmentEncoder::with_version(Vec::new(), layout.db_id, version).unwrap();
    for &kind in SectionKind::ALL {
        if layout.entry(kind).is_none() {
            continue;
        }
        let mut bytes = layout.bytes(seg, kind).to_vec();
        if !edit(kind, &mut bytes) {
            continue;
        }
        if kind == SectionKind::KeyHash {
            enc.align(16).unwrap();
        }
        enc.section(kind, &bytes).unwrap();
    }
    enc.finish(layout.segment_id, layout.lsn).unwrap().0
}

fn write_fixture(dir: &Path) {
    let db = Database::open(dir).unwrap();
    let mut b = WriteBatch::new();
    let mut props = NodeProps {
        kind: "semantic".into(),
        title: "Alpha".into(),
        content: "first".into(),
        importance: 0.5,
        ..Default::default()
    };
    props.props.insert("tags".into(), json!(["a", "b"]));
    props.embedding = Some(vec![0.25, -1.0, 3.5]);
    b.upsert_node("alpha", props);
    b.upsert_node(
        "beta",
        NodeProps {
            title: "Beta".into(),
            ..Default::default()
        },
    );
    b.ensure_node("gamma").ensure_node("doomed");
    let mut ep = EdgeProps {
        weight: 2.5,
        ..Default::default()
    };
    ep.props.insert("why".into(), json!("test"));
    b.link("alpha", "caused_by", "beta", ep);
    b.link("beta", "related_to", "gamma", EdgeProps::default());
    b.link("gamma", "related_to", "doomed", EdgeProps::default());
    db.commit(b).unwrap();
    db.checkpoint().unwrap();
    // A WAL tail on top of the segment: a delete and a new edge.
    let mut b = WriteBatch::new();
    b.delete_node("doomed");
    b.link("gamma", "supersedes", "alpha", EdgeProps::default());
    db.commit(b).unwrap();
}

fn check(db: &Database) {
    let snap = db.snapshot();
    assert_eq!(snap.node_count(), 3);
    assert_eq!(snap.edge_count(), 3);
    assert!(snap.node_id("doomed").is_none());
    let alpha = snap.node_by_key("alpha").unwrap().unwrap();
    assert_eq!(alpha.props.title, "Alpha");
    assert_eq!(alpha.props.importance, 0.5);
    assert_eq!(
        alpha.props.embedding.as_deref(),
        Some(&[0.25, -1.0, 3.5][..])
    );
    assert_eq!(alpha.props.props["tags"], json!(["a", "b"]));
    let out = snap.neighbors(alpha.id, Direction::Out, &TypeFilter::All);
    assert_eq!(out.len(), 1);
    let e = snap.edge(out[0].edge).unwrap().unwrap();
    assert_eq!((e.weight, e.props["why"].clone()), (2.5, json!("test")));
    let gamma = snap.node_id("gamma").unwrap();
    assert_eq!(
        snap.neighbors(gamma, Direction::Both, &TypeFilter::All)
            .len(),
        2
    );
    // Written before intervals (or without one): valid from creation, never ended; as of
    // a moment after every write everything is there, before them nothing is.
    assert_eq!((alpha.valid_from, alpha.valid_to), (alpha.created_at, None));
    assert_eq!((e.valid_from, e.valid_to), (e.created_at, None));
    let later = hopgraph::PathSpec::new().as_of(u64::MAX - 1);
    let path = snap
        .shortest_path("alpha", "gamma", &later)
        .unwrap()
        .unwrap();
    assert_eq!(path.len(), 1);
    let before = hopgraph::PathSpec::new().as_of(alpha.created_at - 1);
    assert!(snap.shortest_path("alpha", "gamma", &before).is_err());
}

/// Opens the fixture of `version` read-only in place (it must not change) and writable on
/// a copy (recovery, a commit and a compaction on top of the old format).
fn opens_with_the_same_content(version: u32) {
    let src = fixture_dir(version);
    if std::env::var("HOPGRAPH_WRITE_FIXTURE").ok() == Some(version.to_string()) {
        assert_eq!(
            version,
            hopgraph::format::FORMAT_VERSION,
            "only the current version can be written"
        );
        let _ = std::fs::remove_dir_all(&src);
        write_fixture(&src);
        std::fs::remove_file(src.join("LOCK")).unwrap();
    }
    let db = Database::open_with(&src, Options::default().read_only(true)).unwrap();
    check(&db);
    if version >= 4 {
        // Versions 4 on carry a text index in their segment (older ones gain one when a
        // compaction rewrites them).
        let hits = db
            .snapshot()
            .search_text(&TextQuery::new("alpha first"))
            .unwrap();
        let alpha = db.snapshot().node_id("alpha").unwrap();
        assert_eq!(hits.first().map(|h| h.node), Some(alpha), "v{version}");
        // Their vector sections hold alpha's embedding: unit rows up to version 7, the
        // embedding as written with its inverse norm from version 8.
        let hits = db
            .snapshot()
            .search_vector(&hopgraph::VectorQuery::new(vec![0.5, -2.0, 7.0]))
            .unwrap();
        assert_eq!(hits.len(), 1, "v{version}");
        assert_eq!(hits[0].node, alpha, "v{version}");
        assert!((hits[0].similarity - 1.0).abs() < 1e-6, "v{version}");
    }
    db.verify().unwrap();
    drop(db);
    let tmp = copy_of(&src);
    let db = Database::open(tmp.path()).unwrap();
    check(&db);
    let mut b = WriteBatch::new();
    b.ensure_node("delta");
    db.commit(b).unwrap();
    db.compact().unwrap();
    assert_eq!(db.snapshot().node_count(), 4);
    db.verify().unwrap();
    // Compaction rewrote the old segment in the current format, content unchanged.
    drop(db);
    for entry in std::fs::read_dir(tmp.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "hgs") {
            let bytes = std::fs::read(&path).unwrap();
            let layout = hopgraph::format::segment::SegmentLayout::parse(&bytes).unwrap();
            assert_eq!(
                layout.version,
                hopgraph::format::FORMAT_VERSION,
                "v{version}: {}",
                path.display()
            );
        }
    }
    let db = Database::open(tmp.path()).unwrap();
    let snap = db.snapshot();
    assert_eq!((snap.node_count(), snap.edge_count()), (4, 3), "v{version}");
    let alpha = snap.node_by_key("alpha").unwrap().unwrap();
    assert_eq!(
        alpha.props.embedding.as_deref(),
        Some(&[0.25, -1.0, 3.5][..]),
        "v{version}"
    );
    drop(snap);
    let hits = db
        .snapshot()
        .search_vector(&hopgraph::VectorQuery::new(vec![0.5, -2.0, 7.0]))
        .unwrap();
    assert_eq!(
        hits.first().map(|h| h.node),
        db.snapshot().node_id("alpha"),
        "v{version}"
    );
    let hits = db
        .snapshot()
        .search_text(&TextQuery::new("alpha first"))
        .unwrap();
    assert_eq!(
        hits.first().map(|h| h.node),
        db.snapshot().node_id("alpha"),
        "v{version}"
    );
    db.verify().unwrap();
}

#[test]
fn format_v1_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(1);
}

#[test]
fn format_v2_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(2);
}

#[test]
fn format_v3_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(3);
}

#[test]
fn format_v4_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(4);
}

#[test]
fn format_v5_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(5);
}

#[test]
fn format_v6_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(6);
}

/// Key look-ups, one at a time and in pairs, read every version's key index (v1 binary
/// search, v2–v5 `u32` slots, v6 16-byte slots) with the same answers.
#[test]
fn key_lookups_read_every_fixture_version() {
    let keys = ["alpha", "beta", "gamma", "doomed", "absent"];
    for version in 1..=6 {
        let db =
            Database::open_with(fixture_dir(version), Options::default().read_only(true)).unwrap();
        let snap = db.snapshot();
        let found: Vec<bool> = keys.iter().map(|k| snap.node_id(k).is_some()).collect();
        assert_eq!(found, [true, true, true, false, false], "v{version}");
        for a in keys {
            for b in keys {
                assert_eq!(
                    snap.node_id_pair(a, b),
                    [snap.node_id(a), snap.node_id(b)],
                    "v{version} {a} {b}"
                );
            }
        }
    }
}

/// Text search reads every postings layout: layout 1 in the version 4 fixture (scored
/// without skipping), layout 2 (varint blocks) in the version 5 and 9 ones, layout 3
/// (bit-packed blocks) in the version 10 one and, with phrase-pair filters, the version
/// 11 and 12 ones, and with a phrase-pair set the version 13 one, with the same answers.
#[test]
fn text_search_reads_every_fixture_layout() {
    for version in [4, 5, 9, 10, 11, 12, 13] {
        let seg = std::fs::read(fixture_dir(version).join("seg-000001.hgs")).unwrap();
        let layout = hopgraph::format::segment::SegmentLayout::parse(&seg).unwrap();
        assert_eq!(
            layout.version, version,
            "the fixture's segment is of its version"
        );
        let db =
            Database::open_with(fixture_dir(version), Options::default().read_only(true)).unwrap();
        let snap = db.snapshot();
        let alpha = snap.node_id("alpha").unwrap();
        for (q, field) in [
            ("ALPHA", hopgraph::TextField::Title),
            ("firsts", hopgraph::TextField::Content),
        ] {
            let hits = snap.search_text(&hopgraph::TextQuery::new(q)).unwrap();
            assert_eq!(hits.len(), 1, "v{version} {q}");
            assert_eq!(
                (hits[0].node, hits[0].field),
                (alpha, field),
                "v{version} {q}"
            );
        }
        assert!(
            snap.search_text(&hopgraph::TextQuery::new("beta"))
                .unwrap()
                .iter()
                .any(|h| Some(h.node) == snap.node_id("beta"))
        );
    }
}

#[test]
fn format_v7_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(7);
}

#[test]
fn format_v8_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(8);
}

/// Written by d6c6eef, the last build of format 9: validity intervals,
/// text layout 2.
#[test]
fn format_v9_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(9);
}

/// Written by 011ecbe (format 10): text layout 3 (bit-packed blocks), no
/// phrase-pair filters.
#[test]
fn format_v10_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(10);
}

/// Format 11: the text index carries a phrase-pair filter per record (`TextPairs`).
#[test]
fn format_v11_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(11);
}

/// Format 12: the text index of names joined by `_` or `-` carries their joined stem
/// (no section changed).
#[test]
fn format_v12_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(12);
}

/// Format 13: the text index carries the segment's phrase-pair set (`TextPairSet`).
#[test]
fn format_v13_fixture_opens_with_the_same_content() {
    opens_with_the_same_content(13);
}

/// A segment whose text index an earlier analysis wrote: format 5, written by the build
/// before 3ad6312 (`tests/fixtures/analysis-v5/`: one node, title `SDKs`, content
/// `installed for the cpus`), whose stemmer kept a plural `s` after no vowel, so the index
/// holds the exact terms `sdks` and `cpus` with the stems `sdks` and `cpus`, where today's
/// analysis stems them `sdk` and `cpu`. The exact words still find it, before and after
/// a compaction re-analyses it. (This does not exercise the format gate of the walk's
/// implication, `ANALYSIS_SINCE_FORMAT`: with one document every term is essential and the
/// implication never prunes; a store where it would needs many documents of the old
/// analysis scored just so.)
#[test]
fn segments_of_an_earlier_analysis_are_found_by_their_exact_words() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/analysis-v5");
    let tmp = copy_of(&src);
    let db = Database::open(tmp.path()).unwrap();
    let old = db.snapshot().node_id("old").unwrap();
    let find = |db: &Database, q: &str| -> Vec<(hopgraph::NodeId, hopgraph::TextField)> {
        db.snapshot()
            .search_text(&TextQuery::new(q))
            .unwrap()
            .iter()
            .map(|h| (h.node, h.field))
            .collect()
    };
    for round in ["as written", "after compaction"] {
        assert_eq!(
            find(&db, "sdks"),
            [(old, hopgraph::TextField::Title)],
            "{round}"
        );
        assert_eq!(
            find(&db, "CPUs"),
            [(old, hopgraph::TextField::Content)],
            "{round}"
        );
        assert_eq!(find(&db, "sdks cpus").len(), 1, "{round}");
        let mut b = WriteBatch::new();
        b.ensure_node("other");
        db.commit(b).unwrap();
        db.compact().unwrap();
    }
    // After the compaction the current analysis wrote the index: the singular finds it too.
    assert_eq!(find(&db, "sdk"), [(old, hopgraph::TextField::Title)]);
    db.verify().unwrap();
}

/// The phrase-pair filters come with a version 11 text index and never before: the
/// version 11 fixture's segment, its sections copied into a new one, parses; without
/// `TextPairs`, or declaring version 10 with it, it does not.
#[test]
fn text_pairs_come_with_version_11_text_indexes_only() {
    use hopgraph::format::segment::{SectionKind, SegmentLayout};
    let seg = std::fs::read(fixture_dir(11).join("seg-000001.hgs")).unwrap();
    let rewrite = |version: u32, skip: Option<SectionKind>| -> Vec<u8> {
        rewritten_segment(&seg, version, |kind, _| Some(kind) != skip)
    };
    SegmentLayout::parse(&rewrite(11, None)).expect("the same sections");
    let e = SegmentLayout::parse(&rewrite(11, Some(SectionKind::TextPairs))).unwrap_err();
    assert!(e.what.contains("TextPairs has None elements"), "{e:?}");
    let e = SegmentLayout::parse(&rewrite(10, None)).unwrap_err();
    assert!(
        e.what.contains("TextPairs present in a version 10 segment"),
        "{e:?}"
    );
    SegmentLayout::parse(&rewrite(10, Some(SectionKind::TextPairs)))
        .expect("a version 10 text index has no filters");
}

/// The phrase-pair set comes with a version 13 text index and never before: the version
/// 13 fixture's segment, its sections copied into a new one, parses; without
/// `TextPairSet`, with one of another size, or declaring version 12 with it, it does not.
/// A phrase whose pairs the set lacks is searched without the boost's work, one it holds
/// as before: both rank alpha first.
#[test]
fn text_pair_sets_come_with_version_13_text_indexes_only() {
    use hopgraph::format::segment::{SectionKind, SegmentLayout};
    let seg = std::fs::read(fixture_dir(13).join("seg-000001.hgs")).unwrap();
    let rewrite = |version: u32, skip: Option<SectionKind>| -> Vec<u8> {
        rewritten_segment(&seg, version, |kind, _| Some(kind) != skip)
    };
    SegmentLayout::parse(&rewrite(13, None)).expect("the same sections");
    let e = SegmentLayout::parse(&rewrite(13, Some(SectionKind::TextPairSet))).unwrap_err();
    assert!(e.what.contains("TextPairSet has None elements"), "{e:?}");
    let e = SegmentLayout::parse(&rewrite(12, None)).unwrap_err();
    assert!(
        e.what
            .contains("TextPairSet present in a version 12 segment"),
        "{e:?}"
    );
    SegmentLayout::parse(&rewrite(12, Some(SectionKind::TextPairSet)))
        .expect("a version 12 text index has no set");
    let doubled = rewritten_segment(&seg, 13, |kind, bytes| {
        if kind == SectionKind::TextPairSet {
            let copy = bytes[8..].to_vec();
            bytes.extend_from_slice(&copy);
        }
        true
    });
    let e = SegmentLayout::parse(&doubled).unwrap_err();
    assert!(e.what.contains("TextPairSet has Some("), "{e:?}");
    // A stated size other than the records': parses (opening reads no section), and the
    // segment's text index is refused when a search first reads it.
    let tmp = copy_of(&fixture_dir(13));
    let path = tmp.path().join("seg-000001.hgs");
    let resized = rewritten_segment(&seg, 13, |kind, bytes| {
        if kind == SectionKind::TextPairSet {
            bytes[0] = 13;
        }
        true
    });
    std::fs::write(&path, resized).unwrap();
    let db = Database::open(tmp.path()).unwrap();
    let e = db
        .snapshot()
        .search_text(&TextQuery::new("alpha first"))
        .unwrap_err();
    assert!(e.to_string().contains("text pair set"), "{e}");
    drop(db);
    let db = Database::open_with(fixture_dir(13), Options::default().read_only(true)).unwrap();
    let snap = db.snapshot();
    let alpha = snap.node_id("alpha").unwrap();
    for q in ["alpha first", "first alpha"] {
        let hits = snap.search_text(&TextQuery::new(q)).unwrap();
        assert_eq!(hits.first().map(|h| h.node), Some(alpha), "{q}");
    }
}

/// `verify_text_index` rebuilds each current-format segment's text index from its records
/// and compares it byte for byte: every fixture's segment of an earlier format is listed,
/// not compared; the current version's fixture's and every compacted one's are equal. A
/// current segment whose pair filters were changed (with valid checksums, so `verify` passes)
/// is refused, naming the file and the section.
#[test]
fn the_deep_text_check_rebuilds_each_index_from_its_records() {
    use hopgraph::format::segment::SectionKind;
    for version in 1..=hopgraph::FORMAT_VERSION {
        let tmp = copy_of(&fixture_dir(version));
        let db = Database::open(tmp.path()).unwrap();
        let phases = std::sync::Mutex::new(Vec::new());
        let r = db
            .verify_text_index(&|phase, done, total| {
                phases.lock().unwrap().push((phase, done, total));
            })
            .unwrap();
        if version == hopgraph::FORMAT_VERSION {
            // alpha, beta, gamma and doomed (deleted in the WAL tail, after the segment).
            assert_eq!((r.segments, r.records), (1, 4), "v{version}");
            assert!(r.older_format.is_empty(), "v{version}");
            let last = *phases.lock().unwrap().last().unwrap();
            assert_eq!(last, (hopgraph::VerifyPhase::TextIndex, 4, 4));
        } else {
            assert_eq!((r.segments, r.records), (0, 0), "v{version}");
            assert_eq!(r.older_format, [(1, version)], "v{version}");
        }
        let mut b = WriteBatch::new();
        b.upsert_node(
            "delta",
            NodeProps {
                title: "a fourth record, then compacted".into(),
                ..Default::default()
            },
        );
        db.commit(b).unwrap();
        db.compact().unwrap();
        let r = db.verify_text_index(&|_, _, _| {}).unwrap();
        // doomed dropped, delta added.
        assert_eq!((r.segments, r.records), (1, 4), "v{version} compacted");
        assert!(r.older_format.is_empty(), "v{version} compacted");
    }

    // A copy of the current version's fixture whose segment `edit` changed, written with
    // valid checksums: opens (opening parses nothing), and the deep check alone finds it.
    let deep_check_of = |edit: &dyn Fn(SectionKind, &mut Vec<u8>)| {
        let version = hopgraph::FORMAT_VERSION;
        let tmp = copy_of(&fixture_dir(version));
        let path = tmp.path().join("seg-000001.hgs");
        let seg = std::fs::read(&path).unwrap();
        let seg = rewritten_segment(&seg, version, |kind, bytes| {
            edit(kind, bytes);
            true
        });
        std::fs::write(&path, seg).unwrap();
        let db = Database::open(tmp.path()).unwrap();
        let e = db.verify_text_index(&|_, _, _| {}).unwrap_err();
        assert!(matches!(e, hopgraph::Error::Corrupt { .. }), "{e:?}");
        (db.verify(), e.to_string())
    };
    // One record's pair filter all ones: checksums and structure hold, the index is not
    // what the records give.
    let (verified, text) = deep_check_of(&|kind, bytes| {
        if kind == SectionKind::TextPairs {
            bytes[..32].fill(0xff);
        }
    });
    verified.expect("the checksums hold");
    assert!(text.contains("seg-000001.hgs"), "{text}");
    assert!(text.contains("TextPairs"), "{text}");
    // A bit of the phrase-pair set cleared: a search could miss a phrase; the records
    // give it.
    let (verified, text) = deep_check_of(&|kind, bytes| {
        if kind == SectionKind::TextPairSet {
            for b in &mut bytes[8..] {
                if *b != 0 {
                    *b &= *b - 1;
                    break;
                }
            }
        }
    });
    verified.expect("the checksums hold");
    assert!(text.contains("TextPairSet"), "{text}");
    // Node ids out of order (the writer's precondition): an error, not a panic, without
    // `verify` first.
    let (_, text) = deep_check_of(&|kind, bytes| {
        if kind == SectionKind::NodeIds {
            bytes.swap(0, 4);
        }
    });
    assert!(text.contains("not strictly increasing"), "{text}");
}
