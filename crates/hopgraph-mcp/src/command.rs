//! `hopgraph-mcp`: the hopgraph memory graph as an MCP server over stdio, or over MCP's
//! streamable HTTP transport with `--http ADDR`.
//!
//! ```text
//! hopgraph-mcp [--data-dir DIR] [--context NAME] [--prefault-mb N] [--max-open-contexts N]
//!              [--embed-model MODEL] [--tools LIST]
//!              [--http ADDR [--http-token TOKEN | --http-token-file FILE]]
//! ```
//! The data directory comes from `--data-dir`, else `HOPGRAPH_DATA_DIR`, else the platform
//! data directory (`$XDG_DATA_HOME/hopgraph` or `~/.local/share/hopgraph`). Each context is
//! a database in `<data>/<context>/`. Logs go to stderr; stdout carries only the protocol.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::log::log;
use crate::store::{OPEN_MAX_LIMIT, check_data_dir, platform_data_dir, start_maintenance};
use crate::{HopgraphServer, StoreConfig, Stores, serve};
use hopgraph_memory::check_context_name;

const USAGE: &str = "\
hopgraph-mcp: serve a hopgraph memory graph to MCP clients over stdio (default) or
streamable HTTP

Usage: hopgraph-mcp [--data-dir DIR] [--context NAME] [--prefault-mb N]
                    [--max-open-contexts N] [--embed-model MODEL] [--tools LIST]
                    [--http ADDR [--http-token TOKEN | --http-token-file FILE]]

Options:
  --data-dir DIR    where the databases live (default: $HOPGRAPH_DATA_DIR, else
                    $XDG_DATA_HOME/hopgraph, else ~/.local/share/hopgraph); must be a
                    readable directory or not exist yet (created on the first write)
  --context NAME    the context used when a call names none (default: default)
  --prefault-mb N   when a database is opened, read its files into memory in the
                    background if they total at most N MiB, so the first queries take
                    no page faults; a larger database gets only its per-node indexes
                    read, within N MiB (default: 1024; 0: read nothing ahead)
  --max-open-contexts N
                    most context databases kept open; the least recently used idle
                    ones beyond N are closed and reopen on their next call (default: 64,
                    1 to 4096); any number of contexts can be used
  --embed-model MODEL
                    the embedding model: a directory or a Hugging Face model id such
                    as sentence-transformers/all-MiniLM-L6-v2 (default:
                    $HOPGRAPH_EMBED_MODEL; none: text search only). An id is read from
                    the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or
                    ~/.cache/huggingface/hub) or downloaded into it from $HF_ENDPOINT
                    (default https://huggingface.co) at the first start; listed models
                    are pinned and sha256-checked (SERVER.md). The server then
                    embeds create_memory and aim_memory_store text and memory_search
                    queries itself when a call gives no `embedding` (hybrid search).
                    On CPUs with AVX-512 BF16 the model runs with bf16 products (~3x
                    faster); HOPGRAPH_EMBED_PRECISION=f32 keeps f32 throughout
  --tools LIST      the tool sets to serve, comma-separated (default: $HOPGRAPH_TOOLS,
                    else memory): memory (hopgraph's memory tools: memory_path,
                    expand, link, create_memory, memory_search, ...), server-memory
                    (the official MCP memory server's nine tools: create_entities,
                    create_relations, add_observations, delete_entities,
                    delete_observations, delete_relations, read_graph, search_nodes,
                    open_nodes; same names, results and messages, on the default
                    context), aim (mcp-knowledge-graph's ten aim_memory_* tools with
                    contexts and locations); all share one graph. Example:
                    --tools memory,server-memory
  --http ADDR       serve MCP's streamable HTTP transport on ADDR (IP:PORT, e.g.
                    127.0.0.1:8765; default: $HOPGRAPH_HTTP, else stdio) at the
                    endpoint http://ADDR/mcp, to several clients at once: same
                    stores, tools and limits as stdio. Port 0 picks a free port; the
                    address is logged as \"listening on http://IP:PORT/mcp\"
  --http-token TOKEN
                    the bearer token every HTTP request must carry as
                    \"Authorization: Bearer TOKEN\" (default: $HOPGRAPH_HTTP_TOKEN);
                    16 to 1024 visible ASCII characters; required when ADDR is not a
                    loopback address, optional (but checked when given) on loopback.
                    Prefer the file or the variable: arguments are visible to other
                    users in the process list
  --http-token-file FILE
                    read the token from FILE (default: $HOPGRAPH_HTTP_TOKEN_FILE);
                    surrounding whitespace is ignored
  -h, --help        print this help
  -V, --version     print the version

Vector search: a context's embeddings are searched exactly while a segment holds fewer
  than 100,000 of them, through an HNSW graph from there on (sub-millisecond, recall@10
  about 0.96-0.99); $HOPGRAPH_VECTOR_GRAPH_MIN sets another bound (e.g. 20000: faster
  searches of mid-sized stores, approximate from that size on).

Contexts: each context is the database <data>/<name>/. A name is 1-64 characters of
  a-z 0-9 _ - . (lowercase), starts with a letter or digit, does not end with \".\",
  has no \"..\", and is not a Windows device name (con, prn, aux, nul, com1-com9,
  lpt1-lpt9, also with an extension such as nul.txt), so it is one directory on every
  file system. Only create_memory and aim_memory_store create a context. On a context
  without a database the read-only tools answer as on an empty store (no results,
  zero counts, \"Memory not found.\") and the other writes \"No such context\"; none
  creates anything.

Limits (checked before the request's values are built; each is answered with an error
  that carries the request's id):
  line              2,162,688 bytes (2 MiB + 64 KiB) per message; a longer line is
                    answered -32600 and skipped unread
  arguments         2,097,152 bytes of compact JSON, nested at most 40 levels
  message           65,536 JSON values, nested at most 48 levels
  arrays            entities, relations: 1000 items; observations, edge_types,
                    seed_doc_ids: 1000; embedding: 4096 numbers; any other: 4096
  strings           content: 1 MiB; query, title: 4096 bytes; ids (memory_id, from,
                    to, name, ...): 512; edge_type, relationType: 128; context: 64;
                    any other: 1 MiB; metadata: 64 KiB serialized (link: 4 KiB)

HTTP: requests without the token are answered 401; a body past the line limit 413
  (read no further); a body that breaks another limit is answered as over stdio. On
  loopback the Host header must name a loopback host (against DNS rebinding). At most
  1024 connections and 256 sessions at once; a session idle for 5 minutes is closed.

Maintenance: a context's log is checkpointed once it exceeds 1 MiB or after 2 s idle,
  and its segments are merged (dropping deleted data) when idle, past 4 segments once
  the newer ones hold a quarter of the oldest's bytes, or past 16, on a background
  thread; written contexts are checkpointed and compacted at shutdown. A context whose
  embeddings an import stored without their HNSW graph (`hopgraph import` does so for
  100,000 or more) gets it built on a thread of its own when the server opens it; its
  vector searches are exact scans until then (graph_stats: vectors_awaiting_index).
";

/// Largest `--prefault-mb` (1 PiB): keeps the byte count far from overflow.
const PREFAULT_MB_MAX: u64 = 1 << 30;

struct Cli {
    data_dir: Option<PathBuf>,
    context: Option<String>,
    prefault_mb: Option<u64>,
    open_max: Option<usize>,
    embed_model: Option<PathBuf>,
    tools: Option<String>,
    http: Option<String>,
    http_token: Option<String>,
    http_token_file: Option<PathBuf>,
}

/// Parses a `--tools` list (or `$HOPGRAPH_TOOLS`).
fn parse_profiles(list: &str) -> Result<Vec<crate::schema::Profile>, String> {
    use crate::schema::Profile;
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let p = Profile::parse(name).ok_or_else(|| {
            let known: Vec<&str> = Profile::ALL.iter().map(|(n, _)| *n).collect();
            format!(
                "--tools: unknown tool set {name:?}; known: {}",
                known.join(", ")
            )
        })?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err("--tools needs at least one tool set: memory, server-memory".into());
    }
    Ok(out)
}

enum Parsed {
    Run(Cli),
    Exit(u8),
}

fn parse(args: impl Iterator<Item = OsString>) -> Result<Parsed, String> {
    let mut cli = Cli {
        data_dir: None,
        context: None,
        prefault_mb: None,
        open_max: None,
        embed_model: None,
        tools: None,
        http: None,
        http_token: None,
        http_token_file: None,
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let arg = arg
            .into_string()
            .map_err(|a| format!("argument is not valid UTF-8: {}", a.to_string_lossy()))?;
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(OsString::from(v))),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(Parsed::Exit(0));
            }
            "-V" | "--version" => {
                println!("hopgraph-mcp {}", env!("CARGO_PKG_VERSION"));
                return Ok(Parsed::Exit(0));
            }
            "--data-dir" => cli.data_dir = Some(PathBuf::from(value("--data-dir")?)),
            "--tools" => {
                let v = value("--tools")?
                    .into_string()
                    .map_err(|_| "--tools must be valid UTF-8".to_owned())?;
                parse_profiles(&v)?;
                cli.tools = Some(v);
            }
            "--http" => {
                let v = value("--http")?
                    .into_string()
                    .map_err(|_| "--http must be valid UTF-8".to_owned())?;
                cli.http = Some(v);
            }
            "--http-token" => {
                let v = value("--http-token")?
                    .into_string()
                    .map_err(|_| "--http-token must be valid UTF-8".to_owned())?;
                crate::http::check_token(&v).map_err(|e| format!("--http-token: {e}"))?;
                cli.http_token = Some(v);
            }
            "--http-token-file" => {
                cli.http_token_file = Some(PathBuf::from(value("--http-token-file")?));
            }
            "--embed-model" => cli.embed_model = Some(PathBuf::from(value("--embed-model")?)),
            "--context" => {
                let v = value("--context")?
                    .into_string()
                    .map_err(|_| "--context must be valid UTF-8".to_owned())?;
                check_context_name(&v).map_err(|e| format!("--context: {e}"))?;
                cli.context = Some(v);
            }
            "--prefault-mb" => {
                let v = value("--prefault-mb")?;
                let v = v.to_string_lossy();
                let mb = v.parse::<u64>().ok().filter(|&mb| mb <= PREFAULT_MB_MAX);
                let bad = || {
                    format!(
                        "--prefault-mb must be a whole number of MiB, 0 to \
                         {PREFAULT_MB_MAX}, not {v:?}"
                    )
                };
                cli.prefault_mb = Some(mb.ok_or_else(bad)?);
            }
            "--max-open-contexts" => {
                let v = value("--max-open-contexts")?;
                let v = v.to_string_lossy();
                let n = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=OPEN_MAX_LIMIT).contains(n));
                cli.open_max = Some(n.ok_or_else(|| {
                    format!(
                        "--max-open-contexts must be a whole number from 1 to \
                         {OPEN_MAX_LIMIT}, not {v:?}"
                    )
                })?);
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    if cli.http.is_none() && (cli.http_token.is_some() || cli.http_token_file.is_some()) {
        return Err("--http-token and --http-token-file need --http ADDR".into());
    }
    if cli.http_token.is_some() && cli.http_token_file.is_some() {
        return Err("give --http-token or --http-token-file, not both".into());
    }
    Ok(Parsed::Run(cli))
}

/// The HTTP transport's settings, from the flags or else the environment.
struct HttpSetup {
    listener: std::net::TcpListener,
    token: Option<String>,
    loopback: bool,
}

/// Reads a token file: its content without surrounding whitespace.
fn read_token_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the HTTP token file {}: {e}", path.display()))?;
    let token = text.trim().to_owned();
    crate::http::check_token(&token)
        .map_err(|e| format!("HTTP token file {}: {e}", path.display()))?;
    Ok(token)
}

/// Resolves the HTTP settings; `Ok(None)` serves stdio. Binds the listener, so that an
/// address in use is reported before anything is served.
fn http_setup(cli: &mut Cli) -> Result<Option<HttpSetup>, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let Some(addr) = cli.http.take().or_else(|| env("HOPGRAPH_HTTP")) else {
        return Ok(None);
    };
    let token = match (cli.http_token.take(), cli.http_token_file.take()) {
        (Some(t), _) => Some(t),
        (None, Some(f)) => Some(read_token_file(&f)?),
        (None, None) => match (env("HOPGRAPH_HTTP_TOKEN"), env("HOPGRAPH_HTTP_TOKEN_FILE")) {
            (Some(t), _) => {
                crate::http::check_token(&t).map_err(|e| format!("HOPGRAPH_HTTP_TOKEN: {e}"))?;
                Some(t)
            }
            (None, Some(f)) => Some(read_token_file(std::path::Path::new(&f))?),
            (None, None) => None,
        },
    };
    let (bind, loopback) = crate::http::resolve(&addr)?;
    if !loopback && token.is_none() {
        return Err(format!(
            "--http {addr} is not a loopback address, so the server needs a bearer token: \
             give --http-token-file FILE, HOPGRAPH_HTTP_TOKEN or --http-token TOKEN \
             (clients then send \"Authorization: Bearer TOKEN\"), or listen on \
             127.0.0.1"
        ));
    }
    let listener = std::net::TcpListener::bind(bind)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
    Ok(Some(HttpSetup {
        listener,
        token,
        loopback,
    }))
}

/// Runs `hopgraph-mcp` with `args` (without the program name) until the client hangs up
/// or a signal arrives, and returns the process exit code: 0 served and ended cleanly, 1
/// a runtime failure, 2 a usage error. The `hopgraph-mcp` binary and the Python package's
/// `hopgraph-mcp` command are both this function.
pub fn run(args: impl IntoIterator<Item = OsString>) -> u8 {
    let mut cli = match parse(args.into_iter()) {
        Ok(Parsed::Run(cli)) => cli,
        Ok(Parsed::Exit(code)) => return code,
        Err(e) => {
            eprintln!("hopgraph-mcp: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let http = match http_setup(&mut cli) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("hopgraph-mcp: {e}");
            return 2;
        }
    };
    let env_dir = std::env::var_os("HOPGRAPH_DATA_DIR").filter(|d| !d.is_empty());
    let explicit = cli.data_dir.is_some() || env_dir.is_some();
    let data_dir = cli
        .data_dir
        .or_else(|| env_dir.map(PathBuf::from))
        .unwrap_or_else(platform_data_dir);
    if let Err(e) = check_data_dir(&data_dir) {
        eprintln!("hopgraph-mcp: {e}");
        return 1;
    }
    let mut config = StoreConfig::new(data_dir);
    config.options = match hopgraph_memory::options_from_env(config.options) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("hopgraph-mcp: {e}");
            return 2;
        }
    };
    let tools = cli.tools.or_else(|| {
        std::env::var("HOPGRAPH_TOOLS")
            .ok()
            .filter(|t| !t.trim().is_empty())
    });
    if let Some(list) = tools {
        match parse_profiles(&list) {
            Ok(p) => config.profiles = p,
            Err(e) => {
                eprintln!("hopgraph-mcp: {e}");
                return 2;
            }
        }
    }
    let model_dir = cli.embed_model.or_else(|| {
        std::env::var_os("HOPGRAPH_EMBED_MODEL")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    });
    if let Some(dir) = model_dir {
        match crate::embed::load_model(dir.as_os_str()) {
            Ok((e, source)) => {
                log(&format!(
                    "embedding model {} ({} dimensions, {}, from {source}): hybrid search",
                    e.model_id(),
                    e.dimension(),
                    e.kernel(),
                ));
                config.embedder = Some(Arc::new(e));
            }
            Err(e) => {
                eprintln!(
                    "hopgraph-mcp: cannot load the embedding model: {}",
                    hopgraph_memory::one_line(&e.to_string())
                );
                return 1;
            }
        }
    }
    if let Some(n) = cli.open_max {
        config.open_max = n;
    }
    config.explicit = explicit;
    if let Some(c) = cli.context {
        config.default_context = c;
    }
    if let Some(mb) = cli.prefault_mb {
        config.prefault_max_bytes = mb << 20;
    }
    log(&format!(
        "serving {} (default context {:?})",
        config.data_dir.display(),
        config.default_context
    ));
    let stores = Arc::new(Stores::new(config));
    // Before serving: the first call of the session should not pay for opening the store.
    stores.open_default();
    if let Err(e) = start_maintenance(&stores) {
        log(&format!(
            "maintenance thread not started (the engine still checkpoints at 64 MiB): {e}"
        ));
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log(&format!("cannot start the async runtime: {e}"));
            return 1;
        }
    };
    let server = HopgraphServer::new(stores.clone());
    let code = match http {
        Some(http) => runtime.block_on(serve_http_until_signal(server, http)),
        None => runtime.block_on(serve_stdio_until_signal(server)),
    };
    // Every acknowledged write is already durable; the checkpoint only spares the next
    // start a WAL replay.
    stores.shutdown();
    // stdin is read on a blocking thread that cannot be interrupted; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

async fn serve_http_until_signal(server: HopgraphServer, http: HttpSetup) -> u8 {
    let listener = match tokio::net::TcpListener::from_std(http.listener) {
        Ok(l) => l,
        Err(e) => {
            log(&format!("cannot listen: {e}"));
            return 1;
        }
    };
    match listener.local_addr() {
        Ok(a) => log(&format!(
            "listening on http://{a}{} ({})",
            crate::http::MCP_PATH,
            if http.token.is_some() {
                "bearer token required"
            } else {
                "no token: loopback only"
            }
        )),
        Err(e) => log(&format!("listening (address unknown: {e})")),
    }
    let shutdown = async {
        let s = shutdown_signal().await;
        log(&format!("{s}, shutting down"));
    };
    match crate::http::serve_http(server, listener, http.token, http.loopback, shutdown).await {
        Ok(()) => 0,
        Err(e) => {
            log(&format!("serving HTTP failed: {e}"));
            1
        }
    }
}

async fn serve_stdio_until_signal(server: HopgraphServer) -> u8 {
    let session = serve(server, tokio::io::stdin(), tokio::io::stdout());
    tokio::select! {
        r = session => match r {
            Ok(()) => 0,
            Err(e) => {
                log(&format!("reading stdin failed: {e}"));
                1
            }
        },
        s = shutdown_signal() => {
            log(&format!("{s}, shutting down"));
            0
        }
    }
}

/// Resolves on SIGINT or SIGTERM with the signal's name.
async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "interrupt"
    }
}
