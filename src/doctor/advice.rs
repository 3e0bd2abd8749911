//! Advice on `NCCL_*` settings that usually hurt, given what the machine has: SHM or
//! P2P switched off (and whether the GPUs here make that matter), IB switched off on a
//! host with active IB ports, `NCCL_DEBUG=TRACE`, and forced algorithms or protocols.

use super::gpu::P2pSummary;
use super::infiniband::IbPorts;
use super::settings::Settings;

/// What the other checks know that changes the advice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Active InfiniBand/RoCE ports (`mlx5_0:1`).
    pub ib_ports: Vec<String>,
    /// GPU pairs without peer-to-peer access, when the driver was asked.
    pub p2p: Option<P2pSummary>,
}

impl Facts {
    /// What `quick_checks` knows: no GPU facts.
    pub fn quick(ib: &IbPorts) -> Facts {
        Facts {
            ib_ports: ib.active_names(),
            p2p: None,
        }
    }
}

/// One piece of advice: a warning with its fix, or a note.
pub struct Advice {
    pub warn: bool,
    pub text: String,
    pub fix: Option<String>,
}

pub fn advice(s: &Settings, facts: &Facts) -> Vec<Advice> {
    let mut out = Vec::new();
    let mut warn = |text: String, fix: &str| {
        out.push(Advice {
            warn: true,
            text,
            fix: Some(fix.to_string()),
        })
    };
    const MEASURE: &str =
        "measure before keeping it: `nccl-bench sweep --transports default,shm-off,p2p-off`";
    let mut notes = Vec::new();
    if s.is_on("NCCL_SHM_DISABLE") {
        match &facts.p2p {
            Some(p) if p.missing.is_empty() => notes.push(format!(
                "NCCL_SHM_DISABLE=1: all {} GPUs here reach each other with P2P, so SHM is not \
                 on the data path and the setting changes nothing here (NCCL's proxy still \
                 uses /dev/shm)",
                p.gpus
            )),
            Some(p) => warn(
                format!(
                    "NCCL_SHM_DISABLE=1: {} GPU pair(s) here lack P2P ({}); their traffic moves \
                     from host shared memory to the network path (sockets or IB loopback), \
                     usually slower",
                    p.missing.len(),
                    p.describe_missing()
                ),
                MEASURE,
            ),
            None => warn(
                "NCCL_SHM_DISABLE=1: GPU pairs without P2P then talk over the network path \
                 (sockets or IB loopback) instead of host shared memory; with P2P or NVLink \
                 between all GPUs it changes nothing. It does not stop NCCL's other /dev/shm use"
                    .to_string(),
                MEASURE,
            ),
        }
    }
    if s.p2p_disabled() {
        warn(
            "P2P disabled (NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL=LOC): GPUs no longer read each \
             other's memory over NVLink or PCIe; traffic goes through host memory (SHM) or the \
             network, which on NVLink machines costs most of the bandwidth"
                .to_string(),
            MEASURE,
        );
    }
    let ib_off = s.is_on("NCCL_IB_DISABLE");
    let socket_net = s
        .effective("NCCL_NET")
        .is_some_and(|n| n.eq_ignore_ascii_case("socket"));
    if (ib_off || socket_net) && !facts.ib_ports.is_empty() {
        let what = if ib_off {
            "NCCL_IB_DISABLE=1"
        } else {
            "NCCL_NET=Socket"
        };
        warn(
            format!(
                "{what} on a host with active InfiniBand/RoCE ports ({}): traffic between \
                 nodes goes over TCP sockets instead",
                facts.ib_ports.join(", ")
            ),
            &format!(
                "unset {} unless IB is known to be broken here",
                what.split('=').next().unwrap_or(what)
            ),
        );
    } else if ib_off {
        notes.push(
            "NCCL_IB_DISABLE=1: no active InfiniBand/RoCE port here, so it changes nothing"
                .to_string(),
        );
    }
    if s.effective("NCCL_DEBUG")
        .is_some_and(|d| d.eq_ignore_ascii_case("TRACE"))
    {
        warn(
            "NCCL_DEBUG=TRACE logs every call (in builds with tracing) and slows NCCL down"
                .to_string(),
            "use NCCL_DEBUG=INFO (or WARN) outside a debugging session",
        );
    }
    for forced in ["NCCL_ALGO", "NCCL_PROTO"] {
        if let Some(v) = s.effective(forced) {
            notes.push(format!(
                "{forced}={v} overrides NCCL's tuning for every message size; keep it only \
                 where measured faster"
            ));
        }
    }
    if let Some(v) = s.effective("NCCL_SOCKET_IFNAME") {
        notes.push(format!(
            "NCCL_SOCKET_IFNAME={v}: what it selects is under Socket interfaces"
        ));
    }
    out.extend(notes.into_iter().map(|text| Advice {
        warn: false,
        text,
        fix: None,
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;

    #[test]
    fn p2p_off_socket_net_and_forced_algorithms() {
        let m = FakeMachine::new()
            .env("NCCL_P2P_LEVEL", "loc")
            .env("NCCL_NET", "Socket")
            .env("NCCL_ALGO", "Ring");
        let s = Settings::read(&m.root());
        let with_ib = Facts {
            ib_ports: vec!["mlx5_0:1".into()],
            p2p: None,
        };
        let a = advice(&s, &with_ib);
        let warnings: Vec<&str> = a
            .iter()
            .filter(|a| a.warn)
            .map(|a| a.text.as_str())
            .collect();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("P2P disabled"));
        assert!(warnings[1].starts_with("NCCL_NET=Socket on a host with active"));
        assert!(a
            .iter()
            .any(|a| !a.warn && a.text.starts_with("NCCL_ALGO=Ring overrides")));
        // Without IB ports, NCCL_NET=Socket is no loss.
        assert_eq!(
            advice(&s, &Facts::default())
                .iter()
                .filter(|a| a.warn)
                .count(),
            1
        );
    }
}
