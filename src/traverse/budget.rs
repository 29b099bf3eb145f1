//! Query budgets: how much a traversal may visit and until when.

use std::time::Instant;

/// How much work one query may do. Running out is an answer ([`Completion::LimitReached`]),
/// not an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Maximum number of nodes a query may mark as visited (seeds and endpoints included,
    /// both sides of a bidirectional search counted).
    pub visited_max: u64,
    /// Wall-clock deadline, checked every [`Budget::DEADLINE_CHECK_EVERY`] visited nodes and
    /// once per BFS level (never per edge).
    pub deadline: Option<Instant>,
}

impl Budget {
    /// The default visited-node limit.
    pub const VISITED_MAX_DEFAULT: u64 = 10_000_000;
    /// The deadline is read once per this many visited nodes.
    pub const DEADLINE_CHECK_EVERY: u64 = 4096;

    /// No practical limit: `u64::MAX` visits and no deadline.
    pub fn unlimited() -> Budget {
        Budget {
            visited_max: u64::MAX,
            deadline: None,
        }
    }
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            visited_max: Budget::VISITED_MAX_DEFAULT,
            deadline: None,
        }
    }
}

/// Whether a kernel ran to its natural end or stopped at its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Completion {
    /// The traversal ran to its end (hop limit, exhaustion or result limit).
    #[default]
    Complete,
    /// The budget ran out after visiting `visited` nodes; results cover completed levels.
    LimitReached {
        /// Nodes visited when the budget ran out.
        visited: u64,
    },
}

/// The budget ran out; carries the number of nodes visited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exhausted {
    pub(crate) visited: u64,
}

/// Counts visits against a [`Budget`]. One meter may span several searches (Yen's spur
/// searches share one budget).
#[derive(Clone, Debug)]
pub(crate) struct Meter {
    visited: u64,
    visited_max: u64,
    deadline: Option<Instant>,
    expired: bool,
}

impl Meter {
    pub(crate) fn new(budget: &Budget) -> Meter {
        Meter {
            visited: 0,
            visited_max: budget.visited_max,
            deadline: budget.deadline,
            expired: false,
        }
    }

    /// Nodes visited so far.
    pub(crate) fn visited(&self) -> u64 {
        self.visited
    }

    /// Records one visit; `false` when the budget does not allow it (the visit must then
    /// not happen).
    #[inline]
    pub(crate) fn visit(&mut self) -> bool {
        if self.expired || self.visited >= self.visited_max {
            self.expired = true;
            return false;
        }
        self.visited += 1;
        if self.visited.is_multiple_of(Budget::DEADLINE_CHECK_EVERY) {
            self.check_deadline();
        }
        true
    }

    /// Reads the clock; call at level boundaries.
    pub(crate) fn check_deadline(&mut self) -> bool {
        if let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            self.expired = true;
        }
        !self.expired
    }

    /// `Err` once the budget has run out (by count or deadline).
    pub(crate) fn status(&self) -> Result<(), Exhausted> {
        if self.expired {
            Err(self.exhausted())
        } else {
            Ok(())
        }
    }

    pub(crate) fn exhausted(&self) -> Exhausted {
        Exhausted {
            visited: self.visited,
        }
    }
}
