//! The environment variables NCCL reads. NCCL silently ignores a misspelled or
//! invented `NCCL_*` variable (a widely shared write-up recommends
//! `NCCL_SHM_USE_CUDA_MEMORY`, which no release has), so configurations and `doctor`
//! flag unknown names. The list (`nccl_vars.txt`) was extracted from the NCCL
//! sources: every `NCCL_PARAM` and every `ncclGetEnv`/`getenv` of an `NCCL_` name,
//! including names that older releases read.

const KNOWN: &str = include_str!("nccl_vars.txt");

/// nccl-bench's own variables: `NCCL_BENCH` (the binary, for the scripts) and
/// `NCCL_BENCH_*` (`NCCL_BENCH_NCCL_LIB`, `NCCL_BENCH_FAULT`, the test suite's). Not
/// NCCL's, never flagged.
pub fn is_ours(var: &str) -> bool {
    var == "NCCL_BENCH" || var.starts_with("NCCL_BENCH_")
}

/// `NCCL_*` names that describe an installation rather than set anything: NVIDIA's
/// container images export `NCCL_VERSION` to name the NCCL they ship.
const IMAGE_LABELS: [&str; 1] = ["NCCL_VERSION"];

/// What to say about a variable that describes the installed NCCL (an image label),
/// not a setting; `None` for anything else.
pub fn image_label(var: &str) -> Option<String> {
    IMAGE_LABELS.contains(&var).then(|| {
        format!("{var} is set by the container image to name the NCCL it ships; NCCL does not read it, and the library actually loaded may differ")
    })
}

fn known_names() -> impl Iterator<Item = &'static str> {
    KNOWN
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Whether NCCL (some release of it) reads this variable.
pub fn is_known(var: &str) -> bool {
    is_ours(var) || known_names().any(|k| k == var)
}

/// A warning for an `NCCL_*` variable NCCL does not know; `None` for anything else.
pub fn check(var: &str) -> Option<String> {
    if !var.starts_with("NCCL_") || is_known(var) {
        return None;
    }
    let hint = closest(var)
        .map(|k| format!(" (did you mean {k}?)"))
        .unwrap_or_default();
    Some(format!(
        "{var} is not a variable any NCCL release reads: NCCL ignores it{hint}"
    ))
}

/// The known name nearest to `var`, if it is close enough to be a likely typo.
fn closest(var: &str) -> Option<&'static str> {
    known_names()
        .map(|k| (edit_distance(var, k), k))
        .filter(|(d, _)| *d <= 3.max(var.len() / 5))
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// NCCL's integer parameters: `strtoll(value, &end, 0)` with nothing left over
/// (leading spaces skipped; decimal, `0x` hex, leading `0` octal). `None` is what NCCL
/// rejects and replaces with the default.
pub fn parse_nccl_int(value: &str) -> Option<i64> {
    let value = value.trim_start();
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value.strip_prefix('+').unwrap_or(value)),
    };
    let parsed = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse::<i64>().ok()
    }?;
    Some(if negative { -parsed } else { parsed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_as_strtoll_does() {
        assert_eq!(parse_nccl_int("1"), Some(1));
        assert_eq!(parse_nccl_int("0x400000"), Some(4_194_304));
        assert_eq!(parse_nccl_int("010"), Some(8));
        assert_eq!(parse_nccl_int("-2"), Some(-2));
        assert_eq!(parse_nccl_int("4M"), None);
        assert_eq!(parse_nccl_int(""), None);
        assert_eq!(parse_nccl_int(" 1"), Some(1));
        assert_eq!(parse_nccl_int("1 "), None);
    }

    #[test]
    fn real_variables_are_known() {
        for var in [
            "NCCL_SHM_DISABLE",
            "NCCL_P2P_DISABLE",
            "NCCL_P2P_LEVEL",
            "NCCL_IB_DISABLE",
            "NCCL_NET",
            "NCCL_SOCKET_IFNAME",
            "NCCL_NVLS_ENABLE",
            "NCCL_ALGO",
            "NCCL_PROTO",
            "NCCL_BUFFSIZE",
            "NCCL_DEBUG",
            "NCCL_DEBUG_FILE",
            "NCCL_DEBUG_SUBSYS",
            "NCCL_CUMEM_ENABLE",
            "NCCL_SHM_USE_CUDA_MEMCPY",
            "NCCL_MIN_NCHANNELS",
            "NCCL_MAX_NCHANNELS",
        ] {
            assert!(is_known(var), "{var}");
            assert_eq!(check(var), None);
        }
    }

    #[test]
    fn the_invented_variable_is_flagged_with_the_real_one() {
        let w = check("NCCL_SHM_USE_CUDA_MEMORY").unwrap();
        assert!(w.contains("did you mean NCCL_SHM_USE_CUDA_MEMCPY?"), "{w}");
        assert!(check("NCCL_TOTALLY_MADE_UP_THING").is_some());
        assert_eq!(check("CUDA_VISIBLE_DEVICES"), None);
    }
}
