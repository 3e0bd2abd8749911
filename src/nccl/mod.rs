//! What nccl-bench knows about NCCL itself, in one place: the formats of its debug logs
//! and how to read them (`log`), the `transports` cell written from them (`cell`), what its failures mean and how to fix them
//! (`explain`, with what it knows as data with sources in `knowledge`), how much /dev/shm its SHM transport needs (`shm`), how it picks socket
//! interfaces and parses interface lists (`net`), the `NCCL_*` variables it knows
//! (`vars`), its version numbers (`version`) and user buffer registration
//! (`register`). Pure: nothing here prints, and only
//! `log::parse_files` reads files. The doctor, the backends, the sweep and the analysis
//! all build on it; nothing here depends on them. Loading libnccl is `backend::nccl`'s
//! business, not this module's.

pub mod cell;
pub mod explain;
pub mod knowledge;
pub mod log;
pub mod net;
pub mod register;
pub mod shm;
pub mod tuning;
pub mod vars;
pub mod version;

pub use version::NcclVersion;
