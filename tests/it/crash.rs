//! Crash recovery: a child process commits batches in a loop and is SIGKILLed at a random
//! moment, over and over, on the same directory.
//!
//! The child is this test binary re-executed with `HOPGRAPH_CRASH_CHILD=<dir>` and a filter
//! that runs only [`crash_child`] (ignored in a normal run); it commits batch after batch (occasionally checkpointing
//! and compacting by hand, and often automatically through a tiny `checkpoint_wal_bytes`)
//! and prints `acked N` after each commit returns. The parent kills it after a random number
//! of acknowledgements plus a random delay, reopens the database and checks the laws:
//! every acknowledged batch is present, the batches present form a prefix (at most one
//! more than acknowledged: the one in flight), no batch is partially applied (the whole
//! graph equals a model of that prefix), and `verify()` passes.
//!
//! Default: 20 kill cycles per durability mode; `HOPGRAPH_SLOW_TESTS=1` runs 300.
//! `HOPGRAPH_CRASH_SEED=<u64>` replays a run (the seed is printed).

// Test code: a failed unwrap is a failed test with a backtrace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hopgraph::{Database, Direction, Durability, EdgeProps, Options, TypeFilter, WriteBatch};

use crate::common::tempdir;

const CHILD_DIR_ENV: &str = "HOPGRAPH_CRASH_CHILD";
const CHILD_MODE_ENV: &str = "HOPGRAPH_CRASH_MODE";
const CHILD_START_ENV: &str = "HOPGRAPH_CRASH_START";
const CHILD_SEED_ENV: &str = "HOPGRAPH_CRASH_CHILD_SEED";

/// A small seeded PRNG (splitmix64): deterministic, dependency-free, good enough for
/// choosing offsets and delays.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The seed from `var`, or one made from the clock; printed either way so a failure can
/// be replayed.
pub fn seed_from_env(var: &str, what: &str) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs().wrapping_mul(1_000_000_007) ^ u64::from(d.subsec_nanos()))
                .unwrap_or(1)
        });
    eprintln!("{what}: seed {seed} (replay with {var}={seed})");
    seed
}

/// Whether the slow variants were asked for.
pub fn slow_tests() -> bool {
    std::env::var("HOPGRAPH_SLOW_TESTS").is_ok_and(|v| v == "1")
}

/// One request of a batch, in a form both the child (as a `WriteBatch`) and the model (as
/// set operations) understand.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Node(String),
    Link(String, String, String),
    DeleteNode(String),
    Unlink(String, String, String),
    /// End a node's validity at a time (ms).
    EndNode(String, u64),
    /// End an edge's validity at a time (ms).
    EndEdge(String, String, String, u64),
}

pub(crate) fn key(batch: u64, i: u32) -> String {
    format!("b{batch}-{i}")
}

/// The requests of batch `n`. Every key, edge and type name encodes the batch number, so a
/// half-applied batch shows up as a difference from the model. Later batches link to,
/// unlink from and delete nodes of earlier ones, so recovery must get tombstones right too.
pub(crate) fn batch_ops(n: u64) -> Vec<Op> {
    let mut ops: Vec<Op> = (0..4).map(|i| Op::Node(key(n, i))).collect();
    for i in 0..3 {
        ops.push(Op::Link(key(n, i), "next".into(), key(n, i + 1)));
    }
    ops.push(Op::Link(key(n, 3), format!("t{}", n % 5), key(n, 0)));
    if n > 0 {
        ops.push(Op::Link(key(n, 0), "prev".into(), key(n - 1, 0)));
    }
    if n >= 4 && n.is_multiple_of(4) {
        ops.push(Op::DeleteNode(key(n - 4, 3)));
    }
    if n >= 2 && n.is_multiple_of(3) {
        ops.push(Op::Unlink(key(n - 2, 0), "next".into(), key(n - 2, 1)));
    }
    // Validity records: an end of a node and of an edge of an earlier batch (times far
    // after any commit, so each end is after its start), encoding the batch number.
    if n >= 1 && n.is_multiple_of(2) {
        ops.push(Op::EndNode(key(n - 1, 2), END_BASE + n));
        ops.push(Op::EndEdge(
            key(n - 1, 1),
            "next".into(),
            key(n - 1, 2),
            END_BASE + n,
        ));
    }
    ops
}

/// Validity ends in the crash workloads are this plus the batch number (ms; year 2286).
const END_BASE: u64 = 10_000_000_000_000;

/// Nodes and edges (source, type, target) after batches `0..k`; a node or edge whose
/// validity ended carries `~<valid_to>` after its key or type.
pub(crate) type Graph = (BTreeSet<String>, BTreeSet<(String, String, String)>);

/// Applies `op` to the model graph `g` (see [`Graph`]).
pub(crate) fn apply_op(g: &mut Graph, op: Op) {
    let (nodes, edges) = g;
    let plain = |k: &str| k.split('~').next().unwrap_or_default().to_owned();
    match op {
        Op::Node(k) => {
            if !nodes.iter().any(|x| plain(x) == k) {
                nodes.insert(k);
            }
        }
        Op::Link(s, t, d) => {
            let s = nodes.iter().find(|x| plain(x) == s).cloned().unwrap_or(s);
            let d = nodes.iter().find(|x| plain(x) == d).cloned().unwrap_or(d);
            if !edges
                .iter()
                .any(|(a, ty, b)| *a == s && plain(ty) == t && *b == d)
            {
                edges.insert((s, t, d));
            }
        }
        Op::DeleteNode(k) => {
            nodes.retain(|x| plain(x) != k);
            edges.retain(|(s, _, d)| plain(s) != k && plain(d) != k);
        }
        Op::Unlink(s, t, d) => {
            edges.retain(|(a, ty, b)| !(plain(a) == s && *ty == t && plain(b) == d));
        }
        Op::EndNode(k, at) => {
            if nodes.remove(&k) {
                let ended = format!("{k}~{at}");
                nodes.insert(ended.clone());
                let moved: Vec<_> = edges
                    .iter()
                    .filter(|(s, _, d)| *s == k || *d == k)
                    .cloned()
                    .collect();
                for (s, t, d) in moved {
                    edges.remove(&(s.clone(), t.clone(), d.clone()));
                    let s = if s == k { ended.clone() } else { s };
                    let d = if d == k { ended.clone() } else { d };
                    edges.insert((s, t, d));
                }
            }
        }
        Op::EndEdge(s, t, d, at) => {
            let found = edges
                .iter()
                .find(|(a, ty, b)| plain(a) == s && *ty == t && plain(b) == d)
                .cloned();
            if let Some((a, ty, b)) = found {
                edges.remove(&(a.clone(), ty.clone(), b.clone()));
                edges.insert((a, format!("{ty}~{at}"), b));
            }
        }
    }
}

fn model(k: u64) -> Graph {
    let mut g = Graph::default();
    for n in 0..k {
        for op in batch_ops(n) {
            apply_op(&mut g, op);
        }
    }
    g
}

pub(crate) fn write_batch(n: u64) -> WriteBatch {
    let mut b = WriteBatch::new();
    for op in batch_ops(n) {
        match op {
            Op::Node(k) => {
                b.ensure_node(k);
            }
            Op::Link(s, t, d) => {
                b.link(s, t, d, EdgeProps::default());
            }
            Op::DeleteNode(k) => {
                b.delete_node(k);
            }
            Op::Unlink(s, t, d) => {
                b.unlink_triple(s, t, d);
            }
            Op::EndNode(k, at) => {
                b.update_node(
                    k,
                    hopgraph::NodePatch {
                        valid_to: Some(Some(at)),
                        ..hopgraph::NodePatch::default()
                    },
                );
            }
            Op::EndEdge(s, t, d, at) => {
                b.end_edge_triple(s, t, d, at);
            }
        }
    }
    b
}

/// Everything a snapshot holds, by key.
pub(crate) fn read_graph(db: &Database) -> Graph {
    let snap = db.snapshot();
    let (mut nodes, mut edges) = Graph::default();
    let shown = |n: &hopgraph::Node| match n.valid_to {
        Some(to) => format!("{}~{to}", n.key),
        None => n.key.clone(),
    };
    for id in snap.node_ids() {
        let node = snap.node(id).unwrap().unwrap();
        nodes.insert(shown(&node));
        for nb in snap.neighbors(id, Direction::Out, &TypeFilter::All) {
            let other = snap.node(nb.node).unwrap().unwrap();
            let mut ty = snap.type_name(nb.edge_type).unwrap().to_owned();
            if let Some(to) = snap.edge(nb.edge).unwrap().unwrap().valid_to {
                ty = format!("{ty}~{to}");
            }
            edges.insert((shown(&node), ty, shown(&other)));
        }
    }
    (nodes, edges)
}

fn child_options(durability: Durability) -> Options {
    Options::default()
        .durability(durability)
        // Small enough that automatic checkpoints (and through them automatic compactions)
        // happen every few dozen batches.
        .checkpoint_wal_bytes(6 * 1024)
        .compaction_segments_max(3)
}

fn durability_from(s: &str) -> Durability {
    match s {
        "buffered" => Durability::Buffered,
        _ => Durability::Sync,
    }
}

/// The child's body: commit forever, acknowledging each batch on stdout. Never returns;
/// the parent kills it.
fn run_child(dir: &Path) -> ! {
    let mode = std::env::var(CHILD_MODE_ENV).unwrap_or_default();
    let start: u64 = std::env::var(CHILD_START_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("HOPGRAPH_CRASH_START");
    let seed: u64 = std::env::var(CHILD_SEED_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut rng = SplitMix64::new(seed);
    let db = Database::open_with(dir, child_options(durability_from(&mode))).expect("child open");
    let mut out = std::io::stdout().lock();
    writeln!(out, "opened at {start}").expect("stdout");
    out.flush().expect("stdout");
    for n in start.. {
        db.commit(write_batch(n))
            .unwrap_or_else(|e| panic!("child: commit of batch {n} failed: {e}"));
        writeln!(out, "acked {n}").expect("stdout");
        out.flush().expect("stdout");
        match rng.below(32) {
            0 => {
                db.checkpoint().expect("child checkpoint");
            }
            1 => {
                db.compact().expect("child compact");
            }
            _ => {}
        }
    }
    unreachable!("the batch counter overflowed")
}

/// Entry point of the re-executed child: ignored (not a test by itself), run with
/// `--ignored` and `HOPGRAPH_CRASH_CHILD` set by [`crash_cycle`]; without the variable it
/// fails.
#[test]
#[ignore = "not a test: the child process that crash_cycle runs with HOPGRAPH_CRASH_CHILD set"]
fn crash_child() {
    let dir = std::env::var_os(CHILD_DIR_ENV).unwrap_or_else(|| {
        panic!("{CHILD_DIR_ENV} is not set: crash_child is the crash tests' child process")
    });
    run_child(Path::new(&dir));
}

/// How many batches are present, checked to be a prefix: `b{n}-0` is never deleted, so it
/// marks batch `n`.
fn batches_present(db: &Database) -> u64 {
    let snap = db.snapshot();
    let mut k = 0;
    while snap.node_id(&key(k, 0)).is_some() {
        k += 1;
    }
    for later in k + 1..k + 4 {
        assert!(
            snap.node_id(&key(later, 0)).is_none(),
            "batch {later} is present but batch {k} is not"
        );
    }
    k
}

struct CycleOutcome {
    acked_count: u64,
    present: u64,
    torn_bytes: u64,
    generation: u64,
}

fn crash_cycle(dir: &Path, mode: &str, start: u64, rng: &mut SplitMix64) -> CycleOutcome {
    let stderr_path = dir.with_extension("child-stderr.log");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash::crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR_ENV, dir)
        .env(CHILD_MODE_ENV, mode)
        .env(CHILD_START_ENV, start.to_string())
        .env(CHILD_SEED_ENV, rng.next_u64().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Kill after 0..40 acknowledgements, then a random delay so the kill lands anywhere
    // inside a commit, checkpoint or compaction. With no acknowledgement wanted the delay is
    // longer, so the kill lands in the child's start-up, open or recovery.
    let acks_wanted = rng.below(41);
    let delay = if acks_wanted == 0 {
        Duration::from_micros(rng.below(30_000))
    } else {
        Duration::from_micros(rng.below(3_000))
    };
    let mut next = start;
    let check_ack = |line: &str, next: &mut u64| {
        if let Some(n) = line.strip_prefix("acked ") {
            assert_eq!(n.parse::<u64>().ok(), Some(*next), "acks out of order");
            *next += 1;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while next - start < acks_wanted {
        let Some(line) = lines.next() else { break };
        check_ack(&line.unwrap(), &mut next);
        assert!(Instant::now() < deadline, "child made no progress");
    }
    std::thread::sleep(delay);
    child.kill().unwrap();
    // Lines printed before the kill are acknowledgements too.
    for line in lines {
        check_ack(&line.unwrap(), &mut next);
    }
    let acked_count = next;
    let status = child.wait().unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() != Some(9) {
            let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("child ended on its own ({status}) instead of being killed:\n{log}");
        }
    }

    // Recover (as a writer, which truncates a torn tail and removes leftovers) and check.
    let db = Database::open_with(dir, child_options(durability_from(mode)))
        .unwrap_or_else(|e| panic!("reopen after kill failed: {e}"));
    let torn_bytes = db.recovery_report().torn_tail_bytes;
    db.verify()
        .unwrap_or_else(|e| panic!("verify after kill failed: {e}"));
    let present = batches_present(&db);
    assert!(
        present >= acked_count,
        "acknowledged batch {} is missing (only {present} batches present)",
        acked_count - 1
    );
    assert!(
        present <= acked_count + 1,
        "{present} batches present but only {acked_count} acknowledged (at most one in flight)"
    );
    let got = read_graph(&db);
    let want = model(present);
    if got != want {
        let missing_nodes: Vec<_> = want.0.difference(&got.0).collect();
        let extra_nodes: Vec<_> = got.0.difference(&want.0).collect();
        let missing_edges: Vec<_> = want.1.difference(&got.1).collect();
        let extra_edges: Vec<_> = got.1.difference(&want.1).collect();
        panic!(
            "state after {present} batches differs from the model (a partial batch?):\n\
             missing nodes {missing_nodes:?}\nextra nodes {extra_nodes:?}\n\
             missing edges {missing_edges:?}\nextra edges {extra_edges:?}"
        );
    }
    CycleOutcome {
        acked_count,
        present,
        torn_bytes,
        generation: db.stats().unwrap().generation,
    }
}

fn crash_loop(mode: &str) {
    let seed = seed_from_env("HOPGRAPH_CRASH_SEED", &format!("crash loop ({mode})"));
    let mut rng = SplitMix64::new(seed);
    let cycles = if slow_tests() { 300 } else { 20 };
    let tmp = tempdir();
    let dir = tmp.path().join("db");
    let mut start = 0;
    let (mut torn, mut in_flight, mut generation) = (0, 0, 0);
    for _ in 0..cycles {
        let out = crash_cycle(&dir, mode, start, &mut rng);
        torn += u64::from(out.torn_bytes > 0);
        in_flight += u64::from(out.present > out.acked_count);
        generation = out.generation;
        start = out.present;
    }
    eprintln!(
        "crash loop ({mode}, seed {seed}): {cycles} kills, {start} batches, {torn} torn tails \
         truncated, {in_flight} unacknowledged batches found durable, manifest generation \
         {generation}"
    );
    assert!(start > 0, "no batch was ever committed");
}

#[test]
fn crash_loop_sync() {
    crash_loop("sync");
}

#[test]
fn crash_loop_buffered() {
    crash_loop("buffered");
}
