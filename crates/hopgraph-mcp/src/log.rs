//! Log lines: on stderr, since stdout carries the protocol.

/// Writes a log line to stderr (stdout carries the protocol).
pub fn log(msg: &str) {
    eprintln!("hopgraph-mcp: {msg}");
}
