//! The host backend's network transport: one TCP connection to the ring successor
//! and one from the predecessor, as NCCL's socket transport does when SHM is
//! disabled. Slices go through aligned staging buffers, so the reduction kernels see
//! the same aligned data as with shared memory.

use std::io::{Read, Write};
use std::net::TcpStream;

use anyhow::{Context, Result};

use super::buffer::AlignedBuf;

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
    pub fn new(stream: TcpStream, slice_bytes: usize) -> TcpSender {
        TcpSender {
            stream,
            staging: AlignedBuf::new(slice_bytes),
            pending: 0,
        }
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
    pub fn new(stream: TcpStream, slice_bytes: usize) -> TcpReceiver {
        TcpReceiver {
            stream,
            staging: AlignedBuf::new(slice_bytes),
        }
    }

    pub fn slot(&mut self, len: usize) -> Result<&[u8]> {
        let buf = &mut self.staging.bytes_mut()[..len];
        self.stream
            .read_exact(buf)
            .context("host backend: NET/Socket receive from the previous rank failed")?;
        Ok(buf)
    }
}
