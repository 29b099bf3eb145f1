//! The `hopgraph` command-line tool; everything lives in `hopgraph::cli`.

fn main() {
    std::process::exit(hopgraph::cli::main());
}
