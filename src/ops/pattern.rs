//! The correctness check of every case. Each rank fills its input with a
//! rank-dependent pseudo-random pattern of small integers, chosen per operator so
//! that every partial result is exact in every element type and in every order NCCL
//! may combine the ranks (ring, tree, NVLS): sums of 1..=4, products of 1 or 2,
//! min/max of 0..=63. The expected output is then known exactly, and the check counts
//! the elements that differ (nccl-tests' `#wrong`).
//!
//! Where the rank count would take a sum or product past what the type holds exactly
//! (bf16 holds the integers only to 256, so 128 ranks of 1..=4 would not fit; half's
//! largest power of two is 2^15), only some ranks contribute at each position: rank r
//! is active at position j when r and j agree modulo a stride, the others add 0 or
//! multiply by 1. Every rank still contributes to a share of the positions, and every
//! partial result stays within the type's exact range whatever the order.
//!
//! The pattern repeats with a prime period of 65521 elements, so filling and checking
//! run at memory speed from two small tables, while a chunk delivered to the wrong
//! offset (offsets are never a multiple of a prime that large) still shows up.
//! Floating-point `avg` is the one result that is not exact for every rank count:
//! NCCL multiplies each input by 1/n before summing, and 1/n is not representable for
//! n = 3, 6, ... . At most 4 ranks contribute at a position (the others add 0, which
//! is exact), and the result is compared with the rounding bound of that
//! computation, (a + 3) / 2 units of the type's epsilon relative to the value for a
//! contributing ranks, at least 4: tight enough that a rank's missing share shows.

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
    /// The most ranks contributing at one position.
    active: u32,
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

/// The largest value a rank contributes to a sum.
const SUM_MAX: u64 = 4;

/// Ranks contributing at one position of a floating-point `avg`: each adds its
/// rounding to the result, and few keep the tolerance tight enough that a rank's
/// missing share (at least 1 in 4 x SUM_MAX) is always caught.
const AVG_ACTIVE: u64 = 4;

/// How many ranks may contribute at one position of a pattern of `T` for `op`
/// without a partial result leaving the type's exact range.
fn active_ranks<T: Element>(op: ReduceOp) -> u64 {
    match op {
        ReduceOp::Avg if T::EPSILON > 0.0 => AVG_ACTIVE,
        ReduceOp::Sum | ReduceOp::Avg => T::EXACT_UP_TO / SUM_MAX,
        // Each active rank multiplies by at most 2.
        ReduceOp::Prod => u64::from(T::MAX_POW2),
        ReduceOp::Max | ReduceOp::Min => u64::MAX,
    }
}

/// Rank r is active at position j when `r % stride == j % stride`: the smallest
/// stride that keeps the active ranks at any position within `active_ranks`.
fn stride<T: Element>(op: ReduceOp, nranks: u32) -> u32 {
    let fit = Ord::max(active_ranks::<T>(op), 1);
    let stride = u32::try_from(u64::from(nranks).div_ceil(fit)).unwrap_or(u32::MAX);
    Ord::max(stride, 1)
}

/// The value rank `rank` contributes at pattern position `j`.
fn small_value(op: ReduceOp, j: usize, rank: u32, stride: u32) -> u32 {
    let active = rank % stride == (j % stride as usize) as u32;
    let h = mix(j as u64, rank as u64);
    match op {
        ReduceOp::Sum | ReduceOp::Avg if active => 1 + (h % SUM_MAX) as u32,
        ReduceOp::Sum | ReduceOp::Avg => 0,
        ReduceOp::Prod if active => 1 + (h % 2) as u32,
        ReduceOp::Prod => 1,
        ReduceOp::Max | ReduceOp::Min => (h % 64) as u32,
    }
}

/// The relative tolerance of a floating-point `avg` with `active` ranks contributing
/// at a position (NCCL's pre-multiplied sum: one rounding for 1/n, one per product,
/// one per addition of a non-zero term, in units of half an epsilon; plus half an
/// epsilon for the reference), at least 4 epsilon.
fn avg_tolerance(epsilon: f64, active: u32) -> f64 {
    ((f64::from(active) + 3.0) / 2.0).max(4.0) * epsilon
}

impl Pattern {
    pub fn new(dt: DataType, op: ReduceOp, rank: u32, nranks: u32) -> Pattern {
        let (input, expected) = with_element!(dt, tables(op, rank, nranks));
        let stride = with_element!(dt, stride(op, nranks));
        Pattern {
            dt,
            op,
            active: nranks.div_ceil(stride),
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
            let tolerance = if tolerant { Some(self.active) } else { None };
            let (wrong, first) = with_element!(self.dt, compare(block, want, tolerance));
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
    let stride = stride::<T>(op, nranks);
    let mut input: Vec<T> = Vec::with_capacity(PERIOD);
    let mut expected: Vec<T> = Vec::with_capacity(PERIOD);
    for j in 0..PERIOD {
        input.push(T::from_small(small_value(op, j, rank, stride)));
        let mut acc = T::from_small(small_value(op, j, 0, stride));
        for r in 1..nranks {
            let v = T::from_small(small_value(op, j, r, stride));
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

/// Counts the elements of `got` that differ from `want`: bit for bit, or within the
/// `avg` tolerance for `tolerance: Some(nranks)`.
fn compare<T: Element>(got: &[u8], want: &[u8], tolerance: Option<u32>) -> (u64, Option<Mismatch>) {
    let got: &[T] = bytemuck::cast_slice(got);
    let want: &[T] = bytemuck::cast_slice(want);
    let relative = tolerance.map(|n| avg_tolerance(T::EPSILON, n));
    let mut wrong = 0;
    let mut first = None;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = match relative {
            Some(relative) => {
                let (g, w) = (g.to_f64(), w.to_f64());
                (g - w).abs() <= relative * w.abs()
            }
            None => bytemuck::bytes_of(g) == bytemuck::bytes_of(w),
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
                for nranks in [1, 2, 3, 8, 24] {
                    let out = reference(dt, op, nranks, PERIOD + 1000);
                    let report = Pattern::new(dt, op, 0, nranks).check(&out);
                    assert_eq!(report.wrong, 0, "{dt} {op} n={nranks}: {:?}", report.first);
                }
            }
        }
    }

    /// How NCCL may combine the ranks: in ring order, the other way round, or as a
    /// binary tree.
    fn reduce_in<T: Element>(values: &[T], op: ReduceOp, order: &str) -> T {
        let combine = |a: T, b: T| match op {
            ReduceOp::Sum | ReduceOp::Avg => a.add(b),
            ReduceOp::Prod => a.mul(b),
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
        };
        match order {
            "ring" => values[1..].iter().fold(values[0], |a, &b| combine(a, b)),
            "reverse" => values[..values.len() - 1]
                .iter()
                .rev()
                .fold(values[values.len() - 1], |a, &b| combine(a, b)),
            _ => {
                let mut level = values.to_vec();
                while level.len() > 1 {
                    level = level
                        .chunks(2)
                        .map(|p| {
                            if p.len() == 2 {
                                combine(p[0], p[1])
                            } else {
                                p[0]
                            }
                        })
                        .collect();
                }
                level[0]
            }
        }
    }

    /// NCCL's result at the first `count` positions, each rank's input taken from the
    /// pattern; `avg` as NCCL computes it for floats (each input times 1/n, summed).
    fn nccl_like<T: Element>(op: ReduceOp, nranks: u32, count: usize, order: &str) -> Vec<u8> {
        let stride = stride::<T>(op, nranks);
        let scale = T::from_small(1).div_count(nranks);
        let out: Vec<T> = (0..count)
            .map(|j| {
                let values: Vec<T> = (0..nranks)
                    .map(|r| {
                        let v = T::from_small(small_value(op, j, r, stride));
                        if op == ReduceOp::Avg {
                            v.mul(scale)
                        } else {
                            v
                        }
                    })
                    .collect();
                reduce_in(&values, op, order)
            })
            .collect();
        to_bytes(out)
    }

    #[test]
    fn half_and_bf16_results_are_exact_in_any_order_at_64_128_and_512_ranks() {
        for dt in [DataType::Half, DataType::Bfloat16] {
            for nranks in [64, 128, 512] {
                for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Avg, ReduceOp::Max] {
                    let pattern = Pattern::new(dt, op, 0, nranks);
                    for order in ["ring", "reverse", "tree"] {
                        let out = with_element!(dt, nccl_like(op, nranks, 3000, order));
                        let report = pattern.check(&out);
                        assert_eq!(
                            report.wrong, 0,
                            "{dt} {op} n={nranks} {order}: {:?}",
                            report.first
                        );
                    }
                }
            }
        }
    }

    /// An all-reduce that lost one rank's input must fail the check, for `avg` too,
    /// whose tolerance must stay below one rank's share.
    #[test]
    fn a_missing_rank_fails_the_check_even_for_avg() {
        fn without_last<T: Element>(op: ReduceOp, nranks: u32, count: usize) -> Vec<u8> {
            let stride = stride::<T>(op, nranks);
            let out: Vec<T> = (0..count)
                .map(|j| {
                    let mut acc = T::from_small(small_value(op, j, 0, stride));
                    for r in 1..nranks - 1 {
                        acc = acc.add(T::from_small(small_value(op, j, r, stride)));
                    }
                    if op == ReduceOp::Avg {
                        acc = acc.div_count(nranks);
                    }
                    acc
                })
                .collect();
            to_bytes(out)
        }
        for dt in [DataType::Half, DataType::Bfloat16, DataType::Float] {
            for op in [ReduceOp::Sum, ReduceOp::Avg] {
                for nranks in [8, 64, 256] {
                    let out = with_element!(dt, without_last(op, nranks, 3000));
                    let report = Pattern::new(dt, op, 0, nranks).check(&out);
                    assert!(
                        report.wrong > 0,
                        "{dt} {op} n={nranks}: missing rank not seen"
                    );
                }
            }
        }
    }

    /// Integer avg divides by the true rank count (`n as i8` would wrap at 128).
    #[test]
    fn integer_avg_at_many_ranks_divides_by_the_true_count() {
        fn avg<T: Element>(nranks: u32, count: usize) -> Vec<u8> {
            let stride = stride::<T>(ReduceOp::Avg, nranks);
            let out: Vec<T> = (0..count)
                .map(|j| {
                    let sum: u32 = (0..nranks)
                        .map(|r| small_value(ReduceOp::Avg, j, r, stride))
                        .sum();
                    T::from_small(sum / nranks)
                })
                .collect();
            to_bytes(out)
        }
        // Sums of 1..=4 over 128 ranks stay below 2^16 and avg to 1..=4: the true
        // quotient, where NCCL's int8 sum wraps the same way before dividing.
        for nranks in [128, 256] {
            let out = avg::<u32>(nranks, 1000);
            let report = Pattern::new(DataType::Uint32, ReduceOp::Avg, 0, nranks).check(&out);
            assert_eq!(report.wrong, 0, "uint32 n={nranks}");
            // int8: the wrapped sum divided by the true n (as i8, 128 was -128 and
            // 256 was 0, a division by zero).
            let p = Pattern::new(DataType::Int8, ReduceOp::Avg, 0, nranks);
            let expected: &[i8] = bytemuck::cast_slice(&p.expected);
            let stride = stride::<i8>(ReduceOp::Avg, nranks);
            for (j, &e) in expected.iter().enumerate().take(1000) {
                let sum = (0..nranks).fold(0i8, |acc, r| {
                    acc.wrapping_add(small_value(ReduceOp::Avg, j, r, stride) as i8)
                });
                assert_eq!(
                    e,
                    (i128::from(sum) / i128::from(nranks)) as i8,
                    "n={nranks} j={j}"
                );
            }
        }
    }

    #[test]
    fn ranks_beyond_a_types_exact_range_take_turns() {
        use half::{bf16, f16};
        // bf16 holds the integers to 256: 64 ranks of 1..=4 fit, 128 take turns.
        assert_eq!(stride::<bf16>(ReduceOp::Sum, 64), 1);
        assert_eq!(stride::<bf16>(ReduceOp::Sum, 128), 2);
        assert_eq!(stride::<bf16>(ReduceOp::Sum, 512), 8);
        assert_eq!(stride::<f16>(ReduceOp::Sum, 512), 1);
        assert_eq!(stride::<f16>(ReduceOp::Prod, 16), 2);
        assert_eq!(stride::<f32>(ReduceOp::Sum, 512), 1);
        assert_eq!(stride::<i8>(ReduceOp::Prod, 8), 2);
        // Every rank is active somewhere, and a position's active ranks fit.
        let (n, s) = (512, stride::<bf16>(ReduceOp::Sum, 512));
        for j in 0..64 {
            let sum: u32 = (0..n).map(|r| small_value(ReduceOp::Sum, j, r, s)).sum();
            assert!(sum <= 256, "position {j}: {sum}");
        }
        for r in 0..n {
            assert!(
                (0..64).any(|j| small_value(ReduceOp::Sum, j, r, s) > 0),
                "rank {r}"
            );
        }
    }

    /// The expected values against an oracle that shares no arithmetic with them:
    /// integers in i128 (wrapped to the type once, at the end, as NCCL's wrapping
    /// adds and multiplies give), floats in f64 (exact for these small integers),
    /// then cast. Swapping min and max, or a wrong wrap, fails here.
    #[test]
    fn expected_values_match_an_independent_oracle() {
        fn bits(dt: DataType) -> u32 {
            8 * dt.size() as u32
        }
        // The oracle's value, as the element's little-endian bytes.
        fn oracle(dt: DataType, op: ReduceOp, values: &[u32], nranks: u32) -> Vec<u8> {
            let ints = values.iter().map(|&v| i128::from(v));
            let exact: i128 = match op {
                ReduceOp::Sum | ReduceOp::Avg => ints.sum(),
                ReduceOp::Prod => ints.product(),
                ReduceOp::Max => ints.max().unwrap(),
                ReduceOp::Min => ints.min().unwrap(),
            };
            let size = dt.size();
            if !dt.is_float() {
                // Wrap to the type: keep the low bits, sign-extend signed types.
                let b = bits(dt);
                let signed = matches!(dt, DataType::Int8 | DataType::Int32 | DataType::Int64);
                let mask = if b == 128 { -1 } else { (1i128 << b) - 1 };
                let mut v = exact & mask;
                if signed && v >= 1i128 << (b - 1) {
                    v -= 1i128 << b;
                }
                if op == ReduceOp::Avg {
                    v /= i128::from(nranks);
                }
                return v.to_le_bytes()[..size].to_vec();
            }
            let mut x = exact as f64;
            if op == ReduceOp::Avg {
                x /= f64::from(nranks);
            }
            match dt {
                DataType::Half => half::f16::from_f64(x).to_le_bytes().to_vec(),
                DataType::Bfloat16 => half::bf16::from_f64(x).to_le_bytes().to_vec(),
                DataType::Float => (x as f32).to_le_bytes().to_vec(),
                _ => x.to_le_bytes().to_vec(),
            }
        }
        for dt in DataType::ALL {
            for op in ReduceOp::ALL {
                for nranks in [2, 3, 8, 64] {
                    let pattern = Pattern::new(dt, op, 0, nranks);
                    let stride = with_element!(dt, stride(op, nranks));
                    let size = dt.size();
                    for j in 0..300 {
                        let values: Vec<u32> =
                            (0..nranks).map(|r| small_value(op, j, r, stride)).collect();
                        let want = oracle(dt, op, &values, nranks);
                        let got = &pattern.expected[j * size..(j + 1) * size];
                        assert_eq!(got, &want[..], "{dt} {op} n={nranks} j={j} {values:?}");
                    }
                }
            }
        }
    }

    /// For every type and operator, one wrong element is counted (avg's tolerance
    /// included).
    #[test]
    fn one_corrupted_element_is_caught_for_every_type_and_op() {
        fn corrupt<T: Element>(buf: &mut [u8], at: usize) {
            let v: &mut [T] = bytemuck::cast_slice_mut(buf);
            let (a, b) = (T::from_small(1000), T::from_small(1001));
            v[at] = if v[at] == a { b } else { a };
        }
        for dt in DataType::ALL {
            for op in ReduceOp::ALL {
                for nranks in [2, 3, 8] {
                    let pattern = Pattern::new(dt, op, 0, nranks);
                    let mut out = pattern.expected[..500 * dt.size()].to_vec();
                    assert_eq!(pattern.check(&out).wrong, 0, "{dt} {op} n={nranks}");
                    with_element!(dt, corrupt(&mut out, 321));
                    let report = pattern.check(&out);
                    assert_eq!(report.wrong, 1, "{dt} {op} n={nranks}");
                    assert_eq!(report.first.unwrap().index, 321);
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
