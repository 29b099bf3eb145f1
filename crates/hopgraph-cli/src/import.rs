//! `hopgraph import`: edge lists and JSON line files into one atomic bulk load.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use clap::{Args, ValueEnum};

use super::input::{
    BatchParser, Delimited, EdgeBatch, Invalid, InvalidLines, LineReader, STDIN, is_stdin,
};
use super::progress::Progress;
use super::records::{JSONL_VERSION, LINE_FIELDS, Line, MEMORY_FIELDS, MemoryLine, strip_unknown};
use super::{CliError, CliResult, DbArg};
use hopgraph::{BulkLoad, Database, EdgeProps, NodeProps, Props};

const LONG_ABOUT: &str = "\
Imports nodes and edges from files into a database, creating the database when it is missing.

All files go into one bulk load, which is atomic: when any line is bad (and --skip-invalid is
not given) or anything else fails, nothing is imported. Edges whose (source, type, target)
repeats in the input or already exists are skipped and counted. Nodes named only by edges are
created with empty properties; node lines replace the properties of existing nodes.

Formats:
  tsv            one edge per line: source<TAB>target<TAB>type[<TAB>weight]; an optional header
                 line (source, target, type[, weight]); lines starting with # are comments.
                 Keys are exact strings: no trimming, no case folding, `007` is not `7`.
                 This is the format of gen_graph.py (PREFIX.edges.tsv) and `export --format tsv`.
  csv            the same with commas; fields may be quoted (\"a,b\", \"say \"\"hi\"\"\")
  jsonl          hopgraph's lossless format, as `export --format jsonl` writes it: a header
                 {\"hopgraph\":\"export\",\"version\":1,...}, then {\"node\":{...}} and
                 {\"edge\":{...}} lines. Edge ids and node and edge timestamps in the file are
                 not kept: the database assigns new ones. Validity intervals are kept:
                 \"valid_from\" and \"valid_to\" (RFC 3339 or ms since 1970; valid_to null:
                 never ends); without them a node or edge is valid from when the import
                 writes it and never ends. A header line promises a closing
                 {\"hopgraph\":\"end\"} line (a file without it is taken as truncated).
  server-memory  the JSONL file of the MCP reference memory server: {\"type\":\"entity\",
                 \"name\",\"entityType\",\"observations\"} and {\"type\":\"relation\",\"from\",
                 \"to\",\"relationType\"} lines. An entity becomes node `name` with kind =
                 entityType, title = name and props.observations; a relation becomes an edge.
  aim            the same with a leading {\"type\":\"_aim\",...} marker line (mcp-knowledge-graph)
  auto           (default) by extension (.tsv, .csv), else by the first line of the file

In the JSON formats an unknown field (a misspelt \"titel\") is an invalid line, reported with
its line and column; --lenient drops unknown fields instead and counts them in the summary.

A FILE of - reads standard input (once, and only with an explicit --format).

Progress goes to stderr over every phase (read, ids, nodes, build out-CSR, build in-CSR,
write, fsync; out of core: spill runs before nodes, merge out-CSR and merge in-CSR instead
of the builds) with rate and time left: a bar redrawn in place on a terminal, else a plain
line every 5 s (`import: build out-CSR 45% 12.3M edges/s eta 0:07`); then one line of the
time each phase took. --quiet turns it off.

Memory: --memory-limit SIZE (default half the physical memory) bounds the edge build. When
the edges need more (about 42 bytes per edge in memory), they are sorted out of core: runs
that fit the limit are spilled to scratch files bulk-N-*.tmp in the database directory
(same file system; up to about 27 bytes per edge at once), merged, and removed when the
import ends, also when it fails; a crash leaves them to the next open, which removes them.
The database is the same either way, byte for byte. Not covered by the limit yet: the
edges as read (10 bytes each, more with weights), the key table and the node records;
the edge build takes what the limit leaves after them.

Semantic search: with --embed-model MODEL (or $HOPGRAPH_EMBED_MODEL: a directory or a Hugging
Face model id such as sentence-transformers/all-MiniLM-L6-v2, read from the Hugging Face
cache or downloaded into it), after the import every node that has text and no embedding
is embedded with that sentence-transformers model, in batches on all cores with its own progress line, as `hopgraph reembed --missing`
does; a store holding vectors of another model or dimension is refused before the import.

Vector index: imported embeddings are stored, and searchable, at once. Below 100,000
embeddings in a segment searches scan them exactly (exact answers; 1.5 ms per query at
dimension 128, 5 ms at 384); from 100,000 on ($HOPGRAPH_VECTOR_GRAPH_MIN sets another
bound) a segment gets an approximate-search (HNSW) graph, which an import by default
leaves for later (--vector-index later), as vector stores without an index load: searches
scan those embeddings exactly (the same answers, slower: tens of ms per query at a
million) until `hopgraph index --db DIR` builds the graph (minutes at a million; readers
and writers go on meanwhile) or hopgraph-mcp builds it in the background when it starts.
--vector-index now builds it within the import.

Reproducible imports: with --timestamp MS (or $SOURCE_DATE_EPOCH set), importing the same
files into a new database gives the same bytes in every file except the database id, which
is random by design (it ties each file to its database), and the checksums covering it.";

const EXAMPLES: &str = "\
Examples:
  hopgraph import --db ./mem data/mem1m.edges.tsv
  hopgraph import --db ./mem --format server-memory memory.json
  hopgraph import --db ./copy backup.jsonl
  hopgraph import --db ./mem --skip-invalid messy.csv
  hopgraph import --db ./mem --lenient extra-fields.jsonl
  hopgraph import --db ./mem --embed-model ./all-MiniLM-L6-v2 memory.json
  zcat edges.tsv.gz | hopgraph import --db ./mem --format tsv -
  hopgraph import --db ./big --quiet kron24.edges.tsv 2>/dev/null";

/// A size: a number of bytes, or with a unit: K, M, G, T (powers of 1024; KiB, MiB, GiB,
/// TiB and KB, MB, GB, TB are read the same way, B allowed), e.g. `4GiB`, `512MiB`.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 4GiB, 512MiB or 1000000)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown size unit {other:?} (use KiB, MiB, GiB or TiB)"
            ));
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Import edges and nodes from TSV, CSV or JSONL files (atomic).
#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT, after_long_help = EXAMPLES)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    db: DbArg,
    /// Input format (see --help).
    #[arg(long, value_enum, default_value_t = ImportFormat::Auto)]
    format: ImportFormat,
    /// Skip lines that cannot be imported and report them, instead of failing.
    #[arg(long)]
    skip_invalid: bool,
    /// JSON lines: skip unknown fields (counted in the summary) instead of failing on them.
    #[arg(long)]
    lenient: bool,
    /// Write this time (milliseconds since the Unix epoch) as every imported node's and
    /// edge's timestamp instead of the clock, so that the same input gives the same
    /// database files (but for the random database id). Defaults to $SOURCE_DATE_EPOCH
    /// (seconds) when that is set.
    #[arg(long, value_name = "MS")]
    timestamp: Option<u64>,
    /// After the import, embed every node that has text and no embedding with this
    /// sentence-transformers model (as `hopgraph reembed --missing`), for semantic search:
    /// a directory or a Hugging Face model id such as
    /// sentence-transformers/all-MiniLM-L6-v2 (from the Hugging Face cache, or downloaded
    /// into it from $HF_ENDPOINT, default https://huggingface.co).
    #[arg(long, value_name = "MODEL", env = "HOPGRAPH_EMBED_MODEL")]
    embed_model: Option<PathBuf>,
    /// When to build the HNSW graph of 100,000 or more imported embeddings: `later`
    /// (default; `hopgraph index` or hopgraph-mcp builds it, searches are exact meanwhile)
    /// or `now` (within the import).
    #[arg(long, value_enum, default_value_t = VectorIndex::Later)]
    vector_index: VectorIndex,
    /// Memory the edge build may take (the duplicate check and both CSR directions), e.g.
    /// 4GiB, 512MiB, 1G or a number of bytes. An import whose edges need more is sorted out
    /// of core: in runs spilled to scratch files in the database directory (about 27 bytes
    /// per edge of disk at most, removed afterwards) and merged into the segment, which is
    /// byte for byte the same. The edges read are held in memory up to an eighth of it,
    /// the rest spilled to a scratch file as they are read (10 bytes per edge). Not
    /// bounded by it: the keys (their bytes plus about 16 each) and node properties read.
    /// Default: half the physical memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    memory_limit: Option<u64>,
    /// No progress on stderr (the summary on stdout stays).
    #[arg(long, short = 'q')]
    quiet: bool,
    /// When stderr is not a terminal: milliseconds between progress lines.
    #[arg(long, hide = true, value_name = "MS", default_value_t = 5000)]
    progress_every_ms: u64,
    /// Input files (- reads standard input; it needs --format).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ImportFormat {
    Auto,
    Tsv,
    Csv,
    Jsonl,
    ServerMemory,
    Aim,
}

/// When `import` builds the HNSW graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum VectorIndex {
    /// After the import: `hopgraph index`, or hopgraph-mcp in the background.
    Later,
    /// Within the import.
    Now,
}

pub(crate) fn run(args: ImportArgs) -> CliResult {
    let start = Instant::now();
    // A bad model fails before any reading.
    let embedder = args
        .embed_model
        .as_deref()
        .map(|m| super::reembed::load_model(m, args.quiet))
        .transpose()?;
    let mut files = Vec::with_capacity(args.files.len());
    let mut total_bytes = 0;
    let stdin_count = args.files.iter().filter(|p| is_stdin(p)).count();
    if stdin_count > 1 {
        return Err(CliError::new(format!(
            "standard input ({STDIN}) can be read only once; name it once"
        )));
    }
    for path in &args.files {
        let format = match args.format {
            ImportFormat::Auto if is_stdin(path) => {
                return Err(CliError::new(format!(
                    "reading standard input ({STDIN}) needs --format: tsv, csv, jsonl, \
                     server-memory or aim"
                )));
            }
            ImportFormat::Auto => detect(path)?,
            ImportFormat::Tsv => Source::Delimited(Delimited::Tsv),
            ImportFormat::Csv => Source::Delimited(Delimited::Csv),
            ImportFormat::Jsonl => Source::Jsonl,
            ImportFormat::ServerMemory | ImportFormat::Aim => Source::Memory,
        };
        // Standard input has no size: the progress bar counts only the files.
        if !is_stdin(path) {
            total_bytes += std::fs::metadata(path)
                .map_err(|e| CliError::io(format!("cannot open {}: {e}", path.display())))?
                .len();
        }
        files.push((path, format));
    }

    // Opened before the read: the load spills the edges it reads into the database's
    // directory, within the memory limit. A database this opens creates is removed again
    // if the import fails before the load (a failed import creates no database).
    let mut created = CreatedDb::new(&args.db.db);
    let db = Database::open_with(&args.db.db, super::base_options()?)?;
    if let Some(e) = &embedder {
        // A store of another dimension or model is refused before anything is read.
        super::reembed::check_store(&db, e, true)?;
    }
    let limit = args
        .memory_limit
        .unwrap_or_else(hopgraph::default_memory_limit);
    let load = BulkLoad::spilling_into(&db, limit)?;
    let progress = Progress::new(
        args.quiet,
        std::time::Duration::from_millis(args.progress_every_ms.max(1)),
    );
    let total_bytes = (stdin_count == 0).then_some(total_bytes);
    progress.read(0, total_bytes);
    let mut reader = Reader {
        load,
        invalid: InvalidLines::new(
            args.skip_invalid,
            "nothing was imported; fix the line or pass --skip-invalid",
        ),
        progress: &progress,
        total_bytes,
        done_bytes: 0,
        lenient: args.lenient,
        unknown_fields: 0,
    };
    for (path, format) in files {
        let mut lines = LineReader::open(path)?;
        match format {
            Source::Delimited(d) => reader.delimited(path, &mut lines, d)?,
            Source::Jsonl => reader.jsonl(path, &mut lines)?,
            Source::Memory => reader.memory(path, &mut lines)?,
        }
        reader.done_bytes += lines.bytes;
    }
    let Reader {
        mut load,
        invalid,
        unknown_fields,
        ..
    } = reader;

    progress.read_done();
    if let Some(ms) = fixed_timestamp(args.timestamp)? {
        load.set_timestamp(ms);
    }
    load.defer_vector_graph(args.vector_index == VectorIndex::Later);
    created.keep();
    let report = db.bulk_load_with_progress(load, &|phase, done, total| {
        progress.engine(phase, done, total);
    })?;
    progress.finish();
    let embedded = match &embedder {
        Some(e) => Some(super::reembed::embed_nodes(
            &db,
            e,
            &super::reembed::EmbedOptions {
                missing: true,
                batch: 256,
                quiet: args.quiet,
                every: std::time::Duration::from_millis(args.progress_every_ms.max(1)),
            },
        )?),
        None => None,
    };

    let mut err = io::stderr().lock();
    if let Some(r) = invalid.report() {
        write!(err, "{r}")?;
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "imported {} file{} into {} in {:.2} s",
        args.files.len(),
        if args.files.len() == 1 { "" } else { "s" },
        args.db.db.display(),
        start.elapsed().as_secs_f64()
    )?;
    writeln!(out, "nodes created: {}", report.nodes_created)?;
    writeln!(out, "nodes updated: {}", report.nodes_updated)?;
    writeln!(out, "edges created: {}", report.edges_created)?;
    writeln!(
        out,
        "duplicate edges skipped: {}",
        report.duplicates_skipped
    )?;
    writeln!(out, "invalid lines skipped: {}", invalid.total)?;
    if let (Some(pass), Some(e)) = (&embedded, &embedder) {
        writeln!(
            out,
            "nodes embedded: {} ({}, {} dimensions)",
            pass.embedded,
            e.model_id(),
            e.dimension()
        )?;
    }
    if args.lenient {
        writeln!(out, "unknown fields skipped: {unknown_fields}")?;
    }
    let pending = db.vectors_awaiting_index();
    if pending > 0 {
        writeln!(
            out,
            "vector index: {pending} embeddings stored without their HNSW graph (searched \
             exactly until `hopgraph index --db {}` or hopgraph-mcp builds it)",
            args.db.db.display()
        )?;
    }
    Ok(())
}

/// The outermost directory of a database path that does not exist yet, removed with
/// everything in it when dropped unless [`CreatedDb::keep`] was called.
struct CreatedDb(Option<PathBuf>);

impl CreatedDb {
    fn new(db: &Path) -> CreatedDb {
        let missing = db
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
            .last()
            .map(Path::to_path_buf);
        CreatedDb(missing)
    }

    fn keep(&mut self) {
        self.0 = None;
    }
}

impl Drop for CreatedDb {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            // Best effort: this import created everything below `dir`.
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The time to write instead of the clock: `--timestamp`, else `$SOURCE_DATE_EPOCH` (the
/// reproducible-builds convention, in seconds).
fn fixed_timestamp(option: Option<u64>) -> CliResult<Option<u64>> {
    if option.is_some() {
        return Ok(option);
    }
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.is_empty() => v
            .trim()
            .parse::<u64>()
            .ok()
            .and_then(|s| s.checked_mul(1000))
            .map(Some)
            .ok_or_else(|| {
                CliError::usage(format!(
                    "SOURCE_DATE_EPOCH={v:?} is not a number of seconds since 1970"
                ))
            }),
        _ => Ok(None),
    }
}

/// How one file is read (`server-memory` and `aim` share a reader: AIM's marker line is
/// accepted on line 1 in both).
#[derive(Clone, Copy, Debug)]
enum Source {
    Delimited(Delimited),
    Jsonl,
    Memory,
}

/// The format of `path` from its extension, else from its first line.
fn detect(path: &Path) -> CliResult<Source> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("tsv" | "tab") => return Ok(Source::Delimited(Delimited::Tsv)),
        Some("csv") => return Ok(Source::Delimited(Delimited::Csv)),
        _ => {}
    }
    let mut lines = LineReader::open(path)?;
    while let Some((_, line)) = lines.next_line(path)? {
        let Ok(line) = line else { break };
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Ok(serde_json::Value::Object(o)) = serde_json::from_str(line) {
            if o.contains_key("hopgraph") || o.contains_key("node") || o.contains_key("edge") {
                return Ok(Source::Jsonl);
            }
            match o.get("type").and_then(|t| t.as_str()) {
                Some("_aim" | "entity" | "relation") => return Ok(Source::Memory),
                _ => break,
            }
        }
        if line.contains('\t') {
            return Ok(Source::Delimited(Delimited::Tsv));
        }
        if line.contains(',') {
            return Ok(Source::Delimited(Delimited::Csv));
        }
        break;
    }
    Err(CliError::new(format!(
        "cannot tell the format of {} from its name or first line; pass --format",
        path.display()
    )))
}

/// Accumulates the bulk load from files, tallying invalid lines.
struct Reader<'a> {
    load: BulkLoad,
    invalid: InvalidLines,
    progress: &'a Progress,
    total_bytes: Option<u64>,
    done_bytes: u64,
    /// `--lenient`: unknown JSON fields are dropped (and counted) rather than refused.
    lenient: bool,
    unknown_fields: u64,
}

/// Parses one JSON line into `T`, whose fields are `known`. Strict: an unknown field is
/// an invalid line, named with its column. Lenient: unknown fields are removed first and
/// counted in `unknown`.
fn parse_json<T: serde::de::DeserializeOwned>(
    line: &str,
    known: &[&str],
    lenient: bool,
    unknown: &mut u64,
) -> Result<T, Invalid> {
    let bad = |e: serde_json::Error| {
        // serde_json says "... at line 1 column 17": the line is the file's, so only the
        // column is news.
        let msg = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let msg = msg.strip_suffix(&suffix).unwrap_or(&msg);
        if msg.starts_with("unknown field") {
            Invalid::new(
                "unknown field",
                format!(
                    "column {}: {msg} (pass --lenient to skip unknown fields)",
                    e.column()
                ),
            )
        } else {
            Invalid::new("invalid JSON", format!("column {}: {msg}", e.column()))
        }
    };
    if !lenient {
        return serde_json::from_str(line).map_err(bad);
    }
    let mut value: serde_json::Value = serde_json::from_str(line).map_err(bad)?;
    *unknown += strip_unknown(&mut value, known);
    serde_json::from_value(value).map_err(|e| Invalid::new("invalid JSON", e.to_string()))
}

/// Bytes of whole lines per chunk handed to a JSON parsing thread (at least).
const JSON_CHUNK_BYTES: usize = 1 << 20;

/// A chunk of JSON lines, parsed: each line's number and its record (None: a blank line)
/// or why it is invalid, with the unknown fields dropped (`--lenient`) and the bytes read
/// through its last line.
struct ParsedChunk {
    lines: Vec<(u64, Result<Option<Line>, Invalid>)>,
    unknown: u64,
    bytes_end: u64,
    /// The raw chunk's buffer, for the reader to fill again: recycled, the buffers'
    /// memory is faulted in once, not once per chunk (on a 1.7 GB file that was seconds
    /// of the reading thread's time).
    spare: Vec<u8>,
}

/// Whole lines read but not parsed (terminators included), the number of the first, and
/// the bytes read through the last.
#[derive(Default)]
struct RawChunk {
    bytes: Vec<u8>,
    first_line: u64,
    bytes_end: u64,
}

/// Splits and parses a chunk (on a parsing thread: the reader only copies bytes).
fn parse_chunk(raw: RawChunk, lenient: bool) -> ParsedChunk {
    let mut unknown = 0u64;
    let lines = (raw.first_line..)
        .zip(crate::input::block_lines(&raw.bytes))
        .map(|(line_no, line)| {
            let parsed = line.and_then(|line| {
                if line.trim().is_empty() {
                    return Ok(None);
                }
                parse_json::<Line>(line, LINE_FIELDS, lenient, &mut unknown).map(Some)
            });
            (line_no, parsed)
        })
        .collect();
    ParsedChunk {
        lines,
        unknown,
        bytes_end: raw.bytes_end,
        spare: raw.bytes,
    }
}

/// Reads `lines` in chunks that threads parse as JSON (one per core, at most 8), handing
/// the parsed chunks to `apply` in file order on this thread (so line numbers, errors
/// and `--skip-invalid` tallies are those of a one-thread read). Parsing the JSON (most
/// of all the floats of embeddings) was the whole read phase of a large import, on one
/// core. Without threads, parses here.
fn parse_json_lines(
    path: &Path,
    lines: &mut LineReader,
    lenient: bool,
    mut apply: impl FnMut(ParsedChunk) -> CliResult,
) -> CliResult {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(8);
    // Buffers of parsed chunks, to read the next chunks into.
    let mut spares: Vec<Vec<u8>> = Vec::new();
    let read_chunk =
        |lines: &mut LineReader, spare: Option<Vec<u8>>| -> CliResult<Option<RawChunk>> {
            let first_line = lines.line_no + 1;
            let mut bytes = spare.unwrap_or_default();
            let count = lines.next_block(path, &mut bytes, JSON_CHUNK_BYTES)?;
            Ok((count > 0).then_some(RawChunk {
                bytes,
                first_line,
                bytes_end: lines.bytes,
            }))
        };
    if threads < 2 {
        while let Some(raw) = read_chunk(lines, spares.pop())? {
            let mut chunk = parse_chunk(raw, lenient);
            spares.push(std::mem::take(&mut chunk.spare));
            apply(chunk)?;
        }
        return Ok(());
    }
    let (job_tx, job_rx) = mpsc::sync_channel::<(u64, RawChunk)>(threads * 2);
    let job_rx = std::sync::Mutex::new(job_rx);
    let (done_tx, done_rx) = mpsc::channel::<(u64, ParsedChunk)>();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (job_rx, done_tx) = (&job_rx, done_tx.clone());
            let spawned = std::thread::Builder::new()
                .name("hopgraph-json".into())
                .spawn_scoped(s, move || {
                    loop {
                        // A poisoned lock means another parser panicked: stop too.
                        let Ok(queue) = job_rx.lock() else { return };
                        let job = queue.recv();
                        drop(queue);
                        let Ok((seq, raw)) = job else { return };
                        if done_tx.send((seq, parse_chunk(raw, lenient))).is_err() {
                            return;
                        }
                    }
                });
            if let Err(e) = spawned {
                return Err(CliError::new(format!("cannot start a parsing thread: {e}")));
            }
        }
        drop(done_tx);
        let (mut sent, mut next) = (0u64, 0u64);
        let mut early: std::collections::BTreeMap<u64, ParsedChunk> = Default::default();
        let mut job_tx = Some(job_tx);
        let result = (|| -> CliResult {
            loop {
                // Keep the parsers busy: up to 2 chunks each in flight.
                while sent - next < (threads * 2) as u64 {
                    let Some(tx) = job_tx.as_ref() else { break };
                    match read_chunk(lines, spares.pop())? {
                        Some(raw) => {
                            // The parsers stop only when this end drops the queue.
                            if tx.send((sent, raw)).is_err() {
                                return Err(CliError::new("a JSON parsing thread stopped"));
                            }
                            sent += 1;
                        }
                        None => job_tx = None,
                    }
                }
                if next == sent {
                    return Ok(());
                }
                let chunk = match early.remove(&next) {
                    Some(c) => c,
                    None => {
                        let (seq, c) = done_rx
                            .recv()
                            .map_err(|_| CliError::new("a JSON parsing thread stopped"))?;
                        if seq != next {
                            early.insert(seq, c);
                            continue;
                        }
                        c
                    }
                };
                next += 1;
                let mut chunk = chunk;
                spares.push(std::mem::take(&mut chunk.spare));
                apply(chunk)?;
            }
        })();
        // Closing the queue ends the parsers (the scope waits for them).
        drop(job_tx);
        result
    })
}

/// Refuses an interval that ends before it starts, before anything of its line is loaded.
fn check_interval(from: Option<u64>, to: Option<u64>) -> Result<(), Invalid> {
    match (from, to) {
        (Some(from), Some(to)) if to <= from => Err(Invalid::new(
            "bad validity interval",
            format!(
                "valid_to {} is not after valid_from {}",
                hopgraph_memory::rfc3339(to),
                hopgraph_memory::rfc3339(from)
            ),
        )),
        _ => Ok(()),
    }
}

/// Progress is updated every this many lines.
const PROGRESS_LINES: u64 = 8192;

/// Parsed batches of a delimited file that may wait for the loader.
const BATCHES_QUEUED: usize = 4;

impl Reader<'_> {
    fn tick(&self, line_no: u64, lines: &LineReader) {
        if line_no.is_multiple_of(PROGRESS_LINES) {
            self.progress
                .read(self.done_bytes + lines.bytes, self.total_bytes);
        }
    }

    /// Loads a TSV or CSV file. A second thread reads and splits the lines, batch by
    /// batch, while this one loads the edges (or this one does both when no thread can be
    /// started).
    fn delimited(&mut self, path: &Path, lines: &mut LineReader, format: Delimited) -> CliResult {
        let (tx, rx) = mpsc::sync_channel::<CliResult<EdgeBatch>>(BATCHES_QUEUED);
        let reader = &mut *lines;
        let started = std::thread::scope(|s| {
            let parse = move || {
                let mut parser = BatchParser::new(path, reader, format);
                loop {
                    let batch = parser.next_batch().transpose();
                    // Stop at the end, after an error, or when the loader has stopped.
                    let last = !matches!(batch, Some(Ok(_)));
                    if batch.is_none_or(|b| tx.send(b).is_err()) || last {
                        return;
                    }
                }
            };
            let spawned = std::thread::Builder::new()
                .name("hopgraph-parse".into())
                .spawn_scoped(s, parse);
            if spawned.is_err() {
                return Ok(false);
            }
            // Returning early drops `rx`, which stops the parser.
            for batch in rx {
                self.load_batch(path, batch?)?;
            }
            Ok::<_, CliError>(true)
        })?;
        if !started {
            let mut parser = BatchParser::new(path, lines, format);
            while let Some(batch) = parser.next_batch()? {
                self.load_batch(path, batch)?;
            }
        }
        Ok(())
    }

    fn load_batch(&mut self, path: &Path, batch: EdgeBatch) -> CliResult {
        let bytes = batch.bytes;
        let Reader {
            load,
            invalid: invalid_lines,
            ..
        } = self;
        batch.for_each(load, |load, line_no, edge| {
            let result = edge.and_then(|edge| match edge {
                None => Ok(()),
                Some(e) => {
                    let props = EdgeProps {
                        weight: e.weight.unwrap_or(1.0),
                        ..EdgeProps::default()
                    };
                    load.edge(&e.source, &e.edge_type, &e.target, props)
                        .map_err(Invalid::engine)
                }
            });
            match result {
                Ok(()) => Ok(()),
                Err(invalid) => invalid_lines.record(path, line_no, invalid),
            }
        })?;
        self.progress
            .read(self.done_bytes + bytes, self.total_bytes);
        Ok(())
    }

    fn jsonl(&mut self, path: &Path, lines: &mut LineReader) -> CliResult {
        let mut header = false;
        let mut last_line = 0u64;
        let mut end: Option<(Option<u64>, Option<u64>)> = None;
        let (mut nodes, mut edges, mut bad) = (0u64, 0u64, 0u64);
        let lenient = self.lenient;
        let mut apply = |reader: &mut Self, chunk: ParsedChunk| -> CliResult {
            reader.unknown_fields += chunk.unknown;
            for (line_no, parsed) in chunk.lines {
                last_line = line_no;
                let result = parsed.and_then(|rec| {
                    let Some(rec) = rec else { return Ok(()) };
                    if end.is_some() {
                        return Err(Invalid::new(
                            "line after the end line",
                            "a line follows the closing {\"hopgraph\":\"end\"} line",
                        ));
                    }
                    match (rec.hopgraph.as_deref(), rec.node, rec.edge) {
                        (Some("export"), None, None) if line_no == 1 => {
                            let version = rec.version.unwrap_or(JSONL_VERSION);
                            if version > JSONL_VERSION {
                                return Err(Invalid::new(
                                    "unsupported version",
                                    format!(
                                        "written by a newer hopgraph (format version {version}, \
                                         this build reads {JSONL_VERSION})"
                                    ),
                                ));
                            }
                            header = true;
                            Ok(())
                        }
                        (Some("end"), None, None) => {
                            end = Some((rec.nodes, rec.edges));
                            Ok(())
                        }
                        (None, Some(n), None) => {
                            nodes += 1;
                            let (from, to) = n.validity();
                            check_interval(from, to)?;
                            let (key, props) = n.into_props();
                            reader.load.node(&key, props).map_err(Invalid::engine)?;
                            // Without either field the node is valid from when it is
                            // written (an existing node keeps its interval).
                            if from.is_some() || to.is_some() {
                                reader
                                    .load
                                    .node_validity(&key, from, to)
                                    .map_err(Invalid::engine)?;
                            }
                            Ok(())
                        }
                        (None, None, Some(e)) => {
                            edges += 1;
                            let (from, to) = (e.valid_from.map(|t| t.0), e.valid_to.map(|t| t.0));
                            check_interval(from, to)?;
                            let props = EdgeProps {
                                weight: e.weight,
                                props: e.props,
                                valid_from: from,
                                valid_to: to,
                            };
                            reader
                                .load
                                .edge(&e.source, &e.edge_type, &e.target, props)
                                .map_err(Invalid::engine)
                        }
                        _ => Err(Invalid::new(
                            "not a node or edge",
                            "expected {\"node\":{...}} or {\"edge\":{...}} \
                             (or the {\"hopgraph\":\"export\"} header on line 1)",
                        )),
                    }
                });
                if let Err(invalid) = result {
                    bad += 1;
                    reader.invalid.record(path, line_no, invalid)?;
                }
            }
            reader
                .progress
                .read(reader.done_bytes + chunk.bytes_end, reader.total_bytes);
            Ok(())
        };
        parse_json_lines(path, lines, lenient, |chunk| apply(self, chunk))?;
        // An export ends with a line of counts, by which a truncated file is caught (when
        // lines were skipped, the skip report says so already).
        if bad > 0 {
            return Ok(());
        }
        let truncated = |what: String| {
            CliError::new(format!(
                "{}: {what}; is the file truncated? (nothing was imported)",
                path.display()
            ))
        };
        match end {
            None if header => Err(CliError::new(format!(
                "{}: line 1 is an export header ({{\"hopgraph\":\"export\"}}), which promises \
                 a closing {{\"hopgraph\":\"end\",\"nodes\":N,\"edges\":M}} line, but the file \
                 ends at line {last_line} without one: it is probably truncated, and nothing was \
                 imported (for a file written by hand, drop the header line or end the file \
                 with {{\"hopgraph\":\"end\"}})",
                path.display()
            ))),
            Some((want_nodes, want_edges))
                if want_nodes.is_some_and(|n| n != nodes)
                    || want_edges.is_some_and(|n| n != edges) =>
            {
                Err(truncated(format!(
                    "the end line counts {} nodes and {} edges, the file holds {nodes} and {edges}",
                    want_nodes.unwrap_or(nodes),
                    want_edges.unwrap_or(edges),
                )))
            }
            _ => Ok(()),
        }
    }

    fn memory(&mut self, path: &Path, lines: &mut LineReader) -> CliResult {
        while let Some((line_no, line)) = lines.next_line(path)? {
            let result = line.and_then(|line| {
                if line.trim().is_empty() {
                    return Ok(());
                }
                // AIM's marker line carries fields of its own; it is only ever line 1.
                if line_no == 1
                    && let Ok(serde_json::Value::Object(o)) = serde_json::from_str(line)
                    && o.get("type").and_then(|t| t.as_str()) == Some("_aim")
                {
                    return Ok(());
                }
                let m: MemoryLine =
                    parse_json(line, MEMORY_FIELDS, self.lenient, &mut self.unknown_fields)?;
                let missing = |field: &str| {
                    Invalid::new(
                        "missing field",
                        format!("a {} line needs {field:?}", m.line_type),
                    )
                };
                match m.line_type.as_str() {
                    "entity" => {
                        let name = m.name.as_deref().ok_or_else(|| missing("name"))?;
                        let mut props = Props::new();
                        props.insert("observations".into(), m.observations.clone().into());
                        let node = NodeProps {
                            kind: m.entity_type.clone().unwrap_or_default(),
                            title: name.to_owned(),
                            props,
                            ..NodeProps::default()
                        };
                        self.load.node(name, node).map_err(Invalid::engine)
                    }
                    "relation" => {
                        let from = m.from.as_deref().ok_or_else(|| missing("from"))?;
                        let to = m.to.as_deref().ok_or_else(|| missing("to"))?;
                        let rt = m
                            .relation_type
                            .as_deref()
                            .ok_or_else(|| missing("relationType"))?;
                        self.load
                            .edge(from, rt, to, EdgeProps::default())
                            .map_err(Invalid::engine)
                    }
                    other => Err(Invalid::new(
                        "unknown line type",
                        format!("type {other:?} is not \"entity\" or \"relation\""),
                    )),
                }
            });
            if let Err(invalid) = result {
                self.invalid.record(path, line_no, invalid)?;
            }
            self.tick(line_no, lines);
        }
        Ok(())
    }
}

#[cfg(test)]
mod size_tests {
    use super::parse_size;

    #[test]
    fn sizes_read_with_binary_units() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("16 kb"), Ok(16 << 10));
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("4 lots").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }
}
