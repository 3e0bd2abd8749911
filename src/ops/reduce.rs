//! Host reduction kernels: `dst = a (op) b` over byte slices holding elements of one
//! `DataType`. Integers wrap as they do on the GPU; half and bfloat16 are reduced in
//! f32 and rounded back, as NCCL's device code does. Each loop is written so that the
//! compiler vectorizes it: the operator is chosen once per call, never per element.

use bytemuck::Pod;
use half::{bf16, f16};

use super::{DataType, ReduceOp};

/// An element type the host backend can reduce.
pub trait Element: Pod + PartialEq + Send + Sync {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
    /// Divides by the rank count, the last step of `avg`.
    fn div_count(self, n: u32) -> Self;
    /// A small non-negative integer (< 2^16) as this type; exact in every type for the
    /// values the fill pattern uses.
    fn from_small(v: u32) -> Self;
    fn to_f64(self) -> f64;
    /// Relative rounding unit (0 for integers, whose results are exact).
    const EPSILON: f64;
    /// The largest M such that every integer 0..=M is exact in this type (integers
    /// wrap, which is exact in any order: `u64::MAX`).
    const EXACT_UP_TO: u64;
    /// The largest k such that 2^k is a finite value of this type (for integers, one
    /// that does not wrap).
    const MAX_POW2: u32;
}

macro_rules! int_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn max(self, o: Self) -> Self { Ord::max(self, o) }
            #[inline(always)] fn min(self, o: Self) -> Self { Ord::min(self, o) }
            // By the true n: `n as i8` would wrap at 128 ranks.
            #[inline(always)] fn div_count(self, n: u32) -> Self { (self as i128 / i128::from(n)) as $t }
            #[inline(always)] fn from_small(v: u32) -> Self { v as $t }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            const EPSILON: f64 = 0.0;
            const EXACT_UP_TO: u64 = u64::MAX;
            const MAX_POW2: u32 = <$t>::BITS - 1 - (<$t>::MIN != 0) as u32;
        }
    )*};
}
int_element!(i8, u8, i32, u32, i64, u64);

macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn max(self, o: Self) -> Self { if self > o { self } else { o } }
            #[inline(always)] fn min(self, o: Self) -> Self { if self < o { self } else { o } }
            #[inline(always)] fn div_count(self, n: u32) -> Self { self / (n as $t) }
            #[inline(always)] fn from_small(v: u32) -> Self { v as $t }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            const EPSILON: f64 = <$t>::EPSILON as f64;
            const EXACT_UP_TO: u64 = 1 << <$t>::MANTISSA_DIGITS;
            const MAX_POW2: u32 = <$t>::MAX_EXP as u32 - 1;
        }
    )*};
}
float_element!(f32, f64);

macro_rules! half_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() + o.to_f32()) }
            #[inline(always)] fn mul(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() * o.to_f32()) }
            #[inline(always)] fn max(self, o: Self) -> Self { if self > o { self } else { o } }
            #[inline(always)] fn min(self, o: Self) -> Self { if self < o { self } else { o } }
            #[inline(always)] fn div_count(self, n: u32) -> Self { <$t>::from_f32(self.to_f32() / n as f32) }
            #[inline(always)] fn from_small(v: u32) -> Self { <$t>::from_f32(v as f32) }
            #[inline(always)] fn to_f64(self) -> f64 { self.to_f64() }
            const EPSILON: f64 = <$t>::EPSILON.to_f64_const();
            const EXACT_UP_TO: u64 = 1 << <$t>::MANTISSA_DIGITS;
            const MAX_POW2: u32 = <$t>::MAX_EXP as u32 - 1;
        }
    )*};
}
half_element!(f16, bf16);

/// Calls `$f::<T>(args)` with `T` the Rust type of `$dt`.
macro_rules! with_element {
    ($dt:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $dt {
            DataType::Int8 => $f::<i8>($($arg),*),
            DataType::Uint8 => $f::<u8>($($arg),*),
            DataType::Int32 => $f::<i32>($($arg),*),
            DataType::Uint32 => $f::<u32>($($arg),*),
            DataType::Int64 => $f::<i64>($($arg),*),
            DataType::Uint64 => $f::<u64>($($arg),*),
            DataType::Half => $f::<half::f16>($($arg),*),
            DataType::Float => $f::<f32>($($arg),*),
            DataType::Double => $f::<f64>($($arg),*),
            DataType::Bfloat16 => $f::<half::bf16>($($arg),*),
        }
    };
}
pub(crate) use with_element;

/// `dst[i] = a[i] (op) b[i]`. `avg` reduces as a sum; `finish_avg` divides at the end.
/// All three slices have the same length, a multiple of the element size, and are
/// aligned to it.
pub fn reduce(dt: DataType, op: ReduceOp, dst: &mut [u8], a: &[u8], b: &[u8]) {
    with_element!(dt, reduce_typed(op, dst, a, b))
}

/// `acc[i] = acc[i] (op) b[i]`.
pub fn reduce_in_place(dt: DataType, op: ReduceOp, acc: &mut [u8], b: &[u8]) {
    with_element!(dt, reduce_in_place_typed(op, acc, b))
}

/// The last step of `avg`: divides every element by the rank count. A no-op for
/// other operators.
pub fn finish_avg(dt: DataType, op: ReduceOp, buf: &mut [u8], nranks: u32) {
    if op == ReduceOp::Avg {
        with_element!(dt, divide_typed(buf, nranks))
    }
}

fn reduce_typed<T: Element>(op: ReduceOp, dst: &mut [u8], a: &[u8], b: &[u8]) {
    let dst: &mut [T] = bytemuck::cast_slice_mut(dst);
    let a: &[T] = bytemuck::cast_slice(a);
    let b: &[T] = bytemuck::cast_slice(b);
    match op {
        ReduceOp::Sum | ReduceOp::Avg => zip3(dst, a, b, T::add),
        ReduceOp::Prod => zip3(dst, a, b, T::mul),
        ReduceOp::Max => zip3(dst, a, b, T::max),
        ReduceOp::Min => zip3(dst, a, b, T::min),
    }
}

fn reduce_in_place_typed<T: Element>(op: ReduceOp, acc: &mut [u8], b: &[u8]) {
    let acc: &mut [T] = bytemuck::cast_slice_mut(acc);
    let b: &[T] = bytemuck::cast_slice(b);
    let f = match op {
        ReduceOp::Sum | ReduceOp::Avg => T::add,
        ReduceOp::Prod => T::mul,
        ReduceOp::Max => T::max,
        ReduceOp::Min => T::min,
    };
    for (x, y) in acc.iter_mut().zip(b) {
        *x = f(*x, *y);
    }
}

#[inline(always)]
fn zip3<T: Element>(dst: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T) -> T) {
    for ((d, x), y) in dst.iter_mut().zip(a).zip(b) {
        *d = f(*x, *y);
    }
}

fn divide_typed<T: Element>(buf: &mut [u8], nranks: u32) {
    for x in bytemuck::cast_slice_mut::<u8, T>(buf) {
        *x = x.div_count(nranks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of<T: Pod>(v: &[T]) -> Vec<u8> {
        bytemuck::cast_slice(v).to_vec()
    }

    #[test]
    fn float_ops_are_elementwise() {
        let a = bytes_of(&[1.0f32, 5.0, -2.0]);
        let b = bytes_of(&[2.0f32, 3.0, -7.0]);
        let mut d = vec![0u8; a.len()];
        let mut check = |op, want: [f32; 3]| {
            reduce(DataType::Float, op, &mut d, &a, &b);
            assert_eq!(bytemuck::cast_slice::<u8, f32>(&d), want, "{op}");
        };
        check(ReduceOp::Sum, [3.0, 8.0, -9.0]);
        check(ReduceOp::Prod, [2.0, 15.0, 14.0]);
        check(ReduceOp::Max, [2.0, 5.0, -2.0]);
        check(ReduceOp::Min, [1.0, 3.0, -7.0]);
    }

    #[test]
    fn integers_wrap_like_the_gpu() {
        let a = bytes_of(&[120i8, -128]);
        let b = bytes_of(&[10i8, -1]);
        let mut d = vec![0u8; 2];
        reduce(DataType::Int8, ReduceOp::Sum, &mut d, &a, &b);
        assert_eq!(bytemuck::cast_slice::<u8, i8>(&d), [-126, 127]);
    }

    #[test]
    fn avg_sums_then_divides() {
        let mut acc = bytes_of(&[2.0f32, 4.0]);
        reduce_in_place(
            DataType::Float,
            ReduceOp::Avg,
            &mut acc,
            &bytes_of(&[4.0f32, 4.0]),
        );
        finish_avg(DataType::Float, ReduceOp::Avg, &mut acc, 2);
        assert_eq!(bytemuck::cast_slice::<u8, f32>(&acc), [3.0, 4.0]);
        let mut ints = bytes_of(&[7i32, -7]);
        finish_avg(DataType::Int32, ReduceOp::Avg, &mut ints, 2);
        assert_eq!(bytemuck::cast_slice::<u8, i32>(&ints), [3, -3]);
        let mut untouched = bytes_of(&[7i32]);
        finish_avg(DataType::Int32, ReduceOp::Sum, &mut untouched, 2);
        assert_eq!(bytemuck::cast_slice::<u8, i32>(&untouched), [7]);
    }

    #[test]
    fn half_types_round_through_f32() {
        let a = bytes_of(&[f16::from_f32(1.5), f16::from_f32(-2.0)]);
        let b = bytes_of(&[f16::from_f32(2.25), f16::from_f32(8.0)]);
        let mut d = vec![0u8; a.len()];
        reduce(DataType::Half, ReduceOp::Sum, &mut d, &a, &b);
        let got: &[f16] = bytemuck::cast_slice(&d);
        assert_eq!(got, [f16::from_f32(3.75), f16::from_f32(6.0)]);
        let a = bytes_of(&[bf16::from_f32(3.0)]);
        let b = bytes_of(&[bf16::from_f32(-1.0)]);
        let mut d = vec![0u8; 2];
        reduce(DataType::Bfloat16, ReduceOp::Min, &mut d, &a, &b);
        assert_eq!(bytemuck::cast_slice::<u8, bf16>(&d), [bf16::from_f32(-1.0)]);
    }
}
