//! Today's NCCL on today's GPU nodes, on the simulated GPUs (tests/gpu-sim): the
//! stand-in plays the NCCL version it names (lazy connection from 2.22, non-blocking
//! collectives from 2.23, NVLS on NVSwitch machines, mixed rings under two PCIe
//! switches, devices renumbered by CUDA_VISIBLE_DEVICES, CUDA events at a 0.5 us
//! grain), and the product reads each right. Without the stand-in these tests fail
//! unless NCCL_BENCH_TEST_SKIP names `sim`. Nothing here is a measurement.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common::sim::{sim_dir, sim_sweep};
use crate::common::{report, rows, run_dir, text};

/// A sweep on `topo` that must succeed; its run directory and rows.
fn sweep_ok(
    dir: &Path,
    topo: &str,
    env: &[(&str, &str)],
    out: &Path,
    args: &[&str],
) -> (PathBuf, Vec<HashMap<String, String>>) {
    let o = sim_sweep(dir, topo, env, out, args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(out);
    let rows = rows(&run);
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
    }
    (run, rows)
}

/// Every NCCL debug log of a run, each as its lines.
fn nccl_logs(run: &Path) -> Vec<Vec<String>> {
    let mut logs = Vec::new();
    for e in std::fs::read_dir(run.join("logs")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains(".nccl.") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            logs.push(text.lines().map(str::to_string).collect());
        }
    }
    assert!(!logs.is_empty(), "no NCCL log in {}", run.display());
    logs
}

/// 8 GPUs on NVSwitch (H100 SXM): NCCL sets NVLS up for the large all-reduces, the
/// cell says `NVLS;...`, the case gets no ring ceiling and is judged against the
/// published NVLS figure, `nvls-off` stays on the ring and is judged against the
/// ring figure, and the report says what NVLS gained.
#[test]
fn nvswitch_sweeps_report_nvls_and_judge_it_against_the_nvls_figure() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let (run, rows) = sweep_ok(
        &dir,
        "nvswitch",
        &[],
        out.path(),
        &[
            "--gpus",
            "8",
            "-b",
            "16M",
            "-e",
            "16M",
            "--transports",
            "default,nvls-off",
        ],
    );
    let by = |config: &str| {
        rows.iter()
            .find(|r| r["config"] == config && r["nranks"] == "8")
            .unwrap()
    };
    let nvls = by("default");
    assert!(nvls["transports"].starts_with("NVLS"), "{nvls:?}");
    assert_eq!(nvls["ceiling_pct"], "", "{nvls:?}");
    let ring = by("nvls-off");
    assert!(!ring["transports"].contains("NVLS"), "{ring:?}");
    assert!(ring["transports"].starts_with("P2P/"), "{ring:?}");
    assert_ne!(ring["ceiling_pct"], "", "{ring:?}");
    // NCCL writes NVLS set-up lines, and no connection line `via NVLS`.
    let lines: Vec<String> = nccl_logs(&run).concat();
    assert!(lines
        .iter()
        .any(|l| l.contains("NVLS comm 0x") && l.contains("headRank")));
    assert!(!lines.iter().any(|l| l.contains("via NVLS")));
    let report = report(&run);
    assert!(report.contains("8 x H100 SXM, NVLS"), "{report}");
    assert!(report.contains("8 x H100 SXM, ring"), "{report}");
    assert!(report.contains("## What NVLS gained"), "{report}");
    assert!(
        report.contains("8 GPUs at 16 MiB: default") && report.contains("nvls-off"),
        "{report}"
    );
    // NVLS that bound says nothing of a fallback (sim_fabric reads the one that did not).
    assert!(
        !report.contains("NVLS failed and NCCL went on without it")
            && !report.contains("NCCL log: nvls-fallback"),
        "{report}"
    );
}

/// Four GPUs across two PCIe switches (CUDA_VISIBLE_DEVICES=0,1,4,5 of eight): P2P
/// inside each switch, SHM across, so the ring mixes both; the cell says so, NCCL's
/// bracketed device numbers are the physical ones, and the case gets a ceiling.
#[test]
fn two_pcie_switches_give_a_mixed_ring_with_a_ceiling() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let (run, rows) = sweep_ok(
        &dir,
        "pcie-2switch",
        &[("CUDA_VISIBLE_DEVICES", "0,1,4,5")],
        out.path(),
        &[
            "--gpus",
            "4",
            "-b",
            "1M",
            "-e",
            "1M",
            "--transports",
            "default",
        ],
    );
    let four = rows.iter().find(|r| r["nranks"] == "4").unwrap();
    assert_eq!(four["transports"], "P2P/CUMEM:50%;SHM:50%", "{four:?}");
    assert_ne!(four["ceiling_pct"], "", "{four:?}");
    let lines: Vec<String> = nccl_logs(&run).concat();
    // SHM lines carry no connection index (NCCL 2.13+ writes `Channel 00 :`).
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Channel 00 : 1[1] -> 2[4] via SHM/direct/direct")),
        "{lines:#?}"
    );
    let two = rows.iter().find(|r| r["nranks"] == "2").unwrap();
    assert_eq!(two["transports"], "P2P/CUMEM:100%", "{two:?}");
}

/// A PCIe node without peer access and with an InfiniBand NIC (GPUDirect RDMA):
/// SHM carries the ring, and with SHM off NCCL goes out through the NIC and back
/// (NET/IB, about as fast), not over sockets as `socket-only` does (4x slower). The
/// cells, the logs and the verdict say which network took SHM's place.
#[test]
fn without_shm_a_node_with_an_ib_nic_goes_over_net_ib_not_sockets() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let (run, rows) = sweep_ok(
        &dir,
        "pcie-nop2p",
        &[("NCCL_BENCH_SIM_NIC", "ib"), ("NCCL_BENCH_SIM_GPUS", "2")],
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "16M",
            "-e",
            "16M",
            "--rounds",
            "6",
            "--transports",
            "default,shm-off,socket-only",
        ],
    );
    let by = |config: &str| rows.iter().find(|r| r["config"] == config).unwrap();
    let busbw = |config: &str| by(config)["busbw_gbps"].parse::<f64>().unwrap();
    assert_eq!(by("default")["transports"], "SHM:100%");
    assert_eq!(by("shm-off")["transports"], "NET/IB:100%");
    assert_eq!(by("socket-only")["transports"], "NET/Socket:100%");
    // Two ring steps share the one NIC (20 GB/s on PCIe): 10 GB/s each, against
    // SHM's 11 and the sockets' 2.5.
    assert!(
        (9.0..11.0).contains(&busbw("shm-off")),
        "{}",
        busbw("shm-off")
    );
    assert!(busbw("shm-off") > 3.0 * busbw("socket-only"));
    let lines: Vec<String> = nccl_logs(&run).concat();
    for needle in [
        "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:",
        "Using network IB",
        "[send] via NET/IB/0/GDRDMA",
        "NCCL_IB_DISABLE set by environment to 1.",
    ] {
        assert!(lines.iter().any(|l| l.contains(needle)), "{needle}");
    }
    let report = report(&run);
    assert!(
        report.contains("Without SHM the traffic went over NET/IB."),
        "{report}"
    );
}

/// The first NCCL log line of `needle` comes after `Init COMPLETE` (lazy
/// connection) or before it (connection at init), in rank 0's log.
fn connects_after_init(run: &Path) -> bool {
    let logs = nccl_logs(run);
    let log = logs
        .iter()
        .find(|l| l.iter().any(|x| x.contains(" rank 0 nranks 2 ")))
        .unwrap();
    let at = |needle: &str| log.iter().position(|l| l.contains(needle)).unwrap();
    at("Channel 00") > at("Init COMPLETE")
}

/// NCCL connects its channels in the first collective from 2.22
/// (NCCL_RUNTIME_CONNECT=1 by default), at init before 2.22 and with
/// NCCL_RUNTIME_CONNECT=0; the transports are read either way.
#[test]
fn connections_are_lazy_from_2_22_and_read_either_way() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let args = [
        "--gpus",
        "2",
        "-b",
        "8",
        "-e",
        "8",
        "--transports",
        "default",
    ];
    for (name, env, lazy, cell) in [
        ("2.28", vec![], true, "P2P/CUMEM:100%"),
        (
            "2.28 eager",
            vec![("NCCL_RUNTIME_CONNECT", "0")],
            false,
            "P2P/CUMEM:100%",
        ),
        (
            "2.21",
            vec![("NCCL_BENCH_SIM_VERSION", "2.21.5")],
            false,
            "P2P/CUMEM:100%",
        ),
        (
            "2.18",
            vec![("NCCL_BENCH_SIM_VERSION", "2.18.3")],
            false,
            "P2P/IPC:100%",
        ),
    ] {
        let out = tempfile::tempdir().unwrap();
        let (run, rows) = sweep_ok(&dir, "nvlink", &env, out.path(), &args);
        assert_eq!(connects_after_init(&run), lazy, "{name}");
        assert_eq!(rows[0]["transports"], cell, "{name}");
    }
}

/// A non-blocking communicator (NCCL_COMM_BLOCKING=0: every collective returns
/// ncclInProgress until enqueued, 2.23+) times as the blocking one at 8 B: the
/// host's polling is not timed as the GPU's work. CUDA graphs work with it too.
#[test]
fn non_blocking_communicators_time_as_blocking_ones() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let p50 = |env: &[(&str, &str)], extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "8",
            "--transports",
            "default",
        ];
        args.extend_from_slice(extra);
        let (_, rows) = sweep_ok(&dir, "nvlink", env, out.path(), &args);
        rows[0]["p50_us"].parse::<f64>().unwrap()
    };
    let blocking = p50(&[], &[]);
    let non_blocking = p50(&[("NCCL_COMM_BLOCKING", "0")], &[]);
    assert!(
        (non_blocking / blocking - 1.0).abs() < 0.05,
        "blocking {blocking} us, non-blocking {non_blocking} us"
    );
    let graphs = p50(&[("NCCL_COMM_BLOCKING", "0")], &["--graph", "10"]);
    assert!(
        (graphs / blocking - 1.0).abs() < 0.05,
        "blocking {blocking} us, non-blocking graphs {graphs} us"
    );
}

/// CUDA events resolve to 0.5 us: a 6 us all-reduce timed alone reads 6.0 or 6.5 us.
/// The case's stride (one for all ranks and rounds) keeps the grain under 0.25 % of
/// a step, so the median is the mean within 1 % and no quality rule flags a small
/// size for the grain alone.
#[test]
fn the_event_grain_neither_biases_nor_flags_small_sizes() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let (_, rows) = sweep_ok(
        &dir,
        "nvlink",
        &[],
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "64K",
            "-f",
            "4",
            "--transports",
            "default",
            "--rounds",
            "6",
        ],
    );
    for r in &rows {
        assert_eq!(r["quality"], "ok", "{r:?}");
        let (p50, mean): (f64, f64) = (r["p50_us"].parse().unwrap(), r["time_us"].parse().unwrap());
        assert!((p50 / mean - 1.0).abs() < 0.02, "{r:?}");
        // One stride per case: the note names one.
        assert!(
            r["quality_note"].matches("a timestamp every").count() <= 1,
            "{r:?}"
        );
    }
}

/// NCCL 2.28 connects in the first collective: with Docker's 64 MB /dev/shm (and a
/// CUDA 12.4 driver, so SHM is on /dev/shm), four and eight ranks' SHM segments do not
/// fit (9,637,888 B per channel and rank), and the first all-reduce of every fresh
/// process group would fail the same way. The first size fails with NCCL's words, the
/// rest of the group at once with that reason; two ranks fit and run.
#[test]
fn a_connection_set_up_failure_fails_the_rest_of_its_group_at_once() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = common::sim::sweep_in_small_dev_shm(
        &dir,
        "pcie-nop2p",
        &[],
        out.path(),
        &[
            "--gpus",
            "8",
            "-b",
            "1K",
            "-e",
            "128K",
            "--transports",
            "default",
            "--rounds",
            "1",
        ],
    );
    assert_ne!(o.status.code(), Some(99), "no tmpfs: {}", text(&o));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let run = run_dir(out.path());
    let rows = rows(&run);
    assert_eq!(rows.len(), 24);
    for r in &rows {
        match (r["nranks"].as_str(), r["bytes"].as_str()) {
            ("2", _) => assert_eq!(r["status"], "ok", "{r:?}"),
            (_, "1024") => {
                assert_eq!(r["status"], "failed", "{r:?}");
                // 2.28's words: the errno tail NCCL adds from 2.22.3.
                assert!(
                    r["error"].contains("Error while creating shared memory segment")
                        && r["error"].contains(", error: No space left on device (28)"),
                    "{r:?}"
                );
            }
            _ => {
                assert_eq!(r["status"], "failed", "{r:?}");
                assert!(
                    r["error"].starts_with(
                        "not run: NCCL's connection set-up failed at 1 KiB and would fail again"
                    ) && r["error"].contains("Error while creating shared memory segment"),
                    "{r:?}"
                );
            }
        }
    }
    // One process group tried for the four and for the eight ranks, not one per size
    // (besides the untimed probe group, which met the same failure).
    for n in ["default.n4", "default.n8"] {
        let tries = common::dir_entries(&run.join("logs"))
            .iter()
            .filter(|l| l.starts_with(n) && l.ends_with(".rank0.log"))
            .filter(|l| !l.contains(".probe."))
            .count();
        assert_eq!(tries, 1, "{n}");
    }
}

/// Every all-reduce hangs. Each group spends two timeouts, then records its other
/// sizes as skipped with the reason: 8 sizes x 2 configs at --timeout 2s finish
/// within 2 x 2 s + 30 s per group. `--try-every-size` tries every size.
#[test]
fn a_hang_costs_at_most_two_timeouts_per_group() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let hang = [("NCCL_BENCH_SIM_FAULT", "hang")];
    let out = tempfile::tempdir().unwrap();
    let start = std::time::Instant::now();
    let o = sim_sweep(
        &dir,
        "nvlink",
        &hang,
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "1K",
            "--transports",
            "default,shm-off",
            "--timeout",
            "2s",
        ],
    );
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(took.as_secs_f64() < 2.0 * (2.0 * 2.0 + 30.0), "{took:?}");
    let skipped = rows(&run_dir(out.path()));
    assert_eq!(skipped.len(), 16);
    for r in &skipped {
        match r["bytes"].as_str() {
            "8" | "16" => assert_eq!(r["status"], "timeout", "{r:?}"),
            _ => {
                assert_eq!(r["status"], "skipped", "{r:?}");
                assert!(
                    r["error"].starts_with(
                        "skipped: 8 B and 16 B, the two sizes before, timed out (--timeout 2s)"
                    ),
                    "{r:?}"
                );
            }
        }
    }
    let out = tempfile::tempdir().unwrap();
    let o = sim_sweep(
        &dir,
        "nvlink",
        &hang,
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "32",
            "--transports",
            "default",
            "--timeout",
            "2s",
            "--try-every-size",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let every = rows(&run_dir(out.path()));
    assert_eq!(every.len(), 3);
    assert!(every.iter().all(|r| r["status"] == "timeout"), "{every:?}");
    // A connection that never finishes (from 2.22 in the first all-reduce, which
    // blocks in ncclAllReduce itself): the same two timeouts, then skipped.
    let out = tempfile::tempdir().unwrap();
    let o = sim_sweep(
        &dir,
        "nvlink",
        &[("NCCL_BENCH_SIM_FAULT", "connect-hang")],
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "32",
            "--transports",
            "default",
            "--timeout",
            "2s",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let statuses: Vec<String> = rows(&run_dir(out.path()))
        .iter()
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(statuses, ["timeout", "timeout", "skipped"]);
}

/// An abort that blocks (NVIDIA/nccl#1777) does not cost the reason: each rank
/// reports NCCL's error to the orchestrator first, then aborts with a bounded wait
/// and exits. Here a peer's failure (`remote-error`) and an all-reduce that never
/// completes (`hang`, stopped at the rank's own deadline), each with `abort-hang`.
#[test]
fn a_blocking_abort_does_not_lose_the_reason() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let args = [
        "--gpus",
        "2",
        "-b",
        "8",
        "-e",
        "8",
        "--transports",
        "default",
        "--timeout",
        "8s",
    ];
    for (fault, status, words) in [
        ("remote-error+30,abort-hang", "failed", "ncclRemoteError"),
        ("hang+30,abort-hang", "timeout", "the worker's deadline"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let o = sim_sweep(
            &dir,
            "nvlink",
            &[("NCCL_BENCH_SIM_FAULT", fault)],
            out.path(),
            &args,
        );
        assert_eq!(o.status.code(), Some(1), "{fault}: {}", text(&o));
        let r = rows(&run_dir(out.path())).remove(0);
        assert_eq!(r["status"], status, "{fault}: {r:?}");
        assert!(r["error"].contains(words), "{fault}: {r:?}");
    }
}

/// `run` on the simulated GPUs, rank `r` of 2 under Slurm-style variables, with
/// `visible` as its CUDA_VISIBLE_DEVICES (None: unset, every GPU visible).
fn sim_run_rank(
    dir: &Path,
    out: &Path,
    r: u32,
    port: u16,
    visible: Option<&str>,
) -> std::process::Command {
    let mut c = common::sim::on_sim(
        dir,
        "nvlink",
        &[],
        &[
            "run",
            "--backend",
            "nccl",
            "--plain",
            "--nccl-lib",
            dir.join("libnccl.so.2").to_str().unwrap(),
            "-b",
            "8",
            "-e",
            "8",
            "--rounds",
            "1",
            "--transports",
            "default",
            "--ceiling-bytes",
            "0",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    for (k, v) in [
        ("SLURM_PROCID", r.to_string()),
        ("SLURM_NTASKS", "2".into()),
        ("SLURM_LOCALID", r.to_string()),
        ("SLURM_NODEID", "0".into()),
        ("SLURM_JOB_NODELIST", "localhost".into()),
        ("SLURM_JOB_ID", "4343".into()),
        ("SLURM_STEP_ID", "0".into()),
        ("MASTER_PORT", port.to_string()),
    ] {
        c.env(k, v);
    }
    for k in ["SLURM_GPUS_PER_TASK", "LOCAL_RANK", "RANK", "WORLD_SIZE"] {
        c.env_remove(k);
    }
    match visible {
        Some(v) => c.env("CUDA_VISIBLE_DEVICES", v),
        None => c.env_remove("CUDA_VISIBLE_DEVICES"),
    };
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c
}

/// Each rank of `run` drives its own GPU whether the launcher gives each task one
/// visible GPU (`--gpus-per-task=1`: CUDA_VISIBLE_DEVICES differs per rank) or
/// shows every GPU to every rank; two ranks given the same GPU are refused before
/// NCCL would say `Duplicate GPU detected`.
#[test]
fn run_gives_each_rank_its_own_gpu_and_refuses_a_shared_one() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let both = |visible: [Option<&str>; 2]| {
        let out = tempfile::tempdir().unwrap();
        let port = common::free_port();
        let children: Vec<std::process::Child> = [1u32, 0]
            .iter()
            .map(|&r| {
                sim_run_rank(&dir, out.path(), r, port, visible[r as usize])
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut outputs: Vec<std::process::Output> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        outputs.reverse();
        (out, outputs)
    };
    for visible in [[Some("0"), Some("1")], [None, None]] {
        let (out, outputs) = both(visible);
        for o in &outputs {
            assert_eq!(o.status.code(), Some(0), "{visible:?}: {}", text(o));
        }
        let run = run_dir(out.path());
        let lines: Vec<String> = nccl_logs(&run).concat();
        for r in 0..2 {
            let cuda = if visible[0].is_some() { 0 } else { r };
            let want = format!("rank {r} nranks 2 cudaDev {cuda} nvmlDev {r} ");
            assert!(
                lines.iter().any(|l| l.contains(&want)),
                "{visible:?}: no '{want}' in {lines:#?}"
            );
        }
    }
    let (_, outputs) = both([Some("0"), Some("0")]);
    let rank0 = &outputs[0];
    assert_eq!(rank0.status.code(), Some(2), "{}", text(rank0));
    assert!(
        String::from_utf8_lossy(&rank0.stderr).contains("ranks 0 and 1 on ")
            && String::from_utf8_lossy(&rank0.stderr).contains("would both drive the GPU at"),
        "{}",
        text(rank0)
    );
}

/// Two "nodes" (network and host-name namespaces joined by a veth pair, as
/// tests/it/two_nodes.rs builds them) of two simulated GPUs each, four `run` ranks with
/// the NCCL backend: the ring crosses the nodes over NET and stays on P2P inside
/// each, so the cell mixes both, each NET connection counted once although NCCL
/// logs it on both sides.
#[test]
fn two_nodes_mix_net_and_p2p_in_one_ring() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    // After `common::TWO_NODES`: four ranks, two per node.
    const RANKS: &str = r#"
export WORLD_SIZE=4 MASTER_ADDR=10.77.0.1 MASTER_PORT=29556 NCCL_SOCKET_IFNAME=v
export LD_LIBRARY_PATH=$SIM NCCL_BENCH_SIM_TOPO=nvlink NCCL_BENCH_SIM_BOOTSTRAP_DIR=$shm
set -- run --backend nccl --nccl-lib $SIM/libnccl.so.2 --plain -b 1K -e 64K -n 5 \
    --rounds 1 --transports default --ceiling-bytes 0 --rendezvous-timeout 20s \
    --out "$out" --label two-nodes
RANK=3 LOCAL_RANK=1 nsenter -t "$node2" -n -u "$bench" "$@" >"$logs/r3" 2>&1 & p3=$!
RANK=2 LOCAL_RANK=0 nsenter -t "$node2" -n -u "$bench" "$@" >"$logs/r2" 2>&1 & p2=$!
RANK=1 LOCAL_RANK=1 "$bench" "$@" >"$logs/r1" 2>&1 & p1=$!
RANK=0 LOCAL_RANK=0 "$bench" "$@" >"$logs/r0" 2>&1
rc=$?
for p in $p1 $p2 $p3; do wait "$p" || rc=$?; done
kill "$node2"
for r in 0 1 2 3; do echo "== rank $r"; cat "$logs/r$r"; done
exit $rc
"#;
    let tmp = tempfile::tempdir().unwrap();
    let sim = format!("'{}'", dir.display().to_string().replace('\'', "'\\''"));
    let script = format!("{}{RANKS}", common::TWO_NODES).replace("$SIM", &sim);
    let (o, out) = common::in_namespaces(&script, tmp.path(), "ip and nsenter");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(&out);
    let all = rows(&run);
    assert_eq!(all.len(), 7, "{all:?}");
    for r in &all {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["backend"], "nccl-sim", "{r:?}");
        // Links 0->1 and 2->3 stay in a node (P2P), 1->2 and 3->0 cross (NET).
        assert_eq!(r["transports"], "NET/Socket:50%;P2P/CUMEM:50%", "{r:?}");
    }
    let lines: Vec<String> = nccl_logs(&run).concat();
    assert!(lines.iter().any(|l| l.contains("[send] via NET/Socket")));
    assert!(lines.iter().any(|l| l.contains("[receive] via NET/Socket")));
}
