//! The pruning threshold θ: the `need`-th best base score among the documents offered so
//! far that may be hits.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::error::Result;

/// The `need` best base scores of valid candidates offered so far (a min-heap).
pub(crate) struct Threshold {
    pub need: usize,
    heap: BinaryHeap<Reverse<OrdF64>>,
}

#[derive(Clone, Copy, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Threshold {
    pub fn new(need: usize) -> Threshold {
        Threshold {
            need,
            heap: BinaryHeap::new(),
        }
    }

    /// The `need`-th best score offered, −∞ until `need` were. Every valid document is
    /// offered at most once, by its base or (when the walk checked its phrase) its final
    /// score, and its final score is at least that, so `need` documents reach this value
    /// and one whose final score must stay below it is not in the answer.
    #[inline]
    pub fn value(&self) -> f64 {
        match self.heap.peek() {
            Some(Reverse(OrdF64(v))) if self.heap.len() >= self.need => *v,
            _ => f64::NEG_INFINITY,
        }
    }

    /// Offers a document's base score (or its final score, once known); `valid` (checked only when the score would count)
    /// says whether the document may be a hit (current version, passes the filter).
    #[inline]
    pub fn offer(&mut self, base: f64, valid: impl FnOnce() -> Result<bool>) -> Result<()> {
        if self.heap.len() < self.need || base > self.value() {
            if !valid()? {
                return Ok(());
            }
            self.heap.push(Reverse(OrdF64(base)));
            if self.heap.len() > self.need {
                self.heap.pop();
            }
        }
        Ok(())
    }
}
