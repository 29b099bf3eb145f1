//! The ranges of the graph tools' integer arguments: the one place each is checked.
//!
//! Adapters hand the integers they were given (a JSON number, a command-line value) to the
//! tool functions unchecked; the functions check them against a [`Ranges`] and answer
//! ``Invalid argument `name`: must be between min and max, got value`` for one outside it,
//! before anything is read. So every front end gets the same rule and the same text.
//!
//! Two sets of bounds exist, both here:
//! - [`Ranges::TOOLS`], the tool contract (`docs/MCP-TOOLS.md`), which keeps an agent's
//!   answers small enough for a model's context; the plain tool functions
//!   ([`walk::related_as_of`](crate::walk::related_as_of), ...) check these;
//! - [`Ranges::LOCAL`], for a person at a command line on their own database (the CLI):
//!   deeper walks, longer lists, and 0-hop paths; the `*_within` functions take it.
//!
//! `memory_search`'s `limit`, `offset` and `max_hops` have one range for every caller and
//! are checked in [`search`](crate::search); `read_graph`'s `limit` in [`kg`](crate::kg).

use crate::{ToolError, check_range};

/// An integer argument's bounds (inclusive) and its default when not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct IntRange {
    /// The argument's name, as error messages give it.
    pub name: &'static str,
    /// Least value accepted.
    pub min: i64,
    /// Greatest value accepted.
    pub max: i64,
    /// The value an absent argument means.
    pub default: i64,
}

impl IntRange {
    /// The range `min..=max` of argument `name`, `default` when absent.
    pub const fn new(name: &'static str, min: i64, max: i64, default: i64) -> IntRange {
        IntRange {
            name,
            min,
            max,
            default,
        }
    }

    /// `value` when it lies in the range.
    ///
    /// # Errors
    /// ``Invalid argument `name`: must be between min and max, got value``.
    pub fn check(&self, value: i64) -> Result<i64, ToolError> {
        check_range(self.name, value, self.min, self.max)
    }

    /// `value`, or the default when it is `None`, checked.
    ///
    /// # Errors
    /// As [`IntRange::check`].
    pub fn check_or_default(&self, value: Option<i64>) -> Result<i64, ToolError> {
        self.check(value.unwrap_or(self.default))
    }

    /// A checked `value` as a `u32` (the ranges of hops and depths fit one).
    ///
    /// # Errors
    /// As [`IntRange::check`].
    pub fn check_u32(&self, value: i64) -> Result<u32, ToolError> {
        let v = self.check(value)?;
        u32::try_from(v).map_err(|_| out_of_type(self, v))
    }

    /// A checked `value` as a `usize` (a list length).
    ///
    /// # Errors
    /// As [`IntRange::check`].
    pub fn check_usize(&self, value: i64) -> Result<usize, ToolError> {
        let v = self.check(value)?;
        usize::try_from(v).map_err(|_| out_of_type(self, v))
    }
}

/// A value inside a range that its type cannot hold: a range declared wider than its use
/// (a bug here, never the caller's), reported as the range error.
fn out_of_type(r: &IntRange, v: i64) -> ToolError {
    ToolError::invalid_arg(
        r.name,
        format!("must be between {} and {}, got {v}", r.min.max(0), r.max),
    )
}

/// The bounds of every ranged integer argument of `related`, `traverse`, `expand` and
/// `memory_path`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ranges {
    /// `related`'s `limit`.
    pub related_limit: IntRange,
    /// `traverse`'s `max_depth`.
    pub traverse_depth: IntRange,
    /// `traverse`'s `limit`.
    pub traverse_limit: IntRange,
    /// `expand`'s `hops` (required by the contract; the default serves other callers).
    pub expand_hops: IntRange,
    /// `expand`'s `limit`.
    pub expand_limit: IntRange,
    /// `memory_path`'s `max_hops`.
    pub path_hops: IntRange,
}

impl Ranges {
    /// The tool contract's ranges and defaults (`docs/MCP-TOOLS.md`).
    pub const TOOLS: Ranges = Ranges {
        related_limit: IntRange::new("limit", 1, 100, 20),
        traverse_depth: IntRange::new("max_depth", 1, 5, 3),
        traverse_limit: IntRange::new("limit", 1, 100, 20),
        expand_hops: IntRange::new("hops", 1, 5, 1),
        expand_limit: IntRange::new("limit", 1, 1000, 100),
        path_hops: IntRange::new("max_hops", 1, 10, 4),
    };

    /// A local user's ranges and defaults (the `hopgraph` command line): walks up to 100
    /// hops, paths up to 1000 (and 0: the same key twice), lists as long as a `u32`
    /// counts. Work stays bounded by each request's budget.
    pub const LOCAL: Ranges = Ranges {
        related_limit: IntRange::new("limit", 1, u32::MAX as i64, 100),
        traverse_depth: IntRange::new("max_hops", 1, 100, 3),
        traverse_limit: IntRange::new("limit", 1, u32::MAX as i64, 100),
        expand_hops: IntRange::new("max_hops", 1, 100, 1),
        expand_limit: IntRange::new("limit", 1, u32::MAX as i64, 100),
        path_hops: IntRange::new("max_hops", 0, 1000, 10),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_messages() {
        let r = Ranges::TOOLS.related_limit;
        assert_eq!(r.check(1).unwrap(), 1);
        assert_eq!(r.check(100).unwrap(), 100);
        assert_eq!(r.check_or_default(None).unwrap(), 20);
        assert_eq!(
            r.check(101).unwrap_err().message(),
            "Invalid argument `limit`: must be between 1 and 100, got 101"
        );
        assert_eq!(
            r.check(-3).unwrap_err().message(),
            "Invalid argument `limit`: must be between 1 and 100, got -3"
        );
        assert_eq!(Ranges::TOOLS.path_hops.check_u32(10).unwrap(), 10);
        assert!(Ranges::TOOLS.path_hops.check_u32(0).is_err());
        assert_eq!(Ranges::LOCAL.path_hops.check_u32(0).unwrap(), 0);
        assert_eq!(
            Ranges::LOCAL
                .expand_limit
                .check_usize(i64::from(u32::MAX))
                .unwrap(),
            u32::MAX as usize
        );
    }
}
