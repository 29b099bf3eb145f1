//! Which input edges a bulk load keeps (duplicates are dropped), and each kept edge's row.
//!
//! One bit per input edge plus a running count per 64 of them: a quarter of a byte per
//! edge, so an out-of-core load can hold it for a billion edges. Rows are dense in input
//! order, so a kept edge's row is the number of kept edges before it ([`Keep::rank`]).

/// A bit per input edge (set: kept) and, once [`Keep::finish`] ran, ranks.
#[derive(Debug, Default)]
pub(super) struct Keep {
    bits: Vec<u64>,
    /// Kept edges before each word of `bits`.
    before: Vec<u64>,
    len: usize,
}

impl Keep {
    /// `len` edges, all kept.
    pub fn all(len: usize) -> Keep {
        let mut bits = vec![u64::MAX; len.div_ceil(64)];
        if let Some(last) = bits.last_mut()
            && !len.is_multiple_of(64)
        {
            *last = (1u64 << (len % 64)) - 1;
        }
        Keep {
            bits,
            before: Vec::new(),
            len,
        }
    }

    /// Drops edge `i` (past the end: nothing).
    pub fn drop_edge(&mut self, i: usize) {
        if let Some(w) = self.bits.get_mut(i / 64) {
            *w &= !(1u64 << (i % 64));
        }
    }

    /// Whether edge `i` is kept (past the end: no).
    pub fn get(&self, i: usize) -> bool {
        self.bits
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Counts the kept edges before each word, for [`Keep::rank`]; call once every drop
    /// is made.
    pub fn finish(&mut self) {
        let mut total = 0u64;
        self.before = self
            .bits
            .iter()
            .map(|w| {
                let at = total;
                total += u64::from(w.count_ones());
                at
            })
            .collect();
    }

    /// The kept edges before edge `i`: its row when it is kept (after [`Keep::finish`]).
    pub fn rank(&self, i: usize) -> u64 {
        let (word, bit) = (i / 64, i % 64);
        let below = self
            .bits
            .get(word)
            .map_or(0, |w| u64::from((w & ((1u64 << bit) - 1)).count_ones()));
        self.before.get(word).copied().unwrap_or(0) + below
    }

    /// Input edges.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Kept edges.
    pub fn kept(&self) -> u64 {
        self.bits.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_count_the_kept_edges_before() {
        for len in [0usize, 1, 63, 64, 65, 200] {
            let mut keep = Keep::all(len);
            for i in (0..len).filter(|i| i % 3 == 1 || i % 7 == 0) {
                keep.drop_edge(i);
            }
            keep.finish();
            let mut kept = 0u64;
            for i in 0..len {
                assert_eq!(keep.rank(i), kept, "len {len} edge {i}");
                kept += u64::from(keep.get(i));
                assert_eq!(keep.get(i), !(i % 3 == 1 || i % 7 == 0));
            }
            assert_eq!(keep.kept(), kept);
            assert!(!keep.get(len));
        }
    }
}
