//! Progress of a long command over every phase: for `import`, reading the files, then the
//! engine's bulk-load phases ([`BulkPhase`]: ids, nodes, build out-CSR, build in-CSR, write,
//! fsync); for `reembed`, embedding and writing.
//!
//! Reports only store numbers (they come from the reading loop and from two engine
//! threads); a ticker thread draws. On a terminal the line is redrawn in place ten times a
//! second; otherwise a plain line is printed every few seconds, so that a log shows an
//! import is alive (`import: build out-CSR 45% 12.3M edges/s eta 0:07`). Either way a
//! line is at most [`WIDTH`] columns, so an 80-column terminal never wraps it, and the
//! import ends with one summary line of the time each phase took.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hopgraph::BulkPhase;

/// Widest line drawn, in columns (one less than a classic terminal, whose last column
/// makes some terminals wrap).
pub(crate) const WIDTH: usize = 79;

/// Every phase, in order: the CLI's reading first, then the engine's.
pub(crate) const IMPORT_PHASES: &[(&str, Unit)] = &[
    ("read", Unit::Bytes),
    ("ids", Unit::Count("keys")),
    ("spill runs", Unit::Count("edges")),
    ("nodes", Unit::Count("nodes")),
    ("merge out-CSR", Unit::Count("edges")),
    ("merge in-CSR", Unit::Count("edges")),
    ("build out-CSR", Unit::Count("edges")),
    ("build in-CSR", Unit::Count("edges")),
    ("write", Unit::Steps),
    ("fsync", Unit::Steps),
];

/// The slot of an engine phase in [`IMPORT_PHASES`].
fn slot(phase: BulkPhase) -> usize {
    match phase {
        BulkPhase::Ids => 1,
        BulkPhase::Spill => 2,
        BulkPhase::Nodes => 3,
        BulkPhase::MergeOut => 4,
        BulkPhase::MergeIn => 5,
        BulkPhase::BuildOut => 6,
        BulkPhase::BuildIn => 7,
        BulkPhase::Write => 8,
        // `BulkPhase` is non-exhaustive: a later phase is shown as the last one.
        _ => 9,
    }
}

/// What a phase counts, for its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Bytes,
    Count(&'static str),
    /// Steps of unequal size: a percentage and no rate.
    Steps,
}

#[derive(Clone, Copy, Debug, Default)]
struct PhaseState {
    started: Option<Instant>,
    finished: Option<Instant>,
    done: u64,
    /// None: not known (reading standard input).
    total: Option<u64>,
}

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Bar,
    Lines,
    Off,
}

/// Progress of one long command. Cheap to report to from any thread.
pub(crate) struct Progress {
    state: Arc<Mutex<Vec<PhaseState>>>,
    label: &'static str,
    phases: &'static [(&'static str, Unit)],
    mode: Mode,
    started: Instant,
    ticker: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Progress {
    /// Import progress on stderr: a bar on a terminal, a line every `every` otherwise,
    /// nothing when `quiet`.
    pub fn new(quiet: bool, every: Duration) -> Progress {
        Progress::with("import", IMPORT_PHASES, quiet, every)
    }

    /// Progress of command `label` through `phases` (reported by slot with [`Progress::phase`]).
    pub fn with(
        label: &'static str,
        phases: &'static [(&'static str, Unit)],
        quiet: bool,
        every: Duration,
    ) -> Progress {
        let mode = if quiet {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        };
        let state = Arc::new(Mutex::new(vec![PhaseState::default(); phases.len()]));
        let started = Instant::now();
        let ticker = (mode != Mode::Off)
            .then(|| {
                let interval = if mode == Mode::Bar {
                    Duration::from_millis(100)
                } else {
                    every
                };
                let (tx, rx) = mpsc::channel::<()>();
                let state = Arc::clone(&state);
                std::thread::Builder::new()
                    .name("hopgraph-progress".into())
                    .spawn(move || {
                        while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(interval) {
                            let line = current_line(&state, label, phases, mode == Mode::Bar);
                            let mut err = std::io::stderr().lock();
                            let _ = match mode {
                                Mode::Bar => write!(err, "\r{line:<WIDTH$}"),
                                _ => writeln!(err, "{line}"),
                            };
                            let _ = err.flush();
                        }
                    })
                    .ok()
                    .map(|handle| (tx, handle))
            })
            .flatten();
        Progress {
            state,
            label,
            phases,
            mode,
            started,
            ticker,
        }
    }

    /// Phase `slot` has done `done` of `total` (None: not known).
    pub fn phase(&self, slot: usize, done: u64, total: Option<u64>) {
        let mut phases = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if let Some(p) = phases.get_mut(slot) {
            p.started.get_or_insert(now);
            p.done = done;
            p.total = total;
            if total.is_some_and(|t| done >= t) {
                p.finished.get_or_insert(now);
            }
        }
    }

    /// Bytes read of `total` (None: unknown, standard input is read).
    pub fn read(&self, done: u64, total: Option<u64>) {
        self.phase(0, done, total);
    }

    /// Reading is over.
    pub fn read_done(&self) {
        let mut phases = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if let Some(p) = phases.first_mut() {
            p.started.get_or_insert(now);
            p.total = Some(p.done);
            p.finished.get_or_insert(now);
        }
    }

    /// The engine's report (the bulk load's progress callback).
    pub fn engine(&self, phase: BulkPhase, done: u64, total: u64) {
        self.phase(slot(phase), done, Some(total));
    }

    /// Stops drawing and prints the summary line (unless quiet).
    pub fn finish(mut self) {
        if let Some((tx, handle)) = self.ticker.take() {
            drop(tx);
            let _ = handle.join();
        }
        if self.mode == Mode::Off {
            return;
        }
        let phases = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let took: Vec<(&str, f64)> = self
            .phases
            .iter()
            .zip(&phases)
            .filter_map(|((name, _), p)| {
                let took = p.finished?.duration_since(p.started?);
                Some((*name, took.as_secs_f64()))
            })
            .collect();
        let text = summary(self.label, self.started.elapsed().as_secs_f64(), &took);
        let mut err = std::io::stderr().lock();
        if self.mode == Mode::Bar {
            let _ = write!(err, "\r{:WIDTH$}\r", "");
        }
        let _ = write!(err, "{text}");
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // An import that failed: stop the ticker and leave the terminal line clean.
        if let Some((tx, handle)) = self.ticker.take() {
            drop(tx);
            let _ = handle.join();
            if self.mode == Mode::Bar {
                let _ = write!(std::io::stderr(), "\r{:WIDTH$}\r", "");
            }
        }
    }
}

/// The line for the phase under way: the first one started and not finished (the in-CSR
/// build runs alongside the write, which waits for it).
fn current_line(
    state: &Mutex<Vec<PhaseState>>,
    label: &str,
    table: &[(&str, Unit)],
    bar: bool,
) -> String {
    let phases = state.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let now = Instant::now();
    let current = phases
        .iter()
        .position(|p| p.started.is_some() && p.finished.is_none())
        .or_else(|| phases.iter().rposition(|p| p.started.is_some()))
        .unwrap_or(0);
    let (Some(p), Some(&(name, unit))) = (phases.get(current), table.get(current)) else {
        return String::new();
    };
    let elapsed = p
        .started
        .map_or(0.0, |s| now.duration_since(s).as_secs_f64());
    render(label, name, unit, p.done, p.total, elapsed, bar)
}

/// One progress line, at most [`WIDTH`] columns: phase, bar (on a terminal), percentage,
/// rate and time left.
pub(crate) fn render(
    label: &str,
    name: &str,
    unit: Unit,
    done: u64,
    total: Option<u64>,
    elapsed: f64,
    bar: bool,
) -> String {
    const BAR: usize = 20;
    let mut line = format!("{label}: {name:<13}");
    let fraction = total.map(|t| if t == 0 { 1.0 } else { done as f64 / t as f64 });
    if bar {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "clamped to 0..=BAR first"
        )]
        let filled = fraction.map_or(0, |f| (f.clamp(0.0, 1.0) * BAR as f64) as usize);
        line.push_str(&format!(
            " [{}{}]",
            "#".repeat(filled),
            " ".repeat(BAR - filled)
        ));
    }
    match fraction {
        Some(f) => line.push_str(&format!(" {:>3.0}%", (f * 100.0).clamp(0.0, 100.0).floor())),
        None => line.push_str(&format!(" {}", amount(done as f64, unit))),
    }
    let rate = if elapsed > 0.0 {
        done as f64 / elapsed
    } else {
        0.0
    };
    if rate > 0.0 && unit != Unit::Steps {
        line.push_str(&format!(" {}/s", amount(rate, unit)));
    }
    match (total, done > 0 && rate > 0.0) {
        (Some(t), true) => {
            let left = t.saturating_sub(done) as f64 / rate;
            line.push_str(&format!(" eta {}", clock(left)));
        }
        // No estimate yet (a phase reported in one step): how long it has been running.
        _ => line.push_str(&format!(" {} elapsed", clock(elapsed))),
    }
    // Every part above is bounded, but the phase name and units are not checked: cut.
    if line.chars().count() > WIDTH {
        line = line.chars().take(WIDTH).collect();
    }
    line
}

/// `12.3M edges`, `456.7 MB`, `12 keys`: at most 6 digits and a short unit.
fn amount(x: f64, unit: Unit) -> String {
    let (value, suffix) = match x {
        x if x >= 1e12 => (x / 1e12, "T"),
        x if x >= 1e9 => (x / 1e9, "G"),
        x if x >= 1e6 => (x / 1e6, "M"),
        x if x >= 1e3 => (x / 1e3, "k"),
        x => (x, ""),
    };
    let value = if suffix.is_empty() {
        format!("{value:.0}")
    } else {
        format!("{value:.1}{suffix}")
    };
    match unit {
        Unit::Bytes => format!("{value}B"),
        Unit::Count(what) => format!("{value} {what}"),
        Unit::Steps => value,
    }
}

/// `m:ss`, `h:mm:ss`, or `>99h`.
fn clock(secs: f64) -> String {
    if !secs.is_finite() || secs >= 99.0 * 3600.0 {
        return ">99h".into();
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "finite and below 99 hours here; a negative value saturates to 0"
    )]
    let s = secs.ceil() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The closing lines: total time and each phase's, wrapped at [`WIDTH`] columns.
pub(crate) fn summary(label: &str, total: f64, phases: &[(&str, f64)]) -> String {
    let semicolon = if phases.is_empty() { "" } else { ";" };
    let mut words = vec![format!("{label}: done in {total:.2} s{semicolon}")];
    let n = phases.len();
    for (i, (name, secs)) in phases.iter().enumerate() {
        let sep = if i + 1 < n { "," } else { "" };
        words.push(format!("{name} {secs:.2} s{sep}"));
    }
    let mut out = String::new();
    let mut line = String::new();
    for w in words {
        if !line.is_empty() && line.chars().count() + 1 + w.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = "  ".into();
        }
        if !line.is_empty() && line != "  " {
            line.push(' ');
        }
        line.push_str(&w);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No line is wider than an 80-column terminal, whatever the numbers.
    #[test]
    fn lines_fit_80_columns() {
        let totals = [None, Some(0), Some(1), Some(1 << 20), Some(u64::MAX)];
        let dones = [0, 1, 999, 123_456_789, 265_000_000_000, u64::MAX];
        let elapsed = [0.0, 1e-9, 0.5, 3600.0, 1e9];
        let mut worst = 0;
        for &(name, unit) in IMPORT_PHASES {
            for total in totals {
                for done in dones {
                    for e in elapsed {
                        for bar in [false, true] {
                            let l = render("import", name, unit, done, total, e, bar);
                            let w = l.chars().count();
                            assert!(w <= 80, "{w}: {l}");
                            worst = worst.max(w);
                        }
                    }
                }
            }
        }
        assert!(worst <= WIDTH, "{worst}");
        // An absurd phase name is cut, not wrapped.
        let l = render(
            "import",
            &"x".repeat(200),
            Unit::Bytes,
            5,
            Some(10),
            1.0,
            true,
        );
        assert_eq!(l.chars().count(), WIDTH);
    }

    #[test]
    fn line_reads_well() {
        let l = render(
            "import",
            "build out-CSR",
            Unit::Count("edges"),
            45,
            Some(100),
            1.0 / 12.3e6 * 45.0,
            false,
        );
        assert_eq!(l, "import: build out-CSR  45% 12.3M edges/s eta 0:01");
        let l = render("import", "read", Unit::Bytes, 5_000_000, None, 1.0, false);
        assert_eq!(l, "import: read          5.0MB 5.0MB/s 0:01 elapsed");
        let l = render("import", "write", Unit::Steps, 3, Some(7), 2.0, true);
        assert_eq!(
            l,
            "import: write         [########            ]  42% eta 0:03"
        );
        let l = render("import", "fsync", Unit::Steps, 0, Some(1), 12.0, false);
        assert_eq!(l, "import: fsync           0% 0:12 elapsed");
        assert_eq!(clock(7.0), "0:07");
        let s = summary(
            "import",
            1234.5,
            &[
                ("read", 400.25),
                ("ids", 2.0),
                ("nodes", 80.0),
                ("build out-CSR", 300.0),
                ("build in-CSR", 250.0),
                ("write", 100.0),
                ("fsync", 12.5),
            ],
        );
        assert!(s.lines().all(|l| l.chars().count() <= WIDTH), "{s}");
        assert!(
            s.starts_with("import: done in 1234.50 s; read 400.25 s,"),
            "{s}"
        );
        assert!(s.ends_with("fsync 12.50 s\n"), "{s}");
        assert_eq!(clock(3725.0), "1:02:05");
        // A command whose phase never finished (another process did the work).
        assert_eq!(summary("index", 5.0, &[]), "index: done in 5.00 s\n");
    }
}
