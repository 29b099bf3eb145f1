//! Request limits checked on the raw line, before any JSON value is built.
//!
//! The gate (`server`) runs [`check_line`] over every line that fits the line limit. It is
//! one streaming pass of serde_json's deserializer with visitors that keep nothing but a
//! few counters: every string is decoded once (linear in its bytes, escapes included) and
//! dropped, every array and object is counted as it is read. It stops at the first limit
//! broken, so a `relations` array of 100,000 items costs the scan of its first 1,001. Only
//! lines that pass are parsed into values (by the gate and by rmcp), and those are bounded
//! by the limits below, so the memory one request can take is a small multiple of
//! [`LINE_BYTES_MAX`].
//!
//! Limits of tool arguments are keyed by argument name (every tool uses a name with one
//! meaning), so the check does not depend on the order of `name` and `arguments` in the
//! message. The tools check the same limits again on their typed values (which also covers
//! in-process callers).
//!
//! [`scan_id`] finds a request's `id` in a prefix of a line, for answering a line that
//! broke a limit or was cut at the line limit with the request's own id.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::args::{ARGUMENTS_BYTES_MAX, ARGUMENTS_DEPTH_MAX, ID_BYTES_MAX, LIST_ITEMS_MAX};
use hopgraph::limits;

/// Longest input line accepted, in bytes (without the newline): the arguments limit plus
/// 64 KiB for the envelope. A longer line is answered `-32600` (with its id when the id
/// can be read from the part before the limit) and skipped without being stored.
pub const LINE_BYTES_MAX: usize = ARGUMENTS_BYTES_MAX + (64 << 10);
/// Most JSON values (scalars, arrays and objects, at any depth) in one message.
pub const MESSAGE_VALUES_MAX: usize = 1 << 16;
/// Deepest nesting of a message outside the tool arguments (the message object is 1).
pub const MESSAGE_DEPTH_MAX: usize = ARGUMENTS_DEPTH_MAX + 8;
/// Longest string anywhere in a message, unless its argument has a lower limit.
pub const STRING_BYTES_MAX: usize = limits::NODE_CONTENT_BYTES_MAX;
/// Longest timestamp argument (`as_of`, `valid_from`, `valid_to`, `at`), in bytes.
pub const TIME_BYTES_MAX: usize = 64;
/// Most items of an array anywhere in a message, unless its argument has a lower limit.
pub const ARRAY_ITEMS_MAX: usize = limits::EMBEDDING_DIMS_MAX;

/// Limits of one argument: most items when it is an array, most bytes when it is a
/// string, and the limits of its items.
#[derive(Clone, Copy, Debug)]
struct ArgLimits {
    items_max: usize,
    bytes_max: usize,
}

const fn arg(items_max: usize, bytes_max: usize) -> ArgLimits {
    ArgLimits {
        items_max,
        bytes_max,
    }
}

const DEFAULT: ArgLimits = arg(ARRAY_ITEMS_MAX, STRING_BYTES_MAX);

/// The documented limits by argument name (top level of `arguments`, or a field of an
/// `entities`/`relations` item), and the limits of the items of list arguments.
fn limits_of(name: &str) -> ArgLimits {
    match name {
        "entities" | "relations" => arg(hopgraph_memory::aim::AIM_BATCH_MAX, STRING_BYTES_MAX),
        "observations" => arg(LIST_ITEMS_MAX, STRING_BYTES_MAX),
        "edge_types" | "seed_doc_ids" => arg(LIST_ITEMS_MAX, STRING_BYTES_MAX),
        "embedding" => arg(limits::EMBEDDING_DIMS_MAX, STRING_BYTES_MAX),
        "content" => arg(ARRAY_ITEMS_MAX, limits::NODE_CONTENT_BYTES_MAX),
        "query" => arg(ARRAY_ITEMS_MAX, hopgraph_memory::search::QUERY_BYTES_MAX),
        "title" => arg(ARRAY_ITEMS_MAX, hopgraph_memory::nodes::TITLE_BYTES_MAX),
        "memory_id" | "source_id" | "target_id" | "edge_id" | "from_id" | "to_id" | "id"
        | "from" | "to" | "name" | "by_id" => arg(ARRAY_ITEMS_MAX, ID_BYTES_MAX),
        "as_of" | "valid_from" | "valid_to" | "at" => arg(ARRAY_ITEMS_MAX, TIME_BYTES_MAX),
        "reason" => arg(ARRAY_ITEMS_MAX, hopgraph_memory::history::REASON_BYTES_MAX),
        "derived_edge_types" => arg(
            hopgraph_memory::history::DERIVED_TYPES_MAX,
            limits::EDGE_TYPE_BYTES_MAX,
        ),
        "edge_type" | "relationType" => arg(ARRAY_ITEMS_MAX, limits::EDGE_TYPE_BYTES_MAX),
        "context" => arg(ARRAY_ITEMS_MAX, hopgraph_memory::CONTEXT_NAME_BYTES_MAX),
        _ => DEFAULT,
    }
}

/// Limits of the items of list argument `name`.
fn item_limits_of(name: &str) -> ArgLimits {
    match name {
        "edge_types" | "derived_edge_types" => arg(ARRAY_ITEMS_MAX, limits::EDGE_TYPE_BYTES_MAX),
        "seed_doc_ids" => arg(ARRAY_ITEMS_MAX, ID_BYTES_MAX),
        _ => DEFAULT,
    }
}

/// A limit a line broke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// A tool argument broke its limit: answered as a tool error (`isError`), as argument
    /// errors are.
    Argument(String),
    /// The message itself (nesting, number of values): answered JSON-RPC `-32600`.
    Message(String),
}

/// What [`check_line`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineCheck {
    /// Within every limit (the line is well-formed JSON).
    Ok,
    /// Not JSON: the parser's message.
    Syntax(String),
    /// A limit broken.
    Broken(Violation),
}

/// Where in the message a value sits.
#[derive(Clone, Copy, Debug)]
enum Role<'n> {
    /// The message object.
    Message,
    /// `params`.
    Params,
    /// `params.arguments`.
    Arguments,
    /// An argument (or a field of an entities/relations item), with its path.
    Arg {
        name: &'n str,
        index: Option<usize>,
        field: Option<&'n str>,
        limits: ArgLimits,
    },
    /// An item of a list argument.
    Item {
        name: &'n str,
        index: usize,
        limits: ArgLimits,
    },
    /// Anything else.
    Other,
}

#[derive(Debug, Default)]
struct State {
    values: usize,
    violation: Option<Violation>,
}

/// A value to walk: its role, depth in the message and depth in the arguments (0 outside).
struct Walk<'s, 'n> {
    st: &'s mut State,
    role: Role<'n>,
    depth: usize,
    arg_depth: usize,
}

fn path(role: &Role<'_>) -> String {
    match role {
        Role::Arg {
            name,
            index: Some(i),
            field: Some(f),
            ..
        } => format!("{name}[{i}].{f}"),
        Role::Arg { name, .. } => (*name).to_owned(),
        Role::Item { name, index, .. } => format!("{name}[{index}]"),
        _ => String::new(),
    }
}

impl Walk<'_, '_> {
    fn fail<E: de::Error>(&mut self, v: Violation) -> E {
        self.st.violation = Some(v);
        E::custom("limit")
    }

    fn limits(&self) -> ArgLimits {
        match self.role {
            Role::Arg { limits, .. } | Role::Item { limits, .. } => limits,
            _ => DEFAULT,
        }
    }

    fn in_args(&self) -> bool {
        matches!(
            self.role,
            Role::Arguments | Role::Arg { .. } | Role::Item { .. }
        )
    }

    /// Counts one value and checks the depth of a container that opens here.
    fn enter<E: de::Error>(&mut self, container: bool) -> Result<(), E> {
        self.st.values += 1;
        if self.st.values > MESSAGE_VALUES_MAX {
            return Err(self.fail(Violation::Message(format!(
                "Invalid Request: the message holds more than {MESSAGE_VALUES_MAX} JSON values"
            ))));
        }
        if container && self.arg_depth > ARGUMENTS_DEPTH_MAX {
            return Err(self.fail(Violation::Argument(format!(
                "Arguments are nested more than {ARGUMENTS_DEPTH_MAX} levels deep, the limit \
                 is {ARGUMENTS_DEPTH_MAX}"
            ))));
        }
        if container && self.depth > MESSAGE_DEPTH_MAX {
            return Err(self.fail(Violation::Message(format!(
                "Invalid Request: the message is nested more than {MESSAGE_DEPTH_MAX} levels \
                 deep"
            ))));
        }
        Ok(())
    }

    fn child<'c, 'm>(&'c mut self, role: Role<'m>) -> Walk<'c, 'm> {
        let in_args = matches!(role, Role::Arguments | Role::Arg { .. } | Role::Item { .. });
        Walk {
            st: self.st,
            role,
            depth: self.depth + 1,
            arg_depth: if in_args { self.arg_depth + 1 } else { 0 },
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(mut self, _: bool) -> Result<(), E> {
        self.enter(false)
    }
    fn visit_i64<E: de::Error>(mut self, _: i64) -> Result<(), E> {
        self.enter(false)
    }
    fn visit_u64<E: de::Error>(mut self, _: u64) -> Result<(), E> {
        self.enter(false)
    }
    fn visit_f64<E: de::Error>(mut self, _: f64) -> Result<(), E> {
        self.enter(false)
    }
    fn visit_unit<E: de::Error>(mut self) -> Result<(), E> {
        self.enter(false)
    }
    fn visit_str<E: de::Error>(mut self, s: &str) -> Result<(), E> {
        self.enter(false)?;
        let max = self.limits().bytes_max;
        if s.len() > max {
            let v = if self.in_args() && !matches!(self.role, Role::Arguments) {
                Violation::Argument(format!(
                    "Invalid argument `{}`: is {} bytes, the limit is {max}",
                    path(&self.role),
                    s.len()
                ))
            } else {
                Violation::Message(format!(
                    "Invalid Request: a string of {} bytes, the limit is {max}",
                    s.len()
                ))
            };
            return Err(self.fail(v));
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.enter(true)?;
        let role = self.role;
        let max = self.limits().items_max;
        let mut index = 0usize;
        loop {
            if index == max {
                // One more item would break the limit: stop at it without reading it.
                if seq.next_element::<IgnoredPeek>()?.is_some() {
                    let v = match role {
                        Role::Arg { .. } | Role::Item { .. } => Violation::Argument(format!(
                            "Invalid argument `{}`: has more than {max} items, the limit is \
                             {max}",
                            path(&role)
                        )),
                        _ => Violation::Message(format!(
                            "Invalid Request: an array of more than {max} items"
                        )),
                    };
                    return Err(self.fail(v));
                }
                return Ok(());
            }
            let child_role = match role {
                Role::Arg {
                    name, field: None, ..
                } => Role::Item {
                    name,
                    index,
                    limits: item_limits_of(name),
                },
                Role::Arg { .. } | Role::Item { .. } | Role::Arguments => Role::Item {
                    name: "",
                    index,
                    limits: DEFAULT,
                },
                _ => Role::Other,
            };
            let child = self.child(child_role);
            if seq.next_element_seed(child)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.enter(true)?;
        let role = self.role;
        while let Some(key) = map.next_key::<KeyBuf>()? {
            let key = key.0;
            let child_role = match role {
                Role::Message if key == "params" => Role::Params,
                Role::Params if key == "arguments" => Role::Arguments,
                Role::Arguments => Role::Arg {
                    name: &key,
                    index: None,
                    field: None,
                    limits: limits_of(&key),
                },
                Role::Item {
                    name: parent @ ("entities" | "relations"),
                    index,
                    ..
                } => Role::Arg {
                    name: parent,
                    index: Some(index),
                    field: Some(&key),
                    limits: limits_of(&key),
                },
                Role::Arg { .. } | Role::Item { .. } => Role::Item {
                    name: "",
                    index: 0,
                    limits: DEFAULT,
                },
                _ => Role::Other,
            };
            // Keys are strings too: counted and held to the string limit.
            self.st.values += 1;
            if key.len() > STRING_BYTES_MAX {
                return Err(self.fail(Violation::Message(
                    "Invalid Request: an object key is too long".to_owned(),
                )));
            }
            let child = self.child(child_role);
            map.next_value_seed(child)?;
        }
        Ok(())
    }
}

/// An object key, decoded (borrowed from the line when it has no escapes).
struct KeyBuf(String);

impl<'de> serde::Deserialize<'de> for KeyBuf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyBuf, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = KeyBuf;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KeyBuf, E> {
                // Keys of argument objects are short names; a long key is refused by the
                // caller after this copy, which the line limit bounds.
                Ok(KeyBuf(s.to_owned()))
            }
        }
        d.deserialize_str(V)
    }
}

/// Stands for an item past an array's limit: reports that there is one without reading it
/// (the walk stops with an error right after).
struct IgnoredPeek;

impl<'de> serde::Deserialize<'de> for IgnoredPeek {
    fn deserialize<D: Deserializer<'de>>(_d: D) -> Result<IgnoredPeek, D::Error> {
        Ok(IgnoredPeek)
    }
}

/// Checks one line (without its newline) against the limits of this module, building no
/// JSON value. Linear in the line's length.
pub fn check_line(line: &[u8]) -> LineCheck {
    let mut st = State::default();
    let walk = Walk {
        st: &mut st,
        role: Role::Message,
        depth: 1,
        arg_depth: 0,
    };
    let mut de = serde_json::Deserializer::from_slice(line);
    let r = walk.deserialize(&mut de).and_then(|()| de.end());
    match (r, st.violation) {
        (_, Some(v)) => LineCheck::Broken(v),
        (Ok(()), None) => LineCheck::Ok,
        (Err(e), None) => LineCheck::Syntax(e.to_string()),
    }
}

/// The top-level `"id"` of a JSON object in `prefix` (possibly cut anywhere), when it is a
/// string or an integer and complete within `prefix`. A small hand-written scanner: linear,
/// no recursion, never builds the skipped values.
pub fn scan_id(prefix: &[u8]) -> Option<Value> {
    let mut i = skip_ws(prefix, 0);
    if prefix.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(prefix, i);
        match prefix.get(i)? {
            b'}' => return None,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(prefix, i)?;
        let is_id = &prefix[i..key_end] == b"\"id\"";
        i = skip_ws(prefix, key_end);
        if prefix.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(prefix, i + 1);
        if is_id {
            let end = match prefix.get(i)? {
                b'"' => string_end(prefix, i)?,
                b'-' | b'0'..=b'9' => {
                    let n = prefix[i + 1..]
                        .iter()
                        .take_while(|b| b.is_ascii_digit())
                        .count();
                    let end = i + 1 + n;
                    // A number cut by the end of the prefix is not known whole.
                    if end >= prefix.len() {
                        return None;
                    }
                    end
                }
                _ => return None,
            };
            let v: Value = serde_json::from_slice(&prefix[i..end]).ok()?;
            return match &v {
                Value::String(_) => Some(v),
                Value::Number(n) if n.is_i64() || n.is_u64() => Some(v),
                _ => None,
            };
        }
        i = skip_value(prefix, i)?;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index just past the string that starts at `b[i] == '"'`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// The index just past the value that starts at `i` (at the `,` or `}` that follows it).
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match b.get(i)? {
            b'"' => {
                i = string_end(b, i)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return Some(i),
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(args: &Value) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "t", "arguments": args}})
        .to_string()
        .into_bytes()
    }

    fn arg_err(args: &Value) -> String {
        match check_line(&call(args)) {
            LineCheck::Broken(Violation::Argument(m)) => m,
            other => panic!("expected an argument violation, got {other:?}"),
        }
    }

    #[test]
    fn each_limit_at_and_past_it() {
        let rel = json!({"from": "a", "to": "b", "relationType": "r"});
        let at = json!({ "relations": vec![rel.clone(); 1000] });
        assert_eq!(check_line(&call(&at)), LineCheck::Ok);
        let past = json!({ "relations": vec![rel; 1001] });
        assert_eq!(
            arg_err(&past),
            "Invalid argument `relations`: has more than 1000 items, the limit is 1000"
        );
        let emb = |n: usize| json!({ "embedding": vec![0.5; n] });
        assert_eq!(check_line(&call(&emb(4096))), LineCheck::Ok);
        assert!(arg_err(&emb(4097)).starts_with("Invalid argument `embedding`"));
        let id = |n: usize| json!({ "memory_id": "x".repeat(n) });
        assert_eq!(check_line(&call(&id(512))), LineCheck::Ok);
        assert_eq!(
            arg_err(&id(513)),
            "Invalid argument `memory_id`: is 513 bytes, the limit is 512"
        );
        let from =
            json!({"relations": [{"from": "x".repeat(513), "to": "b", "relationType": "r"}]});
        assert_eq!(
            arg_err(&from),
            "Invalid argument `relations[0].from`: is 513 bytes, the limit is 512"
        );
        let et = json!({"edge_types": ["e".repeat(129)]});
        assert!(arg_err(&et).starts_with("Invalid argument `edge_types[0]`"));
        let content = |n: usize| json!({ "content": "c".repeat(n) });
        assert_eq!(check_line(&call(&content(1 << 20))), LineCheck::Ok);
        assert!(arg_err(&content((1 << 20) + 1)).starts_with("Invalid argument `content`"));
        let mut deep = json!(1);
        for _ in 0..ARGUMENTS_DEPTH_MAX - 1 {
            deep = json!([deep]);
        }
        assert_eq!(check_line(&call(&json!({ "d": deep }))), LineCheck::Ok);
        let deeper = json!({ "d": [deep] });
        assert!(arg_err(&deeper).starts_with("Arguments are nested more than 40"));
    }

    #[test]
    fn escapes_count_as_decoded_bytes() {
        // 512 escaped NULs decode to 512 bytes: within the id limit.
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"arguments":{{"memory_id":"{}"}}}}}}"#,
            "\\u0000".repeat(512)
        );
        assert_eq!(check_line(line.as_bytes()), LineCheck::Ok);
    }

    #[test]
    fn message_limits_and_syntax() {
        assert!(matches!(check_line(b"{not json"), LineCheck::Syntax(_)));
        assert!(matches!(check_line(b"{} x"), LineCheck::Syntax(_)));
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(matches!(
            check_line(deep.as_bytes()),
            LineCheck::Broken(Violation::Message(_))
        ));
        let many = format!("[{}]", vec!["[0,0,0,0,0,0,0]"; 10_000].join(","));
        assert!(matches!(
            check_line(many.as_bytes()),
            LineCheck::Broken(Violation::Message(_))
        ));
    }

    #[test]
    fn ids_from_prefixes() {
        let full =
            br#"{"jsonrpc":"2.0","params":{"id":1,"x":["}",{"id":2}]},"id":"abc","method":"m"}"#;
        assert_eq!(scan_id(full), Some(json!("abc")));
        assert_eq!(scan_id(br#" { "id" : 42 , "params": {"#), Some(json!(42)));
        assert_eq!(scan_id(br#"{"id":4"#), None, "a cut number is unknown");
        assert_eq!(
            scan_id(br#"{"params":{"a":"\"id\":3"},"id":-5,"#),
            Some(json!(-5))
        );
        assert_eq!(scan_id(br#"{"params":{"x":"yyyy"#), None);
        assert_eq!(scan_id(br#"{"id":null}"#), None);
        assert_eq!(scan_id(b"[1]"), None);
    }
}
