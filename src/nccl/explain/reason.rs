//! Reasoning across lines: what a setting says against what the log then shows (an
//! interface that is not among those NCCL found, a topology file for another machine), ranks on one machine that talk over the network,
//! processes that each ran alone, a GPU index a process cannot see, and crashes.

use std::collections::BTreeSet;

use super::finding::{Finding, FindingKind, Severity};
use super::pasted::{cut, message, Pasted, PastedLine};
use super::signatures::Placed;
use crate::nccl::log::{NcclLog, TransportKind};

/// An address in Docker's default bridge network, 172.17.0.0/16.
pub(super) fn is_docker_bridge(address: &str) -> bool {
    address.starts_with("172.17.")
}

/// The value of variable `name`: as NCCL shows it (`set by environment to`), else as
/// the paste sets it (`export NAME=V`, `-x NAME=V`, `NAME=V command`).
pub(super) fn setting(log: &NcclLog, pasted: &Pasted, name: &str) -> Option<String> {
    if let Some((_, v)) = log.env.iter().find(|(n, _)| n == name) {
        return Some(v.clone());
    }
    pasted_setting(pasted, name)
}

/// The value of variable `name` as `--env` gives it, else as `setting` finds it.
pub(super) fn given_setting(
    given: &[(String, String)],
    log: &NcclLog,
    pasted: &Pasted,
    name: &str,
) -> Option<String> {
    given
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .or_else(|| setting(log, pasted, name))
}

/// `NAME=V` as a command line or script in the paste sets it, or Python's
/// `os.environ["NAME"] = "V"`.
pub(super) fn pasted_setting(pasted: &Pasted, name: &str) -> Option<String> {
    let key = format!("{name}=");
    let python = |text: &str| -> Option<String> {
        let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let rest = ["\"", "'"].iter().find_map(|q| {
            squeezed
                .split_once(&format!("os.environ[{q}{name}{q}]="))
                .map(|(_, r)| r)
        })?;
        // An assignment of a quoted value: not `==`, nor an expression.
        let quoted = rest.strip_prefix(['"', '\''])?;
        let value: String = quoted
            .chars()
            .take_while(|c| !matches!(c, '"' | '\''))
            .collect();
        (!value.is_empty()).then_some(value)
    };
    if let Some(v) = pasted.lines.iter().find_map(|l| python(l.text)) {
        return Some(v);
    }
    pasted.lines.iter().find_map(|l| {
        let at = l.text.find(&key)?;
        // `NCCL_SOCKET_IFNAME=eth0`, not `MY_NCCL_SOCKET_IFNAME=`.
        let before = l.text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        assigned_value(&l.text[at + key.len()..])
    })
}

/// The value at the start of `rest`, the text after `NAME=`: its quotes left out, up
/// to a space, a quote, a backtick or `;`. `None` when that is empty.
pub(super) fn assigned_value(rest: &str) -> Option<String> {
    let value: String = rest
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '`' | ';'))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// Whether interface `name` is selected by an NCCL_SOCKET_IFNAME value: a list of
/// prefixes, `=` for exact names, `^` to exclude.
fn selects(value: &str, name: &str) -> bool {
    let (exclude, list) = match value.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let (exact, list) = match list.strip_prefix('=') {
        Some(rest) => (true, rest),
        None => (false, list),
    };
    let hit = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .any(|p| {
            if exact {
                name == p
            } else {
                name.starts_with(p)
            }
        });
    hit != exclude
}

/// NCCL_SOCKET_IFNAME names no interface this host has: NCCL says it found none, or
/// fails later on an address of no family (2.27), or the interfaces it lists do not
/// match the value.
pub(super) fn ifname_rule(log: &NcclLog, pasted: &Pasted) -> Option<Placed> {
    let value = setting(log, pasted, "NCCL_SOCKET_IFNAME")?;
    let signs: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            l.lower.contains("no socket interface found")
                || l.lower.contains("nor af_inet6")
                || l.lower.contains("no usable listening interface")
        })
        .collect();
    let found: Vec<&String> = log
        .interfaces
        .iter()
        .filter(|i| i.source == "NET/Socket" || i.source == "Bootstrap")
        .flat_map(|i| i.names.iter())
        .collect();
    let mismatch = !found.is_empty() && !found.iter().any(|n| selects(&value, n));
    // A value forced on every process by the launcher, an internal error, and no line
    // where NCCL names the interface it found: the value may name none on some host.
    let forced = pasted_setting(pasted, "NCCL_SOCKET_IFNAME").is_some() && found.is_empty();
    let signs: Vec<&PastedLine> = if signs.is_empty() && forced {
        pasted
            .lines
            .iter()
            .filter(|l| l.lower.contains("internal error"))
            .take(1)
            .collect()
    } else {
        signs
    };
    if signs.is_empty() && !mismatch {
        return None;
    }
    let mut lines: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| l.text.contains("NCCL_SOCKET_IFNAME"))
        .take(1)
        .collect();
    lines.extend(signs.iter().copied());
    let found_text = if found.is_empty() {
        String::new()
    } else {
        let names: BTreeSet<&str> = found.iter().map(|s| s.as_str()).collect();
        format!(
            " (it uses {})",
            names.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    let (leaves, matched) = if value.starts_with('^') {
        (
            "leaves no interface",
            "its `^` list leaves NCCL no socket interface: it excludes every other interface \
             of this host, or those left have no usable address",
        )
    } else {
        (
            "matches no interface",
            "NCCL found no interface by that name",
        )
    };
    let evidence = super::evidence::distinct(lines.iter().map(|l| pasted.evidence(l)));
    let finding = Finding::new(
        FindingKind::IfnameNoMatch,
        evidence,
        &[
            ("leaves", leaves.to_string()),
            ("matched", matched.to_string()),
            ("value", value),
            ("found", found_text),
        ],
    );
    Some(Placed {
        finding,
        lines: lines.iter().map(|l| (l.file, l.number)).collect(),
    })
}

/// A topology or graph file in use (set, or loaded) with a failure or a device it
/// cannot find: the file was written for another machine.
pub(super) fn topology_file_rule(log: &NcclLog, pasted: &Pasted) -> Option<Placed> {
    let mut files: Vec<String> = ["NCCL_GRAPH_FILE", "NCCL_TOPO_FILE"]
        .iter()
        .filter_map(|n| setting(log, pasted, n).map(|v| format!("{n}={v}")))
        .collect();
    if files.is_empty() {
        let loaded = pasted.lines.iter().find_map(|l| {
            l.text
                .split_once("Loading topology file ")
                .map(|(_, f)| f.trim())
        })?;
        files.push(format!("the topology file {loaded}"));
    }
    let errors: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            l.lower.contains("xml import")
                || (l.lower.contains(" dev ") && l.lower.contains("not found"))
        })
        .collect();
    let failed = !errors.is_empty() || !log.failures.is_empty();
    let text = errors
        .first()
        .map(|l| cut(message(l.text)))
        .unwrap_or_else(|| "a failure at init".to_string());
    let shown: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            l.text.contains("NCCL_GRAPH_FILE")
                || l.text.contains("NCCL_TOPO_FILE")
                || l.text.contains("Loading topology file")
        })
        .take(2)
        .chain(errors.iter().copied())
        .collect();
    let evidence = super::evidence::distinct(shown.iter().map(|l| pasted.evidence(l)));
    let mut finding = Finding::new(
        FindingKind::TopologyFile,
        evidence,
        &[("files", files.join(" and ")), ("text", text)],
    );
    if !failed {
        finding = finding.with_severity(Severity::Warning);
        finding.cause = format!(
            "NCCL loads {}: a topology or graph file describes one machine, and a job on \
             other GPUs (fewer, or another size of VM) fails at init with it. The value may \
             come from the environment, /etc/nccl.conf or ~/.nccl.conf, which images set for \
             their largest size.",
            files.join(" and ")
        );
    }
    Some(Placed {
        finding,
        lines: errors.iter().map(|l| (l.file, l.number)).collect(),
    })
}

/// A process crashed on a signal; the frames after it name NCCL where they do.
pub(super) fn crash_rule(pasted: &Pasted) -> Option<Placed> {
    let signs = [
        "*** process received signal ***",
        "caught signal 11",
        "segmentation fault",
        "sigsegv",
        "signal 11",
        "segfault encountered",
        "sigbus",
        "caught signal 7 ",
        "signal 7 (bus error",
        "bus error (core dumped)",
        // Open MPI's handler: `Signal: Bus error (7)`.
        "signal: bus error",
    ];
    let hits: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| signs.iter().any(|s| l.lower.contains(s)))
        .collect();
    let first = hits.first()?;
    // Not dmesg's `PCIe Bus Error`: a signal.
    let bus = hits.iter().any(|l| {
        l.lower.contains("sigbus")
            || l.lower.contains("signal 7")
            || l.lower.contains("bus error (core")
            || l.lower.contains("signal: bus error")
    });
    let signal = if bus {
        "SIGBUS, a bus error"
    } else if first.lower.contains("abort") {
        "SIGABRT"
    } else {
        "SIGSEGV, a segmentation fault"
    };
    let nccl_frames: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            l.lower.contains("libnccl")
                || l.text.contains("ncclCuMem")
                || l.text.contains("rasMsg")
                || l.text.contains("ncclGroupEnd")
                || l.text.contains("ncclComm")
                || l.text.contains("ncclShm")
                || l.text.contains("ncclProxy")
        })
        .collect();
    let inside = if nccl_frames.is_empty() {
        String::new()
    } else {
        " in NCCL's code (its frames are in the backtrace)".to_string()
    };
    let lines: Vec<&PastedLine> = hits.iter().copied().chain(nccl_frames).collect();
    let evidence = super::evidence::distinct(lines.iter().map(|l| pasted.evidence(l)));
    // SIGBUS where NCCL runs is its /dev/shm mapping touched past what the tmpfs holds;
    // so is one beside a listing of /dev/shm (`df -h`: the poster suspected it too).
    let shm = pasted.contains("nccl") || pasted.contains("/dev/shm");
    let finding = if bus && (!inside.is_empty() || shm) {
        Finding::new(FindingKind::ShmSigbus, evidence, &[("inside", inside)])
    } else {
        Finding::new(
            FindingKind::Crash,
            evidence,
            &[("signal", signal.to_string()), ("inside", inside)],
        )
    }
    .with_occurrences(hits.len());
    Some(Placed {
        finding,
        lines: lines.iter().map(|l| (l.file, l.number)).collect(),
    })
}

/// Every rank alone on its host (all traffic over the network, or as many nodes as
/// ranks), on hosts that look like containers or pods of one machine: NCCL took one
/// machine's ranks for separate nodes.
pub(super) fn net_inside_node_rule(log: &NcclLog) -> Option<Finding> {
    let all_net = !log.connections.is_empty()
        && log
            .connections
            .iter()
            .all(|c| c.transport.kind == TransportKind::Net);
    // Without connection lines: as many nodes as ranks (`nNodes 2` for `nranks 2`).
    let nranks = log.ranks.iter().map(|r| r.nranks).max().unwrap_or(0);
    let nodes = log.nnodes.iter().copied().max().unwrap_or(0);
    let all_alone = log.connections.is_empty() && nranks >= 2 && nodes == nranks;
    if !all_net && !all_alone {
        return None;
    }
    let hosts: BTreeSet<&str> = log
        .connections
        .iter()
        .filter_map(|c| c.host.as_deref())
        .chain(log.ranks.iter().map(|r| r.host.as_str()))
        .filter(|h| !h.is_empty())
        .collect();
    // Docker's 12 hex digits, or a Kubernetes job's pod (`job-worker-0`, `job-master-0`).
    let container = |h: &&str| {
        (h.len() == 12 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            || ["-worker-", "-master-", "-launcher"]
                .iter()
                .any(|p| h.contains(p))
    };
    if hosts.len() < 2 || !hosts.iter().all(container) {
        return None;
    }
    // One bus id under two hosts: two machines (a machine's GPUs have distinct ones).
    let mut hosts_of_bus: std::collections::BTreeMap<&str, BTreeSet<&str>> = Default::default();
    for r in &log.ranks {
        if let Some(bus) = r.bus_id.as_deref() {
            hosts_of_bus.entry(bus).or_default().insert(r.host.as_str());
        }
    }
    if hosts_of_bus.values().any(|h| h.len() > 1) {
        return None;
    }
    let names = hosts.iter().copied().collect::<Vec<_>>().join(", ");
    let detail = if all_net {
        format!(
            "Every connection goes over the network ({}), between hosts named like \
             containers ({names})",
            log.transports_cell().replace(';', ", ")
        )
    } else {
        format!(
            "NCCL counts {nodes} nodes for {nranks} ranks (`nNodes {nodes}`), on hosts named \
             like containers or pods ({names}); if they share a machine"
        )
    };
    Some(Finding::new(
        FindingKind::NetInsideNode,
        Vec::new(),
        &[("detail", detail)],
    ))
}

/// The launcher settings around `invalid device ordinal` and what to do about them:
/// Slurm's per-task binding, nccl-tests' `-g N` in several processes per host, or
/// neither.
pub(super) fn ordinal_words(pasted: Option<&Pasted>) -> (String, String) {
    let flag = pasted.and_then(|p| {
        [
            "--gpus-per-task",
            "gpus-per-task",
            "per_task",
            "--ntasks-per-gpu",
            "--gpu-bind",
        ]
        .iter()
        .find_map(|f| {
            p.lines.iter().find(|l| l.text.contains(f)).map(|l| {
                let word = l
                    .text
                    .split_whitespace()
                    .find(|w| w.contains(f))
                    .unwrap_or(f)
                    .trim_start_matches("#SBATCH")
                    .to_string();
                word
            })
        })
    });
    if let Some(flag) = flag {
        return (
            format!(
                " under Slurm's per-task GPU binding (`{flag}` in the paste): each task's \
                 CUDA_VISIBLE_DEVICES holds only its own GPU, as device 0, so a process that \
                 picks its device by local rank (LOCAL_RANK, SLURM_LOCALID), or reaches a \
                 peer's GPU, asks for one it cannot see"
            ),
            "Request the GPUs per node (`--gpus-per-node=N` or `--gres=gpu:N`, with \
             `--tres-bind=gres/gpu:none` or `--gpu-bind=none`) instead of --gpus-per-task, so \
             every task sees every GPU of its node and picks its own by local rank; or keep \
             the per-task binding and use device 0 in each process (nccl-tests: -g 1)."
                .to_string(),
        );
    }
    let launched = |p: &Pasted| p.contains("mpirun") || p.contains("srun") || p.contains("-np ");
    let gpus_each = pasted
        .and_then(|p| {
            p.lines.iter().find_map(|l| {
                let words: Vec<&str> = l.text.split_whitespace().collect();
                let g = words.windows(2).find(|w| w[0] == "-g").map(|w| w[1])?;
                let g: u32 = g.parse().ok()?;
                (g > 1).then_some(g)
            })
        })
        .filter(|_| pasted.is_some_and(launched));
    if let Some(g) = gpus_each {
        return (
            format!(
                ": nccl-tests runs with -g {g} in each of several processes, so each process \
                 asks for {g} GPUs of its node"
            ),
            format!(
                "Launch one process per GPU with -g 1 (-np = total GPUs), or one per node \
                 with -g {g} (-np = nodes): a node's processes share its GPUs."
            ),
        );
    }
    // nccl-tests under a launcher gives each process GPU local rank x -t x -g, its local
    // rank counted among the processes with its host name (common.cu).
    let tests = pasted.filter(|p| p.contains("test cuda failure") && launched(p));
    if let Some(p) = tests {
        // Several hosts named to the launcher: one host name on several nodes counts
        // them all as one.
        let hosts = p.lines.iter().any(|l| {
            l.text
                .split_whitespace()
                .any(|w| matches!(w, "-H" | "--host" | "-host" | "--hostfile" | "-hostfile"))
        });
        let (shared, check) = if hosts {
            (
                ", or several nodes that report one host name (nccl-tests then counts their \
                 processes as one node's)",
                "`hostname` and `nvidia-smi -L`",
            )
        } else {
            ("", "`nvidia-smi -L`")
        };
        return (
            format!(
                ": nccl-tests gives each process the GPU at its local rank x -t x -g, counting \
                 local ranks among the processes with its host name, so more processes on a \
                 host than GPUs it sees (CUDA_VISIBLE_DEVICES, the launcher's binding{shared}) \
                 asks for GPUs it lacks"
            ),
            format!(
                "Run {check} through the same launcher and compare: each host needs -t x -g \
                 visible GPUs per process on it (the launcher's slots, -map-by, a per-task \
                 binding)."
            ),
        );
    }
    (
        ": the process sees fewer GPUs than the index it picks (CUDA_VISIBLE_DEVICES, the \
         launcher's binding, or a device index from the rank instead of the local rank)"
            .to_string(),
        "Check what each process sees (`nvidia-smi -L` through the same launcher, and \
         CUDA_VISIBLE_DEVICES), and pick the device by local rank within it \
         (`torch.cuda.set_device(local_rank)`)."
            .to_string(),
    )
}

/// `invalid device ordinal` anywhere: a process asked for a GPU it cannot see.
pub(super) fn invalid_device_ordinal_rule(pasted: &Pasted) -> Option<Placed> {
    let (context, fix) = ordinal_words(Some(pasted));
    // Also a traceback ending in set_device under a per-task binding, where the error's
    // own line did not make it into the paste.
    let bound = context.contains("per-task");
    let hits: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            l.lower.contains("invalid device ordinal")
                || (bound && l.lower.contains("_cuda_setdevice("))
        })
        .collect();
    hits.first()?;
    let evidence = super::evidence::distinct(hits.iter().map(|l| pasted.evidence(l)));
    let finding = Finding::new(
        FindingKind::InvalidDeviceOrdinal,
        evidence,
        &[("context", context), ("fix", fix)],
    )
    .with_occurrences(hits.len());
    Some(Placed {
        finding,
        lines: hits.iter().map(|l| (l.file, l.number)).collect(),
    })
}

/// Several processes that each built a communicator of one rank (`rank 0 nranks 1` in
/// their Init or Destroy lines): each ran as its own job.
pub(super) fn one_rank_jobs(log: &NcclLog, pasted: &Pasted) -> Option<Finding> {
    if log.ranks.iter().any(|r| r.nranks > 1) {
        return None;
    }
    // host:pid of each `rank 0 nranks 1` line.
    let alone: BTreeSet<(&str, &str)> = pasted
        .lines
        .iter()
        .filter(|l| l.lower.contains(" rank 0 nranks 1 "))
        .filter_map(|l| {
            let prefix = l.text.split_whitespace().next()?;
            let mut parts = prefix.split(':');
            Some((parts.next()?, parts.next()?))
        })
        .collect();
    if alone.len() < 2 {
        return None;
    }
    let hosts: BTreeSet<&str> = alone
        .iter()
        .map(|(h, _)| *h)
        .filter(|h| !h.is_empty())
        .collect();
    let on = if hosts.is_empty() {
        String::new()
    } else {
        format!(" (on {})", hosts.into_iter().collect::<Vec<_>>().join(", "))
    };
    let detail = format!(
        "{} processes{on} each built a communicator of one rank (rank 0 nranks 1)",
        alone.len()
    );
    Some(Finding::new(
        FindingKind::SeparateJobs,
        Vec::new(),
        &[("detail", detail)],
    ))
}
