//! The `hopgraph` command-line tool: argument parsing, output formats and exit codes.
//!
//! This is an adapter: it translates arguments and files into calls of the library
//! ([`Database`], [`BulkLoad`](hopgraph::BulkLoad), [`WriteBatch`](hopgraph::WriteBatch)) and
//! their answers into text, JSON and exit codes. Graph logic lives in the engine.
//!
//! Exit codes, one table for every command (`Exit`, mapped from the engine's typed
//! [`Error`] in `exit_of` and nowhere else):
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success |
//! | 1 | not found: unknown node key, no path, no database at `--db` |
//! | 2 | usage: unknown command or option, missing or conflicting arguments |
//! | 3 | corrupt database: `Corrupt`, `ForeignFile`, `UnsupportedVersion` |
//! | 4 | I/O error: `Io`, `WriterPoisoned`, `ReadOnly`, failed output |
//! | 5 | invalid input: `InvalidInput`, `NodeExists`, `LimitReached`, bad input lines |

mod admin;
mod export;
mod import;
mod input;
mod node;
mod progress;
mod query;
mod records;
mod reembed;
mod search;

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use hopgraph::{Database, Error, Options};

const EXIT_CODES: &str = "\
Exit codes:  (the same for every command)
  0  success
  1  not found: an unknown node key, no path between the nodes, no database at --db
  2  usage: unknown command or option, missing or conflicting arguments
  3  corrupt database: a damaged or foreign file, or a newer format (`check` failed)
  4  I/O error: a file could not be read or written, the disk is full, output failed
  5  invalid input: a bad line, key, value, JSON field or limit; a node that exists already

Errors are printed as one line on stderr, starting with `error:`.";

const LONG_ABOUT: &str = "\
hopgraph: an embedded graph database for typed, directed edges (agent memory).

A database is a directory. Every command takes it as --db DIR; only `import` creates a
database that does not exist yet. The same options mean the same everywhere: --type T
(repeat it or comma-separate: --type a,b) filters edge types (in `search`, where the walk
of --near takes them, it is --edge-type), --kind K is a node's kind (`add node`, `search`),
--max-hops N bounds a walk, --direction out|in|both, --json prints JSON, --limit N caps a
list, --as-of TIME (get, neighbors, path, expand, traverse, search) answers from the graph as
it was at TIME: only the nodes and edges valid then (valid_from <= TIME < valid_to) exist.
Times are printed as RFC 3339 (UTC), in text and JSON alike, and read as RFC 3339 (any
offset) or milliseconds since 1970.

A first session, from the repository's root, on its sample of 2,000 agent memories
(examples/memory-2k-text.*, made by benches/workload/gen_graph.py --text):
  hopgraph import --db ./mem examples/memory-2k-text.nodes.jsonl \\
      examples/memory-2k-text.edges.tsv
  hopgraph stats --db ./mem                         # what is in it
  hopgraph search --db ./mem \"pooled connections\"   # ranked full-text search
  hopgraph get --db ./mem deploy-billing-api-2-3    # one node, its edge counts
  hopgraph neighbors --db ./mem deploy-billing-api-2-3 --type caused_by
  hopgraph path --db ./mem deploy-auth-3-0 deploy-ledger-2-1 --max-hops 6
  hopgraph traverse --db ./mem deploy-billing-api-2-3 --max-hops 2
  hopgraph expand --db ./mem deploy-auth-3-0 deploy-ledger-2-1 --max-hops 2
  hopgraph add --db ./mem node note-cache-misses --kind decision \\
      --title \"Cache misses\"
  hopgraph add --db ./mem edge note-cache-misses caused_by deploy-auth-3-0
  hopgraph export --db ./mem --out backup.jsonl     # everything, losslessly
  hopgraph export --db ./mem --format dot --seed deploy-billing-api-2-3 \\
      --max-hops 2 | dot -Tsvg > billing.svg
  hopgraph reembed --db ./mem --model sentence-transformers/all-MiniLM-L6-v2
  hopgraph index --db ./mem                         # their ANN graph
  hopgraph check --db ./mem && hopgraph compact --db ./mem

`hopgraph help COMMAND` (or COMMAND --help) explains each command with examples.";

/// hopgraph: an embedded graph database for typed, directed edges.
#[derive(Debug, Parser)]
#[command(
    name = "hopgraph",
    version,
    about = "hopgraph: an embedded graph database for typed, directed edges",
    long_about = LONG_ABOUT,
    after_long_help = EXIT_CODES,
    after_help = "Exit codes: 0 ok, 1 not found, 2 usage, 3 corrupt database, 4 I/O error, \
                  5 invalid input. `hopgraph help <COMMAND>` (or --help) shows examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Import(import::ImportArgs),
    Export(export::ExportArgs),
    Unlink(admin::UnlinkArgs),
    Stats(admin::StatsArgs),
    Check(admin::CheckArgs),
    Checkpoint(admin::CheckpointArgs),
    Compact(admin::CompactArgs),
    Index(admin::IndexArgs),
    Get(node::GetArgs),
    Add(node::AddArgs),
    Path(query::PathArgs),
    Neighbors(query::NeighborsArgs),
    Expand(query::ExpandArgs),
    Traverse(query::TraverseArgs),
    Search(search::SearchArgs),
    Reembed(reembed::ReembedArgs),
}

/// The database directory option shared by every command.
#[derive(Debug, Args)]
struct DbArg {
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    db: PathBuf,
}

/// The exit codes of every command: the one table ([`EXIT_CODES`] is its text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: success (an error with this code is a reader that went away: `| head`).
    Ok = 0,
    /// 1: the key, path or edge asked about does not exist (`get`, `neighbors`,
    /// `traverse` of an unknown key; `path` that finds no path).
    NotFound = 1,
    /// 2: unknown command or option, missing or conflicting arguments.
    Usage = 2,
    /// 3: a database file is damaged, foreign or of a newer format (`check` failed).
    Corrupt = 3,
    /// 4: reading or writing a file failed (including a missing database directory).
    Io = 4,
    /// 5: the input was refused: a bad line, key, value or limit; a node that must be new.
    Invalid = 5,
}

/// An error for the user: one line, no debug output.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    code: Exit,
    /// Print nothing: the answer said it already (`path` found no path), or the reader of
    /// our output went away (`| head`, with code [`Exit::Ok`]).
    silent: bool,
}

impl CliError {
    /// Invalid input (exit 5): the default, since most errors the CLI raises itself are
    /// about what it was given.
    pub(crate) fn new(message: impl Into<String>) -> CliError {
        CliError::with(Exit::Invalid, message)
    }

    pub(crate) fn with(code: Exit, message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            code,
            silent: false,
        }
    }

    /// An exit code with no message: the output has said what there is to say.
    pub(crate) fn silent(code: Exit) -> CliError {
        CliError {
            message: String::new(),
            code,
            silent: true,
        }
    }

    /// An I/O failure on a file the CLI reads or writes itself (exit 4).
    pub(crate) fn io(message: impl Into<String>) -> CliError {
        CliError::with(Exit::Io, message)
    }

    /// What was asked about does not exist (exit 1).
    pub(crate) fn not_found(message: impl Into<String>) -> CliError {
        CliError::with(Exit::NotFound, message)
    }

    /// A usage error the argument parser cannot see (exit 2).
    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError::with(Exit::Usage, message)
    }

    /// The same error with `prefix` before its message.
    pub(crate) fn context(mut self, prefix: &str) -> CliError {
        self.message = format!("{prefix}{}", self.message);
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The exit code of an engine error: the one place where [`Error`] variants meet [`Exit`].
pub(crate) fn exit_of(e: &Error) -> Exit {
    match e {
        Error::NodeNotFound { .. } => Exit::NotFound,
        Error::Corrupt { .. } | Error::ForeignFile { .. } | Error::UnsupportedVersion { .. } => {
            Exit::Corrupt
        }
        Error::Io { .. } | Error::WriterPoisoned(_) | Error::ReadOnly => Exit::Io,
        Error::InvalidArgument { .. }
        | Error::LimitExceeded { .. }
        | Error::NodeExists { .. }
        | Error::LimitReached { .. } => Exit::Invalid,
        // `Error` is non-exhaustive: a variant added later is reported as bad input until
        // it is given its own row here.
        _ => Exit::Invalid,
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> CliError {
        CliError::with(exit_of(&e), e.to_string())
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> CliError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            // `hopgraph export ... | head`: the reader has what it wanted.
            return CliError::silent(Exit::Ok);
        }
        CliError::io(format!("writing output: {e}"))
    }
}

pub(crate) type CliResult<T = ()> = Result<T, CliError>;

/// Runs the tool with `args` (the first is the program name) and returns the exit code
/// (the table above). The `hopgraph` binary and the Python package's `hopgraph` command
/// are both this function.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with code 0, usage errors to stderr with 2.
            let _ = e.print();
            return e.exit_code();
        }
    };
    let result = match cli.command {
        Command::Import(a) => import::run(a),
        Command::Export(a) => export::run(a),
        Command::Unlink(a) => admin::unlink(a),
        Command::Stats(a) => admin::stats(a),
        Command::Check(a) => admin::check(a),
        Command::Checkpoint(a) => admin::checkpoint(a),
        Command::Compact(a) => admin::compact(a),
        Command::Index(a) => admin::index(a),
        Command::Get(a) => node::get(a),
        Command::Add(a) => node::add(a),
        Command::Path(a) => query::path(a),
        Command::Neighbors(a) => query::neighbors(a),
        Command::Expand(a) => query::expand_cmd(a),
        Command::Traverse(a) => query::traverse_cmd(a),
        Command::Search(a) => search::run(a),
        Command::Reembed(a) => reembed::run(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) if e.silent => e.code as i32,
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: {e}");
            e.code as i32
        }
    }
}

/// Writes `value` as one line of compact JSON.
pub(crate) fn json_line(out: &mut impl Write, value: &impl serde::Serialize) -> CliResult {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Opens an existing database for reading only (no lock, no recovery writes).
pub(crate) fn open_read_only(dir: &Path) -> CliResult<Database> {
    let options = base_options()?.read_only(true).create_if_missing(false);
    open_or_not_found(dir, options)
}

/// The options every command opens a database with: the defaults and
/// `$HOPGRAPH_VECTOR_GRAPH_MIN`.
pub(crate) fn base_options() -> CliResult<Options> {
    hopgraph_memory::options_from_env(Options::default()).map_err(CliError::usage)
}

/// Opens an existing database for writing.
pub(crate) fn open_existing(dir: &Path) -> CliResult<Database> {
    let options = base_options()?.create_if_missing(false);
    open_or_not_found(dir, options)
}

/// Opens `dir`; a path with no database is "not found" (exit 1), not bad input.
fn open_or_not_found(dir: &Path, options: Options) -> CliResult<Database> {
    match Database::open_with(dir, options) {
        Ok(db) => Ok(db),
        Err(e @ Error::NotADatabase { .. }) => Err(CliError::not_found(e.to_string())),
        Err(e) => Err(e.into()),
    }
}
