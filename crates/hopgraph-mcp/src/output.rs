//! A tool's successful answer: structured content plus its text block.

use serde::Serialize;
use serde_json::{Map, Value};

use hopgraph_memory::{ToolError, ToolErrorKind};

/// A successful tool result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// `structuredContent` (always an object).
    pub structured: Value,
    /// The text block.
    pub text: String,
}

impl ToolOutput {
    /// The result `value` with its compact JSON as text.
    pub(crate) fn json<T: Serialize>(value: &T) -> Result<ToolOutput, ToolError> {
        let structured = serde_json::to_value(value).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Internal,
                format!("Internal error: cannot encode the result: {e}"),
            )
        })?;
        Ok(ToolOutput {
            text: structured.to_string(),
            structured,
        })
    }

    /// A bare list: `{results: [...]}` as structured content, the bare list as text.
    pub(crate) fn list<T: Serialize>(items: &[T]) -> Result<ToolOutput, ToolError> {
        let list = serde_json::to_value(items).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Internal,
                format!("Internal error: cannot encode the result: {e}"),
            )
        })?;
        let text = list.to_string();
        let mut m = Map::new();
        m.insert("results".into(), list);
        Ok(ToolOutput {
            structured: Value::Object(m),
            text,
        })
    }
}
