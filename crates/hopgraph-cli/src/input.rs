//! Reading input files: numbered lines, edge lists (TSV/CSV), and the bookkeeping of
//! invalid lines (fail on the first, or count and skip them with `--skip-invalid`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::{CliError, CliResult};

mod batch;

pub(crate) use batch::{BatchParser, EdgeBatch};

/// The file name that means standard input.
pub(crate) const STDIN: &str = "-";

/// Whether `path` names standard input ([`STDIN`]).
pub(crate) fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// A file (or standard input, named [`STDIN`]) read line by line, keeping the line number
/// and bytes consumed.
pub(crate) struct LineReader {
    reader: BufReader<Box<dyn Read + Send>>,
    buf: Vec<u8>,
    /// The start of a line read past the end of the last block (see `next_block`).
    carry: Vec<u8>,
    /// 1-based number of the line last returned.
    pub line_no: u64,
    /// Bytes consumed so far (for progress).
    pub bytes: u64,
}

impl LineReader {
    pub fn open(path: &Path) -> CliResult<LineReader> {
        let source: Box<dyn Read + Send> = if is_stdin(path) {
            Box::new(std::io::stdin())
        } else {
            Box::new(
                File::open(path)
                    .map_err(|e| CliError::io(format!("cannot open {}: {e}", path.display())))?,
            )
        };
        Ok(LineReader {
            reader: BufReader::with_capacity(1 << 20, source),
            buf: Vec::new(),
            carry: Vec::new(),
            line_no: 0,
            bytes: 0,
        })
    }

    /// The next line with its 1-based number, without its terminator (`\n` or `\r\n`), or
    /// None at the end. A line that is not UTF-8 comes back as `Err`.
    pub fn next_line(&mut self, path: &Path) -> CliResult<Option<(u64, Result<&str, Invalid>)>> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| CliError::io(format!("cannot read {}: {e}", path.display())))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        self.bytes += n as u64;
        Ok(Some((self.line_no, line_text(&self.buf))))
    }

    /// Reads whole lines, terminators included, into `out` (cleared first) until it
    /// holds at least `min` bytes or the input ends, and returns how many lines it holds
    /// (a last line without a terminator counts), numbered on from the line last read.
    /// [`block_lines`] gives them as `next_line` would. Cost: one copy of the bytes, no
    /// work per line (the caller splits them, e.g. on other threads). Do not mix with
    /// `next_line` after the first call.
    pub fn next_block(&mut self, path: &Path, out: &mut Vec<u8>, min: usize) -> CliResult<u64> {
        out.clear();
        out.append(&mut self.carry);
        let mut ended = false;
        loop {
            let buf = self
                .reader
                .fill_buf()
                .map_err(|e| CliError::io(format!("cannot read {}: {e}", path.display())))?;
            if buf.is_empty() {
                ended = true;
                break;
            }
            let (at, n) = (out.len(), buf.len());
            out.extend_from_slice(buf);
            self.reader.consume(n);
            // Whole lines only: what follows the last terminator waits for the next block.
            if out.len() >= min
                && let Some(i) = out[at..].iter().rposition(|&b| b == b'\n')
            {
                self.carry.extend_from_slice(&out[at + i + 1..]);
                out.truncate(at + i + 1);
                break;
            }
        }
        let terminated = out.iter().filter(|&&b| b == b'\n').count() as u64;
        let lines = terminated + u64::from(ended && !out.is_empty() && !out.ends_with(b"\n"));
        self.line_no += lines;
        self.bytes += out.len() as u64;
        Ok(lines)
    }
}

/// The lines of a block read by [`LineReader::next_block`], as `next_line` gives them
/// (without terminators; `Err` for a line that is not UTF-8).
pub(crate) fn block_lines(block: &[u8]) -> impl Iterator<Item = Result<&str, Invalid>> {
    let mut rest = block;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => rest.split_at(i + 1),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        Some(line_text(line))
    })
}

/// A line as read, terminator included, without it (`\n` or `\r\n`), or why it is not
/// UTF-8.
fn line_text(line: &[u8]) -> Result<&str, Invalid> {
    let line = match line.strip_suffix(b"\n") {
        Some(rest) => rest.strip_suffix(b"\r").unwrap_or(rest),
        None => line,
    };
    std::str::from_utf8(line).map_err(|e| {
        Invalid::new(
            "not UTF-8",
            format!("invalid UTF-8 at byte {} of the line", e.valid_up_to()),
        )
    })
}

/// Why one input line cannot be used: a short reason (the key of the `--skip-invalid`
/// tally) and the details for this line.
#[derive(Debug)]
pub(crate) struct Invalid {
    pub reason: &'static str,
    pub detail: String,
    /// Not the line's fault (an I/O error of the engine's scratch file): the command fails
    /// even with `--skip-invalid`.
    pub fatal: bool,
}

impl Invalid {
    pub fn new(reason: &'static str, detail: impl Into<String>) -> Invalid {
        Invalid {
            reason,
            detail: detail.into(),
            fatal: false,
        }
    }

    /// An error the engine raised for this line: for its content (a limit, a bad key), or
    /// (fatal) for another reason, such as an I/O error of the scratch file that a load
    /// spills its edges to.
    pub fn engine(e: hopgraph::Error) -> Invalid {
        let fatal = !matches!(
            e,
            hopgraph::Error::InvalidArgument { .. } | hopgraph::Error::LimitExceeded { .. }
        );
        Invalid {
            fatal,
            ..Invalid::new("rejected by the database", CliError::from(e).to_string())
        }
    }
}

/// Where invalid lines go: the first fails the command, or (skipping) they are tallied.
#[derive(Debug, Default)]
pub(crate) struct InvalidLines {
    skip: bool,
    /// Said after the first invalid line when not skipping.
    consequence: &'static str,
    pub total: u64,
    by_reason: BTreeMap<&'static str, u64>,
    examples: Vec<String>,
}

const EXAMPLES_MAX: usize = 5;

impl InvalidLines {
    pub fn new(skip: bool, consequence: &'static str) -> InvalidLines {
        InvalidLines {
            skip,
            consequence,
            ..InvalidLines::default()
        }
    }

    /// Records an invalid line of `path`; an error unless skipping.
    pub fn record(&mut self, path: &Path, line: u64, invalid: Invalid) -> CliResult {
        let at = format!("{}:{line}: {}", path.display(), invalid.detail);
        if invalid.fatal {
            return Err(CliError::new(format!("{at} (nothing was imported)")));
        }
        if !self.skip {
            return Err(CliError::new(format!("{at} ({})", self.consequence)));
        }
        self.total += 1;
        *self.by_reason.entry(invalid.reason).or_default() += 1;
        if self.examples.len() < EXAMPLES_MAX {
            self.examples.push(at);
        }
        Ok(())
    }

    /// A report of the skipped lines for stderr, or None when there were none.
    pub fn report(&self) -> Option<String> {
        if self.total == 0 {
            return None;
        }
        let mut s = format!("skipped {} invalid lines:\n", self.total);
        for (reason, n) in &self.by_reason {
            s.push_str(&format!("  {n:>8}  {reason}\n"));
        }
        s.push_str("first examples:\n");
        for e in &self.examples {
            s.push_str(&format!("  {e}\n"));
        }
        Some(s)
    }
}

/// The field separator of a delimited edge list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delimited {
    Tsv,
    Csv,
}

/// One edge line: `source`, `target`, `type` and an optional weight.
#[derive(Debug)]
pub(crate) struct EdgeLine<'a> {
    pub source: Cow<'a, str>,
    pub target: Cow<'a, str>,
    pub edge_type: Cow<'a, str>,
    pub weight: Option<f32>,
}

/// How a delimited line is to be treated.
pub(crate) enum Parsed<'a> {
    /// Empty line or `#` comment.
    Skip,
    Edge(EdgeLine<'a>),
}

impl Delimited {
    fn name(self) -> &'static str {
        match self {
            Delimited::Tsv => "tab",
            Delimited::Csv => "comma",
        }
    }

    fn split(self, line: &str) -> Result<Fields<'_>, Invalid> {
        let mut fields = Fields::default();
        match self {
            Delimited::Tsv => {
                // A byte loop: fields are short, and a tab is ASCII, so every cut is on a
                // character boundary (`get` cannot fail).
                let mut start = 0;
                for (i, &b) in line.as_bytes().iter().enumerate() {
                    if b == b'\t' {
                        fields.push(Cow::Borrowed(line.get(start..i).unwrap_or_default()));
                        start = i + 1;
                    }
                }
                fields.push(Cow::Borrowed(line.get(start..).unwrap_or_default()));
            }
            Delimited::Csv => split_csv(line, &mut fields)?,
        }
        Ok(fields)
    }

    /// Parses one line; `first` marks the first data line of a file, which may be a header
    /// (`source`, `target`, `type`[, `weight`] or the synonyms listed in `is_header`).
    pub fn parse<'a>(self, line: &'a str, first: bool) -> Result<Parsed<'a>, Invalid> {
        if line.is_empty() || line.starts_with('#') {
            return Ok(Parsed::Skip);
        }
        let fields = self.split(line)?;
        if first && is_header(&fields) {
            return Ok(Parsed::Skip);
        }
        if !(3..=4).contains(&fields.count) {
            return Err(Invalid::new(
                "wrong number of fields",
                format!(
                    "expected 3 or 4 {}-separated fields (source, target, type[, weight]), found {}",
                    self.name(),
                    fields.count
                ),
            ));
        }
        for (i, name) in ["source", "target", "type"].iter().enumerate() {
            if fields.kept[i].is_empty() {
                return Err(Invalid::new("empty field", format!("the {name} is empty")));
            }
        }
        let weight = match fields.get(3) {
            None => None,
            Some(w) => match w.parse::<f32>() {
                Ok(x) if x.is_finite() => Some(x),
                _ => {
                    return Err(Invalid::new(
                        "bad weight",
                        format!("weight {w:?} is not a finite number"),
                    ));
                }
            },
        };
        let [source, target, edge_type, _] = fields.kept;
        Ok(Parsed::Edge(EdgeLine {
            source,
            target,
            edge_type,
            weight,
        }))
    }
}

/// The fields of a delimited line: the first four kept, all of them counted (a line has
/// 3 or 4), so splitting a line allocates nothing.
#[derive(Default)]
struct Fields<'a> {
    kept: [Cow<'a, str>; 4],
    count: usize,
}

impl<'a> Fields<'a> {
    fn push(&mut self, field: Cow<'a, str>) {
        if let Some(slot) = self.kept.get_mut(self.count) {
            *slot = field;
        }
        self.count += 1;
    }

    fn get(&self, i: usize) -> Option<&str> {
        (i < self.count)
            .then(|| self.kept.get(i))
            .flatten()
            .map(|f| &**f)
    }
}

/// Whether the fields name columns rather than an edge.
fn is_header(fields: &Fields<'_>) -> bool {
    let is = |i: usize, names: &[&str]| {
        fields
            .get(i)
            .is_some_and(|f| names.iter().any(|n| f.eq_ignore_ascii_case(n)))
    };
    (3..=4).contains(&fields.count)
        && is(0, &["source", "src", "from", "subject"])
        && is(1, &["target", "dst", "to", "object"])
        && is(
            2,
            &["type", "edge_type", "relation", "relationtype", "label"],
        )
}

/// Splits a CSV line (RFC 4180 quoting within one line: `"a,b"`, `"say ""hi"""`).
fn split_csv<'a>(line: &'a str, fields: &mut Fields<'a>) -> Result<(), Invalid> {
    let mut rest = line;
    loop {
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let after = loop {
                match chars.next() {
                    None => {
                        return Err(Invalid::new(
                            "bad CSV quoting",
                            "a quoted field is not closed on this line",
                        ));
                    }
                    Some((i, '"')) => {
                        if quoted[i + 1..].starts_with('"') {
                            value.push('"');
                            chars.next();
                        } else {
                            break &quoted[i + 1..];
                        }
                    }
                    Some((_, c)) => value.push(c),
                }
            };
            fields.push(Cow::Owned(value));
            if after.is_empty() {
                return Ok(());
            }
            match after.strip_prefix(',') {
                Some(r) => rest = r,
                None => {
                    return Err(Invalid::new(
                        "bad CSV quoting",
                        "a closing quote must be followed by a comma or the end of the line",
                    ));
                }
            }
        } else {
            match rest.find(',') {
                Some(i) => {
                    fields.push(Cow::Borrowed(&rest[..i]));
                    rest = &rest[i + 1..];
                }
                None => {
                    fields.push(Cow::Borrowed(rest));
                    return Ok(());
                }
            }
        }
    }
}

/// Writes `field` as a CSV field, quoted when it must be.
pub(crate) fn csv_field(field: &str) -> Cow<'_, str> {
    if field.contains([',', '"', '\r', '\n']) || field.starts_with('#') {
        Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of whole lines give the lines, numbers and byte counts `next_line` gives,
    /// whatever the block size: CRLF and LF, blank lines, a lone `\r` not before `\n`,
    /// invalid UTF-8, a line longer than a block, and a last line with or without its
    /// terminator.
    #[test]
    fn blocks_split_as_next_line_does() {
        let long = "x".repeat(5000);
        let inputs: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"\n".to_vec(),
            b"a\nb".to_vec(),
            b"a\r\n\r\nb\r".to_vec(),
            format!("{long}\nshort\n{long}").into_bytes(),
            b"ok\n\xff\xfe bad\nlast\n".to_vec(),
            b"one\ntwo\nthree\n".to_vec(),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (n, input) in inputs.iter().enumerate() {
            let path = dir.path().join(format!("in{n}"));
            std::fs::write(&path, input).unwrap();
            let mut want = Vec::new();
            let mut r = LineReader::open(&path).unwrap();
            while let Some((no, line)) = r.next_line(&path).unwrap() {
                want.push((no, line.map(str::to_owned).map_err(|e| e.detail)));
            }
            let want_bytes = r.bytes;
            for min in [1, 3, 64, 1 << 20] {
                let mut got = Vec::new();
                let mut r = LineReader::open(&path).unwrap();
                let mut block = Vec::new();
                loop {
                    let first = r.line_no + 1;
                    let count = r.next_block(&path, &mut block, min).unwrap();
                    if count == 0 {
                        assert!(block.is_empty());
                        break;
                    }
                    let lines: Vec<_> = block_lines(&block).collect();
                    assert_eq!(lines.len() as u64, count, "input {n}, min {min}");
                    for (no, line) in (first..).zip(lines) {
                        got.push((no, line.map(str::to_owned).map_err(|e| e.detail)));
                    }
                }
                assert_eq!(got, want, "input {n}, min {min}");
                assert_eq!(r.bytes, want_bytes, "input {n}, min {min}");
            }
        }
    }

    fn edge(fmt: Delimited, line: &str) -> (String, String, String, Option<f32>) {
        match fmt.parse(line, false).unwrap() {
            Parsed::Edge(e) => (
                e.source.into_owned(),
                e.target.into_owned(),
                e.edge_type.into_owned(),
                e.weight,
            ),
            Parsed::Skip => panic!("skipped"),
        }
    }

    #[test]
    fn tsv_keeps_exact_bytes() {
        let e = edge(Delimited::Tsv, " 007\t7 \tcaused_by\t0.5");
        assert_eq!(
            e,
            (" 007".into(), "7 ".into(), "caused_by".into(), Some(0.5))
        );
        assert!(Delimited::Tsv.parse("a\tb", false).is_err());
        assert!(Delimited::Tsv.parse("a\tb\tt\tNaN", false).is_err());
        assert!(Delimited::Tsv.parse("a\t\tt", false).is_err());
        assert!(matches!(
            Delimited::Tsv.parse("source\ttarget\ttype", true),
            Ok(Parsed::Skip)
        ));
        assert!(matches!(
            Delimited::Tsv.parse("source\ttarget\ttype", false),
            Ok(Parsed::Edge(_))
        ));
    }

    #[test]
    fn csv_quoting() {
        let e = edge(Delimited::Csv, r#""a,b","say ""hi""",t"#);
        assert_eq!(e, ("a,b".into(), "say \"hi\"".into(), "t".into(), None));
        assert!(Delimited::Csv.parse(r#""a,b,t"#, false).is_err());
        assert!(Delimited::Csv.parse(r#""a"x,b,t"#, false).is_err());
        let line = format!("{},{},t", csv_field("x,\"y\""), csv_field("#z"));
        let e = edge(Delimited::Csv, &line);
        assert_eq!((e.0.as_str(), e.1.as_str()), ("x,\"y\"", "#z"));
    }
}
