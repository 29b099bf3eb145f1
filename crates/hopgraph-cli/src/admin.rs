//! Maintenance commands: `stats`, `check`, `checkpoint`, `compact`, `unlink`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::json;

use super::input::{Delimited, InvalidLines, LineReader, Parsed};
use super::progress::{Progress, Unit};
use super::{CliError, CliResult, DbArg, Exit, open_existing, open_read_only};
use hopgraph::{OpResult, WriteBatch};

/// `stats` verifies every file of a store whose segments and WAL take at most this many
/// bytes (checksums and ids, as `check`): about 1.5 ms per MiB from the page cache in a
/// release build (0.16 s for the 110 MiB of a 4M-edge Kronecker graph), so under half a
/// second; a larger store only when asked with `check`.
const STATS_VERIFY_BYTES_MAX: u64 = 256 << 20;

/// A corrupt-database error of `stats`, saying so first (other errors as they are).
fn damaged(e: CliError) -> CliError {
    if e.code == Exit::Corrupt {
        e.context("stats failed: the database is damaged: ")
    } else {
        e
    }
}

/// Show counts, edges per type, storage and recovery state.
#[derive(Debug, Args)]
#[command(
    long_about = "Shows nodes, edges per type, segments, WAL and disk bytes, the last \
                  checkpoint and what recovery did when opening. Opens the database read-only \
                  (recovery replays the WAL in memory but changes no file). A store of up to \
                  256 MiB of segments and WAL is also verified completely, as `check` does \
                  (about 1.5 ms per MiB); a larger one is not (the `integrity` line says so: \
                  run `check`). A damaged store, found when opening, reading or verifying it, \
                  exits 3 with the damaged file and byte offset on stderr, after what could \
                  be read. With --json: one object whose `verified` says whether the files \
                  were checked and `damage` what was found (null when nothing).",
    after_long_help = "Examples:\n  hopgraph stats --db ./mem\n  hopgraph stats --db ./mem --json | jq .edge_types"
)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    db: DbArg,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Verify every file of a database (exit 3 when it is damaged).
#[derive(Debug, Args)]
#[command(
    long_about = "Verifies every file completely, read-only: the manifest, each segment's \
                  checksums and ids, every WAL record. Exits 0 when the database is sound and \
                  3 with the damaged file and byte offset when it is not. Reads every byte \
                  once (about 100 s for a 28 GiB database), without keeping what it read \
                  in memory. Progress goes to stderr: a bar on a terminal, otherwise a line \
                  every 5 s (`check: checksums 45% 310.2MB/s eta 0:52`), then one summary \
                  line; --quiet prints none.\n\n\
                  --deep also rebuilds each segment's text index from its records and \
                  compares it with the stored one byte for byte: checksums catch damage to \
                  the bytes, this catches an index written wrong. It analyses every record \
                  again (about as long as building the index took; memory for one \
                  segment's index); segments of an earlier format are listed, not compared \
                  (`hopgraph compact` rewrites them).",
    after_long_help = "Examples:\n  hopgraph check --db ./mem && echo sound\n  \
                       hopgraph check --db ./mem --quiet\n  \
                       hopgraph check --db ./mem --deep"
)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    db: DbArg,
    /// No progress line on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Also rebuild each segment's text index from its records and compare.
    #[arg(long)]
    deep: bool,
}

/// What `check` reports progress of.
const CHECK_PHASES: &[(&str, Unit)] = &[
    ("checksums", Unit::Bytes),
    ("contents", Unit::Bytes),
    ("wal", Unit::Count("records")),
    ("text index", Unit::Count("records")),
];

/// Write the WAL's changes into a new segment and start a fresh WAL.
#[derive(Debug, Args)]
#[command(
    long_about = "Writes the changes held in the write-ahead log into a new segment file and \
                  starts an empty log. Makes the next open fast; readers are not blocked.",
    after_long_help = "Examples:\n  hopgraph checkpoint --db ./mem"
)]
pub(crate) struct CheckpointArgs {
    #[command(flatten)]
    db: DbArg,
}

/// Merge all segments into one, dropping deleted edges and nodes.
#[derive(Debug, Args)]
#[command(
    long_about = "Merges all segment files into one, dropping deleted edges and nodes, \
                  and rewrites segments written by an older hopgraph in the current file \
                  format (a single old segment too: that is how a store is upgraded). \
                  Queries answer the same before and after.",
    after_long_help = "Examples:\n  hopgraph checkpoint --db ./mem && hopgraph compact --db ./mem"
)]
pub(crate) struct CompactArgs {
    #[command(flatten)]
    db: DbArg,
}

const UNLINK_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph export --db ./mem --format tsv --seed deploy-billing-api-2-3 \\
      --type caused_by > stale.tsv
  hopgraph unlink --db ./mem stale.tsv
  hopgraph export --db ./mem --format csv --seed deploy-auth-3-0 \\
      --type caused_by --out stale.csv
  hopgraph unlink --db ./mem stale.csv";

/// Remove the edges listed in files, in one atomic commit.
#[derive(Debug, Args)]
#[command(
    long_about = "Removes the edges listed one per line as source<TAB>target<TAB>type (a \
                  fourth weight column is ignored, so `export --format tsv` output works; csv \
                  with commas; header line and # comments as for import) in one atomic \
                  commit. Listed edges that do not exist are counted and reported, not errors; \
                  a malformed line fails the command and removes nothing.",
    after_long_help = UNLINK_EXAMPLES
)]
pub(crate) struct UnlinkArgs {
    #[command(flatten)]
    db: DbArg,
    /// Input format; by default csv for .csv files, else tsv.
    #[arg(long, value_enum)]
    format: Option<UnlinkFormat>,
    /// Files of edges to remove.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum UnlinkFormat {
    Tsv,
    Csv,
}

pub(crate) fn stats(args: StatsArgs) -> CliResult {
    let db = open_read_only(&args.db.db).map_err(damaged)?;
    let s = db.stats().map_err(|e| damaged(e.into()))?;
    // The structural check: every checksum and id of a small store; a large one is left
    // to `check`. Its failure is reported after the counts that could be read.
    let checked_bytes = s.segments.iter().map(|(_, b, _)| b).sum::<u64>() + s.wal_bytes;
    let verified = if checked_bytes <= STATS_VERIFY_BYTES_MAX {
        match db.verify() {
            Ok(_) => Some(Ok(())),
            Err(e) => Some(Err(damaged(e.into()))),
        }
    } else {
        None
    };
    let damage = match &verified {
        Some(Err(e)) => Some(e.to_string()),
        _ => None,
    };
    stats_report(&args, &db, &s, verified.is_some(), damage.as_deref())?;
    match verified {
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// Prints the answer of `stats`; `verified`: whether the files were checked, `damage`:
/// what the check found.
fn stats_report(
    args: &StatsArgs,
    db: &hopgraph::Database,
    s: &hopgraph::Stats,
    verified: bool,
    damage: Option<&str>,
) -> CliResult {
    let mut out = io::stdout().lock();
    let r = &s.recovery;
    if args.json {
        let v = json!({
            "nodes": s.nodes,
            "edges": s.edges,
            "edge_types": s.edge_types.iter().map(|(n, c)| json!({"type": n, "edges": c})).collect::<Vec<_>>(),
            "segments": s.segments.iter().zip(&s.segment_formats).map(|((id, bytes, rows), format)| json!({"id": id, "bytes": bytes, "edge_rows": rows, "format": format})).collect::<Vec<_>>(),
            "wal_bytes": s.wal_bytes,
            "disk_bytes": s.disk_bytes,
            "lsn": s.lsn,
            "checkpoint_lsn": s.checkpoint_lsn,
            "last_checkpoint_at": (s.last_checkpoint_ms > 0).then(|| hopgraph_memory::rfc3339(s.last_checkpoint_ms)),
            "generation": s.generation,
            "recovery": {
                "segments": r.segments,
                "wal_records_replayed": r.wal_records_replayed,
                "wal_bytes_replayed": r.wal_bytes_replayed,
                "torn_tail_bytes": r.torn_tail_bytes,
                "torn_tail_reason": r.torn_tail_reason,
                "files_removed": r.files_removed,
            },
            "maintenance_error": s.maintenance_error,
            "vectors_awaiting_index": db.vectors_awaiting_index(),
            "verified": verified,
            "damage": damage,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    writeln!(out, "database         {}", db.path().display())?;
    writeln!(out, "nodes            {}", s.nodes)?;
    writeln!(out, "edges            {}", s.edges)?;
    let width = s.edge_types.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, count) in &s.edge_types {
        writeln!(out, "  {name:<width$}  {count}")?;
    }
    let seg_bytes: u64 = s.segments.iter().map(|(_, b, _)| b).sum();
    writeln!(
        out,
        "segments         {} ({})",
        s.segments.len(),
        human_bytes(seg_bytes)
    )?;
    let current = hopgraph::FORMAT_VERSION;
    for ((id, bytes, rows), format) in s.segments.iter().zip(&s.segment_formats) {
        let old = if *format < current {
            format!(", format {format} (`hopgraph compact` rewrites it in format {current})")
        } else {
            String::new()
        };
        writeln!(
            out,
            "  seg-{id}  {}, {rows} edge rows{old}",
            human_bytes(*bytes)
        )?;
    }
    writeln!(out, "wal              {}", human_bytes(s.wal_bytes))?;
    writeln!(out, "disk             {}", human_bytes(s.disk_bytes))?;
    writeln!(
        out,
        "lsn              {} (checkpointed through {}, manifest generation {})",
        s.lsn, s.checkpoint_lsn, s.generation
    )?;
    let last = if s.last_checkpoint_ms == 0 {
        "never".to_owned()
    } else {
        hopgraph_memory::rfc3339(s.last_checkpoint_ms)
    };
    writeln!(out, "last checkpoint  {last}")?;
    let mut rec = format!(
        "mapped {} segments, replayed {} WAL records ({})",
        r.segments,
        r.wal_records_replayed,
        human_bytes(r.wal_bytes_replayed)
    );
    if r.torn_tail_bytes > 0 || r.torn_tail_reason.is_some() {
        rec.push_str(&format!(
            "; torn WAL tail of {} bytes ({})",
            r.torn_tail_bytes,
            r.torn_tail_reason.as_deref().unwrap_or("unknown reason")
        ));
    }
    if !r.files_removed.is_empty() {
        rec.push_str(&format!(
            "; removed leftovers {}",
            r.files_removed.join(", ")
        ));
    }
    writeln!(out, "recovery         {rec}")?;
    let pending = db.vectors_awaiting_index();
    if pending > 0 {
        writeln!(
            out,
            "vector index     {pending} embeddings without their HNSW graph (searched exactly; \
             `hopgraph index --db DIR` builds it)"
        )?;
    }
    if let Some(e) = &s.maintenance_error {
        writeln!(out, "maintenance      {e}")?;
    }
    let integrity = match (verified, damage) {
        (_, Some(_)) => "DAMAGED (see the error below; `hopgraph check` names the file)".into(),
        (true, None) => "ok: every checksum and id verified".into(),
        (false, None) => format!(
            "not verified (over {}: `hopgraph check --db {}` verifies every file)",
            human_bytes(STATS_VERIFY_BYTES_MAX),
            args.db.db.display()
        ),
    };
    writeln!(out, "integrity        {integrity}")?;
    Ok(())
}

pub(crate) fn check(args: CheckArgs) -> CliResult {
    // The codes stay the engine's (3 damaged, 4 I/O), with the command's word in front.
    let failed = |e: hopgraph::Error| CliError::from(e).context("check failed: ");
    let db = open_read_only(&args.db.db).map_err(|e| e.context("check failed: "))?;
    let progress = Progress::with(
        "check",
        CHECK_PHASES,
        args.quiet,
        std::time::Duration::from_secs(5),
    );
    // CHECK_PHASES's slots.
    let report = |phase, done, total| {
        let slot = match phase {
            hopgraph::VerifyPhase::Checksums => 0,
            hopgraph::VerifyPhase::Contents => 1,
            hopgraph::VerifyPhase::TextIndex => 3,
            _ => 2,
        };
        progress.phase(slot, done, Some(total));
    };
    // A failed check prints only its error (dropping the progress clears its line).
    let r = db.verify_with_progress(&report).map_err(failed)?;
    let text = if args.deep {
        Some(db.verify_text_index(&report).map_err(failed)?)
    } else {
        None
    };
    progress.finish();
    let mut out = io::stdout().lock();
    write!(
        out,
        "ok: {} segments and {} WAL records verified ({})",
        r.segments,
        r.wal_records,
        human_bytes(r.bytes)
    )?;
    if r.wal_trailing_bytes > 0 {
        write!(
            out,
            "; {} bytes of a torn last WAL record will be discarded by the next writer",
            r.wal_trailing_bytes
        )?;
    }
    if let Some(t) = text {
        if t.segments > 0 {
            write!(
                out,
                "; text indexes of {} segments rebuilt from {} records: equal",
                t.segments, t.records
            )?;
        }
        if !t.older_format.is_empty() {
            let listed: Vec<String> = t
                .older_format
                .iter()
                .map(|(id, version)| format!("seg-{id} (format {version})"))
                .collect();
            write!(
                out,
                "; text indexes not compared (an earlier format): {}; `hopgraph compact` \
                 rewrites them",
                listed.join(", ")
            )?;
        }
    }
    writeln!(out)?;
    Ok(())
}

pub(crate) fn checkpoint(args: CheckpointArgs) -> CliResult {
    let db = open_existing(&args.db.db)?;
    let r = db.checkpoint()?;
    let mut out = io::stdout().lock();
    match r.segment {
        None => writeln!(out, "nothing to checkpoint (LSN {})", r.lsn)?,
        Some(id) => writeln!(
            out,
            "checkpointed through LSN {} into seg-{id}: {} nodes, {} edge rows, {}",
            r.lsn,
            r.nodes,
            r.edges,
            human_bytes(r.bytes)
        )?,
    }
    Ok(())
}

/// Build the approximate-search (HNSW) graph of embeddings an import stored flat.
#[derive(Debug, Args)]
#[command(
    long_about = "Builds the HNSW graph (the approximate nearest-neighbour index) of every \
                  segment whose embeddings an import stored without it (`hopgraph import` \
                  does so for 100,000 or more embeddings, or $HOPGRAPH_VECTOR_GRAPH_MIN, \
                  unless given --vector-index now). \
                  Until then vector searches scan those embeddings exactly: the same answers, \
                  slower (tens of ms per query at a million). The build takes minutes at a \
                  million embeddings, uses every core, and does not stop readers or writers \
                  of the database meanwhile; each segment's new file replaces the old one \
                  atomically. hopgraph-mcp runs the same build in the background when it \
                  starts; one build runs at a time per database, so while another process \
                  builds, this one waits for it (and says so) and then builds what is \
                  left, usually nothing. Nothing to do is not an error. Progress goes to \
                  stderr: a bar on a terminal, otherwise a line every 5 s (`index: graph 45% 7.1k vectors/s eta \
                  1:10`), then one summary line; --quiet prints none.",
    after_long_help = "Examples:\n  hopgraph index --db ./mem\n  \
                       hopgraph stats --db ./mem   # its `vector index` line: what still waits"
)]
pub(crate) struct IndexArgs {
    #[command(flatten)]
    db: DbArg,
    /// No progress line on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// What `index` reports progress of: the vectors linked into a graph.
const INDEX_PHASES: &[(&str, Unit)] = &[("graph", Unit::Count("vectors"))];

pub(crate) fn index(args: IndexArgs) -> CliResult {
    let db = open_existing(&args.db.db)?;
    let pending = db.vectors_awaiting_index();
    let mut out = io::stdout().lock();
    if pending == 0 {
        writeln!(
            out,
            "nothing to index: every segment's embeddings have their graph"
        )?;
        return Ok(());
    }
    let start = std::time::Instant::now();
    // The graph build takes minutes at a million vectors: progress on stderr (a bar on a
    // terminal, a line every 5 s otherwise), then one summary line.
    let progress = Progress::with(
        "index",
        INDEX_PHASES,
        args.quiet,
        std::time::Duration::from_secs(5),
    );
    if db.vector_index_build_running() && !args.quiet {
        eprintln!(
            "index: another process (hopgraph-mcp, or another `hopgraph index`) is building \
             this database's vector graphs; waiting for it to finish"
        );
    }
    progress.phase(0, 0, Some(pending));
    let r = db.index_vectors_reporting(&mut |done, total| progress.phase(0, done, Some(total)));
    progress.finish();
    let r = r?;
    if r.segments.is_empty() && r.pending == 0 {
        writeln!(
            out,
            "nothing left to index: another process built the graphs meanwhile"
        )?;
        return Ok(());
    }
    for (old, new) in &r.segments {
        writeln!(out, "seg-{old} -> seg-{new}: HNSW graph built")?;
    }
    writeln!(
        out,
        "indexed {} embeddings in {:.1} s",
        r.vectors,
        start.elapsed().as_secs_f64()
    )?;
    if r.pending > 0 {
        writeln!(
            out,
            "{} embeddings still wait: their segment was replaced meanwhile (run again)",
            r.pending
        )?;
    }
    Ok(())
}

pub(crate) fn compact(args: CompactArgs) -> CliResult {
    let db = open_existing(&args.db.db)?;
    let r = db.compact()?;
    let mut out = io::stdout().lock();
    match r.segment {
        None => writeln!(out, "nothing to compact")?,
        Some(id) => writeln!(
            out,
            "compacted {} segments into seg-{id}: {} edges kept, {} deleted edges dropped, {}",
            r.segments_merged,
            r.edges,
            r.edges_dropped,
            human_bytes(r.bytes)
        )?,
    }
    Ok(())
}

/// How many listed edges that did not exist are named in the report.
const MISSING_EXAMPLES_MAX: usize = 5;

pub(crate) fn unlink(args: UnlinkArgs) -> CliResult {
    let mut batch = WriteBatch::new();
    let mut listed: Vec<String> = Vec::new();
    let mut invalid = InvalidLines::new(false, "nothing was removed");
    for path in &args.files {
        let format = match args.format {
            Some(UnlinkFormat::Csv) => Delimited::Csv,
            Some(UnlinkFormat::Tsv) => Delimited::Tsv,
            None if has_csv_extension(path) => Delimited::Csv,
            None => Delimited::Tsv,
        };
        let mut lines = LineReader::open(path)?;
        let mut first = true;
        while let Some((line_no, line)) = lines.next_line(path)? {
            let parsed = line.and_then(|line| {
                let data_line = !line.is_empty() && !line.starts_with('#');
                let parsed = format.parse(line, first);
                first &= !data_line;
                parsed
            });
            match parsed {
                Ok(Parsed::Skip) => {}
                Ok(Parsed::Edge(e)) => {
                    listed.push(format!(
                        "{}:{line_no}: {} -{}-> {}",
                        path.display(),
                        e.source,
                        e.edge_type,
                        e.target
                    ));
                    batch.unlink_triple(e.source, e.edge_type, e.target);
                }
                Err(bad) => invalid.record(path, line_no, bad)?,
            }
        }
    }
    let db = open_existing(&args.db.db)?;
    let info = db.commit(batch)?;
    let missing: Vec<&String> = info
        .results
        .iter()
        .zip(&listed)
        .filter(|(r, _)| matches!(r, OpResult::Unlinked { edge: None }))
        .map(|(_, l)| l)
        .collect();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "removed {} edges; {} listed edges did not exist",
        listed.len() - missing.len(),
        missing.len()
    )?;
    if !missing.is_empty() {
        let mut err = io::stderr().lock();
        writeln!(err, "edges not found (first {MISSING_EXAMPLES_MAX}):")?;
        for m in missing.iter().take(MISSING_EXAMPLES_MAX) {
            writeln!(err, "  {m}")?;
        }
    }
    Ok(())
}

fn has_csv_extension(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if x < 1024.0 {
            break;
        }
        x /= 1024.0;
        unit = u;
    }
    format!("{x:.1} {unit}")
}
