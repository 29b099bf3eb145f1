//! Many processes, one database: interleaved writers and readers, a writer killed with
//! SIGKILL while others go on, and checkpoint/compaction beside an old snapshot in another
//! process. Children are this test binary re-executed with `HOPGRAPH_MP_CHILD` set; the
//! `child_entry` test runs their workload (ignored in a normal run, run with `--ignored`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hopgraph::{Database, Direction, EdgeProps, TypeFilter, WriteBatch};

use crate::common::{edge_list, tempdir};

const SHARED: u32 = 5;

fn spawn(spec: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "processes::child_entry",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HOPGRAPH_MP_CHILD", spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// One writer batch: a private node, an edge from it to a shared node, and an edge between
/// two shared nodes that every writer also commits (a triple the engine must dedup).
fn batch(writer: u32, i: u32) -> WriteBatch {
    let mut b = WriteBatch::new();
    let (s1, s2) = (
        format!("shared{}", i % SHARED),
        format!("shared{}", (i + 1) % SHARED),
    );
    let own = format!("w{writer}-{i}");
    b.ensure_node(&s1).ensure_node(&s2).ensure_node(&own);
    b.link(&s1, "next", &s2, EdgeProps::default());
    b.link(&own, "about", &s1, EdgeProps::default());
    b
}

#[test]
#[ignore = "not a test: the child process that the processes tests run with HOPGRAPH_MP_CHILD set"]
fn child_entry() {
    let spec = std::env::var("HOPGRAPH_MP_CHILD")
        .expect("HOPGRAPH_MP_CHILD is not set: child_entry is the processes tests' child process");
    let parts: Vec<&str> = spec.split('|').collect();
    let db = Database::open(parts[1]).unwrap();
    match parts[0] {
        "write" => {
            let (id, from, count): (u32, u32, u32) = (
                parts[2].parse().unwrap(),
                parts[3].parse().unwrap(),
                parts[4].parse().unwrap(),
            );
            for i in from..from + count {
                db.commit(batch(id, i)).unwrap();
                println!("acked {i}");
            }
        }
        "read" => {
            let until = Instant::now() + Duration::from_millis(parts[2].parse().unwrap());
            let (mut lsn, mut edges, mut n) = (0, 0, 0u64);
            while Instant::now() < until {
                let snap = db.snapshot();
                assert!(
                    snap.lsn() >= lsn && snap.edge_count() >= edges,
                    "a snapshot went back in time"
                );
                // Atomicity: every private node has its edge.
                for id in snap.node_ids() {
                    let node = snap.node(id).unwrap().unwrap();
                    if node.key.starts_with('w') {
                        assert_eq!(
                            snap.degree(id, Direction::Out, &TypeFilter::All),
                            1,
                            "half-applied batch seen"
                        );
                    }
                }
                (lsn, edges, n) = (snap.lsn(), snap.edge_count(), n + 1);
            }
            println!("snapshots {n}");
        }
        "maintain" => {
            for i in 0..20 {
                db.commit(batch(99, i)).unwrap();
            }
            db.checkpoint().unwrap();
            db.compact().unwrap();
            println!("done");
        }
        other => panic!("unknown child mode {other}"),
    }
    std::process::exit(0);
}

fn acked_lines(child: &mut Child) -> Vec<u32> {
    let out = child.stdout.take().unwrap();
    BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        // libtest may print its "test … " prefix on the same line as the first ack.
        .filter_map(|l| l.split("acked ").nth(1).and_then(|x| x.trim().parse().ok()))
        .collect()
}

fn check_final(db: &Database, writers: &[(u32, Vec<u32>)]) {
    let snap = db.snapshot();
    let mut expected_nodes = SHARED as u64;
    for (w, acked) in writers {
        for i in acked {
            let id = snap
                .node_id(&format!("w{w}-{i}"))
                .unwrap_or_else(|| panic!("acknowledged batch w{w}-{i} lost"));
            assert_eq!(snap.degree(id, Direction::Out, &TypeFilter::All), 1);
        }
        expected_nodes += acked.len() as u64;
    }
    let edges = edge_list(&snap);
    let mut dedup = edges.clone();
    dedup.dedup();
    assert_eq!(edges, dedup, "duplicate edges");
    assert_eq!(snap.node_count(), expected_nodes);
    let shared_edges = edges.iter().filter(|e| e.1 == "next").count() as u64;
    assert_eq!(shared_edges, SHARED as u64);
    assert_eq!(
        snap.edge_count(),
        expected_nodes - SHARED as u64 + shared_edges
    );
    db.verify().unwrap();
}

fn interleaved(writers: u32) {
    let dir = tempdir();
    let path = dir.path().to_str().unwrap().to_owned();
    Database::open(&path).unwrap();
    let count = 40;
    let mut kids: Vec<(u32, Child)> = (0..writers)
        .map(|w| (w, spawn(&format!("write|{path}|{w}|0|{count}"))))
        .collect();
    let mut reader = spawn(&format!("read|{path}|1500"));
    let mut results = Vec::new();
    for (w, kid) in &mut kids {
        let acked = acked_lines(kid);
        assert!(kid.wait().unwrap().success());
        assert_eq!(acked.len(), count as usize);
        results.push((*w, acked));
    }
    assert!(
        reader.wait().unwrap().success(),
        "a reader saw an inconsistent snapshot"
    );
    check_final(&Database::open(&path).unwrap(), &results);
}

#[test]
fn two_writer_processes_and_a_reader() {
    interleaved(2);
}

#[test]
fn four_writer_processes_and_a_reader() {
    interleaved(4);
}

#[test]
fn killed_writer_loses_nothing_acknowledged() {
    let dir = tempdir();
    let path = dir.path().to_str().unwrap().to_owned();
    Database::open(&path).unwrap();
    let mut steady = spawn(&format!("write|{path}|0|0|150"));
    let mut victim_acked = Vec::new();
    let cycles = if std::env::var_os("HOPGRAPH_SLOW_TESTS").is_some() {
        40
    } else {
        6
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for cycle in 0..cycles {
        let from = cycle * 1000;
        let mut kid = spawn(&format!("write|{path}|1|{from}|500"));
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(20 + (seed >> 33) % 120));
        kid.kill().unwrap();
        victim_acked.extend(acked_lines(&mut kid));
        kid.wait().unwrap();
    }
    let steady_acked = acked_lines(&mut steady);
    assert!(steady.wait().unwrap().success());
    // Batches the victim committed without printing are fine; half of one is not.
    let db = Database::open(&path).unwrap();
    check_final_subset(&db, &[(0, steady_acked), (1, victim_acked)]);
}

/// Like `check_final`, but the writer may have committed batches it never acknowledged.
fn check_final_subset(db: &Database, writers: &[(u32, Vec<u32>)]) {
    let snap = db.snapshot();
    for (w, acked) in writers {
        for i in acked {
            let id = snap
                .node_id(&format!("w{w}-{i}"))
                .unwrap_or_else(|| panic!("acknowledged batch w{w}-{i} lost"));
            assert_eq!(snap.degree(id, Direction::Out, &TypeFilter::All), 1);
        }
    }
    for id in snap.node_ids() {
        let node = snap.node(id).unwrap().unwrap();
        if node.key.starts_with('w') {
            assert_eq!(
                snap.degree(id, Direction::Out, &TypeFilter::All),
                1,
                "half-applied batch {}",
                node.key
            );
        }
    }
    let edges = edge_list(&snap);
    let mut dedup = edges.clone();
    dedup.dedup();
    assert_eq!(edges, dedup, "duplicate edges");
    db.verify().unwrap();
}

#[test]
fn checkpoint_and_compaction_elsewhere_leave_old_snapshots_readable() {
    let dir = tempdir();
    let path = dir.path().to_str().unwrap().to_owned();
    let db = Database::open(&path).unwrap();
    for i in 0..30 {
        db.commit(batch(7, i)).unwrap();
    }
    db.checkpoint().unwrap();
    for i in 30..40 {
        db.commit(batch(7, i)).unwrap();
    }
    db.checkpoint().unwrap();
    let old = db.snapshot();
    let before = edge_list(&old);
    let mut kid = spawn(&format!("maintain|{path}"));
    let out = BufReader::new(kid.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .collect::<Vec<_>>();
    assert!(kid.wait().unwrap().success(), "{out:?}");
    // The other process replaced every segment file; this snapshot still reads its own.
    let segs: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(edge_list(&old), before);
    let new = db.snapshot();
    assert_eq!(
        new.node_count(),
        old.node_count() + 20,
        "files now: {segs:?}"
    );
    let w99 = new
        .node_id("w99-0")
        .expect("the other process's commit is visible");
    assert_eq!(new.degree(w99, Direction::Out, &TypeFilter::All), 1);
    // And this handle keeps writing on top of the other's manifest.
    db.commit(batch(7, 40)).unwrap();
    assert!(db.snapshot().node_id("w7-40").is_some());
    drop((old, new, db));
    Database::open(&path).unwrap().verify().unwrap();
}
