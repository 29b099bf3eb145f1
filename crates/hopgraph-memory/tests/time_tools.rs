//! Time in the memory tools (issue 42, `docs/MCP-TOOLS.md` "Time"): validity intervals on
//! memories and edges, `as_of` reads, current-only search, supersession with the staleness
//! cascade, the history chain, `end_link`, and ranking by recency and importance.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

use hopgraph::Database;
use hopgraph::kernel::{Budget, Scratch};
use hopgraph_memory::edges::{self, LinkRequest};
use hopgraph_memory::history::{self, SupersedeRequest};
use hopgraph_memory::nodes::{self, CreateMemoryRequest, UpdateMemoryRequest};
use hopgraph_memory::path::{PathRequest, memory_path_as_of};
use hopgraph_memory::search::{SearchRequest, memory_search};
use hopgraph_memory::time::{STALE_KEY, parse_time};
use hopgraph_memory::walk::{self, ExpandRequest, RelatedRequest, TraverseRequest};
use hopgraph_memory::{ToolError, ToolErrorKind};
use serde_json::{Value, json};

const T2020: &str = "2020-01-01T00:00:00Z";
const T2021: &str = "2021-01-01T00:00:00Z";
const T2022: &str = "2022-01-01T00:00:00Z";
const T2023: &str = "2023-01-01T00:00:00Z";

fn ms(s: &str) -> u64 {
    parse_time("t", s).unwrap()
}

fn open() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open(dir.path()).unwrap();
    (dir, db)
}

fn memory(id: &str, content: &str) -> CreateMemoryRequest {
    CreateMemoryRequest {
        memory_type: "semantic".into(),
        content: content.into(),
        id: Some(id.into()),
        title: Some(id.to_uppercase()),
        ..CreateMemoryRequest::default()
    }
}

fn memory_from(id: &str, content: &str, from: &str) -> CreateMemoryRequest {
    CreateMemoryRequest {
        valid_from: Some(from.into()),
        ..memory(id, content)
    }
}

/// Links `s -ty-> t`, valid from 2020.
fn link(db: &Database, s: &str, t: &str, ty: &str) -> String {
    edges::link(
        db,
        &LinkRequest {
            source_id: s.into(),
            target_id: t.into(),
            edge_type: ty.into(),
            valid_from: Some(T2020.into()),
            ..LinkRequest::default()
        },
    )
    .unwrap()
    .id
}

fn err<T: std::fmt::Debug>(r: Result<T, ToolError>) -> String {
    r.expect_err("an error").into_message()
}

fn supersede(old: &str, new: &str, at: &str) -> SupersedeRequest {
    SupersedeRequest {
        memory_id: old.into(),
        new_memory: Some(memory(new, &format!("replacement of {old}"))),
        at: Some(at.into()),
        reason: Some("changed".into()),
        ..SupersedeRequest::default()
    }
}

fn search_ids(db: &Database, req: &SearchRequest) -> Vec<String> {
    memory_search(&db.snapshot(), req)
        .unwrap()
        .results
        .into_iter()
        .map(|h| h.id)
        .collect()
}

fn get(db: &Database, id: &str) -> Value {
    serde_json::to_value(nodes::get_memory(&db.snapshot(), id).unwrap()).unwrap()
}

#[test]
fn intervals_in_and_out_in_utc_milliseconds() {
    let (_d, db) = open();
    let m = nodes::create_memory(
        &db,
        &CreateMemoryRequest {
            valid_from: Some("2020-01-01T02:00:00.5+02:00".into()),
            valid_to: Some("2021-06-01".into()),
            ..memory("a", "alpha")
        },
    )
    .unwrap();
    assert_eq!(m.valid_from, "2020-01-01T00:00:00.500Z");
    assert_eq!(m.valid_to.as_deref(), Some("2021-06-01T00:00:00.000Z"));
    // Without an interval: valid from when it was written, never ending.
    let b = nodes::create_memory(&db, &memory("b", "beta")).unwrap();
    assert_eq!(b.valid_from, b.created_at);
    assert_eq!(b.valid_to, None);
    assert_eq!(b.stale, None);
    // An empty or reversed interval is an error naming valid_to, and nothing is written.
    for (from, to) in [(T2021, T2021), (T2021, T2020)] {
        let e = err(nodes::create_memory(
            &db,
            &CreateMemoryRequest {
                valid_from: Some(from.into()),
                valid_to: Some(to.into()),
                ..memory("c", "gamma")
            },
        ));
        assert!(
            e.starts_with("Invalid argument `valid_to`: must be after valid_from"),
            "{e}"
        );
        assert!(db.snapshot().node_id("c").is_none());
    }
    // Only a valid_to in the past: it would end before it starts (now).
    let e = err(nodes::create_memory(
        &db,
        &CreateMemoryRequest {
            valid_to: Some(T2020.into()),
            ..memory("c", "gamma")
        },
    ));
    assert!(e.contains("`valid_to`"), "{e}");
    let e = err(nodes::create_memory(
        &db,
        &CreateMemoryRequest {
            valid_from: Some("last tuesday".into()),
            ..memory("c", "gamma")
        },
    ));
    assert!(
        e.starts_with("Invalid argument `valid_from`: must be an RFC 3339 time"),
        "{e}"
    );

    // Edges: link takes and returns an interval; a bad one writes nothing.
    let e = edges::link(
        &db,
        &LinkRequest {
            source_id: "a".into(),
            target_id: "b".into(),
            edge_type: "related_to".into(),
            valid_from: Some(T2020.into()),
            valid_to: Some(T2022.into()),
            ..LinkRequest::default()
        },
    )
    .unwrap();
    assert_eq!(e.valid_from, "2020-01-01T00:00:00.000Z");
    assert_eq!(e.valid_to.as_deref(), Some("2022-01-01T00:00:00.000Z"));
    let bad = edges::link(
        &db,
        &LinkRequest {
            source_id: "b".into(),
            target_id: "a".into(),
            edge_type: "related_to".into(),
            valid_from: Some(T2022.into()),
            valid_to: Some(T2020.into()),
            ..LinkRequest::default()
        },
    );
    assert!(err(bad).starts_with("Invalid argument `valid_to`"));
    assert_eq!(db.snapshot().edge_count(), 1);

    // update_memory moves an interval; one that would end before it starts is refused.
    let u = nodes::update_memory(
        &db,
        &UpdateMemoryRequest {
            memory_id: "a".into(),
            valid_to: Some(T2023.into()),
            ..UpdateMemoryRequest::default()
        },
    )
    .unwrap();
    assert_eq!(u.valid_to.as_deref(), Some("2023-01-01T00:00:00.000Z"));
    let e = err(nodes::update_memory(
        &db,
        &UpdateMemoryRequest {
            memory_id: "a".into(),
            valid_from: Some("2024-01-01T00:00:00Z".into()),
            ..UpdateMemoryRequest::default()
        },
    ));
    assert!(e.starts_with("Invalid argument `valid_to`"), "{e}");
    assert_eq!(get(&db, "a")["valid_from"], "2020-01-01T00:00:00.500Z");
}

#[test]
fn reads_as_of_see_only_what_was_valid_then() {
    let (_d, db) = open();
    // a -caused_by-> b (edge valid 2020-2022), b -caused_by-> c; c valid from 2021.
    nodes::create_memory(&db, &memory_from("a", "alpha", T2020)).unwrap();
    nodes::create_memory(&db, &memory_from("b", "beta", T2020)).unwrap();
    nodes::create_memory(&db, &memory_from("c", "gamma", T2021)).unwrap();
    let ab = edges::link(
        &db,
        &LinkRequest {
            source_id: "a".into(),
            target_id: "b".into(),
            edge_type: "caused_by".into(),
            valid_from: Some(T2020.into()),
            valid_to: Some(T2022.into()),
            ..LinkRequest::default()
        },
    )
    .unwrap();
    edges::link(
        &db,
        &LinkRequest {
            source_id: "b".into(),
            target_id: "c".into(),
            edge_type: "caused_by".into(),
            valid_from: Some(T2021.into()),
            ..LinkRequest::default()
        },
    )
    .unwrap();
    let snap = db.snapshot();
    let mut scratch = Scratch::new();
    let path = |at: Option<&str>| {
        let r = memory_path_as_of(
            &snap,
            &mut Scratch::new(),
            &PathRequest::new("a", "c"),
            at.map(ms),
        )
        .unwrap();
        (r.found, r.message.clone())
    };
    // Now: the a-b edge has ended; in mid-2021 the path exists; in 2020 c did not exist.
    assert!(path(None).0, "without as_of every edge counts");
    assert!(path(Some("2021-06-01T00:00:00Z")).0);
    assert_eq!(
        path(Some("2022-06-01T00:00:00Z")),
        (false, Some("No path from a to c within 4 hops".into()))
    );
    assert_eq!(
        path(Some("2020-06-01T00:00:00Z")),
        (false, Some("Unknown memory id: c".into()))
    );
    // Path entries carry their edge's interval.
    let found = memory_path_as_of(&snap, &mut scratch, &PathRequest::new("a", "b"), None).unwrap();
    let v = serde_json::to_value(&found).unwrap();
    assert_eq!(v["path"][0]["valid_from"], "2020-01-01T00:00:00.000Z");
    assert_eq!(v["path"][0]["valid_to"], "2022-01-01T00:00:00.000Z");
    assert!(v["path"][1].get("valid_to").is_none());

    // related / traverse / expand.
    let related = |at: Option<&str>| {
        walk::related_as_of(
            &snap,
            &RelatedRequest {
                memory_id: "b".into(),
                edge_type: None,
                direction: hopgraph::Direction::Both,
                limit: 20,
            },
            at.map(ms),
        )
        .map(|r| {
            r.results
                .into_iter()
                .map(|e| e.memory_id)
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(related(None).unwrap().len(), 2);
    assert_eq!(related(Some("2022-06-01T00:00:00Z")).unwrap(), ["c"]);
    assert_eq!(related(Some("2020-06-01T00:00:00Z")).unwrap(), ["a"]);
    assert_eq!(
        err(related(Some("2019-01-01T00:00:00Z"))),
        "Memory not found."
    );
    let r = walk::related(
        &snap,
        &RelatedRequest {
            memory_id: "a".into(),
            edge_type: None,
            direction: hopgraph::Direction::Both,
            limit: 20,
        },
    )
    .unwrap();
    assert_eq!(r.results[0].edge_id, ab.id);
    assert_eq!(
        r.results[0].validity.valid_to.as_deref(),
        Some("2022-01-01T00:00:00.000Z")
    );
    let t = walk::traverse_as_of(
        &snap,
        &mut scratch,
        &TraverseRequest {
            memory_id: "a".into(),
            edge_types: None,
            max_depth: 3,
            limit: 20,
            direction: hopgraph::Direction::Both,
            budget: Budget::default(),
        },
        Some(ms("2022-06-01T00:00:00Z")),
    )
    .unwrap();
    assert!(t.results.is_empty(), "a is cut off once its edge ended");
    let x = walk::expand_as_of(
        &snap,
        &mut scratch,
        &ExpandRequest {
            seed_doc_ids: vec!["c".into()],
            hops: 2,
            direction: hopgraph::Direction::Both,
            one_way_routes: true,
            edge_types: None,
            filter_properties: None,
            include_superseded: true,
            include_route: false,
            limit: 100,
            budget: Budget::default(),
        },
        Some(ms("2020-06-01T00:00:00Z")),
    )
    .unwrap();
    assert_eq!(
        x.warnings.len(),
        1,
        "c was not valid in 2020: an unknown seed"
    );

    // get_memory as of: a memory not valid then is not found; edges counted as of then.
    assert_eq!(
        err(nodes::get_memory_as_of(&snap, "c", Some(ms(T2020)))),
        "Memory not found."
    );
    let g = nodes::get_memory_as_of(&snap, "b", Some(ms("2022-06-01T00:00:00Z"))).unwrap();
    assert_eq!((g.edges.outgoing, g.edges.incoming), (1, 0));
    let g = nodes::get_memory(&snap, "b").unwrap();
    assert_eq!((g.edges.outgoing, g.edges.incoming), (1, 1));
}

#[test]
fn search_is_current_only_unless_asked() {
    let (_d, db) = open();
    nodes::create_memory(
        &db,
        &CreateMemoryRequest {
            valid_from: Some(T2020.into()),
            valid_to: Some(T2021.into()),
            ..memory("old", "the office is in Boston")
        },
    )
    .unwrap();
    nodes::create_memory(&db, &memory_from("new", "the office is in Paris", T2021)).unwrap();
    let q = |f: fn(SearchRequest) -> SearchRequest| {
        f(SearchRequest {
            query: "office".into(),
            ..SearchRequest::default()
        })
    };
    assert_eq!(search_ids(&db, &q(|r| r)), ["new"]);
    let all = memory_search(
        &db.snapshot(),
        &q(|r| SearchRequest {
            include_history: true,
            ..r
        }),
    )
    .unwrap();
    let mut current: Vec<(String, Option<bool>)> = all
        .results
        .iter()
        .map(|h| (h.id.clone(), h.current))
        .collect();
    current.sort();
    assert_eq!(
        current,
        [("new".into(), Some(true)), ("old".into(), Some(false))]
    );
    let old = all.results.iter().find(|h| h.id == "old").unwrap();
    assert_eq!(old.valid_to.as_deref(), Some("2021-01-01T00:00:00.000Z"));
    assert_eq!(
        search_ids(
            &db,
            &q(|r| SearchRequest {
                as_of: Some("2020-06-01T00:00:00Z".into()),
                ..r
            })
        ),
        ["old"]
    );
    let v = serde_json::to_value(memory_search(&db.snapshot(), &q(|r| r)).unwrap()).unwrap();
    assert!(
        v["results"][0].get("current").is_none(),
        "current only with include_history"
    );
    assert_eq!(v["results"][0]["stale"], Value::Null);
    assert_eq!(v["results"][0]["valid_from"], "2021-01-01T00:00:00.000Z");
    let e = err(memory_search(
        &db.snapshot(),
        &q(|r| SearchRequest {
            as_of: Some("soon".into()),
            ..r
        }),
    ));
    assert!(e.starts_with("Invalid argument `as_of`"), "{e}");
}

#[test]
fn ranking_by_recency_and_importance() {
    let (_d, db) = open();
    nodes::create_memory(&db, &memory_from("older", "deploy notes", T2020)).unwrap();
    nodes::create_memory(
        &db,
        &CreateMemoryRequest {
            importance: Some(0.0),
            ..memory_from("newer", "deploy notes", T2022)
        },
    )
    .unwrap();
    nodes::create_memory(
        &db,
        &CreateMemoryRequest {
            importance: Some(1.0),
            ..memory_from("vital", "deploy notes", T2020)
        },
    )
    .unwrap();
    let base = SearchRequest {
        query: "deploy notes".into(),
        as_of: Some(T2023.into()),
        ..SearchRequest::default()
    };
    // Equal text scores; a year's half-life puts the newer memory first, at 1/2 (one year
    // old) against 1/8 (three years old).
    let r = memory_search(
        &db.snapshot(),
        &SearchRequest {
            recency_half_life_days: Some(365.0),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!(r.results[0].id, "newer");
    let newer = r.results[0].score;
    let older = r.results.iter().find(|h| h.id == "older").unwrap().score;
    assert!((newer / older - 4.0).abs() < 0.01, "{newer} {older}");
    // Importance weight 1: the importance-0 memories score 0, the vital one keeps its score.
    let r = memory_search(
        &db.snapshot(),
        &SearchRequest {
            importance_weight: Some(1.0),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!(r.results[0].id, "vital");
    assert_eq!(r.results[1].score, 0.0);
    for (bad, name) in [
        (
            SearchRequest {
                recency_half_life_days: Some(0.0),
                ..base.clone()
            },
            "recency_half_life_days",
        ),
        (
            SearchRequest {
                importance_weight: Some(1.5),
                ..base.clone()
            },
            "importance_weight",
        ),
    ] {
        let e = err(memory_search(&db.snapshot(), &bad));
        assert!(e.starts_with(&format!("Invalid argument `{name}`")), "{e}");
    }
}

/// claim <-derived_from- d1 <-depends_on- d2 <-based_on- d3 <-derived_from- d4
/// <-derived_from- d5 <-derived_from- d6 (6 hops); x -related_to-> claim (not derived);
/// ended -derived_from-> claim through an edge that has ended; gone (not current)
/// -derived_from-> claim, and g2 -derived_from-> gone.
fn derivations(db: &Database) {
    nodes::create_memory(db, &memory_from("claim", "the API limit is 100", T2020)).unwrap();
    let chain = ["claim", "d1", "d2", "d3", "d4", "d5", "d6"];
    let types = [
        "derived_from",
        "depends_on",
        "based_on",
        "derived_from",
        "derived_from",
        "derived_from",
    ];
    for (i, w) in chain.windows(2).enumerate() {
        nodes::create_memory(db, &memory_from(w[1], "derived", T2020)).unwrap();
        link(db, w[1], w[0], types[i]);
    }
    nodes::create_memory(db, &memory_from("x", "unrelated", T2020)).unwrap();
    link(db, "x", "claim", "related_to");
    nodes::create_memory(db, &memory_from("ended", "was derived", T2020)).unwrap();
    let e = link(db, "ended", "claim", "derived_from");
    edges::end_link(db, &e, Some(T2021)).unwrap();
    nodes::create_memory(
        db,
        &CreateMemoryRequest {
            valid_to: Some(T2021.into()),
            ..memory_from("gone", "no longer valid", T2020)
        },
    )
    .unwrap();
    link(db, "gone", "claim", "derived_from");
    nodes::create_memory(db, &memory_from("g2", "behind gone", T2020)).unwrap();
    link(db, "g2", "gone", "derived_from");
}

#[test]
fn supersede_writes_everything_in_one_commit_and_flags_what_was_derived() {
    let (_d, db) = open();
    derivations(&db);
    let lsn = db.snapshot().lsn();
    let r = history::supersede_memory(
        &db,
        &mut Scratch::new(),
        &supersede("claim", "claim2", T2022),
    )
    .unwrap();
    // One commit: the new memory, the edge, the old memory's end and the flags.
    assert_eq!(db.snapshot().lsn(), lsn + 1, "one commit");
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["old"]["id"], "claim");
    assert_eq!(v["old"]["status"], "superseded");
    assert_eq!(v["old"]["valid_to"], "2022-01-01T00:00:00.000Z");
    assert_eq!(v["new"]["id"], "claim2");
    assert_eq!(v["new"]["valid_from"], "2022-01-01T00:00:00.000Z");
    assert_eq!(v["new"]["valid_to"], Value::Null);
    let edge = db
        .snapshot()
        .edge(hopgraph_memory::edges::parse_edge_id(&r.edge_id).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(edge.props["reason"], "changed");
    assert_eq!(edge.valid_from, ms(T2022));
    assert_eq!(db.snapshot().type_name(edge.edge_type), Some("supersedes"));
    // Stale: d1..d5 (5 hops), nearest first; not d6 (6 hops), not x (related_to), not
    // ended (its edge ended), not gone (not current) nor g2 (behind it).
    let stale: Vec<(&str, u32)> = r.stale.iter().map(|s| (s.id.as_str(), s.hops)).collect();
    assert_eq!(
        stale,
        [("d1", 1), ("d2", 2), ("d3", 3), ("d4", 4), ("d5", 5)]
    );
    assert!(!r.truncated);
    let d2 = get(&db, "d2");
    assert_eq!(
        d2["stale"],
        json!({"since": "2022-01-01T00:00:00.000Z", "because": "claim", "hops": 2})
    );
    assert!(
        d2["metadata"].get(STALE_KEY).is_none(),
        "the flag is hidden from metadata"
    );
    for id in ["d6", "x", "ended", "gone", "g2", "claim2"] {
        assert_eq!(get(&db, id)["stale"], Value::Null, "{id}");
    }
    // Search hits carry the flag; the superseded memory is no longer current.
    let hits = memory_search(
        &db.snapshot(),
        &SearchRequest {
            query: "derived".into(),
            limit: Some(50),
            ..SearchRequest::default()
        },
    )
    .unwrap();
    let d1 = hits.results.iter().find(|h| h.id == "d1").unwrap();
    assert_eq!(d1.stale.as_ref().map(|s| s.hops), Some(1));
    assert!(
        search_ids(
            &db,
            &SearchRequest {
                query: "API limit".into(),
                ..SearchRequest::default()
            }
        )
        .is_empty()
    );
    // Any update of a stale memory clears its flag; metadata may not hold the flag's key.
    let u = nodes::update_memory(
        &db,
        &UpdateMemoryRequest {
            memory_id: "d1".into(),
            importance: Some(0.5),
            ..UpdateMemoryRequest::default()
        },
    )
    .unwrap();
    assert_eq!(u.stale, None);
    let mut reserved = serde_json::Map::new();
    reserved.insert(STALE_KEY.into(), json!({}));
    let e = err(nodes::update_memory(
        &db,
        &UpdateMemoryRequest {
            memory_id: "d2".into(),
            metadata: Some(reserved),
            ..UpdateMemoryRequest::default()
        },
    ));
    assert!(e.starts_with("Invalid argument `metadata`: the key _hopgraph_stale is reserved"));
    assert_ne!(get(&db, "d2")["stale"], Value::Null);
    // expand's include_superseded:false drops what is not current (claim, gone).
    let x = walk::expand(
        &db.snapshot(),
        &mut Scratch::new(),
        &ExpandRequest {
            seed_doc_ids: vec!["d1".into()],
            hops: 2,
            direction: hopgraph::Direction::Both,
            one_way_routes: false,
            edge_types: None,
            filter_properties: None,
            include_superseded: false,
            include_route: false,
            limit: 100,
            budget: Budget::default(),
        },
    )
    .unwrap();
    let docs: Vec<&str> = x.documents.iter().map(|d| d.doc_id.as_str()).collect();
    assert!(
        !docs.contains(&"claim") && !docs.contains(&"gone"),
        "{docs:?}"
    );
    assert!(docs.contains(&"claim2") && docs.contains(&"d2"), "{docs:?}");
}

#[test]
fn superseding_a_stale_memory_moves_the_question_on() {
    let (_d, db) = open();
    derivations(&db);
    history::supersede_memory(
        &db,
        &mut Scratch::new(),
        &supersede("claim", "claim2", T2022),
    )
    .unwrap();
    let r = history::supersede_memory(
        &db,
        &mut Scratch::new(),
        &SupersedeRequest {
            memory_id: "d1".into(),
            by_id: Some("x".into()),
            derived_edge_types: Some(vec!["depends_on".into()]),
            ..SupersedeRequest::default()
        },
    )
    .unwrap();
    assert_eq!(
        r.old.memory.stale, None,
        "the superseded memory's flag is gone"
    );
    assert_eq!(r.new.memory.id, "x");
    // Only depends_on edges count here: d2, at one hop from d1 now.
    let stale: Vec<(&str, u32)> = r.stale.iter().map(|s| (s.id.as_str(), s.hops)).collect();
    assert_eq!(stale, [("d2", 1)]);
    assert_eq!(get(&db, "d2")["stale"]["because"], "d1");
}

#[test]
fn supersede_errors_write_nothing() {
    let (_d, db) = open();
    derivations(&db);
    let snap = db.snapshot();
    let lsn = snap.lsn();
    let mut s = Scratch::new();
    let run =
        |req: SupersedeRequest| err(history::supersede_memory(&db, &mut Scratch::new(), &req));
    assert_eq!(run(supersede("ghost", "n", T2022)), "Memory not found.");
    assert_eq!(
        run(SupersedeRequest {
            by_id: Some("ghost".into()),
            new_memory: None,
            ..supersede("claim", "n", T2022)
        }),
        "Memory not found."
    );
    assert!(
        run(SupersedeRequest {
            by_id: Some("claim".into()),
            new_memory: None,
            ..supersede("claim", "n", T2022)
        })
        .starts_with("Invalid argument `by_id`: must differ from memory_id")
    );
    assert!(
        run(SupersedeRequest {
            by_id: Some("x".into()),
            ..supersede("claim", "n", T2022)
        })
        .starts_with("Invalid argument `by_id`: give either")
    );
    assert!(
        run(supersede("claim", "n", "2019-01-01T00:00:00Z"))
            .starts_with("Invalid argument `at`: must be after the old memory's valid_from")
    );
    assert!(
        run(supersede("claim", "d1", T2022)).starts_with("Memory d1 already exists."),
        "a taken id"
    );
    assert_eq!(
        run(supersede("gone", "n", T2022)),
        "Memory gone is not current (valid until 2021-01-01T00:00:00.000Z)"
    );
    assert_eq!(db.snapshot().lsn(), lsn, "nothing written");
    assert!(db.snapshot().node_id("n").is_none());
    history::supersede_memory(&db, &mut s, &supersede("claim", "claim2", T2022)).unwrap();
    assert_eq!(
        run(supersede("claim", "n", T2023)),
        "Memory claim is not current (superseded by claim2 at 2022-01-01T00:00:00.000Z)"
    );
    let e = history::supersede_memory(&db, &mut s, &supersede("claim", "n", T2023))
        .expect_err("not current");
    assert_eq!(e.kind(), ToolErrorKind::InvalidArgument);
}

/// Two clients supersede one memory at the same moment: the supersession is a
/// conditional commit retried on a newer snapshot, so exactly one succeeds and the other
/// finds the memory no longer current; the store holds one `supersedes` edge into it.
#[test]
fn concurrent_supersessions_of_one_memory_one_wins() {
    for round in 0..16 {
        let (_d, db) = open();
        nodes::create_memory(&db, &memory_from("old", "the fact", T2020)).unwrap();
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|s| {
            let runs: Vec<_> = ["a", "b"]
                .into_iter()
                .map(|new| {
                    let (db, barrier) = (&db, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        history::supersede_memory(
                            db,
                            &mut Scratch::new(),
                            &supersede("old", new, T2022),
                        )
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let won = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "round {round}: {results:?}");
        let lost = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(
            lost.message().contains("not current") || lost.message().contains("superseded"),
            "round {round}: {}",
            lost.message()
        );
        let h = history::memory_history(&db.snapshot(), "old").unwrap();
        assert_eq!(h.history.len(), 2, "round {round}: one successor");
        let loser = if results[0].is_ok() { "b" } else { "a" };
        assert!(db.snapshot().node_id(loser).is_none(), "round {round}");
    }
}

#[test]
fn history_is_the_supersession_chain_oldest_first() {
    let (_d, db) = open();
    nodes::create_memory(&db, &memory_from("v1", "lives in Boston", T2020)).unwrap();
    nodes::create_memory(&db, &memory_from("other", "unrelated", T2020)).unwrap();
    link(&db, "v1", "other", "related_to");
    let mut s = Scratch::new();
    let mut req = supersede("v1", "v2", T2021);
    req.reason = Some("moved to Berlin".into());
    history::supersede_memory(&db, &mut s, &req).unwrap();
    let mut req = supersede("v2", "v3", T2022);
    req.reason = Some("moved to Paris".into());
    history::supersede_memory(&db, &mut s, &req).unwrap();
    for id in ["v1", "v2", "v3"] {
        let h = history::memory_history(&db.snapshot(), id).unwrap();
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(
            v["history"],
            json!([
                {"id": "v1", "title": "V1", "valid_from": "2020-01-01T00:00:00.000Z", "valid_to": "2021-01-01T00:00:00.000Z", "reason": null},
                {"id": "v2", "title": "V2", "valid_from": "2021-01-01T00:00:00.000Z", "valid_to": "2022-01-01T00:00:00.000Z", "reason": "moved to Berlin"},
                {"id": "v3", "title": "V3", "valid_from": "2022-01-01T00:00:00.000Z", "valid_to": null, "reason": "moved to Paris"}
            ]),
            "{id}"
        );
        assert_eq!(v["truncated"], false);
    }
    let alone = history::memory_history(&db.snapshot(), "other").unwrap();
    assert_eq!(alone.history.len(), 1);
    assert_eq!(
        err(history::memory_history(&db.snapshot(), "ghost")),
        "Memory not found."
    );
}

#[test]
fn end_link_keeps_the_edge_for_history() {
    let (_d, db) = open();
    nodes::create_memory(&db, &memory_from("a", "alpha", T2020)).unwrap();
    nodes::create_memory(&db, &memory_from("b", "beta", T2020)).unwrap();
    let id = edges::link(
        &db,
        &LinkRequest {
            source_id: "a".into(),
            target_id: "b".into(),
            edge_type: "works_at".into(),
            valid_from: Some(T2020.into()),
            ..LinkRequest::default()
        },
    )
    .unwrap()
    .id;
    let e = err(edges::end_link(&db, &id, Some("2019-06-01T00:00:00Z")));
    assert!(
        e.starts_with("Invalid argument `at`: must be after the edge's valid_from"),
        "{e}"
    );
    let r = edges::end_link(&db, &id, Some(T2022)).unwrap();
    assert_eq!(r.valid_to, "2022-01-01T00:00:00.000Z");
    assert_eq!(db.snapshot().edge_count(), 1, "the edge stays");
    assert_eq!(
        err(edges::end_link(&db, &id, None)),
        format!("Edge {id} already ended (valid_to 2022-01-01T00:00:00.000Z).")
    );
    assert_eq!(err(edges::end_link(&db, "999", None)), "Edge not found.");
    assert_eq!(err(edges::end_link(&db, "x", None)), "Edge not found.");
    let snap = db.snapshot();
    let found = |at: &str| {
        memory_path_as_of(
            &snap,
            &mut Scratch::new(),
            &PathRequest::new("a", "b"),
            Some(ms(at)),
        )
        .unwrap()
        .found
    };
    assert!(found("2021-01-01T00:00:00Z"));
    assert!(!found(T2022), "valid_to is exclusive");
    // Without as_of graph tools still see it: history stays traceable.
    assert!(
        memory_path_as_of(
            &snap,
            &mut Scratch::new(),
            &PathRequest::new("a", "b"),
            None
        )
        .unwrap()
        .found
    );
}

/// The hybrid search's graph step passes score only along edges valid at the moment the
/// search sees: a neighbour through an ended edge does not join.
#[test]
fn the_graph_step_ignores_ended_edges() {
    let (_d, db) = open();
    let with_vec = |id: &str, content: &str, v: [f64; 2]| CreateMemoryRequest {
        embedding: Some(v.to_vec()),
        ..memory_from(id, content, T2020)
    };
    nodes::create_memory(&db, &with_vec("hit", "rollback of the deploy", [1.0, 0.0])).unwrap();
    nodes::create_memory(
        &db,
        &with_vec("via_current", "unrelated words", [-1.0, 0.0]),
    )
    .unwrap();
    nodes::create_memory(&db, &with_vec("via_ended", "other words", [-1.0, 0.0])).unwrap();
    link(&db, "hit", "via_current", "related_to");
    let ended = link(&db, "hit", "via_ended", "related_to");
    edges::end_link(&db, &ended, Some(T2021)).unwrap();
    let req = SearchRequest {
        query: "rollback".into(),
        embedding: Some(vec![1.0, 0.0]),
        ..SearchRequest::default()
    };
    let mut ids = search_ids(&db, &req);
    ids.sort();
    assert_eq!(ids, ["hit", "via_current"]);
    // Seen as of 2020, when both edges were valid, both neighbours join.
    let mut ids = search_ids(
        &db,
        &SearchRequest {
            as_of: Some("2020-06-01T00:00:00Z".into()),
            ..req
        },
    );
    ids.sort();
    assert_eq!(ids, ["hit", "via_current", "via_ended"]);
}
