//! Time in the memory tools: timestamps in and out, validity, the staleness flag.
//!
//! The engine keeps a validity interval on every node and edge (`valid_from`, optional
//! `valid_to`, milliseconds since the Unix epoch; valid at `t` iff
//! `valid_from <= t < valid_to`). Here the tools' RFC 3339 strings become those numbers and
//! back (results in UTC, `Z`, millisecond precision), "now" is the system clock, and the
//! staleness flag of a memory derived from a superseded one is kept in the node's
//! properties under [`STALE_KEY`]: an object (never indexed as text, since the text index
//! reads only top-level strings and string arrays), hidden from `metadata` and from a
//! node's properties in every result, and reserved: a caller's `metadata` may not hold it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ToolError, rfc3339};
use hopgraph::{Node, Props};

/// The property key that holds a memory's staleness flag (`{since, because, hops}`).
pub const STALE_KEY: &str = "_hopgraph_stale";

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Why a memory is stale: it was derived (directly or through others) from a memory
/// that stopped being valid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleView {
    /// When the memory it depends on stopped being valid (RFC 3339).
    pub since: String,
    /// The superseded memory's id.
    pub because: String,
    /// Derivation edges between this memory and that one (1: directly derived).
    pub hops: u32,
}

/// The staleness flag of `node`, if it has one.
pub fn stale_of(node: &Node) -> Option<StaleView> {
    node.props
        .props
        .get(STALE_KEY)
        .and_then(|v| StaleView::deserialize(v).ok())
}

/// `props` as results show them: without the staleness flag.
pub fn visible_metadata(props: &Props) -> Props {
    if props.contains_key(STALE_KEY) {
        let mut m = props.clone();
        m.remove(STALE_KEY);
        m
    } else {
        props.clone()
    }
}

/// Checks that a caller's `metadata` does not use the reserved key.
///
/// # Errors
/// ``Invalid argument `metadata`: the key _hopgraph_stale is reserved ...``.
pub fn check_not_reserved(name: &str, m: &Props) -> Result<(), ToolError> {
    if m.contains_key(STALE_KEY) {
        return Err(ToolError::invalid_arg(
            name,
            format!("the key {STALE_KEY} is reserved (the staleness flag)"),
        ));
    }
    Ok(())
}

/// The flag as stored.
pub(crate) fn stale_value(since_ms: u64, because: &str, hops: u32) -> Value {
    serde_json::json!({"since": rfc3339(since_ms), "because": because, "hops": hops})
}

/// A validity interval as results show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Validity {
    /// Start (RFC 3339).
    pub valid_from: String,
    /// End (RFC 3339), `null`: still valid.
    pub valid_to: Option<String>,
}

impl Validity {
    /// The interval `[from, to)`.
    pub fn of(from: u64, to: Option<u64>) -> Validity {
        Validity {
            valid_from: rfc3339(from),
            valid_to: to.map(rfc3339),
        }
    }
}

/// Parses the optional RFC 3339 argument `name`.
///
/// # Errors
/// ``Invalid argument `name`: must be an RFC 3339 time ...``.
pub fn opt_time(name: &str, s: Option<&str>) -> Result<Option<u64>, ToolError> {
    s.map(|s| parse_time(name, s)).transpose()
}

/// Checks an interval `[from, to)` given as arguments: it must end after it starts.
///
/// # Errors
/// ``Invalid argument `valid_to`: must be after valid_from (...)``.
pub fn check_interval(from: u64, to: Option<u64>) -> Result<(), ToolError> {
    match to {
        Some(to) if to <= from => Err(ToolError::invalid_arg(
            "valid_to",
            format!(
                "must be after valid_from ({} <= {})",
                rfc3339(to),
                rfc3339(from)
            ),
        )),
        _ => Ok(()),
    }
}

/// Parses an RFC 3339 time (`2025-01-31`, `2025-01-31T12:00:00Z`,
/// `2025-01-31T12:00:00.250+02:00`; any offset) into ms since the Unix epoch. Digits of a
/// fraction beyond milliseconds are dropped.
///
/// # Errors
/// ``Invalid argument `name`: must be an RFC 3339 time, got "..."``.
pub fn parse_time(name: &str, s: &str) -> Result<u64, ToolError> {
    let bad = || {
        ToolError::invalid_arg(
            name,
            format!(
                "must be an RFC 3339 time such as 2025-01-31T12:00:00Z, got {}",
                crate::quote_short(s)
            ),
        )
    };
    let num = |x: &str| -> Result<i64, ToolError> {
        if x.is_empty() || x.len() > 9 || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        x.parse().map_err(|_| bad())
    };
    let (date, time) = match s.split_once(['T', 't', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut d = date.split('-');
    let (y, m, day) = (
        num(d.next().ok_or_else(bad)?)?,
        num(d.next().ok_or_else(bad)?)?,
        num(d.next().ok_or_else(bad)?)?,
    );
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) || y > 9999 {
        return Err(bad());
    }
    // Days from civil (Howard Hinnant's algorithm).
    let yy = if m <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let mut ms = days * 86_400_000;
    if let Some(t) = time {
        let (clock, zone_ms) = if let Some(c) = t.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else if let Some(at) = t.rfind(['+', '-']) {
            let (c, z) = t.split_at(at);
            let (zh, zm) = z[1..].split_once(':').ok_or_else(bad)?;
            let (zh, zm) = (num(zh)?, num(zm)?);
            if zh > 23 || zm > 59 {
                return Err(bad());
            }
            let off = (zh * 60 + zm) * 60_000;
            (c, if z.starts_with('-') { -off } else { off })
        } else {
            return Err(bad());
        };
        let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
        let mut p = hms.split(':');
        let (h, mi, sec) = (
            num(p.next().ok_or_else(bad)?)?,
            num(p.next().ok_or_else(bad)?)?,
            num(p.next().ok_or_else(bad)?)?,
        );
        if p.next().is_some() || h > 23 || mi > 59 || sec > 60 {
            return Err(bad());
        }
        let frac_ms = if frac.is_empty() {
            0
        } else {
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let digits: String = frac.chars().chain("000".chars()).take(3).collect();
            num(&digits)?
        };
        ms += ((h * 60 + mi) * 60 + sec) * 1000 + frac_ms - zone_ms;
    }
    u64::try_from(ms).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_like_rfc3339_prints_them() {
        for ms in [0u64, 951_782_400_123, 1_735_689_599_999] {
            assert_eq!(parse_time("t", &rfc3339(ms)).ok(), Some(ms));
        }
        assert_eq!(parse_time("t", "1970-01-02").ok(), Some(86_400_000));
        assert_eq!(parse_time("t", "1970-01-01T02:00:00+02:00").ok(), Some(0));
        assert_eq!(
            parse_time("t", "1970-01-01T00:00:00.1239-00:30").ok(),
            Some(1_800_123)
        );
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2024-01-01T25:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.x1Z",
            "2024-01-01T00:00:00+99:00",
            "1969-12-31T23:59:59Z",
            "99999999999-01-01",
        ] {
            let e = parse_time("valid_from", bad).expect_err(bad);
            assert!(
                e.message().starts_with("Invalid argument `valid_from`"),
                "{e}"
            );
        }
    }

    #[test]
    fn intervals_end_after_they_start() {
        assert!(check_interval(5, None).is_ok());
        assert!(check_interval(5, Some(6)).is_ok());
        for to in [4, 5] {
            let e = check_interval(5, Some(to)).expect_err("empty interval");
            assert!(
                e.message().contains("`valid_to`: must be after valid_from"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_stale_flag_is_hidden_and_reserved() {
        let mut props = Props::new();
        props.insert("k".into(), Value::from(1));
        props.insert(STALE_KEY.into(), stale_value(0, "old", 2));
        assert_eq!(visible_metadata(&props).len(), 1);
        assert!(check_not_reserved("metadata", &props).is_err());
        let node = Node {
            id: hopgraph::NodeId(0),
            key: "x".into(),
            props: hopgraph::NodeProps {
                props,
                ..Default::default()
            },
            created_at: 0,
            updated_at: 0,
            valid_from: 0,
            valid_to: None,
        };
        assert_eq!(
            stale_of(&node),
            Some(StaleView {
                since: "1970-01-01T00:00:00.000Z".into(),
                because: "old".into(),
                hops: 2
            })
        );
    }
}
