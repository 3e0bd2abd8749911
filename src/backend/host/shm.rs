//! Shared-memory segments and the FIFO that runs through them, the host backend's
//! counterpart of NCCL's SHM transport. Each rank creates one receive segment in the
//! shm directory (`posix_fallocate`, as NCCL does, so a full /dev/shm fails here with
//! the same ENOSPC), its ring predecessor maps it and writes slices into its slots.
//!
//! Layout: a 4096-byte header of cache-line separated counters, then `SLOTS` slots.
//! The sender advances `head` after filling a slot, the receiver advances `tail`
//! after consuming one; each side sleeps on the other's counter when it has to wait.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{anyhow, bail, Result};

use super::wait::{store_and_wake, wait_until, WaitPolicy};

/// Slots per FIFO (NCCL_STEPS in NCCL).
pub const SLOTS: u32 = 8;
/// Bytes before the first slot.
pub const HEADER_BYTES: usize = 4096;

const HEAD: usize = 0;
const TAIL: usize = 64;
const RECV_SLEEPING: usize = 128;
const SEND_SLEEPING: usize = 192;
const ABORT: usize = 256;

/// Size of one receive segment for slots of `slot_bytes`.
pub fn segment_bytes(slot_bytes: usize) -> usize {
    HEADER_BYTES + SLOTS as usize * slot_bytes
}

/// A mapped shared-memory file.
pub struct Segment {
    path: PathBuf,
    ptr: *mut u8,
    len: usize,
    owner: bool,
    linked: bool,
}

// SAFETY: the mapping is plain shared memory; all cross-process access goes through
// the FIFO protocol (atomics for the counters, slots owned by one side at a time).
unsafe impl Send for Segment {}

fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| anyhow!("segment path {} contains a NUL byte", path.display()))
}

impl Segment {
    /// Creates and maps a new segment of `len` bytes; the space is reserved up front.
    pub fn create(path: &Path, len: usize) -> Result<Segment> {
        let cpath = c_path(path)?;
        let fail = |what: &str, err: io::Error| {
            anyhow!(
                "host backend: error while creating shared memory segment {} (size {len}): {what} failed: {err}",
                path.display()
            )
        };
        // SAFETY: plain libc calls on a valid C string and the fd they return.
        unsafe {
            let fd = libc::open(
                cpath.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600,
            );
            if fd < 0 {
                return Err(fail("open", io::Error::last_os_error()));
            }
            let mut segment = Segment {
                path: path.to_path_buf(),
                ptr: std::ptr::null_mut(),
                len,
                owner: true,
                linked: true,
            };
            let rc = libc::posix_fallocate(fd, 0, len as libc::off_t);
            if rc != 0 {
                libc::close(fd);
                return Err(fail("posix_fallocate", io::Error::from_raw_os_error(rc)));
            }
            let mapped = map(fd, len);
            libc::close(fd);
            segment.ptr = mapped.map_err(|e| fail("mmap", e))?;
            Ok(segment)
        }
    }

    /// Maps a segment created by a peer.
    pub fn open(path: &Path, len: usize) -> Result<Segment> {
        let cpath = c_path(path)?;
        let fail = |what: &str, err: io::Error| {
            anyhow!(
                "host backend: error while attaching to shared memory segment {} (size {len}): {what} failed: {err}",
                path.display()
            )
        };
        // SAFETY: as in `create`.
        unsafe {
            let fd = libc::open(cpath.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(fail("open", io::Error::last_os_error()));
            }
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 || (st.st_size as usize) < len {
                libc::close(fd);
                bail!(
                    "host backend: shared memory segment {} is {} bytes, expected {len}",
                    path.display(),
                    st.st_size
                );
            }
            let mapped = map(fd, len);
            libc::close(fd);
            Ok(Segment {
                path: path.to_path_buf(),
                ptr: mapped.map_err(|e| fail("mmap", e))?,
                len,
                owner: false,
                linked: true,
            })
        }
    }

    /// Removes the file; the mapping stays valid. Called once every peer has mapped it,
    /// so that a crash later leaves nothing behind in the shm directory.
    pub fn unlink(&mut self) {
        if self.owner && self.linked {
            let _ = std::fs::remove_file(&self.path);
            self.linked = false;
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset + 4 <= HEADER_BYTES);
        // SAFETY: the header lies inside the mapping and offsets are 4-byte aligned.
        unsafe { AtomicU32::from_ptr(self.ptr.add(offset) as *mut u32) }
    }

    /// A slot's bytes. Callers respect the FIFO protocol, so no slot is written and
    /// read at the same time.
    #[allow(clippy::mut_from_ref)]
    fn slot(&self, index: u32, slot_bytes: usize, len: usize) -> &mut [u8] {
        let offset = HEADER_BYTES + (index % SLOTS) as usize * slot_bytes;
        assert!(len <= slot_bytes && offset + slot_bytes <= self.len);
        // SAFETY: in bounds (checked above); exclusive use is guaranteed by head/tail.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), len) }
    }
}

unsafe fn map(fd: libc::c_int, len: usize) -> io::Result<*mut u8> {
    let ptr = libc::mmap(
        std::ptr::null_mut(),
        len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_SHARED,
        fd,
        0,
    );
    if ptr == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(ptr as *mut u8)
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: ptr/len come from a successful mmap of this segment.
            unsafe {
                libc::munmap(self.ptr as *mut libc::c_void, self.len);
            }
        }
        self.unlink();
    }
}

/// The writing end of a FIFO: this rank's view of its successor's segment.
pub struct ShmSender {
    segment: Segment,
    slot_bytes: usize,
    sent: u32,
    policy: WaitPolicy,
}

/// The reading end: this rank's own segment.
pub struct ShmReceiver {
    segment: Segment,
    slot_bytes: usize,
    received: u32,
    policy: WaitPolicy,
}

/// A peer set the abort flag, or died in a way that left us waiting.
fn aborted(path: &Path) -> anyhow::Error {
    anyhow!(
        "host backend: peer aborted the connection through {}",
        path.display()
    )
}

impl ShmSender {
    pub fn new(segment: Segment, slot_bytes: usize, policy: WaitPolicy) -> ShmSender {
        ShmSender {
            segment,
            slot_bytes,
            sent: 0,
            policy,
        }
    }

    /// Waits for a free slot and returns it, `len` bytes long.
    pub fn slot(&mut self, len: usize) -> Result<&mut [u8]> {
        let s = &self.segment;
        let sent = self.sent;
        wait_until(
            s.word(TAIL),
            s.word(SEND_SLEEPING),
            s.word(ABORT),
            self.policy,
            |tail| sent.wrapping_sub(tail) < SLOTS,
        )
        .map_err(|_| aborted(s.path()))?;
        Ok(self.segment.slot(sent, self.slot_bytes, len))
    }

    /// Hands the slot returned by `slot` to the receiver.
    pub fn post(&mut self) {
        self.sent = self.sent.wrapping_add(1);
        let s = &self.segment;
        store_and_wake(s.word(HEAD), s.word(RECV_SLEEPING), self.sent);
    }

    pub fn abort(&self) {
        self.segment.word(ABORT).store(1, Ordering::SeqCst);
    }
}

impl ShmReceiver {
    pub fn new(segment: Segment, slot_bytes: usize, policy: WaitPolicy) -> ShmReceiver {
        ShmReceiver {
            segment,
            slot_bytes,
            received: 0,
            policy,
        }
    }

    /// Waits for the next slot to be filled and returns its first `len` bytes.
    pub fn slot(&mut self, len: usize) -> Result<&[u8]> {
        let s = &self.segment;
        let received = self.received;
        wait_until(
            s.word(HEAD),
            s.word(RECV_SLEEPING),
            s.word(ABORT),
            self.policy,
            |head| head != received,
        )
        .map_err(|_| aborted(s.path()))?;
        Ok(self.segment.slot(received, self.slot_bytes, len))
    }

    /// Gives the slot returned by `slot` back to the sender.
    pub fn release(&mut self) {
        self.received = self.received.wrapping_add(1);
        let s = &self.segment;
        store_and_wake(s.word(TAIL), s.word(SEND_SLEEPING), self.received);
    }

    pub fn segment_mut(&mut self) -> &mut Segment {
        &mut self.segment
    }

    pub fn abort(&self) {
        self.segment.word(ABORT).store(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_carries_slices_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let slot_bytes = 256;
        let owner = Segment::create(&path, segment_bytes(slot_bytes)).unwrap();
        let peer = Segment::open(&path, segment_bytes(slot_bytes)).unwrap();
        let policy = WaitPolicy::for_ranks(2);
        let mut rx = ShmReceiver::new(owner, slot_bytes, policy);
        let mut tx = ShmSender::new(peer, slot_bytes, policy);
        let writer = std::thread::spawn(move || {
            for i in 0..100u8 {
                tx.slot(16).unwrap().fill(i);
                tx.post();
            }
        });
        for i in 0..100u8 {
            assert_eq!(rx.slot(16).unwrap(), &[i; 16]);
            rx.release();
        }
        writer.join().unwrap();
        rx.segment_mut().unlink();
        assert!(!path.exists());
    }

    #[test]
    fn creating_twice_fails_and_missing_segments_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let _first = Segment::create(&path, 8192).unwrap();
        assert!(Segment::create(&path, 8192).is_err());
        let err = Segment::open(&dir.path().join("absent"), 8192)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("error while attaching to shared memory segment"),
            "{err}"
        );
        assert!(err.contains("No such file or directory"), "{err}");
    }

    #[test]
    fn dropping_the_owner_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        drop(Segment::create(&path, 4096).unwrap());
        assert!(!path.exists());
    }
}
