//! Python values <-> engine values: errors, directions, type lists, JSON objects,
//! embeddings and timestamps. Translation only; every rule is the engine's.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{IntoPyObjectExt, create_exception};
use serde_json::{Map, Number, Value};

use hopgraph::{Direction, Error};

create_exception!(
    hopgraph,
    HopgraphError,
    PyException,
    "Base class of every error the engine raises."
);
create_exception!(
    hopgraph,
    NotFoundError,
    HopgraphError,
    "An unknown node key, or no database where one was required."
);
create_exception!(
    hopgraph,
    InvalidArgumentError,
    HopgraphError,
    "A bad argument: a value out of range, an over-long key, a node that exists already."
);
create_exception!(
    hopgraph,
    CorruptError,
    HopgraphError,
    "A damaged, foreign or newer-format database file. Nothing was changed; run `hopgraph check`."
);
create_exception!(
    hopgraph,
    IoError,
    HopgraphError,
    "A file could not be read or written (permissions, a full disk, ...)."
);
create_exception!(
    hopgraph,
    WriterPoisonedError,
    HopgraphError,
    "Writes are disabled after an earlier I/O failure; reopen the database."
);
create_exception!(
    hopgraph,
    LimitReachedError,
    HopgraphError,
    "A query ran out of its work or time budget before it could answer."
);
create_exception!(
    hopgraph,
    ReadOnlyError,
    HopgraphError,
    "A write on a database opened read-only."
);
create_exception!(
    hopgraph,
    ConflictError,
    HopgraphError,
    "A conditional batch (`WriteBatch.expect_lsn`) found newer commits; nothing was written. Take a new snapshot and retry."
);

/// The Python exception for an engine error: one class per kind, the engine's message.
pub fn error(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::NodeNotFound { .. } | Error::NotADatabase { .. } => NotFoundError::new_err(msg),
        Error::InvalidArgument { .. } | Error::LimitExceeded { .. } | Error::NodeExists { .. } => {
            InvalidArgumentError::new_err(msg)
        }
        Error::Corrupt { .. } | Error::UnsupportedVersion { .. } | Error::ForeignFile { .. } => {
            CorruptError::new_err(msg)
        }
        Error::Io { .. } => IoError::new_err(msg),
        Error::WriterPoisoned(_) => WriterPoisonedError::new_err(msg),
        Error::LimitReached { .. } => LimitReachedError::new_err(msg),
        Error::ReadOnly => ReadOnlyError::new_err(msg),
        Error::Conflict { .. } => ConflictError::new_err(msg),
        _ => HopgraphError::new_err(msg),
    }
}

/// An invalid-argument error naming the argument.
pub fn invalid(name: &str, reason: impl std::fmt::Display) -> PyErr {
    InvalidArgumentError::new_err(format!("invalid {name}: {reason}"))
}

/// `"out"`, `"in"` or `"both"`.
pub fn direction(s: &str) -> PyResult<Direction> {
    match s {
        "out" => Ok(Direction::Out),
        "in" => Ok(Direction::In),
        "both" => Ok(Direction::Both),
        other => Err(invalid(
            "direction",
            format!("must be \"out\", \"in\" or \"both\", got {other:?}"),
        )),
    }
}

/// Edge types: `None` (every type), one name, or a sequence of names.
pub fn types(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    match value {
        None => Ok(Vec::new()),
        Some(v) if v.is_none() => Ok(Vec::new()),
        Some(v) if v.is_instance_of::<PyString>() => Ok(vec![v.extract()?]),
        Some(v) => v
            .extract::<Vec<String>>()
            .map_err(|_| invalid("types", "must be a string or a sequence of strings")),
    }
}

/// An embedding: a 1-d numpy array (any float dtype; converted to little-endian float32
/// by numpy itself and copied once) or any sequence of numbers. numpy is recognised by
/// duck typing (`ndim`, `astype`, `tobytes`), so the package neither links nor requires it.
pub fn embedding(value: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    let bad = || {
        invalid(
            "embedding",
            "must be a sequence of numbers or a 1-d float array",
        )
    };
    if value.hasattr("tobytes")?
        && value.hasattr("astype")?
        && let Ok(ndim) = value.getattr("ndim").and_then(|n| n.extract::<usize>())
    {
        if ndim != 1 {
            return Err(bad());
        }
        let bytes = value
            .call_method1("astype", ("<f4",))
            .and_then(|a| a.call_method0("tobytes"))
            .map_err(|_| bad())?;
        let bytes = bytes.cast::<PyBytes>().map_err(|_| bad())?.as_bytes();
        return Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect());
    }
    value.extract::<Vec<f32>>().map_err(|_| bad())
}

/// A JSON object from a Python mapping (`None`: empty).
pub fn object(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Map<String, Value>> {
    match value {
        None => Ok(Map::new()),
        Some(v) if v.is_none() => Ok(Map::new()),
        Some(v) => match json(name, v, 0)? {
            Value::Object(m) => Ok(m),
            _ => Err(invalid(name, "must be a dict")),
        },
    }
}

/// Deepest nesting accepted when converting a Python value to JSON (the engine's own
/// limits on props apply after that).
const JSON_DEPTH_MAX: usize = 64;

/// A JSON value from a Python value (dict with str keys, list/tuple, str, int, float,
/// bool, None).
pub fn json(name: &str, v: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > JSON_DEPTH_MAX {
        return Err(invalid(
            name,
            format!("nested deeper than {JSON_DEPTH_MAX}"),
        ));
    }
    if v.is_none() {
        Ok(Value::Null)
    } else if v.is_instance_of::<PyBool>() {
        Ok(Value::Bool(v.extract()?))
    } else if v.is_instance_of::<PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            Ok(Value::Number(i.into()))
        } else {
            let u: u64 = v
                .extract()
                .map_err(|_| invalid(name, "an integer beyond 64 bits"))?;
            Ok(Value::Number(u.into()))
        }
    } else if v.is_instance_of::<PyFloat>() {
        let f: f64 = v.extract()?;
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| invalid(name, "NaN and infinity are not JSON"))
    } else if v.is_instance_of::<PyString>() {
        Ok(Value::String(v.extract()?))
    } else if let Ok(d) = v.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, x) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| invalid(name, "dict keys must be strings"))?;
            m.insert(k, json(name, &x, depth + 1)?);
        }
        Ok(Value::Object(m))
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for x in v.try_iter()? {
            out.push(json(name, &x?, depth + 1)?);
        }
        Ok(Value::Array(out))
    } else {
        Err(invalid(
            name,
            format!(
                "a {} is not JSON (use dict, list, str, int, float, bool, None)",
                v.get_type().name()?
            ),
        ))
    }
}

/// A Python value from a JSON value.
pub fn py_json(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_py_any(py)?,
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_py_any(py)?,
            (None, Some(u)) => u.into_py_any(py)?,
            _ => n.as_f64().unwrap_or(f64::NAN).into_py_any(py)?,
        },
        Value::String(s) => s.into_py_any(py)?,
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| py_json(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        Value::Object(m) => py_object(py, m)?,
    })
}

/// A Python dict from a JSON object.
pub fn py_object(py: Python<'_>, m: &Map<String, Value>) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    for (k, x) in m {
        d.set_item(k, py_json(py, x)?)?;
    }
    Ok(d.into_any().unbind())
}

/// A timezone-aware UTC `datetime` from milliseconds since the Unix epoch.
pub fn datetime(py: Python<'_>, ms: u64) -> PyResult<Py<PyAny>> {
    let dt = py.import("datetime")?;
    let utc = dt.getattr("timezone")?.getattr("utc")?;
    // Milliseconds as f64 seconds are exact for any date before the year 287,396.
    #[allow(clippy::cast_precision_loss)]
    let secs = ms as f64 / 1000.0;
    Ok(dt
        .getattr("datetime")?
        .call_method1("fromtimestamp", (secs, utc))?
        .unbind())
}

/// A moment given as an argument (`as_of`, `valid_from`, `at`, ...), in milliseconds since
/// the Unix epoch: a `datetime` (a naive one is taken as UTC), an RFC 3339 string
/// (`"2024-05-01T12:00:00Z"`, any offset) or an int of milliseconds since 1970.
pub fn time(name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let bad = || {
        invalid(
            name,
            "must be a datetime, an RFC 3339 string such as \"2024-05-01T12:00:00Z\" or \
             milliseconds since 1970 (an int), not before 1970",
        )
    };
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(bad());
    }
    if let Ok(ms) = value.extract::<i64>() {
        return u64::try_from(ms).map_err(|_| bad());
    }
    let py = value.py();
    let dt = py.import("datetime")?;
    let utc = dt.getattr("timezone")?.getattr("utc")?;
    let datetime = dt.getattr("datetime")?;
    let moment = if let Ok(s) = value.extract::<String>() {
        // fromisoformat before Python 3.11 does not read a `Z`.
        let s = match s.strip_suffix(['Z', 'z']) {
            Some(head) => format!("{head}+00:00"),
            None => s,
        };
        datetime
            .call_method1("fromisoformat", (s,))
            .map_err(|_| bad())?
    } else if value.is_instance(&datetime)? {
        value.clone()
    } else {
        return Err(bad());
    };
    let moment = if moment.getattr("tzinfo")?.is_none() {
        let kw = pyo3::types::PyDict::new(py);
        kw.set_item("tzinfo", &utc)?;
        moment.call_method("replace", (), Some(&kw))?
    } else {
        moment
    };
    // Whole milliseconds since the epoch, in integer arithmetic (exact).
    let epoch = datetime.call_method1("fromtimestamp", (0, &utc))?;
    let one_ms = dt.getattr("timedelta")?.call(
        (),
        Some(&{
            let kw = pyo3::types::PyDict::new(py);
            kw.set_item("milliseconds", 1)?;
            kw
        }),
    )?;
    let ms: i64 = moment
        .call_method1("__sub__", (epoch,))?
        .call_method1("__floordiv__", (one_ms,))?
        .extract()?;
    u64::try_from(ms).map_err(|_| bad())
}

/// An optional time argument (`None`: not given).
pub fn opt_time(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    value
        .filter(|v| !v.is_none())
        .map(|v| time(name, v))
        .transpose()
}
