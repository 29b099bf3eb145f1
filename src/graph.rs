//! Shared vocabulary: identifiers, directions, type filters and the documented limits.
//!
//! Everything here is plain data used by every layer, from the on-disk formats up to the
//! adapters. Limits are constants so that they can be documented once (DESIGN.md, "Limits")
//! and enforced with clear errors where input enters the engine.

use std::fmt;

/// Dense node identifier assigned by the engine. Ids are never reused, so a database holds at
/// most `u32::MAX` nodes over its whole life (deleted ones included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct NodeId(pub u32);

/// Stable edge identifier, assigned in commit order and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct EdgeId(pub u64);

/// Interned edge-type identifier. Ids are assigned in the order types first appear and never
/// change, so they order ties independently of the physical layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct TypeId(pub u16);

/// Log sequence number: the number of the commit that produced a state. LSN 0 is the empty
/// database; every commit increases it by one.
pub type Lsn = u64;

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

impl fmt::Display for EdgeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl NodeId {
    /// The id as an index into dense per-node arrays.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One physical direction of stored adjacency: the out-CSR holds each edge under its source,
/// the in-CSR under its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeDir {
    /// Follow edges from source to target.
    Out,
    /// Follow edges from target to source.
    In,
}

impl EdgeDir {
    /// The other physical direction.
    #[inline]
    pub fn reverse(self) -> EdgeDir {
        match self {
            EdgeDir::Out => EdgeDir::In,
            EdgeDir::In => EdgeDir::Out,
        }
    }

    /// 0 for `Out`, 1 for `In`: index into per-direction arrays.
    #[inline]
    pub fn index(self) -> usize {
        match self {
            EdgeDir::Out => 0,
            EdgeDir::In => 1,
        }
    }
}

/// Which edges a query follows from a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    /// Edges leaving the node (forward).
    Out,
    /// Edges entering the node (backward).
    In,
    /// Both, i.e. the graph treated as undirected.
    #[default]
    Both,
}

impl Direction {
    /// The physical directions this mode reads, in the documented tie-break order (out first).
    #[inline]
    pub fn dirs(self) -> &'static [EdgeDir] {
        match self {
            Direction::Out => &[EdgeDir::Out],
            Direction::In => &[EdgeDir::In],
            Direction::Both => &[EdgeDir::Out, EdgeDir::In],
        }
    }

    /// The mode that walks the same edges from the other end (used by the backward half of a
    /// bidirectional search).
    #[inline]
    pub fn reverse(self) -> Direction {
        match self {
            Direction::Out => Direction::In,
            Direction::In => Direction::Out,
            Direction::Both => Direction::Both,
        }
    }
}

/// A set of edge types to follow: all of them, or a whitelist.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum TypeFilter {
    /// Every edge type.
    #[default]
    All,
    /// Only these types. An empty set matches nothing.
    Only(TypeSet),
}

/// The edge types of [`TypeFilter::Only`], ascending and without repeats. Kernels rely on
/// that order (type runs are visited, and the least type found first, in list order), so
/// the set is built only by [`TypeFilter::only`] and read as a slice.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TypeSet(Vec<TypeId>);

impl std::ops::Deref for TypeSet {
    type Target = [TypeId];

    fn deref(&self) -> &[TypeId] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a TypeSet {
    type Item = &'a TypeId;
    type IntoIter = std::slice::Iter<'a, TypeId>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl TypeFilter {
    /// A whitelist from any iterator of ids.
    pub fn only(types: impl IntoIterator<Item = TypeId>) -> TypeFilter {
        let mut v: Vec<TypeId> = types.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        TypeFilter::Only(TypeSet(v))
    }

    /// Whether edges of `t` pass.
    #[inline]
    pub fn allows(&self, t: TypeId) -> bool {
        match self {
            TypeFilter::All => true,
            TypeFilter::Only(v) => {
                if v.len() <= 8 {
                    v.contains(&t)
                } else {
                    v.binary_search(&t).is_ok()
                }
            }
        }
    }

    /// Whether this filter admits every type.
    #[inline]
    pub fn is_all(&self) -> bool {
        matches!(self, TypeFilter::All)
    }
}

/// One edge as seen from a node: the node at the other end, the edge and its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeRef {
    /// The node at the other end of the edge.
    pub neighbor: NodeId,
    /// The edge's stable id.
    pub edge: EdgeId,
    /// The edge's type.
    pub edge_type: TypeId,
}

/// An opaque handle to one entry of a graph's neighbor runs, for
/// [`Adjacency::run_entry_edge`](crate::traverse::Adjacency::run_entry_edge): the graph
/// chooses the encoding, and promises that the entries of a run it hands out with handle
/// `h` are `h.nth(0)`, `h.nth(1)`, … (none of them `NONE`). Kernels store it per reached
/// node (4 bytes) and never look inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct RunEntry(pub u32);

impl Default for RunEntry {
    /// [`RunEntry::NONE`].
    fn default() -> RunEntry {
        RunEntry::NONE
    }
}

impl RunEntry {
    /// No handle: the graph cannot name this entry (the kernel searches instead).
    pub const NONE: RunEntry = RunEntry(u32::MAX);

    /// The handle of the run's entry `i`, given that this is the handle of its entry 0
    /// (`NONE` stays `NONE`).
    #[inline]
    pub fn nth(self, i: usize) -> RunEntry {
        if self == RunEntry::NONE {
            return self;
        }
        // The graph promised every entry of the run a handle below `NONE`, so `i` (an
        // index into the run) fits in 32 bits and the sum does not wrap.
        #[allow(clippy::cast_possible_truncation)]
        RunEntry(self.0.wrapping_add(i as u32))
    }
}

/// Documented limits, enforced where input enters the engine.
pub mod limits {
    /// Node keys: 1..=512 bytes of UTF-8.
    pub const NODE_KEY_BYTES_MAX: usize = 512;
    /// Edge type names: 1..=128 bytes of UTF-8.
    pub const EDGE_TYPE_BYTES_MAX: usize = 128;
    /// Distinct edge types in one database (ids are `u16`).
    pub const EDGE_TYPES_MAX: usize = u16::MAX as usize;
    /// A node's `content` text.
    pub const NODE_CONTENT_BYTES_MAX: usize = 1 << 20;
    /// `kind`, `title` and `status` strings.
    pub const NODE_SHORT_TEXT_BYTES_MAX: usize = 64 * 1024;
    /// A node's `props`, serialized as compact JSON.
    pub const NODE_PROPS_BYTES_MAX: usize = 64 * 1024;
    /// An edge's `props`, serialized as compact JSON.
    pub const EDGE_PROPS_BYTES_MAX: usize = 4 * 1024;
    /// Embedding dimensions.
    pub const EMBEDDING_DIMS_MAX: usize = 4096;
    /// Nodes over the life of a database (ids are dense `u32`; `u32::MAX` is reserved).
    pub const NODES_MAX: u64 = u32::MAX as u64 - 1;
    /// Operations in one write batch.
    pub const BATCH_OPS_MAX: usize = 1 << 20;
    /// One WAL record's payload; checked before any allocation when decoding.
    pub const WAL_RECORD_BYTES_MAX: usize = 1 << 30;
    /// Edges in one segment (CSR positions are `u32`).
    pub const SEGMENT_EDGES_MAX: u64 = u32::MAX as u64 - 1;
}

#[cfg(test)]
mod tests {
    use super::{TypeFilter, TypeId};

    #[test]
    fn only_sorts_and_dedups_and_allows_exactly_its_types() {
        let ids = [9u16, 3, 12, 3, 0, 11, 7, 5, 1, 2, 9];
        let TypeFilter::Only(set) = TypeFilter::only(ids.map(TypeId)) else {
            panic!("only() builds a whitelist");
        };
        let got: Vec<u16> = set.iter().map(|t| t.0).collect();
        assert_eq!(got, [0, 1, 2, 3, 5, 7, 9, 11, 12]);
        // More than 8 types: `allows` binary-searches, which needs the order.
        let filter = TypeFilter::only(ids.map(TypeId));
        for t in 0..16u16 {
            assert_eq!(filter.allows(TypeId(t)), ids.contains(&t), "type {t}");
        }
        assert!(!TypeFilter::only([]).allows(TypeId(0)));
    }
}
