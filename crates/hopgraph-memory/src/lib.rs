//! Memory-tool semantics, independent of any protocol.
//!
//! Agents talk to memory servers through a handful of tools (`create_memory`, `link`,
//! `memory_path`, ...) whose names, parameters and results are fixed by the servers they come
//! from (see `docs/MCP-TOOLS.md`). This module implements what each tool *means* on top of the
//! engine: one function per tool taking a [`Database`](hopgraph::Database) or a
//! [`Snapshot`](hopgraph::Snapshot) and a typed request, returning a `Serialize` result or a
//! [`ToolError`] carrying the exact one-line message of the contract. The MCP adapter
//! (`crate::mcp`) only turns JSON-RPC arguments into these requests and results back into
//! JSON; a command-line front end can reuse the same functions.
//!
//! How the tool vocabulary maps onto the engine's model:
//! - a memory is a node: its id is the node key, its `type` the node `kind`, its `metadata`
//!   the node `props`, and its `status` is `metadata.status` (also kept in
//!   `NodeProps::status` so that the engine can filter on it);
//! - an AIM entity is a node with `type` = entityType, `title` = name and
//!   `metadata.observations` = its observations;
//! - timestamps are milliseconds since the Unix epoch in the engine and RFC 3339 strings in
//!   results;
//! - every memory and edge has a validity interval (`valid_from`, `valid_to`), the engine's;
//!   supersession, the staleness cascade and the history chain are in [`history`], the
//!   timestamp rules and the staleness flag's storage in [`time`].
//!
//! Arguments are checked here, once, for every front end: adapters pass the integers they
//! were given and get the same rule and message from each tool function (the graph tools'
//! ranges in [`ranges`]).

// The engine's `on_view!` (a kernel call on a snapshot or its view as of a moment), in
// scope for every module.
#[macro_use]
extern crate hopgraph;

pub mod aim;
pub mod edges;
pub mod embed_model;
pub mod embed_text;
pub mod history;
pub mod kg;
pub mod nodes;
pub mod path;
pub mod planned;
pub mod ranges;
pub mod search;
pub mod stats;
pub mod time;
pub mod walk;

use std::fmt;

use serde_json::{Map, Value};

use hopgraph::Error;
use hopgraph::{Node, Props};

/// What kind of failure a [`ToolError`] is, for callers that act on it (retry, create
/// first, fix the argument) rather than show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// An argument is missing, of the wrong type, out of range, or otherwise breaks its
    /// documented rule; the call changed nothing. Fix the argument.
    InvalidArgument,
    /// A memory, edge, entity or context the call names does not exist.
    NotFound,
    /// What the call would create exists already.
    AlreadyExists,
    /// The storage failed or is unavailable (I/O, a database that cannot be opened, too
    /// much concurrent change); nothing was half-written. The call may be retried.
    Storage,
    /// The text-embedding model failed or does not match the store's.
    Embedding,
    /// A bug: an invariant did not hold. Please report it.
    Internal,
}

/// A tool call that failed: its [`kind`](ToolError::kind) and the exact one-line message
/// of the tool contract (e.g. `Memory not found.`), which is what an MCP client sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    kind: ToolErrorKind,
    message: String,
}

impl ToolError {
    /// A tool error of `kind` with `message` (made one line).
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> ToolError {
        let message = message.into();
        let message = if message.contains(['\r', '\n']) {
            one_line(&message)
        } else {
            message
        };
        ToolError { kind, message }
    }

    /// An argument that fails its documented rule: ``Invalid argument `name`: rule``.
    pub fn invalid_arg(name: &str, rule: impl fmt::Display) -> ToolError {
        ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Invalid argument `{name}`: {rule}"),
        )
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
    }

    /// The one-line message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, owned.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<hopgraph::Error> for ToolError {
    /// The engine's own message, kept as it is; the kind from the error's variant.
    fn from(e: hopgraph::Error) -> ToolError {
        let kind = match &e {
            Error::InvalidArgument { .. } | Error::LimitExceeded { .. } => {
                ToolErrorKind::InvalidArgument
            }
            Error::NodeNotFound { .. } => ToolErrorKind::NotFound,
            Error::NodeExists { .. } => ToolErrorKind::AlreadyExists,
            _ => ToolErrorKind::Storage,
        };
        ToolError::new(kind, e.to_string())
    }
}

/// Turns an engine error that no tool maps to a contract message into a one-line tool
/// error. Bad input keeps the engine's explanation; anything else is reported as a storage
/// problem (the call may be retried; the database is never left half-written).
pub fn engine_error(e: &Error) -> ToolError {
    match e {
        Error::InvalidArgument { .. } | Error::LimitExceeded { .. } => ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Invalid input: {e}"),
        ),
        other => ToolError::new(ToolErrorKind::Storage, format!("Storage error: {other}")),
    }
}

/// `text` with line breaks replaced by spaces (tool errors are one line).
pub fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// The memory types of agi-mcp-server, the only values `create_memory` accepts as `type`.
pub const MEMORY_TYPES: [&str; 4] = ["episodic", "semantic", "procedural", "strategic"];

/// Longest context name, in bytes.
pub const CONTEXT_NAME_BYTES_MAX: usize = 64;

/// The context-name rule, as error messages and docs state it.
pub const CONTEXT_NAME_RULE: &str = "1-64 characters of a-z 0-9 _ - . (lowercase), starting \
     with a letter or digit, not ending with \".\", no \"..\", and not a Windows device name \
     (con, prn, aux, nul, com1-com9, lpt1-lpt9, also with an extension such as nul.txt)";

/// Windows device names: a file named so (with any extension) cannot be created there.
const WINDOWS_DEVICE_NAMES: [&str; 22] = [
    "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
    "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

/// Checks a context name against one rule that is safe as a directory name on Linux, macOS
/// and Windows file systems ([`CONTEXT_NAME_RULE`]): `[a-z0-9_.-]{1,64}`, first character a
/// letter or digit, no trailing `.`, no `..`, no Windows device name (`con`, `nul.txt`, ...).
/// Uppercase is rejected rather than folded, so that two names can never collide on a
/// case-insensitive file system and a name means the same directory everywhere. Path
/// separators, NUL, spaces and absolute paths fall outside the character set.
///
/// # Errors
/// ``Invalid argument `context`: must be <rule>, got "name"``.
pub fn check_context_name(name: &str) -> Result<(), ToolError> {
    let b = name.as_bytes();
    let chars_ok = b
        .iter()
        .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'-'));
    let stem = name.split('.').next().unwrap_or(name);
    let ok = !b.is_empty()
        && b.len() <= CONTEXT_NAME_BYTES_MAX
        && chars_ok
        && b[0].is_ascii_alphanumeric()
        && b.last() != Some(&b'.')
        && !name.contains("..")
        && !WINDOWS_DEVICE_NAMES.contains(&stem);
    if ok {
        Ok(())
    } else {
        Err(ToolError::invalid_arg(
            "context",
            format!("must be {CONTEXT_NAME_RULE}, got {}", quote_short(name)),
        ))
    }
}

/// `s` as a JSON string, cut to 64 characters (for error messages).
pub fn quote_short(s: &str) -> String {
    let cut: String = s.chars().take(64).collect();
    let mut q = Value::String(cut.clone()).to_string();
    if cut.len() < s.len() {
        q.push('…');
    }
    q
}

/// `Some(s)` for a non-empty string, `None` (rendered `null`) for an empty one.
pub fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// A node's properties as tools show and filter them: its metadata's top-level keys plus
/// `type`, `title` and `importance`, which win over metadata keys of the same name.
pub fn node_properties(node: &Node) -> Map<String, Value> {
    let mut m = time::visible_metadata(&node.props.props);
    m.insert("type".into(), Value::String(node.props.kind.clone()));
    m.insert("title".into(), Value::String(node.props.title.clone()));
    m.insert("importance".into(), number_f32(node.props.importance));
    m
}

/// A node's status: `metadata.status` when it is a string, else the status field.
pub fn node_status(node: &Node) -> &str {
    match node.props.props.get("status") {
        Some(Value::String(s)) => s,
        _ => &node.props.status,
    }
}

/// The validity of edge `id` as results show it (`null` end: still valid); `None` for an
/// edge without a record.
///
/// # Errors
/// A damaged edge record.
pub fn edge_validity(
    snap: &hopgraph::Snapshot,
    id: hopgraph::EdgeId,
) -> Result<Option<time::Validity>, ToolError> {
    Ok(snap
        .edge(id)
        .map_err(|e| engine_error(&e))?
        .map(|e| time::Validity::of(e.valid_from, e.valid_to)))
}

/// Characters of content shown when a node has no title.
pub const SUMMARY_CHARS: usize = 120;

/// A short description of a node: its title, or the start of its content.
pub fn summary(node: &Node) -> String {
    if !node.props.title.is_empty() {
        return node.props.title.clone();
    }
    let c = &node.props.content;
    match c.char_indices().nth(SUMMARY_CHARS) {
        Some((i, _)) => format!("{}…", &c[..i]),
        None => c.clone(),
    }
}

/// An `f32` as the JSON number it was written as (0.7, not 0.699999988079071).
pub fn number_f32(x: f32) -> Value {
    let shortest = x.to_string().parse::<f64>().unwrap_or(f64::from(x));
    serde_json::Number::from_f64(shortest).map_or(Value::Null, Value::Number)
}

/// An `f32` as the `f64` it was written as (see [`number_f32`]).
pub fn f32_to_f64(x: f32) -> f64 {
    x.to_string().parse::<f64>().unwrap_or(f64::from(x))
}

/// The environment variable both front ends read for
/// [`Options::vector_graph_min`](hopgraph::Options::vector_graph_min).
pub const VECTOR_GRAPH_MIN_ENV: &str = "HOPGRAPH_VECTOR_GRAPH_MIN";

/// `options` with `$HOPGRAPH_VECTOR_GRAPH_MIN` applied when it is set (the fewest
/// embeddings a segment needs for an HNSW graph; below it vector searches are exact).
///
/// # Errors
/// A one-line message when the variable is set but not a positive integer.
pub fn options_from_env(options: hopgraph::Options) -> Result<hopgraph::Options, String> {
    let Some(value) = std::env::var_os(VECTOR_GRAPH_MIN_ENV).filter(|v| !v.is_empty()) else {
        return Ok(options);
    };
    let n = value
        .to_str()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            format!(
                "{VECTOR_GRAPH_MIN_ENV}={} is not a positive integer (the fewest embeddings \
                 a segment needs for an HNSW graph; default {})",
                value.to_string_lossy(),
                hopgraph::HNSW_MIN_VECTORS
            )
        })?;
    Ok(options.vector_graph_min(n))
}

/// An RFC 3339 UTC timestamp (millisecond precision) from milliseconds since the epoch.
pub fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(t).to_string()
}

/// A random (version 4, RFC 9562) UUID in its 36-character lowercase hyphenated form.
pub fn new_uuid_v4() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Nesting depth of a JSON value (a scalar is 0, `[]` is 1).
pub fn json_depth(v: &Value) -> usize {
    // Iterative, so that hostile input cannot overflow the stack.
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                max = max.max(d + 1);
                stack.extend(a.iter().map(|x| (x, d + 1)));
            }
            Value::Object(o) => {
                max = max.max(d + 1);
                stack.extend(o.values().map(|x| (x, d + 1)));
            }
            _ => max = max.max(d),
        }
    }
    max
}

/// Deepest nesting accepted in `metadata` objects (the object itself counts as 1).
pub const METADATA_DEPTH_MAX: usize = 32;

/// Checks a `metadata` object: at most `bytes_max` bytes of compact JSON and at most
/// [`METADATA_DEPTH_MAX`] levels of nesting.
///
/// # Errors
/// ``Invalid argument `metadata`: ...``.
pub fn check_metadata(name: &str, m: &Props, bytes_max: usize) -> Result<(), ToolError> {
    let v = Value::Object(m.clone());
    let n = v.to_string().len();
    if n > bytes_max {
        return Err(ToolError::invalid_arg(
            name,
            format!("is {n} bytes serialized, the limit is {bytes_max}"),
        ));
    }
    let d = json_depth(&v);
    if d > METADATA_DEPTH_MAX {
        return Err(ToolError::invalid_arg(
            name,
            format!("is nested {d} levels deep, the limit is {METADATA_DEPTH_MAX}"),
        ));
    }
    Ok(())
}

/// Checks a node key given as `name` (1..=512 bytes).
///
/// # Errors
/// ``Invalid argument `name`: ...``.
pub fn check_key(name: &str, key: &str) -> Result<(), ToolError> {
    let max = hopgraph::limits::NODE_KEY_BYTES_MAX;
    if key.is_empty() || key.len() > max {
        return Err(ToolError::invalid_arg(
            name,
            format!("must be 1 to {max} bytes, got {}", key.len()),
        ));
    }
    Ok(())
}

/// Checks an edge type name given as `name` (1..=128 bytes).
///
/// # Errors
/// ``Invalid argument `name`: ...``.
pub fn check_edge_type(name: &str, t: &str) -> Result<(), ToolError> {
    let max = hopgraph::limits::EDGE_TYPE_BYTES_MAX;
    if t.is_empty() || t.len() > max {
        return Err(ToolError::invalid_arg(
            name,
            format!("must be 1 to {max} bytes, got {}", t.len()),
        ));
    }
    Ok(())
}

/// Checks that `value` lies in `min..=max` for the argument `name`.
///
/// # Errors
/// ``Invalid argument `name`: must be between min and max, got value``.
pub fn check_range<T: PartialOrd + fmt::Display>(
    name: &str,
    value: T,
    min: T,
    max: T,
) -> Result<T, ToolError> {
    if value < min || value > max {
        return Err(ToolError::invalid_arg(
            name,
            format!("must be between {min} and {max}, got {value}"),
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_735_689_599_999), "2024-12-31T23:59:59.999Z");
    }

    #[test]
    fn uuid_shape() {
        let a = new_uuid_v4();
        let b = new_uuid_v4();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert!(
            a.bytes()
                .all(|c| c == b'-' || c.is_ascii_digit() || c.is_ascii_lowercase())
        );
    }

    #[test]
    fn context_names() {
        let long = "x".repeat(64);
        for ok in [
            "default",
            "a",
            "0",
            "work.v2",
            "a_b-c",
            "a.b.c",
            "console",
            "nul1",
            "com10",
            "lpt0",
            "con-x",
            "x.con",
            "my-project_2",
            long.as_str(),
        ] {
            assert!(check_context_name(ok).is_ok(), "{ok}");
        }
        let too_long = "x".repeat(65);
        for bad in [
            "",
            ".",
            "..",
            "a..b",
            ".hidden",
            "-flag",
            "_x",
            "trailing.",
            "trailing ",
            "a/b",
            "/abs",
            "a\\b",
            "c:x",
            "a b",
            "a\0b",
            "é",
            "Work",
            "CON",
            "con",
            "Con",
            "nul.txt",
            "NUL.txt",
            "aux",
            "prn.log",
            "com1",
            "COM9",
            "lpt1",
            "lpt9.x",
            too_long.as_str(),
        ] {
            let e = check_context_name(bad).expect_err(bad);
            assert!(e.message().contains(CONTEXT_NAME_RULE), "{bad}: {e}");
        }
    }

    #[test]
    fn depth() {
        assert_eq!(json_depth(&serde_json::json!(1)), 0);
        assert_eq!(json_depth(&serde_json::json!({"a": [1, {"b": []}]})), 4);
    }
}
