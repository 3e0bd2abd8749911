//! Tests of the check pattern: exactness in any order, independent oracles, corrupted
//! and missing contributions caught.

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

/// Each collective's output, built on the host from every rank's input as the
/// collective defines it, passes the check; one element moved or a chunk from the
/// wrong rank is found at its index.
#[test]
fn every_collective_is_checked_exactly_from_its_sources() {
    use crate::ops::collective::{Collective, Source};
    let (dt, op, nranks, root) = (DataType::Float, ReduceOp::Sum, 3u32, 1u32);
    // Three chunks of 70,000 floats: past one period, at a phase that is not 0.
    let bytes = 3 * 70_000 * 4;
    let input = |r: u32, len: u64| {
        let mut buf = vec![0u8; len as usize * 4];
        Pattern::new(dt, op, r, nranks).fill(&mut buf);
        buf
    };
    let reduced = |len: u64| reference(dt, op, nranks, len as usize);
    for c in Collective::ALL {
        let counts = c.counts(bytes, 4, nranks);
        for rank in 0..nranks {
            let mut out = vec![0xEEu8; counts.recv as usize * 4];
            for (range, source) in c.layout(rank, nranks, root, counts) {
                let (from, whole) = match source {
                    Source::Reduced { from } => (from, reduced(counts.send)),
                    Source::Input { rank: r, from } => (from, input(r, counts.send)),
                    Source::Untouched => continue,
                };
                let n = (range.end - range.start) as usize * 4;
                out[range.start as usize * 4..][..n]
                    .copy_from_slice(&whole[from as usize * 4..][..n]);
            }
            let who = (rank, nranks, root);
            let ok = check_collective(c, (dt, op), who, counts, &out);
            assert_eq!(ok, CheckReport::default(), "{c} rank {rank}");
            let written = c
                .layout(rank, nranks, root, counts)
                .iter()
                .any(|(_, s)| *s != Source::Untouched);
            if !written {
                continue;
            }
            // The last element of the output broken.
            let last = out.len() - 4;
            out[last..].copy_from_slice(&(-1.0f32).to_le_bytes());
            let bad = check_collective(c, (dt, op), who, counts, &out);
            assert_eq!(bad.wrong, 1, "{c} rank {rank}");
            assert_eq!(bad.first.unwrap().index, counts.recv - 1, "{c} rank {rank}");
        }
    }
    // all_gather with the chunks of ranks 0 and 1 swapped: the elements of both where
    // the two ranks' inputs differ (most of them), from the first chunk on.
    let c = Collective::AllGather;
    let counts = c.counts(bytes, 4, nranks);
    let p = counts.param as usize * 4;
    let mut out = Vec::new();
    for r in [1, 0, 2] {
        out.extend_from_slice(&input(r, counts.param));
    }
    let bad = check_collective(c, (dt, op), (0, nranks, root), counts, &out);
    assert!(bad.wrong as usize > p / 4, "{bad:?}");
    assert!(bad.first.as_ref().unwrap().index < counts.param, "{bad:?}");
}
