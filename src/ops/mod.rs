//! What an all-reduce computes, independent of where it runs: element types and
//! reduction operators (with their NCCL enum values), the host reduction kernels,
//! and the rank-dependent fill pattern with its exact expected result.

pub mod datatype;
pub mod pattern;
pub mod reduce;

pub use datatype::{DataType, ReduceOp};
