//! The sweep: planning (configs x GPU counts x sizes), the orchestrator that runs
//! each (config, GPU count) in fresh worker processes and turns their reports into
//! case results, the worker side of the protocol, and test-only fault injection.

pub mod failure;
pub mod fault;
pub mod gate;
pub mod group;
pub mod merge;
pub mod observer;
pub mod orchestrator;
pub mod plan;
pub mod preflight;
pub mod process;
pub mod protocol;
pub(crate) mod rounds;
pub mod session;
pub mod soak;
pub mod worker;

pub use observer::SweepObserver;
pub use plan::Plan;
