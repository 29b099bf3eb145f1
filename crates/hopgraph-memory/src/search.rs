//! `memory_search`: ranked search over titles, contents and observations.
//!
//! The query text is ranked by the engine's full-text index (`Snapshot::search_text`:
//! BM25 over title, content and the string values of metadata such as AIM observations;
//! case-, punctuation- and inflection-insensitive; any word may match, all words and the
//! phrase rank higher); an `embedding` is ranked by the engine's vector index
//! (`Snapshot::search_vector`, cosine). The lists are combined in `fuse`: text alone
//! scores 0–1 (the best hit 1), an embedding alone scores its cosine similarity, and both
//! are fused over their union by a weighted sum of the two relative scores plus a graph
//! step (a memory next to a strong hit gets a share of its score): see [`Fusion`]. A
//! memory found only by its words or only by its meaning still ranks. Filters (`type`,
//! `min_importance`, `created_after`/`created_before`) apply during the search. With
//! `near`, only memories within `max_hops` of those ids are searched (the expansion
//! kernel finds them) and closer ones are boosted ([`near_boost`]).
//!
//! Time: without `as_of` only current memories (valid now) are searched, unless
//! `include_history` (then every memory, each hit saying whether it is `current`); with
//! `as_of` only the memories valid then (the engine's `NodeFilter::valid_at`, applied
//! during the search; a `near` walk and the fusion's graph step see only the edges and
//! memories valid then too).
//! Optional re-ranking by recency and importance multiplies the final scores
//! ([`Rerank`]).

use std::collections::HashMap;

use serde::Serialize;

use super::nodes::check_embedding;
use super::time::parse_time;
use super::{ToolError, check_range, engine_error, non_empty};
use hopgraph::kernel::{self, Adjacency, ExpandQuery, Scratch};
use hopgraph::{Direction, NodeFilter, Snapshot, TypeFilter};
use hopgraph::{NodeId, TextField, TextQuery, VectorQuery};

/// Longest query accepted, in bytes.
pub const QUERY_BYTES_MAX: usize = hopgraph::limits::TEXT_QUERY_BYTES_MAX;
/// Largest `offset`.
pub const OFFSET_MAX: i64 = 1000;
/// Fewest candidates taken from each ranked list before fusion, so that a memory ranked
/// low by one list but high by the other still reaches the fused top.
pub const FUSION_DEPTH_MIN: usize = 50;
/// `max_hops` when `near` is given without it.
pub const NEAR_HOPS_DEFAULT: i64 = 2;
/// Largest `max_hops`.
pub const NEAR_HOPS_MAX: i64 = 6;
/// Most ids in `near`.
pub const NEAR_IDS_MAX: usize = 100;
/// Most memories a `near` restriction admits, closest first (the near memories, then one
/// hop, ...); a reach beyond this is cut at the last hop level that fits, partly.
pub const NEAR_REACH_MAX: usize = 100_000;

/// A `memory_search` request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchRequest {
    /// The text to find (may be empty when `embedding` is given).
    pub query: String,
    /// 1–50, default 10 (checked here, the one place: adapters pass what they were given).
    pub limit: Option<i64>,
    /// Hits to skip (0–1000, default 0), for paging.
    pub offset: Option<i64>,
    /// Only memories of this type (memory type or AIM entityType).
    pub memory_type: Option<String>,
    /// Only memories with at least this importance.
    pub min_importance: Option<f64>,
    /// Only memories created at or after this time (RFC 3339).
    pub created_after: Option<String>,
    /// Only memories created before this time (RFC 3339).
    pub created_before: Option<String>,
    /// Optional query embedding.
    pub embedding: Option<Vec<f64>>,
    /// Only memories within `max_hops` of one of these memory ids (edges walked both
    /// ways), closer ones boosted ([`near_boost`]). Unknown ids are an error naming them.
    pub near: Option<Vec<String>>,
    /// Hops from `near` (1–6, default 2); only with `near`.
    pub max_hops: Option<i64>,
    /// With `near`: walk only edges of these types (default: any type).
    pub edge_types: Option<Vec<String>>,
    /// Search as of this time (RFC 3339): only memories valid then.
    pub as_of: Option<String>,
    /// Without `as_of`: search every memory, not only the current ones; hits then carry
    /// `current`.
    pub include_history: bool,
    /// Multiply each score by `2^(-age / half_life)` (age: from `valid_from` to `as_of`
    /// or now), in days, > 0.
    pub recency_half_life_days: Option<f64>,
    /// Multiply each score by `1 - w + w * importance` (0-1).
    pub importance_weight: Option<f64>,
}

/// One search hit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchHit {
    /// Memory id.
    pub id: String,
    /// Title (`null` when unset).
    pub title: Option<String>,
    /// Score: with a query only, the text score (0–1, the best text hit 1); with an
    /// embedding only, cosine similarity; with both, the fused score ([`Fusion`]: 0–1
    /// before the graph step's share). With `near`, times [`near_boost`].
    pub score: f64,
    /// Memory type or AIM entityType (`null` when unset).
    #[serde(rename = "type")]
    pub memory_type: Option<String>,
    /// The field that matched best: `title`, `content` or `observations` (any other
    /// metadata text); `null` for an embedding-only hit.
    pub field: Option<&'static str>,
    /// Up to 200 characters of that field around the first match (`null` for an
    /// embedding-only hit).
    pub snippet: Option<String>,
    /// With `near`: hops from the nearest `near` memory (0 for a `near` memory itself);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<u32>,
    /// Start of the memory's validity (RFC 3339).
    pub valid_from: String,
    /// End of its validity (RFC 3339); `null`: still valid.
    pub valid_to: Option<String>,
    /// With `include_history`: whether the memory is valid now; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<bool>,
    /// Its staleness flag (`null` when not stale).
    pub stale: Option<crate::time::StaleView>,
}

/// Re-ranking by time and importance (both off by default): a hit's score is multiplied
/// by `2^(-age / half_life)` (age = the reference time - `valid_from`, at least 0) and by
/// `1 - importance_weight + importance_weight × importance`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rerank {
    /// `as_of`, or now.
    pub reference_ms: u64,
    /// Half-life of the recency factor, in ms.
    pub half_life_ms: Option<f64>,
    /// Weight of importance, 0-1.
    pub importance_weight: Option<f64>,
}

impl Rerank {
    /// Whether anything is re-ranked.
    pub fn is_on(&self) -> bool {
        self.half_life_ms.is_some() || self.importance_weight.is_some()
    }

    /// The factor for a memory valid from `valid_from` with `importance`.
    pub fn factor(&self, valid_from: u64, importance: f32) -> f64 {
        let mut f = 1.0;
        if let Some(h) = self.half_life_ms {
            #[allow(clippy::cast_precision_loss, reason = "ages in ms fit f64 closely")]
            let age = self.reference_ms.saturating_sub(valid_from) as f64;
            f *= (-age / h).exp2();
        }
        if let Some(w) = self.importance_weight {
            f *= 1.0 - w + w * f64::from(importance.clamp(0.0, 1.0));
        }
        f
    }
}

/// Milliseconds in a day.
const DAY_MS: f64 = 86_400_000.0;

/// What `memory_search` returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchResult {
    /// Hits, best first.
    pub results: Vec<SearchHit>,
    /// True when `limit` (or the scan cap) cut the list.
    pub truncated: bool,
}

/// The field that matched best and a snippet of it.
pub type Matched = (TextField, String);

/// One entry of a ranked list: node, score, and for text hits the field and snippet.
#[derive(Clone, Debug)]
pub struct Ranked {
    /// The node.
    pub node: NodeId,
    /// The list's own score.
    pub score: f64,
    /// Field and snippet (text lists only).
    pub matched: Option<Matched>,
}

/// `memory_search`.
///
/// # Errors
/// Invalid arguments (no query text and no embedding, oversized query, limit outside 1–50,
/// bad offset, filter or embedding, unknown `near` ids, `max_hops` outside 1–6);
/// storage errors.
pub fn memory_search(snap: &Snapshot, req: &SearchRequest) -> Result<SearchResult, ToolError> {
    memory_search_in(snap, &mut Scratch::new(), req)
}

/// [`memory_search`] with the caller's traversal scratch (used only with `near`).
///
/// # Errors
/// As [`memory_search`].
pub fn memory_search_in(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &SearchRequest,
) -> Result<SearchResult, ToolError> {
    let limit = check_range("limit", req.limit.unwrap_or(10), 1, 50)?;
    let offset = check_range("offset", req.offset.unwrap_or(0), 0, OFFSET_MAX)?;
    if req.query.len() > QUERY_BYTES_MAX {
        return Err(ToolError::invalid_arg(
            "query",
            format!(
                "is {} bytes, the limit is {QUERY_BYTES_MAX}",
                req.query.len()
            ),
        ));
    }
    let query_embedding = match &req.embedding {
        Some(e) => Some(check_embedding("embedding", e)?),
        None => None,
    };
    let has_text = !req.query.trim().is_empty();
    if !has_text && query_embedding.is_none() {
        return Err(ToolError::invalid_arg(
            "query",
            "must contain a word (or give an `embedding`)",
        ));
    }
    let now = crate::time::now_ms();
    let as_of = crate::time::opt_time("as_of", req.as_of.as_deref())?;
    // The moment the search sees: `as_of`, else now unless the whole history is asked for.
    let at = as_of.or((!req.include_history).then_some(now));
    let rerank = rerank_of(req, as_of.unwrap_or(now))?;
    let mut filter = filter_of(req)?;
    if let Some(t) = at {
        filter = filter.valid_at(t);
    }
    let hops = match &req.near {
        Some(near) => {
            let max_hops = check_range(
                "max_hops",
                req.max_hops.unwrap_or(NEAR_HOPS_DEFAULT),
                1,
                NEAR_HOPS_MAX,
            )?;
            let hops = near_hops(
                snap,
                scratch,
                near,
                u32::try_from(max_hops).unwrap_or(2),
                req.edge_types.as_deref(),
                at,
            )?;
            filter = filter.nodes(hops.keys().copied());
            Some(hops)
        }
        None if req.max_hops.is_some() || req.edge_types.is_some() => {
            let name = if req.max_hops.is_some() {
                "max_hops"
            } else {
                "edge_types"
            };
            return Err(ToolError::invalid_arg(
                name,
                "needs `near` (the ids to search near)",
            ));
        }
        None => None,
    };
    // Both small (limit ≤ 50, offset ≤ 1000), so they fit any usize.
    let (limit, offset) = (
        usize::try_from(limit).unwrap_or(50),
        usize::try_from(offset).unwrap_or(0),
    );
    // One more than asked tells whether the list was cut.
    let want = offset + limit + 1;
    let mut truncated = false;
    let text = if has_text {
        // Fusion needs both lists deeper than the page: a memory ranked low by words but
        // high by meaning must still be in the text list to be counted twice.
        let depth = if query_embedding.is_some() || rerank.is_on() {
            want.max(FUSION_DEPTH_MIN)
        } else {
            want
        };
        text_ranked(snap, &req.query, depth, &filter)?
    } else {
        Vec::new()
    };
    // Re-ranking picks from a deeper pool than the page.
    let pool = if rerank.is_on() {
        want.max(FUSION_DEPTH_MIN)
    } else {
        want
    };
    let hits = fuse(
        snap,
        &text,
        query_embedding.as_deref(),
        &filter,
        hops.as_ref(),
        pool,
        &mut truncated,
    )?;
    let mut hits = finish(
        snap,
        hits,
        &rerank,
        req.include_history.then_some(now),
        want,
    )?;
    if hits.len() > offset + limit {
        truncated = true;
    }
    hits.truncate(offset + limit);
    let hits = hits.split_off(offset.min(hits.len()));
    Ok(SearchResult {
        results: hits,
        truncated,
    })
}

/// The re-ranking a search asks for (recency half-life, importance weight), checked;
/// recency is measured back from `reference_ms`.
fn rerank_of(req: &SearchRequest, reference_ms: u64) -> Result<Rerank, ToolError> {
    Ok(Rerank {
        reference_ms,
        half_life_ms: match req.recency_half_life_days {
            Some(d) if d.is_finite() && d > 0.0 && d <= 1e9 => Some(d * DAY_MS),
            Some(d) => {
                return Err(ToolError::invalid_arg(
                    "recency_half_life_days",
                    format!("must be a number of days > 0 (at most 1e9), got {d}"),
                ));
            }
            None => None,
        },
        importance_weight: match req.importance_weight {
            Some(w) => Some(check_range("importance_weight", w, 0.0, 1.0)?),
            None => None,
        },
    })
}

/// The engine's text ranking of `query`: the best `depth` memories that pass `filter`.
fn text_ranked(
    snap: &Snapshot,
    query: &str,
    depth: usize,
    filter: &NodeFilter,
) -> Result<Vec<Ranked>, ToolError> {
    let q = TextQuery::new(query.to_string())
        .limit(depth)
        .filter(filter.clone());
    Ok(snap
        .search_text(&q)
        .map_err(|e| engine_error(&e))?
        .into_iter()
        .map(|h| Ranked {
            node: h.node,
            score: h.score,
            matched: Some((h.field, h.snippet)),
        })
        .collect())
}

/// Hops from the nearest of the `near` memories to every memory within `max_hops` of one
/// (edges walked both ways, only `edge_types` when given), by the engine's multi-seed
/// expansion kernel; the `near` memories themselves at 0. At most [`NEAR_REACH_MAX`].
fn near_hops(
    snap: &Snapshot,
    scratch: &mut Scratch,
    near: &[String],
    max_hops: u32,
    edge_types: Option<&[String]>,
    at: Option<u64>,
) -> Result<HashMap<NodeId, u32>, ToolError> {
    if near.is_empty() || near.len() > NEAR_IDS_MAX {
        return Err(ToolError::invalid_arg(
            "near",
            format!("must list 1-{NEAR_IDS_MAX} memory ids, got {}", near.len()),
        ));
    }
    let mut seeds = Vec::with_capacity(near.len());
    let mut unknown: Vec<&str> = Vec::new();
    for key in near {
        match snap.node_id(key) {
            Some(id) => seeds.push(id),
            None => unknown.push(key),
        }
    }
    if !unknown.is_empty() {
        unknown.sort_unstable();
        unknown.dedup();
        return Err(ToolError::invalid_arg(
            "near",
            format!("no memory with the id {}", quoted_list(&unknown)),
        ));
    }
    seeds.sort_unstable();
    seeds.dedup();
    let types = match edge_types {
        Some(names) => snap.type_filter(names),
        None => TypeFilter::All,
    };
    let mut query = ExpandQuery::new(&seeds, max_hops, Direction::Both);
    query.types = &types;
    query.limit = NEAR_REACH_MAX.saturating_sub(seeds.len());
    let out = on_view!(snap, at, |g| kernel::expand(g, scratch, &query));
    let mut hops: HashMap<NodeId, u32> = seeds.iter().map(|&s| (s, 0)).collect();
    for r in out.results {
        hops.entry(r.node).or_insert(r.hop);
    }
    Ok(hops)
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
fn quoted_list(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => q.join(""),
    }
}

/// The node filter of a request.
fn filter_of(req: &SearchRequest) -> Result<NodeFilter, ToolError> {
    let mut f = NodeFilter::any();
    if let Some(t) = &req.memory_type {
        f = f.kinds([t.clone()]);
    }
    if let Some(m) = req.min_importance {
        if !m.is_finite() {
            return Err(ToolError::invalid_arg(
                "min_importance",
                "must be a finite number",
            ));
        }
        // Importance is stored as f32; the nearest f32 compares as the stored values do.
        #[allow(
            clippy::cast_possible_truncation,
            reason = "f32 is the stored precision"
        )]
        let m = m as f32;
        f = f.min_importance(m);
    }
    let after = match &req.created_after {
        Some(s) => Some(parse_time("created_after", s)?),
        None => None,
    };
    let before = match &req.created_before {
        Some(s) => Some(parse_time("created_before", s)?),
        None => None,
    };
    Ok(f.created_between(after, before))
}

/// A candidate during fusion: its score, its cosine similarity (0 when the vector list
/// did not find it) and its text match.
type Fused<'a> = (f64, f64, Option<&'a Matched>);

/// How the two ranked lists are fused when both exist (the default: [`FUSION`]).
///
/// Each list's scores are taken relative to its best hit (text: BM25 / best BM25; vector:
/// cosine / best cosine, negative cosines as 0), so both lie in 0–1 whatever the query;
/// a memory's fused score is `text_weight × text + (1 − text_weight) × vector` (a list
/// that did not find it adds 0). Then the graph step ([`spread_scores`]): every memory
/// also gets `graph_share` × the best fused score among its neighbours (edges of any
/// type, both directions) that are among the `graph_seeds` best fused candidates and
/// have at most [`GRAPH_DEGREE_MAX`] edges; a neighbour that neither list found joins the
/// candidates (if the filters accept it). A memory next to a strong hit (the answer in
/// the turn after the matching question, the decision linked to a matching incident) so
/// rises above weak lone hits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fusion {
    /// Weight of the relative text score (the vector's is `1 - text_weight`).
    pub text_weight: f64,
    /// Share of a neighbour's fused score a memory gets (0: no graph step).
    pub graph_share: f64,
    /// How many of the best fused candidates pass a share to their neighbours.
    pub graph_seeds: usize,
}

/// The fusion `memory_search` uses: chosen on LoCoMo conversations 0–4 and measured on
/// conversations 5–9 (evidence hit@10 0.617 with plain RRF, 0.735 with this; SQLite FTS5
/// 0.621): see `benches/compare/memqa/`.
pub const FUSION: Fusion = Fusion {
    text_weight: 0.75,
    graph_share: 0.6,
    graph_seeds: 5,
};

/// A memory with more edges than this passes no share of its score to its neighbours in
/// the graph step (a hub says little about each neighbour, and this bounds the step's
/// cost to `graph_seeds × GRAPH_DEGREE_MAX` neighbour reads).
pub const GRAPH_DEGREE_MAX: u64 = 16;

/// The fused scores of a text and a vector list (each best first, with its own scores),
/// keyed by node: see [`Fusion`].
pub fn fused_scores(
    text: &[(NodeId, f64)],
    vector: &[(NodeId, f64)],
    f: &Fusion,
) -> HashMap<NodeId, f64> {
    let mut scores: HashMap<NodeId, f64> = HashMap::new();
    for (list, weight) in [(text, f.text_weight), (vector, 1.0 - f.text_weight)] {
        let top = list.first().map_or(1.0, |h| h.1).max(f64::MIN_POSITIVE);
        for &(node, score) in list {
            *scores.entry(node).or_insert(0.0) += weight * score.max(0.0) / top;
        }
    }
    scores
}

/// The graph step on fused scores: the `seeds` best candidates (ties: lower node id) each
/// offer their score to their neighbours (`neighbours(node)`, `None` for a node that
/// passes nothing on); every node gets `share` × the best score offered to it added.
/// Seeds' offers are read from the scores before the step. Nodes that were not scored
/// yet are returned in the second list (the caller decides whether they may join).
pub fn spread_scores(
    scores: &mut HashMap<NodeId, f64>,
    share: f64,
    seeds: usize,
    mut neighbours: impl FnMut(NodeId) -> Option<Vec<NodeId>>,
) -> HashMap<NodeId, f64> {
    let mut order: Vec<(NodeId, f64)> = scores.iter().map(|(&n, &s)| (n, s)).collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    order.truncate(seeds);
    let mut offered: HashMap<NodeId, f64> = HashMap::new();
    for &(node, score) in &order {
        for n in neighbours(node).unwrap_or_default() {
            if n == node {
                continue;
            }
            let best = offered.entry(n).or_insert(0.0);
            if score > *best {
                *best = score;
            }
        }
    }
    let mut joined = HashMap::new();
    for (n, best) in offered {
        match scores.get_mut(&n) {
            Some(s) => *s += share * best,
            None => {
                joined.insert(n, share * best);
            }
        }
    }
    joined
}

/// The score factor of a memory `hop` hops from the nearest `near` id: `1 + 2^-hop`
/// (the near memories themselves ×2, their neighbours ×1.5, two hops ×1.25, ...).
pub fn near_boost(hop: u32) -> f64 {
    1.0 + 0.5f64.powi(i32::try_from(hop).unwrap_or(i32::MAX))
}

/// Combines the ranked lists into hits, best first (at most `want`).
///
/// - Text only: BM25 scores normalized so that the best hit scores 1.
/// - Embedding only: the vector index's cosine similarity (exact for small stores, HNSW
///   for large segments; see the engine's `Snapshot::search_vector`).
/// - Both: [`FUSION`] over the union of the two lists, each taken to a depth of at least
///   [`FUSION_DEPTH_MIN`]: a memory found by words only, or by meaning only, still ranks;
///   one found by both ranks above either; then the graph step. Ties go to the higher
///   cosine, then the key.
/// - With `near` (`hops` given): every score is multiplied by [`near_boost`] of the
///   memory's hop count, which each hit reports.
///
/// An embedding of another dimension than the store's is an error naming both.
fn fuse(
    snap: &Snapshot,
    text: &[Ranked],
    embedding: Option<&[f32]>,
    filter: &NodeFilter,
    hops: Option<&HashMap<NodeId, u32>>,
    want: usize,
    truncated: &mut bool,
) -> Result<Vec<SearchHit>, ToolError> {
    let vector: Vec<(NodeId, f64)> = match embedding {
        Some(q) if snap.embedding_dimension().is_some() => {
            let depth = want.max(FUSION_DEPTH_MIN);
            let query = VectorQuery::new(q.to_vec())
                .limit(depth)
                .filter(filter.clone());
            snap.search_vector(&query)
                .map_err(|e| engine_error(&e))?
                .into_iter()
                // Cosine <= 0: no likeness at all (an unrelated memory, or a zero
                // vector). Such a memory is not a result, so a search never pads its
                // answer with negative-score filler.
                .filter(|h| h.similarity > 0.0)
                .map(|h| (h.node, f64::from(h.similarity)))
                .collect()
        }
        // A store without embeddings has nothing to compare with.
        _ => Vec::new(),
    };
    let mut scored: HashMap<NodeId, Fused<'_>> = HashMap::new();
    let fused = !text.is_empty() && !vector.is_empty();
    if fused {
        let t: Vec<(NodeId, f64)> = text.iter().map(|h| (h.node, h.score)).collect();
        let mut scores = fused_scores(&t, &vector, &FUSION);
        if FUSION.graph_share > 0.0 {
            let joined = spread_scores(&mut scores, FUSION.graph_share, FUSION.graph_seeds, |n| {
                graph_neighbours(snap, n, filter.valid_at)
            });
            for (n, s) in joined {
                if accepts(snap, filter, n)? {
                    scores.insert(n, s);
                }
            }
        }
        for (node, score) in scores {
            scored.insert(node, (score, 0.0, None));
        }
        for h in text {
            if let Some(e) = scored.get_mut(&h.node) {
                e.2 = h.matched.as_ref();
            }
        }
        for &(node, sim) in &vector {
            if let Some(e) = scored.get_mut(&node) {
                e.1 = sim;
            }
        }
    } else if !text.is_empty() {
        let top = text.first().map_or(1.0, |h| h.score).max(f64::MIN_POSITIVE);
        for h in text {
            scored.insert(h.node, (h.score / top, 0.0, h.matched.as_ref()));
        }
    } else {
        for &(node, sim) in &vector {
            scored.insert(node, (sim, sim, None));
        }
    }
    if let Some(hops) = hops {
        for (node, e) in &mut scored {
            e.0 *= near_boost(hops.get(node).copied().unwrap_or(u32::MAX));
        }
    }
    if scored.len() > want {
        *truncated = true;
    }
    let mut ranked: Vec<(NodeId, Fused<'_>)> = scored.into_iter().collect();
    ranked.sort_by(|a, b| {
        b.1.0
            .total_cmp(&a.1.0)
            .then_with(|| b.1.1.total_cmp(&a.1.1))
            .then_with(|| a.0.cmp(&b.0))
    });
    ranked.truncate(want);
    let mut hits = Vec::with_capacity(ranked.len());
    for (id, (score, _, matched)) in ranked {
        let Some(node) = snap.node(id).map_err(|e| engine_error(&e))? else {
            continue;
        };
        let field = matched.map(|(f, _)| match f {
            TextField::Title => "title",
            TextField::Content => "content",
            _ => "observations",
        });
        hits.push(SearchHit {
            id: node.key.clone(),
            title: non_empty(&node.props.title),
            score: if fused { round6(score) } else { round4(score) },
            memory_type: non_empty(&node.props.kind),
            field,
            snippet: matched.map(|(_, s)| s.clone()),
            hops: hops.and_then(|h| h.get(&id).copied()),
            valid_from: crate::rfc3339(node.valid_from),
            valid_to: node.valid_to.map(crate::rfc3339),
            current: None,
            stale: crate::time::stale_of(&node),
        });
    }
    // Equal rounded scores keep the fused order (cosine, then node id).
    Ok(hits)
}

/// Applies the re-ranking (re-sorting and re-rounding when on) and marks `current` when
/// `now` is given (`include_history`).
fn finish(
    snap: &Snapshot,
    mut hits: Vec<SearchHit>,
    rerank: &Rerank,
    now: Option<u64>,
    want: usize,
) -> Result<Vec<SearchHit>, ToolError> {
    if !rerank.is_on() && now.is_none() {
        return Ok(hits);
    }
    let mut nodes = Vec::with_capacity(hits.len());
    for h in &hits {
        nodes.push(
            snap.node_id(&h.id)
                .map(|id| snap.node(id))
                .transpose()
                .map_err(|e| engine_error(&e))?
                .flatten(),
        );
    }
    for (h, node) in hits.iter_mut().zip(&nodes) {
        let Some(node) = node else { continue };
        if let Some(now) = now {
            h.current = Some(node.valid_at(now));
        }
        if rerank.is_on() {
            h.score = round6(h.score * rerank.factor(node.valid_from, node.props.importance));
        }
    }
    if rerank.is_on() {
        // Stable: equal scores keep the order the fusion gave them.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    }
    hits.truncate(want);
    Ok(hits)
}

/// The neighbours a memory passes a share of its score to in the graph step: all, both
/// directions, any edge type; none for a memory with more than [`GRAPH_DEGREE_MAX`] edges.
/// With `at` (the moment the search sees), only the edges valid then count.
fn graph_neighbours(snap: &Snapshot, node: NodeId, at: Option<u64>) -> Option<Vec<NodeId>> {
    let Some(t) = at else {
        if snap.degree(node, Direction::Both, &TypeFilter::All) > GRAPH_DEGREE_MAX {
            return None;
        }
        return Some(
            snap.neighbors(node, Direction::Both, &TypeFilter::All)
                .into_iter()
                .map(|n| n.node)
                .collect(),
        );
    };
    let view = snap.as_of(t);
    let mut out = Vec::new();
    for dir in [hopgraph::EdgeDir::Out, hopgraph::EdgeDir::In] {
        view.for_each_edge(node, dir, &TypeFilter::All, |e| out.push(e.neighbor));
    }
    (u64::try_from(out.len()).unwrap_or(u64::MAX) <= GRAPH_DEGREE_MAX).then_some(out)
}

/// Whether a node that joined through the graph step passes the search's filters.
fn accepts(snap: &Snapshot, filter: &NodeFilter, node: NodeId) -> Result<bool, ToolError> {
    if filter.is_empty() {
        return Ok(snap.node(node).map_err(|e| engine_error(&e))?.is_some());
    }
    Ok(snap
        .node(node)
        .map_err(|e| engine_error(&e))?
        .is_some_and(|n| filter.matches(&n)))
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Fused scores: six decimals keep their order readable.
fn round6(x: f64) -> f64 {
    (x * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::{FUSION, Fusion, fused_scores, near_boost, quoted_list, spread_scores};
    use hopgraph::NodeId;
    use std::collections::HashMap;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn fused_scores_weigh_relative_scores() {
        let f = Fusion {
            text_weight: 0.75,
            graph_share: 0.0,
            graph_seeds: 0,
        };
        let (a, b, c) = (NodeId(1), NodeId(2), NodeId(3));
        // Text: a best (8 -> 1.0), b half; vector: c best (0.5 -> 1.0), a 0.25 -> 0.5.
        let s = fused_scores(&[(a, 8.0), (b, 4.0)], &[(c, 0.5), (a, 0.25)], &f);
        assert!(close(s[&a], 0.75 + 0.25 * 0.5), "{s:?}");
        assert!(close(s[&b], 0.75 * 0.5), "{s:?}");
        assert!(close(s[&c], 0.25), "{s:?}");
        // A negative cosine adds nothing; an empty list adds nothing.
        let s = fused_scores(&[], &[(a, 0.5), (b, -0.2)], &f);
        assert!(close(s[&a], 0.25) && close(s[&b], 0.0), "{s:?}");
        // The default weighs text 3:1, and a memory found by both lists beats either alone.
        assert!(close(FUSION.text_weight, 0.75));
        let s = fused_scores(&[(a, 2.0), (b, 2.0)], &[(b, 0.3), (c, 0.3)], &FUSION);
        assert!(s[&b] > s[&a] && s[&a] > s[&c], "{s:?}");
    }

    #[test]
    fn spread_scores_give_neighbours_a_share_of_the_best_seed() {
        let n = NodeId;
        let mut scores: HashMap<NodeId, f64> =
            [(n(1), 1.0), (n(2), 0.5), (n(3), 0.4), (n(4), 0.1)].into();
        // 1 - 5 - 2 (5 is new), 1 - 4, 3 - 6 (3 is not a seed), 2 passes nothing on (hub).
        let adj = |x: NodeId| match x.0 {
            1 => Some(vec![n(5), n(4), n(1)]),
            2 => None,
            3 => Some(vec![n(6)]),
            _ => Some(vec![n(1)]),
        };
        let joined = spread_scores(&mut scores, 0.5, 2, adj);
        // 4 gets half of 1's score; 1 itself (its own self-loop ignored) gets nothing.
        assert!(close(scores[&n(4)], 0.1 + 0.5), "{scores:?}");
        assert!(close(scores[&n(1)], 1.0) && close(scores[&n(2)], 0.5));
        assert!(close(scores[&n(3)], 0.4), "3 is not among the 2 seeds");
        // 5 joins with half the best offer (1's, not 2's: 2 offered nothing).
        assert_eq!(joined.len(), 1);
        assert!(close(joined[&n(5)], 0.5), "{joined:?}");
        // Offers are read before the step: seeds = all, a chain 1-2-3 adds to each once.
        let mut chain: HashMap<NodeId, f64> = [(n(1), 1.0), (n(2), 1.0), (n(3), 1.0)].into();
        spread_scores(&mut chain, 0.5, 10, |x| {
            Some(match x.0 {
                2 => vec![n(1), n(3)],
                _ => vec![n(2)],
            })
        });
        assert!(chain.values().all(|&v| close(v, 1.5)), "{chain:?}");
    }

    #[test]
    fn near_boost_halves_per_hop() {
        assert!(close(near_boost(0), 2.0));
        assert!(close(near_boost(1), 1.5));
        assert!(close(near_boost(2), 1.25));
        assert!(close(near_boost(u32::MAX), 1.0));
        assert_eq!(quoted_list(&["a"]), "\"a\"");
        assert_eq!(quoted_list(&["a", "b", "c"]), "\"a\", \"b\" or \"c\"");
    }
}
