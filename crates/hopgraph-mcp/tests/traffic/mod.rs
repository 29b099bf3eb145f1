//! Heavy and hostile traffic: contexts as a bounded cache, read-only calls without side
//! effects, portable context names, an unusable data directory, every request limit at and
//! one past it, peak memory under limit-sized requests, automatic maintenance, and the
//! soak benchmark (`soak`, `#[ignore]`d: `-- --ignored` runs it).

mod soak;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use hopgraph_mcp::limits::LINE_BYTES_MAX;
use hopgraph_mcp::store::DbHandle;
use hopgraph_mcp::tools::{self, ARGUMENTS_BYTES_MAX};
use hopgraph_mcp::{Access, StoreConfig, Stores};
use serde_json::{Value, json};

use super::Server;

/// Every file and directory under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

fn create(stores: &Stores, context: &str, id: &str) {
    tools::call(
        stores,
        "create_memory",
        json!({"type": "semantic", "content": "c", "id": id, "context": context}).as_object(),
    )
    .unwrap();
}

#[test]
fn open_contexts_are_a_bounded_cache() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = StoreConfig::new(dir.path());
    config.open_max = 4;
    let stores = Stores::new(config);
    for i in 0..40 {
        create(&stores, &format!("c{i}"), &format!("m{i}"));
        assert!(stores.open_count() <= 4, "bound kept after {i}");
    }
    // Every context still answers (reopened on demand).
    for i in 0..40 {
        let args = json!({"memory_id": format!("m{i}"), "context": format!("c{i}")});
        tools::call(&stores, "get_memory", args.as_object()).unwrap();
    }
    // A handle in use is never closed under its call: it stays in the cache while others
    // come and go, and the cache exceeds its bound only by the handles in use.
    let held: DbHandle = stores.database(Some("c0"), None, Access::Existing).unwrap();
    for i in 1..20 {
        stores
            .database(Some(&format!("c{i}")), None, Access::Existing)
            .unwrap();
    }
    assert!(stores.open_count() <= 4);
    let again = stores.database(Some("c0"), None, Access::Existing).unwrap();
    assert!(std::sync::Arc::ptr_eq(&held, &again), "c0 stayed open");
    let listed = stores.list_contexts().unwrap();
    assert_eq!(listed.len(), 40);
    assert!(listed.iter().any(|c| c.name == "c0" && c.open));
    assert!(listed.iter().filter(|c| c.open).count() <= 4);
}

#[test]
fn maintenance_checkpoints_and_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = StoreConfig::new(dir.path());
    config.idle_checkpoint = Duration::from_millis(50);
    let stores = Stores::new(config);
    for i in 0..200 {
        create(&stores, "work", &format!("m{i}"));
    }
    let db = stores
        .database(Some("work"), None, Access::Existing)
        .unwrap();
    db.checkpoint().unwrap();
    for i in 0..100 {
        let args = json!({"memory_id": format!("m{i}"), "context": "work"});
        tools::call(&stores, "delete_memory", args.as_object()).unwrap();
    }
    let before = db.stats().unwrap();
    assert!(before.lsn > before.checkpoint_lsn, "writes sit in the WAL");
    // Busy: nothing happens below the WAL threshold.
    assert_eq!(stores.maintain().checkpoints, 0);
    std::thread::sleep(Duration::from_millis(80));
    let r = stores.maintain();
    assert_eq!((r.checkpoints, r.compactions), (1, 1), "{r:?}");
    let after = db.stats().unwrap();
    assert_eq!(after.lsn, after.checkpoint_lsn, "the WAL is checkpointed");
    assert_eq!(after.segments.len(), 1, "one segment after compaction");
    assert_eq!(after.nodes, 100);
    // Nothing new: nothing to do.
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(
        stores.maintain(),
        hopgraph_mcp::store::MaintenanceReport::default()
    );
}

/// Read-only calls (and calls that could only fail on an empty context) on contexts that
/// do not exist answer "No such context" and create nothing: not the context, not the data
/// directory; and 300 of them (more than the old 256 limit) never lock the server.
#[test]
fn e2e_read_only_calls_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut s = Server::spawn_initialized(&data);
    // Reads answer as on an empty store; writes that could only fail say "No such
    // context". Neither creates anything.
    let reads = [
        ("graph_stats", json!({})),
        ("get_memory", json!({"memory_id": "a"})),
        ("memory_search", json!({"query": "a"})),
        ("related", json!({"memory_id": "a"})),
        ("traverse", json!({"memory_id": "a"})),
        ("memory_path", json!({"from_id": "a", "to_id": "b"})),
        ("expand", json!({"seed_doc_ids": ["a"], "hops": 1})),
    ];
    let writes = [
        ("delete_memory", json!({"memory_id": "a"})),
        ("unlink", json!({"edge_id": "1"})),
        (
            "link",
            json!({"source_id": "a", "target_id": "b", "edge_type": "t"}),
        ),
        (
            "aim_memory_link",
            json!({"relations": [{"from": "a", "to": "b", "relationType": "r"}]}),
        ),
    ];
    let empty_answer = |tool: &str, r: &Value| {
        let text = r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match tool {
            "graph_stats" => {
                assert_eq!(r["structuredContent"]["nodes"], 0, "{r}");
                assert_eq!(r["structuredContent"]["edges"], 0, "{r}");
            }
            "memory_search" => assert_eq!(r["structuredContent"]["results"], json!([]), "{r}"),
            "get_memory" => assert_eq!(text, "Memory not found."),
            "memory_path" => assert!(text.starts_with("Unknown memory id"), "{text}"),
            _ => assert!(!text.starts_with("No such context"), "{tool}: {text}"),
        }
    };
    for i in 0..300 {
        let mut args = if i % 2 == 0 {
            reads[(i / 2) % reads.len()].1.clone()
        } else {
            writes[(i / 2) % writes.len()].1.clone()
        };
        args["context"] = json!(format!("c{i}"));
        if i % 2 == 0 {
            let tool = reads[(i / 2) % reads.len()].0;
            empty_answer(tool, &s.call(tool, args));
        } else {
            let tool = writes[(i / 2) % writes.len()].0;
            let text = s.call_err(tool, args);
            assert!(
                text.starts_with(&format!("No such context: \"c{i}\"")),
                "{tool}: {text}"
            );
        }
    }
    for (tool, args) in &reads {
        empty_answer(tool, &s.call(tool, args.clone()));
    }
    for (tool, args) in &writes {
        assert!(
            s.call_err(tool, args.clone())
                .starts_with("No such context")
        );
    }
    let listed = s.call_ok("list_contexts", json!({}));
    assert_eq!(
        listed["structuredContent"],
        json!({"contexts": [], "default_context": "default"})
    );
    assert!(!data.exists(), "nothing was created");
    // Writes create the context, and the server keeps serving new contexts past any count.
    s.call_ok(
        "create_memory",
        json!({"type": "semantic", "content": "x", "id": "a"}),
    );
    s.call_ok(
        "aim_memory_store",
        json!({"entities": [{"name": "n", "entityType": "t", "observations": []}], "context": "aim"}),
    );
    let before = listing(&data);
    for (tool, args) in reads.iter().chain(&writes) {
        let r = s.call(tool, args.clone());
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(!text.starts_with("No such context"), "{tool}: {r}");
    }
    assert_eq!(
        listing(&data),
        before,
        "reads of an existing context create no files"
    );
    let listed = s.call_ok("list_contexts", json!({}));
    assert_eq!(
        listed["structuredContent"]["contexts"],
        json!([{"name": "aim", "open": true}, {"name": "default", "open": true}])
    );
    assert!(s.close().success());
}

/// With `--max-open-contexts 8`, 300 contexts are written and read back; the server holds a
/// bounded number of file descriptors throughout.
#[test]
fn e2e_many_contexts_bounded_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::spawn_with(dir.path(), &["--max-open-contexts", "8"]);
    let fds = |s: &Server| {
        std::fs::read_dir(format!("/proc/{}/fd", s.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let mut most = 0;
    for i in 0..300 {
        s.call_ok(
            "create_memory",
            json!({"type": "semantic", "content": "x", "id": "k", "context": format!("c{i}")}),
        );
        most = most.max(fds(&s));
    }
    for i in (0..300).step_by(7) {
        s.call_ok(
            "get_memory",
            json!({"memory_id": "k", "context": format!("c{i}")}),
        );
        most = most.max(fds(&s));
    }
    println!("most descriptors held: {most}");
    assert!(most < 80, "descriptors stay bounded: {most}");
    let listed = s.call_ok("list_contexts", json!({}));
    let contexts = listed["structuredContent"]["contexts"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(contexts.len(), 300);
    assert!(contexts.iter().filter(|c| c["open"] == json!(true)).count() <= 8);
    assert!(s.close().success());
}

/// Context names: one rule for every file system, checked name by name over the wire, and
/// a refused name creates nothing.
#[test]
fn e2e_context_names_are_portable() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::spawn_initialized(dir.path());
    for bad in [
        "con", "CON", "Con", "nul.txt", "aux", "prn.x", "com1", "lpt9", "-x", ".x", "_x", "x.",
        "x ", "a..b", "..", ".", "a/b", "/abs", "a\\b", "a\u{0}b", "Work", "é", "",
    ] {
        let text = s.call_err(
            "create_memory",
            json!({"type": "semantic", "content": "x", "context": bad}),
        );
        assert!(
            text.starts_with("Invalid argument `context`: must be 1-64 characters of a-z 0-9"),
            "{bad:?}: {text}"
        );
    }
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    for good in ["console", "nul1", "x.con", "my-project_2.v1", "0"] {
        s.call_ok(
            "create_memory",
            json!({"type": "semantic", "content": "x", "context": good}),
        );
    }
    assert!(s.close().success());
}

/// An unusable `--data-dir` is a one-line error naming the path, at start, exit code 1.
#[test]
fn unusable_data_dir_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let under = file.join("sub");
    let run = |p: &Path| {
        Command::new(env!("CARGO_BIN_EXE_hopgraph-mcp"))
            .arg("--data-dir")
            .arg(p)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for (path, why) in [
        (&file, "exists and is not a directory"),
        (&under, "is not a directory"),
    ] {
        let out = run(path);
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&path.display().to_string()) && err.contains(why),
            "{err}"
        );
    }
    // Unreadable (only meaningful when not running as root, which reads anything).
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let mut perm = std::fs::metadata(&locked).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o000);
    std::fs::set_permissions(&locked, perm).unwrap();
    if std::fs::read_dir(&locked).is_err() {
        let out = run(&locked);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be read"));
    }
    // A missing directory is fine (created on the first write), and nothing is created.
    let missing = dir.path().join("new/data");
    let out = run(&missing);
    assert!(out.status.success());
    assert!(!dir.path().join("new").exists());
}

fn call_line(id: u64, tool: &str, args: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
    .to_string()
}

/// Every request limit over the wire, at the limit and one past it.
#[test]
fn e2e_limits_at_and_past() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::spawn_initialized(dir.path());
    let mut ask = |line: &str| {
        s.send_raw(line.as_bytes());
        s.read()
    };
    // Line bytes: exactly LINE_BYTES_MAX is read (and parsed), one more is refused with
    // the request's id, the rest of the line skipped.
    let pad = |n: usize| {
        // Three strings, each within the 1 MiB string limit.
        let head = r#"{"jsonrpc":"2.0","id":"L","method":"ping","params":{"x":""#;
        let mid = r#"","z":""#;
        let tail = r#""}}"#;
        let fill = n - head.len() - 2 * mid.len() - tail.len();
        let third = fill / 3;
        let y = |k: usize| "y".repeat(k);
        format!(
            "{head}{}{mid}{}{mid}{}{tail}",
            y(third),
            y(third),
            y(fill - 2 * third)
        )
    };
    let r = ask(&pad(LINE_BYTES_MAX));
    assert!(r["result"].is_object(), "at the line limit: {r}");
    for n in [LINE_BYTES_MAX + 1, 20 << 20] {
        let r = ask(&pad(n));
        assert_eq!(
            (r["id"].clone(), r["error"]["code"].clone()),
            (json!("L"), json!(-32600)),
            "{n}"
        );
    }
    // Arguments bytes (compact JSON): content 1 MiB plus an extra argument to the limit.
    let args_of = |n: usize| {
        let mut a = json!({"type": "semantic", "content": "c".repeat(1 << 20), "pad": ""});
        let len = a.to_string().len();
        a["pad"] = json!("p".repeat(n - len));
        assert_eq!(a.to_string().len(), n);
        a
    };
    let r = ask(&call_line(
        1,
        "create_memory",
        &args_of(ARGUMENTS_BYTES_MAX),
    ));
    assert_eq!(
        r["result"]["isError"],
        json!(false),
        "at the arguments limit"
    );
    let r = ask(&call_line(
        2,
        "create_memory",
        &args_of(ARGUMENTS_BYTES_MAX + 1),
    ));
    assert_eq!(
        r["result"]["content"][0]["text"],
        json!(format!(
            "Arguments are {} bytes, the limit is {ARGUMENTS_BYTES_MAX}",
            ARGUMENTS_BYTES_MAX + 1
        ))
    );
    // Per-argument limits: (tool, arguments at the limit, arguments one past, message start).
    let rel = json!({"from": "a", "to": "b", "relationType": "r"});
    let ent = json!({"name": "e", "entityType": "t", "observations": []});
    let cases = vec![
        (
            "aim_memory_link",
            json!({"relations": vec![rel.clone(); 1000]}),
            json!({"relations": vec![rel; 1001]}),
            "Invalid argument `relations`: has more than 1000 items",
        ),
        (
            "aim_memory_store",
            json!({"entities": vec![ent.clone(); 1000]}),
            json!({"entities": vec![ent; 1001]}),
            "Invalid argument `entities`: has more than 1000 items",
        ),
        (
            "aim_memory_store",
            json!({"entities": [{"name": "o", "entityType": "t", "observations": vec!["x"; 1000]}]}),
            json!({"entities": [{"name": "o", "entityType": "t", "observations": vec!["x"; 1001]}]}),
            "Invalid argument `entities[0].observations`",
        ),
        (
            "create_memory",
            json!({"type": "semantic", "content": "x", "embedding": vec![0.5; 4096]}),
            json!({"type": "semantic", "content": "x", "embedding": vec![0.5; 4097]}),
            "Invalid argument `embedding`",
        ),
        (
            "create_memory",
            json!({"type": "semantic", "content": "c".repeat(1 << 20)}),
            json!({"type": "semantic", "content": "c".repeat((1 << 20) + 1)}),
            "Invalid argument `content`",
        ),
        (
            "create_memory",
            json!({"type": "semantic", "content": "x", "title": "t".repeat(4096)}),
            json!({"type": "semantic", "content": "x", "title": "t".repeat(4097)}),
            "Invalid argument `title`",
        ),
        (
            "create_memory",
            json!({"type": "semantic", "content": "x", "id": "i".repeat(512)}),
            json!({"type": "semantic", "content": "x", "id": "i".repeat(513)}),
            "Invalid argument `id`",
        ),
        (
            "expand",
            json!({"seed_doc_ids": vec!["s"; 1000], "hops": 1}),
            json!({"seed_doc_ids": vec!["s"; 1001], "hops": 1}),
            "Invalid argument `seed_doc_ids`",
        ),
        (
            "traverse",
            json!({"memory_id": "a", "edge_types": vec!["e"; 1000]}),
            json!({"memory_id": "a", "edge_types": vec!["e"; 1001]}),
            "Invalid argument `edge_types`",
        ),
        (
            "link",
            json!({"source_id": "a", "target_id": "a", "edge_type": "e".repeat(128)}),
            json!({"source_id": "a", "target_id": "a", "edge_type": "e".repeat(129)}),
            "Invalid argument `edge_type`",
        ),
        (
            "get_memory",
            json!({"memory_id": "a", "context": "x".repeat(64)}),
            json!({"memory_id": "a", "context": "x".repeat(65)}),
            "Invalid argument `context`",
        ),
    ];
    for (i, (tool, at, past, msg)) in cases.into_iter().enumerate() {
        let r = ask(&call_line(10 + i as u64, tool, &at));
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(!text.starts_with(msg), "{tool} at the limit: {text}");
        let r = ask(&call_line(100 + i as u64, tool, &past));
        assert_eq!(r["id"], json!(100 + i as u64));
        assert_eq!(
            r["result"]["isError"],
            json!(true),
            "{tool} past the limit: {r}"
        );
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with(msg), "{tool} past the limit: {text}");
    }
    // Nesting of arguments: 40 levels, then 41.
    let nest = |levels: usize| {
        let mut v = json!(1);
        for _ in 0..levels - 1 {
            v = json!([v]);
        }
        json!({"type": "semantic", "content": "x", "pad": v})
    };
    let r = ask(&call_line(300, "create_memory", &nest(40)));
    assert_eq!(r["result"]["isError"], json!(false), "40 levels: {r}");
    let r = ask(&call_line(301, "create_memory", &nest(41)));
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Arguments are nested more than 40")
    );
    s.alive();
    assert!(s.close().success());
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Peak memory of the server (VmHWM) under limit-sized and oversized requests stays a
/// small multiple of the line limit; escaped strings take time linear in their length.
#[test]
fn e2e_memory_per_request_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::spawn_initialized(dir.path());
    s.call_ok(
        "create_memory",
        json!({"type": "semantic", "content": "warm"}),
    );
    let pid = s.child.id();
    let base = vm_hwm_kib(pid);
    let rel = json!({"from": "a", "to": "b", "relationType": "r"});
    let mut report = Vec::new();
    // 100,000 relations (a 5.5 MB line): refused at the line limit, never stored.
    let big = call_line(
        1,
        "aim_memory_link",
        &json!({"relations": vec![rel.clone(); 100_000]}),
    );
    // 1001 relations padded to just under the line limit: refused at item 1001.
    let mut over = json!({"relations": vec![rel.clone(); 1001]});
    let room = LINE_BYTES_MAX - call_line(2, "aim_memory_link", &over).len() - 20;
    over["pad"] = json!("p".repeat(room));
    let over = call_line(2, "aim_memory_link", &over);
    // A request near the limits that is served: 1 MiB of content and 65,000 small values
    // (just under the message's value limit).
    let mut small = json!({"type": "semantic", "content": "c".repeat(1 << 20)});
    for k in 0..15 {
        small[format!("p{k}")] = json!(vec![0; 4096]);
    }
    let small = call_line(3, "create_memory", &small);
    let nul = call_line(
        4,
        "create_memory",
        &json!({"type": "semantic", "content": "\u{0}".repeat(300_000)}),
    );
    let aaa = call_line(
        5,
        "create_memory",
        &json!({"type": "semantic", "content": "A".repeat(300_000)}),
    );
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"ping","params":{{"x":"{}"}}}}"#,
        "y".repeat(100 << 20)
    );
    for (name, line) in [
        ("100k relations", &big),
        ("1001 relations", &over),
        ("limit-sized", &small),
        ("300k NULs", &nul),
        ("300k A", &aaa),
        ("100 MB line", &huge),
    ] {
        let t = std::time::Instant::now();
        s.send_raw(line.as_bytes());
        let r = s.read();
        let took = t.elapsed();
        assert!(
            r.get("id").is_some_and(|id| !id.is_null()),
            "{name}: answered with its id"
        );
        let hwm = vm_hwm_kib(pid);
        report.push(format!(
            "{name} ({} bytes): {:.0} ms, VmHWM {} MiB",
            line.len(),
            took.as_secs_f64() * 1e3,
            hwm >> 10
        ));
    }
    let peak = vm_hwm_kib(pid);
    println!("baseline VmHWM {} MiB\n{}", base >> 10, report.join("\n"));
    let limit_kib = (LINE_BYTES_MAX >> 10) as u64;
    assert!(
        peak - base < 24 * limit_kib,
        "peak {peak} KiB over a baseline of {base} KiB: more than 24 x the line limit"
    );
    let _ = std::io::stdout().flush();
    assert!(s.close().success());
}

/// `--max-open-contexts` takes 1 to 4096; `--help` documents it and every limit.
#[test]
fn max_open_contexts_flag_and_help() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hopgraph-mcp"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    for want in [
        "--max-open-contexts N",
        "2,162,688 bytes",
        "2,097,152 bytes",
        "65,536 JSON values",
        "nested at most 40 levels",
        "relations: 1000 items",
        "embedding: 4096",
        "content: 1 MiB",
        "lpt1-lpt9",
        "No such context",
    ] {
        assert!(help.contains(want), "--help mentions {want:?}");
    }
    for bad in ["0", "4097", "-1", "many"] {
        let out = run(&["--max-open-contexts", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--max-open-contexts must be"));
    }
}
