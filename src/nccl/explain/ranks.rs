//! Several files at once, one per rank or node: the NCCL versions, network plugins and
//! variables each shows, and where they differ.

use std::collections::BTreeSet;

use super::finding::{Finding, FindingKind};
use super::pasted::Input;
use crate::nccl::log::{self, NcclLog};

/// Each input's own log, for what differs between them.
pub(super) fn across_files(inputs: &[Input]) -> Vec<Finding> {
    if inputs.len() < 2 {
        return Vec::new();
    }
    let logs: Vec<(&str, NcclLog)> = inputs
        .iter()
        .map(|i| (i.name, log::parse(i.text)))
        .collect();
    let mut out = Vec::new();
    let versions: Vec<(&str, &str)> = logs
        .iter()
        .filter_map(|(n, l)| l.versions.first().map(|v| (*n, v.as_str())))
        .collect();
    let distinct: BTreeSet<&str> = versions.iter().map(|(_, v)| core_version(v)).collect();
    if distinct.len() > 1 {
        let detail = versions
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Finding::new(
            FindingKind::VersionsDiffer,
            Vec::new(),
            &[("detail", detail)],
        ));
    }
    // A network plugin on some files and NCCL's internal one on others. The names are
    // not compared: one plugin is named by its path, its `Loaded net plugin` line, or both.
    let external: Vec<(&str, Vec<&str>)> = logs
        .iter()
        .filter(|(_, l)| !l.plugins.is_empty())
        .map(|(n, l)| {
            let names = l.plugins.iter().map(String::as_str);
            (*n, names.filter(|p| *p != "internal").collect())
        })
        .collect();
    let (with, without): (Vec<_>, Vec<_>) = external.iter().partition(|(_, p)| !p.is_empty());
    if !with.is_empty() && !without.is_empty() {
        let files = |side: &[&(&str, Vec<&str>)]| {
            side.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        };
        let detail = format!(
            "{} in {}; NCCL's internal network in {}",
            with[0].1.join(", "),
            files(&with),
            files(&without)
        );
        out.push(Finding::new(
            FindingKind::PluginsDiffer,
            Vec::new(),
            &[("detail", detail)],
        ));
    }
    // A variable every file shows, with values that differ.
    let names: BTreeSet<&str> = logs
        .iter()
        .flat_map(|(_, l)| l.env.iter().map(|(n, _)| n.as_str()))
        .collect();
    for name in names {
        let values: Vec<(&str, &str)> = logs
            .iter()
            .filter_map(|(f, l)| {
                l.env
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| (*f, v.as_str()))
            })
            .collect();
        let distinct: BTreeSet<&str> = values.iter().map(|(_, v)| *v).collect();
        if distinct.len() > 1 {
            let detail = format!(
                "{name} is {}",
                values
                    .iter()
                    .map(|(f, v)| format!("`{v}` in {f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            out.push(Finding::new(
                FindingKind::EnvDiffers,
                Vec::new(),
                &[("detail", detail)],
            ));
        }
    }
    out
}

/// `2.19.3+cuda12.3` -> `2.19.3`.
fn core_version(v: &str) -> &str {
    v.split(['+', '-']).next().unwrap_or(v)
}
