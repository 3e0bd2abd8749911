//! The plain-text report `nccl-bench explain` prints from an [`Explanation`], and the word
//! wrapping it uses.

use std::fmt::Write as _;

use super::Explanation;
use crate::nccl::log::NvlsUse;
use crate::units::ranges;

/// Width the text report wraps its prose at.
pub(super) const WIDTH: usize = 100;

/// The report `nccl-bench explain` prints: the findings first, then sections NCCL, Ranks,
/// Network, Transports (per rank pair). Plain text, no colors.
pub fn render_text(e: &Explanation) -> String {
    let mut out = String::new();
    render_findings(&mut out, e);
    out.push_str("\nNCCL\n");
    match e.versions.as_slice() {
        [] => out.push_str("  version: not in the log\n"),
        v => {
            let _ = writeln!(out, "  version: {}", v.join(", "));
        }
    }
    if !e.env.is_empty() {
        let env: Vec<String> = e.env.iter().map(|(n, v)| format!("{n}={v}")).collect();
        wrap_into(
            &mut out,
            &format!("set by environment: {}", env.join(" ")),
            "  ",
            "    ",
        );
    }

    out.push_str("\nRanks\n");
    if !e.nranks.is_empty() {
        let sizes: Vec<String> = e.nranks.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "  communicator size: {} ranks", sizes.join(", "));
    }
    if e.hosts.is_empty() {
        out.push_str("  no host or rank in the log\n");
    }
    for h in &e.hosts {
        let host = if h.host.is_empty() {
            "(no host prefix)"
        } else {
            h.host.as_str()
        };
        let plural = |word: &str, n: usize| {
            if n == 1 {
                word.to_string()
            } else {
                format!("{word}s")
            }
        };
        let mut parts = Vec::new();
        if !h.ranks.is_empty() {
            let label = plural("rank", h.ranks.len());
            parts.push(format!("{label} {}", ranges(&h.ranks)));
        }
        if !h.devices.is_empty() {
            let label = plural("GPU", h.devices.len());
            parts.push(format!("{label} {}", ranges(&h.devices)));
        }
        if !h.pids.is_empty() {
            let pids: Vec<String> = h.pids.iter().map(u32::to_string).collect();
            let label = plural("pid", h.pids.len());
            parts.push(format!("{label} {}", pids.join(", ")));
        }
        wrap_into(
            &mut out,
            &format!("{host}: {}", parts.join("; ")),
            "  ",
            "    ",
        );
    }

    out.push_str("\nNetwork\n");
    if e.networks.is_empty() && e.interfaces.is_empty() {
        out.push_str("  not in the log\n");
    }
    if !e.networks.is_empty() {
        let _ = writeln!(out, "  using network: {}", e.networks.join(", "));
    }
    for i in &e.interfaces {
        let names = if i.names.is_empty() {
            "none found".to_string()
        } else {
            i.names.join(", ")
        };
        wrap_into(
            &mut out,
            &format!("{} interfaces: {names}", i.source),
            "  ",
            "    ",
        );
    }

    out.push_str("\nTransports (per rank pair)\n");
    if e.pairs.is_empty() {
        out.push_str("  no connection lines in the log\n");
    } else {
        let width = e
            .pairs
            .iter()
            .map(|p| format!("{} -> {}", p.from_rank, p.to_rank).len())
            .max()
            .unwrap_or(0);
        for p in &e.pairs {
            let pair = format!("{} -> {}", p.from_rank, p.to_rank);
            let transports: Vec<String> = p
                .transports
                .iter()
                .map(|t| format!("{} x{}", t.label, t.connections))
                .collect();
            let _ = writeln!(out, "  {pair:<width$}  {}", transports.join(", "));
        }
        let _ = writeln!(
            out,
            "  (xN: channel connections; all lines: {})",
            e.transports.replace(';', ", ")
        );
    }
    let nvls = match e.nvls {
        NvlsUse::Unknown => "not in the log",
        NvlsUse::NotAvailable => "not available",
        NvlsUse::Available => "available, not shown set up (from 2.22 at its first use)",
        NvlsUse::Used => "used",
        NvlsUse::Failed => "set-up failed (the multicast memory could not be bound)",
    };
    let _ = writeln!(out, "  NVLS: {nvls}");
    let _ = writeln!(out, "  SHM buffers: {}", e.shm_backing.describe());
    let collnet = if e.collnet { "used" } else { "not in the log" };
    let _ = writeln!(out, "  CollNet: {collnet}");

    render_tuning(&mut out, e);
    out
}

/// Appends `text` wrapped at [`WIDTH`]: the first line after `first`, the others after
/// `rest`.
fn wrap_into(out: &mut String, text: &str, first: &str, rest: &str) {
    crate::units::wrap_into(out, text, WIDTH, first, rest);
}

/// A line of the log quoted after `     > `, made to fit [`WIDTH`] (`--json` keeps it
/// whole): without NCCL's `host:pid:tid [dev] file:line` prefix where it is too long,
/// then cut.
fn quoted(line: &str) -> String {
    let room = WIDTH - 7;
    if line.chars().count() <= room {
        return line.to_string();
    }
    let shorter = match line.split_once(": ") {
        Some((at, text)) if at.starts_with("line ") => {
            format!("{at}: {}", super::pasted::message(text))
        }
        _ => super::pasted::message(line).to_string(),
    };
    if shorter.chars().count() <= room {
        return shorter;
    }
    let head: String = shorter.chars().take(room - 4).collect();
    format!("{} ...", head.trim_end())
}

/// The `Tuning` section: NCCL's choices in order (runs of identical lines merged) and
/// the model's table; nothing without `TUNING` lines.
fn render_tuning(out: &mut String, e: &Explanation) {
    if e.tuning.is_empty() && e.tuning_table.is_empty() {
        return;
    }
    out.push_str("\nTuning (algorithm and protocol NCCL chose, in order)\n");
    for t in &e.tuning {
        let func = if t.func.is_empty() {
            "collective".to_string()
        } else {
            t.func.clone()
        };
        let mut line = format!("  {func} {}: {}", crate::units::Bytes(t.bytes), t.algo);
        if !t.proto.is_empty() {
            let _ = write!(line, "/{}", t.proto);
        }
        if !t.kernel.is_empty() {
            let _ = write!(line, " kernel {}", t.kernel);
        }
        if let Some(n) = t.channels {
            let _ = write!(line, ", {n} channel{}", if n == 1 { "" } else { "s" });
        }
        if let Some(p) = &t.predicted_us {
            let _ = write!(line, ", predicted {p} us");
        }
        if t.count > 1 {
            let _ = write!(line, " (x{})", t.count);
        }
        out.push_str(&line);
        out.push('\n');
    }
    if !e.tuning_table.is_empty() {
        out.push_str("  NCCL's model (latency us / bandwidth GB/s per algorithm and protocol):\n");
        for l in &e.tuning_table {
            // The log's lines lose their leading spaces when read: align the row
            // labels again as NCCL prints them (`%13s |`), so the columns line up.
            let line = match l.split_once('|') {
                Some((label, rest)) => format!("{:>13} |{rest}", label.trim()),
                None => l.clone(),
            };
            let _ = writeln!(out, "    {line}");
        }
    }
}

/// The `Findings` section: each finding's title, evidence, cause, fix, what not to do,
/// what it follows from and its sources; the lines no finding placed.
fn render_findings(out: &mut String, e: &Explanation) {
    out.push_str("Findings\n");
    if e.findings.is_empty() {
        out.push_str("  no known failure signature in the text\n");
    }
    for (i, f) in e.findings.iter().enumerate() {
        let times = if f.occurrences > 1 {
            format!(" ({} lines)", f.occurrences)
        } else {
            String::new()
        };
        let title = format!("{}. [{}] {}{times}", i + 1, f.severity.as_str(), f.title);
        wrap_into(out, &title, "  ", "     ");
        for line in &f.evidence {
            let _ = writeln!(out, "     > {}", quoted(line));
        }
        if f.occurrences > f.evidence.len() {
            let _ = writeln!(out, "     > ... {} more", f.occurrences - f.evidence.len());
        }
        if let Some(root) = f.follows {
            let _ = writeln!(out, "     Follows from: {root} (above); fix that first.");
        }
        wrap_into(out, &format!("Cause: {}", f.cause), "     ", "       ");
        wrap_into(out, &format!("Fix: {}", f.fix), "     ", "       ");
        if !f.avoid.is_empty() {
            wrap_into(out, &format!("Not: {}", f.avoid), "     ", "       ");
        }
        for (i, s) in f.sources.iter().enumerate() {
            let label = if i == 0 { "Source:" } else { "       " };
            let _ = writeln!(out, "     {label} {s}");
        }
    }
    if !e.unplaced.is_empty() {
        out.push_str("  Lines no finding explains:\n");
        for l in &e.unplaced {
            let _ = writeln!(out, "     > {}", quoted(l));
        }
    }
    if let Some(c) = &e.collect {
        wrap_into(out, &format!("Collect next: {c}"), "  ", "    ");
    }
}
