//! The MCP server: an rmcp `ServerHandler` behind a line gate that keeps the protocol
//! promises rmcp alone does not.
//!
//! ```text
//!  client ──lines──▶ gate ──valid messages──▶ rmcp service (tools/list, tools/call, ...)
//!    ▲                │ errors (-32700, -32600, -32602, not initialized)      │
//!    └──── writer ◀───┴──────────────────── pump (watches the init reply) ◀───┘
//! ```
//!
//! rmcp ignores lines that are not JSON, answers shape errors without their id, and stops
//! serving when anything but `initialize` or `ping` arrives first. The gate parses each
//! line itself, answers what rmcp would drop or mishandle with the standard JSON-RPC
//! errors (with the request's id when it has one), holds back everything but `initialize`
//! and `ping` until the server has answered `initialize`, and forwards the rest. So no
//! input can end the session; only end of input or a signal does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, ClientRequest,
    CompleteRequestParams, CompleteResult, ContentBlock, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use super::limits::{LineCheck, Violation, check_line, scan_id};
use super::schema::tool_defs_for;
use super::store::Stores;
use super::tools;

pub use super::limits::LINE_BYTES_MAX;

/// The rmcp handler: lists the tools and runs calls on the blocking pool.
#[derive(Clone, Debug)]
pub struct HopgraphServer {
    stores: Arc<Stores>,
    tools: Arc<Vec<Tool>>,
}

impl HopgraphServer {
    /// A server over `stores`.
    pub fn new(stores: Arc<Stores>) -> HopgraphServer {
        let tools = rmcp_tools(&stores.config().profiles);
        HopgraphServer {
            stores,
            tools: Arc::new(tools),
        }
    }

    /// The stores.
    pub fn stores(&self) -> &Arc<Stores> {
        &self.stores
    }
}

/// The tools of `profiles` as rmcp `Tool`s.
pub fn rmcp_tools(profiles: &[super::schema::Profile]) -> Vec<Tool> {
    tool_defs_for(profiles)
        .into_iter()
        .map(|d| {
            let object = |v: Value| Arc::new(v.as_object().cloned().unwrap_or_default());
            Tool::new(d.name, d.description, object(d.input))
                .with_title(d.title)
                .with_raw_output_schema(object(d.output))
                .with_annotations(
                    ToolAnnotations::with_title(d.title)
                        .read_only(d.read_only)
                        .destructive(d.destructive)
                        .idempotent(d.idempotent)
                        .open_world(false),
                )
        })
        .collect()
}

impl ServerHandler for HopgraphServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "hopgraph-mcp",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "hopgraph: a graph memory. Store memories (create_memory) or entities \
                 (aim_memory_store), connect them with typed edges (link, aim_memory_link), \
                 find them (memory_search, get_memory) and follow their edges. Every tool \
                 takes an optional `context` naming a separate database (lowercase \
                 a-z 0-9 _ - .); create_memory and aim_memory_store create it, reads of one \
                 that does not exist yet answer as an empty store (so a first \
                 memory_search is simply empty), and list_contexts lists them. When a \
                 fact changes, supersede_memory replaces it and keeps the old one as \
                 history (memory_history; as_of on the reads).",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        // A tool of a profile this server was not started with is unknown here.
        let Some(tool) = self.tools.iter().find(|t| t.name == name.as_str()) else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", hopgraph_memory::quote_short(&name)),
                None,
            ));
        };
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let stores = self.stores.clone();
        let arguments = request.arguments;
        // A read-only tool answers from memory-mapped segments and the in-memory delta:
        // CPU work, no wait on I/O. It runs on this worker, without the hand-off to a
        // blocking thread and back (two wake-ups, which at two concurrent clients left
        // the cores idle a fifth of the time: 1.6x one client's reads/s, against 2.3x
        // inline). A write waits on its commit's fsync, so it goes to the blocking pool,
        // where it holds no worker while it waits. Either way a panic becomes an error.
        let outcome = if read_only {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tools::call(&stores, &name, arguments.as_ref())
            }))
            .map_err(drop)
        } else {
            tokio::task::spawn_blocking(move || tools::call(&stores, &name, arguments.as_ref()))
                .await
                .map_err(drop)
        };
        let result = match outcome {
            Ok(Ok(out)) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(out.text)]);
                r.structured_content = Some(out.structured);
                r
            }
            Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(e.into_message())]),
            Err(()) => CallToolResult::error(vec![ContentBlock::text(
                "Internal error: the tool failed unexpectedly",
            )]),
        };
        Ok(result.into())
    }

    // rmcp's defaults answer prompts/list, resources/list and resources/templates/list with
    // empty results whatever the server declares, and MCP clients in use (opencode, Cline)
    // call them whether declared or not, dropping a server that answers -32601. So the
    // server declares prompts and resources (none of either; rmcp's empty lists stand),
    // which keeps those clients and what the specification asks ("servers that support
    // prompts MUST declare the prompts capability"; the conformance suite's
    // sep-2575-server-declares-prompts-in-discover); a name or URI is then unknown as the
    // specification says. Completions stay undeclared and are answered -32601
    // (docs/MCP-CONFORMANCE.md).

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Err(ErrorData::invalid_params(
            format!(
                "Unknown prompt: {} (hopgraph-mcp serves no prompts; prompts/list is empty)",
                hopgraph_memory::quote_short(&request.name)
            ),
            None,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        // Protocol 2026-07-28 (SEP-2164) answers an unknown URI -32602 with the URI in
        // `data`; earlier revisions -32002.
        let code = match context.protocol_version() {
            Some(v) if v.as_str() >= ProtocolVersion::V_2026_07_28.as_str() => {
                ErrorCode::INVALID_PARAMS
            }
            _ => ErrorCode::RESOURCE_NOT_FOUND,
        };
        Err(ErrorData::new(
            code,
            format!(
                "Resource not found: {} (hopgraph-mcp serves no resources; resources/list \
                 is empty)",
                hopgraph_memory::quote_short(&request.uri)
            ),
            Some(json!({"uri": request.uri})),
        ))
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "Method not found: completion/complete (hopgraph-mcp does not declare the \
             completions capability)",
            None,
        ))
    }
}

/// Whether the session is initialized, and the ids of `initialize` requests in flight.
/// While an `initialize` is in flight the gate holds further input back, so that a client
/// that writes its first requests right behind `initialize` is served, not refused.
#[derive(Debug)]
struct Gate {
    initialized: AtomicBool,
    pending_init: Mutex<Vec<Value>>,
    /// Number of `initialize` requests in flight (mirrors `pending_init.len()`).
    in_flight: watch::Sender<usize>,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            initialized: AtomicBool::new(false),
            pending_init: Mutex::new(Vec::new()),
            in_flight: watch::channel(0).0,
        }
    }

    /// Waits until no `initialize` is in flight (or gives up after [`INIT_WAIT`]).
    async fn settled(&self) {
        let mut rx = self.in_flight.subscribe();
        if tokio::time::timeout(INIT_WAIT, rx.wait_for(|&n| n == 0))
            .await
            .is_err()
        {
            self.pending_init.lock().clear();
            self.in_flight.send_replace(0);
        }
    }
}

/// Longest wait for rmcp to answer `initialize` before input is processed anyway.
const INIT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A JSON-RPC error line.
pub(crate) fn error_line(id: Option<&Value>, code: i64, message: &str) -> Vec<u8> {
    let mut v = json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": code, "message": hopgraph_memory::one_line(message)}
    })
    .to_string()
    .into_bytes();
    v.push(b'\n');
    v
}

/// What the gate does with one input line.
#[derive(Debug, PartialEq)]
enum Action {
    /// Nothing (blank line, dropped notification).
    Drop,
    /// Answer the client directly.
    Reply(Vec<u8>),
    /// Pass the line to rmcp; `init_id` is set for an `initialize` request.
    Forward { init_id: Option<Value> },
}

fn valid_id(v: &Value) -> bool {
    match v {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// A tool-error result (`isError`) for request `id`: how argument errors are answered.
pub(crate) fn tool_error_line(id: &Value, message: &str) -> Vec<u8> {
    let mut v = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "content": [{"type": "text", "text": hopgraph_memory::one_line(message)}],
            "isError": true
        }
    })
    .to_string()
    .into_bytes();
    v.push(b'\n');
    v
}

/// Decides what to do with one line (without its newline).
fn classify(line: &[u8], initialized: bool) -> Action {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Action::Drop;
    }
    // Limits first, on the raw bytes: nothing is built for a line that breaks one.
    match check_line(line) {
        LineCheck::Ok => {}
        LineCheck::Syntax(e) => {
            return Action::Reply(error_line(None, -32700, &format!("Parse error: {e}")));
        }
        LineCheck::Broken(v) => {
            let id = scan_id(line);
            return match (v, id) {
                // A notification is never answered.
                (Violation::Argument(_), None) => Action::Drop,
                (Violation::Argument(_), Some(id)) if !initialized => {
                    Action::Reply(error_line(Some(&id), -32600, NOT_INITIALIZED))
                }
                (Violation::Argument(m), Some(id)) => Action::Reply(tool_error_line(&id, &m)),
                (Violation::Message(m), id) => Action::Reply(error_line(id.as_ref(), -32600, &m)),
            };
        }
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return Action::Reply(error_line(None, -32700, &format!("Parse error: {e}"))),
    };
    let Value::Object(obj) = &value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "a message must be a JSON object"
        };
        return Action::Reply(error_line(
            None,
            -32600,
            &format!("Invalid Request: {what}"),
        ));
    };
    let id = obj.get("id");
    if let Some(id) = id
        && !valid_id(id)
    {
        return Action::Reply(error_line(
            None,
            -32600,
            "Invalid Request: id must be a string or an integer",
        ));
    }
    let invalid =
        |why: &str| Action::Reply(error_line(id, -32600, &format!("Invalid Request: {why}")));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("jsonrpc must be \"2.0\"");
    }
    let method = match obj.get("method") {
        None => {
            // A response to a request of ours (we send none) or garbage.
            return if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
                Action::Drop
            } else {
                invalid("a message needs a method")
            };
        }
        Some(Value::String(m)) => m.as_str(),
        Some(_) => return invalid("method must be a string"),
    };
    let Some(id) = id else {
        // A notification: never answered. Before initialization rmcp would stop serving
        // on one, so those are dropped.
        return if initialized && rmcp_accepts(line) {
            Action::Forward { init_id: None }
        } else {
            Action::Drop
        };
    };
    let invalid_params = |why: &str| {
        Action::Reply(error_line(
            Some(id),
            -32602,
            &format!("Invalid params: {why}"),
        ))
    };
    match obj.get("params") {
        None | Some(Value::Object(_)) => {}
        Some(_) => return invalid_params("params must be an object"),
    }
    if method == "tools/call" {
        let params = obj.get("params").and_then(Value::as_object);
        match params.and_then(|p| p.get("name")) {
            Some(Value::String(_)) => {}
            Some(_) => return invalid_params("name must be a string"),
            None => return invalid_params("missing tool name"),
        }
        match params.and_then(|p| p.get("arguments")) {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(_) => return invalid_params("arguments must be an object"),
        }
    }
    if !initialized {
        match method {
            "initialize" => {}
            "ping" => {
                let mut v = json!({"jsonrpc": "2.0", "id": id, "result": {}})
                    .to_string()
                    .into_bytes();
                v.push(b'\n');
                return Action::Reply(v);
            }
            _ => {
                return Action::Reply(error_line(Some(id), -32600, NOT_INITIALIZED));
            }
        }
    }
    // Only one decoded copy of a message at a time: the envelope's values go before rmcp's
    // own decoding is tried.
    let (id, method) = (id.clone(), method.to_owned());
    drop(value);
    let method = method.as_str();
    let invalid_params = |why: &str| {
        Action::Reply(error_line(
            Some(&id),
            -32602,
            &format!("Invalid params: {why}"),
        ))
    };
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        // rmcp decodes a known method with malformed params as a custom request too.
        Ok(ClientJsonRpcMessage::Request(r))
            if matches!(r.request, ClientRequest::CustomRequest(_)) =>
        {
            return if MCP_METHODS.contains(&method) {
                invalid_params(&format!("malformed {method} request"))
            } else {
                Action::Reply(error_line(
                    Some(&id),
                    -32601,
                    &format!("Method not found: {}", hopgraph_memory::quote_short(method)),
                ))
            };
        }
        Ok(_) => {}
        Err(e) => return invalid_params(&format!("malformed {method} request: {e}")),
    }
    Action::Forward {
        init_id: (method == "initialize").then_some(id),
    }
}

const NOT_INITIALIZED: &str =
    "Invalid Request: the server is not initialized; send initialize first";

/// The request methods of MCP that a client may send (rmcp's `ClientRequest`).
const MCP_METHODS: [&str; 21] = [
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/directory/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// Whether rmcp can decode `line` as a client message.
fn rmcp_accepts(line: &[u8]) -> bool {
    serde_json::from_slice::<ClientJsonRpcMessage>(line).is_ok()
}

/// Reads one line into `buf` (without the newline), storing at most [`LINE_BYTES_MAX`]
/// bytes: past that the line is marked `oversized`, `buf` keeps its first
/// [`LINE_BYTES_MAX`] bytes (to find the request's id in) and the rest is read in chunks
/// and discarded up to the newline. Returns `Ok(false)` at end of input.
async fn read_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    oversized: &mut bool,
) -> std::io::Result<bool> {
    buf.clear();
    *oversized = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            // End of input: a last line without newline still counts.
            return Ok(!buf.is_empty() || *oversized);
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !*oversized {
            let data = newline.map_or(take, |i| i);
            let room = LINE_BYTES_MAX - buf.len();
            if data > room {
                *oversized = true;
                buf.extend_from_slice(&available[..room]);
            } else {
                buf.extend_from_slice(&available[..data]);
            }
        }
        input.consume(take);
        if newline.is_some() {
            if buf.last() == Some(&b'\r') && !*oversized {
                buf.pop();
            }
            return Ok(true);
        }
    }
}

/// Serves MCP over `input`/`output` (newline-delimited JSON-RPC) until `input` ends.
///
/// # Errors
/// I/O errors of `input`; write errors end the session quietly (the client is gone).
pub async fn serve<R, W>(server: HopgraphServer, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let gate = Arc::new(Gate::new());
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();

    let writer = tokio::spawn(write_lines(output, rx));
    let pump = tokio::spawn(pump(from_rmcp, gate.clone(), tx.clone()));
    let service = tokio::spawn(async move {
        match server.serve(theirs).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => log(&format!("session ended before initialization: {e}")),
        }
    });

    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    let mut oversized = false;
    let result = loop {
        match read_line(&mut input, &mut line, &mut oversized).await {
            Ok(false) => break Ok(()),
            Ok(true) => {}
            Err(e) => break Err(e),
        }
        if oversized {
            let msg = format!(
                "Invalid Request: the message is larger than the limit of {LINE_BYTES_MAX} bytes"
            );
            let id = super::limits::scan_id(&line);
            if tx.send(error_line(id.as_ref(), -32600, &msg)).is_err() {
                break Ok(());
            }
            continue;
        }
        gate.settled().await;
        let initialized = gate.initialized.load(Ordering::Acquire);
        match classify(&line, initialized) {
            Action::Drop => {}
            Action::Reply(bytes) => {
                if tx.send(bytes).is_err() {
                    break Ok(());
                }
            }
            Action::Forward { init_id } => {
                if let Some(id) = init_id {
                    let mut pending = gate.pending_init.lock();
                    pending.push(id);
                    gate.in_flight.send_replace(pending.len());
                }
                line.push(b'\n');
                if to_rmcp.write_all(&line).await.is_err() {
                    break Ok(());
                }
            }
        }
    };
    // End of input: let rmcp see it, finish what is in flight, then flush the output.
    let _ = to_rmcp.shutdown().await;
    drop(to_rmcp);
    let _ = service.await;
    let _ = pump.await;
    drop(tx);
    let _ = writer.await;
    result
}

/// Copies rmcp's output lines to the writer, noting a successful `initialize` reply.
async fn pump<R: AsyncRead + Unpin>(
    from_rmcp: R,
    gate: Arc<Gate>,
    tx: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut lines = BufReader::new(from_rmcp);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match lines.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !gate.initialized.load(Ordering::Acquire) {
            let mut pending = gate.pending_init.lock();
            if !pending.is_empty()
                && let Ok(v) = serde_json::from_slice::<Value>(&buf)
                && let Some(id) = v.get("id")
                && let Some(pos) = pending.iter().position(|p| p == id)
            {
                pending.remove(pos);
                if v.get("result").is_some() {
                    gate.initialized.store(true, Ordering::Release);
                }
                gate.in_flight.send_replace(pending.len());
            }
        }
        if !buf.ends_with(b"\n") {
            buf.push(b'\n');
        }
        // Hand the line over rather than copy it (a result may be megabytes).
        if tx.send(std::mem::take(&mut buf)).is_err() {
            return;
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = rx.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            // The client is gone; keep draining so that senders never block.
            while rx.recv().await.is_some() {}
            return;
        }
    }
}

pub use crate::log::log;

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(a: Action) -> Value {
        match a {
            Action::Reply(b) => serde_json::from_slice(&b).unwrap(),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn gate_answers_protocol_errors() {
        let e = reply(classify(b"{not json", true));
        assert_eq!(e["error"]["code"], -32700);
        assert_eq!(e["id"], Value::Null);
        let e = reply(classify(b"\xff\xfe", true));
        assert_eq!(e["error"]["code"], -32700);
        let e = reply(classify(b"[1,2]", true));
        assert_eq!(e["error"]["code"], -32600);
        let e = reply(classify(
            br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            true,
        ));
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32600), json!(3))
        );
        let e = reply(classify(
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#,
            false,
        ));
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32600), json!(4))
        );
        let e = reply(classify(
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
            true,
        ));
        assert_eq!(e["error"]["code"], -32602);
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let e = reply(classify(deep.as_bytes(), true));
        assert_eq!(e["error"]["code"], -32600, "nesting past the message limit");
        // An argument over its limit: a tool error with the request's id, nothing parsed.
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{{"name":"aim_memory_link","arguments":{{"relations":[{}]}}}}}}"#,
            vec![r#"{"from":"a","to":"b","relationType":"r"}"#; 1001].join(",")
        );
        let e = reply(classify(line.as_bytes(), true));
        assert_eq!(e["id"], "r1");
        assert_eq!(e["result"]["isError"], true);
        assert_eq!(
            e["result"]["content"][0]["text"],
            "Invalid argument `relations`: has more than 1000 items, the limit is 1000"
        );
        let e = reply(classify(line.as_bytes(), false));
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!("r1"), json!(-32600))
        );
    }

    #[test]
    fn gate_forwards_and_drops() {
        assert_eq!(classify(b"   ", true), Action::Drop);
        assert_eq!(
            classify(
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                false
            ),
            Action::Drop
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#, false),
            Action::Forward { init_id: Some(json!(1)) }
        );
        let e = reply(classify(
            br#"{"jsonrpc":"2.0","id":"a","method":"no/such"}"#,
            true,
        ));
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32601), json!("a"))
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#, true),
            Action::Forward { init_id: None }
        );
    }
}
