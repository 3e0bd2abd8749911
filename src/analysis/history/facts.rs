//! What a run's manifest says about where and with what it ran, for `history`:
//! each step lists the facts that differ between the two runs around it.

use super::series::{Difference, Fact};
use crate::export::reader::RunData;
use crate::nccl::register::Registration;

/// What a run's manifest says about where and with what it ran, as (fact, value)
/// pairs; `config`'s own NCCL and variables included.
pub fn facts(run: &RunData, config: &str) -> Vec<(Fact, String)> {
    let m = &run.manifest;
    let mut out: Vec<(Fact, String)> = Vec::new();
    let mut add = |what: Fact, value: String| {
        if !value.is_empty() {
            out.push((what, value));
        }
    };
    let nccl = m.nccl_per_config.get(config).or(m.nccl.as_ref());
    add(
        Fact::Nccl,
        nccl.map(|n| n.version.clone()).unwrap_or_default(),
    );
    add(
        Fact::NcclLibrary,
        nccl.map(|n| n.path.clone()).unwrap_or_default(),
    );
    let gpu = m.gpu.as_ref();
    let text = |key: &str| {
        gpu.and_then(|g| g[key].as_str())
            .filter(|v| *v != "unknown")
            .unwrap_or("")
            .to_string()
    };
    add(Fact::Driver, text("driver_version"));
    add(Fact::Cuda, text("cuda_version"));
    add(Fact::Gpus, gpu_models(gpu));
    let hosts = match &m.cluster {
        Some(c) => c.hosts.join(","),
        None => m.host.hostname.clone(),
    };
    add(Fact::Hosts, hosts);
    if let Some(c) = m.configs.iter().find(|c| c.name == config) {
        let env: Vec<String> = c.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        add(Fact::Variables, env.join(" "));
        // Buffer registration changes what NCCL runs as much as a variable does.
        if let Some(r) = c.register.filter(|&r| r != Registration::None) {
            add(Fact::Registration, r.name().to_string());
        }
    }
    let tool = match (m.tool.version.as_str(), m.tool.git_rev.as_str()) {
        ("", _) => String::new(),
        (v, "" | "unknown") => v.to_string(),
        (v, rev) => format!("{v} ({rev})"),
    };
    add(Fact::Tool, tool);
    out
}

/// "8 x NVIDIA H100 80GB HBM3" (models in the order first listed).
fn gpu_models(gpu: Option<&serde_json::Value>) -> String {
    let Some(list) = gpu.and_then(|g| g["gpus"].as_array()) else {
        return String::new();
    };
    let mut counts: Vec<(String, usize)> = Vec::new();
    for g in list {
        let name = g["name"].as_str().unwrap_or("?").to_string();
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    counts
        .iter()
        .map(|(n, c)| format!("{c} x {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The facts that differ between two runs (absent on one side shows as "-").
pub fn differences(before: &RunData, after: &RunData, config: &str) -> Vec<Difference> {
    let (b, a) = (facts(before, config), facts(after, config));
    let mut names: Vec<Fact> = b.iter().map(|f| f.0).collect();
    for (n, _) in &a {
        if !names.contains(n) {
            names.push(*n);
        }
    }
    let value = |list: &[(Fact, String)], name: Fact| {
        list.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "-".into())
    };
    names
        .into_iter()
        .filter_map(|n| {
            let (vb, va) = (value(&b, n), value(&a, n));
            (vb != va).then_some(Difference {
                what: n,
                before: vb,
                after: va,
            })
        })
        .collect()
}
