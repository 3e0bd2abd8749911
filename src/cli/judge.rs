//! The flags of the commands that judge finished runs: `compare`, `baseline`,
//! `check` and `history`, with their output formats.

// The doc comments here are `--help` texts, written for a terminal, not for rustdoc.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::units::{self, Bytes};

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  \
nccl-bench baseline results/nightly-* -o baseline.json")]
pub struct BaselineArgs {
    /// Run directories (sweeps, cluster runs or imports) of one backend and GPU model
    #[arg(value_name = "RUN_DIR", required = true)]
    pub runs: Vec<PathBuf>,

    /// Where to write the baseline (an existing file is not overwritten)
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    pub output: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    Table,
    Markdown,
    /// One self-contained page for a browser
    Html,
    Json,
    Csv,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 (steps are reported, not failed: gate with `check`), 2 error.\n\n\
Examples:\n  \
nccl-bench history results/                       every run found under results/\n  \
nccl-bench history results/nightly-* --sizes max,1M -o history/   with charts"
)]
pub struct HistoryArgs {
    /// Run directories, or directories holding them (searched up to three levels down)
    #[arg(value_name = "RUN_OR_RESULTS_DIR", required = true)]
    pub runs: Vec<PathBuf>,

    /// Sizes to follow, comma-separated: `max` (the largest) or a size such as 64K (the runs' nearest)
    #[arg(long, value_delimiter = ',', default_value = "max,64K,8", value_parser = parse_size_choice)]
    pub sizes: Vec<crate::analysis::history::SizeChoice>,

    /// A run is a step when its median's whole interval against the level before it is beyond this
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = units::parse_percent)]
    pub threshold: f64,

    /// How many runs of the current level each run is judged against
    #[arg(long, value_name = "N", default_value_t = crate::analysis::history::DEFAULT_WINDOW, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100))]
    pub window: usize,

    /// Output format on standard output
    #[arg(long, value_enum, default_value_t = HistoryFormat::Table)]
    pub format: HistoryFormat,

    /// Also write history.md, history.html (with the charts inline), history.json, history.csv and the charts (SVG, PNG) into this directory
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

fn parse_size_choice(text: &str) -> Result<crate::analysis::history::SizeChoice, String> {
    use crate::analysis::history::SizeChoice;
    match text.trim() {
        "max" | "largest" => Ok(SizeChoice::Largest),
        t => Bytes::parse(t)
            .map(|b| SizeChoice::Near(b.0))
            .map_err(|e| format!("{e} (or `max`)")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Table,
    Markdown,
    /// One self-contained page for a browser
    Html,
    Json,
    Junit,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 every case passes, 1 a case is slower beyond --threshold, missing from the run or not ok, 3 a case is not settled (more rounds, or a wider --threshold, would tell), 2 error.\n\n\
Example:\n  \
nccl-bench check results/nightly-new --baseline baseline.json --format junit -o nccl-bench.xml"
)]
pub struct CheckArgs {
    /// The run directory to check
    #[arg(value_name = "RUN_DIR")]
    pub run: PathBuf,

    /// The baseline (from `nccl-bench baseline`)
    #[arg(long, value_name = "FILE.json")]
    pub baseline: PathBuf,

    /// A case fails when its whole interval is slower than the baseline by more than this, and passes when its upper end is within it
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = units::parse_percent)]
    pub threshold: f64,

    /// Output format
    #[arg(long, value_enum, default_value_t = CheckFormat::Table)]
    pub format: CheckFormat,

    /// Write the output to this file instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// A job's collectives (NCCL's COLL log lines, Inspector JSON, a PyTorch trace or
    /// a CSV collective,bytes,count): also check the job's communication time against
    /// the baseline's (exit 1 when it is slower, 3 when not settled)
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Table,
    Markdown,
    /// One self-contained page for a browser
    Html,
    Csv,
    Json,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 no case slower, 1 a case slower beyond --threshold (or ok before and failing now), 2 error.\n\n\
Examples:\n  \
nccl-bench compare results/nightly-old results/nightly-new\n  \
nccl-bench compare results/run --config-a default --config-b shm-off --format markdown"
)]
pub struct CompareArgs {
    /// The reference run directory
    #[arg(value_name = "BASE_RUN")]
    pub base: PathBuf,

    /// The run to judge (omit to compare two configs of BASE_RUN)
    #[arg(value_name = "CAND_RUN")]
    pub candidate: Option<PathBuf>,

    /// Config of the base side (compares configs instead of runs)
    #[arg(long = "config-a", value_name = "NAME", requires = "config_b")]
    pub config_a: Option<String>,

    /// Config of the candidate side
    #[arg(long = "config-b", value_name = "NAME", requires = "config_a")]
    pub config_b: Option<String>,

    /// A case is slower or faster only when its interval lies wholly beyond this
    #[arg(long, value_name = "PERCENT", default_value = "2%", value_parser = units::parse_percent)]
    pub threshold: f64,

    /// Output format
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,

    /// A case is within when its own interval lies inside +-this (default: the
    /// threshold)
    #[arg(long, value_name = "PERCENT", value_parser = units::parse_percent)]
    pub margin: Option<f64>,

    /// The chance that any claim of the comparison is wrong (each case's interval
    /// for a direction is then at 1 - alpha / (cases x looks))
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = units::parse_percent)]
    pub alpha: f64,

    /// A job's collectives (NCCL's COLL log lines, or a CSV collective,bytes,count):
    /// also say what the change costs that job, per step
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
}
