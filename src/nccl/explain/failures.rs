//! Findings from the failure lines the log parser found: which finding each belongs to
//! (a CUDA failure by what its error number or text means, in cuda.toml), and one
//! finding per kind with its evidence and texts (composed in [`super::diagnosis`]).
//! Failures a line rule already explains are left to it.

use super::context::Context;
use super::diagnosis::{
    cuda_failure_text, ib_error_text, shm_no_space_text, socket_connect_text, socket_error_text,
    system_error_text,
};
use super::evidence::{evidence, Line};
use super::finding::{Finding, FindingKind, Severity};
use super::memory::{nvls_bind_text, shm_cumem_mismatch_text, window_space_text};
use super::pasted::{cut, message};
use crate::nccl::knowledge;
use crate::nccl::log::{cuda_error_code, Failure, FailureKind, NcclLog};

/// The finding a failure line belongs to.
pub fn finding_kind_of(failure: &Failure) -> FindingKind {
    let ib = is_ib_error_text(&failure.text);
    if is_shm_permission_text(&failure.text) {
        return FindingKind::ShmPermission;
    }
    match failure.kind {
        FailureKind::ShmEnospc => FindingKind::ShmNoSpace,
        FailureKind::ShmAttachEnoent => FindingKind::ShmAttachMissing,
        FailureKind::ShmCumemMismatch => FindingKind::ShmCumemMismatch,
        FailureKind::NvlsBind => FindingKind::NvlsBind,
        FailureKind::WindowSpace => FindingKind::WindowSpace,
        FailureKind::CudaFailure => cuda_kind(&failure.text),
        FailureKind::SystemError => FindingKind::SystemError,
        FailureKind::RemoteError => FindingKind::RemoteError,
        FailureKind::ConnectionRefused | FailureKind::SocketError | FailureKind::Other if ib => {
            ib_kind(&failure.text)
        }
        FailureKind::ConnectionRefused
            if failure
                .connect_target()
                .is_some_and(super::reason::is_docker_bridge) =>
        {
            FindingKind::DockerBridgeAddress
        }
        FailureKind::ConnectionRefused => FindingKind::SocketConnect,
        FailureKind::SocketError if is_connect_text(&failure.text) => FindingKind::SocketConnect,
        FailureKind::SocketError => FindingKind::SocketError,
        FailureKind::Other if is_alloc_text(&failure.text) => FindingKind::GpuOutOfMemory,
        FailureKind::Other => FindingKind::OtherError,
    }
}

/// A shared-memory call refused with EACCES: `Call to shm_open failed : Permission
/// denied` (NCCL up to 2.11), `Error while creating shared memory segment ..., error:
/// Permission denied (13)` (2.22 and later; the releases between print no errno).
fn is_shm_permission_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let shm = ["shm_open", "shared memory", "/dev/shm"]
        .iter()
        .any(|s| t.contains(s));
    shm && t.contains("permission denied")
}

/// NCCL's own line after a failed device allocation: `Failed to CUDA calloc 6291456 bytes`.
fn is_alloc_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("failed to cuda calloc") || t.contains("failed to cuda malloc")
}

/// A CUDA failure by what its error means: out of memory, a driver older than the
/// runtime, kernels missing for this GPU, a GPU index the process cannot see, or any
/// other (`CudaFailure`).
pub(super) fn cuda_kind(text: &str) -> FindingKind {
    let driver = cuda_error_code(text).is_some();
    let Some(e) = knowledge::cuda_error(cuda_error_code(text), text, driver) else {
        return FindingKind::CudaFailure;
    };
    match e.name.as_str() {
        "cudaErrorMemoryAllocation" | "CUDA_ERROR_OUT_OF_MEMORY" => FindingKind::GpuOutOfMemory,
        "cudaErrorInsufficientDriver" | "cudaErrorCallRequiresNewerDriver" => {
            FindingKind::DriverTooOld
        }
        "cudaErrorSymbolNotFound"
        | "CUDA_ERROR_NOT_FOUND"
        | "cudaErrorNoKernelImageForDevice"
        | "cudaErrorInvalidKernelImage"
        | "cudaErrorInvalidDeviceFunction" => FindingKind::NcclLacksArch,
        "cudaErrorInvalidDevice" | "CUDA_ERROR_INVALID_DEVICE" => FindingKind::InvalidDeviceOrdinal,
        _ => FindingKind::CudaFailure,
    }
}

/// An ibverbs or NET/IB failure message (not the benign "no IB here" lines).
pub fn is_ib_error_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let ib = ["net/ib", "ibv_", "ibverbs", "net_ib", "infiniband"]
        .iter()
        .any(|s| t.contains(s));
    let benign = t.contains("failed to open libibverbs") || t.contains("no device found");
    ib && !benign
}

/// An IB failure's finding: a memory registration the locked-memory limit refuses, or
/// any other IB error.
fn ib_kind(text: &str) -> FindingKind {
    if is_memlock_text(text) {
        FindingKind::IbMemlock
    } else {
        FindingKind::IbError
    }
}

/// A memory registration that failed with ENOMEM, or with no errno named (older NCCL
/// prints only `Call to ibv_reg_mr failed`): the kernel refuses to pin pages past
/// RLIMIT_MEMLOCK with ENOMEM. Another errno (`Bad address`) is not the limit.
pub(super) fn is_memlock_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let register = t.contains("ibv_reg_mr") || t.contains("ibv_reg_dmabuf_mr");
    let Some(at) = t.find("failed") else {
        return false;
    };
    let errno = t[at + "failed".len()..].trim_matches(|c: char| c == '.' || c.is_whitespace());
    register && (t.contains("cannot allocate memory") || errno.is_empty())
}

/// A socket error that is about connecting: `socketPollConnect: connect returned Connection
/// timed out`, `Connect to ... failed`.
fn is_connect_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "startconnect",
        "pollconnect",
        "connect returned",
        "connect to ",
        "timed out",
        "no route to host",
    ]
    .iter()
    .any(|s| t.contains(s))
}

/// The failures of one finding kind, and its evidence lines.
struct Group<'a> {
    kind: FindingKind,
    failures: Vec<&'a Failure>,
    lines: Vec<Line>,
}

/// One finding per kind, in order of the kind's first failure line; IB error `WARN` lines
/// that the parser did not count as failures (no error return followed) join the IB one.
/// `placed` says whether a line rule already explains a failure (its line number where
/// known, and its text).
pub(super) fn failure_findings(
    log: &NcclLog,
    context: &Context,
    placed: &dyn Fn(Option<usize>, &str) -> bool,
) -> Vec<Finding> {
    let mut groups: Vec<Group> = Vec::new();
    let group = |groups: &mut Vec<Group>, kind| match groups.iter().position(|g| g.kind == kind) {
        Some(at) => at,
        None => {
            groups.push(Group {
                kind,
                failures: Vec::new(),
                lines: Vec::new(),
            });
            groups.len() - 1
        }
    };
    // Up to 2.11 NCCL names the errno only on the call's line; the segment line after
    // it (`Error while creating shared memory segment X (size N)`) says no more.
    let eacces = log.failures.iter().any(|f| is_shm_permission_text(&f.text));
    for f in log
        .failures
        .iter()
        .filter(|f| !placed(Some(f.line), &f.text))
    {
        let kind = match finding_kind_of(f) {
            FindingKind::ShmNoSpace if eacces && !f.text.contains(", error: ") => {
                FindingKind::ShmPermission
            }
            kind => kind,
        };
        let at = group(&mut groups, kind);
        groups[at].failures.push(f);
        groups[at].lines.push(Line::of(f));
    }
    let unreturned_ib = log
        .warnings
        .iter()
        .filter(|w| is_ib_error_text(w) && !placed(None, w))
        .filter(|w| !log.failures.iter().any(|f| w.ends_with(f.text.trim())));
    for w in unreturned_ib {
        let at = group(&mut groups, ib_kind(w));
        groups[at].lines.push(Line {
            number: None,
            text: w.clone(),
        });
    }
    let kinds: Vec<FindingKind> = groups.iter().map(|g| g.kind).collect();
    groups
        .into_iter()
        .map(|g| {
            let others: Vec<FindingKind> = kinds.iter().copied().filter(|k| *k != g.kind).collect();
            let failures = g.failures.as_slice();
            let composed = match g.kind {
                FindingKind::ShmNoSpace => Some(shm_no_space_text(failures, context, log)),
                FindingKind::ShmCumemMismatch => Some(shm_cumem_mismatch_text(failures, log)),
                FindingKind::NvlsBind => Some(nvls_bind_text(failures)),
                FindingKind::WindowSpace => Some(window_space_text(failures)),
                FindingKind::SocketConnect => Some(socket_connect_text(failures, log)),
                FindingKind::SocketError => Some(socket_error_text(failures)),
                FindingKind::IbError => Some(ib_error_text(&g.lines)),
                FindingKind::IbMemlock => None,
                FindingKind::CudaFailure => Some(cuda_failure_text(failures, &others)),
                FindingKind::SystemError => Some(system_error_text(&others)),
                _ => None,
            };
            let occurrences = g.lines.len();
            let mut fill = fill_of(g.kind, failures, log);
            if g.kind == FindingKind::IbMemlock {
                fill.extend(memlock_fill(&g.lines));
            }
            let mut finding = Finding::new(g.kind, evidence(g.lines), &fill)
                .with_severity(Severity::Error)
                .with_occurrences(occurrences);
            if let Some((cause, fix)) = composed {
                finding = finding.with_texts(cause, fix);
            }
            finding
        })
        .collect()
}

/// The registration line quoted in `ib-memlock`, and whether it names ENOMEM.
pub(super) fn memlock_fill(lines: &[Line]) -> Vec<(&'static str, String)> {
    let first = lines.first().map(|l| message(&l.text)).unwrap_or_default();
    let enomem = lines.iter().any(|l| {
        l.text
            .to_ascii_lowercase()
            .contains("cannot allocate memory")
    });
    let said = if enomem {
        " with ENOMEM"
    } else {
        ", with no errno named"
    };
    vec![("evidence", cut(first)), ("enomem", said.to_string())]
}

/// What the texts of a failure-raised finding leave to fill in.
fn fill_of(kind: FindingKind, failures: &[&Failure], log: &NcclLog) -> Vec<(&'static str, String)> {
    let first = failures.first().map(|f| f.text.trim().to_string());
    match kind {
        FindingKind::GpuOutOfMemory => {
            let bytes = failures
                .iter()
                .chain(log.failures.iter().collect::<Vec<_>>().iter())
                .find_map(|f| number_before(&f.text, " bytes"))
                .map(crate::units::human_bytes)
                .unwrap_or_else(|| "its buffers".to_string());
            vec![("bytes", bytes)]
        }
        FindingKind::DriverTooOld => {
            let versions = driver_and_runtime(log)
                .map(|(d, r)| {
                    format!(" (the driver supports CUDA {d}, NCCL was built for CUDA {r})")
                })
                .unwrap_or_default();
            vec![("versions", versions)]
        }
        FindingKind::NcclLacksArch => {
            vec![("text", first.unwrap_or_default())]
        }
        FindingKind::DockerBridgeAddress => {
            let address = failures.iter().find_map(|f| f.connect_target());
            vec![
                ("who", "NCCL".to_string()),
                ("address", address.unwrap_or_default().to_string()),
            ]
        }
        FindingKind::InvalidDeviceOrdinal => {
            let (context, fix) = super::reason::ordinal_words(None);
            vec![("context", context), ("fix", fix)]
        }
        _ => Vec::new(),
    }
}

/// The CUDA version the driver supports (`cudaDriverVersion 12020` is 12.2) and the one
/// NCCL was built for (`NCCL version 2.18.6+cuda11.8`), where the log shows both.
pub(super) fn driver_and_runtime(log: &NcclLog) -> Option<(String, String)> {
    let runtime = log
        .versions
        .iter()
        .find_map(|v| v.split_once("+cuda").map(|(_, c)| c.to_string()))?;
    let driver = log.driver_version?;
    Some((
        format!("{}.{}", driver / 1000, (driver % 1000) / 10),
        runtime,
    ))
}

/// The number just before `unit` in `text` (`calloc 6291456 bytes` -> 6291456).
fn number_before(text: &str, unit: &str) -> Option<u64> {
    let head = &text[..text.find(unit)?];
    let digits: String = head
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}
