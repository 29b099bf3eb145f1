//! The `hopgraph` command-line tool, end to end: the built binary on temporary directories.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hopgraph::{Database, EdgeProps, NodeProps, Options, Props, WriteBatch};

use common::{edge_list, tempdir};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Runs the binary; returns (exit code, stdout, stderr).
fn hopgraph<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, String) {
    run_hopgraph(args, None, &[])
}

/// Runs the binary with the environment variables `env` set.
fn hopgraph_env<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    run_hopgraph(args, None, env)
}

/// Runs the binary with `input` on its standard input.
fn hopgraph_stdin(args: &[&str], input: &str) -> (i32, String, String) {
    run_hopgraph(args, Some(input), &[])
}

/// Runs the binary with `input`, or nothing, on its standard input.
fn run_hopgraph<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    input: Option<&str>,
    env: &[(&str, &str)],
) -> (i32, String, String) {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hopgraph"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hopgraph");
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        // A command that fails before reading its input closes the pipe first.
        match stdin.write_all(input.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            r => r.unwrap(),
        }
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait for hopgraph");
    let stderr = String::from_utf8(stderr).unwrap();
    assert!(!stderr.contains("panicked"), "hopgraph panicked: {stderr}");
    (
        status.code().expect("exit code"),
        String::from_utf8(stdout).unwrap(),
        stderr,
    )
}

/// Runs the binary and expects success; returns stdout.
fn ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let (code, out, err) = hopgraph(args);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    out
}

/// Runs the binary and expects exit code `want` with one `error:` line; returns that line.
fn fails<S: AsRef<std::ffi::OsStr>>(want: i32, args: &[S]) -> String {
    let (code, out, err) = hopgraph(args);
    assert_eq!(code, want, "stdout: {out}\nstderr: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

/// Runs `path` and expects its "not found" answer: exit 1, the answer on stdout, nothing
/// on stderr; returns stdout.
fn no_path<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let (code, out, err) = hopgraph(args);
    assert_eq!((code, err.as_str()), (1, ""), "stdout: {out}");
    out
}

fn db_arg(dir: &Path) -> String {
    dir.to_str().unwrap().to_owned()
}

fn read_only(dir: &Path) -> Database {
    let options = Options::default().read_only(true).create_if_missing(false);
    Database::open_with(dir, options).unwrap()
}

fn edges_of(dir: &Path) -> Vec<(String, String, String)> {
    edge_list(&read_only(dir).snapshot())
}

fn triple(s: &str, t: &str, d: &str) -> (String, String, String) {
    (s.into(), t.into(), d.into())
}

#[test]
fn import_tsv_keeps_exact_keys_and_skips_header_comments_duplicates() {
    let tmp = tempdir();
    let input = tmp.path().join("g.edges.tsv");
    std::fs::write(
        &input,
        "source\ttarget\ttype\n# comment\n007\t7\tcaused_by\n 7\t007 \trelated_to\t0.5\r\n\
         007\t7\tcaused_by\nA\ta\tcaused_by\n",
    )
    .unwrap();
    let db = tmp.path().join("db");
    let out = ok(&["import", "--db", &db_arg(&db), input.to_str().unwrap()]);
    assert!(out.contains("nodes created: 6"), "{out}");
    assert!(out.contains("edges created: 3"), "{out}");
    assert!(out.contains("duplicate edges skipped: 1"), "{out}");
    let db = read_only(&db);
    let snap = db.snapshot();
    assert_eq!(
        edge_list(&snap),
        vec![
            triple(" 7", "related_to", "007 "),
            triple("007", "caused_by", "7"),
            triple("A", "caused_by", "a"),
        ]
    );
    let (s, t) = (snap.node_id(" 7").unwrap(), snap.node_id("007 ").unwrap());
    let ty = snap.type_id("related_to").unwrap();
    let e = snap
        .edge(snap.edge_by_triple(s, ty, t).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(e.weight, 0.5);
}

/// The segment files of `db` (sorted by name), with the database id and the checksum
/// covering it zeroed.
fn segments_without_id(db: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hgs"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            let mut b = std::fs::read(p).unwrap();
            b[16..32].fill(0);
            let crc = b.len() - 12;
            b[crc..crc + 4].fill(0);
            b
        })
        .collect()
}

#[test]
fn import_with_a_tiny_memory_limit_spills_and_writes_the_same_segment() {
    let tmp = tempdir();
    let input = tmp.path().join("g.edges.tsv");
    let mut tsv = String::new();
    // The last 500 lines repeat earlier ones: duplicates.
    for i in (0..3000u64).chain(100..600) {
        let (s, t) = (i * 7 % 211, i * 13 % 199);
        tsv.push_str(&format!("n{s}\tn{t}\tt{}\n", i % 3));
    }
    std::fs::write(&input, tsv).unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let file = input.to_str().unwrap();
    let out_a = ok(&["import", "--db", &db_arg(&a), "--timestamp", "1", file]);
    let (code, out_b, err_b) = hopgraph(&[
        "import",
        "--db",
        &db_arg(&b),
        "--timestamp",
        "1",
        "--memory-limit",
        "16KiB",
        "--progress-every-ms",
        "1",
        file,
    ]);
    assert_eq!(code, 0, "{err_b}");
    let summary = |out: &str| out.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(summary(&out_a), summary(&out_b));
    assert!(out_b.contains("duplicate edges skipped: 500"), "{out_b}");
    assert!(err_b.contains("spill runs"), "{err_b}");
    assert!(err_b.contains("merge in-CSR"), "{err_b}");
    let (sa, sb) = (segments_without_id(&a), segments_without_id(&b));
    assert_eq!(sa.len(), 1);
    assert!(sa == sb, "the spilled import wrote other bytes");
    let leftovers: Vec<_> = std::fs::read_dir(&b)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("bulk-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let (code, _, err) = hopgraph(&[
        "import",
        "--db",
        &db_arg(&b),
        "--memory-limit",
        "4 lots",
        file,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("size unit"), "{err}");
}

#[test]
fn import_csv_with_quotes_and_auto_detection() {
    let tmp = tempdir();
    let db = tmp.path().join("db");
    ok(&[
        "import",
        "--db",
        &db_arg(&db),
        fixture("edges.csv").to_str().unwrap(),
    ]);
    assert_eq!(
        edges_of(&db),
        vec![
            triple("a,1", "caused_by", "b"),
            triple("b", "related_to", "say \"hi\""),
        ]
    );
}

#[test]
fn bad_line_fails_the_whole_import_and_commits_nothing() {
    let tmp = tempdir();
    let db = tmp.path().join("db");
    let good = tmp.path().join("good.tsv");
    std::fs::write(&good, "x\ty\tcaused_by\n").unwrap();
    ok(&["import", "--db", &db_arg(&db), good.to_str().unwrap()]);
    let before = edges_of(&db);

    // Several files: the good lines of the first and of the bad file are not imported.
    let other = tmp.path().join("other.tsv");
    std::fs::write(&other, "p\tq\trelated_to\n").unwrap();
    let bad = fixture("bad.tsv");
    let err = fails(
        5,
        &[
            "import",
            "--db",
            &db_arg(&db),
            other.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
    );
    assert!(err.contains("bad.tsv:4:"), "{err}");
    assert!(
        err.contains("expected 3 or 4 tab-separated fields"),
        "{err}"
    );
    assert!(err.contains("nothing was imported"), "{err}");
    assert_eq!(edges_of(&db), before);

    // A failed import does not create a database either.
    let fresh = tmp.path().join("fresh");
    fails(
        5,
        &["import", "--db", &db_arg(&fresh), bad.to_str().unwrap()],
    );
    assert!(!fresh.exists());

    // Nor when the edges read before the bad line were spilled to the database's
    // directory (an eighth of 16 KiB: 205 edges held): the database it created, with the
    // scratch file in it, is removed; an existing one is left as it was, without scratch
    // files.
    let many = tmp.path().join("many.tsv");
    let mut tsv: String = (0..3000).map(|i| format!("a{i}\tb{i}\tt\n")).collect();
    tsv.push_str("a bad line\n");
    std::fs::write(&many, tsv).unwrap();
    let nested = tmp.path().join("new").join("db");
    for dir in [&nested, &db] {
        let err = fails(
            5,
            &[
                "import",
                "--db",
                &db_arg(dir),
                "--memory-limit",
                "16KiB",
                many.to_str().unwrap(),
            ],
        );
        assert!(err.contains("many.tsv:3001:"), "{err}");
    }
    assert!(!tmp.path().join("new").exists());
    assert_eq!(edges_of(&db), before);
    let leftovers: Vec<_> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("bulk-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn skip_invalid_imports_the_rest_and_counts_reasons() {
    let tmp = tempdir();
    let db = tmp.path().join("db");
    let (code, out, err) = hopgraph(&[
        "import",
        "--db",
        &db_arg(&db),
        "--skip-invalid",
        fixture("bad.tsv").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("invalid lines skipped: 4"), "{out}");
    assert!(err.contains("skipped 4 invalid lines"), "{err}");
    assert!(err.contains("2  wrong number of fields"), "{err}");
    assert!(err.contains("1  bad weight"), "{err}");
    assert!(err.contains("1  empty field"), "{err}");
    assert!(
        err.contains("bad.tsv:5: weight \"NaN\" is not a finite number"),
        "{err}"
    );
    assert_eq!(
        edges_of(&db),
        vec![triple("a", "caused_by", "b"), triple("b", "caused_by", "c")]
    );
}

#[test]
fn import_server_memory_and_aim() {
    let tmp = tempdir();
    let db = tmp.path().join("db");
    ok(&[
        "import",
        "--db",
        &db_arg(&db),
        fixture("server-memory.json").to_str().unwrap(),
        fixture("aim.jsonl").to_str().unwrap(),
    ]);
    let handle = read_only(&db);
    let snap = handle.snapshot();
    let john = snap.node_by_key("John_Smith").unwrap().unwrap();
    assert_eq!(john.props.kind, "person");
    assert_eq!(john.props.title, "John_Smith");
    assert_eq!(
        john.props.props["observations"],
        serde_json::json!(["Speaks fluent Spanish", "Graduated in 2019"])
    );
    // Alice is first named by a relation, then defined by the AIM file.
    let alice = snap.node_by_key("Alice").unwrap().unwrap();
    assert_eq!(alice.props.kind, "person");
    assert_eq!(
        edge_list(&snap),
        vec![
            triple("Alice", "manages", "Q4_Project"),
            triple("John_Smith", "knows", "Alice"),
            triple("John_Smith", "works_at", "Anthropic"),
        ]
    );

    // And back out in the same shape.
    let out = ok(&["export", "--db", &db_arg(&db), "--format", "server-memory"]);
    assert!(out.lines().any(|l| l
        == r#"{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks fluent Spanish","Graduated in 2019"]}"#));
    assert!(out.lines().any(|l| l
        == r#"{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at"}"#));

    // A relation without relationType names file and line.
    let bad = tmp.path().join("bad.json");
    std::fs::write(
        &bad,
        "{\"type\":\"relation\",\"from\":\"a\",\"to\":\"b\"}\n",
    )
    .unwrap();
    let err = fails(5, &["import", "--db", &db_arg(&db), bad.to_str().unwrap()]);
    assert!(
        err.contains("bad.json:1: a relation line needs \"relationType\""),
        "{err}"
    );
}

/// A database with every kind of property, written through the library.
fn rich_database(dir: &Path) {
    let db = Database::open(dir).unwrap();
    let mut props = Props::new();
    props.insert(
        "source".into(),
        serde_json::json!({"tool": "test", "n": [1, 2]}),
    );
    let mut b = WriteBatch::new();
    b.upsert_node(
        "m1",
        NodeProps {
            kind: "decision".into(),
            title: "Use CSR".into(),
            content: "Because\tof \"locality\"\nand mmap.".into(),
            importance: 0.8,
            status: "active".into(),
            props,
            embedding: Some(vec![0.1, -2.5, 3.0e-7]),
        },
    );
    b.upsert_node("m2", NodeProps::default());
    b.ensure_node("lonely");
    let mut eprops = Props::new();
    eprops.insert("why".into(), "benchmark".into());
    b.link(
        "m1",
        "caused_by",
        "m2",
        EdgeProps {
            weight: 0.3,
            props: eprops,
            ..EdgeProps::default()
        },
    );
    b.link("m2", "related_to", "m1", EdgeProps::default());
    b.link("m2", "related_to", "m2", EdgeProps::default());
    db.commit(b).unwrap();
    db.checkpoint().unwrap();
    // A later change in the WAL, on top of the segment.
    let mut b = WriteBatch::new();
    b.upsert_node("m3", NodeProps::default());
    b.link("m3", "supersedes", "m1", EdgeProps::default());
    b.unlink_triple("m2", "related_to", "m2");
    db.commit(b).unwrap();
}

/// Drops the fields that import assigns anew.
fn without_ids(jsonl: &str) -> Vec<serde_json::Value> {
    jsonl
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            for part in ["node", "edge"] {
                if let Some(o) = v.get_mut(part).and_then(|p| p.as_object_mut()) {
                    o.remove("id");
                    o.remove("created_at");
                    o.remove("updated_at");
                }
            }
            v
        })
        .collect()
}

#[test]
fn jsonl_export_import_round_trip() {
    let tmp = tempdir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    rich_database(&a);
    let file = tmp.path().join("backup.jsonl");
    ok(&[
        "export",
        "--db",
        &db_arg(&a),
        "--out",
        file.to_str().unwrap(),
    ]);
    let first = std::fs::read_to_string(&file).unwrap();
    assert!(first.starts_with("{\"hopgraph\":\"export\",\"version\":1}\n"));
    assert!(first.ends_with("{\"hopgraph\":\"end\",\"nodes\":4,\"edges\":3}\n"));
    ok(&["import", "--db", &db_arg(&b), file.to_str().unwrap()]);
    let second = ok(&["export", "--db", &db_arg(&b)]);
    assert_eq!(without_ids(&first), without_ids(&second));

    // Same graph and same node properties, read through the library.
    assert_eq!(edges_of(&a), edges_of(&b));
    let (sa, sb) = (read_only(&a).snapshot(), read_only(&b).snapshot());
    for key in ["m1", "m2", "m3", "lonely"] {
        let (na, nb) = (
            sa.node_by_key(key).unwrap().unwrap(),
            sb.node_by_key(key).unwrap().unwrap(),
        );
        assert_eq!(na.props, nb.props, "{key}");
    }
    let edge = |s: &hopgraph::Snapshot| {
        let id = s
            .edge_by_triple(
                s.node_id("m1").unwrap(),
                s.type_id("caused_by").unwrap(),
                s.node_id("m2").unwrap(),
            )
            .unwrap();
        let e = s.edge(id).unwrap().unwrap();
        (e.weight, e.props.clone())
    };
    assert_eq!(edge(&sa), edge(&sb));
}

#[test]
fn truncated_jsonl_export_is_refused() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    rich_database(&a);
    let full = ok(&["export", "--db", &db_arg(&a)]);
    let cut: Vec<&str> = full.lines().collect();
    let file = tmp.path().join("cut.jsonl");
    std::fs::write(&file, cut[..cut.len() - 2].join("\n")).unwrap();
    let b = tmp.path().join("b");
    let err = fails(5, &["import", "--db", &db_arg(&b), file.to_str().unwrap()]);
    assert!(err.contains("truncated"), "{err}");
    assert!(!b.exists());
}

#[test]
fn tsv_export_import_round_trip() {
    let tmp = tempdir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    rich_database(&a);
    let tsv = ok(&["export", "--db", &db_arg(&a), "--format", "tsv"]);
    assert!(tsv.contains("m1\tm2\tcaused_by\t0.3\n"), "{tsv}");
    let file = tmp.path().join("edges.tsv");
    std::fs::write(&file, &tsv).unwrap();
    ok(&["import", "--db", &db_arg(&b), file.to_str().unwrap()]);
    assert_eq!(edges_of(&a), edges_of(&b));
    assert_eq!(ok(&["export", "--db", &db_arg(&b), "--format", "tsv"]), tsv);
}

#[test]
fn sample_graph_round_trips_through_tsv() {
    let tmp = tempdir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let sample = sample("edges.tsv");
    ok(&["import", "--db", &db_arg(&a), sample.to_str().unwrap()]);
    let file = tmp.path().join("again.tsv");
    ok(&[
        "export",
        "--db",
        &db_arg(&a),
        "--format",
        "tsv",
        "--out",
        file.to_str().unwrap(),
    ]);
    ok(&["import", "--db", &db_arg(&b), file.to_str().unwrap()]);
    let edges = edges_of(&a);
    assert!(edges.len() > 7000);
    assert_eq!(edges, edges_of(&b));
    let mut input: Vec<String> = std::fs::read_to_string(&sample)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let mut output: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    input.sort();
    output.sort();
    assert_eq!(input, output);
}

#[test]
fn unlink_removes_listed_edges_atomically_and_reports_missing() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    rich_database(&a);
    let list = tmp.path().join("gone.tsv");
    std::fs::write(
        &list,
        "m1\tm2\tcaused_by\t0.3\nm2\tm1\trelated_to\nm1\tnobody\tcaused_by\n",
    )
    .unwrap();
    let (code, out, err) = hopgraph(&["unlink", "--db", &db_arg(&a), list.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("removed 2 edges; 1 listed edges did not exist"),
        "{out}"
    );
    assert!(err.contains("gone.tsv:3: m1 -caused_by-> nobody"), "{err}");
    assert_eq!(edges_of(&a), vec![triple("m3", "supersedes", "m1")]);

    // A malformed line removes nothing.
    let bad = tmp.path().join("bad.tsv");
    std::fs::write(&bad, "m3\tm1\tsupersedes\nm3\tm1\n").unwrap();
    let err = fails(5, &["unlink", "--db", &db_arg(&a), bad.to_str().unwrap()]);
    assert!(err.contains("bad.tsv:2:"), "{err}");
    assert!(err.contains("nothing was removed"), "{err}");
    assert_eq!(edges_of(&a), vec![triple("m3", "supersedes", "m1")]);
}

#[test]
fn stats_checkpoint_compact() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    rich_database(&a);
    let db = db_arg(&a);
    let out = ok(&["stats", "--db", &db]);
    assert!(out.contains("nodes            4"), "{out}");
    assert!(out.contains("edges            3"), "{out}");
    assert!(out.contains("  caused_by   1"), "{out}");
    assert!(out.contains("replayed 1 WAL records"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["stats", "--db", &db, "--json"])).unwrap();
    assert_eq!(json["nodes"], 4);
    assert_eq!(json["edges"], 3);
    assert_eq!(json["segments"].as_array().unwrap().len(), 1);
    let at = json["last_checkpoint_at"].as_str().unwrap();
    assert!(at.len() == 24 && at.ends_with('Z'), "RFC 3339: {at}");
    assert_eq!(json["verified"], true);
    assert!(json["damage"].is_null());
    assert!(out.contains("integrity        ok"), "{out}");
    assert_eq!(json["recovery"]["wal_records_replayed"], 1);

    assert!(ok(&["checkpoint", "--db", &db]).contains("checkpointed through LSN 2"));
    assert!(ok(&["checkpoint", "--db", &db]).contains("nothing to checkpoint"));
    assert!(ok(&["compact", "--db", &db]).contains("compacted 2 segments"));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["stats", "--db", &db, "--json"])).unwrap();
    assert_eq!(json["segments"].as_array().unwrap().len(), 1);
    assert_eq!(json["edges"], 3);
    ok(&["check", "--db", &db]);
}

fn files_named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

/// Flips bits of one byte in place (segment files are read-only: make it writable first).
fn flip_byte(path: &Path, offset: usize) {
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    #[allow(
        clippy::permissions_set_readonly_false,
        reason = "a test damaging a file"
    )]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

/// Replaces the files of `dir` with copies of those in `from`.
fn copy_files(from: &Path, dir: &Path) {
    for f in std::fs::read_dir(from).unwrap() {
        let f = f.unwrap().path();
        let to = dir.join(f.file_name().unwrap());
        let _ = std::fs::remove_file(&to);
        std::fs::copy(&f, &to).unwrap();
    }
}

#[test]
fn check_reports_a_damaged_segment_or_manifest() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    rich_database(&a);
    ok(&["checkpoint", "--db", &db_arg(&a)]);
    assert!(ok(&["check", "--db", &db_arg(&a)]).starts_with("ok: 2 segments"));
    let deep = ok(&["check", "--db", &db_arg(&a), "--deep"]);
    assert!(deep.starts_with("ok: 2 segments"), "{deep}");
    assert!(
        deep.contains("text indexes of 2 segments rebuilt from"),
        "{deep}"
    );
    let pristine = tmp.path().join("pristine");
    std::fs::create_dir(&pristine).unwrap();
    copy_files(&a, &pristine);
    let before = ok(&["export", "--db", &db_arg(&a)]);

    // A flipped byte is either found by check, which names the file, or harmless (alignment
    // padding that nothing reads): then every node and edge reads back the same.
    let seg = files_named(&a, "seg-").pop().unwrap();
    let len = std::fs::read(&seg).unwrap().len();
    let mut offsets: Vec<usize> = (0..len).step_by(len / 16 + 1).collect();
    offsets.extend([8, 20, len / 2, len - 1]);
    let mut detected = 0;
    for &offset in &offsets {
        copy_files(&pristine, &a);
        flip_byte(&seg, offset);
        let (code, out, err) = hopgraph(&["check", "--db", &db_arg(&a)]);
        if code == 0 {
            assert_eq!(
                ok(&["export", "--db", &db_arg(&a)]),
                before,
                "offset {offset}: {out}"
            );
            continue;
        }
        detected += 1;
        assert_eq!(code, 3, "offset {offset}: {err}");
        assert!(err.starts_with("error: check failed: "), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(seg.to_str().unwrap()),
            "offset {offset}: {err}"
        );
    }
    assert!(detected >= offsets.len() - 2, "{detected} of {offsets:?}");

    let manifest = a.join("MANIFEST");
    let len = std::fs::read(&manifest).unwrap().len();
    for offset in [0, 9, 20, len / 2, len - 1] {
        copy_files(&pristine, &a);
        flip_byte(&manifest, offset);
        let err = fails(3, &["check", "--db", &db_arg(&a)]);
        assert!(err.contains("MANIFEST"), "offset {offset}: {err}");
    }
    copy_files(&pristine, &a);
    ok(&["check", "--db", &db_arg(&a)]);
}

#[test]
fn exit_codes_and_one_line_errors() {
    let tmp = tempdir();
    let missing = tmp.path().join("missing");
    let err = fails(1, &["stats", "--db", &db_arg(&missing)]);
    assert!(
        err.contains("no hopgraph database here") && err.contains("missing"),
        "{err}"
    );
    assert!(!missing.exists());
    fails(1, &["check", "--db", &db_arg(&missing)]);
    fails(1, &["export", "--db", &db_arg(&missing)]);
    let err = fails(
        4,
        &["import", "--db", &db_arg(&missing), "no-such-file.tsv"],
    );
    assert!(err.contains("cannot open no-such-file.tsv"), "{err}");

    // A directory that holds something else is not taken over.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let err = fails(
        5,
        &[
            "import",
            "--db",
            &db_arg(&other),
            fixture("edges.csv").to_str().unwrap(),
        ],
    );
    assert!(err.contains("holds no hopgraph database"), "{err}");

    // Usage errors exit 2; help exits 0 and teaches with examples.
    assert_eq!(hopgraph(&["frobnicate"]).0, 2);
    assert_eq!(hopgraph(&["import", "--db", "x"]).0, 2);
    assert_eq!(hopgraph(&["export", "--db", "x", "--format", "xml"]).0, 2);
    let help = ok(&["--help"]);
    assert!(help.contains("Exit codes:"), "{help}");
    for cmd in [
        "import",
        "export",
        "unlink",
        "stats",
        "check",
        "checkpoint",
        "compact",
        "path",
        "neighbors",
        "expand",
        "traverse",
    ] {
        let help = ok(&[cmd, "--help"]);
        assert!(help.contains("Examples:"), "{cmd}: {help}");
    }
}

/// a -caused_by-> b -caused_by-> c, a -supersedes-> d -related_to-> c, with titles.
fn known_graph(dir: &Path) {
    let db = Database::open(dir).unwrap();
    let mut b = WriteBatch::new();
    for (key, title) in [
        ("a", "Alpha"),
        ("b", "Beta"),
        ("c", "Gamma"),
        ("d", "Delta"),
    ] {
        b.upsert_node(
            key,
            NodeProps {
                title: title.into(),
                ..NodeProps::default()
            },
        );
    }
    for (s, t, d) in [
        ("a", "caused_by", "b"),
        ("b", "caused_by", "c"),
        ("a", "supersedes", "d"),
        ("d", "related_to", "c"),
    ] {
        b.link(s, t, d, EdgeProps::default());
    }
    db.commit(b).unwrap();
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn path_answers_on_a_known_graph() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    known_graph(&a);
    let db = db_arg(&a);
    let text = ok(&["path", "--db", &db, "a", "c", "--types", "caused_by"]);
    assert_eq!(
        text,
        "a \"Alpha\" → caused_by → b \"Beta\" → caused_by → c \"Gamma\"\n"
    );
    let text = ok(&["path", "--db", &db, "c", "a", "--types", "caused_by"]);
    assert_eq!(
        text,
        "c \"Gamma\" ← caused_by ← b \"Beta\" ← caused_by ← a \"Alpha\"\n"
    );

    let r = json(&ok(&[
        "path",
        "--db",
        &db,
        "a",
        "c",
        "--types",
        "related_to,supersedes",
        "--json",
    ]));
    assert_eq!(r["found"], true);
    assert_eq!(r["hops"], 2);
    assert_eq!(r["path"][1]["id"], "d");
    assert_eq!(r["path"][1]["direction_to_next"], "forward");

    let r = json(&ok(&["path", "--db", &db, "a", "c", "--all", "--json"]));
    assert_eq!(r["paths"].as_array().unwrap().len(), 2);

    let r = json(&no_path(&[
        "path",
        "--db",
        &db,
        "c",
        "a",
        "--direction",
        "out",
        "--json",
    ]));
    assert_eq!(r["found"], false);
    assert_eq!(r["message"], "No path from c to a within 10 hops");
    assert_eq!(
        no_path(&["path", "--db", &db, "zz", "a"]),
        "Unknown memory id: zz\n"
    );

    let r = json(&no_path(&[
        "path",
        "--db",
        &db,
        "a",
        "c",
        "--visited-max",
        "1",
        "--json",
    ]));
    assert_eq!(r["found"], false);
    assert_eq!(r["limit_reached"], true);
    assert!(r["message"].as_str().unwrap().contains("budget"), "{r}");
}

#[test]
fn path_pairs_batch() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    known_graph(&a);
    let pairs = tmp.path().join("pairs.tsv");
    std::fs::write(&pairs, "from\tto\n# comment\na\tc\nc\ta\nzz\ta\n").unwrap();
    let db = db_arg(&a);
    let batch = |extra: &[&str]| {
        let mut args = vec!["path", "--db", &db, "--pairs", pairs.to_str().unwrap()];
        args.extend(["--direction", "out"]);
        args.extend(extra);
        hopgraph(&args)
    };
    let (code, out, err) = batch(&[]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(json).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        (&lines[0]["from"], &lines[0]["to"]),
        (&"a".into(), &"c".into())
    );
    assert_eq!(lines[0]["found"], true);
    assert_eq!(lines[0]["hops"], 2);
    assert_eq!(lines[1]["found"], false);
    assert_eq!(lines[2]["found"], false);
    assert_eq!(lines[2]["message"], "Unknown memory id: zz");
    assert!(
        err.starts_with("pairs: 3, found: 1, limit reached: 0, latency first "),
        "{err}"
    );
    assert!(err.contains(" p99 ") && err.contains("total "), "{err}");
    assert!(!err.contains("warmed"), "{err}");

    // --warm prefaults the database first: the same answers, and the summary says so.
    let (code, warm_out, err) = batch(&["--warm"]);
    assert_eq!((code, warm_out.as_str()), (0, out.as_str()), "{err}");
    assert!(
        err.contains(", warmed ") && err.contains(" MiB in "),
        "{err}"
    );
    // `--pairs -` reads the pairs from standard input: the same answers.
    let (code, stdin_out, err) = hopgraph_stdin(
        &["path", "--db", &db, "--pairs", "-", "--direction", "out"],
        "from\tto\n# comment\na\tc\nc\ta\nzz\ta\n",
    );
    assert_eq!((code, stdin_out.as_str()), (0, out.as_str()), "{err}");
    // It only means something with --pairs.
    let (code, out, err) = hopgraph(&["path", "--db", &db, "a", "c", "--warm"]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("--warm goes with --pairs"), "{err}");

    // A malformed pair fails before any answer is printed.
    std::fs::write(&pairs, "a\tc\na\tb\tc\n").unwrap();
    let (code, out, err) = batch(&[]);
    assert_eq!((code, out.as_str()), (5, ""), "{err}");
    assert!(
        err.contains("pairs.tsv:2: expected two non-empty tab-separated keys"),
        "{err}"
    );
}

#[test]
fn neighbors_expand_traverse_on_a_known_graph() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    known_graph(&a);
    let db = db_arg(&a);
    assert_eq!(
        ok(&["neighbors", "--db", &db, "b"]),
        "← caused_by ← a \"Alpha\"\n→ caused_by → c \"Gamma\"\n"
    );
    let r = json(&ok(&[
        "neighbors",
        "--db",
        &db,
        "c",
        "--type",
        "related_to",
        "--json",
    ]));
    assert_eq!(r["results"].as_array().unwrap().len(), 1);
    assert_eq!(r["results"][0]["memory_id"], "d");
    assert_eq!(r["results"][0]["direction"], "incoming");
    let err = fails(1, &["neighbors", "--db", &db, "zz"]);
    assert!(err.contains("unknown node key: zz"), "{err}");

    let r = json(&ok(&[
        "expand", "--db", &db, "a", "nope", "--hops", "2", "--json",
    ]));
    let docs: Vec<(&str, u64)> = r["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["doc_id"].as_str().unwrap(),
                d["via"]["hop"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(docs, vec![("b", 1), ("d", 1), ("c", 2)]);
    assert_eq!(r["warnings"][0]["seed_doc_id"], "nope");
    let text = ok(&[
        "expand",
        "--db",
        &db,
        "c",
        "--direction",
        "backward",
        "--route",
    ]);
    assert!(
        text.contains("hop 1  b \"Beta\"  via c ← caused_by ← b"),
        "{text}"
    );

    let r = json(&ok(&[
        "traverse",
        "--db",
        &db,
        "a",
        "--max-depth",
        "1",
        "--json",
    ]));
    let reached: Vec<&str> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["memory_id"].as_str().unwrap())
        .collect();
    assert_eq!(reached, vec!["b", "d"]);
    let text = ok(&["traverse", "--db", &db, "c", "--types", "caused_by"]);
    assert_eq!(
        text,
        "depth 1  via ← caused_by  b \"Beta\"\ndepth 2  via ← caused_by ← caused_by  a \"Alpha\"\n"
    );
}

/// `-` imports standard input, together with files; it needs --format and can be named
/// only once, and a refused import creates nothing.
#[test]
fn import_reads_standard_input() {
    let tmp = tempdir();
    let file = tmp.path().join("more.tsv");
    std::fs::write(&file, "c\td\tcaused_by\n").unwrap();
    let db = tmp.path().join("db");
    let (code, out, err) = hopgraph_stdin(
        &[
            "import",
            "--db",
            &db_arg(&db),
            "--format",
            "tsv",
            "-",
            file.to_str().unwrap(),
        ],
        "a\tb\tcaused_by\nb\tc\trelated_to\n",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("imported 2 files"), "{out}");
    assert_eq!(
        edges_of(&db),
        vec![
            triple("a", "caused_by", "b"),
            triple("b", "related_to", "c"),
            triple("c", "caused_by", "d"),
        ]
    );

    let fresh = tmp.path().join("fresh");
    let (code, _, err) = hopgraph_stdin(&["import", "--db", &db_arg(&fresh), "-"], "x\ty\tt\n");
    assert_ne!(code, 0);
    assert!(err.contains("needs --format"), "{err}");
    let (code, _, err) = hopgraph_stdin(
        &[
            "import",
            "--db",
            &db_arg(&fresh),
            "--format",
            "tsv",
            "-",
            "-",
        ],
        "x\ty\tt\n",
    );
    assert_ne!(code, 0);
    assert!(err.contains("can be read only once"), "{err}");
    assert!(!fresh.exists(), "a refused import created the database");
    // A bad line on standard input is reported with its line number, as for a file.
    let (code, _, err) = hopgraph_stdin(
        &["import", "--db", &db_arg(&fresh), "--format", "tsv", "-"],
        "x\ty\tt\nonly-one-field\n",
    );
    assert_ne!(code, 0);
    assert!(err.contains("error: -:2: expected 3 or 4"), "{err}");
}

/// `search` finds imported (bulk-loaded) observations by inflected, re-cased words, in
/// text and JSON, with the type filter applied.
#[test]
fn search_finds_imported_observations() {
    let tmp = tempdir();
    let db = tmp.path().join("db");
    ok(&[
        "import",
        "--db",
        &db_arg(&db),
        fixture("server-memory.json").to_str().unwrap(),
        fixture("aim.jsonl").to_str().unwrap(),
    ]);
    let out = ok(&["search", "--db", &db_arg(&db), "SPANISH speaker"]);
    let first = out.lines().next().unwrap();
    assert!(
        first.contains("John_Smith") && first.contains("[observations]"),
        "{out}"
    );
    assert!(first.contains("Speaks fluent Spanish"), "{out}");
    let json = ok(&[
        "search",
        "--db",
        &db_arg(&db),
        "manages",
        "--json",
        "--kind",
        "person",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["results"][0]["id"], "Alice", "{json}");
    assert_eq!(v["results"][0]["field"], "observations");
    let none = ok(&[
        "search",
        "--db",
        &db_arg(&db),
        "manages",
        "--kind",
        "project",
    ]);
    assert!(none.trim().is_empty(), "{none}");
    let err = fails(5, &["search", "--db", &db_arg(&db), "   "]);
    assert!(err.contains("query"), "{err}");
}

/// `search --near ID --max-hops N`: only nodes within the hops (both directions), each
/// with its hop count; an unknown id is an invalid-input error naming it.
#[test]
fn search_near_keeps_to_the_hops() {
    let tmp = tempdir();
    let db = tmp.path().join("db");
    let input = tmp.path().join("g.jsonl");
    std::fs::write(
        &input,
        [
            r#"{"node":{"key":"a","content":"deploy one"}}"#,
            r#"{"node":{"key":"b","content":"deploy two"}}"#,
            r#"{"node":{"key":"c","content":"deploy three"}}"#,
            r#"{"edge":{"source":"a","target":"b","type":"next"}}"#,
            r#"{"edge":{"source":"b","target":"c","type":"next"}}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    ok(&["import", "--db", &db_arg(&db), input.to_str().unwrap()]);
    let json = ok(&[
        "search",
        "--db",
        &db_arg(&db),
        "deploy",
        "--near",
        "c",
        "--max-hops",
        "1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let got: Vec<(&str, u64)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["id"].as_str().unwrap(), h["hops"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, [("c", 0), ("b", 1)], "{json}");
    let text = ok(&["search", "--db", &db_arg(&db), "deploy", "--near", "a"]);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.lines().next().unwrap().contains("(0 hops)"), "{text}");
    let err = fails(
        5,
        &["search", "--db", &db_arg(&db), "deploy", "--near", "zz"],
    );
    assert!(err.contains("\"zz\""), "{err}");
    let err = fails(
        5,
        &["search", "--db", &db_arg(&db), "deploy", "--max-hops", "2"],
    );
    assert!(err.contains("needs `near`"), "{err}");
}

/// One table of exit codes, the same kind of failure giving the same code in every command.
#[test]
fn every_exit_code_of_the_table() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    let edges = tmp.path().join("e.tsv");
    std::fs::write(&edges, "a\tb\tcauses\nb\tc\tcauses\nc\td\trel\n").unwrap();
    let db = db_arg(&a);
    ok(&["import", "--db", &db, edges.to_str().unwrap()]);
    // 0 and 1: found and not found.
    ok(&["get", "--db", &db, "a"]);
    let err = fails(1, &["get", "--db", &db, "zz"]);
    assert!(err.contains("unknown node key: zz"), "{err}");
    fails(1, &["neighbors", "--db", &db, "zz"]);
    fails(1, &["traverse", "--db", &db, "zz"]);
    fails(1, &["add", "--db", &db, "edge", "a", "causes", "nobody"]);
    no_path(&["path", "--db", &db, "d", "a", "--direction", "out"]);
    fails(1, &["stats", "--db", &db_arg(&tmp.path().join("none"))]);
    // 2: usage, from the parser and from checks it cannot make.
    assert_eq!(hopgraph(&["get", "--db", &db]).0, 2);
    assert_eq!(hopgraph(&["neighbors", "--db", &db, "a", "--bogus"]).0, 2);
    assert_eq!(hopgraph(&["path", "--db", &db, "a", "b", "--warm"]).0, 2);
    // 4: a file that cannot be read or written.
    fails(4, &["import", "--db", &db, "no-such-file.tsv"]);
    let out = tmp.path().join("no-dir/x.jsonl");
    fails(4, &["export", "--db", &db, "--out", out.to_str().unwrap()]);
    // 5: input refused.
    ok(&["add", "--db", &db, "node", "x", "--title", "X"]);
    fails(5, &["add", "--db", &db, "node", "x"]);
    let bad = tmp.path().join("bad.tsv");
    std::fs::write(&bad, "a\tb\n").unwrap();
    fails(5, &["import", "--db", &db, bad.to_str().unwrap()]);
    // 3: a damaged file, for a query as for `check`.
    let manifest = a.join("MANIFEST");
    let mut bytes = std::fs::read(&manifest).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&manifest, bytes).unwrap();
    fails(3, &["get", "--db", &db, "a"]);
    fails(3, &["check", "--db", &db]);
    // The help states the table.
    let help = ok(&["--help"]);
    for line in [
        "1  not found",
        "2  usage",
        "3  corrupt database",
        "4  I/O error",
        "5  invalid input",
    ] {
        assert!(help.contains(line), "{line}: {help}");
    }
}

/// `--type` (repeated or comma-separated) and `--max-hops` in every command; the old
/// spellings still work and mean the same.
#[test]
fn one_vocabulary_with_old_spellings_as_aliases() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    let edges = tmp.path().join("e.tsv");
    std::fs::write(
        &edges,
        "a\tb\tcauses\nb\tc\tcauses\nc\td\trel\na\te\tother\n",
    )
    .unwrap();
    let db = db_arg(&a);
    ok(&["import", "--db", &db, edges.to_str().unwrap()]);
    let same = |new: &[&str], old: &[&str]| {
        let (n, o) = (ok(new), ok(old));
        assert_eq!(n, o, "{new:?} vs {old:?}");
        n
    };
    let t = same(
        &[
            "traverse",
            "--db",
            &db,
            "a",
            "--max-hops",
            "5",
            "--type",
            "causes",
            "--type",
            "rel",
            "--json",
        ],
        &[
            "traverse",
            "--db",
            &db,
            "a",
            "--max-depth",
            "5",
            "--types",
            "causes,rel",
            "--json",
        ],
    );
    let t = json(&t);
    let reached: Vec<&str> = t["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory_id"].as_str().unwrap())
        .collect();
    assert_eq!(reached, ["b", "c", "d"]);
    let e = same(
        &[
            "expand",
            "--db",
            &db,
            "a",
            "--max-hops",
            "2",
            "--type",
            "causes",
            "--json",
        ],
        &[
            "expand", "--db", &db, "a", "--hops", "2", "--types", "causes", "--json",
        ],
    );
    assert_eq!(json(&e)["documents"].as_array().unwrap().len(), 2);
    same(
        &[
            "path",
            "--db",
            &db,
            "a",
            "d",
            "--max-hops",
            "3",
            "--type",
            "causes,rel",
        ],
        &[
            "path",
            "--db",
            &db,
            "a",
            "d",
            "--max-hops",
            "3",
            "--types",
            "causes",
            "--types",
            "rel",
        ],
    );
    let n = json(&ok(&[
        "neighbors",
        "--db",
        &db,
        "a",
        "--type",
        "causes,other",
        "--json",
    ]));
    let mut got: Vec<&str> = n["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory_id"].as_str().unwrap())
        .collect();
    got.sort_unstable();
    assert_eq!(got, ["b", "e"]);
}

/// `get` shows a node with its properties and edge counts; `add` writes one node or edge.
#[test]
fn get_and_add() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    let edges = tmp.path().join("e.tsv");
    std::fs::write(&edges, "a\tb\tcauses\n").unwrap();
    let db = db_arg(&a);
    ok(&["import", "--db", &db, edges.to_str().unwrap()]);
    let out = ok(&[
        "add",
        "--db",
        &db,
        "node",
        "m",
        "--title",
        "T",
        "--kind",
        "decision",
        "--content",
        "body text",
        "--props",
        "{\"x\":1}",
    ]);
    assert_eq!(out, "created node m\n");
    let out = ok(&["add", "--db", &db, "edge", "m", "causes", "a"]);
    assert_eq!(out, "created edge m -causes-> a\n");
    let out = ok(&["add", "--db", &db, "edge", "m", "causes", "a"]);
    assert!(out.starts_with("exists already"), "{out}");
    let r = json(&ok(&[
        "add",
        "--db",
        &db,
        "edge",
        "n1",
        "rel",
        "n2",
        "--create-missing",
        "--json",
    ]));
    assert_eq!(r["created"], true);
    let g = json(&ok(&["get", "--db", &db, "m", "--json"]));
    assert_eq!(g["key"], "m");
    assert_eq!(g["title"], "T");
    assert_eq!(g["kind"], "decision");
    assert_eq!(g["content"], "body text");
    assert_eq!(g["props"]["x"], 1);
    assert_eq!(g["edges"]["out"], 1);
    assert_eq!(g["edges"]["in"], 0);
    let g = json(&ok(&["get", "--db", &db, "a", "--json"]));
    assert_eq!(
        (g["edges"]["out"].clone(), g["edges"]["in"].clone()),
        (1.into(), 1.into())
    );
    assert_eq!(g["edges"]["by_type"][0]["type"], "causes");
    let text = ok(&["get", "--db", &db, "m"]);
    assert!(
        text.contains("title       T") && text.contains("body text"),
        "{text}"
    );
    ok(&[
        "add",
        "--db",
        &db,
        "node",
        "m",
        "--title",
        "T2",
        "--replace",
    ]);
    assert_eq!(
        json(&ok(&["get", "--db", &db, "m", "--json"]))["title"],
        "T2"
    );
    ok(&["get", "--db", &db, "n2"]);
}

/// Unknown JSON fields are refused with line and column, or skipped and counted with
/// `--lenient`; a header without its end line says what is wrong.
#[test]
fn unknown_jsonl_fields_and_a_header_without_end() {
    let tmp = tempdir();
    let db = db_arg(&tmp.path().join("a"));
    let file = tmp.path().join("x.jsonl");
    std::fs::write(
        &file,
        "{\"node\":{\"key\":\"a\",\"title\":\"A\"}}\n\
         {\"node\":{\"key\":\"b\",\"titel\":\"B\"}}\n\
         {\"edge\":{\"source\":\"a\",\"target\":\"b\",\"type\":\"t\",\"colour\":\"red\"},\"extra\":1}\n",
    )
    .unwrap();
    let err = fails(5, &["import", "--db", &db, file.to_str().unwrap()]);
    assert!(err.contains("x.jsonl:2: column "), "{err}");
    assert!(err.contains("unknown field `titel`"), "{err}");
    assert!(err.contains("--lenient"), "{err}");
    let out = ok(&["import", "--db", &db, "--lenient", file.to_str().unwrap()]);
    assert!(out.contains("unknown fields skipped: 3"), "{out}");
    assert!(out.contains("edges created: 1"), "{out}");

    let mem = tmp.path().join("m.json");
    std::fs::write(
        &mem,
        "{\"type\":\"entity\",\"name\":\"n\",\"entityType\":\"p\",\"observations\":[],\"mood\":1}\n",
    )
    .unwrap();
    let err = fails(
        5,
        &[
            "import",
            "--db",
            &db,
            "--format",
            "server-memory",
            mem.to_str().unwrap(),
        ],
    );
    assert!(
        err.contains("m.json:1: column ") && err.contains("`mood`"),
        "{err}"
    );

    let headed = tmp.path().join("h.jsonl");
    std::fs::write(
        &headed,
        "{\"hopgraph\":\"export\",\"version\":1}\n{\"node\":{\"key\":\"z\"}}\n",
    )
    .unwrap();
    let err = fails(5, &["import", "--db", &db, headed.to_str().unwrap()]);
    assert!(err.contains("line 1 is an export header"), "{err}");
    assert!(err.contains("ends at line 2 without one"), "{err}");
    assert!(err.contains("{\"hopgraph\":\"end\"}"), "{err}");
}

/// Every format import reads comes back out of export and imports to the same graph;
/// server-memory keeps node content (as an observation).
#[test]
fn export_import_round_trips_per_format() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    rich_database(&a);
    let db = db_arg(&a);
    for (format, ext) in [
        ("jsonl", "jsonl"),
        ("tsv", "tsv"),
        ("csv", "csv"),
        ("server-memory", "json"),
    ] {
        let file = tmp.path().join(format!("out.{ext}"));
        let b = tmp.path().join(format!("b-{format}"));
        ok(&[
            "export",
            "--db",
            &db,
            "--format",
            format,
            "--out",
            file.to_str().unwrap(),
        ]);
        ok(&[
            "import",
            "--db",
            &db_arg(&b),
            "--format",
            format,
            file.to_str().unwrap(),
        ]);
        // Every format keeps the edges (TSV/CSV drop nodes without edges).
        assert_eq!(edges_of(&b), edges_of(&a), "{format}");
        // A second round gives the same file.
        let again = ok(&["export", "--db", &db_arg(&b), "--format", format]);
        if format != "jsonl" {
            let mut x: Vec<String> = std::fs::read_to_string(&file)
                .unwrap()
                .lines()
                .map(String::from)
                .collect();
            let mut y: Vec<String> = again.lines().map(String::from).collect();
            if format == "server-memory" {
                // The title and content of m1 become observations once, then stay.
                let b2 = tmp.path().join("b2");
                let f2 = tmp.path().join("again.json");
                std::fs::write(&f2, &again).unwrap();
                ok(&[
                    "import",
                    "--db",
                    &db_arg(&b2),
                    "--format",
                    format,
                    f2.to_str().unwrap(),
                ]);
                y = ok(&["export", "--db", &db_arg(&b2), "--format", format])
                    .lines()
                    .map(String::from)
                    .collect();
                x = again.lines().map(String::from).collect();
            }
            x.sort();
            y.sort();
            assert_eq!(x, y, "{format}");
        }
    }
    let mem = ok(&["export", "--db", &db, "--format", "server-memory"]);
    let m1 = mem.lines().map(json).find(|l| l["name"] == "m1").unwrap();
    assert_eq!(m1["observations"][0], "Use CSR");
    assert_eq!(m1["observations"][1], "Because\tof \"locality\"\nand mmap.");
    // jsonl is lossless: node content, props and embeddings come back.
    let b = tmp.path().join("b-jsonl");
    let g = json(&ok(&["get", "--db", &db_arg(&b), "m1", "--json"]));
    assert_eq!(g["content"], "Because\tof \"locality\"\nand mmap.");
    assert_eq!(g["props"]["source"]["n"][1], 2);
}

/// A neighborhood as DOT, GraphML and importer CSV tables.
#[test]
fn export_neighborhood_as_dot_graphml_and_tables() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    let edges = tmp.path().join("e.tsv");
    std::fs::write(
        &edges,
        "a\tb\tcauses\nb\tc\tcauses\nc\td\trel\nx\ty\t\"q\"\n",
    )
    .unwrap();
    let db = db_arg(&a);
    ok(&["import", "--db", &db, edges.to_str().unwrap()]);
    let dot = ok(&[
        "export",
        "--db",
        &db,
        "--format",
        "dot",
        "--seed",
        "b",
        "--max-hops",
        "1",
    ]);
    assert!(dot.starts_with("digraph hopgraph {"), "{dot}");
    assert!(
        dot.contains("\"a\" -> \"b\" [label=\"causes\", valid_from=\""),
        "{dot}"
    );
    assert!(
        dot.contains("\"b\" -> \"c\" [label=\"causes\", valid_from=\""),
        "{dot}"
    );
    assert!(!dot.contains("valid_to"), "nothing has ended: {dot}");
    assert!(!dot.contains("\"d\""), "d is two hops away: {dot}");
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    let dot = ok(&["export", "--db", &db, "--format", "dot", "--seed", "x"]);
    assert!(
        dot.contains("[label=\"\\\"q\\\"\", valid_from="),
        "quotes escaped: {dot}"
    );
    let g = ok(&[
        "export",
        "--db",
        &db,
        "--format",
        "graphml",
        "--seed",
        "a",
        "--max-hops",
        "5",
        "--type",
        "causes",
    ]);
    assert!(g.contains("<edge source=\"a\" target=\"b\">"), "{g}");
    assert_eq!(g.matches("<node ").count(), 3, "{g}");
    assert!(g.trim_end().ends_with("</graphml>"), "{g}");
    let g = ok(&["export", "--db", &db, "--format", "graphml", "--seed", "x"]);
    assert!(g.contains("<data key=\"type\">&quot;q&quot;</data>"), "{g}");
    assert!(g.contains("<data key=\"valid_from\">"), "{g}");
    assert!(
        !g.contains("<data key=\"valid_to\">"),
        "nothing has ended: {g}"
    );
    fails(
        1,
        &["export", "--db", &db, "--format", "dot", "--seed", "nobody"],
    );

    let dir = tmp.path().join("tables");
    ok(&[
        "export",
        "--db",
        &db,
        "--format",
        "csv-tables",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let nodes = std::fs::read_to_string(dir.join("nodes.csv")).unwrap();
    let edges = std::fs::read_to_string(dir.join("edges.csv")).unwrap();
    assert_eq!(
        nodes.lines().next(),
        Some(
            "key:ID,kind,title,content,importance:float,status,props,valid_from:datetime,\
             valid_to:datetime"
        )
    );
    assert_eq!(nodes.lines().count(), 1 + 6);
    assert_eq!(
        edges.lines().next(),
        Some(":START_ID,:END_ID,:TYPE,weight:float,props,valid_from:datetime,valid_to:datetime")
    );
    // The interval last: a start in RFC 3339, an empty end (null) for "never ends".
    assert!(
        edges
            .lines()
            .any(|l| l.starts_with("x,y,\"\"\"q\"\"\",1,{},") && l.ends_with("Z,")),
        "{edges}"
    );
    assert_eq!(
        hopgraph(&["export", "--db", &db, "--format", "csv-tables"]).0,
        2
    );
}

/// `--format graphframes`: GraphFrames' column names over the csv-tables rows, the edge
/// id last, text quoted as RFC 4180 says; without a directory it is a usage error.
#[test]
fn export_graphframes_tables() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    let input = tmp.path().join("in.jsonl");
    std::fs::write(
        &input,
        concat!(
            r#"{"node":{"key":"p","kind":"note","title":" Hé said \"hi\", twice","content":"line 1\nline 2 — ✓","importance":0.5,"props":{"tags":["a,b"]}}}"#,
            "\n",
            r#"{"node":{"key":"q","valid_from":"2024-01-01T00:00:00Z","valid_to":"2024-03-01T00:00:00Z"}}"#,
            "\n",
            r#"{"edge":{"source":"p","target":"q","type":"cites","weight":2.5,"props":{"why":"C:\\dir"},"valid_from":"2024-01-01T00:00:00Z","valid_to":"2024-02-01T00:00:00Z"}}"#,
            "\n",
            r#"{"edge":{"source":"q","target":"p","type":"cites"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let db = db_arg(&a);
    ok(&["import", "--db", &db, input.to_str().unwrap()]);
    let dir = tmp.path().join("gf");
    ok(&[
        "export",
        "--db",
        &db,
        "--format",
        "graphframes",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let v = std::fs::read_to_string(dir.join("vertices.csv")).unwrap();
    let e = std::fs::read_to_string(dir.join("edges.csv")).unwrap();
    // GraphML and DOT carry the intervals too; what has ended is drawn dashed.
    let g = ok(&["export", "--db", &db, "--format", "graphml"]);
    assert!(
        g.contains(
            "<node id=\"q\"><data key=\"valid_from\">2024-01-01T00:00:00.000Z</data>\
             <data key=\"valid_to\">2024-03-01T00:00:00.000Z</data></node>"
        ),
        "{g}"
    );
    assert!(
        g.contains(
            "<data key=\"weight\">2.5</data><data key=\"valid_from\">2024-01-01T00:00:00.000Z\
             </data><data key=\"valid_to\">2024-02-01T00:00:00.000Z</data></edge>"
        ),
        "{g}"
    );
    let dot = ok(&["export", "--db", &db, "--format", "dot"]);
    assert!(
        dot.contains(
            "\"p\" -> \"q\" [label=\"cites\", valid_from=\"2024-01-01T00:00:00.000Z\", \
             valid_to=\"2024-02-01T00:00:00.000Z\", style=dashed];"
        ),
        "{dot}"
    );
    assert_eq!(
        dot.matches("style=dashed").count(),
        2,
        "q and p->q ended: {dot}"
    );
    assert_eq!(
        v.lines().next(),
        Some("id,kind,title,content,importance,status,props,valid_from,valid_to")
    );
    assert_eq!(
        e.lines().next(),
        Some("src,dst,relationship,weight,props,valid_from,valid_to,edge_id")
    );
    // The node with awkward text: quotes doubled, the leading space and the line break
    // kept inside quotes, the empty status quoted (empty text, not null), no end.
    assert!(
        v.contains(
            "p,note,\" Hé said \"\"hi\"\", twice\",\"line 1\nline 2 — ✓\",0.5,\"\",\
             \"{\"\"tags\"\":[\"\"a,b\"\"]}\","
        ),
        "{v}"
    );
    assert!(
        v.contains(",2024-01-01T00:00:00.000Z,2024-03-01T00:00:00.000Z\n"),
        "{v}"
    );
    // Edge ids are those of the lossless export.
    let jsonl = ok(&["export", "--db", &db]);
    let mut ids = Vec::new();
    for line in jsonl.lines() {
        let l = json(line);
        if let Some(id) = l["edge"]["id"].as_u64() {
            ids.push(id);
        }
    }
    assert_eq!(ids.len(), 2, "{jsonl}");
    assert!(
        e.contains(&format!(
            "p,q,cites,2.5,\"{{\"\"why\"\":\"\"C:\\\\dir\"\"}}\",2024-01-01T00:00:00.000Z,\
             2024-02-01T00:00:00.000Z,{}\n",
            ids[0]
        )),
        "{e}"
    );
    assert!(
        e.lines()
            .any(|l| l.starts_with("q,p,cites,1,{},") && l.ends_with(&format!("Z,,{}", ids[1]))),
        "{e}"
    );
    assert_eq!(e.lines().count(), 3, "{e}");

    let err = fails(2, &["export", "--db", &db, "--format", "graphframes"]);
    assert!(
        err.contains("vertices.csv") && err.contains("--out DIR"),
        "{err}"
    );
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = fails(
        2,
        &[
            "export",
            "--db",
            &db,
            "--format",
            "graphframes",
            "--out",
            file.to_str().unwrap(),
        ],
    );
    assert!(err.contains("is a file"), "{err}");
}

/// With stderr not a terminal, import prints plain progress lines (every phase, at most 80
/// columns) and a summary; --quiet prints nothing there.
#[test]
fn import_progress_lines_when_not_a_terminal() {
    let tmp = tempdir();
    let edges = tmp.path().join("e.tsv");
    let mut text = String::new();
    for i in 0..60_000u32 {
        text.push_str(&format!(
            "n{}\tn{}\tt{}\n",
            i % 5000,
            (i * 7 + 1) % 5000,
            i % 3
        ));
    }
    std::fs::write(&edges, text).unwrap();
    let a = tmp.path().join("a");
    let (code, out, err) = hopgraph(&[
        "import",
        "--db",
        &db_arg(&a),
        "--progress-every-ms",
        "1",
        edges.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("edges created: "), "{out}");
    for line in err.lines() {
        assert!(line.chars().count() <= 80, "{line}");
        assert!(
            line.starts_with("import: ") || line.starts_with("  "),
            "{line}"
        );
    }
    assert!(err.lines().any(|l| l.starts_with("import: read ")), "{err}");
    let summary = err
        .lines()
        .position(|l| l.starts_with("import: done in "))
        .expect(&err);
    let summary: String = err.lines().skip(summary).collect();
    for phase in [
        "read",
        "ids",
        "nodes",
        "build out-CSR",
        "build in-CSR",
        "write",
        "fsync",
    ] {
        assert!(summary.contains(&format!("{phase} ")), "{phase}: {summary}");
    }
    let b = tmp.path().join("b");
    let (code, _, err) = hopgraph(&[
        "import",
        "--db",
        &db_arg(&b),
        "--quiet",
        edges.to_str().unwrap(),
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
}

/// Two imports of the same input with a fixed time give the same files, but for the
/// random database id (bytes 16..32 of every file) and the one checksum covering it.
#[test]
fn same_input_same_bytes_but_the_database_id() {
    let tmp = tempdir();
    let edges = tmp.path().join("e.tsv");
    let mut text = String::new();
    for i in 0..20_000u32 {
        let w = if i % 7 == 0 { "\t0.5" } else { "" };
        text.push_str(&format!(
            "k{}\tk{}\tt{}{w}\n",
            i % 3001,
            (i * 13 + 5) % 2999,
            i % 5
        ));
    }
    std::fs::write(&edges, text).unwrap();
    let mem = fixture("server-memory.json");
    let import = |name: &str, extra: &[&str]| {
        let dir = tmp.path().join(name);
        let mut args = vec!["import", "--db", dir.to_str().unwrap(), "-q"];
        args.extend_from_slice(extra);
        args.extend([edges.to_str().unwrap(), mem.to_str().unwrap()]);
        ok(&args);
        dir
    };
    let a = import("a", &["--timestamp", "1700000000000"]);
    let b = import("b", &["--timestamp", "1700000000000"]);
    let mut names: Vec<_> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "LOCK")
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    for name in &names {
        let x = std::fs::read(a.join(name)).unwrap();
        let mut y = std::fs::read(b.join(name)).unwrap();
        assert_eq!(x.len(), y.len(), "{name:?}");
        assert_ne!(x[16..32], y[16..32], "{name:?}: two databases, two ids");
        y[16..32].copy_from_slice(&x[16..32]);
        let diff: Vec<usize> = (0..x.len()).filter(|&i| x[i] != y[i]).collect();
        // What is left is one checksum: at most 4 bytes, within one 4-byte window.
        assert!(
            diff.is_empty() || (diff.len() <= 4 && diff[diff.len() - 1] - diff[0] < 4),
            "{name:?}: {diff:?}"
        );
    }
    // Timestamps are the given time, so exports agree to the byte.
    let ea = ok(&["export", "--db", &db_arg(&a)]);
    assert_eq!(ea, ok(&["export", "--db", &db_arg(&b)]));
    assert!(
        ea.contains("\"created_at\":\"2023-11-14T22:13:20.000Z\""),
        "{ea}"
    );
    // SOURCE_DATE_EPOCH (seconds) does the same.
    let c = tmp.path().join("c");
    let out = Command::new(env!("CARGO_BIN_EXE_hopgraph"))
        .args([
            "import",
            "-q",
            "--db",
            c.to_str().unwrap(),
            edges.to_str().unwrap(),
            mem.to_str().unwrap(),
        ])
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(ok(&["export", "--db", &db_arg(&c)]), ea);
}

/// `reembed` embeds every node that has text with the model (entity and memory texts as
/// the MCP server embeds them), records the model, and refuses what would mix two models
/// or two dimensions.
#[test]
fn reembed_embeds_every_node_with_text_and_records_the_model() {
    use hopgraph_embed::Embedder;
    use hopgraph_embed::tiny_model::TinyModel;
    let tmp = tempdir();
    let model_a = tmp.path().join("model-a");
    TinyModel::default().write(&model_a).unwrap();
    let model_b = tmp.path().join("model-b");
    TinyModel {
        seed: 9,
        ..TinyModel::default()
    }
    .write(&model_b)
    .unwrap();
    let model_wide = tmp.path().join("model-wide");
    TinyModel {
        hidden_size: 48,
        ..TinyModel::default()
    }
    .write(&model_wide)
    .unwrap();
    let a = Embedder::load(&model_a).unwrap();
    let b = Embedder::load(&model_b).unwrap();

    let dir = tmp.path().join("db");
    {
        let db = Database::open(&dir).unwrap();
        let mut batch = WriteBatch::new();
        batch.upsert_node(
            "m1",
            NodeProps {
                title: "cat".into(),
                content: "the cat sat".into(),
                ..Default::default()
            },
        );
        let mut obs = Props::new();
        obs.insert("observations".into(), serde_json::json!(["likes graphs"]));
        batch.upsert_node(
            "alice",
            NodeProps {
                title: "alice".into(),
                kind: "person".into(),
                props: obs,
                ..Default::default()
            },
        );
        batch.ensure_node("bare");
        db.commit(batch).unwrap();
    }
    let m = model_a.to_str().unwrap();
    let d = dir.to_str().unwrap();
    let (code, out, err) = hopgraph(&["reembed", "--db", d, "--model", m, "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("2 nodes embedded") && out.contains("1 without text"),
        "{out}"
    );
    let check = |e: &Embedder, key: &str, text: &str| {
        let db = Database::open_with(&dir, Options::default().read_only(true)).unwrap();
        let node = db.snapshot().node_by_key(key).unwrap().unwrap();
        let got = node.props.embedding.clone().expect("embedded");
        let want = e.embed_one(text).unwrap();
        assert!(
            got.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-5),
            "{key}"
        );
    };
    check(&a, "m1", "cat\nthe cat sat");
    check(&a, "alice", "alice\nperson\nlikes graphs");
    assert!(recorded_model_is(&dir, &a));

    // Another model of the same dimension: --missing would mix models and is refused;
    // a full re-embed switches the store to it.
    let mb = model_b.to_str().unwrap();
    let (code, _, err) = hopgraph(&["reembed", "--db", d, "--model", mb, "--missing", "--quiet"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("--missing would mix two models"), "{err}");
    let (code, _, err) = hopgraph(&["reembed", "--db", d, "--model", mb, "--quiet"]);
    assert_eq!(code, 0, "{err}");
    check(&b, "m1", "cat\nthe cat sat");
    assert!(recorded_model_is(&dir, &b));

    // Another dimension is refused, naming both; a missing model directory too.
    let mw = model_wide.to_str().unwrap();
    let (code, _, err) = hopgraph(&["reembed", "--db", d, "--model", mw, "--quiet"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("32 dimensions") && err.contains("48"), "{err}");
    let nowhere = tmp.path().join("no-model");
    let (code, _, err) = hopgraph(&[
        "reembed",
        "--db",
        d,
        "--model",
        nowhere.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("no-model"), "{err}");
    assert!(recorded_model_is(&dir, &b), "refusals change nothing");
}

/// Whether the store in `dir` records `e`'s model (read through the memory layer, the
/// record's one reader, on a read-only open).
fn recorded_model_is(dir: &Path, e: &hopgraph_embed::Embedder) -> bool {
    let db = Database::open_with(dir, Options::default().read_only(true)).unwrap();
    hopgraph_memory::embed_model::read_model_record(&db)
        .unwrap()
        .is_some_and(|r| r.fingerprint == e.fingerprint())
}

/// `import --embed-model` embeds the imported nodes that have text, after the import, and
/// a bad model directory fails before anything is imported.
#[test]
fn import_with_a_model_embeds_what_it_imported() {
    use hopgraph_embed::Embedder;
    use hopgraph_embed::tiny_model::TinyModel;
    let tmp = tempdir();
    let model = tmp.path().join("model");
    TinyModel::default().write(&model).unwrap();
    let e = Embedder::load(&model).unwrap();
    let input = tmp.path().join("memory.jsonl");
    std::fs::write(
        &input,
        concat!(
            r#"{"type":"entity","name":"alice","entityType":"person","observations":["likes graphs"]}"#,
            "\n",
            r#"{"type":"entity","name":"bob","entityType":"person","observations":[]}"#,
            "\n",
            r#"{"type":"relation","from":"alice","to":"bob","relationType":"knows"}"#,
            "\n"
        ),
    )
    .unwrap();
    let dir = tmp.path().join("db");
    let (d, i) = (dir.to_str().unwrap(), input.to_str().unwrap());

    let nowhere = tmp.path().join("no-model");
    let args = [
        "import",
        "--db",
        d,
        "--format",
        "server-memory",
        "--quiet",
        "--embed-model",
    ];
    let mut bad: Vec<&str> = args.to_vec();
    bad.extend([nowhere.to_str().unwrap(), i]);
    let (code, _, err) = hopgraph(&bad);
    assert_eq!(code, 5, "{err}");
    assert!(!dir.exists(), "a bad model directory imports nothing");

    let mut good: Vec<&str> = args.to_vec();
    good.extend([model.to_str().unwrap(), i]);
    let (code, out, err) = hopgraph(&good);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("nodes embedded: 2"), "{out}");
    let db = Database::open_with(&dir, Options::default().read_only(true)).unwrap();
    let alice = db.snapshot().node_by_key("alice").unwrap().unwrap();
    let got = alice.props.embedding.clone().expect("embedded");
    let want = e.embed_one("alice\nperson\nlikes graphs").unwrap();
    assert!(got.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-5));
    assert!(recorded_model_is(&dir, &e));
}

/// A memory file of the official MCP memory server, imported with `--format
/// server-memory`, answers the server-memory tools (`read_graph`, `open_nodes`,
/// `search_nodes`, as hopgraph-mcp's `server-memory` profile serves them) with exactly
/// the entities and relations the file holds.
#[test]
fn a_server_memory_file_answers_its_tools_the_same() {
    use hopgraph_memory::kg;
    use serde_json::json;
    let tmp = tempdir();
    let file = tmp.path().join("memory.jsonl");
    let lines = [
        json!({"type": "entity", "name": "John_Smith", "entityType": "person", "observations": ["Speaks fluent Spanish", "Graduated in 2019"]}),
        json!({"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []}),
        json!({"type": "entity", "name": "Spain", "entityType": "country", "observations": ["In Europe"]}),
        json!({"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}),
        json!({"type": "relation", "from": "John_Smith", "to": "Spain", "relationType": "lived_in"}),
    ];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let dir = tmp.path().join("db");
    let (code, _, err) = hopgraph(&[
        "import",
        "--db",
        dir.to_str().unwrap(),
        "--format",
        "server-memory",
        "--quiet",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let db = Database::open_with(&dir, Options::default().read_only(true)).unwrap();
    let snap = db.snapshot();
    let entity = |l: &serde_json::Value| json!({"name": l["name"], "entityType": l["entityType"], "observations": l["observations"]});
    let relation = |l: &serde_json::Value| json!({"from": l["from"], "to": l["to"], "relationType": l["relationType"]});
    let sorted = |mut v: Vec<serde_json::Value>| {
        v.sort_by_key(|x| x.to_string());
        v
    };
    let g = serde_json::to_value(kg::read_graph(&snap, None, None).unwrap()).unwrap();
    assert_eq!(
        sorted(g["entities"].as_array().unwrap().clone()),
        sorted(lines[..3].iter().map(entity).collect())
    );
    assert_eq!(
        sorted(g["relations"].as_array().unwrap().clone()),
        sorted(lines[3..].iter().map(relation).collect())
    );
    let g = serde_json::to_value(kg::open_nodes(&snap, &["Spain".to_owned()]).unwrap()).unwrap();
    assert_eq!(g["entities"], json!([entity(&lines[2])]));
    assert_eq!(g["relations"], json!([relation(&lines[4])]));
    let g = serde_json::to_value(kg::search_nodes(&snap, "europe").unwrap()).unwrap();
    assert_eq!(g["entities"], json!([entity(&lines[2])]));
}

/// With `HOPGRAPH_VECTOR_GRAPH_MIN=20000`, an import of 20,000 embeddings stores them
/// without the HNSW graph by default: `stats` and the import's summary say so, searches by
/// embedding work meanwhile, `index` builds the graph (and then has nothing to do),
/// `--vector-index now` builds it in the import. Under the default bound (100,000) the
/// same import needs no graph at all; a bound that is not a positive integer is a usage
/// error.
#[test]
fn import_defers_the_vector_graph_and_index_builds_it() {
    use std::fmt::Write as _;
    let tmp = tempdir();
    let n = 20_000;
    let env = [("HOPGRAPH_VECTOR_GRAPH_MIN", "20000")];
    let okb = |args: &[&str]| {
        let (code, out, err) = hopgraph_env(args, &env);
        assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
        out
    };
    let mut lines = String::new();
    for i in 0..n {
        #[allow(clippy::cast_precision_loss, reason = "small test values")]
        let x = (i % 97) as f32 / 97.0;
        writeln!(
            lines,
            "{{\"node\":{{\"key\":\"m{i}\",\"title\":\"memory {i}\",\"embedding\":[{x},1.0,{}]}}}}",
            1.0 - x
        )
        .unwrap();
    }
    let file = tmp.path().join("vectors.jsonl");
    std::fs::write(&file, lines).unwrap();
    let db = tmp.path().join("db");
    let out = okb(&["import", "--db", &db_arg(&db), "-q", file.to_str().unwrap()]);
    assert!(
        out.contains(&format!("vector index: {n} embeddings stored without")),
        "{out}"
    );
    let stats = okb(&["stats", "--db", &db_arg(&db), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(v["vectors_awaiting_index"], n);
    {
        let store = Database::open(&db).unwrap();
        let snap = store.snapshot();
        let hits = snap
            .search_vector(&hopgraph::VectorQuery::new(vec![0.0, 1.0, 1.0]).limit(3))
            .unwrap();
        assert_eq!(hits.len(), 3);
        assert!(hits[0].similarity > 0.9999, "{hits:?}");
        let key = snap.node(hits[0].node).unwrap().unwrap().key.clone();
        assert_eq!(
            key.trim_start_matches('m').parse::<usize>().unwrap() % 97,
            0
        );
    }
    // Progress on stderr (lines, not a terminal here) ends with the summary line.
    let (code, out, err) = hopgraph_env(&["index", "--db", &db_arg(&db)], &env);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(&format!("indexed {n} embeddings")), "{out}");
    assert!(
        err.lines()
            .last()
            .is_some_and(|l| l.starts_with("index: done in") && l.contains("graph")),
        "{err}"
    );
    let (code, out, err) = hopgraph_env(&["index", "--db", &db_arg(&db), "-q"], &env);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("nothing to index"), "{out}");
    assert!(err.is_empty(), "{err}");
    let stats = okb(&["stats", "--db", &db_arg(&db), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(v["vectors_awaiting_index"], 0);
    okb(&["check", "--db", &db_arg(&db)]);
    let now = tmp.path().join("now");
    let out = okb(&[
        "import",
        "--db",
        &db_arg(&now),
        "-q",
        "--vector-index",
        "now",
        file.to_str().unwrap(),
    ]);
    assert!(!out.contains("vector index:"), "{out}");
    let stats = okb(&["stats", "--db", &db_arg(&now), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(v["vectors_awaiting_index"], 0);
    // The default bound: no graph is wanted, so none waits and searches are exact.
    let exact = tmp.path().join("exact");
    let out = ok(&[
        "import",
        "--db",
        &db_arg(&exact),
        "-q",
        file.to_str().unwrap(),
    ]);
    assert!(!out.contains("vector index:"), "{out}");
    let stats = ok(&["stats", "--db", &db_arg(&exact), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(v["vectors_awaiting_index"], 0);
    let (code, _, err) = hopgraph_env(
        &["stats", "--db", &db_arg(&exact)],
        &[("HOPGRAPH_VECTOR_GRAPH_MIN", "none")],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("error: HOPGRAPH_VECTOR_GRAPH_MIN=none is not a positive integer"),
        "{err}"
    );
}

/// A store written by an older format: `stats` names the segment's format and says what
/// upgrades it; `compact` rewrites the lone segment in the current format.
#[test]
fn stats_names_an_old_format_and_compact_upgrades_it() {
    let tmp = tempdir();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/db-v7");
    let db = tmp.path().join("db");
    std::fs::create_dir(&db).unwrap();
    for entry in std::fs::read_dir(&fixture).unwrap() {
        let entry = entry.unwrap();
        let to = db.join(entry.file_name());
        std::fs::copy(entry.path(), &to).unwrap();
        let mut perms = std::fs::metadata(&to).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false, reason = "a test copy")]
        perms.set_readonly(false);
        std::fs::set_permissions(&to, perms).unwrap();
    }
    let current = hopgraph::FORMAT_VERSION;
    let out = ok(&["stats", "--db", &db_arg(&db)]);
    assert!(
        out.contains(&format!(
            "format 7 (`hopgraph compact` rewrites it in format {current})"
        )),
        "{out}"
    );
    let out = ok(&["compact", "--db", &db_arg(&db)]);
    assert!(out.contains("compacted 1 segments"), "{out}");
    let out = ok(&["stats", "--db", &db_arg(&db)]);
    assert!(!out.contains("format 7"), "{out}");
    let json = ok(&["stats", "--db", &db_arg(&db), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["segments"][0]["format"], current);
    assert_eq!(v["nodes"], 3);
    let out = ok(&["compact", "--db", &db_arg(&db)]);
    assert!(out.contains("nothing to compact"), "{out}");
}

/// The sample in examples/ (benches/workload/gen_graph.py --text): its files, by suffix.
fn sample(suffix: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(format!("memory-2k-text.{suffix}"))
}

/// A fresh database holding the sample, at `dir`.
fn import_sample(dir: &Path) {
    ok(&[
        "import",
        "-q",
        "--db",
        &db_arg(dir),
        sample("nodes.jsonl").to_str().unwrap(),
        sample("edges.tsv").to_str().unwrap(),
    ]);
}

/// The sample answers a newcomer's first commands: a text search finds the phrase the
/// generator guarantees, `get` shows a title, the first pair has a path, and a seed's
/// neighbourhood exports as a graph. The files stay small and every key they name exists.
#[test]
fn the_sample_answers_search_get_path_and_export() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    import_sample(&a);
    let db = db_arg(&a);
    let total: u64 = [
        "nodes.jsonl",
        "edges.tsv",
        "pairs.tsv",
        "pairs-walk-caused_by.tsv",
        "meta.json",
    ]
    .iter()
    .map(|s| std::fs::metadata(sample(s)).unwrap().len())
    .sum();
    assert!(total < 1_000_000, "the sample is {total} bytes");
    let stats = json(&ok(&["stats", "--db", &db, "--json"]));
    assert_eq!(stats["nodes"], 2000);
    assert_eq!(stats["edges"], 7914);

    let hits = ok(&["search", "--db", &db, "pooled connections"]);
    assert!(!hits.trim().is_empty(), "no hit");
    let hits = json(&ok(&[
        "search",
        "--db",
        &db,
        "pooled connections",
        "--kind",
        "decision",
        "--json",
    ]));
    let hits = hits["results"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h["type"] == "decision"), "{hits:?}");

    for key in ["decision-billing-api-pooling", "deploy-billing-api-2-3"] {
        let out = ok(&["get", "--db", &db, key]);
        let title = out.lines().find(|l| l.starts_with("title ")).unwrap_or("");
        assert!(title.len() > "title ".len() + 5, "{key}: {out}");
        let g = json(&ok(&["get", "--db", &db, key, "--json"]));
        assert!(!g["title"].as_str().unwrap().is_empty(), "{g}");
        assert!(!g["content"].as_str().unwrap().is_empty(), "{g}");
    }

    let pairs = std::fs::read_to_string(sample("pairs.tsv")).unwrap();
    let (from, to) = pairs.lines().next().unwrap().split_once('\t').unwrap();
    let path = ok(&["path", "--db", &db, from, to]);
    assert!(
        path.starts_with(from) && path.contains(to) && path.contains(" → "),
        "{path}"
    );
    // Every pair of both pair files names keys of the sample, and the walk pairs are
    // joined through caused_by edges alone.
    let answers = ok(&[
        "path",
        "--db",
        &db,
        "--pairs",
        sample("pairs-walk-caused_by.tsv").to_str().unwrap(),
        "--type",
        "caused_by",
    ]);
    assert_eq!(answers.lines().count(), 20);
    assert!(
        answers.lines().all(|l| json(l)["found"] == true),
        "{answers}"
    );
    let answers = ok(&[
        "path",
        "--db",
        &db,
        "--pairs",
        sample("pairs.tsv").to_str().unwrap(),
    ]);
    assert!(
        answers.lines().all(|l| !json(l)["message"]
            .as_str()
            .unwrap_or("")
            .contains("Unknown")),
        "{answers}"
    );

    let dot = ok(&[
        "export",
        "--db",
        &db,
        "--format",
        "dot",
        "--seed",
        "deploy-billing-api-2-3",
        "--max-hops",
        "2",
    ]);
    assert!(dot.starts_with("digraph hopgraph {"), "{dot}");
    assert!(dot.contains("\"deploy-billing-api-2-3\" ->"), "{dot}");
    assert!(dot.contains("Deploy of billing-api 2.3"), "{dot}");
    assert!(dot.lines().filter(|l| l.contains(" -> ")).count() > 10);
}

/// `search --kind` filters node kinds; `--type`, which means edge types everywhere else,
/// still works in search as a hidden, deprecated spelling that says so on stderr.
#[test]
fn search_filters_kinds_with_kind_and_type_is_deprecated() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    let input = tmp.path().join("g.jsonl");
    std::fs::write(
        &input,
        [
            r#"{"node":{"key":"d","kind":"decision","title":"Use pooled connections"}}"#,
            r#"{"node":{"key":"i","kind":"incident","title":"Pooled connections ran out"}}"#,
            r#"{"edge":{"source":"i","target":"d","type":"caused_by"}}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    ok(&["import", "--db", &db_arg(&a), input.to_str().unwrap()]);
    let db = db_arg(&a);
    let ids = |out: &str| -> Vec<String> {
        json(out)["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let both = ok(&["search", "--db", &db, "pooled connections", "--json"]);
    assert_eq!(ids(&both).len(), 2, "{both}");
    let kind = ok(&[
        "search",
        "--db",
        &db,
        "pooled connections",
        "--kind",
        "incident",
        "--json",
    ]);
    assert_eq!(ids(&kind), ["i"]);
    let (code, old, err) = hopgraph(&[
        "search",
        "--db",
        &db,
        "pooled connections",
        "--type",
        "incident",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(old, kind);
    assert!(
        err.starts_with("warning: `search --type incident` is deprecated")
            && err.contains("--kind"),
        "{err}"
    );
    // Not both at once; the help names --kind only, and the edge filter of --near.
    let (code, _, _) = hopgraph(&["search", "--db", &db, "x", "--kind", "a", "--type", "b"]);
    assert_eq!(code, 2);
    let help = ok(&["search", "--help"]);
    assert!(help.contains("--kind <KIND>"), "{help}");
    assert!(!help.contains("--type <"), "{help}");
    assert!(help.contains("--edge-type <TYPE>"), "{help}");
    let top = ok(&["--help"]);
    assert!(top.contains("--kind K is a node's kind"), "{top}");
}

/// Times are RFC 3339 in `get` (text and JSON), `stats --json` and the JSONL export; the
/// export imports again (an import also reads the milliseconds older exports wrote), and
/// a time that is neither is an invalid line.
#[test]
fn times_are_rfc3339_and_the_export_imports_again() {
    let tmp = tempdir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let input = tmp.path().join("g.tsv");
    std::fs::write(&input, "x\ty\tcauses\n").unwrap();
    ok(&[
        "import",
        "--db",
        &db_arg(&a),
        "--timestamp",
        "1700000000000",
        input.to_str().unwrap(),
    ]);
    const AT: &str = "2023-11-14T22:13:20.000Z";
    let g = json(&ok(&["get", "--db", &db_arg(&a), "x", "--json"]));
    assert_eq!(g["created_at"], AT, "{g}");
    assert_eq!(g["updated_at"], AT, "{g}");
    let text = ok(&["get", "--db", &db_arg(&a), "x"]);
    assert!(text.contains(&format!("created     {AT}")), "{text}");
    let stats = json(&ok(&["stats", "--db", &db_arg(&a), "--json"]));
    assert!(stats.get("last_checkpoint_ms").is_none(), "{stats}");

    let export = ok(&["export", "--db", &db_arg(&a)]);
    let lines: Vec<serde_json::Value> = export.lines().map(json).collect();
    assert_eq!(lines[1]["node"]["created_at"], AT, "{export}");
    assert_eq!(lines[1]["node"]["updated_at"], AT, "{export}");
    assert_eq!(lines[3]["edge"]["created_at"], AT, "{export}");
    assert!(!export.contains("1700000000000"), "{export}");
    let file = tmp.path().join("backup.jsonl");
    std::fs::write(&file, &export).unwrap();
    ok(&[
        "import",
        "--db",
        &db_arg(&b),
        "--timestamp",
        "1700000000000",
        file.to_str().unwrap(),
    ]);
    assert_eq!(ok(&["export", "--db", &db_arg(&b)]), export);

    // The milliseconds of hopgraph 0.1's exports, and other offsets, still import.
    let old = tmp.path().join("old.jsonl");
    std::fs::write(
        &old,
        concat!(
            r#"{"node":{"key":"p","title":"P","created_at":1700000000000,"updated_at":1700000000000}}"#,
            "\n",
            r#"{"node":{"key":"q","created_at":"2023-11-14T23:13:20+01:00"}}"#,
            "\n",
            r#"{"edge":{"source":"p","target":"q","type":"t","id":7,"created_at":1}}"#,
            "\n",
        ),
    )
    .unwrap();
    let c = tmp.path().join("c");
    ok(&["import", "--db", &db_arg(&c), old.to_str().unwrap()]);
    assert_eq!(edges_of(&c), [triple("p", "t", "q")]);
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        r#"{"node":{"key":"p","created_at":"yesterday"}}"#.to_owned() + "\n",
    )
    .unwrap();
    let err = fails(
        5,
        &[
            "import",
            "--db",
            &db_arg(&tmp.path().join("d")),
            bad.to_str().unwrap(),
        ],
    );
    assert!(
        err.contains("bad.jsonl:1") && err.contains("RFC 3339"),
        "{err}"
    );
}

/// `stats` on a damaged store exits 3 as `check` does, saying that the database is damaged
/// and naming the file: a damaged manifest when opening, a damaged segment when verifying
/// (after printing what it could read, with an `integrity` line saying so).
#[test]
fn stats_exits_3_on_a_damaged_segment_or_manifest() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    rich_database(&a);
    ok(&["checkpoint", "--db", &db_arg(&a)]);
    assert!(ok(&["stats", "--db", &db_arg(&a)]).contains("integrity        ok"));
    let pristine = tmp.path().join("pristine");
    std::fs::create_dir(&pristine).unwrap();
    copy_files(&a, &pristine);

    let seg = files_named(&a, "seg-").pop().unwrap();
    let len = std::fs::read(&seg).unwrap().len();
    let mut offsets: Vec<usize> = (0..len).step_by(len / 16 + 1).collect();
    offsets.extend([8, 20, len / 2, len - 1]);
    let mut detected = 0;
    for &offset in &offsets {
        copy_files(&pristine, &a);
        flip_byte(&seg, offset);
        let (check, _, _) = hopgraph(&["check", "--db", &db_arg(&a)]);
        let (code, out, err) = hopgraph(&["stats", "--db", &db_arg(&a)]);
        if check == 0 {
            // Bytes nothing reads (alignment padding): sound for both.
            assert_eq!(code, 0, "offset {offset}: {err}");
            continue;
        }
        detected += 1;
        assert_eq!(code, 3, "offset {offset}: stdout {out} stderr {err}");
        assert!(
            err.starts_with("error: stats failed: the database is damaged: "),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(seg.to_str().unwrap()),
            "offset {offset}: {err}"
        );
        // Found by the check after opening: the counts come first, then the verdict.
        if !out.is_empty() {
            assert!(out.contains("integrity        DAMAGED"), "{out}");
        }
        let (code, out, _) = hopgraph(&["stats", "--db", &db_arg(&a), "--json"]);
        assert_eq!(code, 3);
        if !out.is_empty() {
            let v = json(&out);
            assert!(v["damage"].as_str().unwrap().contains("damaged"), "{v}");
        }
    }
    assert!(detected >= offsets.len() - 2, "{detected} of {offsets:?}");

    let manifest = a.join("MANIFEST");
    let len = std::fs::read(&manifest).unwrap().len();
    for offset in [0, 9, 20, len / 2, len - 1] {
        copy_files(&pristine, &a);
        flip_byte(&manifest, offset);
        let err = fails(3, &["stats", "--db", &db_arg(&a)]);
        assert!(
            err.contains("the database is damaged") && err.contains("MANIFEST"),
            "offset {offset}: {err}"
        );
    }
    copy_files(&pristine, &a);
    ok(&["stats", "--db", &db_arg(&a)]);
}

/// The examples of a help text: lines starting with `hopgraph `, joined with the lines a
/// trailing backslash continues.
fn help_examples(help: &str) -> Vec<String> {
    let mut examples = Vec::new();
    let mut lines = help.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        if !line.starts_with("hopgraph ") {
            continue;
        }
        let mut example = line.to_owned();
        while let Some(head) = example.strip_suffix('\\') {
            example = format!("{head}{}", lines.next().unwrap_or("").trim());
        }
        examples.push(example);
    }
    examples
}

/// Every example of the help texts of the commands below (all but `import` and `reembed`)
/// runs as written, in order, from a directory holding the repository's examples/ and
/// the sample imported as ./mem, and exits 0: concrete keys of the sample, no
/// placeholders. Lines stay within 80 columns (with `\` continuations), so that help
/// wrapped to a terminal's width still pastes. An example needing a tool that is not
/// installed (jq, dot) or a model (reembed, search --embed-model) is skipped.
#[test]
fn help_examples_run_on_the_sample() {
    let tmp = tempdir();
    let pristine = tmp.path().join("pristine");
    import_sample(&pristine);
    let bin = Path::new(env!("CARGO_BIN_EXE_hopgraph")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let installed = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let examples_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut ran = 0;
    for command in [
        "",
        "search",
        "get",
        "add",
        "path",
        "neighbors",
        "expand",
        "traverse",
        "export",
        "stats",
        "check",
        "checkpoint",
        "compact",
        "unlink",
        "index",
    ] {
        let help = if command.is_empty() {
            ok(&["--help"])
        } else {
            ok(&[command, "--help"])
        };
        for line in help
            .lines()
            .filter(|l| l.trim_start().starts_with("hopgraph "))
        {
            assert!(line.len() <= 80, "{command}: over 80 columns: {line}");
        }
        let examples = help_examples(&help);
        assert!(!examples.is_empty(), "{command}: no examples");
        let work = tmp.path().join(format!("work-{command}"));
        std::fs::create_dir_all(work.join("mem")).unwrap();
        copy_files(&pristine, &work.join("mem"));
        std::os::unix::fs::symlink(&examples_dir, work.join("examples")).unwrap();
        for example in examples {
            let needs = |word: &str| example.contains(word);
            if needs("--model")
                || needs("--embed-model")
                || (needs("| jq") && !installed("jq"))
                || (needs("| dot") && !installed("dot"))
            {
                continue;
            }
            if example.starts_with("hopgraph import ") {
                // The first line of the session: the database is there already.
                assert!(example.contains("examples/memory-2k-text."), "{example}");
                continue;
            }
            let out = Command::new("bash")
                .args(["-c", &format!("set -eo pipefail; {example}")])
                .current_dir(&work)
                .env("PATH", &path)
                .output()
                .unwrap();
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(
                out.status.success(),
                "{command}: `{example}` failed: {stdout}\n{stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
            ran += 1;
        }
    }
    assert!(ran >= 30, "ran {ran} examples");
}

/// `search --embed-model` embeds the query and ranks by text and meaning; a store without
/// embeddings, or with another model's, is refused with what to do.
#[test]
fn search_with_a_model_is_hybrid_and_checks_the_store() {
    use hopgraph_embed::tiny_model::TinyModel;
    let tmp = tempdir();
    let model_a = tmp.path().join("model-a");
    TinyModel::default().write(&model_a).unwrap();
    let model_b = tmp.path().join("model-b");
    TinyModel {
        seed: 9,
        ..TinyModel::default()
    }
    .write(&model_b)
    .unwrap();
    let dir = tmp.path().join("db");
    {
        let db = Database::open(&dir).unwrap();
        let mut batch = WriteBatch::new();
        for (k, text) in [("m1", "the cat sat"), ("m2", "graphs of dogs")] {
            batch.upsert_node(
                k,
                NodeProps {
                    content: text.into(),
                    ..Default::default()
                },
            );
        }
        db.commit(batch).unwrap();
    }
    let (m, mb, d) = (
        model_a.to_str().unwrap(),
        model_b.to_str().unwrap(),
        dir.to_str().unwrap(),
    );
    let (code, _, err) = hopgraph(&["search", "--db", d, "cat", "--embed-model", m]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("no embeddings") && err.contains("reembed"),
        "{err}"
    );
    let (code, _, err) = hopgraph(&["reembed", "--db", d, "--model", m, "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = hopgraph(&["search", "--db", d, "cat", "--embed-model", m, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["results"][0]["id"], "m1", "{out}");
    let (code, _, err) = hopgraph(&["search", "--db", d, "cat", "--embed-model", mb]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("were made by model"), "{err}");
}

/// 2024-01-01, -03-01, -06-01 and -09-01 at midnight UTC, in ms.
const JAN: u64 = 1_704_067_200_000;
const MAR: u64 = 1_709_251_200_000;
const JUN: u64 = 1_717_200_000_000;
const SEP: u64 = 1_725_148_800_000;

/// A store with validity intervals: nodes a, b, c valid from January; `old` valid from
/// January to March; a -r-> b from January, ended in September (by `end_edge`, after the
/// link); b -r-> c from January to June; c -r-> old with the default interval.
fn timed_database(dir: &Path) {
    let db = Database::open(dir).unwrap();
    let mut b = WriteBatch::new();
    for key in ["a", "b", "c", "old"] {
        b.upsert_node(
            key,
            NodeProps {
                title: key.to_uppercase(),
                ..NodeProps::default()
            },
        );
    }
    db.commit(b).unwrap();
    let mut b = WriteBatch::new();
    for (key, to) in [("a", None), ("b", None), ("c", None), ("old", Some(MAR))] {
        b.update_node(
            key,
            hopgraph::NodePatch {
                valid_from: Some(JAN),
                valid_to: Some(to),
                ..hopgraph::NodePatch::default()
            },
        );
    }
    let from_jan = |to| EdgeProps {
        valid_from: Some(JAN),
        valid_to: to,
        ..EdgeProps::default()
    };
    b.link("a", "r", "b", from_jan(None));
    b.link("b", "r", "c", from_jan(Some(JUN)));
    b.link("c", "r", "old", EdgeProps::default());
    db.commit(b).unwrap();
    let snap = db.snapshot();
    let ab = snap
        .edge_by_triple(
            snap.node_id("a").unwrap(),
            snap.type_id("r").unwrap(),
            snap.node_id("b").unwrap(),
        )
        .unwrap();
    let mut b = WriteBatch::new();
    b.end_edge(ab, SEP);
    db.commit(b).unwrap();
}

/// Every node's and edge's validity interval, by key and by (source, type, target).
fn intervals_of(dir: &Path) -> Vec<(String, u64, Option<u64>)> {
    let snap = read_only(dir).snapshot();
    let mut out = Vec::new();
    for id in snap.node_ids() {
        let n = snap.node(id).unwrap().unwrap();
        out.push((n.key.clone(), n.valid_from, n.valid_to));
        for nb in snap.neighbors(id, hopgraph::Direction::Out, &hopgraph::TypeFilter::All) {
            let e = snap.edge(nb.edge).unwrap().unwrap();
            let target = snap.node(nb.node).unwrap().unwrap().key.clone();
            let ty = snap.type_name(nb.edge_type).unwrap();
            out.push((
                format!("{}-{ty}->{target}", n.key),
                e.valid_from,
                e.valid_to,
            ));
        }
    }
    out.sort();
    out
}

/// `get --as-of`: a node not valid then is "not found" (exit 1) as an unknown key is, the
/// end is exclusive, TIME is RFC 3339 (any offset) or milliseconds, edge counts are those
/// valid then; text and JSON show the interval.
#[test]
fn get_as_of_and_validity_in_its_output() {
    let tmp = tempdir();
    let dir = tmp.path().join("t");
    timed_database(&dir);
    let db = db_arg(&dir);
    let g = json(&ok(&["get", "--db", &db, "old", "--json"]));
    assert_eq!(g["valid_from"], "2024-01-01T00:00:00.000Z", "{g}");
    assert_eq!(g["valid_to"], "2024-03-01T00:00:00.000Z", "{g}");
    let text = ok(&["get", "--db", &db, "old"]);
    assert!(
        text.contains("valid       from 2024-01-01T00:00:00.000Z, until 2024-03-01T00:00:00.000Z"),
        "{text}"
    );
    let text = ok(&["get", "--db", &db, "a"]);
    assert!(
        text.contains("valid       from 2024-01-01T00:00:00.000Z, never ends"),
        "{text}"
    );
    let g = json(&ok(&["get", "--db", &db, "a", "--json"]));
    assert_eq!(g["valid_to"], serde_json::Value::Null, "{g}");

    for at in [
        "2024-02-01T00:00:00Z",
        "2024-02-01T01:00:00+01:00",
        "1706745600000",
    ] {
        let g = json(&ok(&["get", "--db", &db, "old", "--as-of", at, "--json"]));
        assert_eq!(g["key"], "old", "{at}: {g}");
    }
    for at in ["2024-03-01T00:00:00Z", "2023-12-31T23:59:59.999Z"] {
        let err = fails(1, &["get", "--db", &db, "old", "--as-of", at]);
        assert!(err.contains("unknown node key: old (as of "), "{at}: {err}");
    }
    let err = fails(
        1,
        &[
            "get",
            "--db",
            &db,
            "nope",
            "--as-of",
            "2024-02-01T00:00:00Z",
        ],
    );
    assert!(err.contains("unknown node key: nope"), "{err}");

    // a -r-> b ended in September; b -r-> c in June.
    let out_edges =
        |at: &str| json(&ok(&["get", "--db", &db, "b", "--as-of", at, "--json"]))["edges"].clone();
    assert_eq!(out_edges("2024-05-01T00:00:00Z")["out"], 1);
    assert_eq!(out_edges("2024-05-01T00:00:00Z")["in"], 1);
    assert_eq!(out_edges("2024-07-01T00:00:00Z")["out"], 0);
    assert_eq!(out_edges("2024-07-01T00:00:00Z")["in"], 1);
    assert_eq!(out_edges("2024-10-01T00:00:00Z")["in"], 0);
    let now = json(&ok(&["get", "--db", &db, "b", "--json"]));
    assert_eq!(
        (now["edges"]["out"].clone(), now["edges"]["in"].clone()),
        (1.into(), 1.into())
    );

    let (code, _, err) = hopgraph(&["get", "--db", &db, "a", "--as-of", "last tuesday"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("RFC 3339"), "{err}");
}

/// Export carries the intervals (ended edges included) and import keeps them: JSONL into a
/// fresh store gives the same intervals; the CSV tables hold them as the last two columns.
/// Fields left out keep the old behaviour: valid from when the import writes, never ends.
#[test]
fn intervals_round_trip_through_export_and_import() {
    let tmp = tempdir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    timed_database(&a);
    let file = tmp.path().join("timed.jsonl");
    ok(&[
        "export",
        "--db",
        &db_arg(&a),
        "--out",
        file.to_str().unwrap(),
    ]);
    let export = std::fs::read_to_string(&file).unwrap();
    let ab = export
        .lines()
        .map(json)
        .find(|l| l["edge"]["source"] == "a")
        .unwrap();
    assert_eq!(ab["edge"]["valid_from"], "2024-01-01T00:00:00.000Z", "{ab}");
    assert_eq!(ab["edge"]["valid_to"], "2024-09-01T00:00:00.000Z", "{ab}");
    ok(&["import", "--db", &db_arg(&b), file.to_str().unwrap()]);
    let want = intervals_of(&a);
    assert!(
        want.contains(&("a-r->b".to_owned(), JAN, Some(SEP)))
            && want.contains(&("b-r->c".to_owned(), JAN, Some(JUN)))
            && want.contains(&("old".to_owned(), JAN, Some(MAR))),
        "{want:?}"
    );
    assert_eq!(intervals_of(&b), want);
    // And what was valid when answers the same in the copy.
    let g = json(&ok(&[
        "get",
        "--db",
        &db_arg(&b),
        "b",
        "--as-of",
        "2024-07-01T00:00:00Z",
        "--json",
    ]));
    assert_eq!(g["edges"]["out"], 0, "{g}");

    let tables = tmp.path().join("tables");
    ok(&[
        "export",
        "--db",
        &db_arg(&a),
        "--format",
        "csv-tables",
        "--out",
        tables.to_str().unwrap(),
    ]);
    let nodes = std::fs::read_to_string(tables.join("nodes.csv")).unwrap();
    let edges = std::fs::read_to_string(tables.join("edges.csv")).unwrap();
    assert!(
        nodes.lines().any(|l| l.starts_with("old,")
            && l.ends_with(",2024-01-01T00:00:00.000Z,2024-03-01T00:00:00.000Z")),
        "{nodes}"
    );
    assert!(
        nodes
            .lines()
            .any(|l| l.starts_with("a,") && l.ends_with(",2024-01-01T00:00:00.000Z,")),
        "{nodes}"
    );
    assert!(
        edges
            .lines()
            .any(|l| l == "a,b,r,1,{},2024-01-01T00:00:00.000Z,2024-09-01T00:00:00.000Z"),
        "{edges}"
    );

    // Absent fields: from the import's time, never ending; milliseconds are read too.
    let hand = tmp.path().join("hand.jsonl");
    std::fs::write(
        &hand,
        concat!(
            r#"{"node":{"key":"p"}}"#,
            "\n",
            r#"{"node":{"key":"q","valid_from":1704067200000,"valid_to":"2024-03-01T01:00:00+01:00"}}"#,
            "\n",
            r#"{"edge":{"source":"p","target":"q","type":"t"}}"#,
            "\n",
            r#"{"edge":{"source":"q","target":"p","type":"t","valid_from":"2024-01-01T00:00:00Z","valid_to":null}}"#,
            "\n",
        ),
    )
    .unwrap();
    let c = tmp.path().join("c");
    ok(&[
        "import",
        "--db",
        &db_arg(&c),
        "--timestamp",
        "1700000000000",
        hand.to_str().unwrap(),
    ]);
    assert_eq!(
        intervals_of(&c),
        [
            ("p".to_owned(), 1_700_000_000_000, None),
            ("p-t->q".to_owned(), 1_700_000_000_000, None),
            ("q".to_owned(), JAN, Some(MAR)),
            ("q-t->p".to_owned(), JAN, None),
        ]
    );
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        r#"{"node":{"key":"p","valid_from":"2024-03-01T00:00:00Z","valid_to":"2024-01-01T00:00:00Z"}}"#
            .to_owned()
            + "\n",
    )
    .unwrap();
    let err = fails(
        5,
        &[
            "import",
            "--db",
            &db_arg(&tmp.path().join("d")),
            bad.to_str().unwrap(),
        ],
    );
    assert!(
        err.contains("bad.jsonl:1") && err.contains("valid_to"),
        "{err}"
    );
}

/// `--as-of` on path (one pair and --pairs), neighbors, traverse, expand and search: each
/// answers from the graph as it was then, and shows the intervals of what it lists.
#[test]
fn reads_as_of_a_moment() {
    let tmp = tempdir();
    let dir = tmp.path().join("t");
    timed_database(&dir);
    let db = db_arg(&dir);
    const MAY: &str = "2024-05-01T00:00:00Z";
    const JUL: &str = "2024-07-01T00:00:00Z";

    // path: a -> b -> c until June (b -r-> c ends then).
    let p = json(&ok(&[
        "path", "--db", &db, "a", "c", "--as-of", MAY, "--json",
    ]));
    assert_eq!(
        (p["found"].clone(), p["hops"].clone()),
        (true.into(), 2.into()),
        "{p}"
    );
    assert_eq!(p["path"][0]["valid_to"], "2024-09-01T00:00:00.000Z", "{p}");
    assert_eq!(p["path"][1]["valid_to"], "2024-06-01T00:00:00.000Z", "{p}");
    let text = ok(&["path", "--db", &db, "a", "c", "--as-of", "1714521600000"]);
    assert!(text.contains("a") && text.contains("c"), "{text}");
    let p = json(&no_path(&[
        "path", "--db", &db, "a", "c", "--as-of", JUL, "--json",
    ]));
    assert_eq!(p["found"], false, "{p}");
    // Without --as-of no time filters the walk: ended edges are walked too.
    ok(&["path", "--db", &db, "a", "c"]);
    // An endpoint not valid then is an unknown key.
    let p = json(&no_path(&[
        "path", "--db", &db, "a", "old", "--as-of", JUL, "--json",
    ]));
    assert!(p["message"].as_str().unwrap_or("").contains("old"), "{p}");
    let pairs = tmp.path().join("pairs.tsv");
    std::fs::write(&pairs, "a\tc\nb\tc\n").unwrap();
    let (code, out, _) = hopgraph(&[
        "path",
        "--db",
        &db,
        "--pairs",
        pairs.to_str().unwrap(),
        "--as-of",
        MAY,
    ]);
    assert_eq!(code, 0);
    assert!(out.lines().map(json).all(|l| l["found"] == true), "{out}");

    // neighbors: b has a (in) and c (out) in May, only a in July, none in October.
    let n = json(&ok(&[
        "neighbors",
        "--db",
        &db,
        "b",
        "--as-of",
        MAY,
        "--json",
    ]));
    assert_eq!(n["results"].as_array().unwrap().len(), 2, "{n}");
    let text = ok(&["neighbors", "--db", &db, "b", "--as-of", JUL]);
    assert_eq!(
        text, "← r ← a (valid until 2024-09-01T00:00:00.000Z) \"A\"\n",
        "{text}"
    );
    let n = json(&ok(&["neighbors", "--db", &db, "b", "--json"]));
    for r in n["results"].as_array().unwrap() {
        assert_eq!(r["valid_from"], "2024-01-01T00:00:00.000Z", "{n}");
        assert!(r["valid_to"].is_string(), "{n}");
    }
    let err = fails(1, &["neighbors", "--db", &db, "old", "--as-of", JUL]);
    assert!(err.contains("unknown node key: old"), "{err}");

    // traverse: from a, b and c in May, b alone in July.
    let t = json(&ok(&[
        "traverse", "--db", &db, "a", "--as-of", MAY, "--json",
    ]));
    let reached: Vec<&str> = t["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory_id"].as_str().unwrap())
        .collect();
    assert_eq!(reached, ["b", "c"], "{t}");
    assert_eq!(
        t["results"][0]["path"][0]["valid_to"],
        "2024-09-01T00:00:00.000Z"
    );
    let text = ok(&["traverse", "--db", &db, "a", "--as-of", JUL]);
    assert_eq!(
        text, "depth 1  via → r (until 2024-09-01T00:00:00.000Z)  b \"B\"\n",
        "{text}"
    );
    fails(1, &["traverse", "--db", &db, "old", "--as-of", JUL]);

    // expand: the same walk from seeds; a seed not valid then is a warning.
    let e = json(&ok(&[
        "expand",
        "--db",
        &db,
        "a",
        "--max-hops",
        "2",
        "--as-of",
        MAY,
        "--json",
    ]));
    let docs: Vec<&str> = e["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["doc_id"].as_str().unwrap())
        .collect();
    assert_eq!(docs, ["b", "c"], "{e}");
    let e = json(&ok(&[
        "expand",
        "--db",
        &db,
        "a",
        "old",
        "--max-hops",
        "2",
        "--as-of",
        JUL,
        "--json",
    ]));
    assert_eq!(e["documents"].as_array().unwrap().len(), 1, "{e}");
    assert_eq!(e["warnings"][0]["seed_doc_id"], "old", "{e}");

    // search: `old` was valid in February only; now it is history.
    let s = json(&ok(&[
        "search",
        "--db",
        &db,
        "old",
        "--as-of",
        "2024-02-01T00:00:00Z",
        "--json",
    ]));
    assert_eq!(s["results"][0]["id"], "old", "{s}");
    assert_eq!(
        s["results"][0]["valid_to"], "2024-03-01T00:00:00.000Z",
        "{s}"
    );
    let s = json(&ok(&[
        "search", "--db", &db, "old", "--as-of", JUL, "--json",
    ]));
    assert_eq!(s["results"].as_array().unwrap().len(), 0, "{s}");
    let s = json(&ok(&["search", "--db", &db, "old", "--json"]));
    assert_eq!(s["results"].as_array().unwrap().len(), 0, "{s}");
    let text = ok(&["search", "--db", &db, "old", "--include-history"]);
    assert!(
        text.contains("old")
            && text.contains("(not current)  (valid until 2024-03-01T00:00:00.000Z)"),
        "{text}"
    );
    let (code, _, err) = hopgraph(&[
        "search",
        "--db",
        &db,
        "old",
        "--as-of",
        MAY,
        "--include-history",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// The ranged options of path, neighbors, expand and traverse are checked by the memory
/// layer (issue #43) against the command line's bounds (`Ranges::LOCAL`: wider than the
/// MCP tools'), before the database is opened: a usage error with the memory layer's text.
#[test]
fn ranged_options_are_the_memory_layers_checks() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    let edges = tmp.path().join("e.tsv");
    std::fs::write(&edges, "a\tb\tcauses\nb\tc\tcauses\n").unwrap();
    let db = db_arg(&a);
    ok(&["import", "--db", &db, edges.to_str().unwrap()]);
    for (args, want) in [
        (
            vec!["traverse", "--db", &db, "a", "--max-hops", "101"],
            "Invalid argument `max_hops`: must be between 1 and 100, got 101",
        ),
        (
            vec!["traverse", "--db", &db, "a", "--limit", "0"],
            "Invalid argument `limit`: must be between 1 and 4294967295, got 0",
        ),
        (
            vec!["expand", "--db", &db, "a", "--max-hops", "0"],
            "Invalid argument `max_hops`: must be between 1 and 100, got 0",
        ),
        (
            vec!["neighbors", "--db", &db, "a", "--limit", "-1"],
            "Invalid argument `limit`: must be between 1 and 4294967295, got -1",
        ),
        (
            vec!["path", "--db", &db, "a", "c", "--max-hops", "1001"],
            "Invalid argument `max_hops`: must be between 0 and 1000, got 1001",
        ),
    ] {
        let err = fails(2, &args);
        assert_eq!(err.trim_end(), format!("error: {want}"), "{args:?}");
    }
    // Beyond the MCP tools' bounds but within the command line's.
    assert!(ok(&["traverse", "--db", &db, "a", "--max-hops", "50"]).contains("depth 2"));
    assert!(ok(&["path", "--db", &db, "a", "a", "--max-hops", "0"]).starts_with('a'));
}
