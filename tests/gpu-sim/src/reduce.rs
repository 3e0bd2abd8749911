//! The arithmetic of an all-reduce, per `ncclDataType_t` and `ncclRedOp_t`, as NCCL
//! computes it: integers wrap, half and bfloat16 round after every operation, and
//! `avg` of floating-point types multiplies each input by 1/n before summing
//! (NCCL's pre-multiplied sum), of integers divides the sum.

use half::{bf16, f16};

/// Bytes of an element of `ncclDataType_t` `dtype`; `None` for an unknown type.
pub fn size(dtype: i32) -> Option<usize> {
    Some(match dtype {
        0 | 1 => 1,
        2 | 3 | 7 => 4,
        4 | 5 | 8 => 8,
        6 | 9 => 2,
        _ => return None,
    })
}

/// Whether `op` is a reduction NCCL knows (sum, prod, max, min, avg).
pub fn known_op(op: i32) -> bool {
    (0..=4).contains(&op)
}

trait Elem: Copy {
    fn load(b: &[u8]) -> Self;
    fn store(self, b: &mut [u8]);
    fn combine(self, o: Self, op: i32) -> Self;
    /// `avg`'s last step: integers divide the sum; floats were pre-multiplied.
    fn finish_avg(self, n: u32) -> Self;
    /// The pre-multiplication of `avg` (floats only; integers unchanged).
    fn premul(self, n: u32) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn load(b: &[u8]) -> Self { <$t>::from_le_bytes(b.try_into().unwrap()) }
            fn store(self, b: &mut [u8]) { b.copy_from_slice(&self.to_le_bytes()) }
            fn combine(self, o: Self, op: i32) -> Self {
                match op {
                    1 => self.wrapping_mul(o),
                    2 => self.max(o),
                    3 => self.min(o),
                    _ => self.wrapping_add(o),
                }
            }
            fn finish_avg(self, n: u32) -> Self { (self as i128 / i128::from(n)) as $t }
            fn premul(self, _n: u32) -> Self { self }
        }
    )*};
}
int_elem!(i8, u8, i32, u32, i64, u64);

macro_rules! float_elem {
    ($t:ty, $to:expr, $from:expr) => {
        impl Elem for $t {
            fn load(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_le_bytes())
            }
            fn combine(self, o: Self, op: i32) -> Self {
                let (a, b): (f64, f64) = ($to(self), $to(o));
                let r = match op {
                    1 => a * b,
                    2 => a.max(b),
                    3 => a.min(b),
                    _ => a + b,
                };
                $from(r)
            }
            fn finish_avg(self, _n: u32) -> Self {
                self
            }
            fn premul(self, n: u32) -> Self {
                let scale: $t = $from(1.0 / n as f64);
                $from($to(self) * $to(scale))
            }
        }
    };
}
float_elem!(f32, |x: f32| x as f64, |x: f64| x as f32);
float_elem!(f64, |x: f64| x, |x: f64| x);
float_elem!(f16, |x: f16| x.to_f64(), f16::from_f64);
float_elem!(bf16, |x: bf16| x.to_f64(), bf16::from_f64);

fn reduce_as<T: Elem>(op: i32, inputs: &[&[u8]], out: &mut [u8]) {
    let w = std::mem::size_of::<T>();
    let n = inputs.len() as u32;
    for (i, o) in out.chunks_exact_mut(w).enumerate() {
        let at = |input: &[u8]| {
            let v = T::load(&input[i * w..(i + 1) * w]);
            if op == 4 {
                v.premul(n)
            } else {
                v
            }
        };
        let mut acc = at(inputs[0]);
        for input in &inputs[1..] {
            acc = acc.combine(at(input), op);
        }
        if op == 4 {
            acc = acc.finish_avg(n);
        }
        acc.store(o);
    }
}

/// Reduces the ranks' `inputs` (in rank order) element by element into `out`.
pub fn reduce(dtype: i32, op: i32, inputs: &[&[u8]], out: &mut [u8]) {
    match dtype {
        0 => reduce_as::<i8>(op, inputs, out),
        1 => reduce_as::<u8>(op, inputs, out),
        2 => reduce_as::<i32>(op, inputs, out),
        3 => reduce_as::<u32>(op, inputs, out),
        4 => reduce_as::<i64>(op, inputs, out),
        5 => reduce_as::<u64>(op, inputs, out),
        6 => reduce_as::<f16>(op, inputs, out),
        7 => reduce_as::<f32>(op, inputs, out),
        8 => reduce_as::<f64>(op, inputs, out),
        _ => reduce_as::<bf16>(op, inputs, out),
    }
}
