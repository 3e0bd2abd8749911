//! The diagnosis and fix of three memory failures of today's NCCL (2.24 and later) that
//! older advice misreads: an SHM attach that mixes cuMem host memory with /dev/shm
//! files, NVLink SHARP multicast memory that cannot be bound, and symmetric windows
//! that no longer fit NCCL's symmetric address space.

use std::fmt::Write as _;

use super::finding::{Finding, FindingKind, Severity};
use super::pasted::{cut, message, Pasted};
use crate::nccl::log::{cuda_error_code, Failure, FailureKind, NcclLog};

/// A rank attached a "segment" whose name is a peer's cuMem handle (see
/// `FailureKind::ShmCumemMismatch`).
pub(super) fn shm_cumem_mismatch_text(failures: &[&Failure], log: &NcclLog) -> (String, String) {
    let name = failures
        .iter()
        .find_map(|f| segment_name(&f.text))
        .map(|n| format!(" `{n}`"))
        .unwrap_or_default();
    let mut d = format!(
        "A rank tried to open the /dev/shm segment{name} of size 0, a name NCCL never makes: \
         its peer on the same node keeps SHM buffers in cuMem host memory (NCCL 2.24+ with \
         cuMem and a CUDA 12.6+ driver) and sent a cuMem handle, while this rank uses /dev/shm \
         files and read the handle as a file name. From NCCL 2.26.3 every process probes cuMem \
         host memory on its own and falls back to /dev/shm when the probe fails, so ranks of \
         one node can disagree: NUMA nodes with and without memory, a container that hides \
         NUMA, a driver bug in the probe (fixed from r595), or NCCL_CUMEM_HOST_ENABLE / \
         NCCL_CUMEM_ENABLE set differently per rank."
    );
    if let Some(line) = log.shm_backing.fallback_line {
        let _ = write!(
            d,
            " Line {line} shows a process that fell back to /dev/shm (`cuMem host allocations \
             do not appear to be working`)."
        );
    }
    d.push_str(
        " It is not a stale segment, separate IPC namespaces or a small /dev/shm, and SHM \
         itself is not at fault.",
    );
    let fix = "Set NCCL_CUMEM_HOST_ENABLE=0 on every rank: all then use /dev/shm files, which \
               need room in /dev/shm. Or update the driver (r595 or newer). Keep \
               NCCL_CUMEM_ENABLE and NCCL_CUMEM_HOST_ENABLE the same on every rank."
        .to_string();
    (d, fix)
}

/// `/dev/shm/nccl-<name> (size 0)` -> `/dev/shm/nccl-<name>`, unprintable bytes escaped.
fn segment_name(text: &str) -> Option<String> {
    let at = text.find("/dev/shm/nccl-")?;
    let (name, _) = text[at..].split_once(" (size ")?;
    Some(name.escape_debug().to_string())
}

/// Binding (or adding a GPU to) NVLS multicast memory failed.
pub(super) fn nvls_bind_text(failures: &[&Failure]) -> (String, String) {
    let texts: Vec<&str> = failures.iter().map(|f| f.text.as_str()).collect();
    bind_text(&texts, false)
}

/// 2.27-2.28 with `NCCL_NVLS_ENABLE` unset: the bind failed and NCCL went on without
/// NVLS (an INFO line, no failure). A warning: the job runs, slower.
pub(super) fn nvls_fallback_rule(log: &NcclLog) -> Option<Finding> {
    let message = log.nvls_failure.as_deref()?;
    let failed = log.failures.iter().any(|f| f.kind == FailureKind::NvlsBind);
    if failed || !message.contains("Proceeding without NVLS") {
        return None;
    }
    let (cause, fix) = bind_text(&[message], true);
    Some(
        Finding::new(FindingKind::NvlsFallback, vec![message.to_string()], &[])
            .with_severity(Severity::Warning)
            .with_texts(cause, fix),
    )
}

fn bind_text(texts: &[&str], went_on: bool) -> (String, String) {
    let size = texts
        .iter()
        .find_map(|t| number_after(t, "memory of size "))
        .map(|n| format!(" of {n} B"))
        .unwrap_or_default();
    let code = texts.iter().find_map(|t| cuda_error_code(t));
    let error = match code {
        Some(401) => " (CUDA error 401, `the operation cannot be performed in the present \
                      state`: the fabric is not ready for multicast)"
            .to_string(),
        Some(802) => " (CUDA error 802, `system not yet initialized`: the Fabric Manager had \
                      not formed the multicast team in time)"
            .to_string(),
        Some(1) => " (CUDA error 1, `invalid argument`: the driver refused the multicast call; \
                    a driver older than the CUDA this NCCL was built for does this, as does a \
                    fabric not ready)"
            .to_string(),
        Some(c) => format!(" (CUDA error {c})"),
        None => String::new(),
    };
    let mut d = format!(
        "NCCL could not bind NVLink SHARP (NVLS) multicast memory{size}{error}. NVSwitch \
         multicast is set up by the Fabric Manager: this is almost always the system, not the \
         job or NCCL (the Fabric Manager stopped, degraded or not started, an NVSwitch error, a \
         GPU that lost its fabric registration), and it often starts on a node that worked \
         the day before. Single-GPU checks (dcgmi diag, all_reduce_perf on one GPU) do not \
         exercise NVLS and pass."
    );
    if went_on {
        d.push_str(
            " This NCCL went on without NVLS: its collectives ran on rings and trees over \
             NVLink, slower than NVLS for large all-reduces.",
        );
    }
    let fix = "Check the fabric on that node: `systemctl status nvidia-fabricmanager` and its log \
               (/var/log/fabricmanager.log), `nvidia-smi -q | grep -A2 Fabric` (every GPU \
               `State: Completed`, `Status: Success`); restart the Fabric Manager and reset the \
               GPUs (its user guide gives the order: a Fabric Manager restarted without a GPU \
               reset leaves this error), or reboot the node (drain it first); NCCL_DEBUG=INFO shows the call that failed. Until then \
               NCCL_NVLS_ENABLE=0 avoids NVLS: the all-reduce \
               then runs on rings and trees over NVLink, measure what that costs with \
               `nccl-bench sweep --transports default,nvls-off` on a healthy node."
        .to_string();
    (d, fix)
}

/// Registering a symmetric window found no room in NCCL's symmetric address space.
/// NCCL reserves, per communicator, as much virtual address space as the largest GPU's
/// memory rounded up to 4 GiB (`Symmetric VA size=...GB` at init; `NCCL_WIN_STRIDE`
/// sets it, `src/dev_runtime.cc`), and every window takes its size from it until
/// deregistered.
pub(super) fn window_space_text(failures: &[&Failure]) -> (String, String) {
    let hex = |key: &str| {
        failures.iter().find_map(|f| {
            let rest = &f.text[f.text.find(key)? + key.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
            u64::from_str_radix(&digits, 16).ok()
        })
    };
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30));
    let sizes = match (hex("size=0x"), hex("limit=0x")) {
        (Some(size), Some(limit)) => format!(
            " (a window of {} asked for, in a space of {})",
            gib(size),
            gib(limit)
        ),
        _ => String::new(),
    };
    let d = format!(
        "Registering a symmetric window (ncclCommWindowRegister, or a framework's symmetric \
         memory on top of it) found no room left in NCCL's symmetric address space{sizes}. \
         NCCL reserves per communicator as much virtual address space as the largest GPU's \
         memory, rounded up to 4 GiB (`Symmetric VA size=...GB` at init), and every window \
         keeps its share until it is deregistered: the windows registered and not released \
         add up to more than the GPU's memory. NCCL 2.30.7 counts every registration of the \
         same memory again (NVIDIA/nccl#2331), so an application that registers one buffer \
         repeatedly runs out even though it uses little memory. It is not a lack of GPU \
         memory, and not a fault of the machine."
    );
    let fix = "Register each allocation once and reuse its window; call \
               ncclCommWindowDeregister for windows no longer used (before freeing their \
               memory); with more windows than one GPU's memory on purpose, NCCL_WIN_STRIDE \
               (bytes) sets the space. Without symmetric windows (`--register local` or \
               `none` here, nccl-tests' -R 1 or 0) NCCL runs its ordinary kernels."
        .to_string();
    (d, fix)
}

/// The number after `key` in `text`.
fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}

/// The last NCCL line of the paste binds NVLS memory (`NVLS Bind mem ... MC handle`):
/// if the job hung, it hung there.
pub(super) fn nvls_stops_rule(pasted: &Pasted) -> Option<Finding> {
    let last = pasted
        .lines
        .iter()
        .rev()
        .find(|l| l.text.contains("NCCL INFO") || l.text.contains("NCCL WARN"))?;
    let m = message(last.text);
    let nvls = m.starts_with("NVLS Bind") || (m.starts_with("NVLS") && m.contains("MC handle"));
    nvls.then(|| {
        Finding::new(
            FindingKind::NvlsStops,
            vec![pasted.evidence(last)],
            &[("evidence", cut(message(last.text)))],
        )
    })
}

/// A log that stops in set-up (init-stops) on more than two GPUs of one host that carry
/// NVSwitch multicast (Hopper and Blackwell data-center parts, not their PCIe cards):
/// NCCL sets up NVLS there (never with 2 GPUs: `gpuCount <= 2` in nvls.cc), so that is
/// where it may hang, not the sockets or P2P.
pub(super) fn nvls_init_stops(log: &NcclLog, pasted: &Pasted) -> Option<Finding> {
    let gpu = super::versions::gpus(pasted)
        .into_iter()
        .find(|(a, _)| matches!(a.sm, 90 | 100 | 103))?;
    if pasted.contains("pcie") && !pasted.contains("sxm") {
        return None;
    }
    // GPUs per host: nccl-tests' device lines (`Pid 1 on host device 0`), else the log's
    // processes and their devices.
    let mut per_host: std::collections::BTreeMap<String, usize> = Default::default();
    for l in &pasted.lines {
        let t = l.text.trim_start_matches(['#', ' ']);
        if t.starts_with("Rank ") && t.contains(" Pid ") && t.contains(" device ") {
            if let Some(h) = t
                .split_once(" on ")
                .and_then(|(_, r)| r.split_whitespace().next())
            {
                *per_host.entry(h.to_string()).or_default() += 1;
            }
        }
    }
    if per_host.is_empty() {
        for p in &log.processes {
            *per_host.entry(p.host.clone()).or_default() += p.devices.len().max(1);
        }
    }
    if per_host.len() != 1 {
        return None;
    }
    let n = per_host.values().copied().max().unwrap_or(0);
    if n <= 2 {
        return None;
    }
    let started = match log.versions.first() {
        Some(v) => format!("NCCL {v}, {} line(s)", log.nccl_lines),
        None => format!("{} line(s)", log.nccl_lines),
    };
    Some(Finding::new(
        FindingKind::NvlsInitStops,
        Vec::new(),
        &[("n", n.to_string()), ("gpu", gpu.1), ("started", started)],
    ))
}
