//! The text index sections seen from a segment layout: locating them and checking them.

use super::{SectionKind as K, SegmentLayout, TEXT_LENS_SECTIONS, TEXT_SECTIONS};
use crate::format::codec::DecodeError;
use crate::format::text::{FieldLens, TextIndexView};

impl SegmentLayout {
    /// Whether the segment has a text index (sections 30–32 and 33 or 34, 35 from
    /// version 11 and 36 from version 13; `parse` checked they come together).
    pub fn has_text(&self) -> bool {
        self.entry(K::TextStats).is_some()
    }

    /// Checks the crcs of the text sections: what must hold before the term dictionary is
    /// handed to `fst` (see `format::text`). O(text sections).
    ///
    /// # Errors
    /// The first section whose bytes do not match.
    pub fn verify_text_checksums(&self, bytes: &[u8]) -> Result<(), DecodeError> {
        for kind in TEXT_SECTIONS
            .iter()
            .chain(TEXT_LENS_SECTIONS)
            .chain(&[K::TextPairs, K::TextPairSet])
        {
            if self.entry(*kind).is_some() {
                self.verify_section(bytes, *kind)?;
            }
        }
        Ok(())
    }

    /// The text index view, `None` when the segment has none. O(1). The caller has checked
    /// the text sections' crcs ([`SegmentLayout::verify_text_checksums`]).
    ///
    /// # Errors
    /// Sections that disagree with each other or the summary.
    pub fn text_view<'a>(&self, bytes: &'a [u8]) -> Result<Option<TextIndexView<'a>>, DecodeError> {
        if !self.has_text() {
            return Ok(None);
        }
        let view = TextIndexView::parse(
            self.bytes(bytes, K::TextStats),
            self.bytes(bytes, K::TextTerms),
            self.bytes(bytes, K::TextPostings),
            if self.entry(K::TextFieldLens).is_some() {
                FieldLens::Narrow(self.u16s(bytes, K::TextFieldLens))
            } else {
                FieldLens::Wide(self.u32s(bytes, K::TextDocLens))
            },
            self.summary.node_records,
        )
        .map_err(|e| self.err_at(K::TextStats, format!("text index: {}", e.what)))?;
        if self.entry(K::TextPairs).is_none() {
            return Ok(Some(view));
        }
        let view = view
            .with_pairs(self.u64s(bytes, K::TextPairs))
            .map_err(|e| self.err_at(K::TextPairs, format!("text index: {}", e.what)))?;
        if self.entry(K::TextPairSet).is_none() {
            return Ok(Some(view));
        }
        view.with_pair_set(self.u64s(bytes, K::TextPairSet))
            .map(Some)
            .map_err(|e| self.err_at(K::TextPairSet, format!("text index: {}", e.what)))
    }

    /// Full check of the text index (after every section's crc was checked): see
    /// `TextIndexView::verify`. O(text sections).
    ///
    /// # Errors
    /// The first inconsistency found.
    pub fn verify_text(&self, bytes: &[u8]) -> Result<(), DecodeError> {
        let Some(view) = self.text_view(bytes)? else {
            return Ok(());
        };
        view.verify(self.u32s(bytes, K::NodeIds))
            .map_err(|e| self.err_at(K::TextPostings, format!("text index: {}", e.what)))
    }
}
