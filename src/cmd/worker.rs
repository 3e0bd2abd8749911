//! `nccl-bench worker` (hidden): one rank of a case group, spawned by the orchestrator
//! with the flags it writes. They become a `sweep::worker::WorkerSettings`.

use super::settings::backend_choice;
use crate::cli::WorkerArgs;
use crate::sweep::worker::{self, WorkerSettings};

/// The worker's exit code (0..=255).
pub fn run(args: &WorkerArgs) -> u8 {
    let settings = WorkerSettings {
        backend: backend_choice(args.backend),
        rank: args.rank,
        nranks: args.nranks,
        max_bytes: args.max_bytes,
        datatype: args.datatype,
        op: args.op,
        collective: args.collective,
        root: args.root,
        shm_dir: args.shm_dir.clone(),
        segment_prefix: args.segment_prefix.clone(),
        nccl_lib: args.nccl_lib.clone(),
        device: args.device,
        graph: args.graph,
        register: args.register,
        events_every: args.events_every,
        init_timeout_s: args.init_timeout_s,
        case_timeout_s: args.case_timeout_s,
    };
    worker::run(&settings).clamp(0, 255) as u8
}
