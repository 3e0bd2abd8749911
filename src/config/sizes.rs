//! Message sizes and GPU counts of a sweep, planned the way nccl-tests plans them:
//! from `-b` to `-e`, multiplying by `-f` or adding `-i`, each size rounded down to a
//! whole number of elements.

use thiserror::Error;

use crate::units::Bytes;

/// How the next size follows from the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Factor(u64),
    Bytes(u64),
}

/// No sweep needs more sizes than this; a typo like `-i 1` over 8..8G would.
pub const MAX_SIZES: usize = 4096;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SizeError {
    #[error("minimum size {min} is larger than maximum size {max} (-b/--minbytes must be <= -e/--maxbytes)")]
    MinAboveMax { min: Bytes, max: Bytes },
    #[error("minimum size {min} is smaller than one {dtype} element ({elem} bytes)")]
    BelowOneElement {
        min: Bytes,
        dtype: String,
        elem: usize,
    },
    #[error("-f/--stepfactor must be at least 2 (got {0})")]
    Factor(u64),
    #[error("-i/--stepbytes must be at least 1 byte")]
    StepZero,
    #[error(
        "{min}..{max} in steps of {step} gives more than {MAX_SIZES} sizes; use a larger step"
    )]
    TooMany {
        min: Bytes,
        max: Bytes,
        step: String,
    },
}

/// The message sizes in bytes, each a multiple of `elem`, ascending, unique.
pub fn size_list(
    min: Bytes,
    max: Bytes,
    step: Step,
    elem: usize,
    dtype: &str,
) -> Result<Vec<u64>, SizeError> {
    if min > max {
        return Err(SizeError::MinAboveMax { min, max });
    }
    if min.0 < elem as u64 {
        return Err(SizeError::BelowOneElement {
            min,
            dtype: dtype.to_string(),
            elem,
        });
    }
    match step {
        Step::Factor(f) if f < 2 => return Err(SizeError::Factor(f)),
        Step::Bytes(0) => return Err(SizeError::StepZero),
        _ => {}
    }
    let elem = elem as u64;
    let mut sizes: Vec<u64> = Vec::new();
    let mut size = min.0;
    while size <= max.0 {
        let rounded = size / elem * elem;
        if sizes.last() != Some(&rounded) {
            sizes.push(rounded);
        }
        if sizes.len() > MAX_SIZES {
            return Err(SizeError::TooMany {
                min,
                max,
                step: match step {
                    Step::Factor(f) => format!("x{f}"),
                    Step::Bytes(b) => format!("+{}", Bytes(b)),
                },
            });
        }
        let next = match step {
            Step::Factor(f) => size.checked_mul(f),
            Step::Bytes(b) => size.checked_add(b),
        };
        match next {
            Some(n) => size = n,
            None => break,
        }
    }
    Ok(sizes)
}

/// `--gpus N` sweeps 1 (if N is 1) or 2, 4, 8, ... up to N, and N itself; a list
/// `2,4,8` is taken as given.
pub fn gpu_counts(spec: &str) -> Result<Vec<u32>, String> {
    let bad = |part: &str| {
        format!("invalid --gpus '{spec}': '{part}' is not a positive integer (give N, or a list like 2,4,8)")
    };
    let parts: Vec<&str> = spec.split(',').map(str::trim).collect();
    let mut values = Vec::with_capacity(parts.len());
    for part in &parts {
        match part.parse::<u32>() {
            Ok(v) if v >= 1 => values.push(v),
            _ => return Err(bad(part)),
        }
    }
    if values.len() > 1 {
        for (i, v) in values.iter().enumerate() {
            if values[..i].contains(v) {
                return Err(format!("invalid --gpus '{spec}': {v} is listed twice"));
            }
        }
        return Ok(values);
    }
    let n = values[0];
    if n == 1 {
        return Ok(vec![1]);
    }
    let mut counts = Vec::new();
    let mut c = 2;
    while c <= n {
        counts.push(c);
        c *= 2;
    }
    if counts.last() != Some(&n) {
        counts.push(n);
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factor_sweep_matches_nccl_tests() {
        let s = size_list(Bytes(8), Bytes(128), Step::Factor(2), 4, "float").unwrap();
        assert_eq!(s, [8, 16, 32, 64, 128]);
        let s = size_list(Bytes(1024), Bytes(4 << 20), Step::Factor(4), 4, "float").unwrap();
        assert_eq!(s, [1024, 4096, 16384, 65536, 262144, 1048576, 4194304]);
        // A maximum that is not on the grid is not reached, as in nccl-tests.
        let s = size_list(Bytes(8), Bytes(100), Step::Factor(2), 1, "int8").unwrap();
        assert_eq!(s, [8, 16, 32, 64]);
    }

    #[test]
    fn increments_and_rounding_to_elements() {
        let s = size_list(Bytes(10), Bytes(40), Step::Bytes(10), 8, "double").unwrap();
        assert_eq!(s, [8, 16, 24, 40]);
        let s = size_list(Bytes(8), Bytes(8), Step::Factor(2), 4, "float").unwrap();
        assert_eq!(s, [8]);
    }

    #[test]
    fn bad_ranges_are_rejected() {
        assert!(matches!(
            size_list(Bytes(64), Bytes(8), Step::Factor(2), 4, "float"),
            Err(SizeError::MinAboveMax { .. })
        ));
        let err = size_list(Bytes(2), Bytes(8), Step::Factor(2), 4, "float").unwrap_err();
        assert_eq!(
            err.to_string(),
            "minimum size 2 B is smaller than one float element (4 bytes)"
        );
        assert_eq!(
            size_list(Bytes(8), Bytes(64), Step::Factor(1), 4, "float"),
            Err(SizeError::Factor(1))
        );
        assert!(matches!(
            size_list(Bytes(8), Bytes(8 << 30), Step::Bytes(1), 1, "int8"),
            Err(SizeError::TooMany { .. })
        ));
    }

    #[test]
    fn gpu_counts_double_up_to_n() {
        assert_eq!(gpu_counts("8").unwrap(), [2, 4, 8]);
        assert_eq!(gpu_counts("6").unwrap(), [2, 4, 6]);
        assert_eq!(gpu_counts("2").unwrap(), [2]);
        assert_eq!(gpu_counts("1").unwrap(), [1]);
        assert_eq!(gpu_counts("4,2,8").unwrap(), [4, 2, 8]);
        assert!(gpu_counts("0").is_err());
        assert!(gpu_counts("two").is_err());
        assert!(gpu_counts("2,2").unwrap_err().contains("listed twice"));
        assert!(gpu_counts("2,,4").is_err());
    }
}
