//! NET/IB's completion errors: the status of each (`with error 12`, `status=12`,
//! `status=IBV_WC_RETRY_EXC_ERR(12)` from 2.28), read against ibverbs.toml; the first
//! status that causes rather than follows is the finding, the flushes after it its
//! consequence.

use super::finding::{Finding, FindingKind};
use super::pasted::{Pasted, PastedLine};
use super::signatures::Placed;
use crate::nccl::knowledge;

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
             between the subnets; test it with `ib_write_bw` between the two nodes on the same \
             GID. If the NICs do reach each other and the fabric is congested, raise \
             NCCL_IB_TIMEOUT (and NCCL_IB_RETRY_CNT). NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
             shows the NICs and GIDs each rank uses."
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
