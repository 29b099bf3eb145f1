//! The MCP tools' argument parsing and everything behind it, on arbitrary arguments: the
//! first byte picks a tool (every tool of every profile), the rest is read as JSON; an
//! object is passed as the call's arguments to `hopgraph_mcp::tools::call` against a
//! store in a temporary directory, as the server's request handler does. Never a panic;
//! a result is an object, an error a non-empty message.
//!
//! The store lives across inputs (writes from one input are there for the next, as on a
//! server) and is replaced by an empty one every 4,096 inputs so it stays small.
#![no_main]

use std::sync::{Mutex, OnceLock};

use hopgraph_mcp::schema::{Profile, tool_defs};
use hopgraph_mcp::{StoreConfig, Stores};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

struct Server {
    _dir: tempfile::TempDir,
    stores: Stores,
    calls: u32,
}

fn server() -> Server {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut config = StoreConfig::new(dir.path());
    config.profiles = Profile::ALL.iter().map(|&(_, p)| p).collect();
    Server {
        stores: Stores::new(config),
        _dir: dir,
        calls: 0,
    }
}

static SERVER: Mutex<Option<Server>> = Mutex::new(None);
/// The tool names, built once (the definitions carry their JSON schemas).
static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let Ok(Value::Object(arguments)) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    let names = NAMES.get_or_init(|| tool_defs().iter().map(|d| d.name).collect());
    let name = names[usize::from(pick) % names.len()];
    let mut guard = SERVER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if guard.as_ref().is_none_or(|s| s.calls >= 4_096) {
        *guard = Some(server());
    }
    let Some(s) = guard.as_mut() else {
        return;
    };
    s.calls += 1;
    match hopgraph_mcp::tools::call(&s.stores, name, Some(&arguments as &Map<String, Value>)) {
        Ok(out) => assert!(out.structured.is_object(), "{name}: {}", out.structured),
        Err(e) => assert!(!e.to_string().is_empty(), "{name}: an empty error"),
    }
});
