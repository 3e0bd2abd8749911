//! A heap buffer aligned for every element type (64 bytes), allocated once and
//! viewed as bytes. It is allocated zeroed (calloc-like: the pages are mapped lazily,
//! so a buffer for the largest message costs nothing until it is touched), and an
//! allocation the machine cannot satisfy is an error, not an abort.

use std::alloc::{self, Layout};

use anyhow::{anyhow, Result};

const ALIGN: usize = 64;

pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is uniquely owned; access goes through &self / &mut self.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> Result<AlignedBuf> {
        if len == 0 {
            return Ok(AlignedBuf {
                ptr: std::ptr::NonNull::<u64>::dangling().as_ptr() as *mut u8,
                len: 0,
            });
        }
        let layout = Layout::from_size_align(len, ALIGN)
            .map_err(|e| anyhow!("buffer of {len} bytes: {e}"))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(anyhow!(
                "cannot allocate {} for the largest message: not enough memory (lower -e/--maxbytes)",
                crate::units::Bytes(len as u64)
            ));
        }
        Ok(AlignedBuf { ptr, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes (or dangling with len 0), initialized (zeroed).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in `new` with this exact layout.
            unsafe { alloc::dealloc(self.ptr, Layout::from_size_align_unchecked(self.len, ALIGN)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_aligned_and_failing_cleanly() {
        let mut b = AlignedBuf::new(1000).unwrap();
        assert_eq!(b.bytes().as_ptr() as usize % ALIGN, 0);
        assert!(b.bytes().iter().all(|&x| x == 0));
        b.bytes_mut()[999] = 7;
        assert_eq!(b.bytes()[999], 7);
        assert!(AlignedBuf::new(0).unwrap().is_empty());
        let err = AlignedBuf::new(usize::MAX / 2).err().unwrap().to_string();
        assert!(
            err.contains("not enough memory") || err.contains("buffer of"),
            "{err}"
        );
    }
}
