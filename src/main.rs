//! Entry point: parses the command line, runs the command, prints an error chain
//! once and maps outcomes to exit codes (0 ok, 1 failed cases or checks, 2 usage or
//! runtime errors, 130 interrupted).

use std::process::ExitCode;

use clap::Parser;

use nccl_bench::cli::{Cli, Command};
use nccl_bench::cmd;

fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Sweep(args) => cmd::sweep::run(&args),
        Command::Run(args) => cmd::run::run(&args),
        Command::Soak(args) => cmd::soak::run(&args),
        Command::Configs(args) => cmd::configs::run(&args),
        Command::Compare(args) => cmd::compare::run(&args),
        Command::Baseline(args) => cmd::baseline::run(&args),
        Command::Check(args) => cmd::check::run(&args),
        Command::History(args) => cmd::history::run(&args),
        Command::Import(args) => cmd::import::run(&args),
        Command::Report(args) => cmd::report::run(&args),
        Command::Explain(args) => cmd::explain::run(&args),
        Command::Doctor(args) => cmd::doctor::run(&args),
        Command::Workload(args) => cmd::workload::run(&args),
        Command::Worker(args) => Ok(cmd::worker::run(&args)),
        Command::Ceilings(args) => cmd::ceilings::run(&args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
