//! What a history is made of: its options, the runs, and per series the points, the
//! steps and the one-off runs, each with what the manifests say changed.

use serde::Serialize;

use crate::stats::change::{Change, Level};

/// The sizes a history follows in each series group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeChoice {
    /// The largest size the runs have.
    Largest,
    /// The size the runs have nearest to this one (on a log scale).
    Near(u64),
}

/// The default: the largest size, 64 KiB and 8 B (latency).
pub const DEFAULT_SIZES: [SizeChoice; 3] = [
    SizeChoice::Largest,
    SizeChoice::Near(64 * 1024),
    SizeChoice::Near(8),
];

/// How many runs of the current level a run is judged against.
pub const DEFAULT_WINDOW: usize = 5;

/// The settings of a history.
#[derive(Debug, Clone)]
pub struct Options {
    pub sizes: Vec<SizeChoice>,
    pub threshold: f64,
    pub window: usize,
}

/// One run, as the history lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunEntry {
    pub dir: String,
    /// The directory's name, what tables show.
    pub name: String,
    pub started_at: String,
    pub label: Option<String>,
    pub backend: String,
}

/// A series: one case over the runs that have it.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub backend: String,
    pub config: String,
    pub nranks: u32,
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
    pub collective: String,
    pub points: Vec<Point>,
    pub steps: Vec<Step>,
    pub one_offs: Vec<OneOff>,
}

/// One run's result in a series.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Index into [`History::runs`].
    pub run: usize,
    pub status: String,
    /// The median iteration time (the mean for runs without per-iteration data), us.
    pub median_us: Option<f64>,
    /// Its 95 % interval, us.
    pub ci_us: Option<(f64, f64)>,
    pub busbw_gbps: Option<f64>,
    /// Ok, and not flagged by the quality rules: a point steps are judged on.
    pub trusted: bool,
    /// NCCL's algorithm and protocol (`Ring/LL128`), where the run recorded them.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub choice: String,
    /// Its level: its rounds, or its one measurement.
    #[serde(skip)]
    pub(super) level: Option<Level>,
}

/// A change of level between two runs.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The last run of the old level and the first of the new one ([`History::runs`]).
    pub before: usize,
    pub after: usize,
    pub verdict: Change,
    /// The new level against the old one (the median of its runs' medians), a
    /// fraction, +0.10 is 10 % slower: the median over the new level's first
    /// `window` runs (the run itself for an unconfirmed step).
    pub change: f64,
    /// The interval of that middle run (the hull of the two middle ones).
    pub ci: (f64, f64),
    /// The run after it is beyond the threshold too; false for the latest run.
    pub confirmed: bool,
    /// What the two runs' manifests say changed.
    pub differences: Vec<Difference>,
}

/// A run beyond the threshold that the next run did not follow.
#[derive(Debug, Clone, Serialize)]
pub struct OneOff {
    pub run: usize,
    pub verdict: Change,
    pub change: f64,
    pub ci: (f64, f64),
}

/// What a run's manifest records about where and with what it ran (`report::history`
/// words it); `Variables` and `Registration` are the series' config's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fact {
    Nccl,
    NcclLibrary,
    Driver,
    Cuda,
    Gpus,
    Hosts,
    Variables,
    Registration,
    /// nccl-bench's version.
    Tool,
    /// NCCL's algorithm and protocol at the series' size.
    Choice,
}

/// One fact that differs between two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub what: Fact,
    pub before: String,
    pub after: String,
}

/// Every series of the runs, with their steps.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub runs: Vec<RunEntry>,
    pub threshold: f64,
    pub window: usize,
    pub series: Vec<Series>,
}

impl History {
    pub fn steps(&self) -> impl Iterator<Item = (&Series, &Step)> {
        self.series
            .iter()
            .flat_map(|s| s.steps.iter().map(move |st| (s, st)))
    }

    /// Whether its series measure more than one (datatype, op): then names and
    /// charts say which.
    pub fn several_kinds(&self) -> bool {
        self.series
            .iter()
            .any(|s| (&s.dtype, &s.op) != (&self.series[0].dtype, &self.series[0].op))
    }
}
