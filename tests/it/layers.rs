//! The layering written in DESIGN.md §1 is the layering in the code: every `crate::` path in
//! the engine's sources names a module of a lower layer (or the module's own). A module that
//! imports upward, or two kernels that import each other, fail this test with the file and
//! line. Test code (files named `*_tests.rs` / `testgraph.rs`, and everything after a
//! file's first `#[cfg(test)]`) may reach anywhere.

use std::path::{Path, PathBuf};

/// Layer of each top-level module of `src/`; a module may use lower layers and itself.
/// Kernels share a layer but must not use each other.
fn layer(module: &str) -> Option<u32> {
    Some(match module {
        "graph" | "error" | "sync" | "model" | "filter" => 0,
        "format" => 1,
        "storage" => 2,
        // Pure compute kernels: they see data through narrow traits and plain slices.
        "traverse" | "text" | "vector" => 3,
        "db" => 4,
        // The public facades: key-level calls, and the kernels re-exported for hot loops.
        "query" | "kernel" => 5,
        _ => return None,
    })
}

const KERNELS: [&str; 3] = ["traverse", "text", "vector"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules a line names through `crate::` (including `crate::{a, b::c}`).
fn crate_refs(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(name);
            }
        } else {
            out.push(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    out
}

#[test]
fn no_module_imports_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        let name = file.file_name().unwrap().to_string_lossy();
        if top == "lib" || name.ends_with("_tests.rs") || name == "testgraph.rs" {
            continue;
        }
        let Some(own) = layer(&top) else {
            violations.push(format!(
                "{}: module `{top}` has no layer in this test and DESIGN.md §1",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            // Doc links name other layers without depending on them.
            if line.trim_start().starts_with("//") {
                continue;
            }
            for target in crate_refs(line) {
                checked += 1;
                let Some(theirs) = layer(&target) else {
                    continue; // a crate-root re-export such as `crate::Result`
                };
                let upward = theirs > own;
                let sideways = theirs == own && target != top && KERNELS.contains(&top.as_str());
                if upward || sideways {
                    violations.push(format!(
                        "{}:{}: `{top}` (layer {own}) uses `crate::{target}` (layer {theirs})",
                        rel.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        checked > 100,
        "the scan found only {checked} crate paths; is it reading src/?"
    );
    assert!(
        violations.is_empty(),
        "upward imports:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_scanner_sees_grouped_and_plain_paths() {
    assert_eq!(crate_refs("use crate::db::{Database, Snapshot};"), ["db"]);
    assert_eq!(
        crate_refs("use crate::{graph::NodeId, model};"),
        ["graph", "model"]
    );
    assert_eq!(
        crate_refs("let x = crate::traverse::Budget::unlimited();"),
        ["traverse"]
    );
    assert!(crate_refs("let x = 1;").is_empty());
}
