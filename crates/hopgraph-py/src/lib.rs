//! The `hopgraph` Python package's native module (`hopgraph._native`): a thin PyO3
//! binding over the engine crate, plus the `hopgraph` and `hopgraph-mcp` commands.
//!
//! Translation only: arguments become engine calls, engine answers become plain Python
//! objects (`results`), engine errors become one exception class per kind
//! (`convert::error`). Every engine call runs with the GIL released. The package's
//! Python side (`python/hopgraph/`) re-exports this module and adds the console entry
//! points; `hopgraph.pyi` documents the API for type checkers.

mod batch;
mod convert;
mod database;
mod download;
mod results;

use pyo3::prelude::*;

/// mimalloc, as the `hopgraph` binary uses (an import allocates on some threads and frees
/// on others; DESIGN.md §10).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs the `hopgraph` command line with `argv` (program name first) and returns its
/// exit code; the console script `hopgraph` calls this.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| hopgraph_cli::run(argv))
}

/// Runs `hopgraph-mcp` with `argv` (without the program name) until the client hangs up
/// and returns its exit code; the console script `hopgraph-mcp` calls this.
#[pyfunction]
fn run_mcp(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| hopgraph_mcp::command::run(argv.into_iter().map(Into::into)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // The commands' model downloads go through Python's urllib (no TLS stack compiled in).
    download::install();
    m.add_function(wrap_pyfunction!(database::open, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(run_mcp, m)?)?;
    m.add_class::<database::Database>()?;
    m.add_class::<database::Snapshot>()?;
    m.add_class::<batch::WriteBatch>()?;
    m.add_class::<results::Node>()?;
    m.add_class::<results::Edge>()?;
    m.add_class::<results::Path>()?;
    m.add_class::<results::Step>()?;
    m.add_class::<results::Neighbor>()?;
    m.add_class::<results::Reached>()?;
    m.add_class::<results::Visit>()?;
    m.add_class::<results::Hit>()?;
    m.add("Error", py.get_type::<convert::HopgraphError>())?;
    m.add("NotFoundError", py.get_type::<convert::NotFoundError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<convert::InvalidArgumentError>(),
    )?;
    m.add("CorruptError", py.get_type::<convert::CorruptError>())?;
    m.add("IoError", py.get_type::<convert::IoError>())?;
    m.add(
        "WriterPoisonedError",
        py.get_type::<convert::WriterPoisonedError>(),
    )?;
    m.add(
        "LimitReachedError",
        py.get_type::<convert::LimitReachedError>(),
    )?;
    m.add("ReadOnlyError", py.get_type::<convert::ReadOnlyError>())?;
    m.add("ConflictError", py.get_type::<convert::ConflictError>())?;
    m.add("FORMAT_VERSION", hopgraph::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
