//! A manifest of a run that measured nothing, for tests and benchmarks to start from
//! (the run directory's writer and readers need one; nothing in a real run uses it).

use super::{BackendInfo, CaseCounts, HostInfo, RunManifest, RunStatus, ToolInfo};
use crate::config::IterationPolicy;
use crate::ops::collective::Collective;
use crate::ops::{DataType, ReduceOp};

impl RunManifest {
    /// A complete run of 2-rank float sums on `backend` that measured nothing, with no
    /// GPU, NCCL or host facts: what tests and benchmarks start from and fill in.
    pub fn synthetic(backend: &str) -> RunManifest {
        RunManifest {
            schema_version: 1,
            tool: ToolInfo {
                name: "nccl-bench".into(),
                version: "test".into(),
                git_rev: "test".into(),
            },
            command_line: vec![],
            label: None,
            status: RunStatus::Complete,
            started_at: String::new(),
            finished_at: None,
            error: None,
            backend: BackendInfo {
                requested: backend.into(),
                used: backend.into(),
                note: "synthetic".into(),
            },
            nccl: None,
            nccl_per_config: Default::default(),
            gpu: None,
            host: HostInfo::default(),
            configs: vec![],
            gpu_counts: vec![2],
            sizes: vec![],
            dtype: DataType::Float,
            op: ReduceOp::Sum,
            collectives: vec![Collective::AllReduce],
            root: 0,
            sizes_not_run: Vec::new(),
            iterations: IterationPolicy::Fixed { iters: 2000 },
            rounds: 1,
            looks: Vec::new(),
            design: None,
            group_rounds: Vec::new(),
            warmup_iters: 5,
            graph_iters: 0,
            timeout_s: 60.0,
            cases: CaseCounts::default(),
            warnings: vec![],
            cluster: None,
            doctor: Vec::new(),
            ceilings: None,
            soak: None,
            shm_backing: Default::default(),
            sizes_from: None,
            nccl_env: Default::default(),
        }
    }
}
