//! Tests of the knowledge files: each parses, each fact has its source, the ids are
//! unique, and the look-ups (architecture by GPU name, bugs by version) answer.

use super::*;
use crate::nccl::explain::FindingKind;

/// Every entry of every file parses, carries a source address, and ids are unique.
#[test]
fn every_fact_parses_and_has_its_source() {
    let k = get();
    let https = |s: &str| s.starts_with("https://");
    assert!(k.arch.iter().all(|a| https(&a.source)), "arch");
    assert!(k.bugs.iter().all(|b| https(&b.source)), "bug");
    assert!(k.wc_status.iter().all(|w| https(&w.source)), "wc_status");
    assert!(k.vendor_err.iter().all(|v| https(&v.source)), "vendor_err");
    assert!(k.cuda.iter().all(|c| https(&c.source)), "cuda");
    for f in &k.findings {
        assert!(f.source.iter().all(|s| https(s)), "{}", f.id);
        assert!(
            ["error", "warning", "info"].contains(&f.severity.as_str()),
            "{}",
            f.id
        );
        if !f.lines.is_empty() {
            assert!(
                !f.cause.is_empty() && !f.fix.is_empty() && !f.source.is_empty(),
                "a finding raised by its lines alone needs its texts and a source: {}",
                f.id
            );
        }
    }
    let mut ids: Vec<&str> = k.findings.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "finding ids are unique");
    let mut bugs: Vec<&str> = k.bugs.iter().map(|b| b.id.as_str()).collect();
    bugs.sort_unstable();
    let n = bugs.len();
    bugs.dedup();
    assert_eq!(bugs.len(), n, "bug ids are unique");
    // Every version named parses.
    for b in &k.bugs {
        for v in b.first.iter().chain(b.fixed.iter()) {
            assert!(NcclVersion::parse(v).is_some(), "{}: {v}", b.id);
        }
    }
    for a in &k.arch {
        for v in a.first_nccl.iter() {
            assert!(NcclVersion::parse(v).is_some(), "sm_{}: {v}", a.sm);
        }
    }
}

/// Each kind a rule raises has its entry; no entry is left that nothing raises.
#[test]
fn every_finding_kind_has_its_texts_and_every_entry_a_use() {
    for kind in FindingKind::RULES {
        let text = finding(kind.as_str());
        assert!(!text.title.is_empty(), "{}", kind.as_str());
    }
    for f in &get().findings {
        let ruled = FindingKind::RULES.iter().any(|k| k.as_str() == f.id);
        assert!(
            ruled || !f.lines.is_empty(),
            "`{}` in findings.toml has neither a rule nor lines",
            f.id
        );
        for cause in &f.follows {
            let Some(g) = get().findings.iter().find(|g| &g.id == cause) else {
                panic!("`{}` follows `{cause}`, which findings.toml lacks", f.id);
            };
            // One step, no cycle: what a finding follows is a cause itself.
            assert!(
                g.follows.is_empty(),
                "`{}` follows `{cause}`, which follows another",
                f.id
            );
        }
    }
}

#[test]
fn gpus_are_found_by_their_longest_name_and_whole_words() {
    assert_eq!(arch_of_gpu("NVIDIA GeForce RTX 5090").unwrap().sm, 120);
    assert_eq!(arch_of_gpu("NVIDIA H100 80GB HBM3").unwrap().sm, 90);
    assert_eq!(arch_of_gpu("NVIDIA A100-SXM4-80GB").unwrap().sm, 80);
    // A10 is not in A100, nor H20 in H200.
    assert_eq!(arch_of_gpu("NVIDIA A10G").unwrap().sm, 86);
    assert_eq!(arch_of_gpu("NVIDIA H200").unwrap().sm, 90);
    assert!(arch_of_gpu("epoch 3 loss 0.2").is_none());
}

#[test]
fn bugs_need_their_version_unless_their_lines_name_them() {
    let v = |s: &str| NcclVersion::parse(s);
    let text = "ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856";
    let ids = |t: &str, ver| -> Vec<String> {
        bugs_shown(t, ver, &|_| false)
            .iter()
            .filter(|(_, hedged)| !hedged)
            .map(|(b, _)| b.id.clone())
            .collect()
    };
    assert!(ids(text, v("2.25.1")).contains(&"blackwell-shared-mem".to_string()));
    assert!(!ids(text, v("2.26.2")).contains(&"blackwell-shared-mem".to_string()));
    let invalid = "Cuda failure 'invalid argument'";
    assert!(
        ids(invalid, v("2.18.1")).contains(&"p2p-setup-cudamemcpy-invalid-argument".to_string())
    );
    assert!(
        !ids(invalid, v("2.19.3")).contains(&"p2p-setup-cudamemcpy-invalid-argument".to_string())
    );
    assert!(!ids(invalid, None).contains(&"p2p-setup-cudamemcpy-invalid-argument".to_string()));
}

#[test]
fn a_bug_of_a_setting_needs_the_setting() {
    let text = "proxy.cc:1521 NCCL WARN [Proxy Service 2] Failed to execute operation Connect \
                from rank 2, retcode 3";
    let shown = |set: &dyn Fn(&str) -> bool, version: &str| {
        bugs_shown(text, NcclVersion::parse(version), set)
            .iter()
            .any(|(b, _)| b.id == "roce-version-num-gid-container")
    };
    let roce = |name: &str| name == "NCCL_IB_ROCE_VERSION_NUM";
    assert!(shown(&roce, "2.22.3"));
    // A Connect that fails without the setting, or on a release with the fix, is not it.
    assert!(!shown(&|_| false, "2.22.3"));
    assert!(!shown(&roce, "2.26.2"));
}

#[test]
fn statuses_and_cuda_errors_are_read_by_number_or_text() {
    let w = wc_status(12).unwrap();
    assert_eq!(w.name, "IBV_WC_RETRY_EXC_ERR");
    assert!(!w.consequence && wc_status(5).unwrap().consequence);
    assert_eq!(wc_status_named("IBV_WC_WR_FLUSH_ERR").unwrap().code, 5);
    assert_eq!(
        cuda_error(Some(700), "", false).unwrap().name,
        "cudaErrorIllegalAddress"
    );
    assert_eq!(
        cuda_error(
            None,
            "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",
            false
        )
        .unwrap()
        .code,
        35
    );
    assert_eq!(cuda_error(None, "'out of memory'", false).unwrap().code, 2);
}

#[test]
fn an_architecture_s_early_releases_are_its_first_series_and_three_more() {
    let v = |s: &str| NcclVersion::parse(s).unwrap();
    let sm = |n: u32| arch_of_sm(n).unwrap();
    assert!(is_early_release(sm(120), v("2.26.2")));
    assert!(is_early_release(sm(120), v("2.28.9")));
    assert!(!is_early_release(sm(120), v("2.29.2")));
    // Before the first release is no early release: that NCCL is too old.
    assert!(!is_early_release(sm(120), v("2.24.3")));
    assert!(!is_early_release(sm(80), v("2.21.5")));
    // sm_103 runs the sm_100 code: its first release is sm_100's.
    assert_eq!(first_release(sm(103)), NcclVersion::parse("2.25.1"));
    assert!(sm(120).recent && !sm(80).recent);
}
