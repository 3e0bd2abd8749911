//! A soak over the job's ranks (`run --soak`): rank 0 soaks the config as `soak`
//! does on one machine, through the agents, while one rank of every node reads
//! its node's counters (`counters`) and rank 0 writes them under the node's name,
//! so that the report names the node whose counters moved with a dip.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

use super::counters;
use super::rank::{job_manifest, ThisRank};
use super::remote::{Hub, RemoteLaunch};
use super::target::Target;
use crate::backend::ResolvedBackend;
use crate::export::soak::SoakWriter;
use crate::sweep::orchestrator::Orchestrator;
use crate::sweep::soak::{self, SoakObserver, SoakSettings};
use crate::sweep::{session, SweepObserver};

/// Where the soak's output goes and how the terminal shows it.
pub struct Output<'a> {
    pub target: Target,
    pub rendezvous: &'a str,
    pub observer: &'a mut dyn SweepObserver,
    pub soak_observer: &'a mut dyn SoakObserver,
    pub command_line: Vec<String>,
}

/// Rank 0: soaks each collective of the one config over every rank; the exit code.
pub fn soak(
    me: &ThisRank,
    asked: &SoakSettings,
    backend: &ResolvedBackend,
    hub: Arc<Hub>,
    out: Output,
) -> Result<u8> {
    let (settings, plan) = soak::plan(&me.settings, backend.name, asked)?;
    let settings = &settings;
    crate::config::check_root(
        &settings.collectives,
        settings.root,
        &[me.layout.world_size],
    )?;
    // Before anything is written: a Ctrl-C from here on leaves a run directory whole.
    let interrupted = session::interrupt_flag()?;
    let (writer, start_time) = out.target.open(settings, &me.hello.host)?;
    let soak_writer = Arc::new(SoakWriter::create(&writer.dir().path, start_time)?);
    let (manifest, warnings) = job_manifest(
        me,
        settings,
        backend,
        &hub,
        out.rendezvous,
        out.command_line,
    );
    println!("{}", session::banner(backend));
    for w in &warnings {
        out.soak_observer.warning(w);
    }
    let hosts: Vec<String> = hub.hellos().map(|h| h.host.clone()).collect();
    let run_start = Instant::now();
    let readings = hub.read_counters(asked.interval, backend.name != "host");
    let asked_at = run_start.elapsed();
    let mut launch = RemoteLaunch::new(hub, writer.dir().logs());
    let (nccl_lib, nccl_lib_per_config) = backend.nccl_paths();
    let orchestrator = Orchestrator {
        settings,
        launch: &mut launch,
        backend: backend.name.to_string(),
        label: backend.label().to_string(),
        nccl_lib,
        nccl_lib_per_config,
        writer: &writer,
        manifest,
        observer: out.observer,
        interrupted,
        run_start,
        gate: None,
    };
    soak::soak_groups(
        orchestrator,
        &plan,
        asked,
        soak_writer,
        out.soak_observer,
        move |feed| {
            if let Some(readings) = readings {
                counters::feed(readings, hosts, asked_at, feed);
            }
        },
    )
}
