//! MCP's streamable HTTP transport (`hopgraph-mcp --http ADDR`): several clients share one
//! server, its stores and its tools.
//!
//! ```text
//!  client ──HTTP/1.1──▶ front (this module)                    ──▶ rmcp StreamableHttpService
//!                       path /mcp, bearer token, session bound,     (sessions, SSE, JSON-RPC,
//!                       body ≤ LINE_BYTES_MAX read with a limit,     the same HopgraphServer
//!                       the stdio gate's limit check (check_line)    as stdio)
//! ```
//!
//! The front does what rmcp's HTTP service does not: it requires `Authorization: Bearer
//! <token>` when a token is configured (compared in constant time; 401 otherwise), keeps
//! at most [`BODY_BYTES_MAX`] bytes of a request body (the stdio line limit; past it the
//! rest is read and dropped, up to [`DRAIN_BYTES_MAX`], and the request is answered 413
//! with its id when the id can be read from the part kept), and runs the same
//! limit check as the stdio gate ([`check_line`]) over the body before any value is built,
//! answering a broken limit as stdio does: a tool error (`isError`) with the request's id
//! for an argument, JSON-RPC `-32600` for the message. Everything else (protocol versions,
//! sessions, `Host`/`Origin` checks, parse errors) is rmcp's.

use std::convert::Infallible;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::limits::{LINE_BYTES_MAX, LineCheck, Violation, check_line, scan_id};
use super::server::{HopgraphServer, error_line, log, tool_error_line};

/// Largest request body, in bytes: the stdio line limit, so a message is accepted over
/// HTTP exactly when it would be over stdio.
pub const BODY_BYTES_MAX: usize = LINE_BYTES_MAX;
/// The MCP endpoint's path; every other path is answered 404.
pub const MCP_PATH: &str = "/mcp";
/// Shortest bearer token accepted.
pub const TOKEN_BYTES_MIN: usize = 16;
/// Longest bearer token accepted.
pub const TOKEN_BYTES_MAX: usize = 1024;
/// Most HTTP connections served at once; a connection past it is closed at once.
pub const CONNECTIONS_MAX: usize = 1024;
/// Most MCP sessions open at once; an `initialize` past it is answered 503. Idle
/// sessions close after [`SESSION_IDLE`].
pub const SESSIONS_MAX: usize = 256;
/// A session with no request for this long is closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// Most bytes of an oversized body read (and discarded) before it is answered 413, so
/// that a client that writes its whole body before reading sees the answer rather than a
/// reset connection; a longer body is answered at once and its connection closed.
pub const DRAIN_BYTES_MAX: u64 = 64 << 20;
/// Longest wait for a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a request's body.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

type HttpBody = BoxBody<Bytes, Infallible>;

/// Checks a bearer token: [`TOKEN_BYTES_MIN`] to [`TOKEN_BYTES_MAX`] visible ASCII
/// characters (it travels in an HTTP header).
///
/// # Errors
/// A message saying which rule the token broke (never the token itself).
pub fn check_token(token: &str) -> Result<(), String> {
    if token.len() < TOKEN_BYTES_MIN || token.len() > TOKEN_BYTES_MAX {
        return Err(format!(
            "the HTTP token must be {TOKEN_BYTES_MIN} to {TOKEN_BYTES_MAX} characters, \
             it has {}",
            token.len()
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("the HTTP token must be visible ASCII characters (no spaces)".to_owned());
    }
    Ok(())
}

/// Resolves `addr` (`IP:PORT`, `[IPv6]:PORT` or `localhost:PORT`) to the address to bind,
/// and whether every address it names is a loopback address.
///
/// # Errors
/// Not an address, or it resolves to nothing.
pub fn resolve(addr: &str) -> Result<(SocketAddr, bool), String> {
    let all: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| format!("--http: {addr:?} is not an address to listen on (IP:PORT): {e}"))?
        .collect();
    let first = *all
        .first()
        .ok_or_else(|| format!("--http: {addr:?} resolves to no address"))?;
    let loopback = all.iter().all(|a| a.ip().is_loopback());
    Ok((first, loopback))
}

/// Whether `given` equals `expected`, in time that depends only on `expected`'s length.
pub fn token_eq(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        let g = given.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box(g ^ e);
    }
    std::hint::black_box(diff) == 0
}

/// Whether `headers` carry `Authorization: Bearer <token>`.
fn authorized(headers: &HeaderMap, token: &[u8]) -> bool {
    let Some(v) = headers.get(AUTHORIZATION) else {
        return false;
    };
    let v = v.as_bytes();
    let Some((scheme, rest)) = v.split_at_checked(7) else {
        return false;
    };
    scheme.eq_ignore_ascii_case(b"bearer ") && token_eq(rest.trim_ascii(), token)
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<HttpBody> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}

fn text(status: StatusCode, msg: &str) -> Response<HttpBody> {
    full(status, "text/plain; charset=utf-8", msg.to_owned())
}

fn json_rpc(status: StatusCode, line: Vec<u8>) -> Response<HttpBody> {
    full(status, "application/json", line)
}

fn unauthorized() -> Response<HttpBody> {
    let mut r = text(
        StatusCode::UNAUTHORIZED,
        "Unauthorized: send the server's token as `Authorization: Bearer <token>`",
    );
    r.headers_mut().insert(
        WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer realm=\"hopgraph-mcp\""),
    );
    r
}

fn too_large(id: Option<&Value>) -> Response<HttpBody> {
    let msg =
        format!("Invalid Request: the message is larger than the limit of {BODY_BYTES_MAX} bytes");
    json_rpc(StatusCode::PAYLOAD_TOO_LARGE, error_line(id, -32600, &msg))
}

/// How reading a body failed.
enum BodyError {
    /// Past [`BODY_BYTES_MAX`]: the first [`BODY_BYTES_MAX`] bytes (to find the id in).
    Oversized(Vec<u8>),
    /// The connection failed or timed out.
    Broken(String),
}

/// Reads `body`, storing at most [`BODY_BYTES_MAX`] bytes. Past that, the rest is read
/// and dropped up to [`DRAIN_BYTES_MAX`] in all (as the stdio gate skips the rest of an
/// oversized line), then reading stops.
async fn read_body(mut body: Incoming) -> Result<Bytes, BodyError> {
    let mut buf = Vec::new();
    let mut oversized = false;
    let mut seen = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Broken(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len() as u64);
        if !oversized {
            let room = BODY_BYTES_MAX - buf.len();
            if data.len() > room {
                buf.extend_from_slice(&data[..room]);
                oversized = true;
            } else {
                buf.extend_from_slice(&data);
            }
        }
        if oversized && seen > DRAIN_BYTES_MAX {
            break;
        }
    }
    if oversized {
        return Err(BodyError::Oversized(buf));
    }
    Ok(Bytes::from(buf))
}

/// What the front knows for every request.
struct Front {
    service: StreamableHttpService<HopgraphServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    token: Option<Box<[u8]>>,
}

impl Front {
    async fn handle(&self, req: Request<Incoming>) -> Response<HttpBody> {
        if req.uri().path() != MCP_PATH {
            return text(StatusCode::NOT_FOUND, "Not Found: the MCP endpoint is /mcp");
        }
        if let Some(token) = &self.token
            && !authorized(req.headers(), token)
        {
            return unauthorized();
        }
        let (parts, body) = req.into_parts();
        let declared = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > DRAIN_BYTES_MAX) {
            return too_large(None);
        }
        let bytes = match tokio::time::timeout(BODY_TIMEOUT, read_body(body)).await {
            Ok(Ok(b)) => b,
            Ok(Err(BodyError::Oversized(prefix))) => return too_large(scan_id(&prefix).as_ref()),
            Ok(Err(BodyError::Broken(e))) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!("Bad Request: reading the body failed: {e}"),
                );
            }
            Err(_) => {
                return text(
                    StatusCode::REQUEST_TIMEOUT,
                    "Request Timeout: the body did not arrive in time",
                );
            }
        };
        if parts.method == Method::POST {
            // The stdio gate's limit check, on the raw bytes: nothing is built for a body
            // that breaks a limit. A body that is not JSON is left to rmcp to answer.
            if let LineCheck::Broken(v) = check_line(&bytes) {
                let id = scan_id(&bytes);
                return match (v, id) {
                    (Violation::Argument(m), Some(id)) => {
                        json_rpc(StatusCode::OK, tool_error_line(&id, &m))
                    }
                    // A notification is never answered.
                    (Violation::Argument(_), None) => {
                        full(StatusCode::ACCEPTED, "text/plain", Bytes::new())
                    }
                    (Violation::Message(m), id) => {
                        json_rpc(StatusCode::BAD_REQUEST, error_line(id.as_ref(), -32600, &m))
                    }
                };
            }
            if !parts.headers.contains_key("mcp-session-id")
                && self.sessions.sessions.read().await.len() >= SESSIONS_MAX
            {
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!(
                        "Service Unavailable: {SESSIONS_MAX} sessions are open; idle ones \
                         close after {} s",
                        SESSION_IDLE.as_secs()
                    ),
                );
            }
        }
        self.service
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await
    }
}

/// Serves MCP over streamable HTTP on `listener` (endpoint [`MCP_PATH`]) until `shutdown`
/// resolves. `token`: the bearer token every request must carry, if any. `loopback`:
/// whether the listener is on a loopback address; there rmcp's `Host` check (against
/// DNS rebinding) stays on, elsewhere the token guards the server and any `Host` is
/// accepted.
///
/// # Errors
/// None so far: accept errors are logged and retried.
pub async fn serve_http(
    server: HopgraphServer,
    listener: TcpListener,
    token: Option<String>,
    loopback: bool,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(BODY_BYTES_MAX)
        .with_sse_keep_alive(Some(Duration::from_secs(15)));
    if !loopback {
        config = config.disable_allowed_hosts();
    }
    let cancel = config.cancellation_token.clone();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let sessions = Arc::new(sessions);
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let front = Arc::new(Front {
        service,
        sessions,
        token: token.map(|t| t.into_bytes().into_boxed_slice()),
    });
    let permits = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                // Small answers go out at once: without TCP_NODELAY the last segment of a
                // response waits for the client's delayed ACK (~40 ms per call on Linux).
                if let Err(e) = stream.set_nodelay(true) {
                    log(&format!("setting TCP_NODELAY failed: {e}"));
                }
                stream
            }
            Err(e) => {
                // Out of file descriptors and the like: wait a little rather than spin.
                log(&format!("accepting a connection failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let front = front.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let front = front.clone();
                async move { Ok::<_, Infallible>(front.handle(req).await) }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), svc);
            // An error here is the client's (it went away, sent garbage): nothing to do.
            let _ = conn.await;
            drop(permit);
        });
    }
    cancel.cancel();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(token_eq(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!token_eq(b"0123456789abcdeF", b"0123456789abcdef"));
        assert!(!token_eq(b"0123456789abcde", b"0123456789abcdef"));
        assert!(!token_eq(b"0123456789abcdef0", b"0123456789abcdef"));
        assert!(!token_eq(b"", b"0123456789abcdef"));
        assert!(check_token("0123456789abcdef").is_ok());
        assert!(check_token("short").is_err());
        assert!(check_token("0123456789 abcdef").is_err());
        let mut h = HeaderMap::new();
        assert!(!authorized(&h, b"0123456789abcdef"));
        h.insert(AUTHORIZATION, "bearer 0123456789abcdef".parse().unwrap());
        assert!(authorized(&h, b"0123456789abcdef"));
        h.insert(AUTHORIZATION, "Basic 0123456789abcdef".parse().unwrap());
        assert!(!authorized(&h, b"0123456789abcdef"));
        h.insert(AUTHORIZATION, "Bearer".parse().unwrap());
        assert!(!authorized(&h, b"0123456789abcdef"));
    }

    #[test]
    fn loopback_or_not() {
        assert!(resolve("127.0.0.1:0").unwrap().1);
        assert!(resolve("[::1]:0").unwrap().1);
        assert!(!resolve("0.0.0.0:0").unwrap().1);
        assert!(!resolve("[::]:0").unwrap().1);
        assert!(resolve("nonsense").is_err());
    }
}
