//! The NCCL backend's foundations: libnccl through our own libloading symbol table in
//! three layers (`ffi` raw symbols, `library` results with NCCL's codes and texts,
//! `comm` safe owners), and `discovery` of the library on a machine.

pub mod ceiling;
pub mod comm;
pub mod discovery;
pub mod facts;
pub mod ffi;
pub mod gpu;
pub mod library;

pub use library::{Nccl, NcclError, UniqueId};
