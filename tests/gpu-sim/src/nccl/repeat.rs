//! Operations that repeat the last one a process computed. A timed loop runs one
//! collective on the same buffers thousands of times; with nothing written to device
//! memory in between (`driver::device_writes`), each run computes the bytes its
//! receive buffers already hold. The stand-in then skips moving them (`work`), so a
//! sweep's loop costs its synchronization, not its bytes, while every result a
//! caller can read is what NCCL's would be.

use std::sync::Mutex;

use super::work::Kind;

/// One operation as computed: its communicator (the rank's `Comm`, by address),
/// what it does, and the device writes counted when it was computed.
#[derive(PartialEq)]
pub struct Computed {
    pub comm: usize,
    pub kind: Kind,
    pub dtype: i32,
    pub op: i32,
    pub writes: u64,
}

/// The last operation this process computed (one at a time: any other in between
/// replaces it, so buffers it wrote are never taken for another's).
static LAST: Mutex<Option<Computed>> = Mutex::new(None);

/// Whether `op` is the operation this process computed last, with the same device
/// writes counted: its receive buffers hold its result. `None` (an operation whose
/// repeat changes its result) never is.
pub fn is_last(op: &Option<Computed>) -> bool {
    let last = LAST.lock().unwrap();
    last.is_some() && *last == *op
}

/// Remembers the operation just computed in full.
pub fn remember(op: Option<Computed>) {
    *LAST.lock().unwrap() = op;
}

/// Forgets it: a receive buffer was changed (a fault, or a computation under way).
pub fn forget() {
    *LAST.lock().unwrap() = None;
}
