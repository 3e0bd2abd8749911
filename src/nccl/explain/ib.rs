//! NET/IB's completion errors: the status of each (`with error 12`, `status=12`,
//! `status=IBV_WC_RETRY_EXC_ERR(12)` from 2.28), read against ibverbs.toml; the first
//! status that causes rather than follows is the finding, the flushes after it its
//! consequence. NCCL 2.3's silent fall-back to sockets when IB had no port,
//! NCCL_IB_* settings in a run whose NET/IB finds no device, and a memory
//! registration refused as a program printed it, without NCCL's tag; and IB connections
//! none of which uses GPUDirect RDMA.

use super::finding::{Finding, FindingKind, Severity};
use super::pasted::{cut, message, Pasted, PastedLine};
use super::signatures::Placed;
use crate::nccl::knowledge;
use crate::nccl::log::{Connection, Direction, NcclLog};

/// NCCL 2.3 looked for InfiniBand (`NET/IB : Using interface ib0 for sideband
/// communication`), found no active port it could use, and took its internal Socket
/// network (`Using internal Network Socket`); unlike 2.4 and later it prints no `No
/// device found`. A warning where the job spans hosts or the interface is IPoIB (`ib*`:
/// the host has an InfiniBand adapter), a note otherwise.
pub(super) fn ib_without_port_rule(
    pasted: &Pasted,
    log: &NcclLog,
    multi_node: bool,
    given: &[(String, String)],
) -> Option<Finding> {
    let sideband = pasted.first("for sideband communication")?;
    let socket = pasted.first("using internal network socket")?;
    if log
        .connections
        .iter()
        .any(|c| c.transport.label.starts_with("NET/IB"))
    {
        return None;
    }
    // From `NET/IB` on: 2.3's lines have no `NCCL` tag before their `INFO`.
    let said = message(sideband.text);
    let said = said.find("NET/IB").map_or(said, |at| &said[at..]);
    let interface = said
        .split_once("Using interface ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_default();
    let ipoib = interface.starts_with("ib");
    let cause = format!(
        "NCCL looked for InfiniBand ports (`{said}`) and found no active one it could use. So it \
         took its internal Socket network: traffic between nodes goes over TCP on {interface}.{}",
        if ipoib {
            " An ib* interface is IPoIB: this host has an InfiniBand adapter NCCL does not use."
        } else {
            ""
        }
    );
    let hca = super::reason::given_setting(given, log, pasted, "NCCL_IB_HCA")
        .map(|v| format!(" NCCL_IB_HCA={v} must name them."))
        .unwrap_or_default();
    let fix = format!(
        "Check the ports on every node with `ibstat` (State: Active); pass /dev/infiniband \
         into containers.{hca} Then NCCL lists them (`NET/IB : Using [0]mlx5_0:1/IB`) and uses IB."
    );
    let evidence =
        super::evidence::distinct([sideband, socket].into_iter().map(|l| pasted.evidence(l)));
    let mut f = Finding::new(FindingKind::IbNoDevice, evidence, &[])
        .with_texts(cause, fix)
        .with_severity(if multi_node || ipoib {
            Severity::Warning
        } else {
            Severity::Info
        });
    f.title = "no active InfiniBand port: traffic between nodes goes over sockets".to_string();
    f.sources
        .push("https://github.com/NVIDIA/nccl/blob/v2.3.7-1/src/transport/net_ib.cu".to_string());
    Some(f)
}

/// `Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory` as a user
/// quotes it, in NCCL's words but without its `WARN` tag: the same refused
/// registration. Where NCCL's own WARN line is in the text too (PyTorch's `Last
/// error:` repeats it), that line is read with the rest of NCCL's log instead; UCX's
/// `ibv_reg_mr(...) failed` is MPI's or NIXL's, not NCCL's.
pub(super) fn untagged_memlock_rule(pasted: &Pasted) -> Option<Placed> {
    let memlock = |l: &PastedLine| {
        l.lower.contains("call to ibv_reg") && super::failures::is_memlock_text(l.text)
    };
    if pasted
        .lines
        .iter()
        .any(|l| l.lower.contains("warn") && memlock(l))
    {
        return None;
    }
    let lines: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| memlock(l) && !l.lower.contains("ucx") && !l.lower.contains("last error"))
        .collect();
    let first = lines.first()?;
    let shown = [super::evidence::Line::at(first.number, first.text)];
    let fill = super::failures::memlock_fill(&shown);
    let evidence = super::evidence::distinct(lines.iter().map(|l| pasted.evidence(l)));
    let n = lines.len();
    Some(Placed {
        finding: Finding::new(FindingKind::IbMemlock, evidence, &fill).with_occurrences(n),
        lines: lines.iter().map(|l| (l.file, l.number)).collect(),
    })
}

/// Whether a line sets an NCCL_IB_* variable: `NCCL_IB_HCA=mlx5_0` in a command or a
/// list, `NCCL_IB_HCA set by environment to` or `set to` in NCCL's own lines.
fn sets_ib_variable(text: &str) -> bool {
    text.match_indices("NCCL_IB_").any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let tail = &text[at..];
        let name = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let after = &tail[name..];
        (after.starts_with('=') || after.starts_with(" set "))
            && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// NCCL_IB_* set (by `--env`, NCCL's lines or the paste) in a run whose NET/IB finds no
/// device: the variables have nothing to act on, and traffic between nodes takes TCP
/// sockets. Not where NCCL_IB_DISABLE=1 turns IB off, nor where NET/IB lists a device.
pub(super) fn ib_settings_without_device_rule(
    pasted: &Pasted,
    log: &NcclLog,
    env: &[(String, String)],
) -> Option<Finding> {
    let squeezed = |l: &PastedLine| l.lower.replace(' ', "");
    let none = pasted
        .lines
        .iter()
        .find(|l| squeezed(l).contains("net/ib:nodevicefound"))?;
    let ib_used = pasted.lines.iter().any(|l| {
        let s = squeezed(l);
        s.contains("net/ib:using[") || s.contains("usingnetworkib")
    }) || log
        .connections
        .iter()
        .any(|c| c.transport.label.starts_with("NET/IB"));
    let disable = super::reason::setting(log, pasted, "NCCL_IB_DISABLE")
        .into_iter()
        .chain(
            env.iter()
                .filter(|(n, _)| n == "NCCL_IB_DISABLE")
                .map(|(_, v)| v.clone()),
        )
        .any(|v| v.trim_start().starts_with('1'));
    if ib_used || disable {
        return None;
    }
    let set_by_env = env.iter().any(|(n, _)| n.starts_with("NCCL_IB_"))
        || log.env.iter().any(|(n, _)| n.starts_with("NCCL_IB_"));
    let setting = pasted.lines.iter().find(|l| sets_ib_variable(l.text));
    if setting.is_none() && !set_by_env {
        return None;
    }
    let socket = pasted.lines.iter().find(|l| {
        let s = squeezed(l);
        s.contains("usingnetworksocket") || s.contains("net/socket:using")
    });
    let network = if pasted.contains("using network socket") {
        " (`Using network Socket`)"
    } else {
        ""
    };
    let shown = setting.into_iter().chain([none]).chain(socket);
    let evidence = super::evidence::distinct(shown.map(|l| pasted.evidence(l)));
    Some(Finding::new(
        FindingKind::IbSettingsNoDevice,
        evidence,
        &[("network", network.to_string())],
    ))
}

/// The status and vendor error of a completion line.
fn completion(line: &PastedLine) -> Option<(u32, Option<u32>)> {
    let l = &line.lower;
    if !l.contains("got completion") {
        return None;
    }
    let number_after = |key: &str| -> Option<u32> {
        let rest = &l[l.find(key)? + key.len()..];
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
        let rest = rest.trim_start_matches('(');
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let status = number_after("with error ").or_else(|| number_after("status="))?;
    let vendor = number_after("vendor err ").or_else(|| number_after("vendor_err="));
    Some((status, vendor))
}

/// What to do for a status, from what the sources say of it.
fn fix_for(code: u32) -> &'static str {
    match code {
        12 => {
            "Check the path between the two NICs: the link and port state (`ibstat`), on RoCE \
             the GID index (NCCL_IB_GID_INDEX, `show_gids`) and traffic class, the routes \
             between the subnets, and that the NICs' MTU (`ibv_devinfo`: active_mtu) fits every \
             switch port on the path; test it with `ib_write_bw` between the two nodes on the \
             same GID, at large messages. If the NICs do reach each other and the fabric is \
             congested, raise NCCL_IB_TIMEOUT (and NCCL_IB_RETRY_CNT). NCCL_DEBUG=INFO \
             NCCL_DEBUG_SUBSYS=INIT,NET shows the NICs and GIDs each rank uses."
        }
        4 => {
            "Disable PCI ACS on the PCIe switches between the GPUs and the NICs (BIOS, or \
             `setpci`, as NCCL's troubleshooting guide describes) and check that nvidia-peermem \
             or DMA-BUF is set up; NCCL_NET_GDR_LEVEL=0 confirms the diagnosis (the job runs, \
             slower, without GPU Direct RDMA)."
        }
        _ => {
            "Check the ports (`ibstat`, `ibv_devinfo`) and the fabric's error counters on both \
             nodes, and test the path with `ib_write_bw` between them; on RoCE check \
             NCCL_IB_GID_INDEX."
        }
    }
}

/// The completion errors as one finding: the first status that causes, with its
/// meaning, what usually causes it where a source says, and the flushes that followed.
pub(super) fn completion_findings(pasted: &Pasted) -> Option<Placed> {
    let hits: Vec<(&PastedLine, u32, Option<u32>)> = pasted
        .lines
        .iter()
        .filter_map(|l| completion(l).map(|(s, v)| (l, s, v)))
        .collect();
    let (_, status, vendor) = hits
        .iter()
        .find(|(_, s, _)| knowledge::wc_status(*s).is_some_and(|w| !w.consequence))
        .or_else(|| hits.first())
        .copied()?;
    let w = knowledge::wc_status(status);
    let name = w.map_or("unknown status".to_string(), |w| w.name.clone());
    let text = w.map_or(String::new(), |w| format!("`{}`", w.text));
    let means = w.map_or("a status this tool does not know".to_string(), |w| {
        w.means.clone()
    });
    let mut usual = match w {
        Some(w) if w.source_usual.is_some() => format!(" {}", w.usual),
        _ => String::new(),
    };
    if status == 12 {
        usual.push_str(" Retry exceeded is a timeout.");
    }
    if let Some(v) = vendor.and_then(knowledge::vendor_err) {
        usual.push_str(&format!(" Vendor error {}: {}", v.code, v.means));
    }
    let flushes = hits
        .iter()
        .filter(|(_, s, _)| knowledge::wc_status(*s).is_some_and(|w| w.consequence))
        .count();
    if flushes > 0 && w.is_some_and(|w| !w.consequence) {
        usual.push_str(&format!(
            " The {flushes} status 5 (flush) completion(s) after it follow from it: the queue \
             pair was already in error."
        ));
    }
    let evidence = super::evidence::distinct(hits.iter().map(|(l, _, _)| pasted.evidence(l)));
    let mut sources: Vec<String> = w.map(|w| w.source.clone()).into_iter().collect();
    sources.extend(w.and_then(|w| w.source_usual.clone()));
    let mut f = Finding::new(
        FindingKind::IbCompletion,
        evidence,
        &[
            ("status", status.to_string()),
            ("name", name),
            ("text", text),
            ("means", lower_first(&means)),
            ("usual", usual),
            ("fix", fix_for(status).to_string()),
        ],
    )
    .with_occurrences(hits.len());
    f.avoid = "NCCL_IB_DISABLE=1: it moves the traffic to slow sockets and hides the fabric \
               problem instead of finding it."
        .to_string();
    if status == 4 {
        f.avoid
            .push_str(" Raising NCCL_IB_TIMEOUT does not help a protection error.");
    }
    f.sources = sources;
    // Only flushes, after the NIC stopped the queue pair for an access violation: that
    // event is the cause (its line finding, ib-access-violation).
    if w.is_some_and(|w| w.consequence) && pasted.contains("local access violation work queue") {
        f.follows = Some("ib-access-violation");
        f.fix = "Fix ib-access-violation first: these flushes follow from it.".to_string();
        f.avoid.clear();
    }
    Some(Placed {
        finding: f,
        lines: hits.iter().map(|(l, _, _)| (l.file, l.number)).collect(),
    })
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// IB connections of which none carries GPUDirect RDMA, with receive lines among them
/// (GPUDirect reads on send lines can be off by default while writes are on). Not where
/// NCCL says GPUDirect RDMA is disabled (`gdr-disabled` reads that line), nor where
/// NCCL_NET_GDR_LEVEL is set (a run that chose where GPUDirect applies). Where NCCL
/// says it is enabled for the HCAs, the module is there and the GPU-NIC distance is
/// why.
pub(super) fn gdr_unused_rule(log: &NcclLog, pasted: &Pasted) -> Option<Finding> {
    if log.env.iter().any(|(n, _)| n == "NCCL_NET_GDR_LEVEL") {
        return None;
    }
    let ib: Vec<&Connection> = log
        .connections
        .iter()
        .filter(|c| c.transport.raw.starts_with("NET/IB"))
        .collect();
    if ib.iter().any(|c| c.transport.raw.contains("GDRDMA"))
        || pasted.contains("gpu direct rdma disabled")
    {
        return None;
    }
    let received = ib
        .iter()
        .find(|c| c.direction == Some(Direction::Receive))?;
    let (why, fix) = if pasted.contains("gpu direct rdma enabled") {
        (
            "NCCL says GPUDirect RDMA is enabled for the HCAs, so the module is loaded: NCCL \
             left it unused for these GPU-NIC pairs, which are farther apart than \
             NCCL_NET_GDR_LEVEL allows (PXB by default: across a CPU or a host bridge).",
            "Read the GPU-NIC distance in `nvidia-smi topo -m` (NCCL_DEBUG_SUBSYS=NET,GRAPH \
             logs NCCL's choice). Pin each rank to a GPU near its NIC, or measure with \
             NCCL_NET_GDR_LEVEL=SYS before keeping it: across sockets GPUDirect can be slower.",
        )
    } else {
        (
            "NCCL uses GPUDirect RDMA only with a peer-memory module (nvidia_peermem) or \
             DMA-BUF, and only for GPU-NIC pairs close enough (NCCL_NET_GDR_LEVEL).",
            "Load the peer-memory module (`lsmod | grep peermem`; `modprobe nvidia-peermem`) \
             or use a driver and kernel with DMA-BUF; then NCCL_DEBUG=INFO shows `GPU Direct \
             RDMA Enabled` and connections `via NET/IB/0/GDRDMA`. If it is loaded, check the \
             GPU-NIC distance in `nvidia-smi topo -m`.",
        )
    };
    let evidence = vec![format!(
        "line {}: via {}",
        received.line, received.transport.raw
    )];
    Some(Finding::new(
        FindingKind::GdrUnused,
        evidence,
        &[
            ("count", ib.len().to_string()),
            ("why", why.to_string()),
            ("fix", fix.to_string()),
        ],
    ))
}

/// A system error (`-> 2`) returned from NCCL's IB transport with no WARN before it, in a
/// run that steers the RoCE GID choice (NCCL_IB_ADDR_RANGE, NCCL_IB_ADDR_FAMILY,
/// NCCL_IB_ROCE_VERSION_NUM) and names no NCCL_IB_GID_INDEX: the GID selection failed.
pub(super) fn gid_selection_rule(log: &NcclLog, pasted: &Pasted) -> Option<Finding> {
    let steer: Vec<&str> = log
        .env
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| {
            matches!(
                *n,
                "NCCL_IB_ADDR_RANGE" | "NCCL_IB_ADDR_FAMILY" | "NCCL_IB_ROCE_VERSION_NUM"
            )
        })
        .collect();
    if steer.is_empty() || log.env.iter().any(|(n, _)| n == "NCCL_IB_GID_INDEX") {
        return None;
    }
    let returned = pasted
        .lines
        .iter()
        .find(|l| l.lower.contains("net_ib.cc:") && l.lower.trim_end().ends_with("-> 2"))?;
    // Set-up only: no WARN and no finished communicator before it.
    if pasted
        .lines
        .iter()
        .take_while(|l| l.number != returned.number || l.file != returned.file)
        .any(|l| l.lower.contains("nccl warn") || l.lower.contains("init complete"))
    {
        return None;
    }
    Some(Finding::new(
        FindingKind::IbGidSelection,
        vec![pasted.evidence(returned)],
        &[
            ("vars", steer.join(", ")),
            ("evidence", message(returned.text).to_string()),
        ],
    ))
}

/// NCCL_NET=Socket (set where NCCL shows it, the paste sets it or `--env` names it) in a
/// paste about InfiniBand or RoCE: NCCL stays on TCP sockets between nodes.
pub(super) fn net_socket_forced_rule(
    pasted: &Pasted,
    log: &NcclLog,
    env: &[(String, String)],
) -> Option<Finding> {
    let value = super::reason::given_setting(env, log, pasted, "NCCL_NET")?;
    if !value.eq_ignore_ascii_case("socket") {
        return None;
    }
    // Words of a cluster with IB or RoCE; not NCCL's `NET/IB : No device found`, which
    // it prints on Ethernet machines too.
    const IB: [&str; 6] = [
        "roce",
        "infiniband",
        "mlx5",
        "nccl_ib_hca",
        "nccl_ib_gid_index",
        "net/ib : using",
    ];
    let disabled = super::reason::setting(log, pasted, "NCCL_IB_DISABLE")
        .is_some_and(|v| v.trim_start().starts_with('1'));
    let about_ib = pasted
        .lines
        .iter()
        .any(|l| IB.iter().any(|w| l.lower.contains(w)));
    if disabled || !about_ib {
        return None;
    }
    let line = pasted
        .lines
        .iter()
        .find(|l| l.lower.contains("nccl_net") && l.lower.contains("socket"));
    let text = line.map_or_else(|| "NCCL_NET=Socket".to_string(), |l| cut(l.text.trim()));
    Some(Finding::new(
        FindingKind::NetSocketForced,
        line.map(|l| pasted.evidence(l)).into_iter().collect(),
        &[("evidence", text)],
    ))
}
