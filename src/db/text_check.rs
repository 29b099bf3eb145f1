//! The deep check of a segment's text index: rebuilt from the segment's node records with
//! this build's analysis and compared with the stored sections byte for byte.
//!
//! The checksums `verify` reads catch damage to the bytes; they cannot catch an index that
//! was written wrong (a bug in analysis, in one of the three paths that build an index —
//! segment build, bulk load, checkpoint of the delta — or in encoding). Every path writes
//! the same bytes for the same records (a segment's text sections depend on its records
//! only), so a rebuild that differs is such a bug, or damage written with a valid
//! checksum.
//!
//! Only segments of this build's format are compared: an older segment's index was
//! written in an older layout or by an older analysis (format 12 added the stems of
//! names joined by `_` and `-`), which this build does not write. `compact` rewrites
//! those.

use super::segment::Segment;
use crate::error::{Error, Result};
use crate::format::FORMAT_VERSION;
use crate::format::segment::SectionKind as K;
use crate::format::text::TextIndexWriter;
use crate::graph::NodeId;
use crate::text::{Analyzer, doc_terms};

/// How often (in records) [`recheck_text_index`] reports progress.
const PROGRESS_EVERY: usize = 4096;

/// What [`recheck_text_index`] did with one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rechecked {
    /// The rebuilt index equals the stored one; this many records were analysed.
    Equal { records: u64 },
    /// The segment has no text index (it has no node records).
    NoIndex,
    /// Written in format `version`, whose index this build does not write: not compared.
    OlderFormat { version: u32 },
}

/// Rebuilds `seg`'s text index from its records and compares it with the stored one,
/// calling `progress` with the number of records analysed so far. Memory: the rebuilt
/// index, about the size of the stored text sections.
///
/// # Errors
/// `Corrupt` naming the segment file, the first section that differs and where; `Corrupt`
/// for a record that does not decode.
pub(crate) fn recheck_text_index(seg: &Segment, progress: &dyn Fn(u64)) -> Result<Rechecked> {
    let layout = &seg.file.layout;
    if layout.version != FORMAT_VERSION {
        return Ok(Rechecked::OlderFormat {
            version: layout.version,
        });
    }
    if !layout.has_text() {
        return Ok(Rechecked::NoIndex);
    }
    let bytes = seg.file.bytes();
    let ids = layout.u32s(bytes, K::NodeIds);
    // What the writer assumes (each node once); `verify` checks it too, but this check
    // may run without it.
    if !ids.windows(2).all(|w| w[0] < w[1]) {
        return Err(Error::corrupt(
            seg.file.path(),
            layout.entry(K::NodeIds).map_or(0, |e| e.range.start as u64),
            "node ids are not strictly increasing",
        ));
    }
    let analyzer = Analyzer::new();
    let mut writer = TextIndexWriter::default();
    for (i, &id) in ids.iter().enumerate() {
        let node = seg.node(NodeId(id))?.ok_or_else(|| {
            Error::corrupt(
                seg.file.path(),
                0,
                format!("node {id} is listed but has no record"),
            )
        })?;
        let doc = doc_terms(&analyzer, &node);
        writer.add_doc(id, doc.lens, &doc.pairs, doc.terms);
        if i % PROGRESS_EVERY == 0 {
            progress(i as u64);
        }
    }
    progress(ids.len() as u64);
    let rebuilt = writer.finish(ids).map_err(|e| {
        Error::corrupt(
            seg.file.path(),
            0,
            format!("rebuilding the text index: {e}"),
        )
    })?;
    let sections: [(K, &[u8], &[u8]); 6] = [
        (
            K::TextStats,
            &rebuilt.stats,
            layout.bytes(bytes, K::TextStats),
        ),
        (
            K::TextTerms,
            &rebuilt.terms,
            layout.bytes(bytes, K::TextTerms),
        ),
        (
            K::TextPostings,
            &rebuilt.postings,
            layout.bytes(bytes, K::TextPostings),
        ),
        (
            K::TextFieldLens,
            bytemuck::cast_slice(&rebuilt.doc_lens),
            bytemuck::cast_slice(layout.u16s(bytes, K::TextFieldLens)),
        ),
        (
            K::TextPairs,
            bytemuck::cast_slice(&rebuilt.pairs),
            bytemuck::cast_slice(layout.u64s(bytes, K::TextPairs)),
        ),
        (
            K::TextPairSet,
            bytemuck::cast_slice(&rebuilt.pair_set),
            bytemuck::cast_slice(layout.u64s(bytes, K::TextPairSet)),
        ),
    ];
    for (kind, want, got) in sections {
        if want == got {
            continue;
        }
        let start = layout.entry(kind).map_or(0, |e| e.range.start);
        let first = want
            .iter()
            .zip(got)
            .position(|(a, b)| a != b)
            .unwrap_or(want.len().min(got.len()));
        return Err(Error::corrupt(
            seg.file.path(),
            (start + first) as u64,
            format!(
                "text index section {kind:?} is not what this segment's {} records give \
                 ({} bytes stored, {} rebuilt; they first differ at byte {first} of the \
                 section): it was written wrong, or damaged before its checksum was taken; \
                 text search may miss or misrank these records (exporting and importing \
                 the store rebuilds every index)",
                ids.len(),
                got.len(),
                want.len()
            ),
        ));
    }
    Ok(Rechecked::Equal {
        records: ids.len() as u64,
    })
}
