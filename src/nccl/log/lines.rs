//! The line grammar of NCCL logs, for [`super`]: where the `host:pid:tid [dev] NCCL INFO`
//! tag is, and what each message NCCL writes means (connection lines of every version,
//! transport spellings, NVLS and SHM-backing evidence, `Init` rank lines; failures are
//! `classify`'s). Functions of one line, no state.

use super::record::{Direction, NvlsUse, RankInfo, Transport, TransportKind};

/// The parts of a line NCCL prefixed with `host:pid:tid [dev] NCCL INFO`.
pub(super) struct Tagged<'a> {
    pub(super) level: Level,
    pub(super) host: Option<&'a str>,
    pub(super) pid: Option<u32>,
    pub(super) tid: Option<u32>,
    /// The CUDA device in `[3]` after `host:pid:tid`; `None` without a host prefix.
    pub(super) dev: Option<u32>,
    /// The source line NCCL names before the tag (`transport/nvls.cc:254`; WARN lines
    /// of 2.x), without the function name 2.28 adds after it.
    pub(super) source: Option<&'a str>,
    pub(super) message: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Info,
    Warn,
    Trace,
}

/// Splits `[prefix]host:pid:tid [dev] [file:line] NCCL INFO|WARN|TRACE message`. The
/// prefix (timestamp, `[1,0]<stdout>:`, `0: `, `[0] `) is whatever precedes the host;
/// lines posted without `host:pid:tid [dev]` still split, with no host.
pub(super) fn split_tagged(line: &str) -> Option<Tagged<'_>> {
    let (start, level, end) = find_level_tag(line).or_else(|| find_old_level_tag(line))?;
    let header: Vec<&str> = line[..start].split_whitespace().collect();
    let dev_at = header.iter().rposition(|t| is_dev_token(t));
    let (host, pid, tid) = match dev_at.and_then(|i| i.checked_sub(1)).map(|i| header[i]) {
        Some(token) => split_host_pid_tid(token),
        None => (None, None, None),
    };
    let dev = dev_at
        .filter(|_| host.is_some())
        .and_then(|i| header[i].trim_matches(['[', ']']).parse().ok());
    let source = header
        .iter()
        .skip(dev_at.map_or(0, |i| i + 1))
        .copied()
        .find(|t| is_source_token(t));
    Some(Tagged {
        level,
        host,
        pid,
        tid,
        dev,
        source,
        message: line[end..].trim(),
    })
}

/// `transport/nvls.cc:254`: a source file (`.cc`, `.cu`, `.h`) and a line number.
fn is_source_token(token: &str) -> bool {
    token.rsplit_once(':').is_some_and(|(file, line)| {
        [".cc", ".cu", ".h", ".cpp"]
            .iter()
            .any(|e| file.ends_with(e))
            && !line.is_empty()
            && line.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Finds `NCCL INFO` (or WARN, TRACE) standing as words; returns (start, level, end).
fn find_level_tag(line: &str) -> Option<(usize, Level, usize)> {
    for (start, _) in line.match_indices("NCCL ") {
        // `[1,0]<stdout>:NCCL INFO` when a log was posted without its host prefix.
        let before = line[..start].chars().next_back();
        if !before.is_none_or(|c| c.is_whitespace() || c == ':') {
            continue;
        }
        let after = &line[start + 5..];
        for (word, level) in [
            ("INFO", Level::Info),
            ("WARN", Level::Warn),
            ("TRACE", Level::Trace),
        ] {
            if let Some(rest) = after.strip_prefix(word) {
                if rest.chars().next().is_none_or(char::is_whitespace) {
                    return Some((start, level, start + 5 + word.len()));
                }
            }
        }
    }
    None
}

/// NCCL 2.0-2.3's `host:pid:tid [dev] INFO message` (no `NCCL`): the level word right
/// after a `host:pid:tid [dev]` header, so that other programs' `INFO` does not match.
fn find_old_level_tag(line: &str) -> Option<(usize, Level, usize)> {
    for (word, level) in [("INFO", Level::Info), ("WARN", Level::Warn)] {
        for (start, _) in line.match_indices(word) {
            let end = start + word.len();
            let spaced = line[..start].ends_with(' ')
                && line[end..].chars().next().is_none_or(char::is_whitespace);
            if !spaced {
                continue;
            }
            let header: Vec<&str> = line[..start].split_whitespace().collect();
            let tail =
                |host: &str, dev: &str| is_dev_token(dev) && split_host_pid_tid(host).0.is_some();
            let tagged = match header.as_slice() {
                // `host:pid:tid [0] misc/ibvwrap.cc:63 WARN`.
                [.., host, dev, source] if is_source_token(source) => tail(host, dev),
                [.., host, dev] => tail(host, dev),
                _ => false,
            };
            if tagged {
                return Some((start, level, end));
            }
        }
    }
    None
}

/// `[3]`: the CUDA device NCCL prints after `host:pid:tid`.
fn is_dev_token(token: &str) -> bool {
    token
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// `host:pid:tid`, where mpirun may have glued `[1,0]<stdout>:` before the host.
fn split_host_pid_tid(token: &str) -> (Option<&str>, Option<u32>, Option<u32>) {
    let mut parts = token.rsplitn(3, ':');
    let (Some(tid), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return (None, None, None);
    };
    let (Ok(tid), Ok(pid)) = (tid.parse::<u32>(), pid.parse::<u32>()) else {
        return (None, None, None);
    };
    let host = host.rfind(">:").map_or(host, |i| &host[i + 2..]);
    (Some(host).filter(|h| !h.is_empty()), Some(pid), Some(tid))
}

/// A line quoted whole, as prose quotes one line of a log (`"NCCL INFO ..."`), without
/// its quotes; any other line as it is.
pub(super) fn unquoted(line: &str) -> &str {
    let t = line.trim();
    for q in ['"', '`', '\''] {
        if let Some(inner) = t.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            if !inner.is_empty() && !inner.contains(q) {
                return inner;
            }
        }
    }
    line
}

/// Removes launcher and timestamp prefixes from an untagged line: `[2025-11-11 16:54:54] `,
/// `[1,0]<stdout>:`, `[0] `, srun's `0: `.
pub(in crate::nccl) fn strip_launcher_prefixes(line: &str) -> &str {
    let mut rest = line.trim_start();
    for _ in 0..4 {
        let before = rest;
        if rest.starts_with('[') {
            if let Some(close) = rest.find(']') {
                rest = &rest[close + 1..];
                for tag in ["<stdout>:", "<stderr>:"] {
                    rest = rest.strip_prefix(tag).unwrap_or(rest);
                }
            }
        } else if let Some(colon) = rest.find(": ") {
            if colon > 0 && rest[..colon].bytes().all(|b| b.is_ascii_digit()) {
                rest = &rest[colon + 1..];
            }
        }
        rest = rest.trim_start();
        if rest.len() == before.len() {
            break;
        }
    }
    rest
}

/// `init.cc:1358 -> 2`: NCCL's trail when a call returns an error; from 2.30 with the
/// function between (`nccl/src/dev_runtime.cc:602 (symMemoryObtain) -> 3`).
pub(super) fn is_error_return(message: &str) -> bool {
    let mut words = message
        .split_whitespace()
        .filter(|w| !(w.starts_with('(') && w.ends_with(')') && w.len() > 2));
    let (Some(place), Some(arrow), Some(code)) = (words.next(), words.next(), words.next()) else {
        return false;
    };
    let place_ok = place
        .rsplit_once(':')
        .is_some_and(|(file, n)| file.contains('.') && n.parse::<u32>().is_ok());
    place_ok && arrow == "->" && code.parse::<i32>().is_ok()
}

/// The pieces of a connection line, borrowed from it.
pub(super) struct ConnectionParts<'a> {
    pub(super) channel: u32,
    pub(super) conn_index: Option<u32>,
    pub(super) from_rank: u32,
    pub(super) to_rank: u32,
    pub(super) from_dev: &'a str,
    pub(super) to_dev: &'a str,
    pub(super) direction: Option<Direction>,
    pub(super) via: &'a str,
}

/// A connection line in any version: `Ring 00 : 0 -> 1 via P2P/IPC` (2.4),
/// `Ring 00 : 2[3d000] -> 3[3e000] via direct shared memory` (2.5-2.6),
/// `Channel 00 : 2[89000] -> 3[b2000] via ...` (2.7-2.11),
/// `Channel 00/1 : 0[0] -> 7[7] [send] via ...` (2.12+), and CollNet's
/// `CollNet 00/0 : 3 [send] via COLLNET/...` (`Coll 00 :` in 2.6). Ring-order lines
/// (`Channel 00/02 :  0 1`, `Ring 00 : 3 -> 0 -> 1`) have no `via` and do not match.
pub(super) fn parse_connection(message: &str) -> Option<ConnectionParts<'_>> {
    let mut c = Cursor(message.trim_start());
    // Posters often cut the `Channel 00/0 : ` off: `9[1a000] -> 2[6b000] [send] via
    // NET/IB/0/GDRDMA` reads as channel 0.
    let bare = c.0.starts_with(|ch: char| ch.is_ascii_digit()) && c.0.contains("] -> ");
    let collnet = if bare || c.word("Channel") || c.word("Ring") {
        false
    } else if c.word("CollNet") || c.word("Coll") {
        true
    } else {
        return None;
    };
    let (channel, conn_index) = if bare {
        (0, None)
    } else {
        let channel = c.number()?;
        let conn_index = if c.eat("/") { Some(c.number()?) } else { None };
        c.spaces();
        if !c.eat(":") {
            return None;
        }
        c.spaces();
        (channel, conn_index)
    };
    let from_rank = c.number()?;
    let from_dev = c.bracket().unwrap_or_default();
    let (to_rank, to_dev) = if collnet {
        (from_rank, from_dev)
    } else {
        c.spaces();
        if !c.eat("->") {
            return None;
        }
        c.spaces();
        let to_rank = c.number()?;
        (to_rank, c.bracket().unwrap_or_default())
    };
    c.spaces();
    let direction = if c.eat("[send]") {
        Some(Direction::Send)
    } else if c.eat("[receive]") {
        Some(Direction::Receive)
    } else {
        None
    };
    c.spaces();
    if !c.word("via") {
        return None;
    }
    let via = c.0.trim();
    if via.is_empty() {
        return None;
    }
    Some(ConnectionParts {
        channel,
        conn_index,
        from_rank,
        to_rank,
        from_dev,
        to_dev,
        direction,
        via,
    })
}

/// A tiny cursor over a message.
struct Cursor<'a>(&'a str);

impl<'a> Cursor<'a> {
    fn eat(&mut self, text: &str) -> bool {
        match self.0.strip_prefix(text) {
            Some(rest) => {
                self.0 = rest;
                true
            }
            None => false,
        }
    }

    /// Eats `text` followed by at least one space.
    fn word(&mut self, text: &str) -> bool {
        let Some(rest) = self.0.strip_prefix(text) else {
            return false;
        };
        if !rest.starts_with(char::is_whitespace) {
            return false;
        }
        self.0 = rest.trim_start();
        true
    }

    fn spaces(&mut self) {
        self.0 = self.0.trim_start();
    }

    fn number(&mut self) -> Option<u32> {
        let digits = self.0.bytes().take_while(u8::is_ascii_digit).count();
        let value = self.0[..digits].parse().ok()?;
        self.0 = &self.0[digits..];
        Some(value)
    }

    /// `[89000]` -> `89000`.
    fn bracket(&mut self) -> Option<&'a str> {
        let inner = self.0.strip_prefix('[')?;
        let close = inner.find(']')?;
        self.0 = &inner[close + 1..];
        Some(&inner[..close])
    }
}

/// Names the transport of a connection; see [`Transport::label`](super::Transport::label).
pub(super) fn classify_transport(via: &str) -> Transport {
    let raw = via.trim();
    let (kind, label) = if let Some(rest) = raw.strip_prefix("P2P/") {
        // `P2P/CUMEM/read/CE` -> `P2P/CUMEM`; `direct pointer` -> `direct`; `indirect/3[3]`.
        let mode = rest.split('/').next().unwrap_or_default().trim();
        let mode = if mode == "direct pointer" {
            "direct"
        } else {
            mode
        };
        let label = if mode.is_empty() {
            "P2P".to_string()
        } else {
            format!("P2P/{mode}")
        };
        (TransportKind::P2p, label)
    } else if raw.starts_with("SHM") || raw.starts_with("direct shared memory") {
        (TransportKind::Shm, "SHM".to_string())
    } else if let Some(rest) = raw.strip_prefix("NET/") {
        (TransportKind::Net, format!("NET/{}", plugin_name(rest)))
    } else if let Some(rest) = raw.strip_prefix("COLLNET/") {
        (
            TransportKind::CollNet,
            format!("COLLNET/{}", plugin_name(rest)),
        )
    } else if raw.starts_with("NVLS") {
        (TransportKind::Nvls, "NVLS".to_string())
    } else {
        let head = raw.split('/').next().unwrap_or_default().trim();
        (TransportKind::Other, head.to_string())
    };
    Transport {
        kind,
        label,
        raw: raw.to_string(),
    }
}

/// `AWS Libfabric/1/GDRDMA` -> `AWS Libfabric`, `IB/0(1)/GDRDMA(PCI)/Shared` -> `IB`: the
/// name ends at the `/` before the device index.
fn plugin_name(rest: &str) -> &str {
    let end = rest
        .match_indices('/')
        .find(|(i, _)| rest[i + 1..].starts_with(|c: char| c.is_ascii_digit()))
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].trim()
}

/// What a line says about NVLink SHARP. Set-up happens where NVLS is used (at init
/// before 2.22, at the first NVLS collective from 2.22): the multicast group is
/// created (`NVLS Creating Multicast group`), the buffers are registered (`NVLS comm
/// ... headRank`), a multi-node tree is connected (`Connected NVLS tree`). Init prints
/// the plan whether or not NVLS is ever used: `NVLS Head`, `NVLS Trees` and
/// `N nvls channels` with N > 0 say it is available, not that it carried anything; `0
/// nvls channels` that it is not. `NVLS comm` comes before the multicast bind, so a
/// failed bind (`Failed` in the parser) outranks it.
pub(super) fn nvls_evidence(message: &str) -> Option<NvlsUse> {
    if message.starts_with("NVLS multicast support is not available") {
        return Some(NvlsUse::NotAvailable);
    }
    // 2.27.3-2.28.9 with NCCL_NVLS_ENABLE unset: `Failed to bind NVLink SHARP (NVLS)
    // Multicast memory of size N : CUDA error 401 '...'. Proceeding without NVLS support.`
    if message.contains("Proceeding without NVLS support") {
        return Some(NvlsUse::Failed);
    }
    let set_up = ["NVLS comm ", "NVLS Creating", "Connected NVLS tree"];
    if set_up.iter().any(|p| message.starts_with(p)) {
        return Some(NvlsUse::Used);
    }
    let planned = [
        "NVLS multicast support is available",
        "NVLS Head",
        "NVLS Trees",
    ];
    if planned.iter().any(|p| message.starts_with(p)) {
        return Some(NvlsUse::Available);
    }
    // `2 coll channels, 2 collnet channels, 16 nvls channels, 2 p2p channels, ...`
    let count = message.split(',').find_map(|part| {
        let n = part.trim().strip_suffix("nvls channels")?.trim();
        n.parse::<u32>().ok()
    })?;
    // `0 nvls channels`: this communicator plans no NVLS (not supported, disabled, or
    // too few GPUs to try it).
    Some(if count > 0 {
        NvlsUse::Available
    } else {
        NvlsUse::NotAvailable
    })
}

/// What a line shows of where SHM's buffers live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ShmEvidence {
    CumemHost,
    DevShm,
    /// The cuMem host probe failed: this process uses /dev/shm.
    Fallback,
}

/// The `SHM` subsystem's lines of 2.23+ (`transport/shm.cc`): `CUMEM allocated shareable
/// buffer ...`, `CUMEM imported shareable host buffer from [tp]ProxyRank ...`, `MMAP
/// allocated|imported shareable host buffer /dev/shm/nccl-...`, and the fallback line of
/// 2.26.3+: `cuMem host allocations do not appear to be working; falling back to a
/// /dev/shm/ based implementation...`. Not `Allocated N bytes of shared memory in
/// /dev/shm/...` or a /dev/shm failure: the proxy's ops pool and NVLS keep /dev/shm
/// files whatever SHM uses.
pub(super) fn shm_backing_evidence(message: &str) -> Option<ShmEvidence> {
    let cumem = [
        "CUMEM allocated shareable buffer",
        "CUMEM imported shareable host buffer",
    ];
    let mmap = [
        "MMAP allocated shareable host buffer",
        "MMAP imported shareable host buffer",
    ];
    if cumem.iter().any(|p| message.starts_with(p)) {
        Some(ShmEvidence::CumemHost)
    } else if mmap.iter().any(|p| message.starts_with(p)) {
        Some(ShmEvidence::DevShm)
    } else if message.starts_with("cuMem host allocations do not appear to be working") {
        Some(ShmEvidence::Fallback)
    } else {
        None
    }
}

/// `... comm 0x5639 rank 0 nranks 2 cudaDev 0 nvmlDev 2 busId 4c000 commId 0x... - Init COMPLETE`.
pub(super) fn parse_init_line(
    message: &str,
    host: Option<&str>,
    pid: Option<u32>,
) -> Option<RankInfo> {
    let init_complete = if message.contains("- Init COMPLETE") {
        true
    } else if message.contains("- Init START") {
        false
    } else {
        return None;
    };
    let words: Vec<&str> = message.split_whitespace().collect();
    let value = |key: &str| {
        words
            .windows(2)
            .find(|w| w[0].eq_ignore_ascii_case(key))
            .map(|w| w[1])
    };
    let number = |key: &str| value(key).and_then(|v| v.parse::<u32>().ok());
    Some(RankInfo {
        host: host.unwrap_or_default().to_string(),
        pid: pid.unwrap_or_default(),
        rank: number("rank")?,
        nranks: number("nranks")?,
        cuda_dev: number("cudaDev"),
        nvml_dev: number("nvmlDev"),
        bus_id: value("busId").map(str::to_string),
        comm: value("comm").map(str::to_string),
        comm_id: value("commId").map(str::to_string),
        init_complete,
    })
}

/// The pieces of a line naming the network interfaces NCCL uses, or saying IB has none.
pub(super) struct InterfaceParts<'a> {
    /// `NET/Socket`, `NET/IB`, `Bootstrap`: what precedes ` : Using`.
    pub(super) source: &'a str,
    /// Interface names in NCCL's order: `eth0` from `[0]eth0:10.0.0.1<0>`, `mlx5_0:1` from
    /// `[0]mlx5_0:1/RoCE`. Empty when the line says there is none.
    pub(super) names: Vec<&'a str>,
}

/// `NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>`,
/// `NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>`,
/// `Bootstrap : Using eth0:10.0.0.1<0>` (`Bootstrap: Using` in 2.20+, `Using [0]eth0:...`
/// in old versions), and the lines saying IB has no device: `NET/IB : No device found.` and
/// `Failed to open libibverbs.so[.1]` (source `NET/IB`, no names).
pub(super) fn parse_interfaces(message: &str) -> Option<InterfaceParts<'_>> {
    if message.starts_with("Failed to open libibverbs") {
        return Some(InterfaceParts {
            source: "NET/IB",
            names: Vec::new(),
        });
    }
    // NCCL 2.3 names each socket interface on a line of its own:
    // `NET : Using interface lo:127.0.0.1<0>`.
    if let Some(one) = message.strip_prefix("NET : Using interface ") {
        let name = one.split([':', '<', ' ']).next().unwrap_or_default();
        return (!name.is_empty()).then(|| InterfaceParts {
            source: "NET/Socket",
            names: vec![name],
        });
    }
    let (source, rest) = message.split_once(':')?;
    let source = source.trim();
    if !(source == "Bootstrap" || source.starts_with("NET/")) || source.contains(' ') {
        return None;
    }
    let rest = rest.trim();
    if source == "NET/IB" && rest.starts_with("No device found") {
        return Some(InterfaceParts {
            source,
            names: Vec::new(),
        });
    }
    let list = rest.strip_prefix("Using ")?;
    // NCCL 2.3's `NET/IB : Using interface ib0 for sideband communication` names the IP
    // interface IB's set-up talks over, not an IB device.
    if list.ends_with("for sideband communication") {
        return None;
    }
    let list = list.split(';').next().unwrap_or_default();
    let ib = source.ends_with("IB");
    let names: Vec<&str> = list
        .split_whitespace()
        .filter_map(|token| {
            let token = match token.strip_prefix('[') {
                Some(inner) => {
                    let (index, rest) = inner.split_once(']')?;
                    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    rest
                }
                None => token,
            };
            let end = if ib {
                token.find(['/', '<'])
            } else {
                token.find([':', '<'])
            };
            let name = &token[..end.unwrap_or(token.len())];
            (!name.is_empty()).then_some(name)
        })
        .collect();
    (!names.is_empty()).then_some(InterfaceParts { source, names })
}

/// `NCCL_SOCKET_IFNAME set by environment to eth0`, `NCCL_IB_DISABLE set by environment to
/// 1.` -> (name, value), the trailing period of numeric parameters dropped.
pub(super) fn parse_env_setting(message: &str) -> Option<(&str, &str)> {
    let (name, value) = message.split_once(" set by environment to ")?;
    let name = name.trim();
    if !name.starts_with("NCCL_")
        || !name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let value = value.trim();
    let value = value.strip_suffix('.').unwrap_or(value);
    Some((name, value))
}
