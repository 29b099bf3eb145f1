//! How [`crate::hub`] fetches a file: one HTTP `GET`, behind the [`Transport`] trait.
//!
//! The hub decides everything else (which files, from which revision, the cache layout,
//! pins and checksums, progress, errors); a transport only moves bytes. Two exist:
//!
//! - [`UreqTransport`], the built-in client (`ureq` with rustls and the webpki roots),
//!   compiled with the crate's `download` feature (on by default);
//! - one the host supplies with [`set_default_transport`]. The Python package does this:
//!   its downloads go through Python's own `urllib` (Python's TLS, certificates and
//!   proxy settings), so the wheel does not compile a second TLS stack (about a tenth of
//!   its build).
//!
//! A build with neither cannot download: a model id not in the cache is
//! [`crate::EmbedError::ModelUnavailable`], which says so.

use std::fmt;
use std::io::Read;
use std::sync::{Arc, OnceLock};

/// One HTTP `GET` for the hub. Implementations must be usable from any thread.
pub trait Transport: Send + Sync + fmt::Debug {
    /// Requests `url`, following redirects, and returns the final answer whatever its
    /// status (a 404 is an answer, not an error). `token`, when given, is sent as
    /// `Authorization: Bearer {token}` to `url` and on redirects to the same host (the
    /// Hub redirects some files to its own `/api/resolve-cache/...`, which needs it for a
    /// gated model), never on a redirect to another host (the Hub sends large files to a
    /// CDN whose signed addresses must not see it), as `huggingface_hub` does.
    ///
    /// # Errors
    ///
    /// [`TransportError::Unreachable`] when no answer came (name resolution, connection,
    /// TLS, proxy, timeout); [`TransportError::Failed`] for anything else.
    fn get(&self, url: &str, token: Option<&str>) -> Result<Response, TransportError>;
}

/// An answer: status, headers, and the body to read.
pub struct Response {
    /// The HTTP status of the final answer (after redirects).
    pub status: u16,
    /// The final answer's headers, names in any case.
    pub headers: Vec<(String, String)>,
    /// The body; a read error means the transfer broke off.
    pub body: Box<dyn Read + Send>,
}

impl Response {
    /// The first header called `name` (compared without case), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

/// Why a [`Transport::get`] brought no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// The endpoint could not be reached (the hub then reports the model unavailable,
    /// naming the other ways to provide it).
    Unreachable(String),
    /// Any other failure (a malformed address, a protocol error).
    Failed(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Unreachable(why) | TransportError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for TransportError {}

static DEFAULT: OnceLock<Arc<dyn Transport>> = OnceLock::new();

/// Makes `transport` the one every [`crate::hub::Hub`] made afterwards uses (in this
/// process), in place of the built-in client. The first call wins: returns `false`, and
/// changes nothing, when a transport was already set.
pub fn set_default_transport(transport: Arc<dyn Transport>) -> bool {
    DEFAULT.set(transport).is_ok()
}

/// The transport a new hub uses: the one [`set_default_transport`] set, else the built-in
/// client when the `download` feature is on, else none.
pub fn default_transport() -> Option<Arc<dyn Transport>> {
    DEFAULT.get().cloned().or_else(builtin)
}

#[cfg(feature = "download")]
fn builtin() -> Option<Arc<dyn Transport>> {
    static BUILTIN: OnceLock<Arc<dyn Transport>> = OnceLock::new();
    Some(
        BUILTIN
            .get_or_init(|| Arc::new(UreqTransport::default()))
            .clone(),
    )
}

#[cfg(not(feature = "download"))]
fn builtin() -> Option<Arc<dyn Transport>> {
    None
}

#[cfg(feature = "download")]
pub use builtin_client::UreqTransport;

#[cfg(feature = "download")]
mod builtin_client {
    use std::sync::OnceLock;
    use std::time::Duration;

    use super::{Response, Transport, TransportError};

    /// The built-in client: `ureq` over rustls with the webpki root certificates
    /// (no OpenSSL), HTTP(S) proxies from `HTTPS_PROXY` / `ALL_PROXY`; 15 s to connect,
    /// 60 s for an answer and for each read.
    #[derive(Debug, Default)]
    pub struct UreqTransport {
        agent: OnceLock<ureq::Agent>,
    }

    impl UreqTransport {
        fn agent(&self) -> &ureq::Agent {
            self.agent.get_or_init(|| {
                ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    // Authorization follows a redirect to the same host only (and scheme,
                    // or from http to https).
                    .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
                    .timeout_connect(Some(Duration::from_secs(15)))
                    .timeout_recv_response(Some(Duration::from_secs(60)))
                    .timeout_per_read(Some(Duration::from_secs(60)))
                    .user_agent(concat!("hopgraph-embed/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .new_agent()
            })
        }
    }

    impl Transport for UreqTransport {
        fn get(&self, url: &str, token: Option<&str>) -> Result<Response, TransportError> {
            let mut request = self.agent().get(url);
            if let Some(token) = token {
                request = request.header("Authorization", &format!("Bearer {token}"));
            }
            let response = request.call().map_err(|e| {
                if unreachable(&e) {
                    TransportError::Unreachable(e.to_string())
                } else {
                    TransportError::Failed(e.to_string())
                }
            })?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .filter_map(|(name, value)| {
                    Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                })
                .collect();
            Ok(Response {
                status,
                headers,
                body: Box::new(response.into_body().into_reader()),
            })
        }
    }

    /// Whether a failed request means the endpoint could not be reached at all (as
    /// opposed to an answer that was wrong).
    fn unreachable(e: &ureq::Error) -> bool {
        matches!(
            e,
            ureq::Error::Io(_)
                | ureq::Error::Timeout(_)
                | ureq::Error::HostNotFound
                | ureq::Error::ConnectionFailed
                | ureq::Error::Tls(_)
                | ureq::Error::Rustls(_)
                | ureq::Error::InvalidProxyUrl
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_found_without_case_and_trimmed() {
        let r = Response {
            status: 200,
            headers: vec![
                ("x-repo-commit".to_owned(), " abc ".to_owned()),
                ("Content-Length".to_owned(), "12".to_owned()),
                ("content-length".to_owned(), "99".to_owned()),
            ],
            body: Box::new(std::io::empty()),
        };
        assert_eq!(r.header("X-Repo-Commit"), Some("abc"));
        assert_eq!(r.header("CONTENT-LENGTH"), Some("12"), "the first one");
        assert_eq!(r.header("etag"), None);
    }
}
