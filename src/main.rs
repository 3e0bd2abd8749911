//! Entry point: parses the command line, runs the command, prints an error chain
//! once and maps outcomes to exit codes (0 ok, 1 failed cases or checks, 2 usage or
//! runtime errors, 130 interrupted).

use std::process::ExitCode;

use clap::Parser;

use nccl_bench::cli::{Cli, Command};
use nccl_bench::config::SweepSettings;
use nccl_bench::sweep::{session, worker};

fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Sweep(args) => {
            let settings = SweepSettings::from_args(&args)?;
            session::run(&settings, std::env::args().collect())
        }
        Command::Run(args) => nccl_bench::cluster::run::run(&args, std::env::args().collect()),
        Command::Configs(args) => nccl_bench::cmd::configs::run(&args),
        Command::Compare(args) => nccl_bench::cmd::compare::run(&args),
        Command::Baseline(args) => nccl_bench::cmd::baseline::run(&args),
        Command::Check(args) => nccl_bench::cmd::check::run(&args),
        Command::History(args) => nccl_bench::cmd::history::run(&args),
        Command::Import(args) => nccl_bench::cmd::import::run(&args),
        Command::Report(args) => nccl_bench::cmd::report::run(&args),
        Command::Explain(args) => nccl_bench::cmd::explain::run(&args),
        Command::Doctor(args) => nccl_bench::cmd::doctor::run(&args),
        Command::Worker(args) => Ok(worker::run(&args).clamp(0, 255) as u8),
        Command::Ceilings(args) => nccl_bench::cmd::ceilings::run(&args),
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
