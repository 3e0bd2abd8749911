//! Which failure a message reports: NCCL's `WARN` messages (with the source line NCCL
//! names before the tag) and the error strings applications repeat untagged (PyTorch's
//! `Last error:`), for [`super`]. Functions of one message, no state.

use super::record::FailureKind;

/// The failure a `NCCL WARN` message reports, if it is one we know; `source` is the
/// `file.cc:line` NCCL printed before the tag, if any.
pub(super) fn classify_warn(message: &str, source: Option<&str>) -> Option<FailureKind> {
    let m = message.to_ascii_lowercase();
    if let Some(kind) = classify_shm(&m).or_else(|| classify_nvls(&m)) {
        return Some(kind);
    }
    // `ncclSpaceAlloc` has one caller: the symmetric memory of registered windows.
    if m.contains("no suitable space found to accommodate") {
        return Some(FailureKind::WindowSpace);
    }
    // Before 2.27 a failed multicast bind or add-device is only `Cuda failure 401 '...'`
    // (or 1, 802) from transport/nvls.cc.
    // A CUDA that never started (`initialization error`) or ran out of memory fails there
    // too, and is not the fabric's.
    let not_fabric = m.contains("initialization error") || m.contains("out of memory");
    if source.is_some_and(|s| s.starts_with("transport/nvls.cc"))
        && m.contains("cuda failure")
        && !not_fabric
    {
        return Some(FailureKind::NvlsBind);
    }
    // A connect that never succeeded: refused, failed, or its retries used up
    // (`exceeded retries (N)`, 2.18; `exceeded error retry count (N)`, 2.24; `... after N
    // attempts`, 2.27+).
    let retries_spent = [
        "exceeded retries",
        "exceeded timeouts",
        "exceeded error retry count",
    ];
    if m.contains("connection refused")
        || connect_failed(&m)
        || retries_spent.iter().any(|s| m.contains(s))
    {
        return Some(FailureKind::ConnectionRefused);
    }
    let socket = [
        "socket",
        "connection closed",
        "connection reset",
        "broken pipe",
        "call to recv",
    ];
    if socket.iter().any(|s| m.contains(s)) || m.starts_with("net : ") {
        return Some(FailureKind::SocketError);
    }
    classify_plain(message)
}

/// Failures an application prints from NCCL's error strings (PyTorch, nccl-tests): lines
/// that are not NCCL's own. Narrow on purpose: a bare `Connection refused` is not here
/// because rendezvous clients print it while they retry; NCCL's `socketStartConnect:
/// Connect to ... failed` is.
pub(super) fn classify_plain(message: &str) -> Option<FailureKind> {
    let m = message.to_ascii_lowercase();
    let cuda = [
        "cuda failure",
        "unhandled cuda error",
        "ncclunhandledcudaerror",
        // p2p.cc's `failed to open CUDA IPC handle : 217 peer access is not supported`.
        "failed to open cuda ipc handle",
    ];
    if let Some(kind) = classify_shm(&m).or_else(|| classify_nvls(&m)) {
        // PyTorch prints NCCL's last error untagged after `Last error:`.
        Some(kind)
    } else if cuda.iter().any(|s| m.contains(s)) {
        Some(FailureKind::CudaFailure)
    } else if (m.contains("socketstartconnect") || m.contains("socketpollconnect"))
        && connect_failed(&m)
    {
        // NCCL's own connect failure, repeated after PyTorch's `Last error:`.
        Some(FailureKind::ConnectionRefused)
    } else if (m.contains("net : call to")
        || m.contains("net : connect to")
        || m.contains("socketprogress"))
        && m.contains("failed")
    {
        // NCCL's socket failure, repeated after PyTorch's `Last error:` (before the
        // system error it explains, which a one-line message holds too). NCCL before
        // 2.19 reports a refused connect at the first recv: `Call to recv ... refused`.
        Some(if m.contains("connection refused") {
            FailureKind::ConnectionRefused
        } else {
            FailureKind::SocketError
        })
    } else if m.contains("remote process exited") || m.contains("ncclremoteerror") {
        Some(FailureKind::RemoteError)
    } else if m.contains("unhandled system error") || m.contains("ncclsystemerror") {
        Some(FailureKind::SystemError)
    } else if m.contains("internal error - please report")
        || m.contains("ncclinternalerror")
        || (m.contains("nccl error") && m.contains(", internal error"))
    {
        // ncclInternalError as the application reports it (NCCL's `internal error`,
        // from 2.18 `internal error - please report ...`): NCCL's own warning says why.
        Some(FailureKind::Other)
    } else {
        None
    }
}

/// The /dev/shm failures (lowercased message): messages only NCCL writes, so they are
/// recognised with or without the `NCCL WARN` tag.
fn classify_shm(m: &str) -> Option<FailureKind> {
    if m.contains("posix_fallocate failed") {
        return Some(if m.contains("no space left") {
            FailureKind::ShmEnospc
        } else {
            FailureKind::Other
        });
    }
    if m.contains("failed to extend /dev/shm") || m.contains("creating shared memory segment") {
        return Some(shm_errno(
            m,
            "no space left on device",
            FailureKind::ShmEnospc,
        ));
    }
    if m.contains("attaching to shared memory segment") {
        if attaches_a_cumem_handle(m) {
            return Some(FailureKind::ShmCumemMismatch);
        }
        return Some(shm_errno(
            m,
            "no such file or directory",
            FailureKind::ShmAttachEnoent,
        ));
    }
    None
}

/// An attach to `/dev/shm/nccl-<name> (size 0)` whose name is not the six letters and
/// digits NCCL's `mkstemp` template makes (empty, or unprintable bytes): a peer's cuMem
/// host handle read as a /dev/shm name (lowercased message).
fn attaches_a_cumem_handle(m: &str) -> bool {
    let Some(at) = m.find("/dev/shm/nccl-") else {
        return false;
    };
    let rest = &m[at + "/dev/shm/nccl-".len()..];
    let Some((name, tail)) = rest.split_once(" (size ") else {
        return false;
    };
    let size_zero = tail.strip_prefix('0').is_some_and(|t| t.starts_with(')'));
    let made_by_nccl = name.len() == 6 && name.bytes().all(|b| b.is_ascii_alphanumeric());
    size_zero && !made_by_nccl
}

/// A failed NVLink SHARP multicast bind in the words NCCL 2.27+ use, tagged or as an
/// application repeats it (lowercased message).
/// 2.27-2.28's INFO line that ends `Proceeding without NVLS support.` is no failure: NCCL
/// went on without NVLS (`nvls_evidence`).
fn classify_nvls(m: &str) -> Option<FailureKind> {
    let bind = m.contains("failed to bind nvlink sharp") || m.contains("nvls) multicast memory");
    (bind && !m.contains("proceeding without nvls")).then_some(FailureKind::NvlsBind)
}

/// `Connect to 10.0.0.2<45763> failed : ...` (lowercased).
fn connect_failed(m: &str) -> bool {
    m.find("connect to ")
        .is_some_and(|i| m[i..].contains(" failed"))
}

/// Shm errors name errno since 2.19 (`..., error: No space left on device (28)`): the
/// expected errno or none gives `kind`, another errno gives `Other`.
fn shm_errno(m: &str, expected: &str, kind: FailureKind) -> FailureKind {
    match m.rfind(", error: ") {
        // A pasted message wrapped mid-errno ends with the start of its text.
        Some(i) => {
            let said = m[i + ", error: ".len()..].trim();
            if said.contains(expected) || (said.len() >= 8 && expected.starts_with(said)) {
                kind
            } else {
                FailureKind::Other
            }
        }
        None => kind,
    }
}
