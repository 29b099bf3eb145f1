//! The byte layouts exist once: the diagrams in the `format` module docs must appear
//! verbatim in DESIGN.md, so the two can never drift apart.

fn text_block(path: &str) -> String {
    let src = std::fs::read_to_string(path).unwrap();
    let doc: Vec<&str> = src
        .lines()
        .filter(|l| l.starts_with("//!"))
        .map(|l| {
            l.strip_prefix("//! ")
                .unwrap_or(l.trim_start_matches("//!"))
        })
        .collect();
    let doc = doc.join("\n");
    let start = doc
        .find("```text\n")
        .unwrap_or_else(|| panic!("{path} has no ```text block"))
        + 8;
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end].to_owned()
}

#[test]
fn design_doc_holds_every_format_diagram() {
    let root = env!("CARGO_MANIFEST_DIR");
    let design = std::fs::read_to_string(format!("{root}/DESIGN.md")).unwrap();
    for file in [
        "wal.rs",
        "manifest.rs",
        "segment/mod.rs",
        "segment/vector.rs",
        "text.rs",
    ] {
        let block = text_block(&format!("{root}/src/format/{file}"));
        assert!(block.lines().count() > 5, "{file}: diagram too short");
        assert!(
            design.contains(&block),
            "DESIGN.md lacks the current byte diagram of src/format/{file}"
        );
    }
}
