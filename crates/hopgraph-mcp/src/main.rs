//! The `hopgraph-mcp` binary: [`hopgraph_mcp::command::run`] with the process's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(hopgraph_mcp::command::run(std::env::args_os().skip(1)))
}
