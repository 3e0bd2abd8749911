//! A rank's device buffer: cudarc's (`cuMemAlloc`), or NCCL's (`ncclMemAlloc`) for
//! buffers registered with the communicator, as nccl-tests allocates them from 2.19.

use std::sync::Arc;

use anyhow::{Context, Result};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use super::super::library::Nccl;

pub enum Buffer {
    Cuda(CudaSlice<u8>),
    /// Freed with `ncclMemFree` when dropped.
    Nccl {
        nccl: Arc<Nccl>,
        ptr: CUdeviceptr,
    },
}

impl Buffer {
    /// `bytes` of NCCL's memory (`ncclMemAlloc`), in the current context's device.
    pub fn nccl(nccl: &Arc<Nccl>, bytes: usize) -> Result<Buffer> {
        let ptr = nccl.mem_alloc(bytes).context("ncclMemAlloc failed")?;
        Ok(Buffer::Nccl {
            nccl: nccl.clone(),
            ptr: ptr as CUdeviceptr,
        })
    }

    /// The device address (with event tracking off, cudarc's guard does nothing).
    pub fn ptr(&self, stream: &Arc<CudaStream>) -> CUdeviceptr {
        match self {
            Buffer::Cuda(slice) => slice.device_ptr(stream).0,
            Buffer::Nccl { ptr, .. } => *ptr,
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Buffer::Nccl { nccl, ptr } = self {
            // SAFETY: allocated by this library's ncclMemAlloc, freed once; the
            // communicator that registered it is gone (GpuComm's field order).
            let _ = unsafe { nccl.mem_free(*ptr as *mut std::ffi::c_void) };
        }
    }
}
