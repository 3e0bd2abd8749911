//! What PyTorch's distributed errors say: watchdog timeouts (`WorkNCCL(SeqNum=...,
//! OpType=...)` per rank) and whether the ranks waited in the same collective, the
//! Flight Recorder's dump signal naming the rank that timed out first, a stuck watchdog,
//! torchrun's failure summary, and a TCPStore peer that went away.

use std::collections::{BTreeMap, BTreeSet};

use super::finding::{Finding, FindingKind};
use super::pasted::{cut, message, Pasted, PastedLine};
use super::signatures::Placed;

/// One rank's `Watchdog caught collective operation timeout: WorkNCCL(...)`.
#[derive(Debug, Clone, PartialEq)]
struct Timeout {
    rank: Option<u32>,
    /// The process: the global `[rank13]:` prefix where the line has one.
    process: Option<u32>,
    seq: u64,
    op: String,
    numel: Option<u64>,
    timeout_ms: Option<u64>,
    ran_ms: Option<u64>,
}

/// The value after `key` up to the next `,`, `)` or space.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    let end = rest.find([',', ')', ' ']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The rank a PyTorch line is about: `[Rank 3]`, else the `[rank3]:` prefix.
fn rank_of(text: &str) -> Option<u32> {
    let from = |key: &str| -> Option<u32> {
        let rest = &text[text.find(key)? + key.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    from("[Rank ").or_else(|| from("[rank"))
}

fn timeout_of(line: &PastedLine) -> Option<Timeout> {
    if !line.text.contains("WorkNCCL(SeqNum=") {
        return None;
    }
    let number = |key: &str| field(line.text, key).and_then(|v| v.parse::<u64>().ok());
    Some(Timeout {
        rank: rank_of(line.text),
        process: line.text.find("[rank").and_then(|at| {
            let digits: String = line.text[at + 5..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        }),
        seq: number("SeqNum=")?,
        op: field(line.text, "OpType=")?.to_string(),
        numel: number("NumelIn="),
        timeout_ms: number("Timeout(ms)="),
        ran_ms: field(line.text, "ran for ").and_then(|v| v.parse().ok()),
    })
}

/// The findings of PyTorch's lines, and the lines they place.
pub(super) fn torch_findings(pasted: &Pasted) -> Vec<Placed> {
    let mut out = Vec::new();
    out.extend(timeouts(pasted));
    out.extend(invalid_argument(pasted));
    out.extend(dump_signal(pasted));
    out.extend(watchdog_stuck(pasted));
    out.extend(child_failed(pasted));
    out.extend(tcpstore(pasted));
    out.extend(build_lacks_arch(pasted));
    out.extend(srun_torchrun(pasted));
    out
}

/// `srun torchrun ...` under several tasks per node, and ranks that then share a GPU
/// (`Duplicate GPU detected`): each of srun's tasks is a torchrun with its own workers.
fn srun_torchrun(pasted: &Pasted) -> Option<Placed> {
    pasted.first("duplicate gpu detected")?;
    let launch = pasted.lines.iter().find(|l| {
        let words: Vec<&str> = l.lower.split_whitespace().collect();
        words.windows(2).any(|w| {
            w[0].ends_with("srun")
                && (w[1] == "torchrun"
                    || (w[1] == "python" && l.lower.contains("torch.distributed.run")))
        })
    })?;
    // One task per node leaves one torchrun per node, which is right.
    let one_task = pasted.lines.iter().any(|l| {
        l.lower
            .split_whitespace()
            .any(|w| w.trim_start_matches('-') == "ntasks-per-node=1")
    });
    if one_task {
        return None;
    }
    let finding = Finding::new(
        FindingKind::SrunTorchrun,
        vec![pasted.evidence(launch)],
        &[("evidence", cut(message(launch.text)))],
    );
    Some(placed(finding, &[launch]))
}

fn placed(finding: Finding, lines: &[&PastedLine]) -> Placed {
    Placed {
        finding,
        lines: lines.iter().map(|l| (l.file, l.number)).collect(),
    }
}

pub(super) fn ranks_words(ranks: &BTreeSet<u32>) -> String {
    let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
    match list.len() {
        0 => "a rank".to_string(),
        1 => format!("rank {}", list[0]),
        _ => format!("ranks {}", list.join(", ")),
    }
}

/// Watchdog timeouts: one finding, and a second where the ranks waited in different
/// collectives.
fn timeouts(pasted: &Pasted) -> Vec<Placed> {
    let lines: Vec<(&PastedLine, Timeout)> = pasted
        .lines
        .iter()
        .filter_map(|l| timeout_of(l).map(|t| (l, t)))
        .collect();
    let frames: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            l.text.contains("WorkNCCL::checkTimeout")
                || l.lower
                    .contains("watchdog caught collective operation timeout")
        })
        .collect();
    if lines.is_empty() && frames.is_empty() {
        return Vec::new();
    }
    let mut shown: Vec<&PastedLine> = lines.iter().map(|(l, _)| *l).collect();
    if shown.is_empty() {
        shown = frames.clone();
    }
    let evidence = super::evidence::distinct(shown.iter().map(|l| pasted.evidence(l)));
    let n = shown.len();
    let (summary, detail) = match lines.first() {
        Some((_, t)) => {
            let ranks: BTreeSet<u32> = lines.iter().filter_map(|(_, t)| t.rank).collect();
            let progress = pasted
                .lines
                .iter()
                .find(|l| {
                    l.text.contains("last completed NCCL work")
                        || l.text.contains("last completed work")
                })
                .map(|l| {
                    let enq = field(l.text, "last enqueued NCCL work: ")
                        .or_else(|| field(l.text, "last enqueued work: "))
                        .map(|v| v.trim_end_matches('.').to_string());
                    let done = field(l.text, "last completed NCCL work: ")
                        .or_else(|| field(l.text, "last completed work: "))
                        .map(|v| v.trim_end_matches('.').to_string());
                    match (enq, done) {
                        (Some(e), Some(d)) => format!(
                            " The last collective completed was #{d}; #{e} was already enqueued."
                        ),
                        _ => String::new(),
                    }
                })
                .unwrap_or_default();
            let timeout = t
                .timeout_ms
                .map(|ms| format!(" (timeout {} s)", ms / 1000))
                .unwrap_or_default();
            let numel = t
                .numel
                .map(|n| format!(" of {n} elements"))
                .unwrap_or_default();
            // The process group's first collective (PyTorch counts from 1): no rank had got
            // through one, so the path between the GPUs is the likelier suspect.
            let p2p = matches!(t.op.as_str(), "SEND" | "RECV" | "_SEND" | "_RECV");
            let first = if t.seq <= 1 && !p2p {
                " It is the process group's first collective: either a rank never arrived \
                 (still loading, or dead: look for its traceback), or the path between the GPUs \
                 never delivered (P2P blocked by PCI ACS or the IOMMU, a driver version that \
                 breaks it, the network between nodes). NCCL_DEBUG=INFO shows how far set-up \
                 got; nccl-tests' all_reduce_perf on the same GPUs and driver tells NCCL apart \
                 from the program."
            } else {
                ""
            };
            // The P2P test, for GPUs of one host: not where the paste names several.
            let hosts: BTreeSet<String> = pasted
                .lines
                .iter()
                .filter_map(|l| super::first::host_pid(l.text))
                .filter_map(|hp| hp.rsplit_once(':').map(|(h, _)| h.to_string()))
                .collect();
            let p2p_test = if !first.is_empty() && hosts.len() < 2 {
                " Once every rank is known to have reached it, and all ranks are on one host, \
                 a test run that passes with NCCL_P2P_DISABLE=1 means P2P between the GPUs is \
                 broken (ACS, the IOMMU or the driver version): fix that, then drop the \
                 variable."
            } else {
                ""
            };
            (
                format!("{} #{} on {}", t.op, t.seq, ranks_words(&ranks)),
                format!(
                    "{} waited {} in {} #{}{numel}{timeout}.{progress}{first}{p2p_test}",
                    crate::units::capitalized(&ranks_words(&ranks)),
                    t.ran_ms
                        .map(|ms| format!("{} s", ms / 1000))
                        .unwrap_or_else(|| "until the timeout".to_string()),
                    t.op,
                    t.seq
                ),
            )
        }
        None => (
            "the watchdog's timeout".to_string(),
            "PyTorch's watchdog found a collective that ran past its timeout.".to_string(),
        ),
    };
    let detail = detail + &super::busy::busy_words(pasted);
    let timeout = Finding::new(
        FindingKind::TorchTimeout,
        evidence,
        &[("summary", summary), ("detail", detail)],
    )
    .with_occurrences(n);
    let mut out = vec![placed(timeout, &shown)];
    // Different collectives at one sequence number, or different sequence numbers in
    // one process group: the ranks were not in step.
    let by_seq: BTreeMap<u64, BTreeSet<(String, Option<u64>)>> =
        lines.iter().fold(BTreeMap::new(), |mut m, (_, t)| {
            m.entry(t.seq).or_default().insert((t.op.clone(), t.numel));
            m
        });
    let apart: Vec<String> = by_seq
        .iter()
        .filter(|(_, ops)| ops.len() > 1)
        .map(|(seq, ops)| {
            let ops: Vec<String> = ops
                .iter()
                .map(|(op, n)| match n {
                    Some(n) => format!("{op} of {n} elements"),
                    None => op.clone(),
                })
                .collect();
            format!("SeqNum={seq}: {}", ops.join(" and "))
        })
        .collect();
    let seqs: BTreeSet<u64> = lines.iter().map(|(_, t)| t.seq).collect();
    let ops: BTreeSet<(&str, Option<u64>)> = lines
        .iter()
        .map(|(_, t)| (t.op.as_str(), t.numel))
        .collect();
    // One process at two sequence numbers: timeouts of two process groups, whose
    // numbers do not compare.
    let mut per_rank: BTreeMap<Option<u32>, BTreeSet<u64>> = BTreeMap::new();
    for (_, t) in &lines {
        per_rank
            .entry(t.process.or(t.rank))
            .or_default()
            .insert(t.seq);
    }
    let one_group = per_rank.values().all(|s| s.len() == 1);
    let detail = if !apart.is_empty() {
        Some(apart.join("; "))
    } else if seqs.len() > 1 && ops.len() > 1 && one_group {
        let each: Vec<String> = lines
            .iter()
            .map(|(_, t)| {
                format!(
                    "{} in {} SeqNum={}{}",
                    t.rank
                        .map(|r| format!("rank {r}"))
                        .unwrap_or_else(|| "a rank".into()),
                    t.op,
                    t.seq,
                    t.numel
                        .map(|n| format!(" of {n} elements"))
                        .unwrap_or_default()
                )
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Some(each.join(", "))
    } else {
        None
    };
    if let Some(detail) = detail {
        let f = Finding::new(
            FindingKind::TorchMismatch,
            Vec::new(),
            &[("detail", detail)],
        );
        out.push(placed(f, &[]));
    }
    out
}

/// `Received a dump signal due to a collective timeout from rank 6`.
fn dump_signal(pasted: &Pasted) -> Option<Placed> {
    let key = "due to a collective timeout from";
    let line = pasted.lines.iter().find(|l| l.text.contains(key))?;
    let rest = &line.text[line.text.find(key)? + key.len()..];
    let rank: String = rest
        .trim_start()
        .trim_start_matches("rank")
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if rank.is_empty() {
        return None;
    }
    let f = Finding::new(
        FindingKind::TorchDumpSignal,
        vec![pasted.evidence(line)],
        &[("rank", rank)],
    );
    Some(placed(f, &[line]))
}

/// `ProcessGroupNCCL's watchdog got stuck for 480 seconds`.
fn watchdog_stuck(pasted: &Pasted) -> Option<Placed> {
    let line = pasted.first("watchdog got stuck for ")?;
    let seconds = field(line.text, "got stuck for ")
        .unwrap_or("many")
        .to_string();
    let f = Finding::new(
        FindingKind::TorchWatchdogStuck,
        vec![pasted.evidence(line)],
        &[("seconds", seconds)],
    );
    Some(placed(f, &[line]))
}

/// torchrun's `ChildFailedError` summary: `exitcode : -6`, `Signal 6 (SIGABRT)`.
fn child_failed(pasted: &Pasted) -> Option<Placed> {
    let lines: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            (l.lower.contains("exitcode") && l.lower.contains("-6"))
                || l.text.contains("(SIGABRT) received by PID")
                || l.text.contains("ChildFailedError")
        })
        .collect();
    lines.first()?;
    let signal = if lines
        .iter()
        .any(|l| l.text.contains("SIGABRT") || l.text.contains("-6"))
    {
        "SIGABRT (exit code -6)"
    } else {
        "an error"
    };
    let root = pasted
        .lines
        .iter()
        .position(|l| l.text.contains("Root Cause (first observed failure)"))
        .and_then(|at| {
            pasted.lines[at..]
                .iter()
                .take(6)
                .find(|l| l.text.trim_start().starts_with("rank"))
        })
        .map(|l| {
            let which = l.text.trim().trim_start_matches("rank");
            format!(
                "; the first to fail was rank {}",
                which.trim_start_matches([' ', ':'])
            )
        })
        .unwrap_or_default();
    let f = Finding::new(
        FindingKind::TorchChildFailed,
        super::evidence::distinct(lines.iter().map(|l| pasted.evidence(l))),
        &[("signal", signal.to_string()), ("rank", root)],
    )
    .with_occurrences(lines.len());
    Some(placed(f, &lines))
}

/// TCPStore lost its peer: `recvValueWithTimeout failed on SocketImpl(..., remote=[host]:port)`.
fn tcpstore(pasted: &Pasted) -> Option<Placed> {
    let line = pasted.lines.iter().find(|l| {
        l.text.contains("TCPStore")
            && (l.lower.contains("failed") || l.lower.contains("connection reset"))
    })?;
    let peer = field(line.text, "remote=[")
        .map(|p| {
            p.trim_end_matches(']')
                .split("]:")
                .next()
                .unwrap_or(p)
                .to_string()
        })
        .unwrap_or_else(|| "the store's other side".to_string());
    let f = Finding::new(
        FindingKind::TcpstorePeerGone,
        vec![pasted.evidence(line)],
        &[("peer", peer), ("text", cut(message(line.text)))],
    );
    Some(placed(f, &[line]))
}

/// `ncclInvalidArgument` (`NCCL error in: ..., invalid argument`) and the `Last error:`
/// line that names the argument.
fn invalid_argument(pasted: &Pasted) -> Option<Placed> {
    let at = pasted.lines.iter().position(|l| {
        l.text.contains("ncclInvalidArgument")
            || (l.lower.contains("nccl error") && l.lower.contains("invalid argument"))
    })?;
    let error = &pasted.lines[at];
    // `Last error:` then the text on its own line (PyTorch 2.x), or on the same line.
    let last = pasted.lines[at..]
        .iter()
        .position(|l| l.text.contains("Last error:"))
        .map(|i| at + i);
    let detail_line = last.and_then(|i| {
        let same = pasted.lines[i].text.split_once("Last error:")?.1.trim();
        if same.is_empty() {
            pasted.lines[i + 1..]
                .iter()
                .find(|l| !l.text.trim().is_empty())
        } else {
            Some(&pasted.lines[i])
        }
    });
    let detail = detail_line
        .map(|l| {
            let t = l.text.split_once("Last error:").map_or(l.text, |(_, t)| t);
            t.trim().trim_matches('`').to_string()
        })
        .unwrap_or_else(|| message(error.text).to_string());
    let lower = detail.to_ascii_lowercase();
    // `..., invalid argument, NCCL version 2.14.3`: the library that refused.
    let loaded = error
        .text
        .split_once("NCCL version ")
        .and_then(|(_, v)| v.split_whitespace().next())
        .map(|v| format!(" {}", v.trim_end_matches(['.', ','])))
        .unwrap_or_default();
    let config_meaning = format!(
        "A field of the communicator config (ncclConfig_t) the caller filled in has a value \
         this NCCL{loaded} does not accept; PyTorch fills it in, so this points at a PyTorch \
         built for a newer NCCL than the one loaded: two NCCL libraries are installed and \
         the old one is found first."
    );
    let (meaning, fix) = if lower.contains("not a valid pointer") {
        (
            "The buffer the caller passed is not CUDA memory NCCL can use (`(nil)`: no \
             buffer at all).",
            "Give the collective an allocated CUDA tensor on every rank, on the rank's own \
             GPU (not an empty or CPU tensor); nothing needs changing in NCCL.",
        )
    } else if lower.contains("config") && lower.contains("attribute") {
        (
            config_meaning.as_str(),
            "Find them with `pip list | grep nccl`. Keep the NCCL this PyTorch release pins \
             (its requirements name the nvidia-nccl wheel) and remove the others, or the \
             LD_LIBRARY_PATH or LD_PRELOAD that picks one.",
        )
    } else {
        (
            "An argument of the call (a buffer, the count, the data type, the root or the \
             communicator) is one NCCL does not accept.",
            "Check the failing call's arguments on every rank: buffers allocated on the \
             rank's own GPU, the same count and data type everywhere; NCCL_DEBUG=WARN \
             names the argument.",
        )
    };
    let lines: Vec<&PastedLine> = std::iter::once(error).chain(detail_line).collect();
    let finding = Finding::new(
        FindingKind::InvalidArgument,
        lines.iter().map(|l| pasted.evidence(l)).collect(),
        &[
            ("detail", cut(&detail)),
            ("meaning", meaning.to_string()),
            ("fix", fix.to_string()),
        ],
    );
    Some(placed(finding, &lines))
}

/// PyTorch's warning that the GPU is newer than the build: `NVIDIA GeForce RTX 5090 with
/// CUDA capability sm_120 is not compatible with the current PyTorch installation.`,
/// and the list the build supports on the line after it.
fn build_lacks_arch(pasted: &Pasted) -> Option<Placed> {
    const WARNING: &str = " with CUDA capability sm_";
    let at = pasted
        .lines
        .iter()
        .position(|l| l.text.contains(WARNING) && l.text.contains("not compatible"))?;
    let line = &pasted.lines[at];
    let (gpu, rest) = line.text.split_once(WARNING)?;
    let sm: u32 = rest
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    // `/path/torch/cuda/__init__.py:104: UserWarning: A40`: the GPU after the prefix.
    let gpu = gpu
        .rsplit_once("UserWarning:")
        .map_or(gpu, |(_, g)| g)
        .trim()
        .to_string();
    let supported = pasted.lines[at..]
        .iter()
        .find_map(|l| l.text.split_once("supports CUDA capabilities "))
        .map(|(_, list)| list.trim().trim_end_matches('.').to_string());
    // The oldest architecture the build has code for: a GPU below it was dropped.
    let oldest = supported.as_deref().and_then(|list| {
        list.split_whitespace()
            .filter_map(|w| w.strip_prefix("sm_")?.parse::<u32>().ok())
            .min()
    });
    let cuda = crate::nccl::knowledge::arch_of_sm(sm).and_then(|a| a.first_cuda.clone());
    let index = cuda
        .as_deref()
        .map(|c| {
            format!(
                ", e.g. `--index-url https://download.pytorch.org/whl/cu{}`",
                c.replace('.', "")
            )
        })
        .unwrap_or_default();
    let arch = format!("sm_{sm}");
    let list = supported.unwrap_or_else(|| "other GPUs only".to_string());
    let mut f = Finding::new(
        FindingKind::TorchArch,
        vec![pasted.evidence(line)],
        &[
            ("gpu", gpu.clone()),
            ("arch", arch.clone()),
            ("supported", list.clone()),
            ("cuda", cuda.clone().unwrap_or_default()),
            ("index", index),
        ],
    );
    let check = "check with `python -c 'import torch; print(torch.cuda.get_arch_list())'`";
    if oldest.is_some_and(|o| sm < o) {
        f.title = format!("this PyTorch build no longer has code for the {gpu} ({arch})");
        f.cause = format!(
            "PyTorch says the {gpu} ({arch}) is not compatible with it: this build supports \
             {list}, all newer than this GPU, so its kernels and the NCCL it bundles have no \
             code for it."
        );
        f.fix = format!(
            "Install a PyTorch build that still lists {arch} (an older release, or a wheel for \
             an older CUDA); {check}."
        );
    } else if cuda.is_none() {
        f.fix = format!(
            "Install a PyTorch built with a newer CUDA, whose list includes {arch}; {check}."
        );
    }
    Some(placed(f, &[line]))
}
