//! The NCCL backend: libnccl through our own libloading symbol table in three layers
//! (`ffi` raw symbols, `library` results with NCCL's codes and texts, `comm` safe
//! owners), the GPU communicator that times each collective with CUDA events (`gpu`), and
//! the link ceilings measured with copies (`ceiling`). Finding the library on a machine
//! is `machine::libnccl`'s.

pub mod ceiling;
pub mod comm;
pub mod ffi;
pub mod gpu;
pub mod library;

pub use library::{Nccl, NcclError, Runs, UniqueId};
