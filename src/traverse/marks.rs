//! Per-node marks of the path search and the expansions: dense arrays, or a small hash
//! table.
//!
//! A search needs, per node and side, a visit stamp (see [`super::scratch`]: `stamp >=
//! base` means "reached in this query", `stamp - base` is the depth) and how it was
//! reached (the path search's [`Parent`], the expansions' [`Link`]). Two stores implement
//! that behind [`Marks`]:
//!
//! - [`DenseMarks`], views of the scratch's per-node arrays: one load per question, the
//!   fastest once the arrays' pages are mapped.
//! - [`SparseMarks`], an open-addressing table holding only the nodes this query reached.
//!   On a large graph a search that reaches a few thousand nodes touches a few thousand
//!   scattered pages of the dense arrays; in a fresh process each is a page fault (kron-24,
//!   8.9 M nodes: ~6,700 faults made a process's first query 20-45x its later ones). The
//!   table keeps those marks in a few contiguous pages instead, and stays in cache.
//!
//! The table is stamped the way the arrays are: a slot is live in the current query iff
//! its stamp is at least the query's base, so starting a query empties it in O(1) (no
//! deletions happen within a query, so linear probing stays exact). It holds at most half
//! its slots live, and grows by doubling.

use super::scratch::{Link, Parent};

/// The marks one side of a search reads and writes: a stamp and a value (`V`: the
/// [`Parent`] of the path search, the [`Link`] of the expansions) per reached node.
pub(crate) trait Marks<V>: Stamps {
    /// Records that `v` (below the graph's bound) was reached with `stamp` from `parent`.
    fn set(&mut self, v: usize, stamp: u32, parent: V);
    /// The value recorded for `v`; meaningful only if `v` was reached in this query.
    fn parent(&self, v: usize) -> V;
    /// Replaces the value of `v`, which was reached in this query, keeping its stamp.
    fn replace(&mut self, v: usize, parent: V);
}

/// Read access to one side's visit stamps (the other side's, during a level).
pub(crate) trait Stamps {
    /// The stamp of `v` (below the graph's bound): at least the query's base iff `v` was
    /// reached in this query.
    fn stamp(&self, v: usize) -> u32;
}

/// The scratch's per-node arrays of one side: the stamps and the values.
pub(crate) struct DenseMarks<'a, V> {
    pub(crate) seen: &'a mut [u32],
    pub(crate) parent: &'a mut [V],
}

impl<V> Stamps for DenseMarks<'_, V> {
    #[inline]
    fn stamp(&self, v: usize) -> u32 {
        self.seen[v]
    }
}

impl<V: Copy> Marks<V> for DenseMarks<'_, V> {
    #[inline]
    fn set(&mut self, v: usize, stamp: u32, parent: V) {
        self.seen[v] = stamp;
        self.parent[v] = parent;
    }

    #[inline]
    fn parent(&self, v: usize) -> V {
        self.parent[v]
    }

    #[inline]
    fn replace(&mut self, v: usize, parent: V) {
        self.parent[v] = parent;
    }
}

/// Read-only view of the other side's stamp array.
pub(crate) struct DenseStamps<'a>(pub(crate) &'a [u32]);

impl Stamps for DenseStamps<'_> {
    #[inline]
    fn stamp(&self, v: usize) -> u32 {
        self.0[v]
    }
}

/// Slots of a fresh table (a power of two): 8 KiB of keys and stamps.
const SPARSE_SLOTS_MIN: usize = 1024;
/// A table grown past this many slots (4 MiB with the parents) by one large search is
/// given back when the next query starts, so an idle scratch (a pool keeps several) holds
/// at most this much beside its arrays.
const SPARSE_SLOTS_KEEP_MAX: usize = 1 << 18;

/// An open-addressing table of the nodes one side reached in the current query, with a
/// value per node (its [`Parent`] for the path search, its [`Link`] for the expansions).
#[derive(Debug)]
pub(crate) struct SparseTable<V> {
    /// `[node, stamp]` per slot; live in this query iff `stamp >= base`.
    slots: Vec<[u32; 2]>,
    /// The value of each slot's node.
    parents: Vec<V>,
    /// Stamp base of the current query (0 before the first: every slot is then live-less,
    /// as fresh slots hold stamp 0 and bases start at 1).
    base: u32,
    /// Live slots.
    len: usize,
}

/// The path search's table: a parent per node.
pub(crate) type SparseMarks = SparseTable<Parent>;
/// The expansions' table: a link per node.
pub(crate) type SparseLinks = SparseTable<Link>;

impl<V> Default for SparseTable<V> {
    fn default() -> SparseTable<V> {
        SparseTable {
            slots: Vec::new(),
            parents: Vec::new(),
            base: 0,
            len: 0,
        }
    }
}

impl<V: Copy + Default> SparseTable<V> {
    /// Starts a query with stamp base `base` (at least 1, above every stamp in the table
    /// except after [`SparseMarks::clear`]): every slot becomes free.
    pub(crate) fn begin(&mut self, base: u32) {
        debug_assert!(base >= 1, "stamp bases start at 1");
        if self.slots.is_empty() || self.slots.len() > SPARSE_SLOTS_KEEP_MAX {
            self.slots = vec![[0, 0]; SPARSE_SLOTS_MIN];
            self.parents = vec![V::default(); SPARSE_SLOTS_MIN];
        }
        self.base = base;
        self.len = 0;
    }

    /// Resets every stamp to 0 (when the scratch's 32-bit stamp range wraps).
    pub(crate) fn clear(&mut self) {
        self.slots.fill([0, 0]);
        self.len = 0;
    }

    /// Nodes reached in this query.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Writes every live mark into the dense arrays (which must cover every marked node),
    /// so the query can go on with [`DenseMarks`].
    pub(crate) fn drain_into(&self, seen: &mut [u32], parent: &mut [V]) {
        for (slot, p) in self.slots.iter().zip(&self.parents) {
            let [v, stamp] = *slot;
            if stamp >= self.base
                && let Some(s) = seen.get_mut(v as usize)
            {
                *s = stamp;
                parent[v as usize] = *p;
            }
        }
    }

    /// The home slot of `v` (Fibonacci hashing: the top bits of a multiply).
    #[inline]
    // The shift leaves `bits` bits, and a table of 2^bits slots is addressable.
    #[allow(clippy::cast_possible_truncation)]
    fn home(&self, v: usize) -> usize {
        let bits = self.slots.len().trailing_zeros();
        ((v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The slot holding `v`, or the free slot where it would go.
    #[inline]
    fn find(&self, v: usize) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(v);
        loop {
            let [key, stamp] = self.slots[i];
            if stamp < self.base {
                return (i, false);
            }
            if key as usize == v {
                return (i, true);
            }
            // At most half the slots are live, so a free one ends every probe.
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table, re-inserting the live slots.
    fn grow(&mut self) {
        let old_slots = std::mem::take(&mut self.slots);
        let old_parents = std::mem::take(&mut self.parents);
        let size = old_slots.len().max(SPARSE_SLOTS_MIN / 2) * 2;
        self.slots = vec![[0, 0]; size];
        self.parents = vec![V::default(); size];
        for (slot, p) in old_slots.into_iter().zip(old_parents) {
            if slot[1] >= self.base {
                let (i, _) = self.find(slot[0] as usize);
                self.slots[i] = slot;
                self.parents[i] = p;
            }
        }
    }
}

impl<V: Copy + Default> Stamps for SparseTable<V> {
    #[inline]
    fn stamp(&self, v: usize) -> u32 {
        match self.find(v) {
            (i, true) => self.slots[i][1],
            (_, false) => 0,
        }
    }
}

impl<V: Copy + Default> Marks<V> for SparseTable<V> {
    #[inline]
    // `v` is a node id below the graph's bound, which is a `u32`.
    #[allow(clippy::cast_possible_truncation)]
    fn set(&mut self, v: usize, stamp: u32, parent: V) {
        debug_assert!(stamp >= self.base, "a mark of this query");
        let (mut i, found) = self.find(v);
        if !found {
            if (self.len + 1) * 2 > self.slots.len() {
                self.grow();
                i = self.find(v).0;
            }
            self.len += 1;
        }
        self.slots[i] = [v as u32, stamp];
        self.parents[i] = parent;
    }

    #[inline]
    fn parent(&self, v: usize) -> V {
        match self.find(v) {
            (i, true) => self.parents[i],
            (_, false) => V::default(),
        }
    }

    #[inline]
    fn replace(&mut self, v: usize, parent: V) {
        if let (i, true) = self.find(v) {
            self.parents[i] = parent;
        }
    }
}

#[cfg(test)]
// Test code: indices below 50,000.
#[allow(clippy::cast_possible_truncation)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::{Marks, SparseMarks, Stamps};
    use crate::graph::{NodeId, RunEntry};
    use crate::traverse::scratch::Parent;

    /// A table grown far by one query is small again at the next, and still answers.
    #[test]
    fn a_grown_table_is_given_back() {
        let mut table = SparseMarks::default();
        table.begin(1);
        for v in 0..super::SPARSE_SLOTS_KEEP_MAX {
            table.set(v, 1, Parent::default());
        }
        assert!(table.slots.len() > super::SPARSE_SLOTS_KEEP_MAX);
        table.begin(2);
        assert_eq!(table.slots.len(), super::SPARSE_SLOTS_MIN);
        assert!(table.stamp(5) < 2);
        table.set(5, 2, Parent::default());
        assert_eq!((table.stamp(5), table.len()), (2, 1));
    }

    proptest! {
        /// Over several queries (bases rising, as the scratch hands them out), the table
        /// answers exactly as a map holding only the current query's marks, through
        /// growth, and a drain writes exactly those marks.
        #[test]
        fn sparse_marks_match_a_map(
            queries in prop::collection::vec(
                prop::collection::vec((0u32..50_000, 0u32..4), 0..3_000), 1..4),
        ) {
            let mut table = SparseMarks::default();
            let mut base = 1u32;
            for marks in queries {
                table.begin(base);
                let mut want: HashMap<u32, (u32, Parent)> = HashMap::new();
                for (i, &(v, depth)) in marks.iter().enumerate() {
                    let p = Parent { node: NodeId(i as u32), via: RunEntry(v ^ 7) };
                    table.set(v as usize, base + depth, p);
                    want.insert(v, (base + depth, p));
                }
                prop_assert_eq!(table.len(), want.len());
                for v in (0u32..50_000).step_by(97).chain(want.keys().copied()) {
                    match want.get(&v) {
                        Some(&(stamp, p)) => {
                            prop_assert_eq!(table.stamp(v as usize), stamp);
                            prop_assert_eq!(table.parent(v as usize), p);
                        }
                        None => prop_assert!(table.stamp(v as usize) < base),
                    }
                }
                let mut seen = vec![0u32; 50_000];
                let mut parent = vec![Parent::default(); 50_000];
                table.drain_into(&mut seen, &mut parent);
                for (v, &s) in seen.iter().enumerate() {
                    match want.get(&(v as u32)) {
                        Some(&(stamp, p)) => {
                            prop_assert_eq!(s, stamp);
                            prop_assert_eq!(parent[v], p);
                        }
                        None => prop_assert_eq!(s, 0),
                    }
                }
                base += 5;
            }
        }
    }
}
