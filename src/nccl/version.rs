//! NCCL's version numbers: the code `ncclGetVersion` returns and the `2.28.9` people
//! read.

use std::fmt;

/// A version as NCCL encodes it: X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NcclVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub code: i32,
}

impl NcclVersion {
    pub fn from_code(code: i32) -> NcclVersion {
        let c = code.max(0) as u32;
        let (major, rest) = if c >= 10000 {
            (c / 10000, c % 10000)
        } else {
            (c / 1000, c % 1000)
        };
        NcclVersion {
            major,
            minor: rest / 100,
            patch: rest % 100,
            code,
        }
    }
}

impl fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode_both_encodings() {
        assert_eq!(NcclVersion::from_code(23203).to_string(), "2.32.3");
        assert_eq!(NcclVersion::from_code(22105).to_string(), "2.21.5");
        assert_eq!(NcclVersion::from_code(2708).to_string(), "2.7.8");
        assert!(NcclVersion::from_code(21903) > NcclVersion::from_code(2708));
    }
}
