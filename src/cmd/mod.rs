//! One file per command: it turns the command's flags (`cli`) into checked settings and
//! calls the layer that does the work. With `cli.rs`, the only code that sees clap
//! types. `progress` is the terminal's view of a running sweep.

pub mod baseline;
pub mod ceilings;
pub mod check;
pub mod compare;
pub mod configs;
pub mod doctor;
pub mod explain;
pub mod history;
pub mod import;
pub mod progress;
pub mod report;
pub mod run;
pub mod settings;
pub mod soak;
pub mod sweep;
pub mod worker;
pub mod workload;
