//! Pure bytes ↔ values: record framing, segment layout, manifest, checksums.
//!
//! Nothing here does I/O or takes locks, so every decoder can be fuzzed and property-tested
//! on plain byte vectors. Decoders never panic and check every length before allocating.

pub mod codec;
pub mod manifest;
pub mod record;
pub mod segment;
pub mod text;
pub mod wal;

/// The on-disk format version written by this build.
///
/// * 1: the first format.
/// * 2: segments keep each edge row's out-CSR position (`EdgeOutPos`) instead of copies of
///   its source, target and type (`EdgeSources`, `EdgeTargets`, `EdgeTypes`), 6 bytes less
///   per edge. WAL and manifest are unchanged. Version 1 files stay readable.
/// * 3: each `KeyHash` slot keeps the top bits of its key's hash above the record index, so
///   a look-up skips the slots of other keys without reading their records. Same sizes;
///   WAL and manifest are unchanged. Version 1 and 2 files stay readable.
/// * 4: segments carry the optional text index (sections 30–33) and vector index
///   (sections 40–45) of their node records. A build that reads only version 3 refuses
///   them by version instead of by an unknown section code. WAL and manifest are
///   unchanged; version 1–3 files stay readable, and their nodes are indexed for text when
///   a compaction rewrites them (`hopgraph compact`).
/// * 5: the text index's postings (section 32) name record indices, in blocks of 128 with
///   a meta per block (last record, end offset, per-field tf and length bounds), so a
///   search skips blocks that cannot reach its top hits; single-field postings of tf 1 take
///   one varint. The text stats say which layout a segment holds (1 or 2); version 4
///   segments keep layout 1 and stay readable (searched without skipping until compaction
///   rewrites them). WAL and manifest are unchanged.
/// * 6: the `KeyHash` index (section 26) holds 16-byte slots: the node id, then the key
///   itself when it has at most 11 bytes, else a 32-bit hash tag and its record's offset
///   in `NodeBlob`; slots are placed by a multiply-mix hash (`segment::key_hash64`) instead
///   of CRC-32, `records + ⌈records / 3⌉ + 1` of them. A look-up learns the node id in the
///   slot it matches, so a short key costs one slot read (about one cache line) where
///   version 5 read slot, record offsets, record and node id. The section starts at a
///   16-byte aligned offset. WAL and manifest are unchanged; version 1–5 files stay
///   readable (their index is probed as before until a compaction rewrites them).
/// * 7: the text index's per-record field lengths are `u16` capped at 65,535 in section 34
///   (`TextFieldLens`) instead of `u32` in section 33 (`TextDocLens`): half the bytes, and
///   twice the records per cache line for a search. WAL and manifest are unchanged;
///   version 4–6 segments keep section 33 and stay readable.
/// * 8: each embedding is stored once: `VectorData` (section 42) holds the embeddings as
///   written, with their inverse norms in `VectorScales` (section 46), and a node record
///   with an embedding keeps only a marker (`record::EMBEDDING_IN_ROW`) where it held the
///   floats, its embedding read from its row. WAL records keep their embeddings inline.
///   WAL and manifest are unchanged; version 1–7 segments stay readable (their records
///   and unit rows are read as before until a compaction rewrites them).
/// * 9: validity intervals. Node records end with `valid_from u64, valid_to u64`
///   (`u64::MAX`: never ends); edge rows get `EdgeValidFrom`/`EdgeValidTo` columns
///   (sections 50–51, each absent when it says nothing: every start its row's creation
///   time, no end), a changed interval of an older segment's edge goes to `EdgeValidity`
///   (52), and `TimedNodes`/`TimedEdges`/`TimeBounds` (53–55) say which elements have an
///   interval other than [created, never) and the latest start, so an "as of" read checks
///   only those. WAL ops 6–8 carry intervals (ops 2 and 4 still decode, as never-ending
///   from creation). Version 1–8 segments stay readable: their elements are valid from
///   creation and never end.
/// * 10: the text index's postings blocks are bit-packed (text layout 3, see
///   `format::text`): per block of 128 postings, the bit widths of its gaps and of each
///   field's tfs, then those values packed at their widths, so a block decodes without a
///   branch per posting. WAL and manifest are unchanged; version 5–9 segments keep
///   layout 2 (varint postings) and stay readable until a compaction rewrites them.
/// * 11: a text index carries a phrase-pair filter per record (section 35 `TextPairs`,
///   see `format::text::PairFilter`): 256 bits set by each two units that follow each
///   other in a field, so a search rules out most documents that hold a phrase's words
///   but not the phrase without reading their text. Version 10 segments have none and
///   are searched as before.
/// * 12: analysis indexes a name joined by `_` or `-` (`read_only`, `read-only`) by the
///   stem of its joined form (`~readon`), as it always indexed a camelCase name, so
///   every naming convention of one name shares a stem term. No section changes; the
///   version says which analysis wrote a text index (`check --deep` compares only
///   current-format segments, and lists older ones for `compact` to re-analyse).
///   Version 11 segments are searched as before: their snake_case and kebab-case names
///   match another convention by their parts only.
/// * 13: a text index carries its segment's phrase-pair set (section 36 `TextPairSet`,
///   see `format::text::pair_set_log2`): a bitset of about 64 bits per record with a
///   bit set by each two units that follow each other in a field of any record, so a
///   search knows, before it walks a segment, that no document there holds the query's
///   phrase (most queries of words that are not a phrase), and bounds every document
///   without the phrase boost. Version 11 and 12 segments have none and are searched as
///   before (their analysis is the same as version 12's).
pub const FORMAT_VERSION: u32 = 13;
/// The first version whose text index has the `TextPairs` section.
pub const TEXT_PAIRS_VERSION: u32 = 11;
/// The first version whose text index has the `TextPairSet` section.
pub const TEXT_PAIR_SET_VERSION: u32 = 13;
/// The first version whose node records and edge rows carry validity intervals.
pub const VALIDITY_VERSION: u32 = 9;
/// The first version whose segments store each embedding once, as a `VectorData` row with
/// a `VectorScales` entry.
pub const EMBEDDING_ROWS_VERSION: u32 = 8;
/// The first version whose segments store `EdgeOutPos` instead of the edge columns.
pub const SEGMENT_OUT_POS_VERSION: u32 = 2;
/// The first version whose `KeyHash` slots carry hash tags (see `segment::KeySlots`).
pub const KEY_HASH_TAG_VERSION: u32 = 3;
/// The first version whose `KeyHash` index holds 16-byte slots with the node id and short
/// keys inline (see `segment::KeySlotTable`).
pub const KEY_SLOTS_VERSION: u32 = 6;
/// The oldest format version this build reads.
pub const FORMAT_VERSION_MIN: u32 = 1;
