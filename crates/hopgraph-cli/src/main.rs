//! The `hopgraph` command-line tool: argument parsing, output formats and exit codes.
//!
//! This is an adapter: it translates arguments and files into calls of the library
//! ([`Database`], [`BulkLoad`](hopgraph::BulkLoad), [`WriteBatch`](hopgraph::WriteBatch)) and
//! their answers into text, JSON and exit codes. Graph logic lives in the engine.
//!
//! Exit codes: 0 success; 1 an error (bad input, I/O, a damaged database, `check` found a
//! problem); 2 a usage error (unknown option, missing argument).

mod admin;
mod export;
mod import;
mod input;
mod query;
mod records;
mod search;

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use hopgraph::{Database, Error, Options};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  error: bad input, I/O failure, damaged database, or `check` found a problem
  2  usage error: unknown command or option, missing or malformed argument

Errors are printed as one line on stderr, starting with `error:`.";

/// hopgraph: an embedded graph database for typed, directed edges.
#[derive(Debug, Parser)]
#[command(
    name = "hopgraph",
    version,
    about = "hopgraph: an embedded graph database for typed, directed edges",
    long_about = "hopgraph: an embedded graph database for typed, directed edges (agent memory).\n\n\
                  A database is a directory. Every command takes it as --db DIR; only `import` \
                  creates a database that does not exist yet.",
    after_long_help = EXIT_CODES,
    after_help = "Exit codes: 0 ok, 1 error or check failed, 2 usage. `hopgraph help <COMMAND>` \
                  shows examples."
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
    Path(query::PathArgs),
    Neighbors(query::NeighborsArgs),
    Expand(query::ExpandArgs),
    Traverse(query::TraverseArgs),
    Search(search::SearchArgs),
}

/// The database directory option shared by every command.
#[derive(Debug, Args)]
struct DbArg {
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    db: PathBuf,
}

/// An error for the user: one line, no debug output.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    /// The reader of our output went away (`| head`): not a failure, print nothing.
    broken_pipe: bool,
}

impl CliError {
    pub(crate) fn new(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            broken_pipe: false,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> CliError {
        CliError::new(e.to_string())
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> CliError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            // `hopgraph export ... | head`: the reader has what it wanted.
            return CliError {
                message: String::new(),
                broken_pipe: true,
            };
        }
        CliError::new(format!("writing output: {e}"))
    }
}

pub(crate) type CliResult<T = ()> = Result<T, CliError>;

fn main() {
    std::process::exit(run(std::env::args_os()));
}

/// Runs the tool with `args` (the first is the program name) and returns the exit code.
fn run<I, T>(args: I) -> i32
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
        Command::Path(a) => query::path(a),
        Command::Neighbors(a) => query::neighbors(a),
        Command::Expand(a) => query::expand_cmd(a),
        Command::Traverse(a) => query::traverse_cmd(a),
        Command::Search(a) => search::run(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) if e.broken_pipe => 0,
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: {e}");
            1
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
    let options = Options::default().read_only(true).create_if_missing(false);
    Ok(Database::open_with(dir, options)?)
}

/// Opens an existing database for writing.
pub(crate) fn open_existing(dir: &Path) -> CliResult<Database> {
    let options = Options::default().create_if_missing(false);
    Ok(Database::open_with(dir, options)?)
}
