//! Delimited files read in batches: one thread reads and splits lines into an
//! [`EdgeBatch`] that owns the text of its fields, while another adds the edges to the
//! bulk load, telling it the keys of the next few edges ahead of time (see
//! [`BulkLoad::prefetch`]).

use std::borrow::Cow;
use std::path::Path;

use super::{Delimited, EdgeLine, Invalid, LineReader, Parsed};
use crate::CliResult;
use hopgraph::BulkLoad;

/// Lines of a delimited file are parsed in batches of this many.
const BATCH_LINES: usize = 16 * 1024;

/// Lines whose keys are looked up together (see [`BulkLoad::prefetch`]).
const PREFETCH_LINES: usize = 16;

/// A batch of parsed lines of a delimited file, owning the text of its edges' fields, so
/// that one thread can read and split lines while another loads the edges.
#[derive(Debug, Default)]
pub(crate) struct EdgeBatch {
    /// Source, target and type of each edge, end to end.
    text: String,
    /// Each line's number and its edge (None for a blank line, comment or header), or why
    /// it cannot be used.
    lines: Vec<(u64, Result<Option<EdgeSpan>, Invalid>)>,
    /// Bytes of the file consumed through this batch.
    pub bytes: u64,
}

/// An edge of an [`EdgeBatch`]: where its fields end in `text`, and its weight.
#[derive(Debug)]
struct EdgeSpan {
    ends: [usize; 3],
    weight: Option<f32>,
}

impl EdgeBatch {
    fn push(&mut self, line_no: u64, parsed: Result<Parsed<'_>, Invalid>) {
        let edge = parsed.map(|p| match p {
            Parsed::Skip => None,
            Parsed::Edge(e) => {
                let mut ends = [0; 3];
                for (end, field) in ends.iter_mut().zip([&e.source, &e.target, &e.edge_type]) {
                    self.text.push_str(field);
                    *end = self.text.len();
                }
                Some(EdgeSpan {
                    ends,
                    weight: e.weight,
                })
            }
        });
        self.lines.push((line_no, edge));
    }

    /// Calls `f` with `load`, each line's number and its edge (None for lines without
    /// one), in order. Before each group of lines, `load` is told their keys (see
    /// [`BulkLoad::prefetch`]).
    ///
    /// # Errors
    /// The first error of `f`.
    pub fn for_each(
        self,
        load: &mut BulkLoad,
        mut f: impl FnMut(&mut BulkLoad, u64, Result<Option<EdgeLine<'_>>, Invalid>) -> CliResult,
    ) -> CliResult {
        let text = &self.text;
        let field = |range: std::ops::Range<usize>| text.get(range).unwrap_or_default();
        let mut lines = self.lines.into_iter();
        let mut start = 0;
        let mut keys = Vec::with_capacity(2 * PREFETCH_LINES);
        let mut group = Vec::with_capacity(PREFETCH_LINES);
        loop {
            // The keys of the next few edges, which begin where the last edge ended.
            keys.clear();
            let mut at = start;
            while group.len() < PREFETCH_LINES {
                let Some(line) = lines.next() else { break };
                if let (_, Ok(Some(span))) = &line {
                    let [a, b, c] = span.ends;
                    keys.push(field(at..a));
                    keys.push(field(a..b));
                    at = c;
                }
                group.push(line);
            }
            if group.is_empty() {
                return Ok(());
            }
            load.prefetch(&keys);
            for (line_no, edge) in group.drain(..) {
                let edge = edge.map(|span| {
                    span.map(|span| {
                        let [a, b, c] = span.ends;
                        let e = EdgeLine {
                            source: Cow::Borrowed(field(start..a)),
                            target: Cow::Borrowed(field(a..b)),
                            edge_type: Cow::Borrowed(field(b..c)),
                            weight: span.weight,
                        };
                        start = c;
                        e
                    })
                });
                f(load, line_no, edge)?;
            }
        }
    }
}

/// Reads a delimited file batch by batch.
pub(crate) struct BatchParser<'a> {
    path: &'a Path,
    lines: &'a mut LineReader,
    format: Delimited,
    /// No data line has been seen yet (the next may be a header).
    first: bool,
}

impl<'a> BatchParser<'a> {
    pub fn new(path: &'a Path, lines: &'a mut LineReader, format: Delimited) -> Self {
        BatchParser {
            path,
            lines,
            format,
            first: true,
        }
    }

    /// The next batch, or None at the end of the file.
    ///
    /// # Errors
    /// Read errors.
    pub fn next_batch(&mut self) -> CliResult<Option<EdgeBatch>> {
        let mut batch = EdgeBatch::default();
        while batch.lines.len() < BATCH_LINES {
            let Some((line_no, line)) = self.lines.next_line(self.path)? else {
                break;
            };
            let parsed = line.and_then(|line| {
                let data_line = !line.is_empty() && !line.starts_with('#');
                let parsed = self.format.parse(line, self.first);
                self.first &= !data_line;
                parsed
            });
            batch.push(line_no, parsed);
        }
        batch.bytes = self.lines.bytes;
        Ok((!batch.lines.is_empty()).then_some(batch))
    }
}
