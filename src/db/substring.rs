//! Candidates for case-insensitive substring search ([`Snapshot::substring_candidates`]).
//!
//! A scan that lowercases every node's texts and looks for the query in them costs
//! O(total text) per query. Here each segment keeps, built once on first use and shared by
//! every snapshot that holds the segment, the distinct *words* of its nodes' texts: a
//! text (one of [`texts`]) is lowercased whole with `str::to_lowercase` (as the scan does,
//! so context-dependent mappings such as the Greek final sigma agree), then cut into
//! maximal runs of alphanumeric characters (`char::is_alphanumeric`). Each word lists the
//! nodes whose texts hold it.
//!
//! **Why the candidates are a superset.** Let `q` be the lowercased query and `r` any of
//! its runs of alphanumeric characters. If a lowercased text contains `q`, it contains
//! `r`; since every character of `r` is alphanumeric, that occurrence of `r` lies inside
//! one maximal alphanumeric run of the text, i.e. inside one word `w`, so `w` contains
//! `r`. So a matching node is among the nodes of the words containing `r`, for every run
//! `r` of `q`: the candidates are the intersection, over the runs [`query_runs`] picks
//! (the longest, and up to two more of at least [`RUN_BYTES_MIN`] bytes), of the nodes of
//! every word containing the run, in
//! every segment, plus every node of the delta (not indexed), minus the nodes that are
//! not live.
//! A node superseded by a newer segment or the delta is a candidate through its newer
//! version's texts (and maybe through its old ones too: a superset either way). A query
//! with no alphanumeric character gives no `r`: the caller scans.
//!
//! [`Snapshot::substring_candidates`]: super::Snapshot::substring_candidates

use std::collections::HashMap;

use super::segment::Segment;
use crate::error::Result;
use crate::graph::NodeId;
use crate::model::Node;

/// The texts of a node that substring search covers, each lowercased on its own: the key,
/// kind, title, content, status, and every string value and every string item of an
/// array value of its props (top level).
pub fn texts(node: &Node) -> impl Iterator<Item = &str> {
    let p = &node.props;
    let fixed = [
        node.key.as_str(),
        p.kind.as_str(),
        p.title.as_str(),
        p.content.as_str(),
        p.status.as_str(),
    ];
    let props = p.props.values().flat_map(|v| {
        let (one, many) = match v {
            serde_json::Value::String(s) => (Some(s.as_str()), None),
            serde_json::Value::Array(a) => (None, Some(a.iter().filter_map(|x| x.as_str()))),
            _ => (None, None),
        };
        one.into_iter().chain(many.into_iter().flatten())
    });
    fixed.into_iter().chain(props)
}

/// The lowercase words of `text` (maximal runs of alphanumeric characters of
/// `text.to_lowercase()`), passed to `f`.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let lower = text.to_lowercase();
    for w in lower.split(|c: char| !c.is_alphanumeric()) {
        if !w.is_empty() {
            f(w);
        }
    }
}

/// Most runs of a query looked up (the longest ones): each costs a pass over every
/// segment's words.
pub const QUERY_RUNS_MAX: usize = 3;
/// Shortest run looked up besides the longest one.
pub const RUN_BYTES_MIN: usize = 3;

/// The distinct runs of alphanumeric characters of `query.to_lowercase()` to look up:
/// the longest (the first of the longest), then the next longest of at least
/// [`RUN_BYTES_MIN`] bytes, at most [`QUERY_RUNS_MAX`] in all; empty when it has none.
/// (A shorter run is in too many words to narrow the candidates for its cost.)
pub fn query_runs(query: &str) -> Vec<String> {
    let lower = query.to_lowercase();
    let mut runs: Vec<&str> = Vec::new();
    for w in lower.split(|c: char| !c.is_alphanumeric()) {
        if !w.is_empty() && !runs.contains(&w) {
            runs.push(w);
        }
    }
    runs.sort_by_key(|w| std::cmp::Reverse(w.len()));
    let mut kept = 0;
    runs.retain(|w| {
        kept += 1;
        kept == 1 || (kept <= QUERY_RUNS_MAX && w.len() >= RUN_BYTES_MIN)
    });
    runs.into_iter().map(str::to_owned).collect()
}

/// One segment's distinct words, each with the increasing ids of the nodes whose texts
/// hold it. The words are stored end to end in one string, each followed by `\n` (never
/// part of a word), so a query is one substring search over that string rather than one
/// per word.
#[derive(Debug, Default)]
pub struct WordIndex {
    /// Every node is a candidate for every query (the fallback of [`Self::everything`]).
    all: bool,
    /// The words, each followed by `\n`.
    text: String,
    /// Byte offset of each word in `text`, increasing.
    starts: Vec<u32>,
    /// `ids[ends[i - 1]..ends[i]]` (from 0 for the first) are word `i`'s nodes.
    ends: Vec<u32>,
    ids: Vec<u32>,
}

impl WordIndex {
    /// Reads every node record of `seg` once.
    ///
    /// # Errors
    /// `Corrupt` when a record does not decode.
    pub fn build(seg: &Segment) -> Result<WordIndex> {
        let mut map: HashMap<Box<str>, Vec<u32>, foldhash::fast::RandomState> =
            HashMap::with_hasher(foldhash::fast::RandomState::default());
        for &id in seg.node_ids() {
            let Some(node) = seg.node(NodeId(id))? else {
                continue;
            };
            for text in texts(&node) {
                for_each_word(text, |w| {
                    if let Some(ids) = map.get_mut(w) {
                        // Ids arrive in increasing order: a repeat is the last one.
                        if ids.last() != Some(&id) {
                            ids.push(id);
                        }
                    } else {
                        map.insert(w.into(), vec![id]);
                    }
                });
            }
        }
        let mut idx = WordIndex::default();
        let mut total = 0usize;
        for (w, ids) in map {
            // A segment holds at most u32::MAX records of bounded size; the offsets of
            // its words' text stay below 4 GiB in any segment this engine writes, and a
            // larger one would only make the index useless, not wrong: stop indexing.
            let (Ok(start), Ok(end)) = (
                u32::try_from(idx.text.len()),
                u32::try_from(total + ids.len()),
            ) else {
                return Ok(WordIndex::everything(seg));
            };
            total += ids.len();
            idx.starts.push(start);
            idx.text.push_str(&w);
            idx.text.push('\n');
            idx.ids.extend_from_slice(&ids);
            idx.ends.push(end);
        }
        Ok(idx)
    }

    /// An index that gives every node of `seg` as a candidate for every query.
    fn everything(seg: &Segment) -> WordIndex {
        let ids = seg.node_ids().to_vec();
        WordIndex {
            all: true,
            ids,
            ..WordIndex::default()
        }
    }

    /// Adds to `out` the nodes of every word that contains `run`.
    pub fn collect(&self, run: &str, out: &mut Vec<u32>) {
        if self.all {
            out.extend_from_slice(&self.ids);
            return;
        }
        let mut last = usize::MAX;
        for (pos, _) in self.text.match_indices(run) {
            let pos = u32::try_from(pos).unwrap_or(u32::MAX);
            // The word the match starts in (a match never crosses a `\n`).
            let w = self.starts.partition_point(|&s| s <= pos).saturating_sub(1);
            if w == last {
                continue;
            }
            last = w;
            let from = if w == 0 { 0 } else { self.ends[w - 1] as usize };
            let to = self.ends[w] as usize;
            out.extend_from_slice(&self.ids[from..to]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_words() {
        assert_eq!(query_runs("Hello, World!"), ["hello", "world"]);
        assert_eq!(query_runs("a bc a"), ["bc"]);
        assert_eq!(query_runs("abc de fgh ijkl mnop"), ["ijkl", "mnop", "abc"]);
        assert!(query_runs(" -- ").is_empty());
        assert!(query_runs("").is_empty());
        let mut words = Vec::new();
        for_each_word("Rust-lang's CPU: ΟΔΟΣ", |w| words.push(w.to_owned()));
        assert_eq!(words, ["rust", "lang", "s", "cpu", &"ΟΔΟΣ".to_lowercase()]);
    }
}
