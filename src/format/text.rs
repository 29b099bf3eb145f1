//! The full-text index sections of a segment (codes 30–33): pure bytes ↔ values.
//!
//! ```text
//! TextStats (30)     layout u32 (1), fields u32 (3), docs u64, field_len_total [u64; 3],
//!                    terms u64, postings_len u64
//! TextTerms (31)     an `fst` map: term bytes → byte offset of its postings list in 32
//! TextPostings (32)  per term, in term order, back to back:
//!                      df varint, then df entries of
//!                      node_delta varint (the first: the node id; then id − previous id ≥ 1),
//!                      field_mask varint (bit f: the term occurs in field f, ≠ 0),
//!                      tf varint (≥ 1) per set bit, lowest field first
//! TextDocLens (33)   u32[records × 3]: terms per field of each node record of the segment,
//!                    in record (node id) order
//! ```
//! Fields are 0 title, 1 content, 2 props (see `text::TextField`). Varints are unsigned
//! LEB128 (at most 10 bytes). The four sections are present together or not at all.
//!
//! Decoding is checked: every read is bounds-checked and every count is limited by the
//! bytes left, so no input makes a decoder panic or allocate unboundedly. The one exception
//! is the `fst` crate's map, which may panic on damaged bytes: callers check the sections'
//! crcs before handing the term section to [`TextIndexView::parse`] (the engine does so on
//! the first text search of each segment and in `verify`).

use std::collections::HashMap;

use super::codec::{ByteReader, ByteWriter, DecodeError};

/// Number of indexed fields (title, content, props).
pub const TEXT_FIELDS: usize = 3;
/// Version of the text section layout (inside `TextStats`).
pub const TEXT_LAYOUT_VERSION: u32 = 1;
/// Length of the `TextStats` section.
pub const TEXT_STATS_LEN: usize = 4 + 4 + 8 + 8 * TEXT_FIELDS + 8 + 8;

/// Collection statistics of one segment's text index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextStats {
    /// Documents (node records) indexed.
    pub docs: u64,
    /// Sum of the documents' lengths (terms) per field.
    pub field_len_total: [u64; TEXT_FIELDS],
    /// Distinct terms.
    pub terms: u64,
    /// Bytes of the postings section.
    pub postings_len: u64,
}

impl TextStats {
    /// Encodes the stats section.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = ByteWriter::new();
        w.u32(TEXT_LAYOUT_VERSION);
        w.u32(3); // TEXT_FIELDS
        w.u64(self.docs);
        for t in self.field_len_total {
            w.u64(t);
        }
        w.u64(self.terms);
        w.u64(self.postings_len);
        w.buf
    }

    /// Decodes the stats section.
    ///
    /// # Errors
    /// A wrong length, layout version or field count.
    pub fn decode(buf: &[u8]) -> Result<TextStats, DecodeError> {
        if buf.len() != TEXT_STATS_LEN {
            return Err(DecodeError::new(
                0,
                format!(
                    "text stats are {} bytes, expected {TEXT_STATS_LEN}",
                    buf.len()
                ),
            ));
        }
        let mut r = ByteReader::new(buf);
        let layout = r.u32("text layout")?;
        if layout != TEXT_LAYOUT_VERSION {
            return Err(DecodeError::new(0, format!("text layout {layout} unknown")));
        }
        let fields = r.u32("text fields")?;
        if fields as usize != TEXT_FIELDS {
            return Err(DecodeError::new(
                4,
                format!("{fields} text fields, expected 3"),
            ));
        }
        let docs = r.u64("text docs")?;
        let mut field_len_total = [0u64; TEXT_FIELDS];
        for t in &mut field_len_total {
            *t = r.u64("field length total")?;
        }
        Ok(TextStats {
            docs,
            field_len_total,
            terms: r.u64("text terms")?,
            postings_len: r.u64("postings length")?,
        })
    }
}

/// Appends `v` as an unsigned LEB128 varint.
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v.to_le_bytes()[0] & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.push(v.to_le_bytes()[0]);
}

/// Reads an unsigned LEB128 varint at `*pos`, advancing it.
///
/// # Errors
/// Truncated input or a varint longer than 10 bytes / above `u64::MAX`.
pub fn get_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let Some(&b) = bytes.get(*pos) else {
            return Err(DecodeError::new(*pos, "truncated varint"));
        };
        *pos += 1;
        let part = u64::from(b & 0x7f);
        if shift == 63 && part > 1 {
            return Err(DecodeError::new(*pos - 1, "varint overflows u64"));
        }
        v |= part << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(DecodeError::new(*pos, "varint longer than 10 bytes"))
}

/// One entry of a postings list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Posting {
    /// The node (document).
    pub node: u32,
    /// Occurrences per field.
    pub tf: [u32; TEXT_FIELDS],
}

/// Appends one postings list (entries sorted by node id, distinct, each with some tf > 0).
pub fn encode_postings(buf: &mut Vec<u8>, postings: &[Posting]) {
    put_varint(buf, postings.len() as u64);
    let mut prev = None;
    for p in postings {
        put_varint(buf, u64::from(p.node - prev.unwrap_or(0)));
        prev = Some(p.node);
        let mut mask = 0u64;
        for (f, &tf) in p.tf.iter().enumerate() {
            if tf > 0 {
                mask |= 1 << f;
            }
        }
        put_varint(buf, mask);
        for &tf in p.tf.iter().filter(|&&tf| tf > 0) {
            put_varint(buf, u64::from(tf));
        }
    }
}

/// A checked reader of one postings list.
#[derive(Clone, Debug)]
pub struct PostingsReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    left: u64,
    prev: Option<u32>,
    df: u64,
}

impl<'a> PostingsReader<'a> {
    /// The list starting at `offset` of the postings section `bytes`.
    ///
    /// # Errors
    /// An offset out of bounds, or a document count the remaining bytes cannot hold
    /// (each entry takes at least 3 bytes).
    pub fn new(bytes: &'a [u8], offset: u64) -> Result<PostingsReader<'a>, DecodeError> {
        let mut pos = usize::try_from(offset)
            .ok()
            .filter(|&p| p < bytes.len())
            .ok_or_else(|| {
                DecodeError::new(0, format!("postings offset {offset} out of bounds"))
            })?;
        let at = pos;
        let df = get_varint(bytes, &mut pos)?;
        if df == 0 || df > (bytes.len() - pos) as u64 / 3 {
            return Err(DecodeError::new(
                at,
                format!("postings count {df} is impossible"),
            ));
        }
        Ok(PostingsReader {
            bytes,
            pos,
            left: df,
            prev: None,
            df,
        })
    }

    /// The number of documents in the list.
    pub fn df(&self) -> u64 {
        self.df
    }

    /// Byte offset just past the entries read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The next entry, `None` at the end of the list.
    ///
    /// # Errors
    /// Truncated or malformed entries: node ids not increasing or beyond `u32`, an empty
    /// field mask or a bit beyond the fields, a zero or oversized tf.
    pub fn next_posting(&mut self) -> Result<Option<Posting>, DecodeError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.pos;
        let delta = get_varint(self.bytes, &mut self.pos)?;
        let node = match self.prev {
            None => u32::try_from(delta).ok(),
            Some(p) if delta > 0 => u64::from(p)
                .checked_add(delta)
                .and_then(|n| u32::try_from(n).ok()),
            Some(_) => None,
        }
        .ok_or_else(|| DecodeError::new(at, "postings node ids not increasing"))?;
        self.prev = Some(node);
        let at = self.pos;
        let mask = get_varint(self.bytes, &mut self.pos)?;
        if mask == 0 || mask >> TEXT_FIELDS != 0 {
            return Err(DecodeError::new(
                at,
                format!("field mask {mask:#x} is invalid"),
            ));
        }
        let mut tf = [0u32; TEXT_FIELDS];
        for (f, slot) in tf.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                let at = self.pos;
                let v = get_varint(self.bytes, &mut self.pos)?;
                *slot = u32::try_from(v)
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(|| DecodeError::new(at, format!("term frequency {v}")))?;
            }
        }
        Ok(Some(Posting { node, tf }))
    }
}

/// The encoded text sections of one segment.
#[derive(Clone, Debug, Default)]
pub struct TextSections {
    /// `TextStats`.
    pub stats: Vec<u8>,
    /// `TextTerms` (fst).
    pub terms: Vec<u8>,
    /// `TextPostings`.
    pub postings: Vec<u8>,
    /// `TextDocLens`.
    pub doc_lens: Vec<u32>,
}

/// Gathers analyzed documents and encodes the text sections.
#[derive(Debug, Default)]
pub struct TextIndexWriter {
    terms: HashMap<Vec<u8>, Vec<Posting>>,
    docs: Vec<(u32, [u32; TEXT_FIELDS])>,
}

impl TextIndexWriter {
    /// An empty writer.
    #[cfg(any(test, feature = "internals"))]
    pub fn new() -> TextIndexWriter {
        TextIndexWriter::default()
    }

    /// Adds document `node` (each node at most once) with its field lengths and its terms
    /// with their per-field frequencies.
    pub fn add_doc(
        &mut self,
        node: u32,
        lens: [u32; TEXT_FIELDS],
        terms: impl IntoIterator<Item = (Vec<u8>, [u32; TEXT_FIELDS])>,
    ) {
        self.docs.push((node, lens));
        for (term, tf) in terms {
            self.terms
                .entry(term)
                .or_default()
                .push(Posting { node, tf });
        }
    }

    /// Adds document `node` (each node at most once) by its field lengths only; its terms
    /// come through [`TextIndexWriter::add_term`] (an index built term by term, such as
    /// the in-memory delta's at a checkpoint).
    pub fn add_doc_lens(&mut self, node: u32, lens: [u32; TEXT_FIELDS]) {
        self.docs.push((node, lens));
    }

    /// Adds `term`'s postings: the documents holding it with their per-field frequencies,
    /// in any order (`finish` sorts them).
    pub fn add_term(
        &mut self,
        term: &[u8],
        postings: impl IntoIterator<Item = (u32, [u32; TEXT_FIELDS])>,
    ) {
        let list = self.terms.entry(term.to_vec()).or_default();
        list.extend(postings.into_iter().map(|(node, tf)| Posting { node, tf }));
    }

    /// Documents added so far.
    #[cfg(any(test, feature = "internals"))]
    pub fn docs(&self) -> usize {
        self.docs.len()
    }

    /// Encodes the sections. Documents come out in node id order; `records` must be the
    /// node ids of the segment's records (increasing) and every added document one of them.
    ///
    /// # Errors
    /// When the added documents are not exactly `records`, or the fst cannot be built.
    pub fn finish(mut self, records: &[u32]) -> Result<TextSections, String> {
        self.docs.sort_unstable_by_key(|d| d.0);
        if self.docs.len() != records.len() || self.docs.iter().zip(records).any(|(d, &r)| d.0 != r)
        {
            return Err("text documents do not match the segment's node records".into());
        }
        let mut stats = TextStats {
            docs: self.docs.len() as u64,
            terms: self.terms.len() as u64,
            ..TextStats::default()
        };
        let mut doc_lens = Vec::with_capacity(self.docs.len() * TEXT_FIELDS);
        for (_, lens) in &self.docs {
            for (f, &l) in lens.iter().enumerate() {
                stats.field_len_total[f] += u64::from(l);
                doc_lens.push(l);
            }
        }
        let mut terms: Vec<(Vec<u8>, Vec<Posting>)> = self.terms.into_iter().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut postings = Vec::new();
        let mut builder = fst::MapBuilder::memory();
        for (term, mut list) in terms {
            list.sort_unstable_by_key(|p| p.node);
            builder
                .insert(&term, postings.len() as u64)
                .map_err(|e| format!("text term index: {e}"))?;
            encode_postings(&mut postings, &list);
        }
        stats.postings_len = postings.len() as u64;
        let terms = builder
            .into_inner()
            .map_err(|e| format!("text term index: {e}"))?;
        Ok(TextSections {
            stats: stats.encode(),
            terms,
            postings,
            doc_lens,
        })
    }
}

/// A structurally checked view of a segment's text sections.
pub struct TextIndexView<'a> {
    /// Collection statistics.
    pub stats: TextStats,
    terms: fst::Map<&'a [u8]>,
    postings: &'a [u8],
    doc_lens: &'a [u32],
}

impl std::fmt::Debug for TextIndexView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndexView")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<'a> TextIndexView<'a> {
    /// Checks the sections' shapes against each other and `records` (the segment's node
    /// record count). O(1). The caller has checked the crc of `terms` (see the module doc).
    ///
    /// # Errors
    /// Inconsistent sizes or counts, a damaged fst header.
    pub fn parse(
        stats: &[u8],
        terms: &'a [u8],
        postings: &'a [u8],
        doc_lens: &'a [u32],
        records: u64,
    ) -> Result<TextIndexView<'a>, DecodeError> {
        let stats = TextStats::decode(stats)?;
        if stats.docs != records
            || doc_lens.len() as u64 != records.saturating_mul(TEXT_FIELDS as u64)
            || stats.postings_len != postings.len() as u64
        {
            return Err(DecodeError::new(
                0,
                format!(
                    "text sections disagree: {} docs, {} records, {} lengths, postings {} of {} bytes",
                    stats.docs,
                    records,
                    doc_lens.len(),
                    postings.len(),
                    stats.postings_len
                ),
            ));
        }
        let terms = fst::Map::new(terms)
            .map_err(|e| DecodeError::new(0, format!("text term index: {e}")))?;
        if terms.len() as u64 != stats.terms {
            return Err(DecodeError::new(
                0,
                format!("{} terms, the stats say {}", terms.len(), stats.terms),
            ));
        }
        Ok(TextIndexView {
            stats,
            terms,
            postings,
            doc_lens,
        })
    }

    /// The postings list of `term`, if indexed.
    ///
    /// # Errors
    /// A damaged list head.
    pub fn postings(&self, term: &[u8]) -> Result<Option<PostingsReader<'a>>, DecodeError> {
        match self.terms.get(term) {
            Some(offset) => PostingsReader::new(self.postings, offset).map(Some),
            None => Ok(None),
        }
    }

    /// Field lengths of record `index`.
    pub fn doc_len(&self, index: usize) -> [u32; TEXT_FIELDS] {
        let mut out = [0u32; TEXT_FIELDS];
        let at = index.saturating_mul(TEXT_FIELDS);
        if let Some(s) = self.doc_lens.get(at..at + TEXT_FIELDS) {
            out.copy_from_slice(s);
        }
        out
    }

    /// Full check, O(sections): the fst's own checksum, terms in order with postings lists
    /// that tile the postings section exactly in term order, every list decodes, every
    /// node id is one of `records` (the segment's node ids, increasing), and the field
    /// totals match the document lengths.
    ///
    /// # Errors
    /// The first inconsistency found.
    pub fn verify(&self, records: &[u32]) -> Result<(), DecodeError> {
        self.terms
            .as_fst()
            .verify()
            .map_err(|e| DecodeError::new(0, format!("text term index: {e}")))?;
        let mut totals = [0u64; TEXT_FIELDS];
        for (i, &l) in self.doc_lens.iter().enumerate() {
            totals[i % TEXT_FIELDS] += u64::from(l);
        }
        if totals != self.stats.field_len_total {
            return Err(DecodeError::new(0, "text field length totals disagree"));
        }
        let mut stream = fst::IntoStreamer::into_stream(&self.terms);
        let mut expect_at = 0usize;
        while let Some((term, offset)) = fst::Streamer::next(&mut stream) {
            if term.is_empty() {
                return Err(DecodeError::new(0, "empty text term"));
            }
            if offset != expect_at as u64 {
                return Err(DecodeError::new(
                    expect_at,
                    format!("postings of a term start at {offset}, expected {expect_at}"),
                ));
            }
            let mut r = PostingsReader::new(self.postings, offset)?;
            while let Some(p) = r.next_posting()? {
                if records.binary_search(&p.node).is_err() {
                    return Err(DecodeError::new(
                        r.pos(),
                        format!("postings name node {}, which has no record here", p.node),
                    ));
                }
            }
            expect_at = r.pos();
        }
        if expect_at != self.postings.len() {
            return Err(DecodeError::new(
                expect_at,
                "trailing bytes after the last postings list",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_garbage() {
        let mut buf = Vec::new();
        let values = [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        for v in values {
            put_varint(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_varint(&buf, &mut pos), Ok(v));
        }
        assert_eq!(pos, buf.len());
        assert!(get_varint(&[0x80], &mut 0).is_err());
        assert!(get_varint(&[0xff; 11], &mut 0).is_err());
        assert!(
            get_varint(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                &mut 0
            )
            .is_err()
        );
    }

    #[test]
    fn sections_round_trip_and_verify() {
        let mut w = TextIndexWriter::new();
        w.add_doc(
            7,
            [1, 2, 0],
            vec![(b"=a".to_vec(), [1, 0, 0]), (b"=b".to_vec(), [0, 2, 0])],
        );
        w.add_doc(3, [0, 1, 1], vec![(b"=a".to_vec(), [0, 1, 1])]);
        let s = w.finish(&[3, 7]).expect("docs match records");
        let v = TextIndexView::parse(&s.stats, &s.terms, &s.postings, &s.doc_lens, 2)
            .expect("fresh sections parse");
        v.verify(&[3, 7]).expect("fresh sections verify");
        assert!(v.verify(&[3]).is_err());
        let mut r = v.postings(b"=a").expect("ok").expect("indexed");
        assert_eq!(r.df(), 2);
        assert_eq!(
            r.next_posting(),
            Ok(Some(Posting {
                node: 3,
                tf: [0, 1, 1]
            }))
        );
        assert_eq!(
            r.next_posting(),
            Ok(Some(Posting {
                node: 7,
                tf: [1, 0, 0]
            }))
        );
        assert_eq!(r.next_posting(), Ok(None));
        assert!(v.postings(b"=zz").expect("ok").is_none());
        assert_eq!(v.doc_len(1), [1, 2, 0]);
        assert_eq!(v.stats.field_len_total, [1, 3, 1]);
        // Wrong record count or a wrong document set is refused.
        assert!(TextIndexView::parse(&s.stats, &s.terms, &s.postings, &s.doc_lens, 3).is_err());
        let mut w = TextIndexWriter::new();
        w.add_doc(1, [0; 3], vec![]);
        assert!(w.finish(&[2]).is_err());
    }

    /// Damaged postings bytes give errors, never panics (a small exhaustive bit-flip run;
    /// the fuzz target `text_sections` covers arbitrary bytes).
    #[test]
    fn damaged_postings_are_errors() {
        let mut buf = Vec::new();
        encode_postings(
            &mut buf,
            &[
                Posting {
                    node: 5,
                    tf: [1, 0, 3],
                },
                Posting {
                    node: 9,
                    tf: [0, 2, 0],
                },
            ],
        );
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[i] ^= 1 << bit;
                if let Ok(mut r) = PostingsReader::new(&b, 0) {
                    while let Ok(Some(_)) = r.next_posting() {}
                }
            }
        }
    }
}
