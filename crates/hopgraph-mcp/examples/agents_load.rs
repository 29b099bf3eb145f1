//! A light load client for `benches/compare/agents/agents.py --load BIN` (issue #44
//! item 4): N MCP sessions over streamable HTTP, one thread each, calling tools back to
//! back, so that what the benchmark measures is the server rather than its clients.
//!
//! The Python driver's client processes cost about as much CPU per call as the server's
//! answer; on a 2-core machine they take half the cores the server would scale onto. This
//! client speaks the same transport (HTTP/1.1 keep-alive, JSON-RPC in POST bodies, answers
//! as JSON or as one SSE event, chunked or sized) with plain `std::net`, for tens of
//! microseconds of CPU per call, kernel included (~8% of the machine's samples at two
//! sessions, where the server took 56%).
//!
//! ```text
//! agents_load HOST:PORT --clients N --mix read|mixed|write --seconds S --ids FILE
//!             [--seed K] [--start-at UNIX_SECONDS] [--protocol 2025-06-18|2026-07-28]
//! ```
//!
//! `--protocol` (default `2025-06-18`): with `2025-06-18` each client opens a session
//! (`initialize`, then every request carries its `Mcp-Session-Id`); with `2026-07-28` it
//! has none: every request is stateless and carries the protocol's `_meta` keys and
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers, as that revision asks.
//!
//! `--ids` names a file with one memory id per line (the driver's fill). The calls are the
//! Python driver's: `memory_search` / `get_memory` / `memory_path` in equal parts for
//! reads, `create_memory` for writes (20% of calls in `mixed`, all in `write`). Every
//! session is initialised before `--start-at` (default: one second from now); each then
//! calls until `--seconds` have passed. Prints one JSON object: `{"latencies_ms": [...],
//! "writes": W}`, latencies in call order per session. Any error answer, HTTP error or
//! tool error ends the run with a message and exit status 1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The calls' choices: a 64-bit LCG (Knuth's MMIX constants), high bits only. Enough to
/// vary the calls; not the engine's generator, which is private to its vector kernel.
struct Lcg(u64);

impl Lcg {
    fn new(seed: u64) -> Lcg {
        Lcg(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 24
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next_u64() % n as u64).unwrap_or(0)
    }
}

const WORDS: &[&str] = &[
    "memory", "graph", "agent", "session", "tool", "search", "path", "link", "note", "fact",
    "user", "project", "task", "plan", "result", "error", "fix", "test", "build", "release",
    "design", "storage", "index", "query", "answer", "source", "reason", "context", "time",
    "change", "version", "record", "event", "topic", "idea",
];

type Fallible<T> = Result<T, String>;

/// The protocol revision a client speaks: sessions (`2025-06-18`) or stateless requests
/// (`2026-07-28`).
#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    Sessions,
    Stateless,
}

/// One MCP client on one keep-alive connection: a session, or stateless requests.
struct Session {
    host: String,
    reader: BufReader<TcpStream>,
    session: Option<String>,
    next_id: u64,
    protocol: Protocol,
}

impl Session {
    fn open(host: &str, protocol: Protocol) -> Fallible<Session> {
        let stream = TcpStream::connect(host).map_err(|e| format!("connect {host}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(|e| e.to_string())?;
        let mut s = Session {
            host: host.to_string(),
            reader: BufReader::with_capacity(64 * 1024, stream),
            session: None,
            next_id: 0,
            protocol,
        };
        if protocol == Protocol::Stateless {
            return Ok(s);
        }
        s.rpc(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "agents-load", "version": "1"}}),
        )?;
        s.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            "",
        )?;
        Ok(s)
    }

    /// Sends one POST (`extra`: more header lines, each ending in CRLF) and returns
    /// (content type, body).
    fn post(&mut self, body: &str, extra: &str) -> Fallible<(String, Vec<u8>)> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n{extra}",
            self.host,
            body.len()
        );
        if let Some(id) = &self.session {
            head.push_str("Mcp-Session-Id: ");
            head.push_str(id);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head.push_str(body);
        let stream = self.reader.get_mut();
        stream
            .write_all(head.as_bytes())
            .map_err(|e| format!("send: {e}"))?;

        let mut line = String::new();
        self.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {line:?}"))?;
        let (mut ctype, mut length, mut chunked) = (String::new(), None, false);
        loop {
            line.clear();
            self.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let Some((name, value)) = l.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-type" => ctype = value.to_string(),
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => self.session = Some(value.to_string()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| format!("bad chunk size {line:?}"))?;
                let start = body.len();
                body.resize(start + size + 2, 0); // the chunk and its CRLF
                self.reader
                    .read_exact(&mut body[start..])
                    .map_err(|e| format!("read: {e}"))?;
                body.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        } else if let Some(n) = length {
            body.resize(n, 0);
            self.reader
                .read_exact(&mut body)
                .map_err(|e| format!("read: {e}"))?;
        } else if status != 202 && status != 204 {
            return Err(format!(
                "HTTP {status} without a length: keep-alive impossible"
            ));
        }
        if status >= 400 {
            let text = String::from_utf8_lossy(&body);
            return Err(format!("HTTP {status}: {}", &text[..text.len().min(300)]));
        }
        Ok((ctype, body))
    }

    fn read_line(&mut self, line: &mut String) -> Fallible<()> {
        match self.reader.read_line(line) {
            Ok(0) => Err("the server closed the connection".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    fn rpc(&mut self, method: &str, mut params: Value) -> Fallible<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut extra = String::new();
        if self.protocol == Protocol::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "agents-load", "version": "1"}
            });
            extra = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
            if let Some(name) = params.get("name").and_then(Value::as_str) {
                extra.push_str(&format!("Mcp-Name: {name}\r\n"));
            }
        }
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (ctype, body) = self.post(&request.to_string(), &extra)?;
        let text = std::str::from_utf8(&body).map_err(|e| e.to_string())?;
        let mut msg: Option<Value> = None;
        if ctype.starts_with("text/event-stream") {
            for data in text.lines().filter_map(|l| l.strip_prefix("data:")) {
                let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
                    continue;
                };
                if v.get("id").and_then(Value::as_u64) == Some(id) {
                    msg = Some(v);
                    break;
                }
            }
        } else {
            msg = serde_json::from_str(text).ok();
        }
        let mut msg = msg.ok_or_else(|| format!("no answer to {method}: {}", clip(text)))?;
        if let Some(err) = msg.get("error") {
            return Err(format!("{method}: {}", clip(&err.to_string())));
        }
        Ok(msg["result"].take())
    }

    fn call(&mut self, tool: &str, args: Value) -> Fallible<Value> {
        let res = self.rpc("tools/call", json!({"name": tool, "arguments": args}))?;
        if res.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(format!("{tool}: {}", clip(&res.to_string())));
        }
        Ok(res)
    }
}

fn clip(s: &str) -> &str {
    let mut end = s.len().min(300);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn words(rng: &mut Lcg, n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len())]);
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Mix {
    Read,
    Mixed,
    Write,
}

/// One session's run: (latencies in ms, writes acknowledged).
fn worker(
    host: &str,
    ids: &[String],
    mix: Mix,
    protocol: Protocol,
    seed: u64,
    start: SystemTime,
    seconds: f64,
) -> Fallible<(Vec<f64>, u64)> {
    let mut s = Session::open(host, protocol)?;
    let mut rng = Lcg::new(seed);
    if let Ok(wait) = start.duration_since(SystemTime::now()) {
        std::thread::sleep(wait);
    }
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut lat, mut writes) = (Vec::new(), 0u64);
    let pick = |rng: &mut Lcg| ids[rng.below(ids.len())].clone();
    loop {
        let t = Instant::now();
        if t >= end {
            break;
        }
        let op = (rng.next_u64() % 1000) as f64 / 1000.0;
        if mix == Mix::Write || (mix == Mix::Mixed && op < 0.2) {
            let content = words(&mut rng, 20);
            s.call(
                "create_memory",
                json!({"type": "episodic", "content": content}),
            )?;
            writes += 1;
        } else {
            match rng.next_u64() % 3 {
                0 => s.call(
                    "memory_search",
                    json!({"query": words(&mut rng, 2), "limit": 10}),
                )?,
                1 => s.call("get_memory", json!({"memory_id": pick(&mut rng)}))?,
                _ => {
                    let (from, to) = (pick(&mut rng), pick(&mut rng));
                    s.call("memory_path", json!({"from_id": from, "to_id": to}))?
                }
            };
        }
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok((lat, writes))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("agents_load: {e}");
        std::process::exit(1);
    }
}

fn run() -> Fallible<()> {
    let mut args = std::env::args().skip(1);
    let host = args
        .next()
        .ok_or("usage: agents_load HOST:PORT --clients N --mix M --seconds S --ids FILE")?;
    let (mut clients, mut mix, mut seconds, mut ids_file, mut seed, mut start_at) =
        (1usize, Mix::Read, 10.0f64, None, 1u64, None);
    let mut protocol = Protocol::Sessions;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |_| format!("bad value for {flag}: {value:?}");
        match flag.as_str() {
            "--clients" => {
                clients = value
                    .parse()
                    .map_err(|e: std::num::ParseIntError| bad(e.to_string()))?
            }
            "--seconds" => {
                seconds = value
                    .parse()
                    .map_err(|e: std::num::ParseFloatError| bad(e.to_string()))?
            }
            "--seed" => {
                seed = value
                    .parse()
                    .map_err(|e: std::num::ParseIntError| bad(e.to_string()))?
            }
            "--start-at" => start_at = Some(value.parse::<f64>().map_err(|e| bad(e.to_string()))?),
            "--ids" => ids_file = Some(value),
            "--mix" => {
                mix = match value.as_str() {
                    "read" => Mix::Read,
                    "mixed" => Mix::Mixed,
                    "write" => Mix::Write,
                    _ => return Err(format!("--mix is read, mixed or write, not {value:?}")),
                }
            }
            "--protocol" => {
                protocol = match value.as_str() {
                    "2025-06-18" => Protocol::Sessions,
                    "2026-07-28" => Protocol::Stateless,
                    _ => {
                        return Err(format!(
                            "--protocol is 2025-06-18 or 2026-07-28, not {value:?}"
                        ));
                    }
                }
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if clients == 0 || !seconds.is_finite() || seconds <= 0.0 {
        return Err("--clients and --seconds must be positive".into());
    }
    let ids_file = ids_file.ok_or("--ids FILE is required")?;
    let ids: Vec<String> = std::fs::read_to_string(&ids_file)
        .map_err(|e| format!("{ids_file}: {e}"))?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Err(format!("{ids_file} holds no memory ids"));
    }
    let start = match start_at {
        Some(t) => UNIX_EPOCH + Duration::from_secs_f64(t),
        None => SystemTime::now() + Duration::from_secs(1),
    };
    let results: Vec<Fallible<(Vec<f64>, u64)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|i| {
                let (host, ids) = (&host, &ids);
                scope.spawn(move || {
                    worker(
                        host,
                        ids,
                        mix,
                        protocol,
                        seed * 1000 + i as u64,
                        start,
                        seconds,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a client thread panicked".into()))
            })
            .collect()
    });
    let (mut lat, mut writes) = (Vec::new(), 0);
    for r in results {
        let (l, w) = r?;
        lat.extend(l);
        writes += w;
    }
    println!("{}", json!({"latencies_ms": lat, "writes": writes}));
    Ok(())
}
