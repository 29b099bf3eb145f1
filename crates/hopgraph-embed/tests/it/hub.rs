//! Models by Hugging Face id: a local HTTP server in the test plays the Hub
//! (`/{repo}/resolve/{revision}/{file}`, with Content-Length), serving a tiny model's files
//! under a test-only pin table; the cache is a temporary directory.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Cursor, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hopgraph_embed::hub::{Hub, ModelRef, Origin, Pin, PinnedFile, Progress, known_models};
use hopgraph_embed::tiny_model::TinyModel;
use hopgraph_embed::transport::{Response, Transport, TransportError};
use hopgraph_embed::{EmbedError, Embedder, Precision};
use sha2::{Digest, Sha256};

const REPO: &str = "test-org/tiny-model";
const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";
const MAIN_COMMIT: &str = "89abcdef0123456789abcdef0123456789abcdef";
const FILES: [&str; 6] = [
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
];

/// How the test server misbehaves for one file.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Announces the whole length, sends half, closes the connection.
    CutShort,
    /// Announces and sends only the first half.
    Short,
    /// Sends no `X-Repo-Commit`.
    NoCommit,
    /// Redirects (302) to the same file under `/moved`, on the same host.
    RedirectHere,
    /// Redirects (302) to the same file under `/moved`, addressed as `localhost`: another
    /// host as far as a client can tell.
    RedirectElsewhere,
}

/// A minimal Hub: serves `root/{url path}` for `GET /{repo}/resolve/{revision}/{file}`,
/// one request per connection, with Content-Length, and `X-Repo-Commit` for `main`.
struct HubServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<String>>>,
    /// The `Authorization` header of each request, in order.
    auth: Arc<Mutex<Vec<Option<String>>>>,
    thread: Option<JoinHandle<()>>,
}

impl HubServer {
    fn start(root: &Path, faults: HashMap<String, Fault>) -> HubServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let auth = Arc::new(Mutex::new(Vec::new()));
        let root = root.to_path_buf();
        let (stop2, requests2, auth2) = (stop.clone(), requests.clone(), auth.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    serve_one(stream, &root, &faults, (&requests2, &auth2));
                }
            }
        });
        HubServer {
            addr,
            stop,
            requests,
            auth,
            thread: Some(thread),
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}

impl Drop for HubServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
        if let Some(t) = self.thread.take() {
            t.join().expect("server thread");
        }
    }
}

fn serve_one(
    stream: TcpStream,
    root: &Path,
    faults: &HashMap<String, Fault>,
    (requests, auth): (&Mutex<Vec<String>>, &Mutex<Vec<Option<String>>>),
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut authorization = None;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("authorization")
                {
                    authorization = Some(value.trim().to_owned());
                }
            }
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_owned();
    requests.lock().expect("lock").push(path.clone());
    auth.lock().expect("lock").push(authorization);
    let mut out = stream;
    let (moved, path) = match path.strip_prefix("/moved") {
        Some(p) => (true, p.to_owned()),
        None => (false, path),
    };
    let file = root.join(path.trim_start_matches('/'));
    let Ok(body) = std::fs::read(&file) else {
        let _ = out
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let name = path.rsplit("/resolve/").next().unwrap_or("");
    let name = name.split_once('/').map_or("", |(_, f)| f);
    let fault = faults.get(name).copied();
    if !moved && let Some(Fault::RedirectHere | Fault::RedirectElsewhere) = fault {
        let host = match fault {
            Some(Fault::RedirectElsewhere) => format!("http://localhost:{}", port_of(&out)),
            _ => String::new(), // a relative redirect, as the Hub answers some files
        };
        let _ = out.write_all(
            format!(
                "HTTP/1.1 302 Found\r\nLocation: {host}/moved{path}\r\nContent-Length: 0\r\n\
                 Connection: close\r\n\r\n"
            )
            .as_bytes(),
        );
        return;
    }
    let commit = if path.contains("/resolve/main/") && !matches!(fault, Some(Fault::NoCommit)) {
        format!("X-Repo-Commit: {MAIN_COMMIT}\r\n")
    } else {
        String::new()
    };
    let (announced, sent) = match fault {
        None | Some(Fault::NoCommit | Fault::RedirectHere | Fault::RedirectElsewhere) => {
            (body.len(), body.len())
        }
        Some(Fault::CutShort) => (body.len(), body.len() / 2),
        Some(Fault::Short) => (body.len() / 2, body.len() / 2),
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {announced}\r\n{commit}Connection: close\r\n\r\n"
    );
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(&body[..sent]);
    let _ = out.flush();
}

fn port_of(stream: &TcpStream) -> u16 {
    stream.local_addr().map_or(0, |a| a.port())
}

/// A tiny model laid out as the Hub serves it at `REVISION` and at `main`, and its pins.
struct Fixture {
    _root: tempfile::TempDir,
    root: PathBuf,
    cache: tempfile::TempDir,
    pin: Pin,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().expect("temp dir");
        let model = root.path().join("model");
        TinyModel {
            max_seq_length: Some(24),
            ..TinyModel::default()
        }
        .write(&model)
        .expect("tiny model");
        for rev in [REVISION, MAIN_COMMIT, "main"] {
            let dir = root.path().join(REPO).join("resolve").join(rev);
            for file in FILES {
                let to = dir.join(file);
                std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
                std::fs::copy(model.join(file), &to).expect("copy");
            }
        }
        let pin = Pin {
            repo: REPO.to_owned(),
            revision: REVISION.to_owned(),
            files: FILES
                .iter()
                .map(|f| {
                    let bytes = std::fs::read(model.join(f)).expect("read");
                    PinnedFile {
                        path: (*f).to_owned(),
                        size: bytes.len() as u64,
                        sha256: sha256(&bytes),
                    }
                })
                .collect(),
        };
        Fixture {
            root: root.path().to_path_buf(),
            _root: root,
            cache: tempfile::tempdir().expect("temp dir"),
            pin,
        }
    }

    /// The file as the server sends it at `rev`.
    fn served(&self, rev: &str, file: &str) -> PathBuf {
        self.root.join(REPO).join("resolve").join(rev).join(file)
    }

    fn hub(&self, endpoint: &str) -> Hub {
        Hub::new(self.cache.path(), endpoint).with_pins(vec![self.pin.clone()])
    }

    fn repo_dir(&self) -> PathBuf {
        self.cache.path().join("models--test-org--tiny-model")
    }

    /// Temporary files left in the cache.
    fn leftovers(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.cache.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() && !e.file_type().expect("type").is_symlink() {
                    stack.push(p);
                } else if p.to_string_lossy().contains(".incomplete") {
                    out.push(p);
                }
            }
        }
        out
    }
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An endpoint nothing listens on.
fn dead_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}

fn no_progress(_: &Progress<'_>) {}

#[test]
fn downloads_with_progress_then_serves_from_the_cache() {
    let fx = Fixture::new();
    let server = HubServer::start(&fx.root, HashMap::new());
    let mut seen: HashMap<String, (u64, Option<u64>, usize)> = HashMap::new();
    let model = fx
        .hub(&server.endpoint())
        .resolve(REPO, |p| {
            seen.insert(p.file.to_owned(), (p.done, p.total, p.file_count));
        })
        .expect("download");
    assert_eq!(model.origin, Origin::Downloaded);
    assert!(model.verified);
    assert_eq!(model.revision.as_deref(), Some(REVISION));
    assert_eq!(
        model.dir,
        fx.repo_dir().join("snapshots").join(REVISION),
        "the standard layout"
    );
    // Every file downloaded from the pinned commit, each reported complete.
    let mut requested = server.requests();
    requested.sort();
    let mut expected: Vec<String> = FILES
        .iter()
        .map(|f| format!("/{REPO}/resolve/{REVISION}/{f}"))
        .collect();
    expected.sort();
    assert_eq!(requested, expected);
    for f in &fx.pin.files {
        let (done, total, count) = seen.get(&f.path).copied().expect("progress for each file");
        assert_eq!((done, total, count), (f.size, Some(f.size), FILES.len()));
    }
    // Layout: refs/main, blobs named by sha256, relative links from the snapshot.
    let refs = std::fs::read_to_string(fx.repo_dir().join("refs/main")).expect("refs/main");
    assert_eq!(refs, REVISION);
    for f in &fx.pin.files {
        let link = model.dir.join(&f.path);
        let target = std::fs::read_link(&link).expect("a symbolic link");
        assert!(target.is_relative(), "{}", target.display());
        assert!(target.ends_with(Path::new("blobs").join(&f.sha256)));
        assert_eq!(
            std::fs::read(&link).expect("read"),
            std::fs::read(fx.served(REVISION, &f.path)).expect("read")
        );
    }
    assert!(fx.leftovers().is_empty(), "{:?}", fx.leftovers());
    let embedder = Embedder::load_resolved(&model, Precision::F32).expect("load");
    assert!(
        embedder.model_id().starts_with("tiny-model:"),
        "{}",
        embedder.model_id()
    );
    assert_eq!(embedder.embed_one("hello world").expect("embed").len(), 32);

    // The server gone: the cache serves, verified again, without a request.
    let endpoint = server.endpoint();
    drop(server);
    let again = fx
        .hub(&endpoint)
        .resolve(REPO, no_progress)
        .expect("cached");
    assert_eq!(again.origin, Origin::Cache);
    assert!(again.verified);
    assert_eq!(again.dir, model.dir);
    let offline = fx
        .hub(&endpoint)
        .offline(true)
        .resolve(REPO, no_progress)
        .expect("cached, offline");
    assert_eq!(offline.origin, Origin::Cache);
    let reloaded = Embedder::load_resolved(&again, Precision::F32).expect("load");
    assert_eq!(reloaded.fingerprint(), embedder.fingerprint());
}

#[test]
fn a_tampered_download_is_refused_naming_the_file() {
    let fx = Fixture::new();
    // Same length, one byte changed.
    let served = fx.served(REVISION, "tokenizer.json");
    let mut bytes = std::fs::read(&served).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&served, bytes).expect("write");
    let server = HubServer::start(&fx.root, HashMap::new());
    let err = fx
        .hub(&server.endpoint())
        .resolve(REPO, no_progress)
        .expect_err("tampered");
    match &err {
        EmbedError::Checksum { file, reason, .. } => {
            assert_eq!(file, "tokenizer.json");
            assert!(reason.contains("SHA-256"), "{reason}");
        }
        other => panic!("expected Checksum, got {other:?}"),
    }
    assert!(err.to_string().contains("tokenizer.json"), "{err}");
    let snapshot = fx.repo_dir().join("snapshots").join(REVISION);
    assert!(!snapshot.join("tokenizer.json").exists());
    assert!(fx.leftovers().is_empty(), "{:?}", fx.leftovers());
}

#[test]
fn a_tampered_cached_file_is_refused_naming_it() {
    let fx = Fixture::new();
    let server = HubServer::start(&fx.root, HashMap::new());
    let model = fx
        .hub(&server.endpoint())
        .resolve(REPO, no_progress)
        .expect("download");
    let endpoint = server.endpoint();
    drop(server);
    // Edit the cached weights through the snapshot link, keeping the size.
    let weights = model.dir.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&weights, bytes).expect("write");
    let err = fx
        .hub(&endpoint)
        .resolve(REPO, no_progress)
        .expect_err("tampered");
    assert!(
        matches!(&err, EmbedError::Checksum { file, .. } if file == "model.safetensors"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("model.safetensors") && text.contains("delete it"),
        "{text}"
    );

    // A cached file cut short is refused too.
    let config = model.dir.join("1_Pooling/config.json");
    std::fs::write(&config, b"{").expect("write");
    std::fs::write(
        &weights,
        std::fs::read(fx.served(REVISION, "model.safetensors")).expect("read"),
    )
    .expect("restore");
    let err = fx
        .hub(&endpoint)
        .resolve(REPO, no_progress)
        .expect_err("short");
    assert!(
        matches!(&err, EmbedError::Checksum { file, .. } if file == "1_Pooling/config.json"),
        "{err:?}"
    );
}

#[test]
fn a_truncated_download_is_refused() {
    // The connection closes before the announced length.
    let fx = Fixture::new();
    let faults = HashMap::from([("model.safetensors".to_owned(), Fault::CutShort)]);
    let server = HubServer::start(&fx.root, faults);
    let err = fx
        .hub(&server.endpoint())
        .resolve(REPO, no_progress)
        .expect_err("cut short");
    assert!(
        matches!(&err, EmbedError::Download { file, .. } if file == "model.safetensors"),
        "{err:?}"
    );
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    assert!(
        !fx.repo_dir()
            .join("snapshots")
            .join(REVISION)
            .join("model.safetensors")
            .exists()
    );
    assert!(fx.leftovers().is_empty(), "{:?}", fx.leftovers());
    drop(server);

    // The server announces and sends a shorter file: the pinned size refuses it.
    let fx = Fixture::new();
    let faults = HashMap::from([("tokenizer.json".to_owned(), Fault::Short)]);
    let server = HubServer::start(&fx.root, faults);
    let err = fx
        .hub(&server.endpoint())
        .resolve(REPO, no_progress)
        .expect_err("short");
    assert!(
        matches!(&err, EmbedError::Checksum { file, .. } if file == "tokenizer.json"),
        "{err:?}"
    );
    assert!(fx.leftovers().is_empty(), "{:?}", fx.leftovers());
}

#[test]
fn no_network_and_no_cache_is_one_clear_error() {
    let fx = Fixture::new();
    for hub in [
        fx.hub(&dead_endpoint()),
        fx.hub("http://127.0.0.1:9").offline(true),
    ] {
        let err = hub.resolve(REPO, no_progress).expect_err("nowhere");
        assert!(
            matches!(err, EmbedError::ModelUnavailable { .. }),
            "{err:?}"
        );
        let text = err.to_string();
        for part in [
            REPO,
            "three ways",
            "local model directory",
            "huggingface-cli download",
            "HF_HOME",
            "HF_ENDPOINT",
        ] {
            assert!(text.contains(part), "{part:?} missing from: {text}");
        }
        assert!(
            text.contains(&fx.cache.path().display().to_string()),
            "{text}"
        );
    }
    // The same for the real listed model with an empty cache.
    let err = Hub::new(fx.cache.path(), &dead_endpoint())
        .resolve("sentence-transformers/all-MiniLM-L6-v2", no_progress)
        .expect_err("nowhere");
    assert!(
        matches!(err, EmbedError::ModelUnavailable { .. }),
        "{err:?}"
    );
}

#[test]
fn a_missing_directory_does_not_exist() {
    let fx = Fixture::new();
    for spec in ["/no/such/model/dir", "./no-such-model-dir", "no/such/model"] {
        let err = fx
            .hub(&dead_endpoint())
            .resolve(spec, no_progress)
            .expect_err("no dir");
        assert!(matches!(err, EmbedError::NoDirectory { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("model directory {spec} does not exist")
        );
    }
    let err = Embedder::load("/no/such/model/dir").expect_err("no dir");
    assert_eq!(
        err.to_string(),
        "model directory /no/such/model/dir does not exist"
    );
}

#[test]
fn an_unpinned_model_comes_from_main_unverified() {
    let fx = Fixture::new();
    let server = HubServer::start(&fx.root, HashMap::new());
    let hub = Hub::new(fx.cache.path(), &server.endpoint()).with_pins(Vec::new());
    let model = hub.resolve(REPO, no_progress).expect("download");
    assert_eq!(model.origin, Origin::Downloaded);
    assert!(!model.verified);
    assert_eq!(model.revision.as_deref(), Some(MAIN_COMMIT));
    let requests = server.requests();
    assert_eq!(requests[0], format!("/{REPO}/resolve/main/config.json"));
    assert!(
        requests[1..]
            .iter()
            .all(|r| r.starts_with(&format!("/{REPO}/resolve/{MAIN_COMMIT}/"))),
        "{requests:?}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.repo_dir().join("refs/main")).expect("refs"),
        MAIN_COMMIT
    );
    assert!(!fx.repo_dir().join("snapshots/main").exists());
    Embedder::load_resolved(&model, Precision::F32).expect("load");
    drop(server);
    let again = hub
        .offline(true)
        .resolve(REPO, no_progress)
        .expect("cached");
    assert_eq!(again.origin, Origin::Cache);
    assert_eq!(again.dir, model.dir);
}

#[test]
fn an_unpinned_model_needs_the_commit_of_main() {
    let fx = Fixture::new();
    let faults = HashMap::from([("config.json".to_owned(), Fault::NoCommit)]);
    let server = HubServer::start(&fx.root, faults);
    let err = Hub::new(fx.cache.path(), &server.endpoint())
        .with_pins(Vec::new())
        .resolve(REPO, no_progress)
        .expect_err("no commit");
    assert!(
        matches!(&err, EmbedError::Download { file, .. } if file == "config.json"),
        "{err:?}"
    );
    assert!(err.to_string().contains("X-Repo-Commit"), "{err}");
    assert!(!fx.repo_dir().join("snapshots/main").exists());
    assert!(fx.leftovers().is_empty(), "{:?}", fx.leftovers());
}

#[test]
fn a_python_made_cache_at_another_commit_is_used_when_its_files_are_the_pinned_ones() {
    let fx = Fixture::new();
    // huggingface_hub's layout at another commit, plain files instead of links.
    let commit = "fedcba9876543210fedcba9876543210fedcba98";
    let snapshot = fx.repo_dir().join("snapshots").join(commit);
    for file in FILES {
        let to = snapshot.join(file);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(fx.served(REVISION, file), &to).expect("copy");
    }
    std::fs::create_dir_all(fx.repo_dir().join("refs")).expect("mkdir");
    std::fs::write(fx.repo_dir().join("refs/main"), commit).expect("refs");
    let model = fx
        .hub(&dead_endpoint())
        .resolve(REPO, no_progress)
        .expect("from the cache");
    assert_eq!(model.origin, Origin::Cache);
    assert!(model.verified);
    assert_eq!(model.dir, snapshot);
}

#[test]
fn the_known_models_list_pins_all_minilm() {
    let pins = known_models();
    let pin = pins
        .iter()
        .find(|p| p.repo == "sentence-transformers/all-MiniLM-L6-v2")
        .expect("listed");
    assert_eq!(pin.revision.len(), 40);
    assert_eq!(ModelRef::parse(&pin.repo), ModelRef::Hub(pin.repo.clone()));
}

/// The real all-MiniLM-L6-v2 through the same server, checked against the crate's own pins.
#[test]
#[ignore = "needs the real all-MiniLM-L6-v2 files: set HOPGRAPH_EMBED_MODEL to their directory \
            (README, 'Getting a model directory')"]
fn the_real_all_minilm_downloads_and_verifies() {
    let source = PathBuf::from(
        std::env::var_os("HOPGRAPH_EMBED_MODEL").expect("HOPGRAPH_EMBED_MODEL names the model"),
    );
    let repo = "sentence-transformers/all-MiniLM-L6-v2";
    let pin = known_models()
        .into_iter()
        .find(|p| p.repo == repo)
        .expect("listed");
    let root = tempfile::tempdir().expect("temp dir");
    for f in &pin.files {
        let to = root
            .path()
            .join(repo)
            .join("resolve")
            .join(&pin.revision)
            .join(&f.path);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(source.join(&f.path), &to).expect("copy");
    }
    let cache = tempfile::tempdir().expect("temp dir");
    let server = HubServer::start(root.path(), HashMap::new());
    let started = std::time::Instant::now();
    let model = Hub::new(cache.path(), &server.endpoint())
        .resolve(repo, no_progress)
        .expect("download");
    let downloaded = started.elapsed();
    assert!(model.verified && model.origin == Origin::Downloaded);
    let endpoint = server.endpoint();
    drop(server);
    let started = std::time::Instant::now();
    let again = Hub::new(cache.path(), &endpoint)
        .resolve(repo, no_progress)
        .expect("cached");
    let cached = started.elapsed();
    assert_eq!(again.origin, Origin::Cache);
    let embedder = Embedder::load_resolved(&again, Precision::F32).expect("load");
    assert_eq!(embedder.dimension(), 384);
    assert!(embedder.model_id().starts_with("all-MiniLM-L6-v2:"));
    eprintln!("download + verify {downloaded:?}, cached + verify {cached:?}");
}

/// A host's transport (as the Python package supplies one): answers from the fixture's
/// files without a network, or fails as told; records each request and its token.
#[derive(Debug)]
struct HostTransport {
    root: PathBuf,
    fail: Option<TransportError>,
    seen: Mutex<Vec<(String, Option<String>)>>,
}

impl HostTransport {
    fn new(root: &Path, fail: Option<TransportError>) -> Arc<HostTransport> {
        Arc::new(HostTransport {
            root: root.to_path_buf(),
            fail,
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Transport for HostTransport {
    fn get(&self, url: &str, token: Option<&str>) -> Result<Response, TransportError> {
        self.seen
            .lock()
            .expect("lock")
            .push((url.to_owned(), token.map(str::to_owned)));
        if let Some(fail) = &self.fail {
            return Err(fail.clone());
        }
        let path = url
            .strip_prefix("https://hub.example/")
            .expect("the endpoint");
        Ok(match std::fs::read(self.root.join(path)) {
            Ok(body) => Response {
                status: 200,
                headers: vec![("content-length".to_owned(), body.len().to_string())],
                body: Box::new(Cursor::new(body)),
            },
            Err(_) => Response {
                status: 404,
                headers: Vec::new(),
                body: Box::new(std::io::empty()),
            },
        })
    }
}

#[test]
fn a_host_transport_carries_the_downloads() {
    let fx = Fixture::new();
    let transport = HostTransport::new(&fx.root, None);
    let hub = fx
        .hub("https://hub.example/")
        .token(Some("secret".to_owned()))
        .with_transport(Some(transport.clone()));
    let model = hub.resolve(REPO, no_progress).expect("download");
    assert_eq!(model.origin, Origin::Downloaded);
    assert!(model.verified, "checked against the pins as any download");
    let seen = transport.seen.lock().expect("lock").clone();
    let mut urls: Vec<&str> = seen.iter().map(|(u, _)| u.as_str()).collect();
    urls.sort_unstable();
    let mut expected: Vec<String> = FILES
        .iter()
        .map(|f| format!("https://hub.example/{REPO}/resolve/{REVISION}/{f}"))
        .collect();
    expected.sort();
    assert_eq!(urls, expected);
    assert!(seen.iter().all(|(_, t)| t.as_deref() == Some("secret")));
    Embedder::load_resolved(&model, Precision::F32).expect("load");
}

#[test]
fn a_transport_failure_is_unavailable_or_a_download_error() {
    let fx = Fixture::new();
    let hub = |fail| {
        fx.hub("https://hub.example")
            .with_transport(Some(HostTransport::new(&fx.root, Some(fail))))
    };
    let err = hub(TransportError::Unreachable("no route to host".to_owned()))
        .resolve(REPO, no_progress)
        .expect_err("unreachable");
    assert!(
        matches!(err, EmbedError::ModelUnavailable { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("no route to host"), "{err}");
    let err = hub(TransportError::Failed("bad gateway dance".to_owned()))
        .resolve(REPO, no_progress)
        .expect_err("failed");
    assert!(matches!(err, EmbedError::Download { .. }), "{err:?}");
    assert!(err.to_string().contains("bad gateway dance"), "{err}");
    assert!(fx.leftovers().is_empty(), "{:?}", fx.leftovers());
}

#[test]
fn without_a_transport_only_the_cache_serves() {
    let fx = Fixture::new();
    let err = fx
        .hub("https://hub.example")
        .with_transport(None)
        .resolve(REPO, no_progress)
        .expect_err("nothing cached, nothing to download with");
    assert!(
        matches!(err, EmbedError::ModelUnavailable { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    for part in ["no HTTP client", "three ways", "local model directory"] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    fx.hub("https://hub.example")
        .with_transport(Some(HostTransport::new(&fx.root, None)))
        .resolve(REPO, no_progress)
        .expect("download");
    let cached = fx
        .hub("https://hub.example")
        .with_transport(None)
        .resolve(REPO, no_progress)
        .expect("from the cache");
    assert_eq!(cached.origin, Origin::Cache);
    assert!(cached.verified);
}

/// `HF_TOKEN` goes to the endpoint and follows a redirect on the same host (the Hub
/// redirects some files to its own `/api/resolve-cache/...`), never one to another host
/// (the Hub's CDN, whose signed addresses must not see it).
#[test]
fn the_token_follows_redirects_on_the_same_host_only() {
    let fx = Fixture::new();
    let faults = HashMap::from([
        ("config.json".to_owned(), Fault::RedirectHere),
        ("model.safetensors".to_owned(), Fault::RedirectElsewhere),
    ]);
    let server = HubServer::start(&fx.root, faults);
    let model = fx
        .hub(&server.endpoint())
        .token(Some("secret".to_owned()))
        .resolve(REPO, no_progress)
        .expect("download through redirects");
    assert!(model.verified);
    let requests = server.requests();
    let auth = server.auth.lock().expect("lock").clone();
    let sent = |path: &str| {
        let i = requests.iter().position(|r| r == path).expect(path);
        auth[i].clone()
    };
    let at = |file: &str| format!("/{REPO}/resolve/{REVISION}/{file}");
    let bearer = Some("Bearer secret".to_owned());
    assert_eq!(sent(&at("config.json")), bearer);
    assert_eq!(sent(&format!("/moved{}", at("config.json"))), bearer);
    assert_eq!(sent(&at("model.safetensors")), bearer);
    assert_eq!(sent(&format!("/moved{}", at("model.safetensors"))), None);
}
