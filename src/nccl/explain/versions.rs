//! What the versions and the GPU say: the GPUs a text names and their architecture, an
//! NCCL release too old for one or a build whose CUDA cannot compile its code, the known
//! bugs of the version, an illegal access inside NCCL on an architecture NCCL supports
//! from recent releases, the driver and CUDA versions in words, and a version line that
//! was wrapped as pasted.

use super::finding::{Finding, FindingKind, Severity};
use super::pasted::Pasted;
use crate::nccl::knowledge::{self, Arch};
use crate::nccl::log::{FailureKind, NcclLog};
use crate::nccl::NcclVersion;

/// Where a line may name a GPU: not NCCL's `host:pid:tid` prefix nor nccl-tests' host
/// (a host may be called `thor`): the message of an NCCL line, the name after a device
/// line's `[bus]`, else the whole line.
fn gpu_text(text: &str) -> &str {
    if text.contains("NCCL INFO") || text.contains("NCCL WARN") {
        return super::pasted::message(text);
    }
    let t = text.trim_start_matches(['#', ' ']);
    if t.starts_with("Rank ") && t.contains(" device ") {
        return text.rsplit_once(']').map_or(text, |(_, name)| name);
    }
    text
}

/// The GPUs the text names (nvidia-smi tables, nccl-tests' device lines, PyTorch's
/// warnings): the architecture of each, by product name or `sm_XX`.
pub(super) fn gpus(pasted: &Pasted) -> Vec<(&'static Arch, String)> {
    let mut out: Vec<(&'static Arch, String)> = Vec::new();
    for l in &pasted.lines {
        let text = gpu_text(l.text);
        let lower = text.to_ascii_lowercase();
        let digits_after = |key: &str| -> Option<u32> {
            let at = lower.find(key)?;
            let digits: String = lower[at + key.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        };
        // NCCL's `Using 256 threads, Min Comp Cap 8`: the smallest major compute
        // capability of the communicator's GPUs, so at least its first architecture.
        let major = digits_after("min comp cap ");
        let arch = knowledge::arch_of_gpu(text)
            .or_else(|| knowledge::arch_of_sm(digits_after("sm_")?))
            .or_else(|| knowledge::arch_of_sm(major? * 10));
        if let Some(a) = arch {
            if !out.iter().any(|(b, _)| b.sm == a.sm) {
                let fallback = match major {
                    // A lower bound: the GPUs are of this major version or newer.
                    Some(m) => format!("compute capability {m}.x GPUs"),
                    None => format!("sm_{}", a.sm),
                };
                let name = a
                    .gpus
                    .iter()
                    .filter(|g| lower.contains(&g.to_ascii_lowercase()))
                    .max_by_key(|g| g.len())
                    .cloned()
                    .unwrap_or(fallback);
                out.push((a, name));
            }
        }
    }
    out
}

/// NCCL older than the first release with kernels for a GPU the text names.
pub(super) fn arch_rule(
    version: Option<NcclVersion>,
    build_cuda: Option<&str>,
    pasted: &Pasted,
) -> Option<Finding> {
    let version = version?;
    let older = |a: &str, b: &str| {
        let parts = |v: &str| -> Vec<u32> { v.split('.').filter_map(|p| p.parse().ok()).collect() };
        parts(a) < parts(b)
    };
    let found = gpus(pasted);
    let before = |a: &Arch| {
        a.first_nccl
            .as_deref()
            .and_then(NcclVersion::parse)
            .is_some_and(|first| version < first)
    };
    // A release new enough, built with a CUDA too old to compile the GPU's code.
    // Only for architectures NCCL added by release (an sm_89 runs sm_86 code).
    let cuda_short = |a: &Arch| {
        a.first_nccl.is_some()
            && build_cuda
                .zip(a.first_cuda.as_deref())
                .is_some_and(|(b, f)| older(b, f))
    };
    let (arch, gpu) = found
        .into_iter()
        .find(|(a, _)| before(a) || cuda_short(a))?;
    let first = arch.first_nccl.clone().unwrap_or_default();
    let cuda = arch
        .first_cuda
        .clone()
        .unwrap_or_else(|| "a newer".to_string());
    let mut f = Finding::new(
        FindingKind::NcclTooOldForGpu,
        Vec::new(),
        &[
            ("version", version.to_string()),
            ("gpu", gpu.clone()),
            ("arch", format!("sm_{}, {}", arch.sm, arch.name)),
            ("first", first.clone()),
            ("cuda", cuda.clone()),
        ],
    );
    if !before(arch) {
        let built = build_cuda.unwrap_or_default();
        f.title = format!("NCCL {version} was built with CUDA {built}, too old for the {gpu}");
        f.cause = format!(
            "The log runs NCCL {version}+cuda{built} on {gpu} (sm_{}, {}); code for it needs \
             CUDA {cuda} or later, so this build has no kernels of its own for it (at most \
             PTX of older GPUs, compiled when it starts).",
            arch.sm, arch.name
        );
        f.fix = format!(
            "Upgrade to an NCCL build for CUDA {cuda} or later (for PyTorch: a wheel built with CUDA \
             {cuda} or later, which bundles one)."
        );
    }
    f.sources = vec![arch.source.clone()];
    Some(f)
}

/// An illegal memory access inside NCCL (its own `Cuda failure 700`, or an unhandled
/// CUDA error quoting it) on a GPU the text names, at one of the architecture's early
/// releases, or with no version shown on an architecture NCCL supports since recently:
/// upgrade NCCL first. Not on an older release than the first (`arch_rule` says that).
pub(super) fn new_arch_fault_rule(
    version: Option<NcclVersion>,
    pasted: &Pasted,
    log: &NcclLog,
) -> Option<Finding> {
    let fault = log.failures.iter().find(|f| {
        f.kind == FailureKind::CudaFailure
            && (crate::nccl::log::cuda_error_code(&f.text) == Some(700)
                || f.text
                    .to_ascii_lowercase()
                    .contains("illegal memory access"))
    })?;
    let (arch, gpu, first) = gpus(pasted).into_iter().find_map(|(a, g)| {
        let first = knowledge::first_release(a)?;
        let early = match version {
            Some(v) => knowledge::is_early_release(a, v),
            None => a.recent,
        };
        early.then_some((a, g, first))
    })?;
    let end = format!("{}.{}", first.major, first.minor + knowledge::EARLY_SERIES);
    let (shown, check) = match version {
        Some(v) => (
            format!(" This text runs NCCL {v}, one of its early releases (before {end})."),
            String::new(),
        ),
        None => (
            " The text does not show which NCCL runs.".to_string(),
            "Check the NCCL version first: NCCL_DEBUG=INFO prints `NCCL version`, or run `pip show nvidia-nccl-cu12`. "
                .to_string(),
        ),
    };
    let mut f = Finding::new(
        FindingKind::NewArchIllegalAccess,
        vec![format!(
            "line {}: {}",
            fault.line,
            super::pasted::cut(fault.text.trim())
        )],
        &[
            ("gpu", gpu),
            ("arch", format!("sm_{}, {}", arch.sm, arch.name)),
            ("first", first.to_string()),
            ("shown", shown),
            ("check", check),
        ],
    );
    if version.is_none() {
        f.severity = Severity::Warning;
    }
    f.sources.push(arch.source.clone());
    Some(f)
}

/// The architecture words of `nccl-lacks-arch` for the GPU the text names.
pub(super) fn arch_words(pasted: &Pasted) -> (String, String) {
    match gpus(pasted).into_iter().next() {
        Some((a, gpu)) => (
            format!(" ({gpu}: sm_{}, {})", a.sm, a.name),
            a.first_nccl
                .as_deref()
                .map(|f| format!(" (NCCL {f} or later has sm_{} kernels)", a.sm))
                .unwrap_or_default(),
        ),
        None => (String::new(), String::new()),
    }
}

/// The known bugs the text shows at its version (releases.toml), in a run that sets
/// what `is_set` says; with no version in the text, only bugs its lines alone name.
pub(super) fn bug_findings(
    version: Option<NcclVersion>,
    pasted: &Pasted,
    is_set: &dyn Fn(&str) -> bool,
) -> Vec<Finding> {
    let text: String = pasted
        .lines
        .iter()
        .map(|l| l.text)
        .collect::<Vec<_>>()
        .join("\n");
    knowledge::bugs_shown(&text, version, is_set)
        .into_iter()
        .map(|(b, hedged)| {
            let shown: Vec<String> = pasted
                .lines
                .iter()
                .filter(|l| {
                    b.shows
                        .iter()
                        .any(|s| l.lower.contains(&s.to_ascii_lowercase()))
                })
                .map(|l| pasted.evidence(l))
                .collect();
            let versions = match (&b.first, &b.fixed) {
                (Some(f), Some(x)) => format!(" Affected: {f} up to before {x}."),
                (Some(f), None) => format!(" Seen from {f}; no fixed release is named."),
                (None, Some(x)) => format!(" Fixed in {x}."),
                (None, None) => String::new(),
            };
            let at = version
                .map(|v| format!(" This log runs {v}."))
                .unwrap_or_default();
            let what = if hedged && version.is_none() {
                let range = match (&b.first, &b.fixed) {
                    (Some(f), Some(x)) => format!("{f} to before {x}"),
                    (Some(f), None) => format!("{f} or later"),
                    (None, Some(x)) => format!("older than {x}"),
                    (None, None) => "an affected release".to_string(),
                };
                format!(
                    "If this NCCL is {range} (its version is not shown): {}",
                    b.what
                )
            } else {
                b.what.clone()
            };
            let n = shown.len();
            let mut f = Finding::new(
                FindingKind::KnownBug,
                super::evidence::distinct(shown.into_iter()),
                &[
                    ("id", b.id.clone()),
                    ("what", what),
                    ("version", format!("{versions}{at}")),
                    ("fix", b.fix.clone()),
                ],
            )
            .with_occurrences(n);
            if hedged {
                f.severity = Severity::Warning;
            }
            f.sources = vec![b.source.clone()];
            f
        })
        .collect()
}

/// The driver and CUDA versions the text shows, in words for `driver-too-old`: the
/// driver nvidia-smi or the kernel module names, the CUDA the driver supports
/// (`cudaDriverVersion`), the CUDA NCCL was built for.
pub(super) fn driver_words(log: &NcclLog, pasted: &Pasted) -> String {
    let mut parts: Vec<String> = Vec::new();
    let after = |key: &str| {
        pasted.lines.iter().find_map(|l| {
            let rest = &l.text[l.text.find(key)? + key.len()..];
            rest.split_whitespace().next().map(str::to_string)
        })
    };
    if let Some(d) = after("Driver Version:").or_else(|| after("Kernel Module")) {
        parts.push(format!("driver {d}"));
    }
    if let Some(d) = log.driver_version {
        parts.push(format!(
            "the driver supports CUDA {}.{}",
            d / 1000,
            (d % 1000) / 10
        ));
    }
    if let Some(c) = log
        .versions
        .iter()
        .find_map(|v| v.split_once("+cuda").map(|(_, c)| c.to_string()))
    {
        parts.push(format!("NCCL was built for CUDA {c}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// A version whose line was wrapped as pasted: `..., NCCL` then `version 2.14.3` at the
/// start of the next line.
pub(super) fn wrapped_version(pasted: &Pasted) -> Option<NcclVersion> {
    pasted.lines.windows(2).find_map(|w| {
        let rest = w[1].text.trim_start().strip_prefix("version ")?;
        if !w[0].text.trim_end().ends_with("NCCL") {
            return None;
        }
        NcclVersion::parse(rest.split_whitespace().next()?)
    })
}

/// An NCCL version a poster names in prose or a command: `nccl version 2.19.1`,
/// `NCCL 2.20.5`, `NCCL_VERSION: 2.26.2`, `/home/nccl2.19.1/libnccl.so.2`,
/// `libnccl.so.2.19.3`, `nvidia-nccl-cu12 2.19.3`. The first one named; three numbers
/// under major 2 (`libnccl.so.2` alone names none).
pub(super) fn prose_version(pasted: &Pasted) -> Option<NcclVersion> {
    let three = |w: &str| -> Option<NcclVersion> {
        let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        nccl_numbers(w.split(['+', '-', '/']).next()?)
    };
    pasted.lines.iter().find_map(|l| {
        let words: Vec<&str> = l
            .lower
            .split(|c: char| c.is_whitespace() || matches!(c, '`' | ',' | '(' | ')' | '='))
            .filter(|w| !w.is_empty())
            .collect();
        words.iter().enumerate().find_map(|(i, w)| {
            // Glued to the name, in a path or a file name.
            let glued = w
                .split('/')
                .find_map(|part| {
                    part.strip_prefix("libnccl.so.")
                        .or(part.strip_prefix("nccl"))
                })
                .and_then(three);
            let named = matches!(
                w.trim_end_matches(':'),
                "nccl"
                    | "nccl_version"
                    | "nvidia-nccl-cu11"
                    | "nvidia-nccl-cu12"
                    | "nvidia-nccl-cu13"
            );
            let next = |k: usize| words.get(i + k).copied();
            let after = match next(1).map(|n| n.trim_end_matches(':')) {
                Some("version" | "v" | ":") => next(2),
                _ => next(1),
            };
            glued.or_else(|| named.then(|| after.and_then(three)).flatten())
        })
    })
}

/// An NCCL build string written outside NCCL's own `NCCL version` line (a report's
/// environment list, a package version): `2.26.2+cuda12.2` or `2.25.1-1+cuda12.8`, NCCL's
/// scheme for its builds and its libnccl2 packages (three numbers under major 2, then
/// `+cuda`; cuDNN's and TensorRT's packages have four). Returns the version and the CUDA.
pub(super) fn build_string(pasted: &Pasted) -> Option<(NcclVersion, String)> {
    pasted.lines.iter().find_map(|l| {
        l.text.split_whitespace().find_map(|word| {
            let w = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
            let (version, cuda) = w.split_once("+cuda")?;
            let core = version.split_once('-').map_or(version, |(v, _)| v);
            let cuda_ok = !cuda.is_empty() && cuda.chars().all(|c| c.is_ascii_digit() || c == '.');
            cuda_ok.then(|| nccl_numbers(core).map(|v| (v, cuda.to_string())))?
        })
    })
}

/// `2.19.3`: three numbers under major 2, NCCL's scheme (cuDNN's and TensorRT's have four).
fn nccl_numbers(core: &str) -> Option<NcclVersion> {
    let numbers: Vec<&str> = core.split('.').collect();
    let ok = numbers.len() == 3
        && numbers[0] == "2"
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| NcclVersion::parse(core)).flatten()
}

/// NCCL's `Init timings - ncclCommInitRankConfig: ... total 55.01 (kernels 52.45, ...)`
/// (2.23+) with at least 5 s and half the total in loading kernels: the library lacks
/// this GPU's code and the driver JIT-compiles it.
pub(super) fn init_kernels_rule(pasted: &Pasted) -> Option<Finding> {
    let number = |text: &str, key: &str| -> Option<f64> {
        let rest = &text[text.find(key)? + key.len()..];
        rest.split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()?
            .parse()
            .ok()
    };
    let slow: Vec<(&super::pasted::PastedLine, f64, f64)> = pasted
        .lines
        .iter()
        .filter(|l| l.text.contains("Init timings"))
        .filter_map(|l| Some((l, number(l.text, " total ")?, number(l.text, "(kernels ")?)))
        .filter(|(_, total, kernels)| *kernels >= 5.0 && *kernels * 2.0 >= *total)
        .collect();
    let (line, total, kernels) = slow.first()?;
    Some(
        Finding::new(
            FindingKind::InitKernelsSlow,
            vec![pasted.evidence(line)],
            &[
                ("kernels", format!("{kernels:.0}")),
                ("total", format!("{total:.0}")),
                (
                    "evidence",
                    super::pasted::cut(super::pasted::message(line.text)),
                ),
            ],
        )
        .with_occurrences(slow.len()),
    )
}
