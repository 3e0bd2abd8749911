//! Helpers for the CLI tests: run `nccl-bench`, find its run directory, read the CSV,
//! and look for processes or shared-memory segments a run might have left behind.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

pub mod browser;
pub mod sim;

/// The machine, shared by the tests of this one binary (they run in parallel).
static MACHINE: RwLock<()> = RwLock::new(());

/// For a test whose assertion rests on timing this machine (the host backend's
/// transports against each other, a soak's dips, a stall found among rounds, a
/// throttled link): no other test runs while it holds this.
pub fn alone() -> RwLockWriteGuard<'static, ()> {
    let start = Instant::now();
    let guard = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    waited(start, "alone");
    guard
}

/// For every other test: any number of them run together, never beside a test that
/// holds [`alone`].
pub fn shared() -> RwLockReadGuard<'static, ()> {
    let start = Instant::now();
    let guard = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    waited(start, "shared");
    guard
}

/// Where `NCCL_BENCH_TEST_LOCK_LOG` names a file (scripts/test-times.sh sets it):
/// appends `test<TAB>seconds waited for the lock<TAB>alone|shared`, so that a test's
/// own time is its time less the wait.
fn waited(start: Instant, how: &str) {
    let Some(path) = std::env::var_os("NCCL_BENCH_TEST_LOCK_LOG") else {
        return;
    };
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let line = format!("{test}\t{:.3}\t{how}\n", start.elapsed().as_secs_f64());
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// This machine right now, for the log of a timing test that could not assert or
/// failed: its load averages, and over half a second the share of its cores that
/// were busy and that its hypervisor took (steal), from /proc.
pub fn machine_note() -> String {
    fn cpu() -> Option<Vec<u64>> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let line = stat.lines().next()?.strip_prefix("cpu ")?.to_string();
        Some(
            line.split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect(),
        )
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let before = cpu();
    std::thread::sleep(Duration::from_millis(500));
    let share = match (before, cpu()) {
        (Some(a), Some(b)) if a.len() >= 8 && b.len() >= 8 => {
            let d: Vec<u64> = a
                .iter()
                .zip(&b)
                .map(|(a, b)| b.saturating_sub(*a))
                .collect();
            let total: u64 = d.iter().take(8).sum::<u64>().max(1);
            let idle = d[3] + d[4];
            format!(
                "busy {:.0} %, steal {:.0} % of the cores over half a second",
                100.0 * (total - idle) as f64 / total as f64,
                100.0 * d[7] as f64 / total as f64
            )
        }
        _ => "no /proc/stat".to_string(),
    };
    format!(
        "machine: load {}, {share}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nccl-bench"))
}

/// A sweep command writing under `out`, with its own shm directory.
pub fn sweep(out: &Path, shm: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("sweep")
        .arg("--backend")
        .arg("host")
        .arg("--plain")
        .arg("--out")
        .arg(out)
        .arg("--shm-dir")
        .arg(shm)
        .env_remove("NCCL_BENCH_FAULT");
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") {
            c.env_remove(k);
        }
    }
    c
}

pub fn text(o: &Output) -> String {
    format!(
        "status: {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `text` with its wrapped lines joined again: a line indented by two spaces or more
/// continues the one before it.
pub fn joined(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines() {
        if l.starts_with("  ") && !out.is_empty() {
            out.pop();
            out.push(' ');
            out.push_str(l.trim_start());
        } else {
            out.push_str(l);
        }
        out.push('\n');
    }
    out
}

/// The answer a sweep ends with: the block from `answer: ` to the end of its output,
/// its wrapped lines joined; `None` where the output does not end with one.
pub fn answer(stdout: &str) -> Option<String> {
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with("answer: "))?;
    let rest = &lines[start + 1..];
    rest.iter().all(|l| l.starts_with("  ")).then(|| {
        std::iter::once(lines[start])
            .chain(rest.iter().map(|l| l.trim()))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The single run directory under `out`.
pub fn run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("out dir exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "expected one run directory in {}: {dirs:?}",
        out.display()
    );
    dirs.into_iter().next().unwrap()
}

/// results.csv as one map per row.
pub fn rows(run: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(run.join("results.csv")).expect("results.csv");
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            headers
                .iter()
                .map(String::from)
                .zip(r.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// Pids of live processes whose command line mentions `marker`.
pub fn processes_mentioning(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = state
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'));
            if !zombie && String::from_utf8_lossy(&cmd).contains(marker) {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Waits up to `limit` for no process to mention `marker`; returns those left.
pub fn wait_no_processes(marker: &str, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let left = processes_mentioning(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every file of a run directory's `logs/` (the workers' and NCCL's), as one text.
pub fn logs_text(run: &Path) -> String {
    std::fs::read_dir(run.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect()
}

pub fn dir_entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A TCP port for a rank 0 to listen on, never the same twice in one test binary
/// (tests run in parallel), and free when asked (bind(0)-and-close can hand two
/// tests the same port).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = 20_000 + (std::process::id() % 400) * 25;
    loop {
        let port = (base + NEXT.fetch_add(1, Ordering::SeqCst) % 12_000) as u16;
        if std::net::TcpListener::bind(("0.0.0.0", port)).is_ok() {
            return port;
        }
    }
}

/// The NCCL backend's positive path on this machine's GPU 0 with the libnccl at
/// `lib`: a one-rank communicator, the input filled on the device, an all-reduce,
/// the output checked exactly, and a timed batch. For machines with an NVIDIA driver
/// (and for the simulated GPUs, in a process whose LD_LIBRARY_PATH points at them).
pub fn one_rank_all_reduce_checks_out(lib: &Path) {
    use nccl_bench::backend::nccl::gpu::{GpuOptions, NcclBackend};
    use nccl_bench::backend::nccl::Nccl;
    use nccl_bench::backend::Backend;
    use nccl_bench::ops::pattern::Pattern;
    use nccl_bench::ops::{DataType, ReduceOp};

    let bytes = 1 << 20;
    let mut backend = NcclBackend::new(
        Nccl::load(lib).unwrap(),
        GpuOptions {
            device: 0,
            max_bytes: bytes,
            dtype: DataType::Float,
            op: ReduceOp::Sum,
            collective: nccl_bench::ops::collective::Collective::AllReduce,
            root: 0,
            graph: 0,
            event_stride: 1,
            init_timeout: Duration::from_secs(60),
            register: Default::default(),
        },
    );
    let id = backend.unique_id().unwrap();
    let mut comm = backend.init(&id, 0, 1).unwrap();
    let pattern = Pattern::new(DataType::Float, ReduceOp::Sum, 0, 1);
    comm.fill_input(&pattern, bytes).unwrap();
    comm.poison_output(bytes).unwrap();
    comm.run_once(bytes).unwrap();
    let report = comm.check_output(&pattern, bytes).unwrap();
    assert_eq!(report.wrong, 0, "{report:?}");
    let mut durations = vec![0u64; 50];
    comm.timed_batch(bytes, 1, &mut durations).unwrap();
    assert!(durations.iter().all(|&d| d > 0), "{durations:?}");
}

/// A lone `worker --backend nccl` (rank 0 of 1, 1 KiB floats) with stdin closed:
/// its exit and protocol output.
pub fn one_nccl_worker(lib: &Path) -> Output {
    let shm = tempfile::tempdir().unwrap();
    Command::new(bin())
        .args([
            "worker",
            "--backend",
            "nccl",
            "--rank",
            "0",
            "--nranks",
            "1",
        ])
        .args(["--max-bytes", "1024", "--datatype", "float", "--op", "sum"])
        .args(["--segment-prefix", "t", "--shm-dir"])
        .arg(shm.path())
        .arg("--nccl-lib")
        .arg(lib)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The positive path of `worker --backend nccl` on a machine with a driver: a lone
/// rank 0 says hello, hands out NCCL's unique id, builds its communicator, reports it
/// ready with the transports it found, and leaves with exit 0 when stdin closes.
pub fn one_nccl_worker_gets_ready(lib: &Path) {
    let o = one_nccl_worker(lib);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(names[..3], ["hello", "unique_id", "ready"], "{events:?}");
    assert!(!names.contains(&"error"), "{events:?}");
}

/// The positive path of `sweep --backend nccl` on a machine with a driver: one GPU,
/// two sizes, each case ok with nothing wrong and the library's version recorded.
pub fn one_gpu_nccl_sweep_is_ok(lib: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(bin())
        .args(["sweep", "--backend", "nccl", "--plain", "--gpus", "1"])
        .args(["-b", "8", "-e", "64K", "-f", "8192", "-n", "20"])
        .args(["--transports", "default"])
        .arg("--nccl-lib")
        .arg(lib)
        .arg("--out")
        .arg(&out)
        .arg("--shm-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = rows(&run_dir(&out));
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["wrong"], "0", "{r:?}");
        assert_eq!(r["nranks"], "1", "{r:?}");
    }
}

/// A `run` of 4 ranks on this machine: `cases` rows, each ok with 4 ranks, and the
/// manifest's launcher, world size and local ranks 0-3.
pub fn assert_four_local_ranks(run: &Path, cases: usize, launcher: &str) {
    let rows = rows(run);
    assert_eq!(rows.len(), cases, "{rows:?}");
    assert!(
        rows.iter()
            .all(|r| r["status"] == "ok" && r["nranks"] == "4"),
        "{rows:?}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let cluster = &manifest["cluster"];
    assert_eq!(cluster["launcher"], launcher, "{cluster}");
    assert_eq!(cluster["world_size"], 4, "{cluster}");
    let local: Vec<u64> = cluster["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["local_rank"].as_u64().unwrap())
        .collect();
    assert_eq!(local, [0, 1, 2, 3], "{cluster}");
}

/// A temporary directory with an empty `shm` directory in it (segments of the ranks).
pub fn scratch_with_shm() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let shm = tmp.path().join("shm");
    std::fs::create_dir(&shm).unwrap();
    (tmp, shm)
}

/// Each case's round medians and transports, one line a case: what a failed timing
/// assertion shows first, so that a wild round is seen even where the output is cut.
pub fn rounds_note(run: &Path) -> String {
    rows(run)
        .iter()
        .map(|r| {
            let f = |k: &str| r.get(k).map_or("", String::as_str);
            format!(
                "{} n={} {} B {}: {}\n",
                f("config"),
                f("nranks"),
                f("bytes"),
                f("transports"),
                f("round_p50_us")
            )
        })
        .collect()
}

/// Rows in a run directory's results.csv so far (0 before it exists).
pub fn rows_so_far(run: &Path) -> usize {
    std::fs::read_to_string(run.join("results.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// A run stopped by its launcher after its first case: no process mentioning `shm`
/// is left, the manifest says `interrupted`, and only the first case, ok, is kept.
pub fn assert_stopped_after_the_first_case(run: &Path, shm: &Path, stopped_by: &str) {
    let marker = shm.to_string_lossy().into_owned();
    assert_eq!(
        wait_no_processes(&marker, Duration::from_secs(15)),
        Vec::<u32>::new(),
        "ranks or workers outlived {stopped_by}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    let cases = rows(run);
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert_eq!(cases[0]["status"], "ok");
}

/// The manifest of a synthetic run of 2-rank float sums on `backend`, complete, with
/// no GPU, NCCL or host facts: tests fill in what they need.
pub fn synthetic_manifest(backend: &str) -> nccl_bench::model::RunManifest {
    nccl_bench::model::RunManifest::synthetic(backend)
}

/// The start of an `in_namespaces` script: two "nodes", node1 (this namespace,
/// 10.77.0.1) and node2 (a child network and host-name namespace, 10.77.0.2, its
/// pid in `$node2`), joined by a veth pair; `$bench $out $shm $logs` are set. Exit
/// 99 where the network cannot be built.
pub const TWO_NODES: &str = r#"
set -u
bench=$1; out=$2; shm=$3; logs=$4
ip link set lo up || exit 99
ip link add va type veth peer name vb || exit 99
ip addr add 10.77.0.1/24 dev va && ip link set va up || exit 99
hostname node1
unshare --net --uts sleep 120 &
node2=$!
while [ "$(readlink /proc/$node2/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.01; done
ip link set vb netns "$node2" || exit 99
nsenter -t "$node2" -n -u sh -c 'hostname node2; ip link set lo up; ip addr add 10.77.0.2/24 dev vb; ip link set vb up' || exit 99
"#;

/// A run's report.md.
pub fn report(run: &Path) -> String {
    std::fs::read_to_string(run.join("report.md")).unwrap()
}

/// Runs `script` with `sh` as root of a new user, network, UTS and mount
/// namespace (no real root needed), given nccl-bench, a results folder, a segment
/// folder and a folder for the ranks' output as $1..$4. The script exits 99 when
/// it cannot build its network (a missing tool): that fails the test saying so.
/// Returns its output and the results folder.
pub fn in_namespaces(script: &str, tmp: &Path, needs: &str) -> (Output, PathBuf) {
    let (out, shm, logs) = (tmp.join("results"), tmp.join("shm"), tmp.join("logs"));
    std::fs::create_dir(&shm).unwrap();
    std::fs::create_dir(&logs).unwrap();
    let o = Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "--uts", "--mount"])
        .args(["sh", "-c", script, "sh"])
        .arg(bin())
        .args([&out, &shm, &logs])
        .env_remove("NCCL_BENCH_FAULT")
        .output()
        .expect("unshare (util-linux) is needed for this test");
    assert_ne!(
        o.status.code(),
        Some(99),
        "cannot build the namespaces' network (needs {needs}): {}",
        text(&o)
    );
    (o, out)
}
