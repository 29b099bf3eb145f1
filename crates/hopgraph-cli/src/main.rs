//! The `hopgraph` binary: [`hopgraph_cli::run`] with the process's arguments.

/// mimalloc instead of the system allocator: an import allocates texts, embeddings and
/// terms on its parsing and analysis threads and frees many of them on others, which
/// glibc's per-thread arenas handle slowly (DESIGN.md §10 has the measurement).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(hopgraph_cli::run(std::env::args_os()));
}
