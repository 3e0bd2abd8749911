//! This machine as the program reads it, never judged: the file-system view the doctor's
//! checks go through ([`Root`], a directory tree in tests), host facts for the manifest
//! (`host`), network interfaces (`net`), the GPUs the kernel driver shows (`gpus`), the
//! CUDA driver and its GPU facts (`cuda`), where libnccl is (`libnccl`), and the GPU,
//! link and CPU counters a soak samples (`counters`). The doctor
//! judges what is read here, the backends run on it; this module knows neither.

pub mod counters;
pub mod cuda;
pub mod gpus;
pub mod host;
pub mod libnccl;
pub mod net;
pub mod root;

pub use gpus::GpuPresence;
pub use root::{FsSpace, IfAddr, Memlock, Root};
