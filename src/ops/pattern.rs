//! The correctness check of every case. Each rank fills its input with a
//! rank-dependent pseudo-random pattern of small integers, chosen per operator so
//! that every partial result is exact in every element type (sums of 1..=4, products
//! of 1 or 2, min/max of 0..=63). The expected output is then known exactly, and the
//! check counts the elements that differ (nccl-tests' `#wrong`).
//!
//! The pattern repeats with a prime period of 65521 elements, so filling and checking
//! run at memory speed from two small tables, while a chunk delivered to the wrong
//! offset (offsets are never a multiple of a prime that large) still shows up.
//! Floating-point `avg` is the one result that is not exact for every rank count
//! (1/n is not representable for n = 3, 6, ...): it is compared with a tolerance of
//! four units in the last place of the element type.

use bytemuck::Pod;

use super::reduce::{with_element, Element};
use super::{DataType, ReduceOp};

/// Period of the pattern in elements (the largest prime below 2^16).
pub const PERIOD: usize = 65521;

/// The first wrong element found by a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub index: u64,
    pub got: f64,
    pub expected: f64,
}

/// Outcome of checking one output buffer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckReport {
    pub wrong: u64,
    pub first: Option<Mismatch>,
}

/// Fill and expected-value tables for one (datatype, op, rank, nranks).
#[derive(Debug, Clone)]
pub struct Pattern {
    dt: DataType,
    op: ReduceOp,
    input: Vec<u8>,
    expected: Vec<u8>,
}

fn mix(j: u64, rank: u64) -> u64 {
    let mut h =
        j.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (rank + 1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 32)
}

/// The value rank `rank` contributes at pattern position `j`.
fn small_value(op: ReduceOp, j: usize, rank: u32) -> u32 {
    let h = mix(j as u64, rank as u64);
    match op {
        ReduceOp::Sum | ReduceOp::Avg => 1 + (h % 4) as u32,
        ReduceOp::Prod => 1 + (h % 2) as u32,
        ReduceOp::Max | ReduceOp::Min => (h % 64) as u32,
    }
}

impl Pattern {
    pub fn new(dt: DataType, op: ReduceOp, rank: u32, nranks: u32) -> Pattern {
        let (input, expected) = with_element!(dt, tables(op, rank, nranks));
        Pattern {
            dt,
            op,
            input,
            expected,
        }
    }

    /// Fills `buf` (a whole number of elements) with this rank's input.
    pub fn fill(&self, buf: &mut [u8]) {
        repeat_into(&self.input, buf);
    }

    /// One period of this rank's input: the bytes `fill` repeats.
    pub fn input_period(&self) -> &[u8] {
        &self.input
    }

    /// Checks an all-reduce output against the exact expected values.
    pub fn check(&self, out: &[u8]) -> CheckReport {
        let tolerant = self.op == ReduceOp::Avg && self.dt.is_float();
        let period_bytes = self.expected.len();
        let mut report = CheckReport::default();
        for (block_index, block) in out.chunks(period_bytes).enumerate() {
            let want = &self.expected[..block.len()];
            if !tolerant && block == want {
                continue;
            }
            let base = (block_index * PERIOD) as u64;
            let (wrong, first) = with_element!(self.dt, compare(block, want, tolerant));
            if report.first.is_none() {
                report.first = first.map(|mut m| {
                    m.index += base;
                    m
                });
            }
            report.wrong += wrong;
        }
        report
    }
}

fn tables<T: Element>(op: ReduceOp, rank: u32, nranks: u32) -> (Vec<u8>, Vec<u8>) {
    let mut input: Vec<T> = Vec::with_capacity(PERIOD);
    let mut expected: Vec<T> = Vec::with_capacity(PERIOD);
    for j in 0..PERIOD {
        input.push(T::from_small(small_value(op, j, rank)));
        let mut acc = T::from_small(small_value(op, j, 0));
        for r in 1..nranks {
            let v = T::from_small(small_value(op, j, r));
            acc = match op {
                ReduceOp::Sum | ReduceOp::Avg => acc.add(v),
                ReduceOp::Prod => acc.mul(v),
                ReduceOp::Max => acc.max(v),
                ReduceOp::Min => acc.min(v),
            };
        }
        if op == ReduceOp::Avg {
            acc = acc.div_count(nranks);
        }
        expected.push(acc);
    }
    (to_bytes(input), to_bytes(expected))
}

fn to_bytes<T: Pod>(v: Vec<T>) -> Vec<u8> {
    bytemuck::cast_slice(&v).to_vec()
}

/// How to fill `total` bytes of device memory with a periodic pattern without a
/// kernel: after the first `period` bytes are copied from the host, each entry
/// `(offset, len)` copies bytes `0..len` of the buffer to `offset..offset + len`.
/// Offsets are whole periods and the filled part doubles with every copy, so a
/// gigabyte takes about a dozen device-to-device copies, and a copy never overlaps
/// its source.
pub fn doubling_copies(period: usize, total: usize) -> Vec<(usize, usize)> {
    let mut copies = Vec::new();
    let mut filled = period.min(total);
    while filled > 0 && filled < total {
        let len = filled.min(total - filled);
        copies.push((filled, len));
        filled += len;
    }
    copies
}

fn repeat_into(table: &[u8], buf: &mut [u8]) {
    for block in buf.chunks_mut(table.len()) {
        block.copy_from_slice(&table[..block.len()]);
    }
}

fn compare<T: Element>(got: &[u8], want: &[u8], tolerant: bool) -> (u64, Option<Mismatch>) {
    let got: &[T] = bytemuck::cast_slice(got);
    let want: &[T] = bytemuck::cast_slice(want);
    let mut wrong = 0;
    let mut first = None;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if tolerant {
            let (g, w) = (g.to_f64(), w.to_f64());
            (g - w).abs() <= 4.0 * T::EPSILON * w.abs()
        } else {
            bytemuck::bytes_of(g) == bytemuck::bytes_of(w)
        };
        if !ok {
            wrong += 1;
            if first.is_none() {
                first = Some(Mismatch {
                    index: i as u64,
                    got: g.to_f64(),
                    expected: w.to_f64(),
                });
            }
        }
    }
    (wrong, first)
}

/// Reduces the inputs of all ranks on the host, the reference a backend must match.
#[cfg(test)]
pub(crate) fn reference(dt: DataType, op: ReduceOp, nranks: u32, count: usize) -> Vec<u8> {
    use super::reduce::{finish_avg, reduce_in_place};
    let mut acc = vec![0u8; count * dt.size()];
    Pattern::new(dt, op, 0, nranks).fill(&mut acc);
    for r in 1..nranks {
        let mut input = vec![0u8; acc.len()];
        Pattern::new(dt, op, r, nranks).fill(&mut input);
        reduce_in_place(dt, op, &mut acc, &input);
    }
    finish_avg(dt, op, &mut acc, nranks);
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_reduction_passes_the_check_for_every_type_and_op() {
        for dt in DataType::ALL {
            for op in ReduceOp::ALL {
                for nranks in [1, 2, 3, 8] {
                    let out = reference(dt, op, nranks, PERIOD + 1000);
                    let report = Pattern::new(dt, op, 0, nranks).check(&out);
                    assert_eq!(report.wrong, 0, "{dt} {op} n={nranks}: {:?}", report.first);
                }
            }
        }
    }

    #[test]
    fn doubling_copies_reproduce_the_fill() {
        let pattern = Pattern::new(DataType::Double, ReduceOp::Sum, 3, 4);
        let period = pattern.input_period().len();
        for total in [
            0,
            8,
            period - 8,
            period,
            period + 8,
            5 * period + 24,
            64 * period,
        ] {
            let mut want = vec![0u8; total];
            pattern.fill(&mut want);
            let mut got = vec![0u8; total];
            let first = period.min(total);
            got[..first].copy_from_slice(&pattern.input_period()[..first]);
            let copies = doubling_copies(period, total);
            for &(offset, len) in &copies {
                assert!(len <= offset && offset % period == 0, "{offset} {len}");
                got.copy_within(0..len, offset);
            }
            assert!(got == want, "total {total}");
            let bound = (total / period.max(1)).max(1).ilog2() as usize + 1;
            assert!(copies.len() <= bound, "{} copies for {total}", copies.len());
        }
    }

    #[test]
    fn a_corrupted_element_is_counted_and_located() {
        let mut out = reference(DataType::Float, ReduceOp::Sum, 4, 100_000);
        let idx = 70_000 * 4;
        out[idx..idx + 4].copy_from_slice(&1234.5f32.to_le_bytes());
        let report = Pattern::new(DataType::Float, ReduceOp::Sum, 0, 4).check(&out);
        assert_eq!(report.wrong, 1);
        let first = report.first.unwrap();
        assert_eq!(first.index, 70_000);
        assert_eq!(first.got, 1234.5);
    }

    #[test]
    fn a_misplaced_chunk_is_detected() {
        let count = 1 << 16;
        let out = reference(DataType::Int32, ReduceOp::Sum, 2, count);
        let mut shifted = out.clone();
        // Deliver the second half where the first should be, as a ring bug would.
        shifted.copy_within(count * 2.., 0);
        let report = Pattern::new(DataType::Int32, ReduceOp::Sum, 0, 2).check(&shifted);
        assert!(report.wrong > (count as u64) / 4, "{report:?}");
    }

    #[test]
    fn an_untouched_output_buffer_fails() {
        let out = vec![0u8; 4096 * 4];
        let report = Pattern::new(DataType::Float, ReduceOp::Max, 1, 2).check(&out);
        assert!(report.wrong > 0);
    }

    #[test]
    fn ranks_get_different_inputs() {
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        Pattern::new(DataType::Uint8, ReduceOp::Max, 0, 2).fill(&mut a);
        Pattern::new(DataType::Uint8, ReduceOp::Max, 1, 2).fill(&mut b);
        assert_ne!(a, b);
    }
}
