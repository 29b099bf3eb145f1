//! Reading tool arguments from the raw JSON object, with one-line messages that name the
//! argument and the rule it broke (so that a model can correct its call).
//!
//! An explicit `null` counts as "not given" for optional arguments: several clients send
//! `null` for parameters they do not set.

use serde_json::{Map, Value};

use hopgraph::Props;
use hopgraph_memory::{ToolError, ToolErrorKind};

use crate::store::Location;

/// Longest string accepted for an id-like argument (a node key or an edge id), in bytes.
pub const ID_BYTES_MAX: usize = hopgraph::limits::NODE_KEY_BYTES_MAX;
/// Most items in a string list argument (`edge_types`, `seed_doc_ids`).
pub const LIST_ITEMS_MAX: usize = 1000;

/// The arguments of one tool call.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a> {
    map: Option<&'a Map<String, Value>>,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong(name: &str, expected: &str, got: &Value) -> ToolError {
    ToolError::invalid_arg(name, format!("must be {expected}, got {}", kind(got)))
}

fn missing(name: &str) -> ToolError {
    ToolError::new(
        ToolErrorKind::InvalidArgument,
        format!("Missing required argument `{name}`"),
    )
}

/// A JSON number as an integer, if it is one (`5` and `5.0` are; `5.5` is not).
pub fn as_integer(v: &Value) -> Option<i128> {
    let n = v.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    let f = n.as_f64()?;
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30 {
        #[allow(clippy::cast_possible_truncation)] // integral and below 1e30
        return Some(f as i128);
    }
    None
}

impl<'a> Args<'a> {
    /// Arguments from a call's `arguments` object (absent = no arguments).
    pub fn new(map: Option<&'a Map<String, Value>>) -> Args<'a> {
        Args { map }
    }

    /// The argument `name`, `None` when absent or `null`.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.map?.get(name).filter(|v| !v.is_null())
    }

    /// A required string.
    ///
    /// # Errors
    /// Missing or not a string.
    pub fn req_str(&self, name: &str) -> Result<String, ToolError> {
        self.opt_str(name)?.ok_or_else(|| missing(name))
    }

    /// A required id: a non-empty string of at most [`ID_BYTES_MAX`] bytes.
    ///
    /// # Errors
    /// Missing, not a string, empty or too long.
    pub fn req_id(&self, name: &str) -> Result<String, ToolError> {
        let s = self.req_str(name)?;
        check_id(name, &s)?;
        Ok(s)
    }

    /// An optional string.
    ///
    /// # Errors
    /// Not a string.
    pub fn opt_str(&self, name: &str) -> Result<Option<String>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(wrong(name, "a string", v)),
        }
    }

    /// An optional string that must be one of `allowed`.
    ///
    /// # Errors
    /// Not a string, or not one of `allowed`.
    pub fn opt_enum(&self, name: &str, allowed: &[&str]) -> Result<Option<String>, ToolError> {
        match self.opt_str(name)? {
            None => Ok(None),
            Some(s) if allowed.contains(&s.as_str()) => Ok(Some(s)),
            Some(s) => Err(ToolError::invalid_arg(
                name,
                format!(
                    "must be one of {}, got {}",
                    allowed.join(", "),
                    hopgraph_memory::quote_short(&s)
                ),
            )),
        }
    }

    /// An optional integer, for the memory layer to range-check (the one place): one
    /// beyond `i64` is passed as `i64::MAX` or `i64::MIN`, which every range refuses with
    /// its own bounds in the message.
    ///
    /// # Errors
    /// Not an integer.
    pub fn opt_integer(&self, name: &str) -> Result<Option<i64>, ToolError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let i = as_integer(v).ok_or_else(|| wrong(name, "an integer", v))?;
        Ok(Some(i64::try_from(i).unwrap_or(if i < 0 {
            i64::MIN
        } else {
            i64::MAX
        })))
    }

    /// A required integer of any `i64` value (a range the memory layer checks).
    ///
    /// # Errors
    /// Missing, not an integer, or beyond `i64`.
    pub fn req_integer(&self, name: &str) -> Result<i64, ToolError> {
        self.opt_integer(name)?.ok_or_else(|| missing(name))
    }

    /// An optional number (finite).
    ///
    /// # Errors
    /// Not a number.
    pub fn opt_f64(&self, name: &str) -> Result<Option<f64>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => n
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| wrong(name, "a finite number", v)),
            Some(v) => Err(wrong(name, "a number", v)),
        }
    }

    /// An optional boolean.
    ///
    /// # Errors
    /// Not a boolean.
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(wrong(name, "a boolean", v)),
        }
    }

    /// An optional object.
    ///
    /// # Errors
    /// Not an object.
    pub fn opt_obj(&self, name: &str) -> Result<Option<Props>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o.clone())),
            Some(v) => Err(wrong(name, "an object", v)),
        }
    }

    /// A required array (its items are checked by the caller).
    ///
    /// # Errors
    /// Missing or not an array.
    pub fn req_array(&self, name: &str) -> Result<&'a Vec<Value>, ToolError> {
        match self.get(name) {
            None => Err(missing(name)),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(wrong(name, "an array", v)),
        }
    }

    /// An optional list of strings, at most [`LIST_ITEMS_MAX`] items.
    ///
    /// # Errors
    /// Not an array of strings, or too long.
    pub fn opt_str_list(&self, name: &str) -> Result<Option<Vec<String>>, ToolError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let Value::Array(a) = v else {
            return Err(wrong(name, "an array of strings", v));
        };
        if a.len() > LIST_ITEMS_MAX {
            return Err(ToolError::invalid_arg(
                name,
                format!("has {} items, the limit is {LIST_ITEMS_MAX}", a.len()),
            ));
        }
        a.iter()
            .enumerate()
            .map(|(i, x)| match x {
                Value::String(s) => Ok(s.clone()),
                other => Err(wrong(&format!("{name}[{i}]"), "a string", other)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An optional list of numbers (an embedding), at most 4096 items.
    ///
    /// # Errors
    /// Not an array of numbers, or too long.
    pub fn opt_num_list(&self, name: &str) -> Result<Option<Vec<f64>>, ToolError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let Value::Array(a) = v else {
            return Err(wrong(name, "an array of numbers", v));
        };
        let max = hopgraph::limits::EMBEDDING_DIMS_MAX;
        if a.len() > max {
            return Err(ToolError::invalid_arg(
                name,
                format!("must have 1 to {max} numbers, got {}", a.len()),
            ));
        }
        a.iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .filter(|f| f.is_finite())
                    .ok_or_else(|| wrong(&format!("{name}[{i}]"), "a finite number", x))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// Checks an id-like string: non-empty, at most [`ID_BYTES_MAX`] bytes.
///
/// # Errors
/// ``Invalid argument `name`: ...``.
pub fn check_id(name: &str, s: &str) -> Result<(), ToolError> {
    if s.is_empty() || s.len() > ID_BYTES_MAX {
        return Err(ToolError::invalid_arg(
            name,
            format!("must be 1 to {ID_BYTES_MAX} bytes, got {}", s.len()),
        ));
    }
    Ok(())
}

/// The object at `v` (an item of an array argument named `name`).
///
/// # Errors
/// Not an object.
pub fn item_obj<'v>(name: &str, v: &'v Value) -> Result<Args<'v>, ToolError> {
    match v {
        Value::Object(o) => Ok(Args::new(Some(o))),
        other => Err(wrong(name, "an object", other)),
    }
}

/// Prefixes argument names in an error from an item's [`Args`] with the item's path:
/// ``Invalid argument `name` `` becomes ``Invalid argument `relations[2].name` ``.
pub fn in_item(prefix: &str, e: ToolError) -> ToolError {
    ToolError::new(
        e.kind(),
        e.message()
            .replacen("argument `", &format!("argument `{prefix}."), 1),
    )
}

/// Longest `arguments` object accepted, in bytes of compact JSON (content may be 1 MiB).
pub const ARGUMENTS_BYTES_MAX: usize = 2 << 20;
/// Deepest nesting accepted in `arguments` (the object itself counts as 1).
pub const ARGUMENTS_DEPTH_MAX: usize = 40;

/// The `location` argument of the AIM tools.
///
/// # Errors
/// A value other than `project` or `global`.
pub fn location(args: &Args<'_>) -> Result<Option<Location>, ToolError> {
    Ok(
        match args
            .opt_enum("location", &["project", "global"])?
            .as_deref()
        {
            Some("project") => Some(Location::Project),
            Some(_) => Some(Location::Global),
            None => None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_name_the_argument() {
        let v = json!({"a": "x", "n": 11, "f": 2.5, "z": null});
        let args = Args::new(v.as_object());
        // The range is the memory layer's; the adapter reads the integer.
        let n = args.opt_integer("n").unwrap();
        assert_eq!(
            hopgraph_memory::ranges::IntRange::new("n", 1, 10, 1)
                .check_or_default(n)
                .unwrap_err()
                .into_message(),
            "Invalid argument `n`: must be between 1 and 10, got 11"
        );
        assert_eq!(
            args.opt_integer("a").unwrap_err().into_message(),
            "Invalid argument `a`: must be an integer, got a string"
        );
        assert_eq!(
            args.opt_integer("f").unwrap_err().into_message(),
            "Invalid argument `f`: must be an integer, got a number"
        );
        assert_eq!(args.opt_integer("z").unwrap(), None);
        let big = json!({"n": 1e20, "m": -1e20, "s": "7"});
        let big = Args::new(big.as_object());
        assert_eq!(big.opt_integer("n").unwrap(), Some(i64::MAX));
        assert_eq!(big.opt_integer("m").unwrap(), Some(i64::MIN));
        assert_eq!(big.opt_integer("q").unwrap(), None);
        assert_eq!(
            big.opt_integer("s").unwrap_err().into_message(),
            "Invalid argument `s`: must be an integer, got a string"
        );
        assert_eq!(
            args.req_str("q").unwrap_err().into_message(),
            "Missing required argument `q`"
        );
        assert_eq!(
            in_item("relations[0]", args.req_str("q").unwrap_err()).into_message(),
            "Missing required argument `relations[0].q`"
        );
    }
}
