//! Is /dev/shm big enough for NCCL's SHM transport on N local ranks? The segment size
//! follows NCCL's buffer sizes (a 4096 B header plus the LL, LL128 and Simple buffers,
//! each replaced by `NCCL_LL_BUFFSIZE`, `NCCL_LL128_BUFFSIZE`, `NCCL_BUFFSIZE` when set);
//! the total is the estimate `explain` uses too
//! ([`shm_estimate`](crate::nccl::shm::shm_estimate)), and the `--shm-size` the fix
//! asks for is its [`shm_size_gib`](crate::nccl::shm::shm_size_gib).

use std::path::Path;

use super::gpu::P2pSummary;
use super::segments::Leftovers;
use super::settings::Settings;
use crate::machine::Root;
use crate::model::{Check, Status};
use crate::nccl::shm::{assumed_channels, node_need, shm_size_gib, ShmEstimate};
use crate::nccl::vars::parse_nccl_int;
use crate::units::human_bytes;
use crate::units::plural;

pub const ID: &str = "shm.size";
pub const TITLE: &str = "/dev/shm";

/// The header in front of a receive segment's buffers.
const HEADER_BYTES: u64 = 4096;
/// `DEFAULT_LL_BUFFSIZE`: 8 lines per thread x 512 threads x 8 steps x 16 B.
const LL_BYTES: u64 = 524_288;
/// `DEFAULT_LL128_BUFFSIZE`: 120 elements per thread x 640 threads x 8 steps x 8 B.
const LL128_BYTES: u64 = 4_915_200;
/// `DEFAULT_BUFFSIZE` (4 MiB); NCCL uses 1 MiB on ARM CPUs.
const SIMPLE_BYTES: u64 = 1 << 22;
const SIMPLE_BYTES_ARM: u64 = 1 << 20;

/// One SHM receive segment: its size and how it was made up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub bytes: u64,
    /// `4096 B header + LL 524288 B + ...`.
    pub makeup: String,
    /// Settings NCCL would refuse, and what it uses instead.
    pub notes: Vec<String>,
}

/// The segment NCCL creates with these settings.
pub fn segment(settings: &Settings) -> Segment {
    let simple_default = if std::env::consts::ARCH == "aarch64" {
        SIMPLE_BYTES_ARM
    } else {
        SIMPLE_BYTES
    };
    let mut notes = Vec::new();
    let mut parts = vec![format!("{HEADER_BYTES} B header")];
    let mut bytes = HEADER_BYTES;
    for (label, var, default) in [
        ("LL", "NCCL_LL_BUFFSIZE", LL_BYTES),
        ("LL128", "NCCL_LL128_BUFFSIZE", LL128_BYTES),
        ("Simple", "NCCL_BUFFSIZE", simple_default),
    ] {
        let (size, from_env) = match settings.effective(var) {
            None => (default, false),
            Some(v) => match parse_nccl_int(v) {
                Some(n) if n >= 0 => (n as u64, true),
                Some(-2) => (default, false),
                _ => {
                    notes.push(format!(
                        "{var}={v} is not a size NCCL accepts: it uses the default {default} B"
                    ));
                    (default, false)
                }
            },
        };
        bytes = bytes.saturating_add(size);
        parts.push(if from_env {
            format!("{label} {size} B ({var})")
        } else {
            format!("{label} {size} B")
        });
    }
    Segment {
        bytes,
        makeup: parts.join(" + "),
        notes,
    }
}

/// Channels to assume, and why.
fn channels(settings: &Settings) -> (usize, String) {
    let read = |var: &str| {
        settings
            .effective(var)
            .and_then(parse_nccl_int)
            .filter(|&n| n > 0)
            .map(|n| n as usize)
    };
    assumed_channels(read)
}

/// The /dev/shm NCCL's SHM transport needs for `local_ranks` ranks on one node.
pub fn need(settings: &Settings, local_ranks: u32) -> (ShmEstimate, Segment, String) {
    let seg = segment(settings);
    let (channels, why) = channels(settings);
    let estimate = node_need(seg.bytes, channels, local_ranks as usize);
    (estimate, seg, why)
}

/// Whose segments to size: NCCL's (the default), or the host backend's, whose ring
/// uses one segment of `segment_bytes` per rank (a host-backend sweep's check, so
/// that its run directory holds one figure, the one its SHM verdict gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    Nccl,
    HostBackend { segment_bytes: u64 },
}

/// NCCL's need with the lines that explain it.
fn nccl_need(settings: &Settings, local_ranks: u32, dir: &str) -> (u64, Vec<String>) {
    let (estimate, seg, channel_why) = need(settings, local_ranks);
    let need = estimate.total_bytes;
    let mut details = vec![
        format!(
            "need = {} B per segment x {} x {} per rank x {} = {need} B ({})",
            seg.bytes,
            plural(estimate.channels, "channel", "channels"),
            plural(estimate.shm_peers, "SHM peer", "SHM peers"),
            plural(estimate.local_ranks, "local rank", "local ranks"),
            human_bytes(need)
        ),
        format!("segment = {}", seg.makeup),
        format!(
            "assumed: {} ({channel_why}); a ring, so 1 SHM peer per rank and channel \
             (trees and more channels need more); every local GPU pair on SHM (pairs with P2P \
             need none: an NVLink machine needs almost nothing); NCCL 2.24+ with a CUDA 12.6+ \
             driver may put these buffers in cuMem host memory instead of {dir}",
            plural(estimate.channels, "channel", "channels")
        ),
        format!(
            "NCCL's proxy and the application use {dir} too: the fix asks for twice the estimate"
        ),
    ];
    details.extend(seg.notes);
    (need, details)
}

pub fn check(
    root: &Root,
    shm_dir: &Path,
    local_ranks: u32,
    sizing: Sizing,
    settings: &Settings,
    leftovers: &Leftovers,
    p2p: Option<&P2pSummary>,
) -> Check {
    let dir = shm_dir.display();
    let host_dir = root.path(shm_dir);
    if !host_dir.is_dir() {
        let what = if host_dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Check::new(ID, TITLE, Status::Fail, format!("{dir} {what}")).with_fix(format!(
            "NCCL's SHM transport needs a tmpfs at {dir}: `mount -t tmpfs -o size=1g tmpfs {dir}`, \
             or run the container with `--shm-size=1g` or `--ipc=host`"
        ));
    }
    let space = match root.fs_space(shm_dir) {
        Ok(s) => s,
        Err(e) => return Check::new(ID, TITLE, Status::Warn, e),
    };
    let (need, mut details) = match sizing {
        Sizing::Nccl => nccl_need(settings, local_ranks, &dir.to_string()),
        Sizing::HostBackend { segment_bytes } => {
            let e = node_need(segment_bytes, 1, local_ranks as usize);
            let line = format!(
                "need = {segment_bytes} B per segment x {} = {} B ({}): the host backend's \
                 ring, one receive segment per rank (with NCCL on GPUs, `nccl-bench doctor` \
                 sizes NCCL's segments instead)",
                plural(e.local_ranks, "local rank", "local ranks"),
                e.total_bytes,
                human_bytes(e.total_bytes)
            );
            (e.total_bytes, vec![line])
        }
    };
    let have = format!(
        "{} free of {}",
        human_bytes(space.free),
        human_bytes(space.total)
    );
    let orphaned = leftovers.orphaned_bytes();
    if orphaned > 0 {
        details.push(format!(
            "leftover nccl-* segments no live process uses hold {} of it (see Leftover \
             segments; `nccl-bench doctor --clean` removes them)",
            human_bytes(orphaned)
        ));
    }
    if local_ranks <= 1 {
        let value = format!("{have}; 1 local rank needs no SHM segment");
        return Check::new(ID, TITLE, Status::Ok, value).with_details(details);
    }
    let value = format!(
        "{have}; need {} for {local_ranks} local ranks",
        human_bytes(need)
    );
    let mut status = if space.total < need {
        details.insert(0, format!("{dir} cannot hold the segments even when empty"));
        Status::Fail
    } else if space.free < need {
        details.insert(0, format!("not enough of {dir} is free for the segments"));
        Status::Fail
    } else if space.free < need.saturating_mul(2) {
        details.insert(
            0,
            "less than twice the need is free: the proxy, the application or a second job \
             can fill the rest"
                .to_string(),
        );
        Status::Warn
    } else {
        Status::Ok
    };
    if status == Status::Fail && settings.is_on("NCCL_SHM_DISABLE") {
        details.insert(
            0,
            "NCCL_SHM_DISABLE=1 is set, so the SHM transport creates none of these segments \
             (NCCL's proxy still uses some /dev/shm)"
                .to_string(),
        );
        status = Status::Warn;
    } else if status == Status::Fail && !settings.p2p_disabled() {
        if let Some(p) = p2p.filter(|p| p.gpus >= 2 && p.missing.is_empty()) {
            details.insert(
                0,
                format!(
                    "all {} GPUs here reach each other with P2P, so NCCL picks P2P, not SHM, \
                     between them: /dev/shm matters once P2P is disabled (NCCL_P2P_DISABLE, \
                     NCCL_P2P_LEVEL) and for NCCL's proxy",
                    p.gpus
                ),
            );
            status = Status::Warn;
        }
    }
    let mut check = Check::new(ID, TITLE, status, value).with_details(details);
    if status != Status::Ok {
        let gib = shm_size_gib(Some(need));
        let mut fix = format!(
            "Give {dir} at least {gib} GiB: `docker run --shm-size={gib}g ...`, or share the \
             host's with `docker run --ipc=host`; on Kubernetes mount an `emptyDir: {{medium: \
             Memory, sizeLimit: {gib}Gi}}` volume at /dev/shm"
        );
        if orphaned > 0 && space.total >= need {
            fix.push_str("; or free it: `nccl-bench doctor --clean`");
        }
        check = check.with_fix(fix);
    }
    check
}

/// The check where NCCL keeps SHM's buffers in cuMem host memory (`why`, from
/// [`cumem_host_reason`](crate::nccl::shm::cumem_host_reason)): a /dev/shm too small
/// for SHM's segments only warns, since it matters only where a process falls back to
/// /dev/shm or `NCCL_CUMEM_HOST_ENABLE=0` is set.
pub fn where_shm_lives(mut check: Check, why: Option<String>) -> Check {
    let Some(why) = why else { return check };
    if check.status == Status::Fail {
        check.status = Status::Warn;
        check.details.insert(
            0,
            format!(
                "{why}: this size matters only where a process falls back to /dev/shm or \
                 NCCL_CUMEM_HOST_ENABLE=0 is set (NCCL's proxy still uses some /dev/shm)"
            ),
        );
    } else {
        check.details.push(why);
    }
    check
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;
    use crate::nccl::shm::DEFAULT_SHM_SEGMENT_BYTES;

    const GIB: u64 = 1 << 30;

    fn run(m: &FakeMachine, ranks: u32) -> Check {
        sized(m, ranks, Sizing::Nccl)
    }

    fn sized(m: &FakeMachine, ranks: u32, sizing: Sizing) -> Check {
        let root = m.root();
        let dir = Path::new("/dev/shm");
        let settings = Settings::read(&root);
        check(
            &root,
            dir,
            ranks,
            sizing,
            &settings,
            &Leftovers::scan(&root, dir),
            None,
        )
    }

    /// A host-backend sweep's check sizes the host backend's segments, one per rank,
    /// the figure its SHM verdict gives (`analysis::verdict`, 4198400 B x 2 ranks).
    #[test]
    fn a_host_backend_sweep_sizes_its_own_segments() {
        let m = FakeMachine::new()
            .dir("/dev/shm")
            .space("/dev/shm", 6 << 20, 6 << 20);
        let c = sized(
            &m,
            2,
            Sizing::HostBackend {
                segment_bytes: 4_198_400,
            },
        );
        assert_eq!(c.status, Status::Fail);
        assert_eq!(
            c.value,
            "6.0 MiB free of 6.0 MiB; need 8.0 MiB for 2 local ranks"
        );
        assert!(
            c.details
                .iter()
                .any(|d| d.starts_with("need = 4198400 B per segment x 2 local ranks = 8396800 B")),
            "{:?}",
            c.details
        );
        // NCCL's sizing of the same machine: 2 channels of NCCL's larger segment.
        assert_eq!(
            run(&m, 2).value,
            "6.0 MiB free of 6.0 MiB; need 36.8 MiB for 2 local ranks"
        );
    }

    #[test]
    fn the_default_segment_is_the_one_nccl_logs() {
        if std::env::consts::ARCH != "aarch64" {
            let s = segment(&Settings::default());
            assert_eq!(s.bytes, DEFAULT_SHM_SEGMENT_BYTES);
            assert!(s.notes.is_empty());
        }
    }

    #[test]
    fn buffer_variables_change_the_segment_and_bad_ones_are_named() {
        let m = FakeMachine::new()
            .env("NCCL_BUFFSIZE", "0x800000")
            .env("NCCL_LL128_BUFFSIZE", "lots");
        let s = segment(&Settings::read(&m.root()));
        assert_eq!(s.bytes, HEADER_BYTES + LL_BYTES + LL128_BYTES + (8 << 20));
        assert!(
            s.makeup.contains("Simple 8388608 B (NCCL_BUFFSIZE)"),
            "{}",
            s.makeup
        );
        assert!(s.notes[0].contains("NCCL_LL128_BUFFSIZE=lots is not a size"));
    }

    #[test]
    fn a_64_mib_container_shm_fails_for_8_ranks_with_the_need_stated() {
        let m = FakeMachine::new()
            .dir("/dev/shm")
            .space("/dev/shm", 64 << 20, 64 << 20);
        let c = run(&m, 8);
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert_eq!(
            c.value,
            "64.0 MiB free of 64.0 MiB; need 147.1 MiB for 8 local ranks"
        );
        assert!(c.details[0].contains("even when empty"));
        assert!(c.details[1].starts_with(
            "need = 9637888 B per segment x 2 channels x 1 SHM peer per rank x 8 local ranks = 154206208 B"
        ));
        let fix = c.fix.unwrap();
        assert!(
            fix.contains("--shm-size=1g") && fix.contains("--ipc=host"),
            "{fix}"
        );
        assert!(fix.contains("medium: Memory"), "{fix}");
    }

    #[test]
    fn a_host_sized_shm_is_ok_and_a_nearly_full_one_warns() {
        let big = FakeMachine::new()
            .dir("/dev/shm")
            .space("/dev/shm", 126 * GIB, 126 * GIB);
        let c = run(&big, 8);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.fix.is_none());
        let tight = FakeMachine::new()
            .dir("/dev/shm")
            .space("/dev/shm", GIB, 200 << 20);
        assert_eq!(run(&tight, 8).status, Status::Warn);
        let full = FakeMachine::new()
            .dir("/dev/shm")
            .space("/dev/shm", GIB, 1 << 20);
        let c = run(&full, 8);
        assert_eq!(c.status, Status::Fail);
        assert!(c.details[0].contains("not enough"));
    }

    #[test]
    fn channels_and_rank_counts_follow_the_settings() {
        let m = FakeMachine::new()
            .env("NCCL_MIN_NCHANNELS", "4")
            .dir("/dev/shm")
            .space("/dev/shm", 64 << 20, 64 << 20);
        let c = run(&m, 2);
        assert!(c
            .details
            .iter()
            .any(|d| d.contains("4 channels (NCCL_MIN_NCHANNELS=4)")));
        assert_eq!(
            c.value,
            "64.0 MiB free of 64.0 MiB; need 73.5 MiB for 2 local ranks"
        );
        let one = run(&m, 1);
        assert_eq!(one.status, Status::Ok);
        assert!(one.value.contains("1 local rank needs no SHM segment"));
        let capped = FakeMachine::new().env("NCCL_MAX_NCHANNELS", "1");
        let (e, _, why) = need(&Settings::read(&capped.root()), 8);
        assert_eq!((e.channels, why.as_str()), (1, "NCCL_MAX_NCHANNELS=1"));
    }

    #[test]
    fn shm_disabled_downgrades_the_failure_and_missing_dirs_fail() {
        let m = FakeMachine::new()
            .env("NCCL_SHM_DISABLE", "1")
            .dir("/dev/shm")
            .space("/dev/shm", 64 << 20, 64 << 20);
        let c = run(&m, 8);
        assert_eq!(c.status, Status::Warn);
        assert!(c.details[0].starts_with("NCCL_SHM_DISABLE=1 is set"));
        let m = FakeMachine::new()
            .dir("/dev/shm")
            .space("/dev/shm", 64 << 20, 64 << 20);
        let root = m.root();
        let dir = Path::new("/dev/shm");
        let nvlink = P2pSummary {
            gpus: 8,
            missing: vec![],
        };
        let settings = Settings::read(&root);
        let leftovers = Leftovers::scan(&root, dir);
        let c = check(
            &root,
            dir,
            8,
            Sizing::Nccl,
            &settings,
            &leftovers,
            Some(&nvlink),
        );
        assert_eq!(c.status, Status::Warn);
        assert!(c.details[0].starts_with("all 8 GPUs here reach each other with P2P"));
        let pcie = P2pSummary {
            gpus: 8,
            missing: vec![(0, 4)],
        };
        let c = check(
            &root,
            dir,
            8,
            Sizing::Nccl,
            &settings,
            &leftovers,
            Some(&pcie),
        );
        assert_eq!(c.status, Status::Fail);
        let none = FakeMachine::new();
        let c = run(&none, 8);
        assert_eq!(
            (c.status, c.value.as_str()),
            (Status::Fail, "/dev/shm does not exist")
        );
        let no_size = FakeMachine::new().dir("/dev/shm");
        let c = run(&no_size, 8);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.value.starts_with("cannot read the size of /dev/shm"),
            "{}",
            c.value
        );
    }
    #[test]
    fn a_small_dev_shm_only_warns_where_shm_lives_in_cumem_host_memory() {
        let fail = || {
            Check::new(
                ID,
                TITLE,
                Status::Fail,
                "64.0 MiB free of 64.0 MiB; need 147.1 MiB",
            )
        };
        assert_eq!(where_shm_lives(fail(), None), fail());
        let why = crate::nccl::shm::cumem_host_reason(
            crate::nccl::NcclVersion::parse("2.28.9").unwrap(),
            (12, 8),
            None,
            None,
        );
        let c = where_shm_lives(fail(), why);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.details[0].starts_with(
                "NCCL 2.28.9 with a CUDA 12.8 driver keeps SHM's buffers in cuMem host memory"
            ) && c.details[0].contains("matters only where a process falls back"),
            "{:?}",
            c.details
        );
        // With a CUDA 12.4 driver SHM is on /dev/shm: still a failure.
        let why = crate::nccl::shm::cumem_host_reason(
            crate::nccl::NcclVersion::parse("2.28.9").unwrap(),
            (12, 4),
            None,
            None,
        );
        assert_eq!(where_shm_lives(fail(), why).status, Status::Fail);
    }
}
