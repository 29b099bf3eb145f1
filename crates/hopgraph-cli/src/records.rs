//! The JSON line formats: hopgraph's own lossless export and the MCP reference memory
//! server's (`server-memory`, and `aim` with its leading marker line).
//!
//! hopgraph JSONL, version 1, one JSON object per line:
//!
//! ```text
//! {"hopgraph":"export","version":1}
//! {"node":{"key":"a","kind":"","title":"A","content":"","importance":0.0,"status":"","props":{},"embedding":null,"created_at":"2024-05-01T12:00:00.000Z","updated_at":"2024-05-01T12:00:00.000Z","valid_from":"2024-05-01T12:00:00.000Z","valid_to":null}}
//! {"edge":{"source":"a","target":"b","type":"caused_by","weight":1.0,"props":{},"id":0,"created_at":"2024-05-01T12:00:00.000Z","valid_from":"2024-05-01T12:00:00.000Z","valid_to":"2024-06-01T00:00:00.000Z"}}
//! {"hopgraph":"end","nodes":1,"edges":1}
//! ```
//!
//! The header is optional on import; a header promises the closing `end` line, whose
//! `nodes`/`edges` counts the file must match (a truncated export is an error). In node and
//! edge lines only `key`, resp. `source`/`target`/`type` are required. Ids and timestamps
//! are written for reference and assigned anew on import. Timestamps are written in
//! RFC 3339 (UTC, milliseconds), as the MCP tools print them ([`Timestamp`]); import also
//! reads the milliseconds since the Unix epoch that hopgraph 0.1 wrote.
//!
//! `valid_from` / `valid_to` are the element's validity interval in event time (valid at
//! `t` iff `valid_from <= t < valid_to`; `valid_to` `null`: never ends). Unlike ids and
//! commit timestamps they are kept on import; absent, the element is valid from when the
//! import writes it (an existing node keeps its start) and never ends.

use std::fmt;

use serde::{Deserialize, Serialize};

use hopgraph::{Edge, Node, NodeProps, Props};

/// The export format version this build writes and reads.
pub(crate) const JSONL_VERSION: u32 = 1;

/// A line of hopgraph JSONL: exactly one of the three parts is present. Unknown fields are
/// refused (a misspelt `titel` would otherwise vanish silently); `import --lenient` strips
/// them first with [`strip_unknown`].
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Line {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hopgraph: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<EdgeRecord>,
}

/// A node with all its properties.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeRecord {
    pub key: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub importance: f32,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub props: Props,
    #[serde(default)]
    pub embedding: Option<Vec<f32>>,
    #[serde(default)]
    pub created_at: Option<Timestamp>,
    #[serde(default)]
    pub updated_at: Option<Timestamp>,
    /// Start of validity (event time); absent on import: when the import writes it.
    #[serde(default)]
    pub valid_from: Option<Timestamp>,
    /// End of validity (exclusive); `null`: never ends.
    #[serde(default)]
    pub valid_to: Option<Timestamp>,
}

impl NodeRecord {
    pub fn from_node(n: &Node) -> NodeRecord {
        let p = &n.props;
        NodeRecord {
            key: n.key.clone(),
            kind: p.kind.clone(),
            title: p.title.clone(),
            content: p.content.clone(),
            importance: p.importance,
            status: p.status.clone(),
            props: p.props.clone(),
            embedding: p.embedding.clone(),
            created_at: Some(Timestamp(n.created_at)),
            updated_at: Some(Timestamp(n.updated_at)),
            valid_from: Some(Timestamp(n.valid_from)),
            valid_to: n.valid_to.map(Timestamp),
        }
    }

    /// The validity interval to load: (start, end), `None` start for "when written".
    pub fn validity(&self) -> (Option<u64>, Option<u64>) {
        (self.valid_from.map(|t| t.0), self.valid_to.map(|t| t.0))
    }

    pub fn into_props(self) -> (String, NodeProps) {
        let props = NodeProps {
            kind: self.kind,
            title: self.title,
            content: self.content,
            importance: self.importance,
            status: self.status,
            props: self.props,
            embedding: self.embedding,
        };
        (self.key, props)
    }
}

fn weight_default() -> f32 {
    1.0
}

/// An edge with its weight and properties, endpoints by key.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EdgeRecord {
    pub source: String,
    pub target: String,
    #[serde(rename = "type")]
    pub edge_type: String,
    #[serde(default = "weight_default")]
    pub weight: f32,
    #[serde(default)]
    pub props: Props,
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub created_at: Option<Timestamp>,
    /// Start of validity (event time); absent on import: when the import writes it.
    #[serde(default)]
    pub valid_from: Option<Timestamp>,
    /// End of validity (exclusive); `null`: never ends.
    #[serde(default)]
    pub valid_to: Option<Timestamp>,
}

impl EdgeRecord {
    pub fn from_edge(e: &Edge, source: String, target: String, edge_type: String) -> EdgeRecord {
        EdgeRecord {
            source,
            target,
            edge_type,
            weight: e.weight,
            props: e.props.clone(),
            id: Some(e.id.0),
            created_at: Some(Timestamp(e.created_at)),
            valid_from: Some(Timestamp(e.valid_from)),
            valid_to: e.valid_to.map(Timestamp),
        }
    }
}

/// A line of the reference memory server's file (an entity or a relation; AIM's marker
/// line is recognised before this is parsed).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryLine {
    #[serde(rename = "type")]
    pub line_type: String,
    pub name: Option<String>,
    #[serde(rename = "entityType")]
    pub entity_type: Option<String>,
    #[serde(default)]
    pub observations: Vec<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    #[serde(rename = "relationType")]
    pub relation_type: Option<String>,
}

/// The fields of each JSON line object, for [`strip_unknown`]: the line's own, and those of
/// its `node` / `edge` object.
pub(crate) const LINE_FIELDS: &[&str] = &["hopgraph", "version", "nodes", "edges", "node", "edge"];
const NODE_FIELDS: &[&str] = &[
    "key",
    "kind",
    "title",
    "content",
    "importance",
    "status",
    "props",
    "embedding",
    "created_at",
    "updated_at",
    "valid_from",
    "valid_to",
];
const EDGE_FIELDS: &[&str] = &[
    "source",
    "target",
    "type",
    "weight",
    "props",
    "id",
    "created_at",
    "valid_from",
    "valid_to",
];
/// The fields of a memory server line.
pub(crate) const MEMORY_FIELDS: &[&str] = &[
    "type",
    "name",
    "entityType",
    "observations",
    "from",
    "to",
    "relationType",
];

/// Removes the fields of `line` that `known` does not list (and, for hopgraph lines, those
/// of its `node`/`edge` object; free-form `props` are kept whole). Returns how many went.
pub(crate) fn strip_unknown(line: &mut serde_json::Value, known: &[&str]) -> u64 {
    fn strip(obj: &mut serde_json::Map<String, serde_json::Value>, known: &[&str]) -> u64 {
        let before = obj.len();
        obj.retain(|k, _| known.contains(&k.as_str()));
        (before - obj.len()) as u64
    }
    let serde_json::Value::Object(obj) = line else {
        return 0;
    };
    let mut n = strip(obj, known);
    if let Some(serde_json::Value::Object(node)) = obj.get_mut("node") {
        n += strip(node, NODE_FIELDS);
    }
    if let Some(serde_json::Value::Object(edge)) = obj.get_mut("edge") {
        n += strip(edge, EDGE_FIELDS);
    }
    n
}

/// An entity as the reference server writes it.
#[derive(Debug, Serialize)]
pub(crate) struct EntityOut<'a> {
    #[serde(rename = "type")]
    pub line_type: &'static str,
    pub name: &'a str,
    #[serde(rename = "entityType")]
    pub entity_type: &'a str,
    pub observations: Vec<&'a str>,
}

/// A relation as the reference server writes it.
#[derive(Debug, Serialize)]
pub(crate) struct RelationOut<'a> {
    #[serde(rename = "type")]
    pub line_type: &'static str,
    pub from: &'a str,
    pub to: &'a str,
    #[serde(rename = "relationType")]
    pub relation_type: &'a str,
}

/// The observations of a node imported from the memory server (`props.observations`).
pub(crate) fn observations(props: &Props) -> Vec<&str> {
    match props.get("observations") {
        Some(serde_json::Value::Array(v)) => v.iter().filter_map(|o| o.as_str()).collect(),
        _ => Vec::new(),
    }
}

/// A point in time, milliseconds since the Unix epoch. Written as an RFC 3339 UTC string
/// with milliseconds (`2024-05-01T12:00:00.000Z`, [`hopgraph_memory::rfc3339`], the form
/// the MCP tools print); read from such a string (any offset, any number of fraction
/// digits, `T`, `t` or a space between date and time) or from a number of milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timestamp(pub u64);

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hopgraph_memory::rfc3339(self.0))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Timestamp;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an RFC 3339 time such as \"2024-05-01T12:00:00.000Z\" or milliseconds \
                     since 1970",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, ms: u64) -> Result<Timestamp, E> {
                Ok(Timestamp(ms))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Timestamp, E> {
                parse_rfc3339(s)
                    .map(Timestamp)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(s), &self))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A moment given on the command line (`--as-of`): an RFC 3339 date-time, as the CLI
/// prints times, or milliseconds since the Unix epoch, as `import --timestamp` takes them
/// (the clap value parser).
pub(crate) fn parse_time(s: &str) -> Result<u64, String> {
    if let Some(ms) = parse_rfc3339(s) {
        return Ok(ms);
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map_err(|_| format!("{s} milliseconds is out of range"));
    }
    Err(format!(
        "expected an RFC 3339 time such as 2024-05-01T12:00:00Z (or +02:00 for an offset), \
         or milliseconds since 1970, got {s:?}"
    ))
}

/// Milliseconds since the Unix epoch of an RFC 3339 date-time
/// (`YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)`), None when `s` is not one or lies
/// before 1970. Fractions beyond milliseconds are cut off; a leap second (`:60`) counts as
/// the second after `:59`.
pub(crate) fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    // Fixed-width decimal field b[at..at + len].
    let num = |at: usize, len: usize| -> Option<i64> {
        let digits = b.get(at..at + len)?;
        digits.iter().try_fold(0i64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
    let sep = |at: usize, c: u8| b.get(at) == Some(&c);
    if b.len() < 20 || !sep(4, b'-') || !sep(7, b'-') || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if !sep(13, b':') || !sep(16, b':') {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let days_in_month = *month_days.get(usize::try_from(month - 1).ok()?)?;
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    // Fraction: digits after a dot, the first three are milliseconds.
    let mut at = 19;
    let mut millis = 0i64;
    if sep(at, b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            if at - start < 3 {
                millis = millis * 10 + i64::from(b[at] - b'0');
            }
            at += 1;
        }
        let digits = at - start;
        if digits == 0 {
            return None;
        }
        for _ in digits..3 {
            millis *= 10;
        }
    }
    // The offset from UTC: Z, or +HH:MM / -HH:MM and nothing after it.
    let offset_minutes = match b.get(at..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (num(at + 1, 2)?, num(at + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            if *sign == b'+' {
                h * 60 + m
            } else {
                -(h * 60 + m)
            }
        }
        _ => return None,
    };
    // Days from 1970-01-01: whole years (with their leap days), then whole months.
    let leap_days_before = |y: i64| (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400;
    let mut days = (year - 1970) * 365 + leap_days_before(year) - leap_days_before(1970);
    days += month_days[..usize::try_from(month - 1).ok()?]
        .iter()
        .sum::<i64>();
    days += day - 1;
    let seconds = ((days * 24 + hour) * 60 + minute - offset_minutes) * 60 + second;
    u64::try_from(seconds * 1000 + millis).ok()
}

#[cfg(test)]
mod tests {
    use super::{Timestamp, parse_rfc3339};

    #[test]
    fn rfc3339_parses_what_it_prints() {
        for ms in [
            0,
            1,
            951_782_400_123,
            1_700_000_000_000,
            1_735_689_599_999,
            4_102_444_800_000,
        ] {
            let s = hopgraph_memory::rfc3339(ms);
            assert_eq!(parse_rfc3339(&s), Some(ms), "{s}");
            let json = serde_json::to_string(&Timestamp(ms)).unwrap_or_default();
            assert_eq!(json, format!("\"{s}\""));
            let back: Option<Timestamp> = serde_json::from_str(&json).ok();
            assert_eq!(back, Some(Timestamp(ms)));
        }
        let ms: Option<Timestamp> = serde_json::from_str("1700000000000").ok();
        assert_eq!(ms, Some(Timestamp(1_700_000_000_000)), "the old form");
    }

    #[test]
    fn rfc3339_offsets_fractions_and_bad_input() {
        let base = parse_rfc3339("2024-02-29T12:00:00Z");
        assert_eq!(base, Some(1_709_208_000_000));
        assert_eq!(parse_rfc3339("2024-02-29t13:30:00+01:30"), base);
        assert_eq!(parse_rfc3339("2024-02-29 10:00:00-02:00"), base);
        assert_eq!(
            parse_rfc3339("2024-02-29T12:00:00.5Z"),
            base.map(|b| b + 500)
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T12:00:00.123456789Z"),
            base.map(|b| b + 123)
        );
        for bad in [
            "",
            "2024-02-30T12:00:00Z",
            "2023-02-29T12:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00Zjunk",
            "1969-12-31T23:59:59Z",
            "yesterday",
            "2024-01-01T00:00:00+99:00",
            "２０２４-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        let bad: Result<Timestamp, _> = serde_json::from_str("\"soon\"");
        let msg = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("RFC 3339"), "{msg}");
    }
}
