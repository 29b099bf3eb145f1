//! The layering written in DESIGN.md §1 is the layering in the code: every `crate::` path in
//! the engine's sources names a module of a lower layer (or the module's own). A module that
//! imports upward, or two kernels that import each other, fail this test with the file and
//! line.
//!
//! Whole files are read. Test code may reach anywhere, so it is left out item by item: the
//! item after a `#[cfg(test)]` (or `#[cfg(all(test, …))]`) attribute — a `mod x { … }` block
//! by brace matching, a `fn`, an `impl`, an enum variant, a match arm, a statement — and the
//! files of modules declared `#[cfg(test)] mod x;`. Comments, strings and character
//! literals are blanked before scanning, so neither a doc link nor a brace inside a string
//! misleads it, and a `use crate::{…}` group is followed across lines.

use std::collections::BTreeSet;
use std::ops::Range;
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

/// `text` with comments, and the contents of string and character literals, replaced by
/// spaces (newlines kept, so byte offsets and line numbers stay those of `text`).
fn blank_non_code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, r: Range<usize>| {
        for c in &mut out[r] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
                blank(&mut out, i..end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i..j);
                i = j;
            }
            b'"' => {
                // A raw string `r#"…"#` ends at `"` and as many `#` as it began with.
                let mut k = i;
                while k > 0 && b[k - 1] == b'#' {
                    k -= 1;
                }
                // `r"…"` or `br"…"`, not an identifier ending in r.
                let raw = k > 0
                    && b[k - 1] == b'r'
                    && (!is_ident(b.get(k.wrapping_sub(2)))
                        || (b[k - 2] == b'b' && !is_ident(b.get(k.wrapping_sub(3)))));
                let hashes = i - k;
                let mut j = i + 1;
                while j < b.len() {
                    if !raw && b[j] == b'\\' {
                        j += 2;
                        continue;
                    }
                    if b[j] == b'"'
                        && b[j + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&c| c == b'#')
                            .count()
                            == hashes
                    {
                        break;
                    }
                    j += 1;
                }
                blank(&mut out, i + 1..j.min(b.len()));
                i = j + 1 + if raw { hashes } else { 0 };
            }
            b'\'' => {
                // A character literal (`'x'`, `'\n'`, `'\u{7f}'`, `'é'`), not a lifetime.
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 3..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|n| i + 3 + n)
                } else {
                    let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 1 + ch)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i + 1..end);
                        i = end + 1;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).unwrap()
}

fn is_ident(c: Option<&u8>) -> bool {
    c.is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Where the item (or variant, match arm, statement) starting at `from` ends, in blanked
/// code: past its `;`, its outermost `{ … }`, or (not for a keyword item, whose generics
/// may hold commas) its `,`; before a bracket that closes an enclosing block.
fn item_end(code: &[u8], from: usize) -> usize {
    let mut i = from;
    // Further attributes and blanks before the item.
    loop {
        while i < code.len() && code[i].is_ascii_whitespace() {
            i += 1;
        }
        if code[i..].starts_with(b"#[") {
            i = matching(code, i + 1) + 1;
        } else {
            break;
        }
    }
    let word: String = code[i..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .map(|&c| char::from(c))
        .collect();
    let keyword_item = [
        "pub",
        "mod",
        "fn",
        "impl",
        "const",
        "static",
        "struct",
        "enum",
        "use",
        "type",
        "trait",
        "unsafe",
        "extern",
        "async",
        "macro_rules",
    ]
    .contains(&word.as_str());
    let mut depth = 0i32;
    while i < code.len() {
        match code[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return i;
                }
                if depth == 0 && code[i] == b'}' {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            b',' if depth == 0 && !keyword_item => return i + 1,
            _ => {}
        }
        i += 1;
    }
    code.len()
}

/// The index of the bracket closing the one at `open`.
fn matching(code: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (i, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    code.len() - 1
}

/// Test-only code of a blanked file: the byte ranges of the items under `#[cfg(test)]`,
/// and the names of the modules declared there without a body (`mod x;`).
fn test_items(code: &str) -> (Vec<Range<usize>>, Vec<String>) {
    let b = code.as_bytes();
    let (mut ranges, mut modules) = (Vec::new(), Vec::new());
    let mut from = 0;
    while let Some(n) = code[from..].find("#[cfg(") {
        let at = from + n;
        let close = matching(b, at + 1);
        let cfg: String = code[at..=close].split_whitespace().collect();
        from = close + 1;
        if cfg != "#[cfg(test)]" && !cfg.starts_with("#[cfg(all(test,") {
            continue;
        }
        let end = item_end(b, close + 1);
        let item: Vec<&str> = code[close + 1..end].split_whitespace().collect();
        if let [.., "mod", name] = item.as_slice()
            && let Some(name) = name.strip_suffix(';')
        {
            modules.push(name.to_owned());
        }
        ranges.push(at..end);
        from = end;
    }
    (ranges, modules)
}

/// The file of module `name` declared in `file` (without a `#[path]`).
fn module_file(file: &Path, name: &str) -> PathBuf {
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap();
    let base = if stem == "mod" || stem == "lib" {
        dir.to_owned()
    } else {
        dir.join(stem)
    };
    let flat = base.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        base.join(name).join("mod.rs")
    }
}

/// The top-level modules a text names through `crate::` (including `crate::{a, b::c}`,
/// nested groups and groups over several lines), each with the byte offset of its
/// `crate::`.
fn crate_refs(code: &str) -> Vec<(usize, String)> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(n) = code[from..].find("crate::") {
        let at = from + n;
        from = at + "crate::".len();
        // `hopgraph_crate::` is not this crate's root path (`$crate::` in a macro is).
        if is_ident(code.as_bytes().get(at.wrapping_sub(1))) {
            continue;
        }
        let rest = &code[from..];
        if rest.starts_with('{') {
            let close = matching(rest.as_bytes(), 0);
            let mut depth = 0;
            let mut item_start = 1;
            for (i, c) in rest[..close].char_indices().skip(1) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push((at, ident(&rest[item_start..i])));
                        item_start = i + 1;
                    }
                    _ => {}
                }
            }
            let last = ident(&rest[item_start..close]);
            if !last.is_empty() {
                out.push((at, last));
            }
        } else {
            out.push((at, ident(rest)));
        }
    }
    out
}

/// The violations in `src/`, each `file:line: what`, the number of paths checked and the
/// files of test modules left out.
fn scan(src: &Path) -> (Vec<String>, usize, BTreeSet<PathBuf>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let blanked: Vec<(PathBuf, String)> = files
        .iter()
        .map(|f| {
            (
                f.clone(),
                blank_non_code(&std::fs::read_to_string(f).unwrap()),
            )
        })
        .collect();
    // Files of test modules declared `#[cfg(test)] mod x;`.
    let mut test_files = BTreeSet::new();
    for (file, code) in &blanked {
        for name in test_items(code).1 {
            let m = module_file(file, &name);
            assert!(
                m.exists(),
                "{}: test module {name} not found at {}",
                file.display(),
                m.display()
            );
            test_files.insert(m);
        }
    }
    let mut violations = Vec::new();
    let mut checked = 0;
    for (file, code) in &blanked {
        let rel = file.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if top == "lib" || test_files.contains(file) {
            continue;
        }
        let Some(own) = layer(&top) else {
            violations.push(format!(
                "{}: module `{top}` has no layer in this test and DESIGN.md §1",
                rel.display()
            ));
            continue;
        };
        let (tests, _) = test_items(code);
        for (at, target) in crate_refs(code) {
            if tests.iter().any(|r| r.contains(&at)) {
                continue;
            }
            checked += 1;
            let Some(theirs) = layer(&target) else {
                continue; // a crate-root re-export such as `crate::Result`
            };
            let upward = theirs > own;
            let sideways = theirs == own && target != top && KERNELS.contains(&top.as_str());
            if upward || sideways {
                let line = code[..at].matches('\n').count() + 1;
                violations.push(format!(
                    "{}:{line}: `{top}` (layer {own}) uses `crate::{target}` (layer {theirs})",
                    rel.display(),
                ));
            }
        }
    }
    (violations, checked, test_files)
}

#[test]
fn no_module_imports_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (violations, checked, test_files) = scan(&src);
    assert!(
        checked > 100,
        "the scan found only {checked} crate paths; is it reading src/?"
    );
    assert!(
        test_files.len() >= 4,
        "found only {} test module files: {test_files:?}",
        test_files.len()
    );
    assert!(
        violations.is_empty(),
        "upward imports:\n{}",
        violations.join("\n")
    );
}

/// A tree with one upward import after a test module, one inside it, one in a test module
/// file and one in a `#[cfg(test)]` function: only the first is reported, at its line.
#[test]
fn the_scan_reads_past_test_modules() {
    let tmp = crate::common::tempdir();
    let src = tmp.path();
    std::fs::create_dir_all(src.join("traverse")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod traverse;\n").unwrap();
    std::fs::write(
        src.join("traverse/mod.rs"),
        "use crate::graph::NodeId;\n\
         #[cfg(test)]\n\
         mod expand_tests;\n\
         #[cfg(test)]\n\
         mod tests {\n    use crate::db::Database;\n}\n\
         #[cfg(test)]\n\
         fn helper() -> crate::query::Q { todo!() }\n\
         pub fn up() -> crate::db::Snapshot { todo!() }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("traverse/expand_tests.rs"),
        "use crate::db::Database;\n",
    )
    .unwrap();
    let (violations, checked, test_files) = scan(src);
    assert_eq!(
        violations,
        ["traverse/mod.rs:10: `traverse` (layer 3) uses `crate::db` (layer 4)"]
    );
    assert_eq!(checked, 2);
    assert_eq!(
        test_files.into_iter().collect::<Vec<_>>(),
        [src.join("traverse/expand_tests.rs")]
    );
}

#[test]
fn the_scanner_sees_grouped_and_plain_paths() {
    let names = |code: &str| -> Vec<String> { crate_refs(code).into_iter().map(|r| r.1).collect() };
    assert_eq!(names("use crate::db::{Database, Snapshot};"), ["db"]);
    assert_eq!(
        names("use crate::{graph::NodeId, model};"),
        ["graph", "model"]
    );
    assert_eq!(
        names("let x = crate::traverse::Budget::unlimited();"),
        ["traverse"]
    );
    assert!(names("let x = 1;").is_empty());
    // A group over several lines, nested groups, and paths that are not `crate::`.
    assert_eq!(
        names("use crate::{\n    db::{a, b},\n    format::{x::{y, z}, w},\n    query,\n};"),
        ["db", "format", "query"]
    );
    assert!(names("use hopgraph_crate::db;").is_empty());
    assert_eq!(names("$crate::db::x()"), ["db"]);
    // Comments and strings are not code.
    let code = blank_non_code(
        "/// see [`crate::db`]\nlet s = \"crate::query {\"; // crate::kernel\nlet c = '{'; let q = '\\''; /* crate::db */ crate::graph::X",
    );
    assert_eq!(names(&code), ["graph"]);
    assert_eq!(code.lines().count(), 3, "lines kept");
    let raw = blank_non_code(
        "let r = r#\"crate::db \"}\" \"#; crate::model::M; fn f<'a>(x: &'a u8) { crate::sync::S }",
    );
    assert_eq!(names(&raw), ["model", "sync"]);
}

#[test]
fn test_items_are_skipped_and_production_after_them_is_not() {
    let code = blank_non_code(
        "use crate::a::A;\n\
         #[cfg(test)]\n\
         mod tests {\n    use crate::t1::X;\n    fn f() { let s = \"}\"; crate::t2::y(); }\n}\n\
         fn after() { crate::b::B; }\n\
         #[cfg(test)]\n\
         mod decl_tests;\n\
         enum Probe {\n    #[cfg(test)]\n    Off,\n    Auto,\n}\n\
         fn m(p: Probe) -> u32 {\n    match p {\n        #[cfg(test)]\n        Probe::Off => crate::t3::z(),\n        Probe::Auto => crate::c::C,\n    }\n}\n\
         #[cfg(all(test, loom))]\n\
         #[allow(dead_code)]\n\
         impl<A, B> Foo<A, B> for crate::t4::Bar { fn g() {} }\n\
         #[cfg(any(test, feature = \"internals\"))]\n\
         pub fn internals() { crate::d::D; }\n\
         #[cfg(test)]\n\
         const N: usize = crate::t5::N;\n\
         fn last() { crate::e::E; }\n",
    );
    let (tests, modules) = test_items(&code);
    assert_eq!(modules, ["decl_tests"]);
    let kept: Vec<String> = crate_refs(&code)
        .into_iter()
        .filter(|(at, _)| !tests.iter().any(|r| r.contains(at)))
        .map(|r| r.1)
        .collect();
    assert_eq!(kept, ["a", "b", "c", "d", "e"]);
}
