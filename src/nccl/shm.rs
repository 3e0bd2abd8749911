//! What NCCL's SHM transport needs of /dev/shm: the size of one receive segment, the
//! estimate for a node (segment x channels x SHM peers x local ranks) and the
//! `--shm-size` that leaves room for it. The doctor's /dev/shm check, the SHM
//! verdict and `explain`'s ENOSPC diagnosis all size with these.

use serde::Serialize;

use super::NcclVersion;

/// Bytes in a GiB: `--shm-size` advice.
const GIB: u64 = 1 << 30;

/// One SHM receive segment with the default `NCCL_BUFFSIZE` (NCCL 2.12+): a 4096 B header
/// plus the LL, LL128 and Simple buffers.
pub const DEFAULT_SHM_SEGMENT_BYTES: u64 = 9_637_888;

/// What a process of NCCL killed by SIGBUS most likely met, for its failure's reason:
/// NCCL 2.12 to 2.18 extend each SHM segment with `ftruncate` (a sparse file a full
/// /dev/shm does not refuse) and then zero it, and the first page /dev/shm cannot back
/// raises SIGBUS; earlier and later releases allocate the file first and fail with
/// `No space left on device` instead (`misc/shmutils.cc`).
pub const SIGBUS_HINT: &str = "a SIGBUS in an NCCL process is most likely /dev/shm too small for \
     NCCL's SHM segments: NCCL 2.12 to 2.18 extend each segment with ftruncate and die on the \
     first page /dev/shm cannot back (other releases fail with 'No space left on device'); \
     enlarge /dev/shm (docker run --shm-size or --ipc=host, a Kubernetes emptyDir of medium Memory)";

/// Whether a failure's reason is NCCL's SHM transport running out of /dev/shm, in any
/// release's words (ENOSPC from `posix_fallocate` or `fallocate`, or the SIGBUS of
/// 2.12-2.18 with [`SIGBUS_HINT`]).
pub fn is_dev_shm_exhaustion(reason: &str) -> bool {
    let e = reason.to_ascii_lowercase();
    e.contains("shared memory segment")
        || e.contains("posix_fallocate")
        || (e.contains("/dev/shm") && e.contains("no space"))
        || (e.contains("(sigbus)") && e.contains("/dev/shm too small"))
}

/// The estimate of the /dev/shm a node needs for NCCL's SHM transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmEstimate {
    pub segment_bytes: u64,
    pub channels: usize,
    pub shm_peers: usize,
    pub local_ranks: usize,
    /// segment x channels x SHM peers per rank x local ranks.
    pub total_bytes: u64,
}

/// Segment size x channels x SHM peers per rank x local ranks: one receive segment per
/// channel and SHM peer on every local rank.
pub fn shm_estimate(
    segment_bytes: u64,
    channels: usize,
    shm_peers: usize,
    local_ranks: usize,
) -> ShmEstimate {
    let total_bytes = segment_bytes
        .saturating_mul(channels as u64)
        .saturating_mul(shm_peers as u64)
        .saturating_mul(local_ranks as u64);
    ShmEstimate {
        segment_bytes,
        channels,
        shm_peers,
        local_ranks,
        total_bytes,
    }
}

/// The channel count NCCL usually builds between GPUs that talk over SHM (PCIe
/// machines without P2P), as its `Channel 00/02`-style log lines show.
pub const USUAL_SHM_CHANNELS: usize = 2;

/// The channels to assume where no log shows them: [`USUAL_SHM_CHANNELS`], raised by
/// `NCCL_MIN_NCHANNELS` or lowered by `NCCL_MAX_NCHANNELS` (`read` gives a variable's
/// positive value), and why.
pub fn assumed_channels(read: impl Fn(&str) -> Option<usize>) -> (usize, String) {
    let mut n = USUAL_SHM_CHANNELS;
    let mut why = "what NCCL usually builds where GPUs talk over SHM".to_string();
    if let Some(min) = read("NCCL_MIN_NCHANNELS").filter(|&m| m > n) {
        n = min;
        why = format!("NCCL_MIN_NCHANNELS={min}");
    }
    if let Some(max) = read("NCCL_MAX_NCHANNELS").filter(|&m| m < n) {
        n = max;
        why = format!("NCCL_MAX_NCHANNELS={max}");
    }
    (n, why)
}

/// What a node of `local_ranks` ranks needs, as a ring uses SHM: one segment per
/// channel and SHM peer (one peer per rank and channel, none for a single rank) on
/// every local rank. The doctor's /dev/shm check and the SHM verdict both size with
/// this, so a run's two figures agree.
pub fn node_need(segment_bytes: u64, channels: usize, local_ranks: usize) -> ShmEstimate {
    shm_estimate(
        segment_bytes,
        channels,
        usize::from(local_ranks > 1),
        local_ranks,
    )
}

/// What a failed case needed of /dev/shm per node, and the product behind it:
/// `segment` x (NCCL's `channels` x `peers`, where it is NCCL's) x `ranks`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShmNeed {
    pub bytes: u64,
    /// Bytes of one segment.
    pub segment: u64,
    /// Ranks per node.
    pub ranks: usize,
    /// NCCL's channels with why that many, and SHM peers per rank; `None` for the host
    /// backend's ring (one segment per rank).
    pub nccl: Option<NcclShm>,
}

/// The channels and peers NCCL's SHM segments are counted over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NcclShm {
    pub channels: usize,
    /// Why that many (`NCCL_MIN_NCHANNELS=4`, or what NCCL usually builds).
    pub channels_why: String,
    pub peers: usize,
}

/// The /dev/shm a node of `ranks` ranks needed where a case failed with `error`, sized
/// as the doctor sizes ([`node_need`], [`assumed_channels`] over the config's
/// variables, `read`): with NCCL, the segment the error names (or NCCL's default) per
/// channel and SHM peer on each rank; the host backend's ring (`host_ring`) uses one
/// segment per rank, the one its error names.
pub fn failed_need(
    error: &str,
    host_ring: bool,
    ranks: usize,
    read: impl Fn(&str) -> Option<usize>,
) -> Option<ShmNeed> {
    let named = super::log::shm_segment_size(error);
    if host_ring {
        let segment = named?;
        return Some(ShmNeed {
            bytes: node_need(segment, 1, ranks).total_bytes,
            segment,
            ranks,
            nccl: None,
        });
    }
    let segment = named.unwrap_or(DEFAULT_SHM_SEGMENT_BYTES);
    let (channels, why) = assumed_channels(read);
    let e = node_need(segment, channels, ranks);
    Some(ShmNeed {
        bytes: e.total_bytes,
        segment,
        ranks,
        nccl: Some(NcclShm {
            channels,
            channels_why: why,
            peers: e.shm_peers,
        }),
    })
}

/// Whole GiB for `--shm-size`: twice the estimate (NCCL's proxy and the application use
/// /dev/shm too), at least 1.
pub fn shm_size_gib(estimate_bytes: Option<u64>) -> u64 {
    estimate_bytes.map_or(1, |b| b.saturating_mul(2).div_ceil(GIB).max(1))
}

/// Why release `version` with a CUDA `driver` (`(12, 6)`) keeps SHM's buffers in cuMem
/// host memory rather than /dev/shm files, given `NCCL_CUMEM_ENABLE` and
/// `NCCL_CUMEM_HOST_ENABLE` as set (`None`: unset); `None` where it uses /dev/shm
/// (`transport/shm.cc`, `misc/cudawrap.cc`): 2.23.4 only when asked, from 2.24 by
/// default with cuMem on and a 12.6+ driver, and a set value decides from a 12.2
/// driver. From 2.26.3 a process whose probe of cuMem host memory fails falls back to
/// /dev/shm on its own, which the reason says.
pub fn cumem_host_reason(
    version: NcclVersion,
    driver: (u32, u32),
    cumem_enable: Option<&str>,
    cumem_host_enable: Option<&str>,
) -> Option<String> {
    let number = |v: Option<&str>| v.and_then(|s| s.trim().parse::<i64>().ok());
    let v = (version.major, version.minor, version.patch);
    let cumem = match number(cumem_enable) {
        Some(0) => false,
        Some(n) if n > 0 => true,
        _ => v >= (2, 19, 0),
    };
    if !cumem || v < (2, 23, 4) {
        return None;
    }
    let host = number(cumem_host_enable);
    let on = if v < (2, 24, 0) {
        host == Some(1)
    } else if driver < (12, 2) {
        false
    } else {
        match host {
            Some(n) if n != -1 => n != 0,
            _ => driver >= (12, 6),
        }
    };
    if !on {
        return None;
    }
    let probe = if v >= (2, 26, 3) {
        "; a process whose probe of cuMem host memory fails (a container that hides NUMA \
         or lacks SYS_NICE) falls back to /dev/shm and logs `cuMem host allocations do not \
         appear to be working`"
    } else {
        ""
    };
    Some(format!(
        "NCCL {version} with a CUDA {}.{} driver keeps SHM's buffers in cuMem host memory, \
         not /dev/shm{probe}",
        driver.0, driver.1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shm_lives_in_cumem_host_memory_from_2_24_with_a_12_6_driver() {
        let v = |s: &str| NcclVersion::parse(s).unwrap();
        let on = |ver: &str, d: (u32, u32), c: Option<&str>, h: Option<&str>| {
            cumem_host_reason(v(ver), d, c, h).is_some()
        };
        assert!(on("2.28.9", (12, 8), None, None));
        assert!(!on("2.28.9", (12, 4), None, None));
        assert!(on("2.28.9", (12, 4), None, Some("1")));
        assert!(!on("2.28.9", (12, 8), None, Some("0")));
        assert!(!on("2.28.9", (12, 8), Some("0"), None));
        assert!(!on("2.28.9", (12, 1), None, Some("1")));
        assert!(!on("2.23.4", (12, 8), None, None));
        assert!(on("2.23.4", (12, 8), None, Some("1")));
        assert!(!on("2.21.5", (12, 8), None, Some("1")));
        let why = cumem_host_reason(v("2.27.7"), (12, 8), None, None).unwrap();
        assert!(why.contains("falls back to /dev/shm"), "{why}");
        let why = cumem_host_reason(v("2.24.3"), (12, 8), None, None).unwrap();
        assert!(!why.contains("falls back"), "{why}");
    }

    #[test]
    fn shm_estimate_and_shm_size_are_plain_arithmetic() {
        let e = shm_estimate(DEFAULT_SHM_SEGMENT_BYTES, 16, 2, 8);
        assert_eq!(e.total_bytes, 9_637_888 * 16 * 2 * 8);
        assert_eq!((e.channels, e.shm_peers, e.local_ranks), (16, 2, 8));
        // 2.3 GiB, twice that rounded up: 5 GiB.
        assert_eq!(shm_size_gib(Some(e.total_bytes)), 5);
        assert_eq!(shm_size_gib(Some(1)), 1);
        assert_eq!(shm_size_gib(Some(GIB / 2)), 1);
        assert_eq!(shm_size_gib(Some(GIB / 2 + 1)), 2);
        assert_eq!(shm_size_gib(None), 1);
        assert_eq!(shm_estimate(u64::MAX, 2, 2, 2).total_bytes, u64::MAX);
    }
}
