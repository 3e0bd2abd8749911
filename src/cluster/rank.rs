//! What a rank of a `run` found out before meeting the others (`ThisRank`), and
//! what rank 0 records of the whole job once they have met (`job_manifest`): the
//! ranks and their nodes, the warnings about any of them, rank 0 node's checks.

use std::time::Instant;

use super::launcher::RankLayout;
use super::remote::Hub;
use super::rendezvous::Rendezvous;
use super::wire::Hello;
use crate::backend::ResolvedBackend;
use crate::config::SweepSettings;
use crate::machine::GpuPresence;
use crate::model::{ClusterInfo, RankInfo, RunManifest};
use crate::sweep::session;

/// Everything this rank found out before meeting the others.
pub struct ThisRank {
    pub layout: RankLayout,
    pub settings: SweepSettings,
    pub rendezvous: Rendezvous,
    pub backend: std::result::Result<ResolvedBackend, String>,
    pub hello: Hello,
    pub deadline: Instant,
}

/// The job's nodes, in the order of their first rank.
pub fn distinct_hosts(hub: &Hub) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for h in hub.hellos() {
        if !hosts.contains(&h.host) {
            hosts.push(h.host.clone());
        }
    }
    hosts
}

/// The manifest of a run over the job's ranks, and its warnings (said on the
/// terminal too): the settings' own, NCCL variables inherited, versions that differ
/// between ranks, and rank 0 node's quick checks for as many ranks as share it.
pub fn job_manifest(
    me: &ThisRank,
    settings: &SweepSettings,
    backend: &ResolvedBackend,
    hub: &Hub,
    rendezvous: &str,
    command_line: Vec<String>,
) -> (RunManifest, Vec<String>) {
    let gpus = GpuPresence::probe();
    let mut warnings = settings.warnings.clone();
    warnings.extend(session::inherited_warnings(
        &settings.configs,
        std::env::vars(),
    ));
    if backend.name == "host" {
        warnings.extend(session::host_warnings(settings, me.layout.world_size));
    }
    let versions: Vec<String> = hub
        .hellos()
        .filter_map(|h| h.nccl.as_ref().map(|n| n.version.clone()))
        .collect();
    if versions.iter().any(|v| v != &versions[0]) {
        warnings.push(format!(
            "the ranks load different NCCL versions ({}): NCCL needs one version across a communicator",
            versions.join(", ")
        ));
    }
    let local = hub.hellos().filter(|h| h.host == me.hello.host).count() as u32;
    let checks = crate::doctor::quick_checks(
        &crate::machine::Root::this_machine(),
        &settings.shm_dir,
        local,
        session::shm_sizing(backend.name, settings),
    );
    warnings.extend(session::failed_checks(&checks));
    let mut manifest = session::manifest(settings, backend, command_line, &gpus, warnings.clone());
    manifest.doctor = checks;
    manifest.cluster = Some(ClusterInfo {
        launcher: me.layout.launcher.name().to_string(),
        rendezvous: rendezvous.to_string(),
        world_size: me.layout.world_size,
        hosts: distinct_hosts(hub),
        ranks: hub
            .hellos()
            .map(|h| RankInfo {
                rank: h.rank,
                host: h.host.clone(),
                local_rank: h.local_rank,
                device: h.device,
                pid: h.pid,
                nccl_version: h.nccl.as_ref().map(|n| n.version.clone()),
            })
            .collect(),
    });
    (manifest, warnings)
}
