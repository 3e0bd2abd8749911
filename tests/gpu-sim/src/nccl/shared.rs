//! The memory the ranks of one communicator share (a file the bootstrap hands every
//! rank): a header with a slot per rank (who and where it is, when it reached the
//! current collective, whether it left) and a barrier, what each rank sends in the
//! current operation, then a staging chunk per rank through which every operation
//! is computed exactly.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};
use std::time::Duration;

/// The most ranks a simulated communicator takes.
pub const MAX_RANKS: usize = 64;
/// Bytes each rank stages per window of an operation.
pub const CHUNK: usize = 1 << 20;

#[repr(C)]
pub struct Slot {
    pub pid: AtomicI32,
    /// The GPU's machine index (NCCL's `nvmlDev`).
    pub nvml: AtomicI32,
    /// A digest of the host name: ranks on other hosts reach each other over NET.
    pub host: AtomicU64,
    /// Device time at which the rank reached the current collective.
    pub arrival: AtomicU64,
    /// Real time (ns) at which it reached it: the timed faults judge a collective by
    /// the latest of these and of the arrivals.
    pub wall: AtomicU64,
    /// Non-zero once the rank failed a connection or aborted: its sockets are
    /// closed, so a peer waiting on it in a connection fails too.
    pub left: AtomicU32,
    /// Non-zero when the rank's current operation repeats its last one with no
    /// write to its device memory since: if every rank's does, the receive buffers
    /// already hold the result.
    pub repeat: AtomicU32,
}

/// The most sends one rank makes in one operation (a grouped alltoall sends to
/// every rank).
pub const MAX_SENDS: usize = 2 * MAX_RANKS;

/// What one rank sends in the current operation: its bytes in all, and for grouped
/// point-to-point calls each send's peer and bytes, in call order (a peer's receive
/// finds its data there).
#[repr(C)]
pub struct Sends {
    pub total: AtomicU64,
    pub count: AtomicU64,
    /// (peer, bytes) per send.
    pub sends: [[AtomicU64; 2]; MAX_SENDS],
}

/// The start of the shared memory file.
#[repr(C)]
pub struct Header {
    pub count: AtomicU32,
    pub phase: AtomicU32,
    _pad: [u32; 2],
    pub slots: [Slot; MAX_RANKS],
    pub sends: [Sends; MAX_RANKS],
}

const DATA_OFFSET: usize = std::mem::size_of::<Header>().div_ceil(4096) * 4096;

/// The size of the shared file for `nranks`.
pub fn file_bytes(nranks: u32) -> usize {
    DATA_OFFSET + nranks as usize * CHUNK
}

pub struct Shared {
    pub base: *mut u8,
}

// SAFETY: the mapping is shared memory used through atomics (header) and under the
// barrier protocol (data); the pointer itself is immutable.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    pub fn header(&self) -> &Header {
        // SAFETY: the file starts with a Header, zero-filled (valid for atomics).
        unsafe { &*(self.base as *const Header) }
    }

    pub fn slot(&self, rank: usize) -> &Slot {
        &self.header().slots[rank]
    }

    pub fn slot_ptr(&self, rank: usize) -> *mut u8 {
        // SAFETY: within the file of file_bytes(nranks) bytes for rank < nranks.
        unsafe { self.base.add(DATA_OFFSET + rank * CHUNK) }
    }
}

pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a futex wait on a word of shared memory (not FUTEX_PRIVATE: the
    // waiters are in other processes) with a relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: wakes every waiter on the word.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// Whether process `pid` has exited (a zombie counts: it runs no more).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// A digest of this host's name, as NCCL's `hostHash` tells nodes apart.
pub fn host_hash() -> u64 {
    crate::log::host_name()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
        | 1
}
