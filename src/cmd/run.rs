//! `nccl-bench run`: one rank of a multi-node run under a launcher. The flags become a
//! `cluster::run::RunRequest`; the cluster module does the rest.

use anyhow::Result;

use super::progress;
use super::settings::measure_settings;
use super::soak::run_soak_settings;
use crate::cli::RunArgs;
use crate::cluster::launcher::Overrides;
use crate::cluster::run::{self, Observers, RunRequest};

pub fn run(args: &RunArgs) -> Result<u8> {
    // The rank count comes from the launcher: `cluster::run` sets it.
    let settings = measure_settings(&args.measure, Vec::new())?;
    let soak = run_soak_settings(&args.soak, settings.dtype)?;
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
        soak,
    };
    // A soak's own lines say its progress; the sweep's say only its warnings.
    let mut observer = progress::for_terminal(args.measure.plain || request.soak.is_some());
    let mut soak_observer = super::soak::observer(args.measure.plain);
    let observers = Observers {
        sweep: observer.as_mut(),
        soak: soak_observer.as_mut(),
    };
    run::run(&request, observers, std::env::args().collect())
}
