//! `memory_search`: ranked text search over titles, contents and observations.
//!
//! Scoring: the query is split into lowercase words; each word found in the title counts
//! 1, found only in the content or an observation counts 0.5; the text score is the mean
//! over the words (0–1). Only memories with a text score above zero are results. With an
//! `embedding`, its cosine similarity with the memory's embedding of the same dimension is
//! added, so it decides between equal text matches. Ties: lower id first.

use serde::Serialize;
use serde_json::Value;

use super::nodes::check_embedding;
use super::{ToolError, check_range, engine_error, non_empty};
use hopgraph::db::Snapshot;
use hopgraph::model::Node;

/// Longest query accepted, in bytes.
pub const QUERY_BYTES_MAX: usize = 4096;
/// Most query words scored.
pub const QUERY_TERMS_MAX: usize = 32;
/// Most memories examined by one search; the result says `truncated` beyond.
pub const SEARCH_SCAN_MAX: u64 = 1_000_000;

/// A `memory_search` request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchRequest {
    /// The text to find.
    pub query: String,
    /// 1–50, default 10.
    pub limit: Option<u64>,
    /// Only memories of this type (memory type or AIM entityType).
    pub memory_type: Option<String>,
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
    /// Score: text score (0–1) plus cosine similarity when an embedding was given.
    pub score: f64,
    /// Memory type or AIM entityType (`null` when unset).
    #[serde(rename = "type")]
    pub memory_type: Option<String>,
}

/// What `memory_search` returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchResult {
    /// Hits, best first.
    pub results: Vec<SearchHit>,
    /// True when `limit` (or the scan cap) cut the list.
    pub truncated: bool,
}

/// `memory_search`.
///
/// # Errors
/// Invalid arguments (empty or oversized query, limit outside 1–50, bad embedding);
/// storage errors.
pub fn memory_search(snap: &Snapshot, req: &SearchRequest) -> Result<SearchResult, ToolError> {
    let limit = check_range("limit", req.limit.unwrap_or(10), 1, 50)?;
    if req.query.len() > QUERY_BYTES_MAX {
        return Err(ToolError::invalid_arg(
            "query",
            format!(
                "is {} bytes, the limit is {QUERY_BYTES_MAX}",
                req.query.len()
            ),
        ));
    }
    let lowered = req.query.to_lowercase();
    let mut terms: Vec<&str> = Vec::new();
    for t in lowered.split_whitespace() {
        if !terms.contains(&t) && terms.len() < QUERY_TERMS_MAX {
            terms.push(t);
        }
    }
    if terms.is_empty() {
        return Err(ToolError::invalid_arg("query", "must contain a word"));
    }
    let query_embedding = match &req.embedding {
        Some(e) => Some(check_embedding("embedding", e)?),
        None => None,
    };
    let mut hits: Vec<SearchHit> = Vec::new();
    let mut truncated = false;
    for (scanned, id) in snap.node_ids().enumerate() {
        if scanned as u64 >= SEARCH_SCAN_MAX {
            truncated = true;
            break;
        }
        let Some(node) = snap.node(id).map_err(|e| engine_error(&e))? else {
            continue;
        };
        if let Some(t) = &req.memory_type
            && &node.props.kind != t
        {
            continue;
        }
        let text = text_score(&node, &terms);
        if text <= 0.0 {
            continue;
        }
        let sim = match (&query_embedding, &node.props.embedding) {
            (Some(q), Some(e)) if q.len() == e.len() => cosine(q, e),
            _ => 0.0,
        };
        hits.push(SearchHit {
            id: node.key.clone(),
            title: non_empty(&node.props.title),
            score: round4(text + sim),
            memory_type: non_empty(&node.props.kind),
        });
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if hits.len() > limit {
        hits.truncate(limit);
        truncated = true;
    }
    Ok(SearchResult {
        results: hits,
        truncated,
    })
}

fn text_score(node: &Node, terms: &[&str]) -> f64 {
    let title = node.props.title.to_lowercase();
    let content = node.props.content.to_lowercase();
    let observations: Vec<String> = match node.props.props.get("observations") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_lowercase))
            .collect(),
        _ => Vec::new(),
    };
    let mut sum = 0.0;
    for t in terms {
        if title.contains(t) {
            sum += 1.0;
        } else if content.contains(t) || observations.iter().any(|o| o.contains(t)) {
            sum += 0.5;
        }
    }
    sum / terms.len() as f64
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
