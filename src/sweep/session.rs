//! The `sweep` command from checked settings to exit code: choose the backend, warn
//! about what would make the numbers mislead, create the run directory and manifest,
//! run the orchestrator with SIGINT/SIGTERM handling, and map the outcome to the exit
//! code (0 all cases ok, 1 some case failed, timed out or was wrong, 130 interrupted).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use anyhow::{bail, Context, Result};

use super::orchestrator::{Orchestrator, SweepOutcome};
use super::plan::Plan;
use super::preflight;
use super::process::LocalLaunch;
use super::SweepObserver;
use crate::backend::host::{HostOptions, BANNER};
use crate::backend::{self, ResolvedBackend};
use crate::config::{SweepSettings, TransportConfig};
use crate::doctor::Sizing;
use crate::export::{RunDir, RunWriter};
use crate::machine::GpuPresence;
use crate::model::SIMULATED_NOTE;
use crate::model::{BackendInfo, CaseCounts, RunManifest, RunStatus, ToolInfo, SCHEMA_VERSION};
use crate::units::{now_rfc3339, now_stamp, wrapped};

/// Most ranks the host backend runs on one machine.
pub const MAX_HOST_RANKS: u32 = 64;

/// Exit code of an interrupted sweep (as a shell reports SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Variables the host backend acts on; every other one changes nothing there.
const HOST_MODELLED: [&str; 5] = [
    "NCCL_SHM_DISABLE",
    "NCCL_BUFFSIZE",
    "NCCL_NET",
    "NCCL_SOCKET_IFNAME",
    "NCCL_SOCKET_FAMILY",
];

pub fn run(
    settings: &SweepSettings,
    observer: &mut dyn SweepObserver,
    command_line: Vec<String>,
    gate: Option<crate::analysis::baseline::Gate>,
) -> Result<u8> {
    let gpus = GpuPresence::probe();
    let max_ranks = settings.gpu_counts.iter().copied().max().unwrap_or(1);
    let backend = backend::resolve(
        settings.backend,
        &gpus,
        settings.nccl_lib.as_deref(),
        &settings.configs,
        settings.device_count(),
    )?;
    backend::select::check_calls(&backend, &settings.collectives, &settings.configs)?;
    let mut reached = settings.clone();
    let mut size_note = None;
    if let Some(facts) = &backend.gpus {
        let devices: Vec<usize> = (0..settings.device_count() as usize).collect();
        backend::select::check_gpu_memory(facts, &devices, settings.max_bytes())?;
        backend::select::check_host_memory_here(max_ranks, settings.max_bytes())?;
        size_note = backend::select::reach_figures(&mut reached, facts, |bytes| {
            backend::select::check_gpu_memory(facts, &devices, bytes).is_ok()
                && backend::select::check_host_memory_here(max_ranks, bytes).is_ok()
        });
    }
    let settings = &reached;
    let exe = std::env::current_exe().context("cannot find the nccl-bench executable")?;
    check_libraries(settings, &backend, &exe)?;
    let mut warnings = settings.warnings.clone();
    warnings.extend(size_note);
    warnings.extend(inherited_warnings(&settings.configs, std::env::vars()));
    let checks = crate::doctor::quick_checks(
        &crate::machine::Root::this_machine(),
        &settings.shm_dir,
        max_ranks,
        shm_sizing(backend.name, settings),
    );
    warnings.extend(failed_checks(&checks));
    if backend.name == "host" {
        if max_ranks > MAX_HOST_RANKS {
            bail!("--gpus asks for {max_ranks} ranks; the host backend runs at most {MAX_HOST_RANKS} processes");
        }
        if !settings.shm_dir.is_dir() {
            bail!(
                "--shm-dir {} is not a directory",
                settings.shm_dir.display()
            );
        }
        check_host_settings(settings, max_ranks)?;
        warnings.extend(host_warnings(settings, max_ranks));
    }

    let writer = RunWriter::new(new_run_dir(settings)?, SystemTime::now())?;
    keep_expected(settings, &writer.dir().path)?;
    let mut manifest = manifest(settings, &backend, command_line, &gpus, warnings.clone());
    if let (Some(design), Some(gate)) = (manifest.design.as_mut(), gate.as_ref()) {
        design.gate = Some(crate::model::GateDesign {
            baseline: gate.path.display().to_string(),
            alpha: crate::stats::change::GATE_ALPHA,
            threshold: gate.threshold,
        });
    }
    manifest.doctor = checks;
    manifest.ceilings = ceilings(&backend, settings, max_ranks, &exe);

    let interrupted = interrupt_flag()?;
    if settings.verbose {
        for step in &backend.steps {
            eprintln!("{step}");
        }
    }
    println!("{}", banner(&backend));
    let plan = Plan::new(settings);
    let max_time = match settings.iterations {
        crate::config::IterationPolicy::Adaptive { max_time, .. } => Some(max_time),
        crate::config::IterationPolicy::Fixed { .. } => None,
    };
    // Each line of the plan wrapped at the terminal's width, its later lines indented.
    let described = plan.describe(settings.rounds(), &manifest.looks, max_time);
    for line in described.lines() {
        match line.strip_prefix("  ") {
            Some(inner) => print!("{}", wrapped(inner, "  ", "    ")),
            None => print!("{}", wrapped(line, "", "  ")),
        }
    }
    if let Some(c) = &manifest.ceilings {
        print!("{}", wrapped(&ceilings_line(c), "", "  "));
    }
    for w in &warnings {
        observer.warning(w);
    }
    let mut launch = LocalLaunch { exe };
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
        run_start: Instant::now(),
        gate: gate.clone(),
    };
    let outcome = orchestrator.run(&plan)?;
    write_report(&writer.dir().path);
    let code = exit_code(&outcome);
    match gate {
        Some(gate) if code != EXIT_INTERRUPTED => {
            let checked = super::gate::check(&writer.dir().path, &gate)?;
            Ok(if checked != 0 { checked } else { code })
        }
        _ => Ok(code),
    }
}

/// Each libnccl the configs load, once: a one-rank communicator in a worker of its
/// own, so that a library that cannot run stops the command before anything is
/// written.
pub(crate) fn check_libraries(
    settings: &SweepSettings,
    backend: &ResolvedBackend,
    exe: &std::path::Path,
) -> Result<()> {
    let mut checked: Vec<&std::path::Path> = Vec::new();
    for c in &settings.configs {
        let Some(nccl) = backend.nccl_for(&c.name) else {
            continue;
        };
        if checked.contains(&nccl.path.as_path()) {
            continue;
        }
        checked.push(&nccl.path);
        let target = preflight::Target {
            exe,
            nccl_lib: &nccl.path,
            device: 0,
        };
        preflight::check_library(&target, nccl, settings.graph, settings.timeout)?;
    }
    Ok(())
}

/// The run directory: `--run-dir` as given, else a new one under `--out` named by
/// the time, host and label. Never one that exists.
pub(crate) fn new_run_dir(settings: &SweepSettings) -> Result<RunDir> {
    let host = crate::machine::host::hostname();
    match &settings.run_dir {
        Some(path) => RunDir::create_at(path),
        None => RunDir::create(
            &settings.out_dir,
            &now_stamp(),
            &host,
            settings.label.as_deref(),
        ),
    }
}

/// Keeps the sweep's `--expected` table in the run directory, so that its report
/// (now, or when written again) holds the run against the same figures.
pub(crate) fn keep_expected(settings: &SweepSettings, run_dir: &std::path::Path) -> Result<()> {
    if let Some(text) = &settings.expected {
        let path = run_dir.join(crate::export::run_dir::EXPECTED);
        crate::export::atomic::write(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The link rates of this machine, measured now: the reference that each case's
/// `ceiling_pct` is read against.
fn ceilings(
    backend: &ResolvedBackend,
    settings: &SweepSettings,
    max_ranks: u32,
    exe: &std::path::Path,
) -> Option<crate::model::Ceilings> {
    if backend.name == "host" {
        return Some(crate::backend::host::ceiling::measure());
    }
    if settings.ceiling_bytes == 0 {
        return None;
    }
    // The GPUs the sweep's ranks use, in a process of its own that is stopped if
    // it hangs: a ceiling missing is said, never a reason not to sweep.
    let devices: Vec<usize> = (0..settings.device_count().max(max_ranks) as usize).collect();
    Some(crate::backend::nccl::ceiling::run_in_child(
        exe,
        &devices,
        settings.ceiling_bytes,
        std::time::Duration::from_secs(120),
    ))
}

/// "link ceilings (measured now): memcpy 9.52 GB/s, tcp-loopback 2.51 GB/s"; for
/// many links of a kind, their range and count ("p2p 148.2-149.7 GB/s (28)").
pub(crate) fn ceilings_line(c: &crate::model::Ceilings) -> String {
    let mut kinds: Vec<crate::model::LinkKind> = Vec::new();
    for l in &c.links {
        if !kinds.contains(&l.kind) {
            kinds.push(l.kind);
        }
    }
    let mut parts: Vec<String> = kinds
        .into_iter()
        .map(|kind| {
            let rates: Vec<f64> = c
                .links
                .iter()
                .filter(|l| l.kind == kind)
                .map(|l| l.gbps)
                .collect();
            let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = rates.iter().copied().fold(0.0, f64::max);
            if rates.len() == 1 {
                format!("{} {lo:.2} GB/s", kind.as_str())
            } else {
                format!("{} {lo:.1}-{hi:.1} GB/s ({})", kind.as_str(), rates.len())
            }
        })
        .collect();
    parts.extend(c.errors.iter().map(|e| format!("not measured: {e}")));
    format!("link ceilings (measured now): {}", parts.join(", "))
}

/// A failed doctor check does not stop a sweep (the host backend, or a config that
/// avoids the problem, may still run): it is said, with its fix.
pub(crate) fn failed_checks(checks: &[crate::model::Check]) -> Vec<String> {
    checks
        .iter()
        .filter(|c| c.status == crate::model::Status::Fail)
        .map(|c| {
            let fix = c
                .fix
                .as_deref()
                .map(|f| format!("; fix: {f}"))
                .unwrap_or_default();
            format!("doctor: {} FAIL: {}{fix}", c.title, c.value)
        })
        .collect()
}

/// The first SIGINT/SIGTERM sets the flag (a clean stop); a second one exits at once
/// (the workers die with us through PR_SET_PDEATHSIG).
pub(crate) fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(
            signal,
            EXIT_INTERRUPTED as i32,
            interrupted.clone(),
        )
        .and_then(|_| signal_hook::flag::register(signal, interrupted.clone()))
        .context("cannot install the signal handler")?;
    }
    Ok(interrupted)
}

/// The report is a reading of what is on disk: a failure to write it is said, and
/// does not change what was measured or the exit code.
pub fn write_report(run_dir: &std::path::Path) {
    let threshold = crate::stats::change::DEFAULT_THRESHOLD;
    match crate::report::write(run_dir, "default", threshold) {
        Ok(path) => println!("report: {}", path.display()),
        Err(e) => eprintln!("warning: no report: {e:#}"),
    }
    if let Some(answer) = crate::export::reader::RunData::load(run_dir)
        .ok()
        .and_then(|run| crate::report::verdict::one_line(&run, "default", threshold))
    {
        // Wrapped, its later lines indented: the answer is the block that starts at
        // `answer: `, the last of a sweep's output.
        print!("{}", wrapped(&answer, "answer: ", "  "));
    }
}

/// 0 every case ok, 1 some case failed, timed out or was wrong, 130 interrupted.
pub(crate) fn exit_code(outcome: &SweepOutcome) -> u8 {
    if outcome.interrupted {
        EXIT_INTERRUPTED
    } else if outcome.counts.all_ok() {
        0
    } else {
        1
    }
}

pub(crate) fn banner(backend: &ResolvedBackend) -> String {
    let rule = "=".repeat(78);
    if backend.simulated() {
        return format!(
            "{rule}\n {}: the libnccl loaded is nccl-bench's test stand-in\n (tests/gpu-sim), {}.\n The numbers come from its cost model: they test nccl-bench, they measure nothing.\n{rule}",
            SIMULATED_NOTE.to_uppercase(),
            backend.reason
        );
    }
    if backend.name != "host" {
        return format!("nccl-bench: {} backend: {}", backend.name, backend.reason);
    }
    format!(
        "{rule}\n {}: {}.\n Ranks are CPU processes exchanging data over shared memory segments or TCP\n loopback. The numbers measure this machine's CPU transports, not NCCL on GPUs.\n{rule}",
        BANNER.to_uppercase(),
        backend.reason
    )
}

pub(crate) fn manifest(
    settings: &SweepSettings,
    backend: &ResolvedBackend,
    command_line: Vec<String>,
    gpus: &GpuPresence,
    warnings: Vec<String>,
) -> RunManifest {
    RunManifest {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::this(),
        command_line,
        label: settings.label.clone(),
        status: RunStatus::Running,
        started_at: now_rfc3339(),
        finished_at: None,
        error: None,
        backend: BackendInfo {
            requested: format!("{:?}", settings.backend).to_lowercase(),
            used: backend.label().into(),
            note: if backend.simulated() {
                format!("{SIMULATED_NOTE}: {}", backend.reason)
            } else if backend.name == "host" {
                format!("{BANNER}: {}", backend.reason)
            } else {
                backend.reason.clone()
            },
        },
        nccl: backend.nccl.clone(),
        nccl_per_config: backend.nccl_per_config.iter().cloned().collect(),
        gpu: backend.gpus.clone(),
        host: crate::machine::host::host_info(&settings.shm_dir, gpus.bus_ids.clone()),
        configs: settings.configs.clone(),
        gpu_counts: settings.gpu_counts.clone(),
        sizes: settings.sizes.clone(),
        dtype: settings.dtype,
        op: settings.op,
        collectives: settings.collectives.clone(),
        root: settings.root,
        sizes_not_run: Vec::new(),
        iterations: settings.iterations,
        rounds: settings.rounds(),
        looks: Plan::new(settings).looks(settings),
        design: Some(crate::model::SweepDesign {
            alpha: crate::stats::change::ALPHA,
            threshold: crate::stats::change::DEFAULT_THRESHOLD,
            margin: crate::stats::change::DEFAULT_THRESHOLD,
            order: "williams".into(),
            rows: Vec::new(),
            gate: None,
        }),
        group_rounds: Vec::new(),
        warmup_iters: settings.warmup,
        graph_iters: settings.graph,
        timeout_s: settings.timeout.as_secs_f64(),
        cases: CaseCounts::default(),
        warnings,
        cluster: None,
        doctor: Vec::new(),
        ceilings: None,
        soak: None,
        shm_backing: Default::default(),
        sizes_from: settings.sizes_from.clone(),
        nccl_env: Default::default(),
    }
}

/// Whose /dev/shm segments the doctor's check sizes for this sweep: the host
/// backend's (the largest any config's variables give, as the variables of this
/// process apply underneath them), or NCCL's.
pub(crate) fn shm_sizing(backend: &str, settings: &SweepSettings) -> Sizing {
    if backend != "host" {
        return Sizing::Nccl;
    }
    let segment_bytes = settings
        .configs
        .iter()
        .filter_map(|c| {
            let mut options = HostOptions::for_validation();
            options
                .apply_env(|k| c.env.get(k).cloned().or_else(|| std::env::var(k).ok()))
                .ok()?;
            Some(options.segment_bytes() as u64)
        })
        .max()
        .unwrap_or_else(|| HostOptions::for_validation().segment_bytes() as u64);
    Sizing::HostBackend { segment_bytes }
}

/// What would fail every case of the host backend is refused before the run starts:
/// an environment value it cannot use, buffers the machine cannot hold.
pub(crate) fn check_host_settings(settings: &SweepSettings, max_ranks: u32) -> Result<()> {
    if settings.graph > 0 {
        bail!(
            "--graph {} captures CUDA graphs, which the host backend does not have: use --backend nccl on a GPU machine, or leave --graph out",
            settings.graph
        );
    }
    for c in &settings.configs {
        let mut options = HostOptions::for_validation();
        options
            .apply_env(|k| c.env.get(k).cloned())
            .map_err(|e| anyhow::anyhow!("config '{}' ({}): {e}", c.name, c.source))?;
    }
    // Each rank holds an input and an output buffer of the largest message.
    let need = 2 * settings.max_bytes() * max_ranks as u64;
    if let Some(available) = crate::machine::host::memory_available() {
        if need > available {
            bail!(
                "{} messages {} with {max_ranks} ranks need {} of memory (an input and an output buffer per rank) but {} is available",
                crate::units::Bytes(settings.max_bytes()),
                crate::backend::select::SIZE_FLAGS,
                crate::units::Bytes(need),
                crate::units::Bytes(available)
            );
        }
    }
    Ok(())
}

/// `NCCL_*` variables inherited from the caller apply to every config that does not
/// set them: a global `NCCL_SHM_DISABLE=1` silently turns `default` into `shm-off`.
pub fn inherited_warnings(
    configs: &[TransportConfig],
    env: impl Iterator<Item = (String, String)>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut vars: Vec<(String, String)> = env
        .filter(|(k, _)| {
            k.starts_with("NCCL_") && !k.starts_with("NCCL_DEBUG") && !k.starts_with("NCCL_BENCH_")
        })
        .collect();
    vars.sort();
    for (k, v) in vars {
        let affected: Vec<&str> = configs
            .iter()
            .filter(|c| !c.env.contains_key(&k))
            .map(|c| c.name.as_str())
            .collect();
        if !affected.is_empty() {
            out.push(format!(
                "{k}={v} is set in the environment and applies to config(s) {} (those that do not set it themselves)",
                affected.join(", ")
            ));
        }
    }
    out
}

pub(crate) fn host_warnings(settings: &SweepSettings, max_ranks: u32) -> Vec<String> {
    let mut out = Vec::new();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    if max_ranks > cores {
        out.push(format!(
            "{max_ranks} ranks on {cores} CPU cores: host backend ranks share cores, so times include scheduling delays"
        ));
    }
    for c in settings.configs.iter().filter(|c| c.nccl_lib.is_some()) {
        out.push(format!(
            "config '{}': nccl_lib is ignored by the host backend",
            c.name
        ));
    }
    out.extend(unmodelled(&settings.configs));
    out
}

/// The configs whose NCCL variables the host backend does not model (its own test
/// faults it does).
fn unmodelled(configs: &[TransportConfig]) -> Vec<String> {
    let mut out = Vec::new();
    for c in configs {
        let ignored: Vec<&str> = c
            .env
            .keys()
            .map(String::as_str)
            .filter(|k| {
                k.starts_with("NCCL_") && !HOST_MODELLED.contains(k) && *k != super::fault::ENV
            })
            .collect();
        if !ignored.is_empty() {
            out.push(format!(
                "config '{}': the host backend does not model {} (GPU-side settings); it measures the same transport as without them",
                c.name,
                ignored.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::transport::default_configs;

    #[test]
    fn a_global_shm_disable_is_called_out() {
        let env = vec![
            ("NCCL_SHM_DISABLE".to_string(), "1".to_string()),
            ("NCCL_DEBUG".to_string(), "INFO".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
        ];
        let w = inherited_warnings(&default_configs(), env.into_iter());
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("NCCL_SHM_DISABLE=1 is set in the environment and applies to config(s) default, p2p-off "), "{}", w[0]);
    }

    /// A GPU-side variable is called out; the host's own slowdown fault, which its
    /// workers apply, is not.
    #[test]
    fn the_host_names_the_variables_it_does_not_model() {
        let config = |name: &str, env: &[(&str, &str)]| TransportConfig {
            name: name.to_string(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        let w = unmodelled(&[
            config("slow", &[("NCCL_BENCH_FAULT", "slow:pct=10")]),
            config(
                "p2p-level",
                &[("NCCL_P2P_LEVEL", "NVL"), ("NCCL_SHM_DISABLE", "1")],
            ),
        ]);
        assert_eq!(
            w,
            ["config 'p2p-level': the host backend does not model NCCL_P2P_LEVEL (GPU-side settings); it measures the same transport as without them"]
        );
    }
}
