//! The busbw ceiling of a case: the rate of the slowest link of the ring it ran on,
//! from the link rates measured before the sweep (`manifest.json`, `ceilings`).
//!
//! A ring all-reduce moves 2(n-1)/n of the buffer through every rank's link in each
//! direction, which is exactly what busbw divides out: busbw cannot exceed the
//! slowest link of the ring. Which link that is follows from the transport NCCL
//! used (read from its log, the `transports` column):
//! - P2P: GPU pairs over peer access (NVLink or PCIe), the ring through them whose
//!   slowest pair is fastest (NCCL orders its rings by the topology; that ring bounds
//!   every one it could choose);
//! - SHM: GPU pairs through pinned host memory (measured where peer access is
//!   missing; elsewhere the slower of the two GPUs' host copies);
//! - P2P and SHM in one ring (`P2P/CUMEM:50%;SHM:50%`: GPUs under two PCIe switches):
//!   each pair over peer access where it has it, else through host memory;
//! - NET on one machine: TCP loopback, and the host copies on both sides;
//! - the host backend: one core's memcpy for SHM, TCP loopback for NET/Socket, for
//!   cases whose ranks' buffers exceed the last-level cache (smaller ones copy at the
//!   cache's rate, which neither link measures).
//!
//! NVLS and CollNet reduce inside the switch or the network, so the ring's bound does
//! not apply to them; they get no ceiling, and neither does one rank (no link).

use crate::model::{Ceilings, LinkKind};
use crate::nccl::cell::TransportsCell;

/// A case's ceiling: the rate and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    pub gbps: f64,
    /// The link, in words: "memcpy", "P2P ring", "TCP loopback", ...
    pub link: String,
}

/// The ceiling of a case of `nranks` ranks of `bytes` that used `transports`, on the
/// machine the ceilings were measured on (`host_backend`: the CPU ranks of the host
/// backend).
pub fn for_case(
    ceilings: &Ceilings,
    host_backend: bool,
    nranks: u32,
    bytes: u64,
    transports: &str,
) -> Option<Ceiling> {
    let devices: Vec<usize> = (0..nranks as usize).collect();
    for_devices(ceilings, host_backend, &devices, bytes, transports)
}

/// [`for_case`] for a case whose ranks ran on `devices` (GPUs; rank r on
/// `devices[r]`), such as a pair of `sweep --pairs`.
pub fn for_devices(
    ceilings: &Ceilings,
    host_backend: bool,
    devices: &[usize],
    bytes: u64,
    transports: &str,
) -> Option<Ceiling> {
    let cell = TransportsCell::parse(transports);
    if devices.len() < 2 || cell.shares.is_empty() || cell.in_network() {
        return None;
    }
    if host_backend && ceilings.in_cache(devices.len(), bytes) {
        return None;
    }
    let used = |name: &str| cell.uses(name);
    let mut bounds: Vec<Ceiling> = Vec::new();
    if host_backend {
        if used("SHM") {
            bounds.push(named(
                single(ceilings, LinkKind::Memcpy)?,
                "memcpy (one core)",
            ));
        }
        if used("NET") {
            bounds.push(named(
                single(ceilings, LinkKind::TcpLoopback)?,
                "TCP loopback",
            ));
        }
    } else {
        if used("P2P") && used("SHM") {
            // Which pairs went through host memory is not in the cell: those without
            // peer access do, and at least one does (the ring through host memory
            // bounds it where every pair has peer access).
            let either = ring(ceilings, devices, PairPath::Either)?;
            let via_host = ring(ceilings, devices, PairPath::ViaHost)?;
            bounds.push(named(
                either.min(via_host),
                "ring of P2P and host-memory links",
            ));
        } else if used("P2P") {
            bounds.push(named(
                ring(ceilings, devices, PairPath::Direct)?,
                "P2P ring",
            ));
        } else if used("SHM") {
            bounds.push(named(
                ring(ceilings, devices, PairPath::ViaHost)?,
                "ring through host memory",
            ));
        }
        if used("NET") {
            let tcp = single(ceilings, LinkKind::TcpLoopback)?;
            let staged = ring(ceilings, devices, PairPath::ViaHost)?;
            bounds.push(named(tcp.min(staged), "TCP loopback and host copies"));
        }
    }
    bounds.into_iter().min_by(|a, b| a.gbps.total_cmp(&b.gbps))
}

/// The ring ceiling of every rank count for each kind of path measured, for the
/// report and the plots (for buffers past any cache): (rank count, what, GB/s).
pub fn rings(ceilings: &Ceilings, host_backend: bool, counts: &[u32]) -> Vec<(u32, String, f64)> {
    let mut out = Vec::new();
    for &n in counts.iter().filter(|&&n| n >= 2) {
        let candidates: Vec<(&str, &str)> = if host_backend {
            vec![("SHM", "memcpy (one core)"), ("NET/Socket", "TCP loopback")]
        } else {
            vec![
                ("P2P", "P2P ring"),
                ("SHM", "ring through host memory"),
                ("NET/Socket", "TCP loopback and host copies"),
            ]
        };
        for (transport, what) in candidates {
            if let Some(c) = for_case(ceilings, host_backend, n, u64::MAX, transport) {
                out.push((n, what.to_string(), c.gbps));
            }
        }
    }
    out
}

fn named(gbps: f64, link: &str) -> Ceiling {
    Ceiling {
        gbps,
        link: link.to_string(),
    }
}

fn single(ceilings: &Ceilings, kind: LinkKind) -> Option<f64> {
    ceilings
        .links
        .iter()
        .filter(|l| l.kind == kind && l.gbps > 0.0)
        .map(|l| l.gbps)
        .min_by(f64::total_cmp)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PairPath {
    /// Whatever NCCL's P2P uses between the two: peer access where measured.
    Direct,
    /// Through pinned host memory.
    ViaHost,
    /// Peer access where the pair has it, else through host memory (NCCL's P2P
    /// where it can, SHM where not).
    Either,
}

/// The rate between GPUs a and b on `path`.
fn pair(ceilings: &Ceilings, a: usize, b: usize, path: PairPath) -> Option<f64> {
    let between = |kind: LinkKind| {
        ceilings
            .links
            .iter()
            .find(|l| l.kind == kind && (l.gpus == [a, b] || l.gpus == [b, a]))
            .map(|l| l.gbps)
    };
    match path {
        PairPath::Direct => between(LinkKind::P2p),
        PairPath::Either => pair(ceilings, a, b, PairPath::Direct)
            .or_else(|| pair(ceilings, a, b, PairPath::ViaHost)),
        PairPath::ViaHost => between(LinkKind::ViaHost).or_else(|| {
            let of = |kind: LinkKind, gpu: usize| {
                ceilings
                    .links
                    .iter()
                    .find(|l| l.kind == kind && l.gpus == [gpu])
                    .map(|l| l.gbps)
            };
            [
                of(LinkKind::D2h, a)?,
                of(LinkKind::H2d, b)?,
                of(LinkKind::D2h, b)?,
                of(LinkKind::H2d, a)?,
            ]
            .into_iter()
            .min_by(f64::total_cmp)
        }),
    }
}

/// The fastest ring's slowest link over `devices` (GPUs 0..n for a sweep of n
/// ranks): the best bottleneck over every cyclic order, searched exhaustively up to
/// 10 GPUs, beyond that the order given.
fn ring(ceilings: &Ceilings, devices: &[usize], path: PairPath) -> Option<f64> {
    let n = devices.len();
    let mut rate = vec![vec![0.0; n]; n];
    for (a, row) in rate.iter_mut().enumerate() {
        for (b, cell) in row.iter_mut().enumerate() {
            if a != b {
                *cell = pair(ceilings, devices[a], devices[b], path)?;
            }
        }
    }
    if n == 2 {
        return Some(rate[0][1]);
    }
    if n > 10 {
        return (0..n).map(|i| rate[i][(i + 1) % n]).min_by(f64::total_cmp);
    }
    let mut order: Vec<usize> = (0..n).collect();
    let mut best = 0.0f64;
    permute(&mut order, 1, &rate, &mut best);
    Some(best)
}

/// Tries every order of `order[k..]` (GPU 0 stays first: rotations are the same
/// ring), keeping the best bottleneck; prunes orders already no better.
fn permute(order: &mut [usize], k: usize, rate: &[Vec<f64>], best: &mut f64) {
    let n = order.len();
    let bottleneck = |upto: usize| {
        (1..upto)
            .map(|i| rate[order[i - 1]][order[i]])
            .fold(f64::INFINITY, f64::min)
    };
    if bottleneck(k) <= *best {
        return;
    }
    if k == n {
        let closed = bottleneck(n).min(rate[order[n - 1]][order[0]]);
        *best = best.max(closed);
        return;
    }
    for i in k..n {
        order.swap(k, i);
        permute(order, k + 1, rate, best);
        order.swap(k, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LinkRate;

    fn link(kind: LinkKind, gpus: &[usize], gbps: f64) -> LinkRate {
        LinkRate {
            kind,
            gpus: gpus.to_vec(),
            gbps,
            bytes: 1 << 28,
            how: String::new(),
        }
    }

    /// Four GPUs: every pair P2P at 150 GB/s except 0-2 and 1-3 at 20 GB/s (a ring
    /// 0-1-2-3-0 avoids both); host copies 25 GB/s, except GPU 3's D2H at 12.
    fn machine() -> Ceilings {
        let mut links = Vec::new();
        for a in 0..4 {
            for b in a + 1..4 {
                let slow = (a, b) == (0, 2) || (a, b) == (1, 3);
                links.push(link(
                    LinkKind::P2p,
                    &[a, b],
                    if slow { 20.0 } else { 150.0 },
                ));
            }
            links.push(link(LinkKind::H2d, &[a], 25.0));
            links.push(link(LinkKind::D2h, &[a], if a == 3 { 12.0 } else { 25.0 }));
        }
        links.push(link(LinkKind::TcpLoopback, &[], 3.0));
        Ceilings {
            links,
            errors: Vec::new(),
            cache_bytes: None,
        }
    }

    #[test]
    fn the_p2p_ceiling_is_the_best_rings_slowest_pair() {
        let m = machine();
        // The ring 0-1-2-3-0 uses only 150 GB/s pairs.
        let c = for_case(&m, false, 4, 1 << 30, "P2P/CUMEM:100%").unwrap();
        assert_eq!(c.gbps, 150.0);
        assert_eq!(c.link, "P2P ring");
        // Three GPUs: any ring of 0, 1, 2 includes the slow pair 0-2.
        assert_eq!(
            for_case(&m, false, 3, 1 << 30, "P2P/IPC:100%")
                .unwrap()
                .gbps,
            20.0
        );
        assert_eq!(
            for_case(&m, false, 2, 1 << 30, "P2P/CUMEM:100%")
                .unwrap()
                .gbps,
            150.0
        );
    }

    #[test]
    fn shm_and_net_go_through_host_copies_and_take_the_slowest() {
        let m = machine();
        assert_eq!(
            for_case(&m, false, 2, 1 << 30, "SHM:100%").unwrap().gbps,
            25.0
        );
        // GPU 3's slow D2H is on every ring of four.
        assert_eq!(
            for_case(&m, false, 4, 1 << 30, "SHM:100%").unwrap().gbps,
            12.0
        );
        let net = for_case(&m, false, 2, 1 << 30, "NET/Socket:100%").unwrap();
        assert_eq!(
            (net.gbps, net.link.as_str()),
            (3.0, "TCP loopback and host copies")
        );
        // A mix is bounded by its slowest transport, every entry of the cell read.
        assert_eq!(
            for_case(&m, false, 4, 1 << 30, "P2P/CUMEM:50%;SHM:50%")
                .unwrap()
                .gbps,
            12.0
        );
        let mixed = for_case(&m, false, 2, 1 << 30, "SHM:75%;NET/Socket:25%").unwrap();
        assert_eq!(
            (mixed.gbps, mixed.link.as_str()),
            (3.0, "TCP loopback and host copies")
        );
    }

    #[test]
    fn what_the_ring_does_not_bound_or_was_not_measured_has_no_ceiling() {
        let m = machine();
        assert_eq!(for_case(&m, false, 4, 1 << 30, "NVLS;P2P/CUMEM:100%"), None);
        assert_eq!(for_case(&m, false, 8, 1 << 30, "NVLS"), None);
        assert_eq!(for_case(&m, false, 1, 1 << 30, "P2P/CUMEM:100%"), None);
        assert_eq!(for_case(&m, false, 2, 1 << 30, ""), None);
        // Eight ranks on a machine whose links were measured for four GPUs.
        assert_eq!(for_case(&m, false, 8, 1 << 30, "P2P/CUMEM:100%"), None);
        // The host backend without a memcpy measurement.
        assert_eq!(for_case(&m, true, 2, 1 << 30, "SHM"), None);
    }

    /// Two PCIe switches: GPUs 0-1 and 2-3 have peer access at 50 GB/s, the pairs
    /// across go through host memory at 10 GB/s (no peer access measured there).
    #[test]
    fn a_ring_of_p2p_and_shm_takes_each_pair_on_its_own_path() {
        let mut links = vec![
            link(LinkKind::P2p, &[0, 1], 50.0),
            link(LinkKind::P2p, &[2, 3], 50.0),
        ];
        for a in 0..4 {
            links.push(link(LinkKind::H2d, &[a], 10.0));
            links.push(link(LinkKind::D2h, &[a], 10.0));
        }
        let m = Ceilings {
            links,
            errors: Vec::new(),
            cache_bytes: None,
        };
        let c = for_case(&m, false, 4, 1 << 30, "P2P/CUMEM:50%;SHM:50%").unwrap();
        assert_eq!(
            (c.gbps, c.link.as_str()),
            (10.0, "ring of P2P and host-memory links")
        );
        // A P2P ring over four needs peer access across the switches: unmeasured.
        assert_eq!(for_case(&m, false, 4, 1 << 30, "P2P/CUMEM:100%"), None);
        assert_eq!(
            for_case(&m, false, 2, 1 << 30, "P2P/CUMEM:100%")
                .unwrap()
                .gbps,
            50.0
        );
    }

    #[test]
    fn the_host_backend_reads_memcpy_and_tcp_loopback() {
        let m = Ceilings {
            links: vec![
                link(LinkKind::Memcpy, &[], 9.5),
                link(LinkKind::TcpLoopback, &[], 2.5),
            ],
            errors: Vec::new(),
            cache_bytes: Some(32 << 20),
        };
        let shm = for_case(&m, true, 4, 1 << 30, "SHM").unwrap();
        assert_eq!((shm.gbps, shm.link.as_str()), (9.5, "memcpy (one core)"));
        assert_eq!(
            for_case(&m, true, 2, 1 << 30, "NET/Socket").unwrap().gbps,
            2.5
        );
        // 2 ranks of 8 MiB (32 MiB of buffers) fit in a 32 MiB cache, 4 ranks do not.
        assert_eq!(for_case(&m, true, 2, 8 << 20, "SHM"), None);
        assert_eq!(for_case(&m, true, 2, 8 << 20, "NET/Socket"), None);
        assert_eq!(for_case(&m, true, 4, 8 << 20, "SHM").unwrap().gbps, 9.5);
        // Where the host did not say its cache, every size has its ceiling.
        let gpus = Ceilings {
            cache_bytes: None,
            ..m.clone()
        };
        assert_eq!(for_case(&gpus, true, 2, 8, "SHM").unwrap().gbps, 9.5);
        assert_eq!(
            rings(&m, true, &[1, 2]),
            [
                (2, "memcpy (one core)".to_string(), 9.5),
                (2, "TCP loopback".to_string(), 2.5)
            ]
        );
    }

    #[test]
    fn the_exhaustive_search_finds_the_one_good_ring_of_eight() {
        // Eight GPUs where only the pairs (i, i+3 mod 8) are fast: one ring,
        // 0-3-6-1-4-7-2-5-0, uses fast pairs only.
        let mut links = Vec::new();
        for a in 0..8usize {
            for b in a + 1..8 {
                let fast = (b - a) % 8 == 3 || (a + 8 - b) % 8 == 3;
                links.push(link(
                    LinkKind::P2p,
                    &[a, b],
                    if fast { 100.0 } else { 10.0 },
                ));
            }
        }
        let m = Ceilings {
            links,
            errors: Vec::new(),
            cache_bytes: None,
        };
        assert_eq!(for_case(&m, false, 8, 1 << 30, "P2P").unwrap().gbps, 100.0);
    }
}
