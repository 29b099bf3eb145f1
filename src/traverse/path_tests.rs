//! Property tests of the path kernels and `bfs_levels` against a plain BFS oracle.

// Test code: small graphs (ids and lengths far below u32::MAX), oracle loops over indices.
#![allow(
    clippy::cast_possible_truncation,
    clippy::needless_range_loop,
    clippy::too_many_arguments
)]

use proptest::prelude::*;

use super::scratch::SparsePolicy;
use super::testgraph::{EdgeSpec, VecGraph, arb_direction, arb_graph, arb_types, reordered};
use super::*;
use crate::graph::{Direction, EdgeId, NodeId, TypeFilter, TypeId};

fn query(direction: Direction, types: &TypeFilter, max_hops: u32) -> PathQuery {
    PathQuery {
        direction,
        types: types.clone(),
        max_hops,
        budget: Budget::default(),
    }
}

fn assert_valid(g: &VecGraph, p: &Path, from: NodeId, to: NodeId, q: &PathQuery) {
    assert_eq!(p.nodes.len(), p.hops.len() + 1, "{p:?}");
    assert_eq!(p.nodes.first(), Some(&from));
    assert_eq!(p.nodes.last(), Some(&to));
    for (i, h) in p.hops.iter().enumerate() {
        let ok = g.valid_hop(
            p.nodes[i],
            p.nodes[i + 1],
            h.edge,
            h.edge_type,
            h.forward,
            q.direction,
            &q.types,
        );
        assert!(ok, "hop {i} of {p:?} is not an allowed edge");
    }
}

/// Number of shortest paths from `s` to `t` (saturating), by DP over the oracle's BFS DAG.
fn count_shortest(
    g: &VecGraph,
    s: NodeId,
    t: NodeId,
    direction: Direction,
    types: &TypeFilter,
) -> u128 {
    let dist = g.distances(s, direction, types);
    let mut order: Vec<usize> = (0..dist.len()).filter(|&v| dist[v].is_some()).collect();
    order.sort_by_key(|&v| dist[v]);
    let mut count = vec![0u128; dist.len()];
    count[s.index()] = 1;
    for u in order {
        for (v, _, _) in g.steps(NodeId(u as u32), direction, types) {
            if dist[v.index()] == dist[u].map(|d| d + 1) {
                count[v.index()] = count[v.index()].saturating_add(count[u]);
            }
        }
    }
    count[t.index()]
}

/// Lengths of all simple paths from `s` to `t` of at most `max_hops`, by explicit-stack DFS.
fn simple_path_lengths(
    g: &VecGraph,
    s: NodeId,
    t: NodeId,
    direction: Direction,
    types: &TypeFilter,
    max_hops: usize,
) -> Vec<usize> {
    let mut lengths = Vec::new();
    if s == t {
        return vec![0];
    }
    let mut stack = vec![(vec![s], 0usize)];
    while let Some((path, _)) = stack.pop() {
        let u = *path.last().unwrap_or(&s);
        if u == t {
            lengths.push(path.len() - 1);
            continue;
        }
        if path.len() > max_hops {
            continue;
        }
        for (v, _, _) in g.steps(u, direction, types) {
            if !path.contains(&v) {
                let mut p = path.clone();
                p.push(v);
                stack.push((p, 0));
            }
        }
    }
    lengths.sort_unstable();
    lengths
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn shortest_path_matches_oracle(
        (n, edges) in arb_graph(12, 30), dir in arb_direction(), types in arb_types(),
        max_hops in 0u32..7, a in 0u32..14, b in 0u32..14,
    ) {
        let g = VecGraph::new(n, &edges);
        let q = query(dir, &types, max_hops);
        let mut scratch = Scratch::new();
        let (from, to) = (NodeId(a), NodeId(b));
        let got = shortest_path(&g, &mut scratch, from, to, &q);
        let want = if a < n && b < n { g.distances(from, dir, &types)[b as usize] } else { None };
        let want = want.filter(|&d| d <= max_hops);
        match (&got, want) {
            (PathOutcome::Found(p), Some(d)) => {
                prop_assert_eq!(p.len() as u32, d);
                assert_valid(&g, p, from, to, &q);
            }
            (PathOutcome::NotFound, None) => {}
            _ => prop_assert!(false, "got {:?}, oracle {:?}", got, want),
        }
        // Determinism: same query again, and the same edge set inserted in another order.
        prop_assert_eq!(&shortest_path(&g, &mut scratch, from, to, &q), &got);
        let g2 = VecGraph::new(n, &reordered(&edges));
        prop_assert_eq!(&shortest_path(&g2, &mut Scratch::new(), from, to, &q), &got);

        // All shortest paths: same length, distinct, valid, count as the oracle (capped).
        let cap = 5;
        let all = all_shortest_paths(&g, &mut scratch, from, to, &q, cap);
        let all2 = all_shortest_paths(&g2, &mut Scratch::new(), from, to, &q, cap);
        prop_assert_eq!(&all, &all2);
        let count = match want { Some(_) => count_shortest(&g, from, to, dir, &types), None => 0 };
        prop_assert_eq!(all.paths.len() as u128, count.min(cap as u128));
        prop_assert_eq!(all.truncated, count > cap as u128);
        for (i, p) in all.paths.iter().enumerate() {
            prop_assert_eq!(Some(p.len() as u32), want);
            assert_valid(&g, p, from, to, &q);
            if i > 0 { prop_assert!(all.paths[i - 1] < *p || all.paths[i - 1] != *p); }
        }
        let mut dedup = all.paths.clone();
        dedup.sort();
        dedup.dedup();
        prop_assert_eq!(dedup.len(), all.paths.len());
    }

    #[test]
    fn yen_matches_brute_force(
        (n, edges) in arb_graph(7, 12), dir in arb_direction(), types in arb_types(),
        max_hops in 0u32..5, a in 0u32..7, b in 0u32..7, k in 1usize..6,
    ) {
        prop_assume!(a < n && b < n);
        let g = VecGraph::new(n, &edges);
        let q = query(dir, &types, max_hops);
        let (from, to) = (NodeId(a), NodeId(b));
        let got = k_shortest_simple_paths(&g, &mut Scratch::new(), from, to, &q, k);
        let want = simple_path_lengths(&g, from, to, dir, &types, max_hops as usize);
        let lengths: Vec<usize> = got.paths.iter().map(Path::len).collect();
        let expect: Vec<usize> = want.iter().copied().take(k).collect();
        prop_assert_eq!(lengths, expect);
        for p in &got.paths {
            assert_valid(&g, p, from, to, &q);
            let mut nodes = p.nodes.clone();
            nodes.sort();
            nodes.dedup();
            prop_assert_eq!(nodes.len(), p.nodes.len(), "not simple: {:?}", p);
        }
        let mut dedup = got.paths.clone();
        dedup.sort();
        dedup.dedup();
        prop_assert_eq!(dedup.len(), got.paths.len());
        let g2 = VecGraph::new(n, &reordered(&edges));
        prop_assert_eq!(k_shortest_simple_paths(&g2, &mut Scratch::new(), from, to, &q, k), got);
    }

    #[test]
    fn bfs_levels_matches_oracle(
        (n, edges) in arb_graph(40, 120), dir in arb_direction(), types in arb_types(), s in 0u32..40,
    ) {
        let g = VecGraph::new(n, &edges);
        let stats = bfs_levels(&g, &mut Scratch::new(), NodeId(s), dir, &types, &Budget::default());
        if s >= n {
            prop_assert_eq!(stats.reached, 0);
        } else {
            let dist = g.distances(NodeId(s), dir, &types);
            prop_assert_eq!(stats.reached, dist.iter().flatten().count() as u64);
            prop_assert_eq!(stats.max_depth, dist.iter().flatten().copied().max().unwrap_or(0));
            prop_assert_eq!(stats.completion, Completion::Complete);
        }
    }

    /// One scratch reused across many queries on graphs of different sizes answers exactly
    /// as a fresh scratch does.
    #[test]
    fn scratch_reuse_matches_fresh(
        graphs in proptest::collection::vec(arb_graph(20, 40), 1..5),
        queries in proptest::collection::vec((0u32..20, 0u32..20, arb_direction(), 0u32..6), 1..10),
    ) {
        let mut shared = Scratch::new();
        for (i, (n, edges)) in graphs.iter().enumerate() {
            let g = VecGraph::new(*n, edges);
            // A prefaulted scratch (grown and mapped ahead, sometimes beyond the graph,
            // sometimes below it) answers exactly as a fresh one.
            if i % 2 == 1 {
                let bound = if i % 4 == 1 { *n + 7 } else { *n / 2 };
                shared.prefault(bound);
                prop_assert!(shared.capacity_nodes() >= bound as usize);
            }
            for &(a, b, dir, hops) in &queries {
                let q = query(dir, &TypeFilter::All, hops);
                let reused = shortest_path(&g, &mut shared, NodeId(a), NodeId(b), &q);
                let fresh = shortest_path(&g, &mut Scratch::new(), NodeId(a), NodeId(b), &q);
                prop_assert_eq!(reused, fresh);
                // Interleave the other kernels on the same scratch (different stamp
                // reservations, both sides, bfs giving back its reservation).
                let all = TypeFilter::All;
                let budget = Budget::default();
                let reused = all_shortest_paths(&g, &mut shared, NodeId(a), NodeId(b), &q, 3);
                prop_assert_eq!(reused, all_shortest_paths(&g, &mut Scratch::new(), NodeId(a), NodeId(b), &q, 3));
                let reused = bfs_levels(&g, &mut shared, NodeId(a), dir, &all, &budget);
                prop_assert_eq!(reused, bfs_levels(&g, &mut Scratch::new(), NodeId(a), dir, &all, &budget));
                let seeds = [NodeId(a), NodeId(b)];
                let mut eq = ExpandQuery::new(&seeds, hops, Direction::Both);
                eq.one_way_routes = true;
                prop_assert_eq!(expand(&g, &mut shared, &eq), expand(&g, &mut Scratch::new(), &eq));
                let reused = traverse(&g, &mut shared, NodeId(b), dir, &all, hops, 50, &budget);
                prop_assert_eq!(reused, traverse(&g, &mut Scratch::new(), NodeId(b), dir, &all, hops, 50, &budget));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The search's hash-table marks (forced on small graphs, moving into the per-node
    /// arrays once the sides hold more than `max_marks`) give exactly the answers of the
    /// arrays: paths (nodes and hops) under every probe policy, Yen's paths, and where a
    /// budget runs out; over queries sharing one scratch, interleaved with a kernel that
    /// keeps to the arrays.
    #[test]
    fn sparse_marks_answer_as_the_arrays(
        (n, edges) in arb_hub_graph(),
        queries in proptest::collection::vec(
            (0u32..42, 0u32..42, arb_direction(), arb_types(), 0u32..9, 0usize..24, 1u64..40),
            1..10,
        ),
    ) {
        let g = VecGraph::new(n, &edges);
        let mut sparse = Scratch::new();
        let mut dense = Scratch::new();
        dense.set_sparse_policy(SparsePolicy::DENSE);
        for (a, b, dir, types, hops, max_marks, visited_max) in queries {
            sparse.set_sparse_policy(SparsePolicy { tables: true, max_marks });
            let (from, to) = (NodeId(a), NodeId(b));
            for probe in [path::Probe::Off, path::Probe::Always, path::Probe::Level, path::Probe::Auto] {
                prop_assert_eq!(
                    probed(&g, &mut sparse, from, to, dir, &types, hops, probe),
                    probed(&g, &mut dense, from, to, dir, &types, hops, probe),
                    "{:?} {:?} -> {:?}", probe, from, to
                );
            }
            let mut q = query(dir, &types, hops);
            q.budget.visited_max = visited_max;
            prop_assert_eq!(
                shortest_path(&g, &mut sparse, from, to, &q),
                shortest_path(&g, &mut dense, from, to, &q)
            );
            let q = query(dir, &types, hops);
            prop_assert_eq!(
                k_shortest_simple_paths(&g, &mut sparse, from, to, &q, 3),
                k_shortest_simple_paths(&g, &mut dense, from, to, &q, 3)
            );
            prop_assert_eq!(
                all_shortest_paths(&g, &mut sparse, from, to, &q, 3),
                all_shortest_paths(&g, &mut dense, from, to, &q, 3)
            );
        }
    }
}

/// A long path graph: 0 -> 1 -> ... -> n-1.
fn chain(n: u32) -> VecGraph {
    let edges: Vec<EdgeSpec> = (0..n - 1).map(|i| (i, i + 1, 0, u64::from(i))).collect();
    VecGraph::new(n, &edges)
}

#[test]
fn tiny_budget_yields_limit_reached() {
    let g = chain(10_000);
    let mut q = query(Direction::Out, &TypeFilter::All, 100_000);
    q.budget.visited_max = 50;
    let got = shortest_path(&g, &mut Scratch::new(), NodeId(0), NodeId(9_999), &q);
    assert_eq!(got, PathOutcome::LimitReached { visited: 50 });
    let stats = bfs_levels(
        &g,
        &mut Scratch::new(),
        NodeId(0),
        Direction::Out,
        &TypeFilter::All,
        &q.budget,
    );
    assert_eq!(stats.completion, Completion::LimitReached { visited: 50 });
    assert_eq!(stats.reached, 50);
    q.budget = Budget {
        visited_max: u64::MAX,
        deadline: Some(std::time::Instant::now()),
    };
    let got = shortest_path(&g, &mut Scratch::new(), NodeId(0), NodeId(9_999), &q);
    assert!(matches!(got, PathOutcome::LimitReached { .. }), "{got:?}");
}

#[test]
fn exact_max_hops_is_found_and_one_less_is_not() {
    let g = chain(8);
    let mut scratch = Scratch::new();
    let q = query(Direction::Out, &TypeFilter::All, 7);
    assert!(
        matches!(shortest_path(&g, &mut scratch, NodeId(0), NodeId(7), &q), PathOutcome::Found(p) if p.len() == 7)
    );
    let q = query(Direction::Out, &TypeFilter::All, 6);
    assert_eq!(
        shortest_path(&g, &mut scratch, NodeId(0), NodeId(7), &q),
        PathOutcome::NotFound
    );
    let q = query(Direction::In, &TypeFilter::All, 7);
    assert!(
        matches!(shortest_path(&g, &mut scratch, NodeId(7), NodeId(0), &q), PathOutcome::Found(p) if p.hops.iter().all(|h| !h.forward))
    );
    let q = query(Direction::Out, &TypeFilter::All, 0);
    assert_eq!(
        shortest_path(&g, &mut scratch, NodeId(3), NodeId(3), &q),
        PathOutcome::Found(Path {
            nodes: vec![NodeId(3)],
            hops: vec![]
        })
    );
    assert_eq!(
        shortest_path(&g, &mut scratch, NodeId(3), NodeId(4), &q),
        PathOutcome::NotFound
    );
    assert_eq!(
        shortest_path(&g, &mut scratch, NodeId(3), NodeId(99), &q),
        PathOutcome::NotFound
    );
}

#[test]
fn generation_wrap_around_clears_marks() {
    let g = chain(6);
    let mut scratch = Scratch::new();
    scratch.set_sparse_policy(SparsePolicy::DENSE);
    let q = query(Direction::Both, &TypeFilter::All, 10);
    let want = shortest_path(&g, &mut scratch, NodeId(0), NodeId(5), &q);
    let stats = bfs_levels(
        &g,
        &mut scratch,
        NodeId(0),
        Direction::Out,
        &TypeFilter::All,
        &Budget::default(),
    );
    scratch.force_next_base(u32::MAX - 8);
    assert_eq!(
        bfs_levels(
            &g,
            &mut scratch,
            NodeId(0),
            Direction::Out,
            &TypeFilter::All,
            &Budget::default()
        ),
        stats
    );
    scratch.force_next_base(u32::MAX - 3);
    for _ in 0..4 {
        assert_eq!(
            shortest_path(&g, &mut scratch, NodeId(0), NodeId(5), &q),
            want
        );
        assert_eq!(
            shortest_path(&g, &mut scratch, NodeId(5), NodeId(0), &q).clone(),
            shortest_path(&g, &mut Scratch::new(), NodeId(5), NodeId(0), &q)
        );
    }
    // The same with the search's hash-table marks: a wrap clears the tables too, so no
    // mark of a query before the wrap is taken for one after it.
    let mut sparse = Scratch::new();
    sparse.set_sparse_policy(SparsePolicy {
        tables: true,
        max_marks: usize::MAX,
    });
    assert_eq!(
        shortest_path(&g, &mut sparse, NodeId(0), NodeId(5), &q),
        want
    );
    for start in [u32::MAX - 3, u32::MAX - 12] {
        sparse.force_next_base(start);
        for _ in 0..4 {
            assert_eq!(
                shortest_path(&g, &mut sparse, NodeId(0), NodeId(5), &q),
                want
            );
            assert_eq!(
                shortest_path(&g, &mut sparse, NodeId(5), NodeId(2), &q),
                shortest_path(&g, &mut Scratch::new(), NodeId(5), NodeId(2), &q)
            );
            let seeds = [NodeId(1), NodeId(4)];
            let eq = ExpandQuery::new(&seeds, 3, Direction::Both);
            assert_eq!(
                expand(&g, &mut sparse, &eq),
                expand(&g, &mut Scratch::new(), &eq)
            );
            let all = TypeFilter::All;
            let budget = Budget::default();
            assert_eq!(
                traverse(
                    &g,
                    &mut sparse,
                    NodeId(2),
                    Direction::Both,
                    &all,
                    3,
                    50,
                    &budget
                ),
                traverse(
                    &g,
                    &mut Scratch::new(),
                    NodeId(2),
                    Direction::Both,
                    &all,
                    3,
                    50,
                    &budget
                )
            );
        }
    }
}

#[test]
fn pool_hands_out_separate_scratches_across_threads() {
    let g = chain(500);
    let pool = ScratchPool::new();
    let q = query(Direction::Both, &TypeFilter::All, 1000);
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (g, pool, q) = (&g, &pool, &q);
            s.spawn(move || {
                for i in 0..50u32 {
                    let mut scratch = pool.get();
                    let (a, b) = ((i * 7 + t) % 500, (i * 13 + 3 * t) % 500);
                    let got = shortest_path(g, &mut scratch, NodeId(a), NodeId(b), q);
                    assert!(
                        matches!(got, PathOutcome::Found(p) if p.len() == a.abs_diff(b) as usize)
                    );
                }
            });
        }
    });
    assert!(pool.idle() >= 1 && pool.idle() <= 4);
}

/// A graph that implements only the required methods: no bitmaps, no early exit.
struct NoHints<'a>(&'a VecGraph);

impl Adjacency for NoHints<'_> {
    fn node_bound(&self) -> u32 {
        self.0.node_bound()
    }
    fn for_each_edge<F: FnMut(crate::graph::EdgeRef)>(
        &self,
        node: NodeId,
        dir: crate::graph::EdgeDir,
        types: &TypeFilter,
        f: F,
    ) {
        self.0.for_each_edge(node, dir, types, f)
    }
    fn degree_estimate(&self, node: NodeId, dir: crate::graph::EdgeDir) -> u32 {
        self.0.degree_estimate(node, dir)
    }
}

/// A seeded random graph big enough for the direction-optimizing switch to fire.
fn random_graph(n: u32, m: usize, seed: u64) -> VecGraph {
    let mut x = seed;
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as u32
    };
    let edges: Vec<EdgeSpec> = (0..m)
        .map(|i| (next() % n, next() % n, (next() % 4) as u16, i as u64))
        .collect();
    VecGraph::new(n, &edges)
}

#[test]
fn bfs_bottom_up_steps_agree_with_oracle() {
    let g = random_graph(3000, 24_000, 7);
    let mut scratch = Scratch::new();
    let mut bottom_up_total = 0;
    for dir in [Direction::Out, Direction::In, Direction::Both] {
        for types in [
            TypeFilter::All,
            TypeFilter::only([TypeId(0), TypeId(2)]),
            TypeFilter::only([TypeId(3)]),
        ] {
            for s in [0u32, 17, 2999] {
                let dist = g.distances(NodeId(s), dir, &types);
                let stats =
                    bfs_levels(&g, &mut scratch, NodeId(s), dir, &types, &Budget::default());
                assert_eq!(
                    stats.reached,
                    dist.iter().flatten().count() as u64,
                    "{dir:?} {types:?} {s}"
                );
                assert_eq!(
                    stats.max_depth,
                    dist.iter().flatten().copied().max().unwrap_or(0)
                );
                let plain = bfs_levels(
                    &NoHints(&g),
                    &mut scratch,
                    NodeId(s),
                    dir,
                    &types,
                    &Budget::default(),
                );
                assert_eq!(
                    (plain.reached, plain.max_depth),
                    (stats.reached, stats.max_depth)
                );
                bottom_up_total += stats.bottom_up_levels;
            }
        }
    }
    assert!(bottom_up_total > 0, "the bottom-up step never ran");
}

#[test]
fn paths_on_a_larger_graph_match_oracle() {
    let g = random_graph(2000, 5000, 11);
    let mut scratch = Scratch::new();
    for dir in [Direction::Out, Direction::In, Direction::Both] {
        for i in 0..40u32 {
            let (a, b) = ((i * 97) % 2000, (i * 389 + 5) % 2000);
            let q = query(dir, &TypeFilter::only([TypeId(1), TypeId(3)]), 12);
            let want = g.distances(NodeId(a), dir, &q.types)[b as usize].filter(|&d| d <= 12);
            match shortest_path(&g, &mut scratch, NodeId(a), NodeId(b), &q) {
                PathOutcome::Found(p) => {
                    assert_eq!(Some(p.len() as u32), want);
                    assert_valid(&g, &p, NodeId(a), NodeId(b), &q);
                }
                other => assert_eq!((other, want), (PathOutcome::NotFound, None)),
            }
        }
    }
}

/// Shortest path with an explicit probe policy and no budget limit.
fn probed(
    g: &impl Adjacency,
    scratch: &mut Scratch,
    from: NodeId,
    to: NodeId,
    dir: Direction,
    types: &TypeFilter,
    max_hops: u32,
    probe: path::Probe,
) -> Option<Path> {
    let mut meter = budget::Meter::new(&Budget::unlimited());
    path::shortest_probed(
        g, scratch, from, to, dir, types, max_hops, &mut meter, probe,
    )
    .unwrap_or_else(|_| panic!("unlimited budget ran out"))
}

/// A random graph with a few hubs: each hub is joined (in a random direction, with a
/// random type) to a random subset of the nodes, plus sparse random edges.
fn arb_hub_graph() -> impl Strategy<Value = (u32, Vec<EdgeSpec>)> {
    (2u32..40).prop_flat_map(|n| {
        let hub = (0..n, any::<u64>(), any::<u64>(), any::<u64>());
        let edge = (0..n, 0..n, 0u16..4);
        (
            Just(n),
            proptest::collection::vec(hub, 0..4),
            proptest::collection::vec(edge, 0..50),
        )
            .prop_map(|(n, hubs, es)| {
                let mut edges: Vec<(u32, u32, u16)> = es;
                for (h, members, outward, ty) in hubs {
                    for v in 0..n {
                        if members >> (v % 64) & 1 == 1 {
                            let t = (ty >> (2 * (v % 32)) & 3) as u16;
                            if outward >> (v % 64) & 1 == 1 {
                                edges.push((h, v, t));
                            } else {
                                edges.push((v, h, t));
                            }
                        }
                    }
                }
                let edges = edges
                    .into_iter()
                    .enumerate()
                    .map(|(i, (s, t, ty))| (s, t, ty, (i as u64).wrapping_mul(7919) % 100_003))
                    .collect::<Vec<_>>();
                (n, edges)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Probing the meeting level before every expansion, node by node or the whole level
    /// first, gives exactly the path of the full-level search (nodes and hops), in every
    /// direction mode and type filter.
    #[test]
    fn meeting_probe_gives_identical_paths(
        (n, edges) in arb_hub_graph(), dir in arb_direction(), types in arb_types(),
        max_hops in 0u32..9, pairs in proptest::collection::vec((0u32..42, 0u32..42), 1..8),
    ) {
        let g = VecGraph::new(n, &edges);
        let g2 = VecGraph::new(n, &reordered(&edges));
        let (mut s1, mut s2) = (Scratch::new(), Scratch::new());
        for (a, b) in pairs {
            let (from, to) = (NodeId(a), NodeId(b));
            let full = probed(&g, &mut s1, from, to, dir, &types, max_hops, path::Probe::Off);
            let probe = probed(&g, &mut s2, from, to, dir, &types, max_hops, path::Probe::Always);
            prop_assert_eq!(&probe, &full, "{:?} -> {:?}", from, to);
            let again = probed(&g2, &mut s2, from, to, dir, &types, max_hops, path::Probe::Always);
            prop_assert_eq!(&again, &full);
            let level = probed(&g2, &mut s2, from, to, dir, &types, max_hops, path::Probe::Level);
            prop_assert_eq!(&level, &full, "level-first {:?} -> {:?}", from, to);
            let q = query(dir, &types, max_hops);
            let public = match shortest_path(&g, &mut s1, from, to, &q) {
                PathOutcome::Found(p) => Some(p),
                _ => None,
            };
            prop_assert_eq!(&public, &full);
        }
    }
}

/// `Snapshot::edges_between` (binary search over segment runs, delta scan from either end)
/// yields exactly the edges a filtered `for_each_edge` scan does, the probed search on a
/// snapshot gives the full-level path, and every hop of it is rule 1's edge: with edges in
/// two segments and the delta (additions, and removals or none), in three segments, and
/// after compaction (where hops are read from run entries).
#[test]
fn snapshot_edges_between_and_probe_match_scan() {
    use crate::{Database, EdgeProps, WriteBatch};
    const TYPES: [&str; 3] = ["a", "b", "c"];
    let n = 14u32;
    for unlinks in [30, 0] {
        let mut x = 99u64;
        let mut next = move |m: u32| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) as u32) % m
        };
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let commit = |links: usize, unlinks: usize, next: &mut dyn FnMut(u32) -> u32| {
            let mut b = WriteBatch::new();
            for k in 0..n {
                b.ensure_node(format!("k{k}"));
            }
            for _ in 0..unlinks {
                let (s, t, y) = (next(n), next(n), next(3));
                b.unlink_triple(format!("k{s}"), TYPES[y as usize], format!("k{t}"));
            }
            for i in 0..links {
                // Node 0 and 1 are hubs.
                let s = if i % 3 == 0 { i as u32 % 2 } else { next(n) };
                let (t, y) = (next(n), next(3));
                b.link(
                    format!("k{s}"),
                    TYPES[y as usize],
                    format!("k{t}"),
                    EdgeProps::default(),
                );
            }
            db.commit(b).unwrap();
        };
        commit(60, 0, &mut next);
        db.checkpoint().unwrap();
        commit(50, unlinks, &mut next);
        db.checkpoint().unwrap();
        commit(40, unlinks, &mut next);
        // Two segments and a delta, with tombstones or without; then three segments and no
        // delta (a node's edges in several CSRs: no run entries may be handed out); then
        // one compacted segment (run entries resolve hops).
        let layered = check_snapshot_lookups(&db.snapshot(), n);
        assert!(layered > 100, "too few edges to test: {layered}");
        db.checkpoint().unwrap();
        let snap = db.snapshot();
        assert_eq!(snap.state.segs.segments.len(), 3);
        assert!(snap.state.delta.adj.iter().all(|a| a.is_empty()));
        let segmented = check_snapshot_lookups(&snap, n);
        assert_eq!(segmented, layered);
        db.compact().unwrap();
        let snap = db.snapshot();
        let state = &snap.state;
        assert_eq!(state.segs.segments.len(), 1);
        assert!(!state.segs.any_edge_tombstones && state.delta.edges.is_empty());
        let compacted = check_snapshot_lookups(&snap, n);
        assert!(compacted > 100, "too few edges to test: {compacted}");
    }
}

/// Checks a snapshot's pair look-ups against its edge scans, and its shortest paths under
/// every probe policy against each other and against rule 1 for every hop. Returns the
/// number of (pair, direction, filter) edges seen.
fn check_snapshot_lookups(snap: &crate::Snapshot, n: u32) -> usize {
    use crate::graph::EdgeDir;
    let id = |k: u32| snap.node_id(&format!("k{k}")).unwrap();
    let filters = [
        TypeFilter::All,
        TypeFilter::only([TypeId(0)]),
        TypeFilter::only([TypeId(1), TypeId(2)]),
        TypeFilter::only([]),
    ];
    let mut joined = 0;
    for types in &filters {
        for d in [EdgeDir::Out, EdgeDir::In] {
            for u in 0..n + 1 {
                for v in 0..n + 1 {
                    let (u, v) = (NodeId(u), NodeId(v));
                    let mut want = Vec::new();
                    snap.for_each_edge(u, d, types, |e| {
                        if e.neighbor == v {
                            want.push(e);
                        }
                    });
                    let mut got = Vec::new();
                    snap.edges_between(u, v, d, types, |e| got.push(e));
                    want.sort_by_key(|e| (e.edge, e.edge_type, e.neighbor));
                    got.sort_by_key(|e| (e.edge, e.edge_type, e.neighbor));
                    assert_eq!(got, want, "{u:?} {v:?} {d:?} {types:?}");
                    let least = want.iter().min_by_key(|e| (e.edge_type, e.edge)).copied();
                    assert_eq!(
                        snap.least_edge_between(u, v, d, types),
                        least,
                        "least {u:?} {v:?} {d:?} {types:?}"
                    );
                    // Bounded by a type: the least edge when its type is within the bound,
                    // else nothing or one of the edges.
                    for max in 0..4u16 {
                        let got = snap.least_edge_between_upto(u, v, d, types, TypeId(max));
                        match least {
                            Some(l) if l.edge_type.0 <= max => assert_eq!(got, least),
                            _ => assert!(
                                got.is_none_or(|e| want.contains(&e)),
                                "upto {max} {u:?} {v:?} {d:?} {types:?}: {got:?}"
                            ),
                        }
                    }
                    joined += want.len();
                }
            }
        }
        let mut scratch = Scratch::new();
        scratch.set_sparse_policy(SparsePolicy::DENSE);
        // Hash-table marks from the first node on, moving into the arrays after 3 marks.
        let mut sparse = Scratch::new();
        sparse.set_sparse_policy(SparsePolicy {
            tables: true,
            max_marks: 3,
        });
        for direction in [Direction::Out, Direction::In, Direction::Both] {
            for a in 0..n {
                for b in 0..n {
                    let (from, to) = (id(a), id(b));
                    let mut run =
                        |probe| probed(snap, &mut scratch, from, to, direction, types, 8, probe);
                    let full = run(path::Probe::Off);
                    for probe in [path::Probe::Always, path::Probe::Level] {
                        assert_eq!(
                            run(probe),
                            full,
                            "{probe:?} {from:?} -> {to:?} {direction:?} {types:?}"
                        );
                    }
                    for probe in [path::Probe::Off, path::Probe::Always] {
                        assert_eq!(
                            probed(snap, &mut sparse, from, to, direction, types, 8, probe),
                            full,
                            "sparse {probe:?} {from:?} -> {to:?} {direction:?} {types:?}"
                        );
                    }
                    if let Some(p) = &full {
                        for (i, hop) in p.hops.iter().enumerate() {
                            let (x, y) = (p.nodes[i], p.nodes[i + 1]);
                            assert_eq!(
                                Some(*hop),
                                rule_one_hop(snap, x, y, direction, types),
                                "hop {i} of {from:?} -> {to:?} {direction:?} {types:?}"
                            );
                        }
                    }
                }
            }
        }
    }
    joined
}

/// Rule 1's hop from `x` to `y` found by scanning every edge at `x`: among the edges
/// joining them that the direction allows, a forward one if any, and the least (type, edge
/// id) of those.
fn rule_one_hop(
    g: &impl Adjacency,
    x: NodeId,
    y: NodeId,
    direction: Direction,
    types: &TypeFilter,
) -> Option<PathHop> {
    let mut best: Option<(bool, TypeId, EdgeId)> = None;
    for &d in direction.dirs() {
        let forward = d == crate::graph::EdgeDir::Out;
        g.for_each_edge(x, d, types, |e| {
            let cand = (!forward, e.edge_type, e.edge);
            if e.neighbor == y && best.is_none_or(|b| cand < b) {
                best = Some(cand);
            }
        });
    }
    best.map(|(backward, edge_type, edge)| PathHop {
        edge,
        edge_type,
        forward: !backward,
    })
}
