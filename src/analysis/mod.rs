//! Analysis of what a run left behind: which transports NCCL actually used (read from its
//! debug logs), and the verdicts built on top of that. Everything here is pure or reads
//! files only; nothing prints, and nothing depends on `backend` or `sweep`.

pub mod baseline;
pub mod ceiling;
pub mod compare;
pub mod compare_render;
pub mod expected;
pub mod explain;
pub mod history;
pub mod history_facts;
pub mod history_render;
pub mod model_table;
pub mod nccl_log;
pub mod pairs;
pub mod report;
pub mod verdict;

pub use nccl_log::{
    Connection, Direction, Failure, FailureKind, NcclLog, NvlsUse, RankInfo, Transport,
    TransportKind,
};
