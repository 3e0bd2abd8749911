//! What a collective computes, independent of where it runs: the collectives with
//! nccl-tests' sizes and bus-bandwidth factors, element types and reduction
//! operators (with their NCCL enum values), the host reduction kernels, and the
//! rank-dependent fill pattern with the exact expected output of each collective.

pub mod collective;
pub mod datatype;
pub mod pattern;
pub mod reduce;

pub use datatype::{DataType, ReduceOp};
