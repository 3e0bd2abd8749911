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

    /// `2.27.3`, `2.27.3+cuda12.9` or `2.27.3-1` as a log prints it; `None` otherwise.
    pub fn parse(text: &str) -> Option<NcclVersion> {
        let core = text.trim().split(['+', '-', ' ']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
        let (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) =
            (parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        Some(NcclVersion {
            major,
            minor,
            patch,
            code: (major * 10000 + minor * 100 + patch) as i32,
        })
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

    #[test]
    fn versions_read_as_logs_print_them() {
        let v = NcclVersion::parse("2.27.3+cuda12.9").unwrap();
        assert_eq!((v.major, v.minor, v.patch, v.code), (2, 27, 3, 22703));
        assert_eq!(
            NcclVersion::parse("2.21.5-1").unwrap().to_string(),
            "2.21.5"
        );
        assert_eq!(NcclVersion::parse("2.18"), None);
        assert_eq!(NcclVersion::parse("v2.x.1"), None);
    }
}
