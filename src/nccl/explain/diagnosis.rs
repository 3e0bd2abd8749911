//! The diagnosis and the fix of each finding kind a failure line can raise: the /dev/shm
//! estimate behind the ENOSPC one, the socket interface advice, the hint for each known CUDA
//! error. Text only; which lines raise which finding is [`super::failures`]'s business.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::context::Context;
use super::evidence::Line;
use super::finding::FindingKind;
use crate::nccl::knowledge;
use crate::nccl::log::{Failure, InterfaceLine, NcclLog};
use crate::nccl::shm::{shm_estimate, shm_size_gib, DEFAULT_SHM_SEGMENT_BYTES};
use crate::units::human_bytes;

pub(super) fn shm_no_space_text(
    failures: &[&Failure],
    context: &Context,
    log: &NcclLog,
) -> (String, String) {
    let mut d = String::from(
        "/dev/shm too small for NCCL's SHM segments: creating a shared memory segment failed \
         with ENOSPC (No space left on device).",
    );
    if log.shm_backing.label() == Some("cumem-host") {
        d.push_str(
            " This NCCL keeps SHM's own buffers in cuMem host memory (its `CUMEM ... \
             shareable` lines), not in /dev/shm: the segment that failed belongs to another \
             user of /dev/shm (the proxy's operation pool, NVLS), and the estimate below, \
             made for SHM's segments, is an upper bound.",
        );
    }
    // `(size N)` names the segment; `failed to extend ... to N bytes` adds a 4 B refcount.
    let segment = failures
        .iter()
        .filter(|f| f.text.contains("(size "))
        .find_map(|f| f.shm_segment_size())
        .or_else(|| failures.iter().find_map(|f| f.shm_segment_size()));
    let mut estimate_bytes = None;
    match segment {
        Some(size) => {
            let _ = write!(d, " One segment here is {size} B ({}).", human_bytes(size));
            match (context.channels, &context.local_ranks) {
                (Some(channels), Some((local, host))) => {
                    let peers = context.shm_peers.unwrap_or(1);
                    let e = shm_estimate(size, channels, peers, *local);
                    estimate_bytes = Some(e.total_bytes);
                    let peer_source = if context.shm_peers.is_some() {
                        "the most SHM senders one rank had on one channel in this log"
                    } else {
                        "as in a ring; trees and more channels need more"
                    };
                    let host = if host.is_empty() {
                        String::new()
                    } else {
                        format!(" on {host}")
                    };
                    let _ = write!(
                        d,
                        " Needed: about {} = {size} B x {channels} channel(s) x {peers} SHM \
                         peer(s) per rank x {local} local rank(s). Assumed: one segment per \
                         channel and SHM peer; {peers} SHM peer(s) per rank and channel \
                         ({peer_source}); the {channels} channel(s) and {local} rank(s){host} \
                         this log shows.",
                        human_bytes(e.total_bytes)
                    );
                }
                (channels, local) => {
                    let mut missing = Vec::new();
                    if channels.is_none() {
                        missing.push("the channel count");
                    }
                    if local.is_none() {
                        missing.push("how many ranks share a node");
                    }
                    let _ = write!(
                        d,
                        " A node needs about segment size x channels x SHM peers per rank x \
                         local ranks; this log does not show {}.",
                        missing.join(" or ")
                    );
                }
            }
        }
        None => {
            let _ = write!(
                d,
                " The log does not give the segment size: with the default NCCL_BUFFSIZE one \
                 segment is {DEFAULT_SHM_SEGMENT_BYTES} B ({}) in NCCL 2.12+, and a node needs \
                 about one per channel and SHM peer on each local rank.",
                human_bytes(DEFAULT_SHM_SEGMENT_BYTES)
            );
        }
    }
    d.push_str(" Docker gives a container 64 MiB of /dev/shm unless told otherwise.");
    if context.connections > 0 && context.shm_connections == 0 {
        d.push_str(
            " No connection in this log used the SHM transport, so the failing segment is \
             probably another NCCL user of /dev/shm (such as the proxy's shared buffers): \
             disabling SHM would not even remove it.",
        );
    }
    let gib = shm_size_gib(estimate_bytes);
    let fix = format!(
        "Give /dev/shm more room: `docker run --shm-size={gib}g ...` or share the host's with \
         `docker run --ipc=host`; on Kubernetes mount an `emptyDir: {{medium: Memory}}` volume \
         at /dev/shm (sizeLimit {gib}Gi or more)."
    );
    (d, fix)
}

pub(super) const IFNAME_FIX: &str =
    "Set NCCL_SOCKET_IFNAME on every node to the interface the nodes \
     reach each other on (`NCCL_SOCKET_IFNAME=eth0`: a name is a prefix, `=eth0` matches \
     exactly, `^docker0,lo` excludes instead)";

pub(super) fn socket_connect_text(failures: &[&Failure], log: &NcclLog) -> (String, String) {
    let mut d = String::from("NCCL could not open a TCP connection to a peer");
    let targets: BTreeSet<&str> = failures.iter().filter_map(|f| f.connect_target()).collect();
    if !targets.is_empty() {
        let _ = write!(
            d,
            " ({})",
            targets.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    d.push_str(
        ": refused, aborted or timed out. The address is the peer's NCCL socket interface; \
         usually it is one this node cannot reach (NCCL picked docker0, lo, a management \
         network or a link-local address), or a firewall drops the connection.",
    );
    let names = socket_interface_names(&log.interfaces);
    if !names.is_empty() {
        let _ = write!(d, " Socket interfaces in this log: {}.", names.join(", "));
    }
    if let Some((_, v)) = log.env.iter().find(|(n, _)| n == "NCCL_SOCKET_IFNAME") {
        let _ = write!(
            d,
            " NCCL_SOCKET_IFNAME is set to `{v}`: check it selects the right interface on \
             every node."
        );
    }
    let fix = format!(
        "{IFNAME_FIX}; check the peer address is reachable from this node (`ping`, `nc -vz \
         <addr> <port>`); allow TCP between the nodes on all ports in the firewall or security \
         group (NCCL listens on ephemeral ports)."
    );
    (d, fix)
}

/// Distinct interface names of the socket and bootstrap lines, and of the IB lines'
/// out-of-band interface.
pub(super) fn socket_interface_names<'a>(
    lines: impl IntoIterator<Item = &'a InterfaceLine>,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for n in lines.into_iter().flat_map(socket_names) {
        if !names.iter().any(|m| m == n) {
            names.push(n.to_string());
        }
    }
    names
}

/// The socket interfaces one line names: a socket or bootstrap line's own, or the one
/// after `OOB ` of a `NET/IB : Using` line. NCCL's IB transport picks that interface
/// as sockets do (NCCL_SOCKET_IFNAME), and its peers exchange queue-pair details over
/// it.
pub(super) fn socket_names(l: &InterfaceLine) -> Vec<&str> {
    if is_socket_source(&l.source) {
        return l.names.iter().map(String::as_str).collect();
    }
    super::hosts::oob_address(&l.text)
        .map(|(name, _)| name)
        .into_iter()
        .collect()
}

pub(super) fn is_socket_source(source: &str) -> bool {
    source == "NET/Socket" || source == "Bootstrap"
}

pub(super) fn socket_error_text(failures: &[&Failure]) -> (String, String) {
    let texts: Vec<String> = failures
        .iter()
        .map(|f| f.text.to_ascii_lowercase())
        .collect();
    let any = |s: &[&str]| texts.iter().any(|t| s.iter().any(|p| t.contains(p)));
    let mut d = String::from("A TCP connection between ranks failed after it was set up.");
    let peer_died = any(&[
        "closed",
        "reset",
        "recv failed",
        "broken pipe",
        "call to recv",
    ]);
    if peer_died {
        d.push_str(
            " `Connection closed by remote peer`, a reset or a failed recv mostly means the \
             peer process died or aborted first: this rank is a victim.",
        );
    }
    if any(&["wrong type", "magic", "unexpected"]) {
        d.push_str(
            " `wrong type` (an unexpected handshake) means something else answered on the \
             port NCCL connected to: a rank of another job or NCCL version, or bootstrap and \
             socket interfaces that resolve to different networks on different nodes.",
        );
    }
    if !peer_died && !any(&["wrong type", "magic", "unexpected"]) {
        d.push_str(" The peer may have died, or the network dropped the connection.");
    }
    let fix = format!(
        "Look at the other ranks' logs for the first error (a crash, OOM or kill there \
         explains this one); make sure every node runs the same NCCL version; {}.",
        lowercase_first(IFNAME_FIX)
    );
    (d, fix)
}

fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

pub(super) fn ib_error_text(lines: &[Line]) -> (String, String) {
    let mut d = String::from(
        "An InfiniBand/RoCE (ibverbs) operation failed: a port that is down or on another \
         fabric, a wrong GID index on RoCE, a memlock limit too low to register memory, or a \
         peer that went away.",
    );
    if lines.iter().any(|l| l.text.contains("error 12")) {
        d.push_str(
            " `error 12` is a transport retry timeout: the remote HCA did not answer (link \
             down, no route between the ports, or the peer died).",
        );
    }
    // A registration that fails with another errno than ENOMEM (`ib-memlock`): the
    // memory itself, not a port or a GID, is what the HCA refuses.
    let register = lines.iter().any(|l| {
        let t = l.text.to_ascii_lowercase();
        t.contains("reg_") && t.contains("mr") && t.contains("fail")
    });
    if register {
        d = String::from(
            "Memory registration with the HCA failed (ibv_reg_mr). With an errno other than \
             ENOMEM, the HCA refuses the memory itself: often GPU memory without GPU Direct \
             RDMA (nvidia-peermem or DMA-BUF).",
        );
        let fix = "Check that nvidia-peermem is loaded (`lsmod | grep peermem`) or that the \
                   driver supports DMA-BUF; NCCL_NET_GDR_LEVEL=0 tests the run without GPU \
                   Direct RDMA. Check `ulimit -l` inside a rank too."
            .to_string();
        return (d, fix);
    }
    // A queue pair or completion queue that could not be made, with no errno or
    // ENOMEM: its rings are locked memory, so the process's memlock limit.
    let created = lines.iter().find_map(|l| {
        let t = l.text.to_ascii_lowercase();
        let call = ["ibv_create_qp", "ibv_create_cq"]
            .into_iter()
            .find(|c| t.contains(c))?;
        (t.contains("fail") && (!t.contains(" error ") || t.contains("cannot allocate memory")))
            .then_some(call)
    });
    if let Some(call) = created {
        let what = if call == "ibv_create_qp" {
            "a queue pair"
        } else {
            "a completion queue"
        };
        d = format!(
            "Creating {what} failed ({call}). Its rings are locked memory, so the usual cause \
             is a locked-memory limit (`ulimit -l`) too low in the rank's process: containers \
             and Slurm job steps often get 64 KiB or 8 MiB. Asking the HCA for more than it has \
             fails the same way."
        );
        let fix = "Check `ulimit -l` inside a rank (under Slurm, `srun bash -c 'ulimit -l'`): it \
                   must be unlimited. Raise it where the rank inherits it: `--ulimit memlock=-1` \
                   for Docker, LimitMEMLOCK=infinity in slurmd's systemd unit and \
                   PropagateResourceLimitsExcept=MEMLOCK in slurm.conf (so that a login \
                   shell's low limit is not passed on), or memlock in \
                   /etc/security/limits.conf."
            .to_string();
        return (d, fix);
    }
    // A queue pair that cannot reach RTR in time: the peer's GID is not reachable from
    // this NIC (another rail, a wrong GID index or VLAN).
    let rtr_timeout = lines.iter().any(|l| {
        let t = l.text.to_ascii_lowercase();
        t.contains("ibv_modify_qp")
            && (t.contains("connection timed out") || t.contains("failed with 110"))
    });
    if rtr_timeout {
        d = String::from(
            "Moving a queue pair to RTR timed out (ibv_modify_qp, ETIMEDOUT): this NIC could \
             not reach the peer's GID. On a rail-optimised fabric a NIC reaches only the NICs \
             of its own rail on other nodes, and NCCL may pair NICs across rails; on RoCE a \
             wrong GID index or VLAN has the same effect.",
        );
        let fix = "Try NCCL_CROSS_NIC=0 on every node, so that each channel keeps to one rail; \
                   check the GID index (`show_gids`, NCCL_IB_GID_INDEX) and that each NIC \
                   reaches the peer's NIC of the same index \
                   (`ib_write_bw -d <dev> -x <gid index> <peer>`)."
            .to_string();
        return (d, fix);
    }
    let fix = "Choose the HCAs explicitly with NCCL_IB_HCA (e.g. `NCCL_IB_HCA=mlx5_0,mlx5_1`; \
               check the ports with `ibstat` or `ibv_devinfo`), set NCCL_IB_GID_INDEX on RoCE \
               (often 3 for RoCEv2), run containers with `ulimit -l unlimited` and \
               /dev/infiniband; test the path with `ib_write_bw` between the two nodes."
        .to_string();
    (d, fix)
}

/// What a quoted CUDA error means (cuda.toml): its name and meaning, and its usual
/// cause where a source gives one.
pub fn cuda_hint(text: &str) -> Option<String> {
    let driver = crate::nccl::log::cuda_error_code(text).is_some();
    let e = knowledge::cuda_error(crate::nccl::log::cuda_error_code(text), text, driver)?;
    let mut hint = format!(
        "{} ({}, `{}`): {}",
        e.name,
        e.code,
        e.text,
        lowercase_first(&e.means)
    );
    if e.source_usual.is_some() {
        let _ = write!(hint, " {}", e.usual);
    }
    Some(hint.trim_end_matches('.').to_string())
}

pub(super) fn cuda_failure_text(failures: &[&Failure], others: &[FindingKind]) -> (String, String) {
    let mut d = String::from(
        "A CUDA call inside NCCL failed (`Cuda failure`, ncclUnhandledCudaError); the quoted \
         CUDA error says which.",
    );
    if others.contains(&FindingKind::NvlsBind) {
        d.push_str(
            " Here it is the NVLS multicast bind (finding nvls-bind): see that finding's fix.",
        );
        let fix = "As for nvls-bind.".to_string();
        return (d, fix);
    }
    let mut hints: Vec<String> = Vec::new();
    for f in failures {
        if let Some(h) = cuda_hint(&f.text) {
            if !hints.contains(&h) {
                hints.push(h);
            }
        }
    }
    if hints.is_empty() {
        d.push_str(
            " Common causes: a driver older than the CUDA runtime, a GPU architecture the \
             build lacks, out of memory, or a GPU in a bad state (Xid errors in dmesg).",
        );
    } else {
        for h in hints {
            let _ = write!(d, " Here: {h}.");
        }
    }
    let steps: Vec<&str> = failures
        .iter()
        .filter_map(|f| {
            let code = crate::nccl::log::cuda_error_code(&f.text);
            knowledge::cuda_error(code, &f.text, code.is_some())?
                .fix
                .as_deref()
        })
        .collect();
    let mut fix = String::new();
    if let Some(first) = steps.first() {
        let _ = write!(fix, "{first} If the error stays: ");
    }
    fix.push_str(
        "check `nvidia-smi` and dmesg (Xid errors); match the driver, CUDA runtime and NCCL \
         versions; rerun with NCCL_DEBUG=INFO to see the call that failed.",
    );
    (d, fix)
}

pub(super) fn system_error_text(others: &[FindingKind]) -> (String, String) {
    let mut d = String::from(
        "`unhandled system error` (ncclSystemError): a system call or external library inside \
         NCCL failed. The message names no cause; usually it is a resource limit (/dev/shm \
         too small, `ulimit -l` for IB memory registration, open files) or a failed socket or \
         shm call, reported by an NCCL WARN line just before it in the failing rank's log.",
    );
    let specific: Vec<&str> = others
        .iter()
        .filter(|k| !matches!(k, FindingKind::RemoteError | FindingKind::SystemError))
        .map(|k| k.as_str())
        .collect();
    if !specific.is_empty() {
        let _ = write!(
            d,
            " Here the other finding(s) ({}) are the likely cause.",
            specific.join(", ")
        );
    }
    let fix = "Read the first NCCL WARN of the failing rank; if the log has none, rerun with \
               NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (and NCCL_DEBUG_FILE=nccl.%h.%p.log \
               for one file per process)."
        .to_string();
    (d, fix)
}
