//! Property tests of `expand`, `traverse` and `neighbors` against plain BFS oracles.

// Test code: small graphs (ids and lengths far below u32::MAX), oracle loops over indices.
#![allow(
    clippy::cast_possible_truncation,
    clippy::needless_range_loop,
    clippy::too_many_arguments
)]

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::testgraph::{VecGraph, arb_direction, arb_graph, arb_types, reordered};
use super::*;
use crate::graph::{Direction, EdgeId, NodeId, TypeFilter, TypeId};

/// Oracle provenance key: (hop, seed, type rank, backward, edge id, type).
type Prov = (u32, usize, u32, bool, EdgeId, TypeId);

fn rank_of(table: Option<&[u32]>, t: TypeId) -> u32 {
    match table {
        Some(tab) => tab.get(usize::from(t.0)).copied().unwrap_or(u32::MAX),
        None => u32::from(t.0),
    }
}

/// Best provenance per node of one sweep, from per-seed BFS distances.
fn oracle_sweep(
    g: &VecGraph,
    seeds: &[NodeId],
    dir: Direction,
    types: &TypeFilter,
    hops: u32,
    table: Option<&[u32]>,
) -> BTreeMap<NodeId, Prov> {
    let n = g.out.len();
    let dists: Vec<Vec<Option<u32>>> = seeds.iter().map(|&s| g.distances(s, dir, types)).collect();
    let mut best = BTreeMap::new();
    for v in 0..n {
        let node = NodeId(v as u32);
        if seeds.contains(&node) {
            continue;
        }
        let Some((hop, seed)) = dists
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d[v].map(|h| (h, i)))
            .min()
        else {
            continue;
        };
        if hop > hops {
            continue;
        }
        // Candidate last edges: steps u -> v with u at hop - 1 from `seed`.
        let mut cands = Vec::new();
        for u in 0..n {
            if dists[seed][u] != Some(hop - 1) {
                continue;
            }
            for (w, e, fwd) in g.steps(NodeId(u as u32), dir, types) {
                if w == node {
                    cands.push((
                        hop,
                        seed,
                        rank_of(table, e.edge_type),
                        !fwd,
                        e.edge,
                        e.edge_type,
                    ));
                }
            }
        }
        if let Some(c) = cands.into_iter().min() {
            best.insert(node, c);
        }
    }
    best
}

/// A direction and `one_way_routes` (which matters only with `Both`).
fn arb_expand_direction() -> impl Strategy<Value = (Direction, bool)> {
    prop_oneof![
        Just((Direction::Out, false)),
        Just((Direction::In, true)),
        Just((Direction::Both, true)),
        Just((Direction::Both, false))
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn expand_matches_oracle(
        (n, edges) in arb_graph(12, 30), dir in arb_expand_direction(), types in arb_types(),
        seeds in proptest::collection::vec(0u32..14, 0..4), hops in 0u32..5,
        ranked in any::<bool>(), limit in 0usize..8, modulus in 2u32..4,
    ) {
        let g = VecGraph::new(n, &edges);
        let seeds: Vec<NodeId> = seeds.into_iter().map(NodeId).collect();
        let table = [3u32, 1, 2, 0];
        let table = ranked.then_some(&table[..]);
        let (dir, one_way) = dir;
        let mut q = ExpandQuery::new(&seeds, hops, dir);
        q.one_way_routes = one_way;
        q.types = &types;
        q.type_rank = table;
        q.include_route = true;
        let mut scratch = Scratch::new();
        let full = expand(&g, &mut scratch, &q);
        prop_assert_eq!(full.completion, Completion::Complete);
        prop_assert!(!full.truncated);

        // Oracle: valid seeds, deduplicated keeping the first rank.
        let mut valid: Vec<NodeId> = Vec::new();
        let mut ranks = Vec::new();
        for (i, &s) in seeds.iter().enumerate() {
            if s.0 < n && !valid.contains(&s) { valid.push(s); ranks.push(i); }
        }
        let sweep = |d| oracle_sweep(&g, &valid, d, &types, hops, table);
        let want: BTreeMap<NodeId, Prov> = match (dir, one_way) {
            (Direction::Out, _) => sweep(Direction::Out),
            (Direction::In, _) => sweep(Direction::In),
            (Direction::Both, false) => sweep(Direction::Both),
            (Direction::Both, true) => {
                let mut a = sweep(Direction::Out);
                for (v, p) in sweep(Direction::In) {
                    let e = a.entry(v).or_insert(p);
                    if p < *e { *e = p; }
                }
                a
            }
        };
        let mut expect: Vec<(u32, usize, NodeId)> =
            want.iter().map(|(v, p)| (p.0, ranks[p.1], *v)).collect();
        expect.sort();
        let got: Vec<(u32, usize, NodeId)> = full.results.iter().map(|r| (r.hop, r.seed, r.node)).collect();
        prop_assert_eq!(got, expect);
        for r in &full.results {
            let p = want[&r.node];
            prop_assert_eq!((r.edge, r.edge_type, r.forward), (p.4, p.5, !p.3));
            let route = r.route.as_deref().unwrap_or(&[]);
            prop_assert_eq!(route.len() as u32, r.hop);
            let mut at = seeds[r.seed];
            for &(next, edge, ty, fwd) in route {
                prop_assert!(g.valid_hop(at, next, edge, ty, fwd, dir, &types));
                if one_way { prop_assert_eq!(fwd, r.forward); }
                at = next;
            }
            prop_assert_eq!(at, r.node);
        }

        // Filter and limit: a prefix of the filtered full answer.
        let filter = move |v: NodeId| !v.0.is_multiple_of(modulus);
        q.filter = &filter;
        q.limit = limit;
        let cut = expand(&g, &mut scratch, &q);
        let filtered: Vec<Reached> = full.results.iter().filter(|r| filter(r.node)).cloned().collect();
        prop_assert_eq!(&cut.results[..], &filtered[..filtered.len().min(limit)]);
        prop_assert_eq!(cut.truncated, filtered.len() > limit);

        // Determinism under a different edge insertion order.
        let g2 = VecGraph::new(n, &reordered(&edges));
        prop_assert_eq!(expand(&g2, &mut Scratch::new(), &q), cut);
    }

    /// The expansions' hash-table marks (moving into the arrays once the sides hold more
    /// than `max_marks`) answer exactly as the arrays do: `expand` (every direction mode,
    /// ranks, filters, limits, budgets, routes) and `traverse`, over queries sharing one
    /// scratch each, interleaved with the path search.
    #[test]
    fn sparse_links_answer_as_the_arrays(
        (n, edges) in arb_graph(30, 90),
        queries in proptest::collection::vec(
            (proptest::collection::vec(0u32..32, 0..4), arb_expand_direction(), arb_types(),
             0u32..5, any::<bool>(), 0usize..12, 0usize..16, 1u64..30),
            1..8,
        ),
    ) {
        let g = VecGraph::new(n, &edges);
        let mut sparse = Scratch::new();
        let mut dense = Scratch::new();
        dense.set_sparse_policy(scratch::SparsePolicy::DENSE);
        let table = [3u32, 1, 2, 0];
        let filter = |v: NodeId| v.0 % 3 != 1;
        for (seeds, (dir, one_way), types, hops, ranked, limit, max_marks, visited_max) in queries {
            sparse.set_sparse_policy(scratch::SparsePolicy { tables: true, max_marks });
            let seeds: Vec<NodeId> = seeds.into_iter().map(NodeId).collect();
            let mut q = ExpandQuery::new(&seeds, hops, dir);
            q.one_way_routes = one_way;
            q.types = &types;
            q.type_rank = ranked.then_some(&table[..]);
            q.include_route = true;
            prop_assert_eq!(expand(&g, &mut sparse, &q), expand(&g, &mut dense, &q));
            q.filter = &filter;
            q.limit = limit;
            q.budget.visited_max = visited_max;
            prop_assert_eq!(expand(&g, &mut sparse, &q), expand(&g, &mut dense, &q));
            let start = seeds.first().copied().unwrap_or(NodeId(0));
            let budget = Budget::default();
            prop_assert_eq!(
                traverse(&g, &mut sparse, start, dir, &types, hops, limit.max(1) * 3, &budget),
                traverse(&g, &mut dense, start, dir, &types, hops, limit.max(1) * 3, &budget)
            );
            let pq = path::PathQuery { direction: dir, types: types.clone(), max_hops: hops, budget };
            let end = seeds.last().copied().unwrap_or(NodeId(1));
            prop_assert_eq!(
                shortest_path(&g, &mut sparse, start, end, &pq),
                shortest_path(&g, &mut dense, start, end, &pq)
            );
        }
    }

    #[test]
    fn traverse_matches_bfs(
        (n, edges) in arb_graph(12, 30), dir in arb_direction(), types in arb_types(),
        start in 0u32..14, depth_max in 0u32..5, limit in 0usize..10,
    ) {
        let g = VecGraph::new(n, &edges);
        let mut scratch = Scratch::new();
        let full = traverse(&g, &mut scratch, NodeId(start), dir, &types, depth_max, usize::MAX, &Budget::default());
        let mut expect: Vec<(u32, NodeId)> = Vec::new();
        if start < n {
            for (v, d) in g.distances(NodeId(start), dir, &types).into_iter().enumerate() {
                if let Some(d) = d.filter(|&d| d >= 1 && d <= depth_max) { expect.push((d, NodeId(v as u32))); }
            }
        }
        expect.sort();
        let got: Vec<(u32, NodeId)> = full.visits.iter().map(|v| (v.depth, v.node)).collect();
        prop_assert_eq!(got, expect);
        for v in &full.visits {
            prop_assert_eq!(v.path.len() as u32, v.depth);
        }
        let cut = traverse(&g, &mut scratch, NodeId(start), dir, &types, depth_max, limit, &Budget::default());
        prop_assert_eq!(&cut.visits[..], &full.visits[..full.visits.len().min(limit)]);
        prop_assert_eq!(cut.truncated, full.visits.len() > limit);
        let g2 = VecGraph::new(n, &reordered(&edges));
        prop_assert_eq!(traverse(&g2, &mut Scratch::new(), NodeId(start), dir, &types, depth_max, limit, &Budget::default()), cut);
    }

    #[test]
    fn neighbors_are_sorted_filtered_and_limited(
        (n, edges) in arb_graph(8, 30), dir in arb_direction(), types in arb_types(),
        node in 0u32..9, limit in 0usize..10,
    ) {
        let g = VecGraph::new(n, &edges);
        let (got, truncated) = neighbors(&g, NodeId(node), dir, &types, limit);
        let mut all: Vec<NeighborStep> = if node < n {
            g.steps(NodeId(node), dir, &types).into_iter().map(|(v, e, f)| (v, e.edge, e.edge_type, f)).collect()
        } else { Vec::new() };
        all.sort_by_key(|&(v, e, t, f)| (t, v, e, !f));
        prop_assert_eq!(truncated, all.len() > limit);
        all.truncate(limit);
        prop_assert_eq!(got, all);
    }
}

#[test]
fn traverse_paths_follow_edges() {
    let edges = [(0, 1, 0, 10), (1, 2, 1, 11), (3, 2, 0, 12), (0, 3, 2, 13)];
    let g = VecGraph::new(4, &edges);
    let out = traverse(
        &g,
        &mut Scratch::new(),
        NodeId(0),
        Direction::Both,
        &TypeFilter::All,
        3,
        10,
        &Budget::default(),
    );
    let two = out
        .visits
        .iter()
        .find(|v| v.node == NodeId(2))
        .map(|v| v.path.clone());
    // Node 2 at depth 2 via parent 1 (least parent id) along edges 10 then 11.
    assert_eq!(
        two,
        Some(vec![
            (EdgeId(10), TypeId(0), true),
            (EdgeId(11), TypeId(1), true)
        ])
    );
}

#[test]
fn expand_budget_and_degenerate_inputs() {
    let edges: Vec<_> = (0..999u32)
        .map(|i| (i, i + 1, 0u16, u64::from(i)))
        .collect();
    let g = VecGraph::new(1000, &edges);
    let seeds = [NodeId(0), NodeId(5000)];
    let mut q = ExpandQuery::new(&seeds, 900, Direction::Out);
    q.budget.visited_max = 10;
    let out = expand(&g, &mut Scratch::new(), &q);
    assert_eq!(out.completion, Completion::LimitReached { visited: 10 });
    assert_eq!(out.results.len(), 9); // the seed plus nodes 1..=9 were visited
    q.hops = 0;
    assert_eq!(
        expand(&g, &mut Scratch::new(), &q),
        ExpandOutcome::default()
    );
}
