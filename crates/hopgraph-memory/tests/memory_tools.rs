//! The protocol-neutral tool semantics (`hopgraph_memory`) on a known graph.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

use hopgraph::kernel::{Budget, Scratch};
use hopgraph::{Database, Direction, EdgeProps, NodeProps, WriteBatch};
use hopgraph_memory::path::{PathRequest, memory_path};
use hopgraph_memory::walk::{self, ExpandRequest, RelatedRequest, TraverseRequest};
use serde_json::json;

/// a -caused_by-> b -caused_by-> c, d -related_to-> c, e isolated, s superseded (b -> s).
fn graph() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for (k, t) in [("a", "A"), ("b", "B"), ("c", "C"), ("d", ""), ("e", "E")] {
        b.upsert_node(
            k,
            NodeProps {
                title: t.into(),
                content: format!("content of {k}"),
                kind: "semantic".into(),
                ..Default::default()
            },
        );
    }
    let mut sup = NodeProps {
        title: "S".into(),
        ..Default::default()
    };
    sup.props.insert("status".into(), json!("superseded"));
    b.upsert_node("s", sup);
    b.link("a", "caused_by", "b", EdgeProps::default())
        .link("b", "caused_by", "c", EdgeProps::default())
        .link("d", "related_to", "c", EdgeProps::default())
        .link("b", "supersedes", "s", EdgeProps::default());
    db.commit(b).unwrap();
    (dir, db)
}

#[test]
fn memory_path_shapes_and_messages() {
    let (_d, db) = graph();
    let snap = db.snapshot();
    let mut scratch = Scratch::new();
    let r = memory_path(&snap, &mut scratch, &PathRequest::new("a", "d")).unwrap();
    assert!(r.found);
    assert_eq!(r.hops, 3);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["path"][0]["id"], "a");
    assert_eq!(v["path"][0]["direction_to_next"], "forward");
    assert_eq!(v["path"][2]["direction_to_next"], "backward");
    assert_eq!(v["path"][3]["title"], serde_json::Value::Null);
    // The answer borrows from the snapshot; edge ids are the contract's decimal strings.
    let (a, b) = (snap.node_id("a").unwrap(), snap.node_id("b").unwrap());
    let caused_by = snap.type_id("caused_by").unwrap();
    let ab = snap.edge_by_triple(a, caused_by, b).unwrap();
    assert_eq!(v["path"][0]["edge_id"], ab.0.to_string());
    assert_eq!(v["path"][0]["edge_type_to_next"], "caused_by");
    assert_eq!((r.path[1].id, r.path[1].title), ("b", Some("B")));
    assert!(
        v["path"][3].get("edge_type_to_next").is_none(),
        "last entry has no next edge"
    );
    assert_eq!(
        r.text(),
        "a \"A\" → caused_by → b \"B\" → caused_by → c \"C\" ← related_to ← d"
    );

    // Directed search cannot go backwards over d -> c.
    let mut req = PathRequest::new("a", "d");
    req.direction = Direction::Out;
    let r = memory_path(&snap, &mut scratch, &req).unwrap();
    assert!(!r.found);
    assert_eq!(
        r.message.as_deref(),
        Some("No path from a to d within 4 hops")
    );

    // A path of exactly max_hops is found; one hop fewer is not enough.
    let mut req = PathRequest::new("a", "c");
    req.max_hops = 2;
    assert!(memory_path(&snap, &mut scratch, &req).unwrap().found);
    req.max_hops = 1;
    assert!(!memory_path(&snap, &mut scratch, &req).unwrap().found);

    // Type whitelist.
    let mut req = PathRequest::new("a", "d");
    req.edge_types = Some(vec!["caused_by".into()]);
    assert!(!memory_path(&snap, &mut scratch, &req).unwrap().found);

    // Unknown ids, zero hops.
    let r = memory_path(&snap, &mut scratch, &PathRequest::new("zz", "a")).unwrap();
    assert_eq!(
        (r.found, r.message.as_deref()),
        (false, Some("Unknown memory id: zz"))
    );
    let r = memory_path(&snap, &mut scratch, &PathRequest::new("a", "zz")).unwrap();
    assert_eq!(r.message.as_deref(), Some("Unknown memory id: zz"));
    let r = memory_path(&snap, &mut scratch, &PathRequest::new("a", "a")).unwrap();
    assert_eq!((r.found, r.hops, r.path.len()), (true, 0, 1));
    assert_eq!(r.text(), "a \"A\"");

    // A budget of one node cannot settle a 3-hop question.
    let mut req = PathRequest::new("a", "d");
    req.budget = Budget {
        visited_max: 1,
        deadline: None,
    };
    let r = memory_path(&snap, &mut scratch, &req).unwrap();
    assert!(!r.found && r.limit_reached, "{r:?}");
}

#[test]
fn expand_provenance_filters_and_warnings() {
    let (_d, db) = graph();
    let snap = db.snapshot();
    let mut scratch = Scratch::new();
    let mut req = ExpandRequest {
        seed_doc_ids: vec!["b".into(), "nope".into()],
        hops: 1,
        direction: Direction::Both,
        one_way_routes: true,
        edge_types: None,
        filter_properties: None,
        include_superseded: false,
        include_route: false,
        limit: 100,
        budget: Budget::default(),
    };
    let r = walk::expand(&snap, &mut scratch, &req).unwrap();
    let ids: Vec<&str> = r.documents.iter().map(|d| d.doc_id.as_str()).collect();
    assert_eq!(
        ids,
        ["a", "c"],
        "superseded s is dropped, seed b is not a result"
    );
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].reason, "unknown_doc");
    let a = &r.documents[0];
    assert_eq!(
        (a.via.direction, a.via.hop, a.via.edge_type.as_str()),
        ("backward", 1, "caused_by")
    );

    req.include_superseded = true;
    req.hops = 2;
    req.include_route = true;
    // `both` is the union of a forward-only and a backward-only sweep: d (b → c ← d) needs
    // a mixed-direction route, which only `any` follows.
    let r = walk::expand(&snap, &mut scratch, &req).unwrap();
    let ids: Vec<&str> = r.documents.iter().map(|d| d.doc_id.as_str()).collect();
    assert_eq!(ids, ["a", "c", "s"]);
    req.one_way_routes = false;
    let r = walk::expand(&snap, &mut scratch, &req).unwrap();
    let ids: Vec<&str> = r.documents.iter().map(|d| d.doc_id.as_str()).collect();
    assert_eq!(ids, ["a", "c", "s", "d"]);
    let d = &r.documents[3];
    let route = d.via.route.as_ref().unwrap();
    assert_eq!(route.len(), 2);
    assert_eq!(route[1].node, "d");

    // The filter applies to results, not traversal: d is reached through c.
    req.filter_properties = Some(serde_json::from_value(json!({"title": ""})).unwrap());
    let r = walk::expand(&snap, &mut scratch, &req).unwrap();
    let ids: Vec<&str> = r.documents.iter().map(|d| d.doc_id.as_str()).collect();
    assert_eq!(ids, ["d"]);

    req.filter_properties = None;
    req.limit = 2;
    let r = walk::expand(&snap, &mut scratch, &req).unwrap();
    assert_eq!((r.documents.len(), r.truncated), (2, true));
}

#[test]
fn related_and_traverse() {
    let (_d, db) = graph();
    let snap = db.snapshot();
    let r = walk::related(
        &snap,
        &RelatedRequest {
            memory_id: "b".into(),
            edge_type: None,
            direction: Direction::Both,
            limit: 20,
        },
    )
    .unwrap();
    let got: Vec<(&str, &str)> = r
        .results
        .iter()
        .map(|e| (e.memory_id.as_str(), e.direction))
        .collect();
    assert_eq!(got.len(), 3);
    assert!(
        got.contains(&("a", "incoming"))
            && got.contains(&("c", "outgoing"))
            && got.contains(&("s", "outgoing"))
    );
    let r = walk::related(
        &snap,
        &RelatedRequest {
            memory_id: "b".into(),
            edge_type: Some("supersedes".into()),
            direction: Direction::Both,
            limit: 1,
        },
    )
    .unwrap();
    assert_eq!(r.results.len(), 1);
    assert_eq!(
        r.results[0].memory_id, "s",
        "the limit applies after the type filter"
    );
    let e = walk::related(
        &snap,
        &RelatedRequest {
            memory_id: "zz".into(),
            edge_type: None,
            direction: Direction::Both,
            limit: 5,
        },
    )
    .unwrap_err();
    assert_eq!(e.message(), "Memory not found.");
    assert_eq!(e.kind(), hopgraph_memory::ToolErrorKind::NotFound);

    let mut scratch = Scratch::new();
    let req = TraverseRequest {
        memory_id: "a".into(),
        edge_types: None,
        max_depth: 3,
        limit: 20,
        direction: Direction::Both,
        budget: Budget::default(),
    };
    let r = walk::traverse(&snap, &mut scratch, &req).unwrap();
    let depths: Vec<u32> = r.results.iter().map(|e| e.depth).collect();
    assert!(depths.windows(2).all(|w| w[0] <= w[1]), "BFS order");
    let d = r.results.iter().find(|e| e.memory_id == "d").unwrap();
    assert_eq!(d.depth, 3);
    assert_eq!(
        d.path.iter().map(|h| h.direction).collect::<Vec<_>>(),
        ["outgoing", "outgoing", "incoming"]
    );
    assert_eq!(
        d.summary, "content of d",
        "no title: the start of the content"
    );
}

/// The delete tools' messages count as the official server's do: over the names as
/// given, and over the observation copies removed against those asked for.
#[test]
fn kg_delete_messages_count_as_the_original() {
    use hopgraph_memory::aim::Entity;
    use hopgraph_memory::kg::{self, ObservationDelete};
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open(dir.path()).unwrap();
    let entity = |name: &str, obs: &[&str]| Entity {
        name: name.into(),
        entity_type: "thing".into(),
        observations: obs.iter().map(|o| o.to_string()).collect(),
    };
    kg::create_entities(&db, &[entity("a", &["x", "x", "y"]), entity("b", &[])]).unwrap();
    let del = |name: &str, obs: &[&str]| ObservationDelete {
        entity_name: name.into(),
        observations: obs.iter().map(|o| o.to_string()).collect(),
    };
    let msg =
        |items: &[ObservationDelete]| kg::delete_observations(Some(&db), items).unwrap().message;
    assert_eq!(msg(&[del("a", &["x"])]), "Deleted 2 of 1 observations.");
    let snap = db.snapshot();
    let g = kg::open_nodes(&snap, &["a".to_owned()]).unwrap();
    assert_eq!(g.entities[0].observations, ["y"]);
    assert_eq!(
        msg(&[del("ghost", &[])]),
        "Observations deleted successfully"
    );
    assert_eq!(
        msg(&[del("ghost", &["q"]), del("ghost", &["r"])]),
        "Deleted 0 of 2 observations. Entities not found: ghost, ghost"
    );
    let names: Vec<String> = ["b", "b", "zz", "zz"].map(String::from).to_vec();
    assert_eq!(
        kg::delete_entities(Some(&db), &names).unwrap().message,
        "Deleted 2 of 4 entities. Not found: zz, zz"
    );
    assert!(db.snapshot().node_id("b").is_none());
}

/// A context without a database (`None`) answers every write tool as an empty database
/// does, and nothing is created: the same messages, results and errors.
#[test]
fn kg_writes_without_a_database_answer_as_an_empty_one() {
    use hopgraph_memory::aim::Relation;
    use hopgraph_memory::kg::{self, ObservationAdd, ObservationDelete};
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = Database::open(dir.path()).unwrap();
    let strings = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let rel = |from: &str, to: &str| Relation {
        from: from.into(),
        to: to.into(),
        relation_type: "knows".into(),
    };
    let dels = [
        vec![],
        vec![ObservationDelete {
            entity_name: "ghost".into(),
            observations: vec![],
        }],
        vec![
            ObservationDelete {
                entity_name: "ghost".into(),
                observations: strings(&["q"]),
            },
            ObservationDelete {
                entity_name: "other".into(),
                observations: strings(&["r", "s"]),
            },
        ],
    ];
    for items in &dels {
        let (a, b) = (
            kg::delete_observations(None, items).unwrap(),
            kg::delete_observations(Some(&empty), items).unwrap(),
        );
        assert_eq!((a.success, &a.message), (b.success, &b.message));
    }
    for names in [vec![], strings(&["a", "a", "b"])] {
        let (a, b) = (
            kg::delete_entities(None, &names).unwrap(),
            kg::delete_entities(Some(&empty), &names).unwrap(),
        );
        assert_eq!((a.success, &a.message), (b.success, &b.message));
    }
    for rels in [vec![], vec![rel("a", "b"), rel("c", "d")]] {
        let (a, b) = (
            kg::delete_relations(None, &rels).unwrap(),
            kg::delete_relations(Some(&empty), &rels).unwrap(),
        );
        assert_eq!((a.success, &a.message), (b.success, &b.message));
        let (a, b) = (
            kg::create_relations(None, &rels).map_err(|e| e.message().to_owned()),
            kg::create_relations(Some(&empty), &rels).map_err(|e| e.message().to_owned()),
        );
        assert_eq!(a.map(|r| r.len()), b.map(|r| r.len()));
    }
    for adds in [
        vec![],
        vec![ObservationAdd {
            entity_name: "ghost".into(),
            contents: strings(&["x"]),
        }],
    ] {
        let (a, b) = (
            kg::add_observations(None, &adds).map_err(|e| e.message().to_owned()),
            kg::add_observations(Some(&empty), &adds).map_err(|e| e.message().to_owned()),
        );
        assert_eq!(a.map(|r| r.len()), b.map(|r| r.len()));
    }
    assert_eq!(empty.snapshot().node_count(), 0);
}

/// `near` + `max_hops`: only memories within the hops of a near id (both directions, any
/// edge type unless `edge_types`), closer ones boosted; unknown ids are named.
#[test]
fn search_near_restricts_by_hops_and_boosts_closer() {
    use hopgraph_memory::search::{SearchRequest, memory_search};
    let (_d, db) = graph();
    let snap = db.snapshot();
    let search = |near: &[&str], hops: Option<i64>, types: Option<&[&str]>| {
        memory_search(
            &snap,
            &SearchRequest {
                query: "content".into(),
                near: Some(near.iter().map(|s| (*s).to_owned()).collect()),
                max_hops: hops,
                edge_types: types.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
                ..SearchRequest::default()
            },
        )
    };
    let ids = |r: &hopgraph_memory::search::SearchResult| {
        r.results
            .iter()
            .map(|h| (h.id.clone(), h.hops.unwrap()))
            .collect::<Vec<_>>()
    };
    // a -caused_by-> b -caused_by-> c <-related_to- d; every content matches equally.
    let r = search(&["a"], Some(1), None).unwrap();
    assert_eq!(ids(&r), [("a".into(), 0), ("b".into(), 1)]);
    assert!(r.results[0].score > r.results[1].score);
    // Default 2 hops, edges walked backwards too: from c, b and d at 1, a at 2.
    let r = search(&["c"], None, None).unwrap();
    assert_eq!(
        ids(&r),
        [
            ("c".into(), 0),
            ("b".into(), 1),
            ("d".into(), 1),
            ("a".into(), 2)
        ]
    );
    // Only related_to edges: c and d.
    let r = search(&["c"], Some(6), Some(&["related_to"])).unwrap();
    assert_eq!(ids(&r), [("c".into(), 0), ("d".into(), 1)]);
    // e is isolated: only itself.
    assert_eq!(
        ids(&search(&["e"], Some(6), None).unwrap()),
        [("e".into(), 0)]
    );
    let err = search(&["a", "nope", "zz"], None, None)
        .unwrap_err()
        .message()
        .to_owned();
    assert!(
        err.contains("`near`") && err.contains("\"nope\" or \"zz\""),
        "{err}"
    );
    let err = search(&["a"], Some(7), None)
        .unwrap_err()
        .message()
        .to_owned();
    assert!(err.contains("`max_hops`"), "{err}");
    let err = memory_search(
        &snap,
        &SearchRequest {
            query: "content".into(),
            max_hops: Some(2),
            ..SearchRequest::default()
        },
    )
    .unwrap_err()
    .message()
    .to_owned();
    assert!(err.contains("needs `near`"), "{err}");
    // Without near, no hop counts in the answer.
    let r = memory_search(
        &snap,
        &SearchRequest {
            query: "content".into(),
            ..SearchRequest::default()
        },
    )
    .unwrap();
    assert_eq!(r.results.len(), 5);
    assert!(r.results.iter().all(|h| h.hops.is_none()));
    assert!(!serde_json::to_string(&r).unwrap().contains("hops"));
}

/// Hybrid fusion's graph step: the neighbour of the strong hit, found by neither list,
/// joins the results above a weak lone hit.
#[test]
fn hybrid_search_lifts_the_neighbour_of_a_strong_hit() {
    use hopgraph_memory::search::{SearchRequest, memory_search};
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for (k, text, e) in [
        ("q", "Where did you go hiking last weekend?", [1.0f32, 0.0]),
        ("ans", "Up to the lake by the old mill.", [0.0, 1.0]),
        ("weak", "I like weekend mornings", [0.6, 0.8]),
        ("far", "nothing related", [0.0, 1.0]),
    ] {
        b.upsert_node(
            k,
            NodeProps {
                content: text.into(),
                embedding: Some(e.to_vec()),
                ..Default::default()
            },
        );
    }
    b.link("q", "next", "ans", EdgeProps::default());
    db.commit(b).unwrap();
    let r = memory_search(
        &db.snapshot(),
        &SearchRequest {
            query: "hiking weekend".into(),
            embedding: Some(vec![1.0, 0.0]),
            ..SearchRequest::default()
        },
    )
    .unwrap();
    let ids: Vec<&str> = r.results.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids[0], "q", "{ids:?}");
    assert_eq!(ids[1], "ans", "{ids:?}");
    assert!(ids.iter().position(|&i| i == "weak") > Some(1), "{ids:?}");
}

/// A memory with no likeness to the query (cosine <= 0) is not a result: neither in an
/// embedding-only search nor as zero-score filler of a hybrid one.
#[test]
fn unrelated_memories_are_not_results() {
    use hopgraph_memory::search::{SearchRequest, memory_search};
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for (k, text, e) in [
        ("near", "hiking by the lake", [1.0f32, 0.1]),
        ("orthogonal", "tax forms", [0.0, 1.0]),
        ("opposite", "indoor chess", [-1.0, 0.0]),
    ] {
        b.upsert_node(
            k,
            NodeProps {
                content: text.into(),
                embedding: Some(e.to_vec()),
                ..Default::default()
            },
        );
    }
    db.commit(b).unwrap();
    for query in ["", "hiking"] {
        let r = memory_search(
            &db.snapshot(),
            &SearchRequest {
                query: query.into(),
                embedding: Some(vec![1.0, 0.0]),
                ..SearchRequest::default()
            },
        )
        .unwrap();
        let ids: Vec<&str> = r.results.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["near"], "query {query:?}");
        assert!(r.results.iter().all(|h| h.score > 0.0));
    }
}

/// `search_nodes` (word-index candidates, then the exact check) answers exactly what the
/// full scan it replaced answered: random entities over a tricky alphabet in two segments,
/// with deletes and updates, and in the delta; queries cut anywhere from their texts
/// (across words, punctuation and multi-byte characters), recased, and random.
#[test]
fn search_nodes_equals_the_full_scan() {
    use hopgraph_memory::aim::{self, Entity};
    use hopgraph_memory::kg;

    const ALPHABET: &[&str] = &[
        "a", "b", "c", "A", "B", "0", "1", " ", ".", ",", "'", "-", "_", "Σ", "σ", "ς", "ß", "İ",
        "é", "É", "数", "据", "ﬁ",
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        usize::try_from(seed % n as u64).unwrap()
    };
    let text = |next: &mut dyn FnMut(usize) -> usize, max: usize| -> String {
        let len = next(max + 1);
        (0..len).map(|_| ALPHABET[next(ALPHABET.len())]).collect()
    };
    let entity = |next: &mut dyn FnMut(usize) -> usize, i: usize| Entity {
        name: format!("{}{i}", text(next, 4)),
        entity_type: text(next, 6),
        observations: (0..next(3)).map(|_| text(next, 12)).collect(),
    };
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let first: Vec<Entity> = (0..300).map(|i| entity(&mut next, i)).collect();
    aim::store_entities(&db, &first).unwrap();
    db.checkpoint().unwrap();
    let gone: Vec<String> = (0..20).map(|_| first[next(300)].name.clone()).collect();
    kg::delete_entities(Some(&db), &gone).unwrap();
    let second: Vec<Entity> = (300..450).map(|i| entity(&mut next, i)).collect();
    aim::store_entities(&db, &second).unwrap();
    db.checkpoint().unwrap();
    let delta: Vec<Entity> = (450..520).map(|i| entity(&mut next, i)).collect();
    aim::store_entities(&db, &delta).unwrap();

    let snap = db.snapshot();
    let scan = |q: &str| -> Vec<String> {
        let q = q.to_lowercase();
        snap.node_ids()
            .filter_map(|id| snap.node(id).unwrap())
            .filter(|n| {
                let obs = n.props.props.get("observations").and_then(|v| v.as_array());
                n.key.to_lowercase().contains(&q)
                    || n.props.kind.to_lowercase().contains(&q)
                    || obs.is_some_and(|a| {
                        a.iter()
                            .filter_map(|o| o.as_str())
                            .any(|o| o.to_lowercase().contains(&q))
                    })
            })
            .map(|n| n.key.clone())
            .collect()
    };
    let texts: Vec<String> = first
        .iter()
        .chain(&second)
        .chain(&delta)
        .flat_map(|e| {
            let mut t = vec![e.name.clone(), e.entity_type.clone()];
            t.extend(e.observations.iter().cloned());
            t
        })
        .collect();
    let mut queries = Vec::new();
    for _ in 0..400 {
        let t: Vec<char> = texts[next(texts.len())].chars().collect();
        let start = next(t.len() + 1);
        let len = next(8) + 1;
        let cut: String = t[start..(start + len).min(t.len())].iter().collect();
        queries.push(cut.to_uppercase());
        queries.push(cut);
    }
    for _ in 0..100 {
        queries.push(text(&mut next, 5));
    }
    let mut nonempty = 0;
    for q in &queries {
        let got: Vec<String> = kg::search_nodes(&snap, q)
            .unwrap()
            .entities
            .into_iter()
            .map(|e| e.name)
            .collect();
        let want = scan(q);
        assert_eq!(got, want, "query {q:?}");
        nonempty += usize::from(!want.is_empty());
    }
    assert!(nonempty > 300, "most queries find something: {nonempty}");
}

/// The graph tools range-check their integers themselves (issue #43: adapters pass what
/// they were given): the contract's bounds by default, the local bounds on request; the
/// range is checked before the ids are looked at.
#[test]
fn graph_tools_check_their_ranges() {
    use hopgraph_memory::kg;
    use hopgraph_memory::path::memory_path_within;
    use hopgraph_memory::ranges::Ranges;
    let (_d, db) = graph();
    let snap = db.snapshot();
    let mut scratch = Scratch::new();
    let related = |limit: i64, ranges: &Ranges| {
        walk::related_within(
            &snap,
            &RelatedRequest {
                memory_id: "ghost".into(),
                edge_type: None,
                direction: Direction::Both,
                limit,
            },
            None,
            ranges,
        )
        .map(|_| ())
        .unwrap_err()
        .into_message()
    };
    assert_eq!(
        related(101, &Ranges::TOOLS),
        "Invalid argument `limit`: must be between 1 and 100, got 101"
    );
    assert_eq!(
        related(0, &Ranges::TOOLS),
        "Invalid argument `limit`: must be between 1 and 100, got 0"
    );
    assert_eq!(related(101, &Ranges::LOCAL), "Memory not found.");

    let traverse = |max_depth: i64, limit: i64| {
        walk::traverse(
            &snap,
            &mut Scratch::new(),
            &TraverseRequest {
                memory_id: "a".into(),
                edge_types: None,
                max_depth,
                limit,
                direction: Direction::Both,
                budget: Budget::default(),
            },
        )
        .map(|r| r.results.len())
        .map_err(|e| e.into_message())
    };
    assert_eq!(
        traverse(6, 20).unwrap_err(),
        "Invalid argument `max_depth`: must be between 1 and 5, got 6"
    );
    assert_eq!(
        traverse(3, -1).unwrap_err(),
        "Invalid argument `limit`: must be between 1 and 100, got -1"
    );
    assert_eq!(traverse(5, 100), Ok(4), "b, c, s and d");

    let expand = |seeds: Vec<String>, hops: i64, limit: i64| {
        walk::expand(
            &snap,
            &mut Scratch::new(),
            &ExpandRequest {
                seed_doc_ids: seeds,
                hops,
                direction: Direction::Both,
                one_way_routes: true,
                edge_types: None,
                filter_properties: None,
                include_superseded: true,
                include_route: false,
                limit,
                budget: Budget::default(),
            },
        )
        .map(|r| r.documents.len())
        .map_err(|e| e.into_message())
    };
    assert_eq!(
        expand(vec!["a".into()], 6, 100).unwrap_err(),
        "Invalid argument `hops`: must be between 1 and 5, got 6"
    );
    assert_eq!(
        expand(vec!["a".into()], 1, 1001).unwrap_err(),
        "Invalid argument `limit`: must be between 1 and 1000, got 1001"
    );
    assert_eq!(
        expand(Vec::new(), 1, 100).unwrap_err(),
        "Invalid argument `seed_doc_ids`: must hold at least one id"
    );
    assert_eq!(expand(vec!["a".into()], 1, 100), Ok(1));

    let mut req = PathRequest::new("a", "a");
    req.max_hops = 0;
    assert_eq!(
        memory_path(&snap, &mut scratch, &req)
            .unwrap_err()
            .message(),
        "Invalid argument `max_hops`: must be between 1 and 10, got 0"
    );
    let r = memory_path_within(&snap, &mut scratch, &req, None, &Ranges::LOCAL).unwrap();
    assert_eq!((r.found, r.hops), (true, 0));
    req.max_hops = 1001;
    assert!(memory_path_within(&snap, &mut scratch, &req, None, &Ranges::LOCAL).is_err());

    assert_eq!(
        kg::read_graph(&snap, None, Some(0)).unwrap_err().message(),
        "Invalid argument `limit`: must be between 1 and 10000, got 0"
    );
    assert_eq!(
        kg::read_graph(&snap, None, Some(10_001))
            .unwrap_err()
            .message(),
        "Invalid argument `limit`: must be between 1 and 10000, got 10001"
    );
    assert!(kg::read_graph(&snap, None, Some(10_000)).is_ok());
}

/// `aim_memory_store` with embeddings is one commit (issue #43): the entities and their
/// vectors are written together, and a vector the store refuses (another dimension) leaves
/// no entity behind, not even the ones whose vectors were fine.
#[test]
fn aim_store_writes_entities_and_vectors_in_one_commit() {
    use hopgraph_memory::aim::{Entity, store_entities_embedded};
    use std::collections::HashMap;
    let (_d, db) = graph();
    // The store's dimension is 3 from its first embedding.
    let mut b = WriteBatch::new();
    b.upsert_node(
        "v",
        NodeProps {
            embedding: Some(vec![1.0, 0.0, 0.0]),
            ..Default::default()
        },
    );
    db.commit(b).unwrap();
    let entity = |name: &str| Entity {
        name: name.into(),
        entity_type: "person".into(),
        observations: vec![format!("{name} was here")],
    };
    let before = db.snapshot().lsn();
    let vectors = HashMap::from([
        ("x".to_owned(), vec![0.0, 1.0, 0.0]),
        ("y".to_owned(), vec![0.0, 0.0, 1.0, 0.0]),
    ]);
    let err = store_entities_embedded(&db, &[entity("x"), entity("y")], &vectors).unwrap_err();
    assert!(err.message().contains("dimension"), "{err}");
    let snap = db.snapshot();
    assert_eq!(snap.lsn(), before, "nothing was committed");
    assert!(snap.node_id("x").is_none() && snap.node_id("y").is_none());

    let vectors = HashMap::from([
        ("x".to_owned(), vec![0.0, 1.0, 0.0]),
        ("y".to_owned(), vec![0.0, 0.0, 1.0]),
    ]);
    let created = store_entities_embedded(&db, &[entity("x"), entity("y")], &vectors).unwrap();
    assert_eq!(created.len(), 2);
    let snap = db.snapshot();
    assert_eq!(
        snap.lsn(),
        before + 1,
        "one commit for entities and vectors"
    );
    for (name, v) in &vectors {
        let node = snap.node(snap.node_id(name).unwrap()).unwrap().unwrap();
        assert_eq!(node.props.embedding.as_ref(), Some(v), "{name}");
    }
}

/// Observations are read, changed and written back as a whole; concurrent writers to one
/// entity must not overwrite each other's changes with a stale copy (the tools plan on a
/// snapshot and commit conditionally, planning again on a conflict).
#[test]
fn concurrent_observation_changes_are_not_lost() {
    use hopgraph_memory::aim::Entity;
    use hopgraph_memory::kg::{self, ObservationAdd, ObservationDelete};
    for round in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let seed = |obs: &[&str]| Entity {
            name: "alice".into(),
            entity_type: "person".into(),
            observations: obs.iter().map(|&o| o.to_owned()).collect(),
        };
        kg::create_entities(&db, &[seed(&["old 0", "old 1", "old 2", "old 3"])]).unwrap();
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for w in 0..4 {
                let (db, barrier) = (&db, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..5 {
                        kg::add_observations(
                            Some(db),
                            &[ObservationAdd {
                                entity_name: "alice".into(),
                                contents: vec![format!("w{w} note {i}")],
                            }],
                        )
                        .unwrap();
                    }
                    kg::delete_observations(
                        Some(db),
                        &[ObservationDelete {
                            entity_name: "alice".into(),
                            observations: vec![format!("old {w}")],
                        }],
                    )
                    .unwrap();
                });
            }
        });
        let g = kg::open_nodes(&db.snapshot(), &["alice".to_owned()]).unwrap();
        let mut obs = g.entities[0].observations.clone();
        obs.sort();
        let mut want: Vec<String> = (0..4)
            .flat_map(|w| (0..5).map(move |i| format!("w{w} note {i}")))
            .collect();
        want.sort();
        assert_eq!(
            obs, want,
            "round {round}: every addition kept, every old one deleted"
        );
    }
}
