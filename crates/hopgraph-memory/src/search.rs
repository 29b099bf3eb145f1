//! `memory_search`: ranked search over titles, contents and observations.
//!
//! The query text is ranked by the engine's full-text index (`Snapshot::search_text`:
//! BM25 over title, content and the string values of metadata such as AIM observations;
//! case-, punctuation- and inflection-insensitive; any word may match, all words and the
//! phrase rank higher); an `embedding` is ranked by the engine's vector index
//! (`Snapshot::search_vector`, cosine). The lists are combined in `fuse`: text alone
//! scores 0–1 (the best hit 1), an embedding alone scores its cosine similarity, and both
//! are fused by reciprocal rank fusion (k = [`RRF_K`]) over their union, so a memory found
//! only by its words or only by its meaning still ranks. Filters (`type`,
//! `min_importance`, `created_after`/`created_before`) apply during the search.

use std::collections::HashMap;

use serde::Serialize;

use super::nodes::check_embedding;
use super::{ToolError, check_range, engine_error, non_empty};
use hopgraph::{NodeFilter, Snapshot};
use hopgraph::{NodeId, TextField, TextQuery, VectorQuery};

/// Longest query accepted, in bytes.
pub const QUERY_BYTES_MAX: usize = hopgraph::limits::TEXT_QUERY_BYTES_MAX;
/// Largest `offset`.
pub const OFFSET_MAX: u64 = 1000;
/// Reciprocal rank fusion's constant (Cormack, Clarke and Büttcher 2009): a hit at rank
/// *r* (from 1) of a list adds `1 / (RRF_K + r)`.
pub const RRF_K: f64 = 60.0;
/// Fewest candidates taken from each ranked list before fusion, so that a memory ranked
/// low by one list but high by the other still reaches the fused top.
pub const FUSION_DEPTH_MIN: usize = 50;

/// A `memory_search` request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchRequest {
    /// The text to find (may be empty when `embedding` is given).
    pub query: String,
    /// 1–50, default 10.
    pub limit: Option<u64>,
    /// Hits to skip (0–1000, default 0), for paging.
    pub offset: Option<u64>,
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
}

/// One search hit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchHit {
    /// Memory id.
    pub id: String,
    /// Title (`null` when unset).
    pub title: Option<String>,
    /// Score: with a query only, the text score (0–1, the best text hit 1); with an
    /// embedding only, cosine similarity; with both, the reciprocal-rank-fusion score
    /// (k = 60) of the two rankings.
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
}

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
/// bad offset, filter or embedding); storage errors.
pub fn memory_search(snap: &Snapshot, req: &SearchRequest) -> Result<SearchResult, ToolError> {
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
    let filter = filter_of(req)?;
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
        let depth = if query_embedding.is_some() {
            want.max(FUSION_DEPTH_MIN)
        } else {
            want
        };
        let q = TextQuery::new(req.query.clone())
            .limit(depth)
            .filter(filter.clone());
        snap.search_text(&q)
            .map_err(|e| engine_error(&e))?
            .into_iter()
            .map(|h| Ranked {
                node: h.node,
                score: h.score,
                matched: Some((h.field, h.snippet)),
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut hits = fuse(
        snap,
        &text,
        query_embedding.as_deref(),
        &filter,
        want,
        &mut truncated,
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

/// Combines the ranked lists into hits, best first (at most `want`).
///
/// - Text only: BM25 scores normalized so that the best hit scores 1.
/// - Embedding only: the vector index's cosine similarity (exact for small stores, HNSW
///   for large segments; see the engine's `Snapshot::search_vector`).
/// - Both: reciprocal rank fusion over the union of the two lists, each taken to a depth of
///   at least [`FUSION_DEPTH_MIN`]: a memory found by words only, or by meaning only,
///   still ranks; one found by both ranks above either. Ties go to the higher cosine, then
///   the key.
///
/// An embedding of another dimension than the store's is an error naming both.
fn fuse(
    snap: &Snapshot,
    text: &[Ranked],
    embedding: Option<&[f32]>,
    filter: &NodeFilter,
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
                .map(|h| (h.node, f64::from(h.similarity)))
                .collect()
        }
        // A store without embeddings has nothing to compare with.
        _ => Vec::new(),
    };
    let mut scored: HashMap<NodeId, Fused<'_>> = HashMap::new();
    let fused = !text.is_empty() && !vector.is_empty();
    if fused {
        for (rank, h) in text.iter().enumerate() {
            let e = scored.entry(h.node).or_insert((0.0, 0.0, None));
            e.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
            e.2 = h.matched.as_ref();
        }
        for (rank, &(node, sim)) in vector.iter().enumerate() {
            let e = scored.entry(node).or_insert((0.0, 0.0, None));
            e.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
            e.1 = sim;
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
        });
    }
    // Equal rounded scores keep the fused order (cosine, then node id).
    Ok(hits)
}

/// Parses an RFC 3339 time (`2025-01-31`, `2025-01-31T12:00:00Z`,
/// `2025-01-31T12:00:00.250+02:00`) into ms since the Unix epoch.
fn parse_time(name: &str, s: &str) -> Result<u64, ToolError> {
    let bad = || ToolError::invalid_arg(name, format!("must be an RFC 3339 time, got {s:?}"));
    let num = |x: &str| -> Result<i64, ToolError> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        x.parse().map_err(|_| bad())
    };
    let (date, time) = match s.split_once(['T', 't', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut d = date.split('-');
    let (y, m, day) = (
        num(d.next().ok_or_else(bad)?)?,
        num(d.next().ok_or_else(bad)?)?,
        num(d.next().ok_or_else(bad)?)?,
    );
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return Err(bad());
    }
    // Days from civil (Howard Hinnant's algorithm).
    let yy = if m <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let mut ms = days * 86_400_000;
    if let Some(t) = time {
        let (clock, zone_ms) = if let Some(c) = t.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else if let Some(at) = t.rfind(['+', '-']) {
            let (c, z) = t.split_at(at);
            let (zh, zm) = z[1..].split_once(':').ok_or_else(bad)?;
            let off = (num(zh)? * 60 + num(zm)?) * 60_000;
            (c, if z.starts_with('-') { -off } else { off })
        } else {
            return Err(bad());
        };
        let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
        let mut p = hms.split(':');
        let (h, mi, sec) = (
            num(p.next().ok_or_else(bad)?)?,
            num(p.next().ok_or_else(bad)?)?,
            num(p.next().ok_or_else(bad)?)?,
        );
        if p.next().is_some() || h > 23 || mi > 59 || sec > 60 {
            return Err(bad());
        }
        let frac_ms = if frac.is_empty() {
            0
        } else {
            let digits: String = frac.chars().chain("000".chars()).take(3).collect();
            num(&digits)?
        };
        ms += ((h * 60 + mi) * 60 + sec) * 1000 + frac_ms - zone_ms;
    }
    u64::try_from(ms).map_err(|_| bad())
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Fused scores are small (at most 2/61); six decimals keep their order readable.
fn round6(x: f64) -> f64 {
    (x * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_parse_like_rfc3339_prints_them() {
        for ms in [0u64, 951_782_400_123, 1_735_689_599_999] {
            assert_eq!(parse_time("t", &crate::rfc3339(ms)).ok(), Some(ms));
        }
        assert_eq!(parse_time("t", "1970-01-02").ok(), Some(86_400_000));
        assert_eq!(parse_time("t", "1970-01-01T02:00:00+02:00").ok(), Some(0));
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2024-01-01T25:00:00Z",
            "2024-01-01T00:00:00",
        ] {
            assert!(parse_time("t", bad).is_err(), "{bad}");
        }
    }
}
