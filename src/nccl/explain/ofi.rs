//! The OFI network plugin (aws-ofi-nccl) and the libfabric under it: a plugin that NCCL
//! cannot load because the libfabric it finds is older than the one it was built
//! against (`version `FABRIC_1.7' not found`).

use super::finding::{Finding, FindingKind};
use super::pasted::{Pasted, PastedLine};
use super::signatures::Placed;

/// The symbol version a loader error says libfabric lacks, and that library's path:
/// `/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.7' not found (required by
/// .../libnccl-net.so)`.
fn missing_symbol(line: &PastedLine) -> Option<(String, String)> {
    let l = &line.lower;
    let plugin = l.contains("libnccl-net") || l.contains("net/plugin");
    if !plugin || !l.contains("not found") {
        return None;
    }
    let at = l.find("version ")?;
    let rest = &line.text[at + "version ".len()..];
    let symbol: String = rest
        .trim_start_matches(['`', '\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
        .collect();
    if !symbol.starts_with("FABRIC_") {
        return None;
    }
    // The library is the path just before `: version`.
    let library = line.text[..at]
        .trim_end()
        .trim_end_matches(':')
        .rsplit(|c: char| c.is_whitespace() || c == '=')
        .next()
        .filter(|p| p.contains("libfabric.so"))?
        .to_string();
    Some((symbol, library))
}

/// NCCL could not load its OFI plugin: the libfabric it loads lacks a symbol version
/// the plugin needs. It names aws-ofi-nccl and the symbol, and places the line, so the
/// generic `net-plugin-load` does not repeat it.
pub(super) fn libfabric_too_old_rule(pasted: &Pasted) -> Option<Placed> {
    let (line, (symbol, library)) = pasted
        .lines
        .iter()
        .find_map(|l| missing_symbol(l).map(|m| (l, m)))?;
    let finding = Finding::new(
        FindingKind::OfiLibfabricTooOld,
        vec![pasted.evidence(line)],
        &[("symbol", symbol), ("library", library)],
    );
    Some(Placed {
        finding,
        lines: vec![(line.file, line.number)],
    })
}
