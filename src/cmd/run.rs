//! `nccl-bench run`: one rank of a multi-node run under a launcher. The flags become a
//! `cluster::run::RunRequest`; the cluster module does the rest.

use anyhow::Result;

use super::progress;
use super::settings::measure_settings;
use crate::cli::RunArgs;
use crate::cluster::launcher::Overrides;
use crate::cluster::run::{self, RunRequest};

pub fn run(args: &RunArgs) -> Result<u8> {
    // The rank count comes from the launcher: `cluster::run` sets it.
    let settings = measure_settings(&args.measure, Vec::new())?;
    let request = RunRequest {
        settings,
        rendezvous: args.rendezvous.clone(),
        rendezvous_timeout: args.rendezvous_timeout,
        pairs: args.pairs,
        run_dir: args.run_dir.clone(),
        overrides: Overrides {
            rank: args.rank,
            world_size: args.world_size,
            local_rank: args.local_rank,
        },
    };
    let mut observer = progress::for_terminal(args.measure.plain);
    run::run(&request, observer.as_mut(), std::env::args().collect())
}
