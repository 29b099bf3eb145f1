//! HNSW: a hierarchical navigable small-world graph over unit vectors (Malkov & Yashunin,
//! "Efficient and robust approximate nearest neighbor search using Hierarchical Navigable
//! Small World graphs", 2016), built once per segment and searched in place.
//!
//! Each row gets a level drawn from a geometric distribution (`floor(-ln u · 1/ln M)`,
//! seeded); layer `l` holds the rows of level `>= l` and links each to at most `M`
//! neighbours (`2M` in layer 0) chosen by the paper's heuristic (a candidate is kept only
//! when it is closer to the new row than to every neighbour kept before it, which keeps
//! links spread over clusters). A search descends greedily from the entry point through
//! the upper layers, then runs a best-first search of breadth `ef` in layer 0.
//!
//! The built graph is flattened into per-layer CSR arrays ([`Flat`]): layer 0 is indexed by
//! row, layer `l > 0` by position in its sorted member list. A search reads it through the
//! [`Graph`] trait, which the mapped segment sections implement with bounds-checked
//! look-ups (a damaged neighbour id is skipped, never trusted).
//!
//! Building inserts rows in index order with levels from a seeded generator; after the
//! first 1,024 rows, in batches whose rows plan their links in parallel against the graph
//! as the batch found it, applied in row order (see [`build`]). The batches depend on the
//! row count alone, so identical input gives an identical graph (and identical segment
//! bytes) on any number of cores.

use std::collections::BinaryHeap;

use super::{Scored, SplitMix64, TopK, Vectors};
use crate::format::segment::{prefetch_at, prefetch_span};

/// Links per row in layers above 0.
pub const M: usize = 16;
/// Links per row in layer 0.
pub const M0: usize = 2 * M;
/// Search breadth while building.
pub const EF_CONSTRUCTION: usize = 128;
/// Default search breadth of a query (raised to `limit` when that is larger): recall@10
/// 0.96 on GloVe 6B 50-d (399,000 words; 0.91 at 64), 1.0 on the benchmark's clustered
/// 100k × 128 set (see DESIGN.md §14).
pub const EF_SEARCH_DEFAULT: usize = 128;
/// At most this many layers (a level draw above it is clamped; with `M = 16` a row reaches
/// level 8 with probability 16^-8).
pub const LEVELS_MAX: usize = 16;

/// Adjacency of an HNSW graph, per layer.
pub trait Graph {
    /// The row search starts from.
    fn entry(&self) -> u32;
    /// Number of layers (the entry point's level + 1).
    fn levels(&self) -> usize;
    /// Neighbours of `row` in `layer` (empty when `row` is not in it).
    fn neighbors(&self, layer: usize, row: u32) -> &[u32];
    /// Starts loading where `row`'s layer-0 links start (a hint; default: nothing).
    fn prefetch_start(&self, _row: u32) {}
    /// Starts loading `row`'s layer-0 links (a hint; default: nothing).
    fn prefetch_links(&self, _row: u32) {}
}

/// Per-query state reused across searches: visit stamps by row. A stamp is 16 bits (as
/// hnswlib's visited list): half the cache footprint of 32, and the array is cleared only
/// when the generation wraps, once in 65,535 searches.
#[derive(Debug, Default)]
pub struct Visited {
    stamps: Vec<u16>,
    generation: u16,
}

impl Visited {
    /// Starts a search over `n` rows.
    fn reset(&mut self, n: usize) {
        if self.stamps.len() < n {
            self.stamps.resize(n, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamps.fill(0);
            self.generation = 1;
        }
    }

    /// Starts loading `row`'s stamp into the CPU's caches (a hint).
    #[inline]
    fn prefetch(&self, row: u32) {
        prefetch_at(&self.stamps, row as usize);
    }

    /// Marks `row`; false when it was marked already in this search or is out of range.
    #[inline]
    fn insert(&mut self, row: u32) -> bool {
        match self.stamps.get_mut(row as usize) {
            Some(s) if *s != self.generation => {
                *s = self.generation;
                true
            }
            _ => false,
        }
    }
}

/// What a layer search saw (for the filtered-search fallback rule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Rows whose similarity was computed.
    pub scored: u64,
    /// Rows the predicate was asked about.
    pub asked: u64,
    /// Rows it accepted.
    pub accepted: u64,
    /// Whether the search stopped because it had asked about `ask_budget` rows.
    pub exhausted: bool,
}

/// Best-first search of breadth `ef` in `layer` from `entries`. Rows the predicate rejects
/// are traversed (their links are followed) but never enter the result; the search stops
/// when the best unexpanded candidate is worse than the worst of `ef` accepted rows, or
/// once the predicate was asked about `ask_budget` rows (`stats.exhausted`).
#[allow(clippy::too_many_arguments)]
fn search_layer<G: Graph + ?Sized, A: FnMut(u32) -> bool + ?Sized>(
    g: &G,
    vectors: Vectors<'_>,
    query: &[f32],
    entries: &[Scored],
    ef: usize,
    layer: usize,
    visited: &mut Visited,
    accept: &mut A,
    stats: &mut SearchStats,
    ask_budget: u64,
) -> Vec<Scored> {
    let mut candidates: BinaryHeap<Scored> = BinaryHeap::new();
    let mut found = TopK::new(ef.max(1));
    // The bound of the stop rule: the worst accepted row once `ef` are found; until then
    // everything reachable is expanded (a selective predicate makes this long, which the
    // caller's fallback rule accounts for).
    for &e in entries {
        candidates.push(e);
        stats.asked += 1;
        if accept(e.index) {
            stats.accepted += 1;
            found.offer(e);
        }
    }
    // The rows of one expansion not visited before (at most a layer-0 link list, more
    // only from a damaged graph, which the vector handles too).
    let mut fresh: Vec<u32> = Vec::with_capacity(M0);
    while let Some(c) = candidates.pop() {
        if found.threshold().is_some_and(|t| c < t) {
            break;
        }
        if stats.asked >= ask_budget {
            stats.exhausted = true;
            break;
        }
        // The next candidate is most likely the next expanded: its link list starts loading
        // now (where the list starts was loaded when it became a candidate, below).
        if layer == 0
            && let Some(next) = candidates.peek()
        {
            g.prefetch_links(next.index);
        }
        let neighbors = g.neighbors(layer, c.index);
        // First the visit stamps (small, mostly cached), then only the rows not visited
        // start loading, all at once: the scoring below waits on overlapping misses, and
        // no memory traffic goes to rows already scored.
        for &n in neighbors {
            visited.prefetch(n);
        }
        fresh.clear();
        for &n in neighbors {
            if visited.insert(n) {
                vectors.prefetch(n as usize);
                fresh.push(n);
            }
        }
        for (j, &n) in fresh.iter().enumerate() {
            // The next row's remaining lines load while this one is scored.
            if let Some(&next) = fresh.get(j + 1) {
                vectors.prefetch_row(next as usize);
            }
            let Some(sim) = vectors.sim(query, n as usize) else {
                continue;
            };
            stats.scored += 1;
            let s = Scored { sim, index: n };
            if found.threshold().is_none_or(|t| s > t) {
                if layer == 0 {
                    g.prefetch_start(n);
                }
                candidates.push(s);
                stats.asked += 1;
                if accept(n) {
                    stats.accepted += 1;
                    found.offer(s);
                }
            }
        }
    }
    found.into_sorted()
}

/// Searches `g` for the best `k` rows for the unit vector `query` among those `accept`
/// admits, with breadth `max(ef, k)` in layer 0, asking the predicate about at most
/// `ask_budget` rows (`u64::MAX`: no bound; a search that runs out says so in its stats).
/// Returns the rows best first and what the search saw.
///
/// # Complexity
/// About `ef · M0 · log n` similarity computations for an unfiltered query; up to every
/// row reachable (or the budget) when the predicate rejects most rows.
#[allow(clippy::too_many_arguments)]
pub fn search<G: Graph + ?Sized, A: FnMut(u32) -> bool + ?Sized>(
    g: &G,
    vectors: Vectors<'_>,
    query: &[f32],
    k: usize,
    ef: usize,
    visited: &mut Visited,
    accept: &mut A,
    ask_budget: u64,
) -> (Vec<Scored>, SearchStats) {
    let mut stats = SearchStats::default();
    let entry = g.entry();
    let (Some(sim), true) = (
        vectors.sim(query, entry as usize),
        query.len() == vectors.dim(),
    ) else {
        return (Vec::new(), stats);
    };
    if k == 0 {
        return (Vec::new(), stats);
    }
    visited.reset(vectors.len());
    let mut ep = Scored { sim, index: entry };
    // Greedy descent through the upper layers: accept everything (the predicate applies to
    // the result only, which comes from layer 0).
    for layer in (1..g.levels().min(LEVELS_MAX)).rev() {
        let mut changed = true;
        while changed {
            changed = false;
            for &n in g.neighbors(layer, ep.index) {
                if let Some(sim) = vectors.sim(query, n as usize) {
                    stats.scored += 1;
                    let s = Scored { sim, index: n };
                    if s > ep {
                        ep = s;
                        changed = true;
                    }
                }
            }
        }
    }
    visited.insert(ep.index);
    let mut found = search_layer(
        g,
        vectors,
        query,
        &[ep],
        ef.max(k),
        0,
        visited,
        accept,
        &mut stats,
        ask_budget,
    );
    found.truncate(k);
    (found, stats)
}

/// An HNSW graph flattened into per-layer CSR arrays: what a segment stores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flat {
    /// The entry point (a row of the top layer).
    pub entry: u32,
    /// Rows per layer, layer 0 first (`layer_sizes[0]` is the row count).
    pub layer_sizes: Vec<u32>,
    /// Members of layers 1.., each layer's rows in increasing order, concatenated.
    pub members: Vec<u32>,
    /// Per layer, `layer_sizes[l] + 1` starts into `neighbors` (absolute), concatenated.
    pub offsets: Vec<u32>,
    /// Neighbour rows of every layer, each run in selection order.
    pub neighbors: Vec<u32>,
}

/// A borrowed view of [`Flat`] arrays (owned or mapped): the [`Graph`] a search reads.
#[derive(Clone, Debug)]
pub struct FlatView<'a> {
    entry: u32,
    /// Per layer: (members, offsets); layer 0 has no member list (rows are positions).
    layers: Vec<(&'a [u32], &'a [u32])>,
    neighbors: &'a [u32],
}

impl<'a> FlatView<'a> {
    /// A view of flattened arrays. Shapes that do not fit (damaged input) give a view that
    /// finds fewer neighbours, never a panic: every look-up is checked.
    pub fn new(
        entry: u32,
        layer_sizes: &[u32],
        members: &'a [u32],
        offsets: &'a [u32],
        neighbors: &'a [u32],
    ) -> FlatView<'a> {
        let mut layers = Vec::with_capacity(layer_sizes.len().min(LEVELS_MAX));
        let (mut m, mut o) = (0usize, 0usize);
        for (l, &size) in layer_sizes.iter().take(LEVELS_MAX).enumerate() {
            let size = size as usize;
            let mem: &[u32] = if l == 0 {
                &[]
            } else {
                let s = members.get(m..m.saturating_add(size)).unwrap_or(&[]);
                m = m.saturating_add(size);
                s
            };
            let offs = offsets
                .get(o..o.saturating_add(size).saturating_add(1))
                .unwrap_or(&[]);
            o = o.saturating_add(size).saturating_add(1);
            layers.push((mem, offs));
        }
        FlatView {
            entry,
            layers,
            neighbors,
        }
    }
}

impl Graph for FlatView<'_> {
    fn entry(&self) -> u32 {
        self.entry
    }

    fn levels(&self) -> usize {
        self.layers.len()
    }

    #[inline]
    fn neighbors(&self, layer: usize, row: u32) -> &[u32] {
        let Some(&(members, offsets)) = self.layers.get(layer) else {
            return &[];
        };
        let pos = if layer == 0 {
            Some(row as usize)
        } else {
            members.binary_search(&row).ok()
        };
        let range =
            pos.and_then(|p| Some(*offsets.get(p)? as usize..*offsets.get(p + 1)? as usize));
        range.and_then(|r| self.neighbors.get(r)).unwrap_or(&[])
    }

    #[inline]
    fn prefetch_start(&self, row: u32) {
        if let Some(&(_, offsets)) = self.layers.first() {
            prefetch_at(offsets, row as usize);
        }
    }

    #[inline]
    fn prefetch_links(&self, row: u32) {
        let Some(&(_, offsets)) = self.layers.first() else {
            return;
        };
        if let (Some(&start), Some(&end)) =
            (offsets.get(row as usize), offsets.get(row as usize + 1))
        {
            let len = (end as usize).saturating_sub(start as usize);
            prefetch_span(self.neighbors, start as usize, len);
        }
    }
}

/// The graph while it is built: per row, per level, its links.
struct Building {
    /// Layer-0 links in one array, [`LAYER0_SLOT`] words per row: the count, then up to
    /// [`M0`] row ids (hnswlib's layout: a link list is one look-up, one or two cache
    /// lines, and can be prefetched).
    layer0: Vec<u32>,
    /// Links above layer 0: `upper[row][layer - 1]` for the row's layers.
    upper: Vec<Vec<Vec<u32>>>,
    entry: u32,
    top: usize,
}

/// Words per row of [`Building::layer0`].
const LAYER0_SLOT: usize = M0 + 1;

impl Building {
    fn new(levels: &[usize]) -> Building {
        Building {
            layer0: vec![0; levels.len() * LAYER0_SLOT],
            upper: levels.iter().map(|&l| vec![Vec::new(); l]).collect(),
            entry: 0,
            top: levels.first().copied().unwrap_or(0),
        }
    }

    /// `row`'s layer-0 slot (count, then ids), if the row exists.
    fn slot_mut(&mut self, row: u32) -> Option<&mut [u32]> {
        let at = (row as usize).checked_mul(LAYER0_SLOT)?;
        self.layer0.get_mut(at..at + LAYER0_SLOT)
    }

    /// Sets `row`'s links in `layer` (at most the layer's maximum, which the callers'
    /// selection guarantees).
    fn set_links(&mut self, layer: usize, row: u32, links: &[u32]) {
        if layer == 0 {
            if let Some(slot) = self.slot_mut(row) {
                let n = links.len().min(M0);
                // n ≤ M0, so it fits a u32.
                slot[0] = u32::try_from(n).unwrap_or(0);
                slot[1..=n].copy_from_slice(&links[..n]);
            }
        } else if let Some(l) = self
            .upper
            .get_mut(row as usize)
            .and_then(|u| u.get_mut(layer - 1))
        {
            *l = links.to_vec();
        }
    }

    /// Appends `row` to `nb`'s links in `layer` when there is room: `Some(true)`;
    /// `Some(false)` when the list is full (the caller re-selects), `None` when `nb` has no
    /// such layer.
    fn push_link(&mut self, layer: usize, nb: u32, row: u32) -> Option<bool> {
        if layer == 0 {
            let slot = self.slot_mut(nb)?;
            let n = slot[0] as usize;
            if n < M0 {
                slot[n + 1] = row;
                slot[0] += 1;
                return Some(true);
            }
            return Some(false);
        }
        let l = self.upper.get_mut(nb as usize)?.get_mut(layer - 1)?;
        if l.len() < M {
            l.push(row);
            return Some(true);
        }
        Some(false)
    }
}

impl Graph for Building {
    fn entry(&self) -> u32 {
        self.entry
    }

    fn levels(&self) -> usize {
        self.top + 1
    }

    fn neighbors(&self, layer: usize, row: u32) -> &[u32] {
        if layer == 0 {
            let at = (row as usize).saturating_mul(LAYER0_SLOT);
            let Some(slot) = self.layer0.get(at..at.saturating_add(LAYER0_SLOT)) else {
                return &[];
            };
            return slot.get(1..=slot[0] as usize).unwrap_or(&[]);
        }
        self.upper
            .get(row as usize)
            .and_then(|u| u.get(layer - 1))
            .map_or(&[], Vec::as_slice)
    }

    #[inline]
    fn prefetch_start(&self, row: u32) {
        prefetch_at(&self.layer0, (row as usize).saturating_mul(LAYER0_SLOT));
    }

    #[inline]
    fn prefetch_links(&self, row: u32) {
        prefetch_span(
            &self.layer0,
            (row as usize).saturating_mul(LAYER0_SLOT),
            LAYER0_SLOT,
        );
    }
}

/// The paper's neighbour-selection heuristic: from `candidates` (best first) keep a row
/// only when it is more similar to the base than to every row kept before it, up to `m`.
fn select(vectors: Vectors<'_>, candidates: &[Scored], m: usize) -> Vec<u32> {
    let mut kept: Vec<u32> = Vec::with_capacity(m);
    for c in candidates {
        if kept.len() >= m {
            break;
        }
        let diverse = kept.iter().all(|&r| {
            vectors
                .sim_rows(c.index as usize, r as usize)
                .is_none_or(|s| s < c.sim)
        });
        if diverse {
            kept.push(c.index);
        }
    }
    kept
}

/// The level of a new row: `floor(-ln u / ln M)`, clamped below `LEVELS_MAX`.
fn draw_level(rng: &mut SplitMix64) -> usize {
    let ml = 1.0 / (M as f64).ln();
    let level = (-rng.next_unit().ln() * ml).floor();
    // `level` is finite and >= 0 (u is in (0, 1]), clamped to at most LEVELS_MAX - 1.
    (0..LEVELS_MAX)
        .rev()
        .find(|&l| level >= l as f64)
        .unwrap_or(0)
}

/// Rows inserted one at a time before batches start: a small graph must see every row.
const SEQUENTIAL_ROWS: usize = 1024;
/// The largest batch of rows planned against the same graph.
const BATCH_ROWS_MAX: usize = 256;
/// Most threads that plan a batch.
const BUILD_THREADS_MAX: usize = 8;

/// Rows in the batch that starts at row `i`: 1 for the first [`SEQUENTIAL_ROWS`], then
/// `i / 64` (each row of a batch misses at most 1/64 of the graph's rows: those planned
/// beside it) up to [`BATCH_ROWS_MAX`]. A function of `i` alone, so the graph does not
/// depend on the number of threads.
fn batch_rows(i: usize) -> usize {
    if i < SEQUENTIAL_ROWS {
        1
    } else {
        (i / 64).clamp(1, BATCH_ROWS_MAX)
    }
}

/// What inserting one row will do: its links per layer, top layer first, chosen by
/// searching the graph as it was when the row's batch began.
struct Plan {
    /// `(layer, chosen neighbours)`, from `min(level, top)` down to 0.
    layers: Vec<(usize, Vec<u32>)>,
}

/// Per-thread search state of a build.
#[derive(Default)]
struct Planner {
    visited: Visited,
    stats: SearchStats,
}

impl Planner {
    /// Plans the insertion of `row` (vector `q`, level `level`) into `g`.
    fn plan(
        &mut self,
        g: &Building,
        vectors: Vectors<'_>,
        q: &[f32],
        level: usize,
        ef_construction: usize,
    ) -> Plan {
        let n = vectors.len();
        let mut layers = Vec::new();
        self.visited.reset(n);
        let Some(sim) = vectors.sim(q, g.entry as usize) else {
            return Plan { layers };
        };
        let mut ep = Scored {
            sim,
            index: g.entry,
        };
        for layer in (level + 1..=g.top).rev() {
            let mut changed = true;
            while changed {
                changed = false;
                for &nb in g.neighbors(layer, ep.index) {
                    if let Some(sim) = vectors.sim(q, nb as usize) {
                        let s = Scored { sim, index: nb };
                        if s > ep {
                            ep = s;
                            changed = true;
                        }
                    }
                }
            }
        }
        let mut entries = vec![ep];
        for layer in (0..=level.min(g.top)).rev() {
            self.visited.reset(n);
            for e in &entries {
                self.visited.insert(e.index);
            }
            let found = search_layer(
                g,
                vectors,
                q,
                &entries,
                ef_construction,
                layer,
                &mut self.visited,
                &mut |_| true,
                &mut self.stats,
                u64::MAX,
            );
            layers.push((layer, select(vectors, &found, M)));
            entries = found;
        }
        Plan { layers }
    }
}

/// Links `row` (level `level`) into `g` as `plan` says: its own links, and a link back
/// from each chosen neighbour, whose list is re-selected when it grows past the layer's
/// maximum.
fn apply(g: &mut Building, vectors: Vectors<'_>, row: u32, level: usize, plan: Plan) {
    for (layer, chosen) in plan.layers {
        let max = if layer == 0 { M0 } else { M };
        for &nb in &chosen {
            if g.push_link(layer, nb, row) != Some(false) {
                continue;
            }
            // Too many links: re-select among them and `row` from the neighbour's side.
            let mut scored: Vec<Scored> = g
                .neighbors(layer, nb)
                .iter()
                .chain(std::iter::once(&row))
                .filter_map(|&x| {
                    Some(Scored {
                        sim: vectors.sim_rows(x as usize, nb as usize)?,
                        index: x,
                    })
                })
                .collect();
            scored.sort_unstable_by(|a, b| b.cmp(a));
            let kept = select(vectors, &scored, max);
            g.set_links(layer, nb, &kept);
        }
        g.set_links(layer, row, &chosen);
    }
    if level > g.top {
        g.top = level;
        g.entry = row;
    }
}

/// Builds the HNSW graph of `vectors` (unit rows, or rows with their scales), levels drawn from `seed`, with breadth
/// `ef_construction`, on up to [`BUILD_THREADS_MAX`] threads. Deterministic: the same rows
/// and seed give the same graph, whatever the number of threads.
///
/// The first [`SEQUENTIAL_ROWS`] rows are inserted one by one, as the paper does. After
/// that, rows go in batches ([`batch_rows`]): every row of a batch plans its links by
/// searching the graph as it was when the batch began (the threads split the batch), then
/// the plans are applied in row order. So a row does not see the rows of its own batch as
/// candidates (they still reach it through their reverse links when they choose it), the
/// usual trade of a parallel build.
///
/// # Complexity
/// About `n · ef_construction · M0 · log n` similarity computations, the searches spread
/// over the threads.
#[cfg_attr(not(feature = "internals"), allow(dead_code))] // the engine reports progress; benches use it
pub fn build(vectors: Vectors<'_>, seed: u64, ef_construction: usize) -> Flat {
    build_reporting(vectors, seed, ef_construction, &mut |_| {})
}

/// [`build`], telling `progress` how many rows are in the graph after each batch (on the
/// calling thread; the last report is the row count).
pub fn build_reporting(
    vectors: Vectors<'_>,
    seed: u64,
    ef_construction: usize,
    progress: &mut dyn FnMut(usize),
) -> Flat {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(BUILD_THREADS_MAX);
    build_on(vectors, seed, ef_construction, threads, progress)
}

/// [`build_reporting`] on `threads` threads (at least one).
fn build_on(
    vectors: Vectors<'_>,
    seed: u64,
    ef_construction: usize,
    threads: usize,
    progress: &mut dyn FnMut(usize),
) -> Flat {
    let n = vectors.len();
    let mut rng = SplitMix64::new(seed);
    let levels: Vec<usize> = (0..n).map(|_| draw_level(&mut rng)).collect();
    let mut g = Building::new(&levels);
    let mut planners: Vec<Planner> = (0..threads.max(1)).map(|_| Planner::default()).collect();
    let mut i = 1;
    while i < n {
        let end = (i + batch_rows(i)).min(n);
        // Rows are numbered by u32 (the caller checked n fits).
        let row = |r: usize| u32::try_from(r).unwrap_or(u32::MAX);
        let plan_rows = |planner: &mut Planner, rows: std::ops::Range<usize>, g: &Building| {
            let mut q = Vec::with_capacity(vectors.dim());
            rows.filter_map(|r| {
                vectors.unit_row_into(r, &mut q).then_some(())?;
                Some((r, planner.plan(g, vectors, &q, levels[r], ef_construction)))
            })
            .collect::<Vec<_>>()
        };
        let plans: Vec<(usize, Plan)> = if end - i == 1 || planners.len() == 1 {
            plan_rows(&mut planners[0], i..end, &g)
        } else {
            let per = (end - i).div_ceil(planners.len());
            let g = &g;
            std::thread::scope(|scope| {
                let handles: Vec<_> = planners
                    .iter_mut()
                    .enumerate()
                    .map(|(t, planner)| {
                        let lo = (i + t * per).min(end);
                        let hi = (lo + per).min(end);
                        scope.spawn(move || plan_rows(planner, lo..hi, g))
                    })
                    .collect();
                handles
                    .into_iter()
                    // A planning thread only reads shared data and cannot panic on it
                    // (every look-up is checked); if it did, the build has no graph to
                    // give, so the panic goes on.
                    .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .collect()
            })
        };
        for (r, plan) in plans {
            apply(&mut g, vectors, row(r), levels[r], plan);
        }
        i = end;
        progress(i);
    }
    progress(n);
    flatten(&g, n)
}

fn flatten(g: &Building, n: usize) -> Flat {
    let mut flat = Flat {
        entry: g.entry,
        ..Flat::default()
    };
    if n == 0 {
        return flat;
    }
    for layer in 0..=g.top {
        // Layer `layer` holds the rows of level ≥ `layer` (`upper[r].len()` is r's level).
        let rows: Vec<u32> = (0u32..)
            .zip(&g.upper)
            .filter(|(_, u)| u.len() >= layer)
            .map(|(r, _)| r)
            .collect();
        flat.layer_sizes
            .push(u32::try_from(rows.len()).unwrap_or(u32::MAX));
        for &r in &rows {
            flat.offsets
                .push(u32::try_from(flat.neighbors.len()).unwrap_or(u32::MAX));
            flat.neighbors.extend_from_slice(g.neighbors(layer, r));
        }
        flat.offsets
            .push(u32::try_from(flat.neighbors.len()).unwrap_or(u32::MAX));
        if layer > 0 {
            flat.members.extend(rows);
        }
    }
    flat
}

impl Flat {
    /// The view a search reads.
    #[cfg(any(test, feature = "internals"))]
    pub fn view(&self) -> FlatView<'_> {
        FlatView::new(
            self.entry,
            &self.layer_sizes,
            &self.members,
            &self.offsets,
            &self.neighbors,
        )
    }
}

/// The share of `want`'s rows that `got` found.
#[cfg(test)]
fn recall(got: &[Scored], want: &[Scored]) -> f64 {
    let hits = got
        .iter()
        .filter(|g| want.iter().any(|w| w.index == g.index))
        .count();
    hits as f64 / want.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::{exact, testdata};

    /// Recall@10 against the exact scan on clustered data: above 0.95 at the default
    /// breadth, unfiltered and with a predicate admitting half the rows.
    #[test]
    fn recall_at_10_is_high_on_clustered_data() {
        let (n, dim) = (3000, 24);
        let data = testdata::clustered(n, dim, 30, 11);
        let v = Vectors::new(&data, dim);
        let flat = build(v, 7, EF_CONSTRUCTION);
        let g = flat.view();
        let queries = testdata::clustered(200, dim, 30, 99);
        let q = Vectors::new(&queries, dim);
        let mut visited = Visited::default();
        for filtered in [false, true] {
            let mut total = 0.0;
            for i in 0..q.len() {
                let query = q.get(i).unwrap();
                let accept = |r: u32| !filtered || r.is_multiple_of(2);
                let want = exact(v, query, 10, accept);
                let mut acc = accept;
                let (got, stats) = search(
                    &g,
                    v,
                    query,
                    10,
                    EF_SEARCH_DEFAULT,
                    &mut visited,
                    &mut acc,
                    u64::MAX,
                );
                assert!(!stats.exhausted);
                assert!(got.iter().all(|s| accept(s.index)));
                total += recall(&got, &want);
            }
            let r = total / q.len() as f64;
            assert!(r >= 0.95, "recall@10 {r} (filtered: {filtered})");
        }
    }

    #[test]
    fn build_is_deterministic_and_shaped() {
        let (n, dim) = (1500, 8);
        let data = testdata::clustered(n, dim, 5, 1);
        let v = Vectors::new(&data, dim);
        let a = build(v, 42, 64);
        let b = build(v, 42, 64);
        assert_eq!(a, b);
        assert_eq!(a.layer_sizes[0] as usize, n);
        assert!(a.layer_sizes.len() >= 2, "{:?}", a.layer_sizes);
        assert!(a.layer_sizes.windows(2).all(|w| w[0] >= w[1]));
        let top = a.layer_sizes.len() - 1;
        let start = a.members.len() - a.layer_sizes[top] as usize;
        assert!(a.members[start..].contains(&a.entry));
        for (l, &size) in a.layer_sizes.iter().enumerate() {
            let max = if l == 0 { M0 } else { M };
            let g = a.view();
            let rows: Vec<u32> = if l == 0 {
                (0..u32::try_from(n).unwrap()).collect()
            } else {
                let before: usize = a.layer_sizes[1..l].iter().map(|&x| x as usize).sum();
                a.members[before..before + size as usize].to_vec()
            };
            for r in rows {
                let nb = g.neighbors(l, r);
                assert!(nb.len() <= max);
                assert!(!nb.contains(&r));
            }
        }
        assert_ne!(build(v, 43, 64), a, "another seed gives other levels");
    }

    /// The graph depends on the rows and the seed, not on the number of threads that
    /// plan its batches (rows past the sequential prefix, in batches of several sizes).
    #[test]
    fn build_is_the_same_on_any_number_of_threads() {
        let (n, dim) = (SEQUENTIAL_ROWS + 64 * 40 + 7, 8);
        let data = testdata::clustered(n, dim, 9, 3);
        let v = Vectors::new(&data, dim);
        let mut reports = Vec::new();
        let one = build_on(v, 5, 32, 1, &mut |done| reports.push(done));
        for threads in [2, 3, 8] {
            assert_eq!(
                build_on(v, 5, 32, threads, &mut |_| {}),
                one,
                "{threads} threads"
            );
        }
        assert!(batch_rows(n - 7) > 1, "batches were exercised");
        // Progress: rising to the row count, which is the last report.
        assert!(reports.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(reports.last(), Some(&n));
    }

    #[test]
    fn empty_and_tiny_inputs() {
        let v = Vectors::new(&[], 4);
        let flat = build(v, 0, 16);
        assert!(flat.layer_sizes.is_empty());
        let (got, _) = search(
            &flat.view(),
            v,
            &[1.0, 0.0, 0.0, 0.0],
            3,
            10,
            &mut Visited::default(),
            &mut |_| true,
            u64::MAX,
        );
        assert!(got.is_empty());
        let one = [1.0f32, 0.0];
        let v = Vectors::new(&one, 2);
        let flat = build(v, 0, 16);
        let (got, _) = search(
            &flat.view(),
            v,
            &[0.0, 1.0],
            3,
            10,
            &mut Visited::default(),
            &mut |_| true,
            u64::MAX,
        );
        assert_eq!(got.len(), 1);
    }

    /// Across the 16-bit generation's wrap a row marked long ago is not taken as marked
    /// in a new search, and a row marked in this search is.
    #[test]
    fn visit_stamps_survive_the_generation_wrap() {
        let mut v = Visited::default();
        v.reset(4);
        assert!(v.insert(1));
        // 65,535 more searches bring the generation back to the value row 1 carries.
        for _ in 0..u32::from(u16::MAX) {
            v.reset(4);
        }
        assert!(
            v.insert(1),
            "a stale stamp counted as a visit after the wrap"
        );
        assert!(!v.insert(1));
        assert!(v.insert(3));
        assert!(!v.insert(9), "out of range is never new");
    }

    /// A search that runs out of its ask budget stops and says so.
    #[test]
    fn ask_budget_bounds_a_selective_search() {
        let data = testdata::clustered(2000, 8, 10, 2);
        let v = Vectors::new(&data, 8);
        let flat = build(v, 1, 64);
        let mut visited = Visited::default();
        // Nothing is accepted: without a budget the search walks every reachable row.
        let (got, stats) = search(
            &flat.view(),
            v,
            v.get(0).unwrap(),
            10,
            32,
            &mut visited,
            &mut |_| false,
            u64::MAX,
        );
        assert!(
            got.is_empty() && !stats.exhausted && stats.asked > 1000,
            "{stats:?}"
        );
        let (_, stats) = search(
            &flat.view(),
            v,
            v.get(0).unwrap(),
            10,
            32,
            &mut visited,
            &mut |_| false,
            300,
        );
        assert!(
            stats.exhausted && stats.asked < 300 + 2 * M0 as u64,
            "{stats:?}"
        );
    }

    /// A view of garbage arrays answers without panicking.
    #[test]
    fn damaged_views_do_not_panic() {
        let data = testdata::clustered(50, 4, 2, 5);
        let v = Vectors::new(&data, 4);
        let junk = [u32::MAX, 7, 3, 0, 100, 2];
        let g = FlatView::new(9999, &[50, 3, u32::MAX], &junk, &junk, &junk);
        let _ = search(
            &g,
            v,
            v.get(0).unwrap(),
            5,
            10,
            &mut Visited::default(),
            &mut |_| true,
            u64::MAX,
        );
        let g = FlatView::new(3, &[50, 3, u32::MAX], &junk, &junk, &junk);
        let _ = search(
            &g,
            v,
            v.get(0).unwrap(),
            5,
            10,
            &mut Visited::default(),
            &mut |_| true,
            u64::MAX,
        );
    }
}
