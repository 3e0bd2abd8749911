//! A failed NVLS multicast bind (fault `nvls-bind`), as each release's
//! `transport/nvls.cc` reports it, for [`super::setup`]:
//! - up to 2.26, `CUCHECK` of `cuMulticastBindMem`: `Cuda failure 401 '...'` (2.18:
//!   `Cuda failure '...'`, no number), and the communicator fails;
//! - 2.27.3 to 2.28.9, with `NCCL_NVLS_ENABLE` left at auto: an INFO line ending
//!   `Proceeding without NVLS support.`, NVLS off (no NVLS channels) and init goes on;
//!   forced with `NCCL_NVLS_ENABLE=1`, a WARN that says not to force it, and failure;
//! - from 2.29.2: always the WARN, naming the Fabric Manager and `NCCL_NVLS_ENABLE=0`.

use super::Version;

/// The memory of the first bind that fails: one multicast granule (2 MiB on H100), the
/// size real logs show (`of size 2097152`).
pub const FIRST_BIND_BYTES: u64 = 2 << 20;

const ERROR_401: &str = "'the operation cannot be performed in the present state'";

/// Whether release `v` goes on without NVLS after a failed bind (unless forced).
pub fn goes_on_without(v: Version) -> bool {
    ((2, 27, 3)..(2, 29, 0)).contains(&v)
}

/// NCCL's message of a failed bind of `size` bytes in release `v`; `forced` is
/// `NCCL_NVLS_ENABLE=1`.
pub fn bind_failed(v: Version, size: u64, forced: bool) -> String {
    if v < (2, 19, 0) {
        return format!("Cuda failure {ERROR_401}");
    }
    if v < (2, 27, 3) {
        return format!("Cuda failure 401 {ERROR_401}");
    }
    let head = format!(
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size {size} : CUDA error 401 \
         {ERROR_401}."
    );
    if goes_on_without(v) && !forced {
        return format!("{head} Proceeding without NVLS support.");
    }
    let advice = if v < (2, 29, 0) {
        "Do not force-enable NVLS (NCCL_NVLS_ENABLE=1) if you wish to avoid this error in the \
         future."
    } else {
        "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future."
    };
    format!(
        "{head}\nThis is usually caused by a system or configuration error in the Fabric \
         Manager or NVSwitches.\n{advice}"
    )
}

/// The source line of the bind in release `v`.
pub fn origin(v: Version) -> &'static str {
    if v < (2, 19, 0) {
        "transport/nvls.cc:165"
    } else if v < (2, 22, 0) {
        "transport/nvls.cc:158"
    } else if v < (2, 26, 0) {
        "transport/nvls.cc:251"
    } else if v < (2, 27, 0) {
        "transport/nvls.cc:254"
    } else if v < (2, 29, 0) {
        "transport/nvls.cc:285"
    } else if v < (2, 29, 7) {
        "transport/nvls.cc:284"
    } else if v < (2, 30, 0) {
        "transport/nvls.cc:287"
    } else if v < (2, 30, 7) {
        "transport/nvls.cc:349"
    } else {
        // The WARN of 2.30.7 spans lines 376-379; NCCL logs the last.
        "transport/nvls.cc:379"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_release_words_a_failed_bind_as_its_source_does() {
        assert_eq!(
            bind_failed((2, 18, 5), FIRST_BIND_BYTES, false),
            "Cuda failure 'the operation cannot be performed in the present state'"
        );
        assert!(bind_failed((2, 26, 2), FIRST_BIND_BYTES, false).starts_with("Cuda failure 401 '"));
        let soft = bind_failed((2, 28, 9), FIRST_BIND_BYTES, false);
        assert!(soft.starts_with("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 '"));
        assert!(
            soft.ends_with(". Proceeding without NVLS support."),
            "{soft}"
        );
        assert!(bind_failed((2, 28, 9), FIRST_BIND_BYTES, true).ends_with("Do not force-enable NVLS (NCCL_NVLS_ENABLE=1) if you wish to avoid this error in the future."));
        let hard = bind_failed((2, 29, 3), FIRST_BIND_BYTES, false);
        assert!(hard.contains("\nThis is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.\nDisable NVLS (NCCL_NVLS_ENABLE=0)"), "{hard}");
        assert!(
            !goes_on_without((2, 27, 0))
                && goes_on_without((2, 27, 3))
                && !goes_on_without((2, 29, 2))
        );
    }
}
