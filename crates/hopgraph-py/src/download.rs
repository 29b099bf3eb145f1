//! Model downloads through Python: the transport (`hopgraph_embed::transport`) the
//! package's commands use, which calls `hopgraph._download.get` (Python's `urllib`).
//!
//! Translation only: the hub (in `hopgraph-embed`) decides what to fetch, where to
//! store it and checks it; this moves the bytes. The wheel thus compiles no TLS stack of
//! its own (the commands are built without hopgraph-embed's `download` feature).

use std::io::{self, Read};
use std::sync::Arc;

use hopgraph_embed::transport::{self, Response, Transport, TransportError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Makes Python's `urllib` the process's model-download transport (once; later calls
/// change nothing).
pub fn install() {
    transport::set_default_transport(Arc::new(PythonTransport));
}

/// Calls `hopgraph._download.get`, holding the GIL for the call and for each read.
#[derive(Debug)]
struct PythonTransport;

impl Transport for PythonTransport {
    fn get(&self, url: &str, token: Option<&str>) -> Result<Response, TransportError> {
        Python::attach(|py| {
            let module = py
                .import("hopgraph._download")
                .map_err(|e| TransportError::Failed(describe(py, &e)))?;
            let answer = module.call_method1("get", (url, token)).map_err(|e| {
                let unreachable = module
                    .getattr("Unreachable")
                    .is_ok_and(|class| e.get_type(py).is_subclass(&class).unwrap_or(false));
                if unreachable {
                    TransportError::Unreachable(e.value(py).to_string())
                } else {
                    TransportError::Failed(describe(py, &e))
                }
            })?;
            let (status, headers, body) = answer
                .extract::<(u16, Vec<(String, String)>, Py<PyAny>)>()
                .map_err(|e| TransportError::Failed(describe(py, &e)))?;
            Ok(Response {
                status,
                headers,
                body: Box::new(PythonBody(Some(body))),
            })
        })
    }
}

/// `TypeName: message` of a Python exception.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let name = e
        .get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_owned(), |n| n.to_string());
    format!("{name}: {}", e.value(py))
}

/// A Python file-like answer (`read(n)`, `close()`), read as Rust reads.
struct PythonBody(Option<Py<PyAny>>);

impl Read for PythonBody {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(body) = &self.0 else { return Ok(0) };
        Python::attach(|py| {
            let data = body
                .bind(py)
                .call_method1("read", (buf.len(),))
                .map_err(|e| io::Error::other(describe(py, &e)))?;
            let bytes = data
                .cast::<PyBytes>()
                .map_err(|_| io::Error::other("read() did not return bytes"))?
                .as_bytes();
            if bytes.len() > buf.len() {
                return Err(io::Error::other("read(n) returned more than n bytes"));
            }
            buf[..bytes.len()].copy_from_slice(bytes);
            Ok(bytes.len())
        })
    }
}

impl Drop for PythonBody {
    fn drop(&mut self) {
        if let Some(body) = self.0.take() {
            Python::attach(|py| {
                // Closing only frees the connection; an error here changes nothing.
                let _ = body.bind(py).call_method0("close");
            });
        }
    }
}
