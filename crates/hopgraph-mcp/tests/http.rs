//! `hopgraph-mcp --http`: the streamable HTTP transport, end to end against the built binary.
//!
//! The Rust tests speak raw HTTP/1.1 over a `TcpStream` (no client library: they always run,
//! so CI checks the transport without Python). `python_sdk_client` drives the server with
//! the official MCP Python SDK (`tests/http/test_http.py`); it is ignored by default, and
//! run with `pip install mcp` then `cargo test -p hopgraph-mcp --test http python_sdk --
//! --ignored` (`PYTHON` names another interpreter), where a missing SDK fails it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hopgraph_mcp::http::BODY_BYTES_MAX;
use serde_json::{Value, json};

const TOKEN: &str = "test-token-0123456789abcdef";

/// A running `hopgraph-mcp --http` (killed on drop).
struct Server {
    child: Child,
    /// `127.0.0.1:PORT`: where to connect.
    addr: String,
    _data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(data: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hopgraph-mcp"));
    cmd.arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("HOPGRAPH_HTTP")
        .env_remove("HOPGRAPH_HTTP_TOKEN")
        .env_remove("HOPGRAPH_HTTP_TOKEN_FILE")
        .env_remove("HOPGRAPH_TOOLS")
        .env_remove("HOPGRAPH_EMBED_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Starts the server with `args` (which include `--http ADDR` with port 0) and waits for
/// its "listening on" line.
fn start(args: &[&str]) -> Server {
    let data = tempfile::tempdir().unwrap();
    let mut child = command(data.path(), args).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent && let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest.split("/mcp").next().unwrap().to_owned();
                let _ = tx.send(addr);
                sent = true;
            }
        }
    });
    let bound = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server logs its address");
    let port = bound.rsplit(':').next().unwrap();
    Server {
        child,
        addr: format!("127.0.0.1:{port}"),
        _data: data,
    }
}

/// An HTTP response: status, headers (lowercase names) and the body (de-chunked).
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of the body: the body itself when it is JSON, else the last
    /// SSE `data:` event that is a JSON object with an id.
    fn message(&self) -> Value {
        let text = String::from_utf8_lossy(&self.body);
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            return v;
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .rfind(|v| v.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {text:?}"))
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&b[..eol])
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
}

/// Sends one request (`Connection: close`) and reads the whole response. `body` is sent
/// with a Content-Length unless `chunked`.
fn request(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    chunked: bool,
) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    if chunked {
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
    } else {
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    }
    s.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) and close before it has read everything: a failed
    // write is then expected.
    let _ = if chunked {
        body.chunks(1 << 16).try_for_each(|c| {
            s.write_all(format!("{:x}\r\n", c.len()).as_bytes())?;
            s.write_all(c)?;
            s.write_all(b"\r\n")
        })
    } else {
        s.write_all(body)
    };
    if chunked {
        let _ = s.write_all(b"0\r\n\r\n");
    }
    let mut raw = Vec::new();
    // A reset after the response was sent (unread body) is fine: keep what arrived.
    let _ = s.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

/// A JSON-RPC POST in session `session` (if any) with bearer `token` (if any).
fn post(addr: &str, session: Option<&str>, token: Option<&str>, msg: &Value) -> Reply {
    post_bytes(addr, session, token, msg.to_string().as_bytes(), false)
}

fn post_bytes(
    addr: &str,
    session: Option<&str>,
    token: Option<&str>,
    body: &[u8],
    chunked: bool,
) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
        headers.push(("MCP-Protocol-Version", "2025-06-18"));
    }
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    request(addr, "POST", &headers, body, chunked)
}

/// Opens a session: initialize + notifications/initialized. Returns the session id.
fn open_session(addr: &str, token: Option<&str>) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"}}});
    let r = post(addr, None, token, &init);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let m = r.message();
    assert_eq!(m["result"]["serverInfo"]["name"], "hopgraph-mcp", "{m}");
    let session = r.header("mcp-session-id").expect("a session id").to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(addr, Some(&session), token, &note);
    assert_eq!(r.status, 202);
    session
}

fn call(addr: &str, session: &str, token: Option<&str>, id: u64, tool: &str, args: Value) -> Value {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                     "params": {"name": tool, "arguments": args}});
    let r = post(addr, Some(session), token, &msg);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let m = r.message();
    assert_eq!(m["id"], id, "{m}");
    m
}

#[test]
fn http_serves_the_tools_to_several_sessions() {
    let server = start(&["--http", "127.0.0.1:0"]);
    let addr = server.addr.as_str();
    let a = open_session(addr, None);
    let list = post(
        addr,
        Some(&a),
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .message();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"create_memory") && names.contains(&"memory_path"));
    assert!(
        !names.contains(&"search_nodes"),
        "the default profile only: {names:?}"
    );
    let m = call(
        addr,
        &a,
        None,
        2,
        "create_memory",
        json!({"type": "semantic", "id": "m1", "content": "The cache was cold after the deploy."}),
    );
    assert_eq!(m["result"]["structuredContent"]["id"], "m1", "{m}");
    // A second session of another client sees the first one's write.
    let b = open_session(addr, None);
    assert_ne!(a, b);
    let m = call(
        addr,
        &b,
        None,
        3,
        "memory_search",
        json!({"query": "cold cache"}),
    );
    assert!(m["result"].to_string().contains("\"m1\""), "{m}");
    // Without a session id, a request is refused by rmcp; other paths are 404.
    let r = post(
        addr,
        None,
        None,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    );
    assert!(r.status >= 400, "{}", r.status);
    let r = request(addr, "GET", &[], b"", false);
    assert!(r.status >= 400);
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 404"), "{raw}");
}

#[test]
fn http_needs_a_token_beyond_loopback() {
    // Refused at start, with a message that says what to do.
    let data = tempfile::tempdir().unwrap();
    let out = command(data.path(), &["--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a loopback address") && err.contains("--http-token-file"),
        "{err}"
    );
    let out = command(data.path(), &["--http-token", TOKEN])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a token without --http");
    let out = command(
        data.path(),
        &["--http", "127.0.0.1:0", "--http-token", "short"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "a token too short");

    // With a token (from a file), on every interface; connected to on loopback.
    let file = data.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let server = start(&[
        "--http",
        "0.0.0.0:0",
        "--http-token-file",
        file.to_str().unwrap(),
    ]);
    let addr = server.addr.as_str();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"}}});
    for token in [
        None,
        Some("wrong-token-0123456789abcdef"),
        Some(&TOKEN[1..]),
    ] {
        let r = post(addr, None, token, &init);
        assert_eq!(r.status, 401, "token {token:?}");
        assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    }
    let basic = request(
        addr,
        "POST",
        &[("Authorization", &format!("Basic {TOKEN}"))],
        init.to_string().as_bytes(),
        false,
    );
    assert_eq!(basic.status, 401);
    let session = open_session(addr, Some(TOKEN));
    let m = call(addr, &session, Some(TOKEN), 1, "list_contexts", json!({}));
    assert!(m["result"]["isError"] != true, "{m}");
    // A request of the session without the token is refused too.
    let r = post(
        addr,
        Some(&session),
        None,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(r.status, 401);
}

#[test]
fn http_limits_and_the_server_keeps_serving() {
    let server = start(&["--http", "127.0.0.1:0", "--tools", "memory,server-memory"]);
    let addr = server.addr.as_str();
    let session = open_session(addr, None);
    let big = |id: &str, n: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"create_memory","arguments":{{"type":"semantic","content":"{}"}}}}}}"#,
            "x".repeat(n)
        )
    };
    // Past the body limit, with a Content-Length or chunked: the first BODY_BYTES_MAX
    // bytes are kept, the rest dropped, and the answer is 413 with the id read from the
    // part kept.
    let body = big("\"big1\"", BODY_BYTES_MAX);
    assert!(body.len() > BODY_BYTES_MAX);
    for chunked in [false, true] {
        let r = post_bytes(addr, Some(&session), None, body.as_bytes(), chunked);
        assert_eq!(r.status, 413, "chunked: {chunked}");
        let m = r.message();
        assert_eq!(
            (m["id"].clone(), m["error"]["code"].clone()),
            (json!("big1"), json!(-32600)),
            "{m}"
        );
    }
    // A declared length past what the server drains is answered before any of it is read.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            hopgraph_mcp::http::DRAIN_BYTES_MAX + 1
        )
        .as_bytes(),
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 413");
    drop(s);
    // At the limit: read, then the stdio gate's checks apply (content is at most 1 MiB).
    let r = post_bytes(
        addr,
        Some(&session),
        None,
        big("7", 1 << 20 | 1).as_bytes(),
        false,
    );
    assert_eq!(r.status, 200);
    let m = r.message();
    assert_eq!(m["id"], 7);
    assert_eq!(m["result"]["isError"], true);
    assert_eq!(
        m["result"]["content"][0]["text"],
        "Invalid argument `content`: is 1048577 bytes, the limit is 1048576"
    );
    let rel = r#"{"from":"a","to":"b","relationType":"r"}"#;
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"create_relations","arguments":{{"relations":[{}]}}}}}}"#,
        vec![rel; 1001].join(",")
    );
    let m = post_bytes(addr, Some(&session), None, line.as_bytes(), false).message();
    assert_eq!(
        m["result"]["content"][0]["text"],
        "Invalid argument `relations`: has more than 1000 items, the limit is 1000"
    );
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":{}{}}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    let r = post_bytes(addr, Some(&session), None, deep.as_bytes(), false);
    assert_eq!(r.status, 400);
    assert_eq!(
        (
            r.message()["id"].clone(),
            r.message()["error"]["code"].clone()
        ),
        (json!(9), json!(-32600))
    );
    // The session and the server still serve.
    let m = call(
        addr,
        &session,
        None,
        10,
        "create_entities",
        json!({"entities": [{"name": "a", "entityType": "t", "observations": ["o"]}]}),
    );
    assert!(m["result"]["isError"] != true, "{m}");
    let m = call(
        addr,
        &session,
        None,
        11,
        "search_nodes",
        json!({"query": "a"}),
    );
    assert!(m["result"].to_string().contains("entityType"), "{m}");
}

/// A stateless (protocol 2026-07-28) request without a session: what the conformance
/// suite's server-stateless checks need fixture tools for, here with hopgraph's own. A
/// request without `_meta.io.modelcontextprotocol/logLevel` gets a stream holding its
/// response alone (no log notification, no request to the client), `server/discover`
/// declares what the server answers, and an undeclared method is 404 with -32601
/// (docs/MCP-CONFORMANCE.md).
#[test]
fn http_stateless_requests_get_their_response_alone() {
    let server = start(&["--http", "127.0.0.1:0", "--tools", "memory,server-memory"]);
    let addr = server.addr.as_str();
    let stateless = |id: u64, method: &str, name: Option<&str>, mut params: Value| {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        if let Some(n) = name {
            headers.push(("Mcp-Name", n));
        }
        let r = request(addr, "POST", &headers, msg.to_string().as_bytes(), false);
        let text = String::from_utf8_lossy(&r.body).into_owned();
        let messages: Vec<Value> = if r.header("content-type") == Some("application/json") {
            vec![serde_json::from_str(&text).unwrap()]
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter(|d| !d.trim().is_empty())
                .map(|d| serde_json::from_str(d.trim()).unwrap())
                .collect()
        };
        (r.status, messages, text)
    };
    let calls = [
        (
            "create_memory",
            json!({"type": "semantic", "id": "m1", "content": "The cache was cold."}),
        ),
        ("memory_search", json!({"query": "cold cache"})),
        ("get_memory", json!({"memory_id": "no-such-memory"})),
        (
            "create_entities",
            json!({"entities": [{"name": "a", "entityType": "t", "observations": []}]}),
        ),
        ("graph_stats", json!({})),
    ];
    for (i, (tool, args)) in (1u64..).zip(calls) {
        let (status, messages, text) = stateless(
            i,
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": args}),
        );
        assert_eq!(status, 200, "{tool}: {text}");
        assert_eq!(messages.len(), 1, "{tool}: the response alone: {text}");
        assert_eq!(messages[0]["id"], json!(i), "{tool}: {text}");
        assert!(messages[0].get("method").is_none(), "{tool}: {text}");
    }
    let (status, messages, text) = stateless(10, "server/discover", None, json!({}));
    assert_eq!(status, 200, "{text}");
    let caps = &messages[0]["result"]["capabilities"];
    for declared in ["tools", "prompts", "resources"] {
        assert!(caps[declared].is_object(), "{declared}: {text}");
    }
    for undeclared in ["logging", "completions"] {
        assert!(caps.get(undeclared).is_none(), "{undeclared}: {text}");
    }
    let (status, messages, text) = stateless(11, "prompts/list", None, json!({}));
    assert_eq!(
        (status, &messages[0]["result"]["prompts"]),
        (200, &json!([])),
        "{text}"
    );
    let (status, messages, text) = stateless(
        12,
        "resources/read",
        Some("test://nothing"),
        json!({"uri": "test://nothing"}),
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        messages[0]["error"]["code"],
        json!(-32602),
        "SEP-2164: {text}"
    );
    assert_eq!(
        messages[0]["error"]["data"]["uri"],
        json!("test://nothing"),
        "{text}"
    );
    let (status, messages, text) = stateless(
        13,
        "completion/complete",
        None,
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}}),
    );
    assert_eq!(status, 404, "{text}");
    assert_eq!(messages[0]["error"]["code"], json!(-32601), "{text}");
}

#[test]
#[ignore = "needs Python with the official MCP Python SDK: pip install mcp, then \
            cargo test -p hopgraph-mcp --test http python_sdk -- --ignored \
            (PYTHON=<interpreter> to use another than python3)"]
fn python_sdk_client() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "`{python} -c 'import mcp'` failed: install the official MCP Python SDK \
             (pip install mcp) or set PYTHON to an interpreter that has it:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!(
            "cannot run `{python}` ({e}): install Python 3 and the official MCP Python SDK \
             (pip install mcp), or set PYTHON to an interpreter that has it"
        ),
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/http/test_http.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_hopgraph-mcp"))
        .env_remove("HOPGRAPH_HTTP")
        .env_remove("HOPGRAPH_HTTP_TOKEN")
        .env_remove("HOPGRAPH_HTTP_TOKEN_FILE")
        .env_remove("HOPGRAPH_TOOLS")
        .env_remove("HOPGRAPH_EMBED_MODEL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("python sdk: 0 failed"),
        "the Python SDK test failed:\n{stdout}\n{stderr}"
    );
}
