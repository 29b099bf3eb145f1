//! One direction of a segment's CSR, built by a counting sort by owner node and a sort of
//! packed integer keys within each run.
//!
//! Each entry (type, neighbor, row) is packed into one `u64` (or `u128` when the three
//! fields need more than 64 bits) whose integer order is the run order, scattered to its
//! owner's run in one pass, and each run is sorted in place. That touches each entry a
//! constant number of times outside the (cache-resident) run sorts; comparing rows through
//! the column arrays instead costs several cache misses per comparison on large graphs.
//! Large inputs are split into two halves of the node range, built on two threads.

use std::ops::Range;

use crate::error::{Error, Result};

/// Rows from which a CSR is built on two threads (below, a thread costs more than it saves).
const PARALLEL_ROWS_MIN: usize = 1 << 18;

/// A CSR of one direction: node `n`'s run is `offsets[n]..offsets[n + 1]`, its entries
/// sorted by (type, neighbor, row); `pos` is the entry's row in the columns it was built
/// from.
#[derive(Debug, Default)]
pub(crate) struct Csr {
    pub offsets: Vec<u32>,
    pub neighbors: Vec<u32>,
    pub types: Vec<u16>,
    pub pos: Vec<u32>,
}

impl Csr {
    /// Groups rows by `own` (below `node_bound`); `other[row]` is the neighbor and
    /// `types[row]` the edge type. Within a run, equal (type, neighbor) keep row order.
    ///
    /// # Errors
    /// `InvalidArgument` when the columns differ in length, hold more than `u32::MAX` rows, or
    /// name a node at or beyond `node_bound`.
    pub fn build(node_bound: u32, own: &[u32], other: &[u32], types: &[u16]) -> Result<Csr> {
        let (mut csr, layout, type_bits) = Csr::prepare(node_bound, own, other, types)?;
        let input = Input { own, other, types };
        if layout.row_bits + layout.other_bits + type_bits <= u64::BITS {
            csr.fill::<u64>(&input, layout);
        } else {
            csr.fill::<u128>(&input, layout);
        }
        Ok(csr)
    }

    /// Checks the columns, counts the offsets and chooses the field widths.
    fn prepare(
        node_bound: u32,
        own: &[u32],
        other: &[u32],
        types: &[u16],
    ) -> Result<(Csr, Layout, u32)> {
        let m = own.len();
        if other.len() != m || types.len() != m {
            return Err(Error::invalid("edge columns differ in length"));
        }
        let rows = u32::try_from(m).map_err(|_| Error::invalid("segment edge limit exceeded"))?;
        let beyond = || Error::invalid("an edge refers to a node id beyond the node bound");
        let n = node_bound as usize;
        let mut offsets = vec![0u32; n + 1];
        for &o in own {
            *offsets.get_mut(o as usize + 1).ok_or_else(beyond)? += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let other_max = other.iter().copied().max().unwrap_or(0);
        if m > 0 && other_max >= node_bound {
            return Err(beyond());
        }
        let layout = Layout {
            row_bits: bit_len(rows.saturating_sub(1)),
            other_bits: bit_len(other_max),
        };
        let type_bits = bit_len(u32::from(types.iter().copied().max().unwrap_or(0)));
        let csr = Csr {
            offsets,
            neighbors: vec![0; m],
            types: vec![0; m],
            pos: vec![0; m],
        };
        Ok((csr, layout, type_bits))
    }

    /// Scatters, sorts and unpacks every run, in two halves on two threads when large.
    fn fill<W: Packed>(&mut self, input: &Input<'_>, layout: Layout) {
        let m = input.own.len();
        let nodes = u32::try_from(self.offsets.len() - 1).unwrap_or(u32::MAX);
        let mut packed = vec![W::default(); m];
        let offsets = &self.offsets;
        if !worth_a_thread(m) {
            let out = Out {
                packed: &mut packed,
                neighbors: &mut self.neighbors,
                types: &mut self.types,
                pos: &mut self.pos,
            };
            fill_part(0..nodes, offsets, input, out, layout);
            return;
        }
        // The first node whose run starts in the second half of the entries.
        let half = u32::try_from(m / 2).unwrap_or(u32::MAX);
        let mid = u32::try_from(offsets.partition_point(|&o| o < half))
            .unwrap_or(nodes)
            .min(nodes);
        let split = offsets[mid as usize] as usize;
        let (p0, p1) = packed.split_at_mut(split);
        let (n0, n1) = self.neighbors.split_at_mut(split);
        let (t0, t1) = self.types.split_at_mut(split);
        let (s0, s1) = self.pos.split_at_mut(split);
        let first = Out {
            packed: p0,
            neighbors: n0,
            types: t0,
            pos: s0,
        };
        let second = Out {
            packed: p1,
            neighbors: n1,
            types: t1,
            pos: s1,
        };
        join(
            true,
            || fill_part(0..mid, offsets, input, first, layout),
            || fill_part(mid..nodes, offsets, input, second, layout),
        );
    }
}

/// The columns a CSR is built from.
struct Input<'a> {
    own: &'a [u32],
    other: &'a [u32],
    types: &'a [u16],
}

/// The part of the output arrays that belongs to a range of nodes.
struct Out<'a, W> {
    packed: &'a mut [W],
    neighbors: &'a mut [u32],
    types: &'a mut [u16],
    pos: &'a mut [u32],
}

/// Fills the runs of `nodes`, whose entries are `out` (starting at `offsets[nodes.start]`).
fn fill_part<W: Packed>(
    nodes: Range<u32>,
    offsets: &[u32],
    input: &Input<'_>,
    out: Out<'_, W>,
    layout: Layout,
) {
    let (lo, hi) = (nodes.start as usize, nodes.end as usize);
    let base = offsets[lo];
    let mut cursor: Vec<u32> = offsets[lo..hi].iter().map(|&o| o - base).collect();
    let rows = input.own.iter().zip(input.other).zip(input.types);
    for (row, ((&o, &x), &t)) in (0u32..).zip(rows) {
        if nodes.contains(&o) {
            let c = &mut cursor[(o - nodes.start) as usize];
            out.packed[*c as usize] = W::pack(t, x, row, layout);
            *c += 1;
        }
    }
    drop(cursor);
    for w in offsets[lo..=hi].windows(2) {
        let run = &mut out.packed[(w[0] - base) as usize..(w[1] - base) as usize];
        if run.len() > 1 {
            run.sort_unstable();
        }
    }
    let entries = out.neighbors.iter_mut().zip(out.types.iter_mut());
    for ((&p, (n, t)), r) in out.packed.iter().zip(entries).zip(out.pos.iter_mut()) {
        (*t, *n, *r) = p.unpack(layout);
    }
}

/// Bits needed to write `x`.
fn bit_len(x: u32) -> u32 {
    u32::BITS - x.leading_zeros()
}

/// Field widths of a packed entry: `type | neighbor | row`, row in the low bits.
#[derive(Clone, Copy, Debug)]
struct Layout {
    row_bits: u32,
    other_bits: u32,
}

/// An unsigned integer holding one packed entry; its order is (type, neighbor, row).
trait Packed: Copy + Default + Ord + Send + Sync {
    fn pack(t: u16, other: u32, row: u32, l: Layout) -> Self;
    fn unpack(self, l: Layout) -> (u16, u32, u32);
}

macro_rules! packed {
    ($w:ty) => {
        impl Packed for $w {
            #[inline]
            fn pack(t: u16, other: u32, row: u32, l: Layout) -> $w {
                // `checked_shl` only fails for a shift of the full width, which `build`
                // chooses only when every type is 0.
                <$w>::from(t)
                    .checked_shl(l.row_bits + l.other_bits)
                    .unwrap_or(0)
                    | <$w>::from(other) << l.row_bits
                    | <$w>::from(row)
            }

            #[inline]
            #[allow(
                clippy::cast_possible_truncation,
                reason = "each field is masked to its width (at most 32 bits) first"
            )]
            fn unpack(self, l: Layout) -> (u16, u32, u32) {
                let mask = |bits: u32| ((1 as $w) << bits) - 1;
                let row = (self & mask(l.row_bits)) as u32;
                let other = ((self >> l.row_bits) & mask(l.other_bits)) as u32;
                let t = (self.checked_shr(l.row_bits + l.other_bits).unwrap_or(0) & 0xffff) as u16;
                (t, other, row)
            }
        }
    };
}
packed!(u64);
packed!(u128);

/// Whether work on `rows` rows is worth a second thread.
pub(crate) fn worth_a_thread(rows: usize) -> bool {
    rows >= PARALLEL_ROWS_MIN && std::thread::available_parallelism().is_ok_and(|p| p.get() > 1)
}

/// Runs `a` on a second thread while `b` runs on this one when `parallel`; otherwise, or
/// when no thread can be started, both run here, `a` first (so `b` may wait for a message
/// `a` sends over a buffered channel). A panic in either is passed on.
pub(crate) fn join<RA: Send, RB>(
    parallel: bool,
    a: impl FnOnce() -> RA + Send,
    b: impl FnOnce() -> RB,
) -> (RA, RB) {
    type Job<'a, R> = Box<dyn FnOnce() -> R + Send + 'a>;
    if !parallel {
        let ra = a();
        return (ra, b());
    }
    std::thread::scope(|s| {
        // The job travels over a channel so that it is still ours when no thread starts.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job<'_, RA>>(1);
        let spawned = std::thread::Builder::new()
            .name("hopgraph-build".into())
            .spawn_scoped(s, move || rx.recv().ok().map(|job| job()));
        let job: Job<'_, RA> = Box::new(a);
        let worker = match spawned {
            Ok(w) => tx.send(job).map(|()| w).map_err(|e| e.0),
            Err(_) => Err(job),
        };
        let (ra, rb) = match worker {
            Err(job) => {
                let ra = job();
                (ra, b())
            }
            Ok(w) => {
                let rb = b();
                let ra = match w.join() {
                    #[allow(clippy::expect_used, reason = "see the message")]
                    Ok(ra) => ra.expect(
                        "the job was in the channel before the worker could see it closed, \
                     so the worker received and ran it",
                    ),
                    Err(panic) => std::panic::resume_unwind(panic),
                };
                (ra, rb)
            }
        };
        (ra, rb)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CSR by sorting rows with a comparison sort: the definition.
    fn oracle(bound: u32, own: &[u32], other: &[u32], types: &[u16]) -> Csr {
        let mut rows: Vec<u32> = (0..u32::try_from(own.len()).unwrap()).collect();
        rows.sort_by_key(|&r| {
            let r = r as usize;
            (own[r], types[r], other[r], r)
        });
        let mut offsets = vec![0u32; bound as usize + 1];
        for &o in own {
            offsets[o as usize + 1] += 1;
        }
        for i in 0..bound as usize {
            offsets[i + 1] += offsets[i];
        }
        Csr {
            offsets,
            neighbors: rows.iter().map(|&r| other[r as usize]).collect(),
            types: rows.iter().map(|&r| types[r as usize]).collect(),
            pos: rows,
        }
    }

    fn assert_same(got: &Csr, want: &Csr) {
        assert_eq!(got.offsets, want.offsets);
        assert_eq!(got.neighbors, want.neighbors);
        assert_eq!(got.types, want.types);
        assert_eq!(got.pos, want.pos);
    }

    /// Seeded rows with skewed owners (so some runs are long) and repeated pairs.
    fn random(seed: u64, rows: usize, bound: u32, ntypes: u16) -> [Vec<u64>; 3] {
        let mut x = seed;
        let mut next = move |n: u64| {
            // splitmix64
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % n
        };
        let mut cols = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..rows {
            let b = u64::from(bound);
            cols[0].push(next(b) / (1 + next(8)));
            cols[1].push(next(b.min(50)));
            cols[2].push(next(u64::from(ntypes)));
        }
        cols
    }

    #[test]
    fn matches_a_comparison_sort() {
        let empty = Csr::build(1, &[], &[], &[]).unwrap();
        assert_eq!(empty.offsets, [0, 0]);
        for (seed, rows, bound, ntypes) in [
            (1, 3, 3, 1),
            (2, 1000, 10, 1),
            (3, 1000, 300, 3),
            (4, 5000, 64, 70),
            (5, 5000, 64, u16::MAX),
            // Two threads.
            (6, PARALLEL_ROWS_MIN + 17, 5000, 2),
        ] {
            let [own, other, types] = random(seed, rows, bound, ntypes);
            let own: Vec<u32> = own.iter().map(|&x| u32::try_from(x).unwrap()).collect();
            let other: Vec<u32> = other.iter().map(|&x| u32::try_from(x).unwrap()).collect();
            let types: Vec<u16> = types.iter().map(|&x| u16::try_from(x).unwrap()).collect();
            let want = oracle(bound, &own, &other, &types);
            assert_same(&Csr::build(bound, &own, &other, &types).unwrap(), &want);
            // The wide keys, which `build` picks only past 64 bits.
            let (mut csr, layout, _) = Csr::prepare(bound, &own, &other, &types).unwrap();
            csr.fill::<u128>(
                &Input {
                    own: &own,
                    other: &other,
                    types: &types,
                },
                layout,
            );
            assert_same(&csr, &want);
        }
    }

    #[test]
    fn rejects_ids_beyond_the_bound() {
        assert!(Csr::build(2, &[2], &[0], &[0]).is_err());
        assert!(Csr::build(2, &[0], &[2], &[0]).is_err());
        assert!(Csr::build(2, &[0, 1], &[0], &[0]).is_err());
    }

    #[test]
    fn join_runs_both() {
        let mut v = vec![0u32; 4];
        let (a, b) = v.split_at_mut(2);
        let (x, y) = join(
            true,
            || {
                a.fill(1);
                "a"
            },
            || {
                b.fill(2);
                "b"
            },
        );
        assert_eq!((x, y), ("a", "b"));
        assert_eq!(v, [1, 1, 2, 2]);
        // Sequentially, `a` runs first.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let ((), got) = join(false, move || tx.send(7).unwrap(), || rx.recv().unwrap());
        assert_eq!(got, 7);
    }
}
