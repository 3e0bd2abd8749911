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

use super::collective::{Collective, Counts, Source};
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
        self.check_reduced(out, 0)
    }

    /// Checks `out` against the reduced result from element `from` on.
    fn check_reduced(&self, out: &[u8], from: u64) -> CheckReport {
        let tolerant = self.op == ReduceOp::Avg && self.dt.is_float();
        let tolerance = if tolerant { Some(self.active) } else { None };
        check_periodic(self.dt, &self.expected, from, out, tolerance)
    }
}

/// Checks `rank`'s output of `collective` (its `counts.recv` elements, `out`) with
/// `root` the root of a rooted collective: each stretch of it against the reduced
/// result or the input of the rank it comes from ([`Collective::layout`]); what the
/// collective does not write is not checked. Element indexes in the report are of
/// `out`.
pub fn check_collective(
    collective: Collective,
    (dt, op): (DataType, ReduceOp),
    (rank, nranks, root): (u32, u32, u32),
    counts: Counts,
    out: &[u8],
) -> CheckReport {
    let size = dt.size();
    let layout = collective.layout(rank, nranks, root, counts);
    // The reduced result (one pattern with its expected table, which costs a pass
    // over every rank) only where the output holds it; each sending rank's input
    // table, built once (a pass over one rank).
    let reduced = layout
        .iter()
        .any(|(_, s)| matches!(s, Source::Reduced { .. }))
        .then(|| Pattern::new(dt, op, rank, nranks));
    let mut inputs: Vec<Option<Vec<u8>>> = (0..nranks).map(|_| None).collect();
    for (_, source) in &layout {
        if let Source::Input { rank: r, .. } = *source {
            if let Some(slot) = inputs.get_mut(r as usize) {
                slot.get_or_insert_with(|| with_element!(dt, input_table(op, r, nranks)));
            }
        }
    }
    let mut report = CheckReport::default();
    for (range, source) in &layout {
        let (start, end) = (range.start as usize * size, range.end as usize * size);
        let Some(bytes) = out.get(start..end) else {
            if *source != Source::Untouched {
                report.wrong += range.end - range.start;
            }
            continue;
        };
        let part = match *source {
            Source::Reduced { from } => match &reduced {
                Some(p) => p.check_reduced(bytes, from),
                None => continue,
            },
            Source::Input { rank: r, from } => match inputs.get(r as usize) {
                Some(Some(table)) => check_periodic(dt, table, from, bytes, None),
                _ => continue,
            },
            Source::Untouched => continue,
        };
        if report.first.is_none() {
            report.first = part.first.map(|mut m| {
                m.index += range.start;
                m
            });
        }
        report.wrong += part.wrong;
    }
    report
}

/// Checks `out` against `table` (one period of a pattern) repeated, starting at
/// element `from` of the pattern; indexes in the report are of `out`.
fn check_periodic(
    dt: DataType,
    table: &[u8],
    from: u64,
    out: &[u8],
    tolerance: Option<u32>,
) -> CheckReport {
    let size = dt.size();
    let period_bytes = table.len();
    let mut report = CheckReport::default();
    let mut phase = (from % PERIOD as u64) as usize * size;
    let mut done = 0usize;
    while done < out.len() {
        let len = (period_bytes - phase).min(out.len() - done);
        let block = &out[done..done + len];
        let want = &table[phase..phase + len];
        if tolerance.is_some() || block != want {
            let (wrong, first) = with_element!(dt, compare(block, want, tolerance));
            if report.first.is_none() {
                report.first = first.map(|mut m| {
                    m.index += (done / size) as u64;
                    m
                });
            }
            report.wrong += wrong;
        }
        done += len;
        phase = 0;
    }
    report
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

/// One period of `rank`'s input alone (what [`tables`] gives first, without the
/// reduction over every rank).
fn input_table<T: Element>(op: ReduceOp, rank: u32, nranks: u32) -> Vec<u8> {
    let stride = stride::<T>(op, nranks);
    let input: Vec<T> = (0..PERIOD)
        .map(|j| T::from_small(small_value(op, j, rank, stride)))
        .collect();
    to_bytes(input)
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
mod tests;
