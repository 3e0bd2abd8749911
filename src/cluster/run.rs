//! `nccl-bench run`: one process = one rank. It reads its place from the launcher,
//! checks its node (backend, libnccl, GPU), and meets rank 0 at the rendezvous.
//! Rank 0 gathers every rank (or names the missing ones and their nodes when the
//! deadline passes), then runs the sweep's orchestrator over the connections and
//! writes the run directory, new or appended to; every rank exits with its code.

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context, Result};

use super::agent::{self, AgentContext, Link};
use super::devices::{bus_id_of, device_for, shared_gpu};
use super::gather;
use super::launcher::{self, Launcher, Overrides, RankLayout};
use super::rank::{distinct_hosts, job_manifest, ThisRank};
use super::remote::{Hub, Joined, RemoteLaunch};
use super::rendezvous::{self, Listener, Rendezvous, DEFAULT_PORT};
use super::soak;
use super::target::{Asked, Target};
use super::wire::{Hello, MAGIC};
use crate::backend::{self, ResolvedBackend};
use crate::config::SweepSettings;
use crate::machine::GpuPresence;
use crate::sweep::orchestrator::Orchestrator;
use crate::sweep::plan::Plan;
use crate::sweep::soak::{SoakObserver, SoakSettings};
use crate::sweep::{preflight, session, SweepObserver};

/// What `nccl-bench run` is asked to do (`cmd::run` builds it from the flags).
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The sweep's settings; its rank count is the launcher's world size, set here.
    pub settings: SweepSettings,
    /// Where rank 0 listens (`--rendezvous`), instead of the launcher's master.
    pub rendezvous: Option<String>,
    pub rendezvous_timeout: Duration,
    /// Every pair of the job's nodes in turn (`--pairs`).
    pub pairs: bool,
    /// The run directory to create or append to (`--run-dir`).
    pub run_dir: Option<PathBuf>,
    /// `--rank`, `--world-size`, `--local-rank`.
    pub overrides: Overrides,
    /// `--soak`: one size back to back for a duration instead of the sweep.
    pub soak: Option<SoakSettings>,
}

/// How the terminal shows a sweep and a soak.
pub struct Observers<'a> {
    pub sweep: &'a mut dyn SweepObserver,
    pub soak: &'a mut dyn SoakObserver,
}

pub fn run(args: &RunRequest, observers: Observers, command_line: Vec<String>) -> Result<u8> {
    let env = |k: &str| std::env::var(k).ok();
    let layout = launcher::detect(env, &args.overrides)?;
    let settings = SweepSettings {
        gpu_counts: vec![layout.world_size],
        ..args.settings.clone()
    };
    if settings.configs.len() != 1 {
        let names: Vec<&str> = settings.configs.iter().map(|c| c.name.as_str()).collect();
        bail!(
            "run measures one transport config per launch (NCCL reads its environment once per process), but {} were selected ({}): pick one with --transports NAME",
            names.len(),
            names.join(", ")
        );
    }
    let rendezvous = match (&args.rendezvous, &layout.master) {
        (Some(text), _) => Rendezvous::parse(text)?,
        (None, Some(m)) => Rendezvous::Tcp {
            host: m.host.clone(),
            port: m.port.unwrap_or(DEFAULT_PORT),
        },
        (None, None) => bail!(
            "no rendezvous for rank 0: set MASTER_ADDR (and MASTER_PORT), or pass --rendezvous HOST:PORT or --rendezvous file:PATH ({} gives no node list)",
            layout.launcher.name()
        ),
    };
    let me = prepare(
        layout,
        settings,
        args.soak.as_ref(),
        rendezvous,
        args.rendezvous_timeout,
    )?;
    if args.settings.verbose {
        for note in me.layout.notes.iter().chain(
            me.backend
                .as_ref()
                .map(|b| b.steps.as_slice())
                .unwrap_or_default(),
        ) {
            eprintln!("rank {}: {note}", me.layout.rank);
        }
    }
    let scratch = std::env::temp_dir().join(format!("nccl-bench-run-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let context = AgentContext {
        rank: me.layout.rank,
        exe: std::env::current_exe().context("cannot find the nccl-bench executable")?,
        nccl_lib: me.hello.nccl.as_ref().map(|n| n.path.clone()),
        scratch: scratch.clone(),
        counters_root: args.soak.as_ref().and_then(|s| s.counters_root.clone()),
    };
    let result = if me.layout.rank == 0 {
        coordinate(args, &me, context, observers, command_line)
    } else {
        serve(&me, &context)
    };
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The launcher's job, so that a rendezvous file of another job is not used. Only
/// from the launcher that placed the ranks: under mpirun in a Slurm allocation the
/// ranks see different Slurm steps (the batch step, mpirun's daemons' step).
fn job_identity(launcher: Launcher, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    match launcher {
        Launcher::Slurm => env("SLURM_JOB_ID")
            .map(|job| format!("slurm-{job}.{}", env("SLURM_STEP_ID").unwrap_or_default())),
        Launcher::Torchrun => env("TORCHELASTIC_RUN_ID").map(|id| format!("torch-{id}")),
        _ => None,
    }
}

fn prepare(
    layout: RankLayout,
    mut settings: SweepSettings,
    soak: Option<&SoakSettings>,
    rendezvous: Rendezvous,
    timeout: Duration,
) -> Result<ThisRank> {
    let deadline = Instant::now() + timeout;
    let device = device_for(
        layout.local_rank,
        std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
    );

    let gpus = GpuPresence::probe();
    let resolved = backend::resolve(
        settings.backend,
        &gpus,
        settings.nccl_lib.as_deref(),
        &settings.configs,
        device as u32 + 1,
    );
    if let (Some(soak), Ok(b)) = (soak, &resolved) {
        // The memory and host checks below see the size the soak runs.
        settings.sizes = vec![crate::sweep::soak::size_for(b.name, soak.bytes)];
    }
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let mut gpu = None;
    let mut backend = resolved
        .and_then(|b| {
            backend::select::check_calls(&b, &settings.collectives, &settings.configs)?;
            if let Some(facts) = &b.gpus {
                gpu = Some(bus_id_of(
                    facts,
                    device,
                    layout.local_rank,
                    visible.as_deref(),
                )?);
                backend::select::check_gpu_memory(facts, &[device], settings.max_bytes())?;
                // At least local_rank + 1 ranks share this node's memory (the node's
                // last local rank checks for all of them).
                backend::select::check_host_memory_here(
                    layout.local_rank + 1,
                    settings.max_bytes(),
                )?;
            }
            Ok(b)
        })
        .map_err(|e| format!("{e:#}"));
    let config = &settings.configs[0];
    if let Ok(b) = &backend {
        // Half of what is left before the rendezvous deadline at most: a rank whose
        // preflight hangs still says why before the others give up on it.
        let limit = settings
            .timeout
            .min(deadline.saturating_duration_since(Instant::now()) / 2);
        let checked = match b.nccl_for(&config.name) {
            None => session::check_host_settings(&settings, layout.world_size),
            Some(nccl) => std::env::current_exe()
                .context("cannot find the nccl-bench executable")
                .and_then(|exe| {
                    let target = preflight::Target {
                        exe: &exe,
                        nccl_lib: &nccl.path,
                        device,
                    };
                    preflight::check_library(&target, nccl, settings.graph, limit)
                }),
        };
        if let Err(e) = checked {
            backend = Err(format!("{e:#}"));
        }
    }
    let hello = Hello {
        magic: MAGIC.to_string(),
        rank: layout.rank,
        world_size: layout.world_size,
        local_rank: layout.local_rank,
        device,
        gpu,
        host: crate::machine::host::hostname(),
        pid: std::process::id(),
        config: config.name.clone(),
        config_env: config.env.clone(),
        backend: backend.as_ref().map(|b| b.name).unwrap_or("none").into(),
        nccl: backend
            .as_ref()
            .ok()
            .and_then(|b| b.nccl_for(&config.name).cloned()),
        problem: backend.as_ref().err().cloned(),
        job: job_identity(layout.launcher, |k| std::env::var(k).ok()),
    };
    Ok(ThisRank {
        layout,
        settings,
        rendezvous,
        backend,
        hello,
        deadline,
    })
}

/// A rank other than 0: join, then serve rank 0 until it says the run is over.
fn serve(me: &ThisRank, context: &AgentContext) -> Result<u8> {
    let rank = me.layout.rank;
    let joined = rendezvous::join(&me.rendezvous, &me.hello, me.deadline)?;
    eprintln!(
        "rank {rank} of {} on {}: joined rank 0 at {}",
        me.layout.world_size, me.hello.host, me.rendezvous
    );
    // Rank 0 decides when the run stops; a launcher's Ctrl-C reaches it too.
    let _interrupted = session::interrupt_flag()?;
    let link: Link = Arc::new(Mutex::new(Box::new(joined.writer)));
    let (code, message) = agent::serve(context, joined.reader, link)?;
    if let Some(m) = message {
        eprintln!("rank {rank}: {m}");
    }
    Ok(code)
}

/// Rank 0: gather the ranks, check them, run the sweep, tell everyone the outcome.
fn coordinate(
    args: &RunRequest,
    me: &ThisRank,
    context: AgentContext,
    observers: Observers,
    command_line: Vec<String>,
) -> Result<u8> {
    let world = me.layout.world_size;
    let target = Target::choose(&Asked {
        run_dir: args.run_dir.as_deref(),
        pairs: args.pairs,
        soak: args.soak.is_some(),
        settings: &me.settings,
        world_size: world,
        backend: me.backend.as_ref().ok().map(|b| b.name),
    })?;
    let listener = Listener::open(&me.rendezvous, me.hello.job.as_deref())?;
    println!(
        "nccl-bench run: rank 0 of {world} ({} layout) on {}: waiting for {} rank(s) at {}",
        me.layout.launcher.name(),
        me.hello.host,
        world - 1,
        listener.address
    );
    let (own, own_agent) = start_own_agent(me.hello.clone(), context)?;
    let mut joined = gather::gather(&listener, &me.layout, &me.hello, me.deadline, own)?;
    joined.sort_by_key(|j| j.hello.rank);
    let hub = Hub::new(joined);
    let outcome = check_ranks(&hub, me).and_then(|backend| match &args.soak {
        Some(asked) => {
            let out = soak::Output {
                target,
                rendezvous: &listener.address,
                observer: observers.sweep,
                soak_observer: observers.soak,
                command_line,
            };
            soak::soak(me, asked, &backend, hub.clone(), out)
        }
        None => sweep(
            args,
            me,
            &backend,
            target,
            hub.clone(),
            &listener.address,
            observers.sweep,
            command_line,
        ),
    });
    let (code, message) = match &outcome {
        Ok(code) => (*code, None),
        Err(e) => (2, Some(format!("rank 0 stopped the run: {e:#}"))),
    };
    hub.done(code, message);
    // Its worker is already stopped (or given up on, within bounds): a short wait.
    let _ = own_agent.recv_timeout(Duration::from_secs(30));
    outcome
}

/// Rank 0's own worker is started by an agent too, in a thread, over a socket pair.
fn start_own_agent(
    hello: Hello,
    context: AgentContext,
) -> Result<(Joined, Receiver<Result<agent::Outcome>>)> {
    let (ours, theirs) = UnixStream::pair().context("cannot create a socket pair")?;
    let reader = BufReader::new(theirs.try_clone()?);
    let link: Link = Arc::new(Mutex::new(Box::new(theirs)));
    let (done, handle) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(agent::serve(&context, reader, link));
    });
    let joined = Joined {
        hello,
        reader: Box::new(BufReader::new(ours.try_clone()?)),
        writer: Box::new(ours),
    };
    Ok((joined, handle))
}

/// Refuses a run the ranks cannot do together; returns rank 0's backend.
fn check_ranks(hub: &Hub, me: &ThisRank) -> Result<ResolvedBackend> {
    let problems: Vec<String> = hub
        .hellos()
        .filter_map(|h| {
            h.problem
                .as_ref()
                .map(|p| format!("rank {} on {}: {p}", h.rank, h.host))
        })
        .collect();
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    if let Some(shared) = shared_gpu(hub.hellos()) {
        bail!("{shared}");
    }
    let backend = me.backend.clone().map_err(|e| anyhow!("rank 0: {e}"))?;
    let others: Vec<String> = hub
        .hellos()
        .filter(|h| h.backend != backend.name)
        .map(|h| format!("rank {} on {} uses {}", h.rank, h.host, h.backend))
        .collect();
    if !others.is_empty() {
        bail!(
            "rank 0 uses the {} backend but {}: give every rank the same --backend",
            backend.name,
            others.join(", ")
        );
    }
    let hosts = distinct_hosts(hub);
    let ifname = me.settings.configs[0]
        .env
        .get("NCCL_SOCKET_IFNAME")
        .cloned()
        .or_else(|| std::env::var("NCCL_SOCKET_IFNAME").ok());
    if backend.name == "host" && hosts.len() > 1 && ifname.is_none() {
        bail!(
            "the ranks are on {}, and the host backend listens on loopback unless NCCL_SOCKET_IFNAME names the interface the nodes reach each other on: set it (as for NCCL)",
            hosts.join(", ")
        );
    }
    Ok(backend)
}

#[allow(clippy::too_many_arguments)]
fn sweep(
    args: &RunRequest,
    me: &ThisRank,
    backend: &ResolvedBackend,
    target: Target,
    hub: Arc<Hub>,
    rendezvous: &str,
    observer: &mut dyn SweepObserver,
    command_line: Vec<String>,
) -> Result<u8> {
    let plan = plan(args, me, &hub)?;
    let paired;
    let settings = if args.pairs {
        paired = SweepSettings {
            // Each pair once (its groups repeat it per collective).
            configs: plan
                .groups
                .iter()
                .filter(|g| g.collective == plan.groups[0].collective)
                .map(|g| g.config.clone())
                .collect(),
            ..me.settings.clone()
        };
        &paired
    } else {
        &me.settings
    };
    // Before anything is written: a Ctrl-C from here on leaves a run directory whole.
    let interrupted = session::interrupt_flag()?;
    let (writer, run_start) = target.open(settings, &me.hello.host)?;
    session::keep_expected(settings, &writer.dir().path)?;
    let (manifest, warnings) = job_manifest(me, settings, backend, &hub, rendezvous, command_line);
    println!("{}", session::banner(backend));
    for w in &warnings {
        observer.warning(w);
    }
    // Histogram intervals are offsets from the run's start, also when appending.
    let since_start = SystemTime::now()
        .duration_since(run_start)
        .unwrap_or_default();
    let start = Instant::now()
        .checked_sub(since_start)
        .unwrap_or_else(Instant::now);
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
        observer,
        interrupted,
        run_start: start,
        gate: None,
    };
    let outcome = orchestrator.run(&plan)?;
    session::write_report(&writer.dir().path);
    Ok(session::exit_code(&outcome))
}

/// The config over every rank, or with `--pairs` over every pair of nodes.
fn plan(args: &RunRequest, me: &ThisRank, hub: &Hub) -> Result<Plan> {
    let config = &me.settings.configs[0];
    let groups = if args.pairs {
        let hosts: Vec<String> = hub.hellos().map(|h| h.host.clone()).collect();
        let nodes = distinct_hosts(hub);
        if nodes.len() < 2 {
            bail!(
                "--pairs pairs the job's nodes, and all {} ranks are on {}: for the GPU pairs of one node, use `nccl-bench sweep --pairs`",
                hosts.len(),
                nodes.join(", ")
            );
        }
        crate::config::node_pair_configs(std::slice::from_ref(config), &hosts)?
            .into_iter()
            .map(|config| {
                let nranks = config.ranks.as_ref().map_or(0, |r| r.len() as u32);
                (config, nranks)
            })
            .collect()
    } else {
        vec![(config.clone(), me.layout.world_size)]
    };
    let counts: Vec<u32> = groups.iter().map(|g| g.1).collect();
    let s = &me.settings;
    crate::config::check_root(&s.collectives, s.root, &counts)?;
    Ok(Plan::of(groups, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_identity_comes_from_the_launcher() {
        let slurm = |k: &str| match k {
            "SLURM_JOB_ID" => Some("812".to_string()),
            "SLURM_STEP_ID" => Some("3".to_string()),
            _ => None,
        };
        assert_eq!(
            job_identity(Launcher::Slurm, slurm).as_deref(),
            Some("slurm-812.3")
        );
        // mpirun in an allocation: its ranks' Slurm steps differ, so none is used.
        assert_eq!(job_identity(Launcher::OpenMpi, slurm), None);
        assert_eq!(job_identity(Launcher::Slurm, |_| None), None);
    }
}
