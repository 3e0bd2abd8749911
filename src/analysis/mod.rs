//! Judging what runs left behind: the SHM verdict, run-vs-run comparison, baselines and
//! checks, history over many runs, GPU and node pairs, the latency/bandwidth model, link
//! ceilings, published figures, what NVLS gained, and what the run's own NCCL logs say
//! (`crate::nccl::explain` on them). It reads run directories (through `export`) and the
//! transports column NCCL's logs gave (`crate::nccl::log`); everything here is pure or
//! reads files only; nothing prints, and nothing depends on `backend` or `sweep`.

pub mod baseline;
pub mod ceiling;
pub mod compare;
pub mod expected;
pub mod history;
pub mod job;
pub mod model_table;
pub mod nccl_logs;
pub mod nvls;
pub mod pairs;
pub mod soak;
pub mod tuning;
pub mod verdict;
