//! Cluster runs: `nccl-bench run` is one rank under the launcher a cluster already
//! has (Slurm, Open MPI, MPICH, torchrun-style). The launcher's environment gives the
//! rank layout; rank 0 listens at the rendezvous, every rank's process joins it and
//! becomes an agent that starts its worker when told, and rank 0 runs the same
//! orchestrator as `sweep` over those connections and writes the run directory.

pub mod agent;
pub mod counters;
pub mod devices;
pub mod gather;
pub mod hostlist;
pub mod launcher;
pub mod rank;
pub mod remote;
pub mod rendezvous;
pub mod run;
pub mod soak;
pub mod target;
pub mod wire;
