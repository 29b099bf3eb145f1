//! MCP adapter.
