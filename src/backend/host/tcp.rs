//! The host backend's network transport: one TCP connection to the ring successor
//! and one from the predecessor, as NCCL's socket transport does when SHM is
//! disabled. Slices go through aligned staging buffers, so the reduction kernels see
//! the same aligned data as with shared memory.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;

use anyhow::{Context, Result};

use crate::backend::buffer::AlignedBuf;

/// Largest slice one blocking write may carry. Every rank writes one slice before it
/// reads one, so each link must absorb a whole slice unread: slices stay well below
/// what the kernel grants a loopback socket (asked for here, read back after).
const MAX_SLICE: usize = 128 << 10;
const WANTED_SOCKET_BUFFER: usize = 1 << 20;

/// The slice size for a TCP ring link: the FIFO slot size, capped so that one slice
/// always fits the link's socket buffers.
pub fn slice_bytes(slot_bytes: usize, out: &TcpStream, inc: &TcpStream) -> usize {
    let sndbuf = socket_buffer(out, libc::SO_SNDBUF);
    let rcvbuf = socket_buffer(inc, libc::SO_RCVBUF);
    let fits = (sndbuf + rcvbuf) / 2;
    (slot_bytes.min(MAX_SLICE).min(fits) / 64 * 64).max(64)
}

/// The slice size of a ring that mixes SHM and TCP links (ranks on several
/// machines): one size every rank computes alike, that one TCP link can absorb.
pub fn mixed_slice_bytes(slot_bytes: usize) -> usize {
    (slot_bytes.min(MAX_SLICE) / 64 * 64).max(64)
}

/// Asks for a larger socket buffer and returns what the kernel granted (bytes).
fn socket_buffer(s: &TcpStream, option: libc::c_int) -> usize {
    let fd = s.as_raw_fd();
    let wanted = WANTED_SOCKET_BUFFER as libc::c_int;
    let mut granted: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: plain socket options on a socket we own, with correctly sized values.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            &wanted as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            &mut granted as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        );
    }
    granted.max(0) as usize
}

/// Writes slices to the successor.
pub struct TcpSender {
    stream: TcpStream,
    staging: AlignedBuf,
    pending: usize,
}

/// Reads slices from the predecessor.
pub struct TcpReceiver {
    stream: TcpStream,
    staging: AlignedBuf,
}

impl TcpSender {
    pub fn new(stream: TcpStream, slice_bytes: usize) -> Result<TcpSender> {
        Ok(TcpSender {
            stream,
            staging: AlignedBuf::new(slice_bytes)?,
            pending: 0,
        })
    }

    pub fn slot(&mut self, len: usize) -> Result<&mut [u8]> {
        self.pending = len;
        Ok(&mut self.staging.bytes_mut()[..len])
    }

    pub fn post(&mut self) -> Result<()> {
        let len = std::mem::take(&mut self.pending);
        self.stream
            .write_all(&self.staging.bytes()[..len])
            .context("host backend: NET/Socket send to the next rank failed")
    }
}

impl TcpReceiver {
    pub fn new(stream: TcpStream, slice_bytes: usize) -> Result<TcpReceiver> {
        Ok(TcpReceiver {
            stream,
            staging: AlignedBuf::new(slice_bytes)?,
        })
    }

    pub fn slot(&mut self, len: usize) -> Result<&[u8]> {
        let buf = &mut self.staging.bytes_mut()[..len];
        self.stream
            .read_exact(buf)
            .context("host backend: NET/Socket receive from the previous rank failed")?;
        Ok(buf)
    }
}
