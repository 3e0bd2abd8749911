//! Writing a slice into a shared-memory slot with streaming (non-temporal) stores.
//!
//! A slot is written by one core and read by another. With ordinary stores each line
//! is first pulled into the writer's cache and later pulled out of it again by the
//! reader; how much that costs depends on where the two cores sit, and on virtual
//! machines it changes while a run goes on: on the 2-vCPU development machine the
//! same 2-rank 1 MiB all-reduce took 90 us in one hour and 475 us in another, with
//! single-core memcpy unchanged. Streaming stores write the lines past the writer's
//! caches, so the reader finds them in memory; the slow mode then measured 90 us as
//! well, and 64 MiB went from 0.2 to 0.5 x memcpy. (NCCL's SHM transport has the
//! same split: the GPU writes the FIFO, the peer's loads find it in host memory.)

use crate::ops::reduce::reduce;
use crate::ops::{DataType, ReduceOp};

/// Shorter writes use ordinary stores: the reader then finds a small slice in cache
/// sooner than in memory (2-rank all-reduces of 64-512 B took 0.7 us with ordinary
/// stores and 1.1 us streamed, while 4 KiB took 2.5 us and 1.6 us).
const STREAM_MIN: usize = 2048;

/// Bytes reduced at a time into a buffer that stays in L1 before it is streamed out;
/// a multiple of every element size.
const BLOCK: usize = 4096;

/// `dst.copy_from_slice(src)`, with the stores bypassing this core's caches.
pub fn stream_copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "stream_copy: lengths differ");
    if dst.len() < STREAM_MIN {
        dst.copy_from_slice(src);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // 16-byte stores need a 16-byte aligned destination: copy up to the first
        // such address, stream the whole 16-byte words, copy the rest.
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        dst[..head].copy_from_slice(&src[..head]);
        let words = (dst.len() - head) / 16;
        // SAFETY: SSE2 is part of x86_64. `d` is 16-byte aligned and `d..d+words`,
        // `s..s+words` lie inside `dst` and `src` (both `head + 16 * words` long at
        // least); `_mm_loadu_si128` accepts any alignment. The fence orders the
        // weakly ordered streaming stores before whatever publishes the slot.
        unsafe {
            use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
            let d = dst.as_mut_ptr().add(head) as *mut __m128i;
            let s = src.as_ptr().add(head) as *const __m128i;
            for i in 0..words {
                _mm_stream_si128(d.add(i), _mm_loadu_si128(s.add(i)));
            }
            _mm_sfence();
        }
        let done = head + words * 16;
        dst[done..].copy_from_slice(&src[done..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// `reduce(dt, op, dst, a, b)` with streaming stores into `dst`: each block is reduced
/// into a buffer on the stack, then streamed out.
pub fn stream_reduce(dt: DataType, op: ReduceOp, dst: &mut [u8], a: &[u8], b: &[u8]) {
    assert!(
        a.len() == dst.len() && b.len() == dst.len(),
        "stream_reduce: lengths differ"
    );
    if dst.len() < STREAM_MIN {
        reduce(dt, op, dst, a, b);
        return;
    }
    // Aligned for every element type (`reduce` views the bytes as elements).
    #[repr(C, align(64))]
    struct Block([u8; BLOCK]);
    let mut block = Block([0; BLOCK]);
    for start in (0..dst.len()).step_by(BLOCK) {
        let end = (start + BLOCK).min(dst.len());
        let tmp = &mut block.0[..end - start];
        reduce(dt, op, tmp, &a[start..end], &b[start..end]);
        stream_copy(&mut dst[start..end], tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn stream_copy_equals_a_copy_at_every_alignment_and_length() {
        let src = bytes(2300, 7);
        for offset in 0..17 {
            for len in [
                0,
                1,
                15,
                16,
                17,
                33,
                100,
                STREAM_MIN - 1,
                STREAM_MIN,
                STREAM_MIN + 17,
                2283 - offset,
            ] {
                let mut dst = vec![0xAAu8; 2300];
                stream_copy(&mut dst[offset..offset + len], &src[3..3 + len]);
                assert_eq!(
                    &dst[offset..offset + len],
                    &src[3..3 + len],
                    "{offset} {len}"
                );
                assert!(
                    dst[..offset].iter().all(|&b| b == 0xAA),
                    "before {offset} {len}"
                );
                assert!(
                    dst[offset + len..].iter().all(|&b| b == 0xAA),
                    "after {offset} {len}"
                );
            }
        }
    }

    #[test]
    fn stream_reduce_equals_reduce_across_block_boundaries() {
        for (dt, op) in [
            (DataType::Float, ReduceOp::Sum),
            (DataType::Int8, ReduceOp::Max),
            (DataType::Double, ReduceOp::Prod),
            (DataType::Half, ReduceOp::Min),
        ] {
            let es = dt.size();
            for elems in [
                1,
                5,
                STREAM_MIN / es + 1,
                BLOCK / es - 1,
                BLOCK / es,
                BLOCK / es + 3,
                3 * BLOCK / es + 1,
            ] {
                let n = elems * es;
                let (a, b) = (bytes(n, 1), bytes(n, 2));
                let mut want = vec![0u8; n];
                reduce(dt, op, &mut want, &a, &b);
                let mut got = vec![0u8; n];
                stream_reduce(dt, op, &mut got, &a, &b);
                assert_eq!(got, want, "{dt:?} {op:?} {elems}");
            }
        }
    }
}
