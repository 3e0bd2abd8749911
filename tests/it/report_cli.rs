//! `report`: report.md and report.html, written by every sweep and on demand, with the
//! SHM verdict drawn from the data, in the order a person decides; a directory that
//! is not a run is exit 2.

use crate::common;

#[test]
fn a_host_sweep_writes_a_report_with_the_shm_verdict() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let o = common::sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default,shm-off",
            "-b",
            "8",
            "-e",
            "64K",
            "-f",
            "8",
            "-n",
            "200",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let run = common::run_dir(out.path());
    let report = std::fs::read_to_string(run.join("report.md")).expect("sweep writes report.md");
    assert!(
        report.contains("**Host backend (CPU), not NCCL.**"),
        "{report}"
    );
    // The verdict depends on this machine's speeds (TCP loopback is usually far
    // slower than shared memory, but a loaded CI machine decides): one of the
    // verdicts is given. The verdicts themselves are tested on the simulated GPUs,
    // whose times do not depend on the machine.
    let verdicts = [
        "**Keep SHM**: ",
        "**Disabling SHM costs nothing measurable**: ",
        "**Not settled**: ",
    ];
    assert!(
        verdicts.iter().any(|v| report.contains(v)),
        "no verdict: {report}"
    );
    assert!(report.contains("| shm-off |"), "{report}");
    assert!(report.contains("| NET/Socket |"), "{report}");
    // Host ranks are CPU processes, not GPUs, in the report and on the plots.
    assert!(report.contains("## 2 ranks\n"), "{report}");
    assert!(!report.contains("2 GPUs"), "{report}");
    let title = std::fs::read_to_string(run.join("plots/busbw-n2.svg")).unwrap();
    assert!(
        title.contains("All-reduce bus bandwidth, 2 ranks"),
        "busbw-n2.svg"
    );
    // The plots are drawn and embedded.
    for name in ["busbw-n2", "latency-n2", "relative-n2"] {
        for ext in ["svg", "png"] {
            let f = run.join("plots").join(format!("{name}.{ext}"));
            assert!(f.is_file(), "{} missing", f.display());
        }
        assert!(
            report.contains(&format!("![{name}.svg](plots/{name}.svg)")),
            "{report}"
        );
    }

    // In the order a person decides: the verdict first, then whether the bandwidth is
    // normal, then the GPU count's table with its plots; the machine last.
    let at = |h: &str| report.find(h).unwrap_or_else(|| panic!("{h}: {report}"));
    assert!(at("## Keep SHM enabled?") < at("## Is this bandwidth normal?"));
    assert!(at("## Is this bandwidth normal?") < at("## 2 ranks\n"));
    assert!(at("## 2 ranks\n") < at("![busbw-n2.svg]"));
    assert_eq!(report.rfind("\n## "), Some(at("## Machine and run") - 1));
    // The same as one page, with its charts inline.
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("<h2>Keep SHM enabled?</h2>"), "{page}");
    assert_eq!(
        page.matches("<svg").count(),
        report.matches("](plots/").count()
    );

    // On demand, with another baseline: the verdict needs "default", the tables do not.
    std::fs::remove_file(run.join("report.md")).unwrap();
    std::fs::remove_file(run.join("report.html")).unwrap();
    let o = std::process::Command::new(common::bin())
        .args(["report", "--baseline", "shm-off"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("vs shm-off at"), "{report}");
    assert!(run.join("report.html").is_file());
}

#[test]
fn report_on_something_that_is_not_a_run_is_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(common::bin())
        .arg("report")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a run directory"));
    assert!(!tmp.path().join("report.md").exists());
}

/// A number as the report prints it: `2.27 GB/s`, `18.04 us`, `2.5x slower`, `1.1 %
/// faster`, read back as a value (the change as a fraction).
fn change_of(words: &str) -> f64 {
    let (amount, way) = words.rsplit_once(' ').unwrap();
    let x: f64 = amount
        .trim_end_matches(" %")
        .trim_end_matches('x')
        .parse()
        .unwrap_or_else(|_| panic!("{words}"));
    match (amount.ends_with('x'), way) {
        (true, "slower") => x - 1.0,
        (true, _) => 1.0 / x - 1.0,
        (false, "slower") => x / 100.0,
        (false, _) => -x / 100.0,
    }
}

/// The first screen's numbers come again from results.csv: busbw at the largest size
/// and the latency at the smallest (the geometric mean of the round medians), and each
/// change against the baseline from the rounds side by side; the answer's are the same.
#[test]
fn the_first_screen_is_results_csv_read_again() {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/examples/host-backend-2cpu");
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for file in ["manifest.json", "results.csv", "histograms.hlog"] {
        std::fs::copy(example.join(file), run.join(file)).unwrap();
    }
    let o = std::process::Command::new(common::bin())
        .arg("report")
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let glance = report
        .split("## At a glance\n")
        .nth(1)
        .and_then(|r| r.split("\n## ").next())
        .unwrap_or_else(|| panic!("no first screen: {report}"));
    let rows = common::rows(&run);
    let rounds = |config: &str, n: &str, bytes: u64| -> Vec<f64> {
        let r = rows
            .iter()
            .find(|r| r["config"] == config && r["nranks"] == n && r["bytes"] == bytes.to_string())
            .unwrap();
        r["round_p50_us"]
            .split(';')
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let geomean = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    let paired = |a: &[f64], b: &[f64]| {
        let n = a.len().min(b.len());
        ((0..n).map(|i| (b[i] / a[i]).ln()).sum::<f64>() / n as f64).exp() - 1.0
    };
    let table: Vec<&str> = glance.lines().filter(|l| l.starts_with("| ")).collect();
    let configs: Vec<&str> = table[0]
        .split('|')
        .map(str::trim)
        .skip(2)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(configs[0], "default", "{glance}");
    let (small, large) = (8u64, 8u64 << 20);
    let mut checked = 0;
    for line in &table[1..] {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let n = cells[1];
        for (config, cell) in configs.iter().zip(&cells[2..]) {
            let row = rows
                .iter()
                .find(|r| {
                    r["config"] == *config && r["nranks"] == n && r["bytes"] == large.to_string()
                })
                .unwrap();
            let (bw, rest) = cell.split_once(" GB/s").unwrap();
            assert_eq!(
                bw,
                format!("{:.2}", row["busbw_gbps"].parse::<f64>().unwrap()),
                "{cell}"
            );
            let latency: f64 = rest
                .split(", ")
                .nth(1)
                .and_then(|l| l.split(" us").next())
                .unwrap()
                .parse()
                .unwrap();
            let want = geomean(&rounds(config, n, small));
            assert!(
                (latency - want).abs() <= 0.006,
                "{cell}: latency {want:.3} us"
            );
            if *config != "default" {
                let said: Vec<f64> = cell
                    .split('(')
                    .skip(1)
                    .map(|b| change_of(b.split(')').next().unwrap()))
                    .collect();
                let want =
                    [large, small].map(|b| paired(&rounds("default", n, b), &rounds(config, n, b)));
                assert_eq!(said.len(), 2, "{cell}");
                for (s, w) in said.iter().zip(want) {
                    // As printed: one decimal of a ratio or of a percentage.
                    assert!((s - w).abs() <= 0.05 * w.abs().max(0.01), "{cell}: {w:+.4}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 6, "{glance}");
    assert!(
        glance.contains("Each cell: busbw at 8 MiB, latency at 8 B; in brackets, the change against default over the rounds both ran;"),
        "{glance}"
    );
    // What is not trusted, counted from results.csv.
    let failed = rows
        .iter()
        .filter(|r| !["ok", "unsupported", "skipped"].contains(&r["status"].as_str()))
        .count();
    let flagged = rows
        .iter()
        .filter(|r| r["status"] == "ok" && ["noisy", "outlier"].contains(&r["quality"].as_str()))
        .count();
    assert!(flagged > 0, "the example has flagged cases");
    assert!(
        glance.contains(&format!(
            "Not trusted: of {} cases, {failed} failed, 0 did not run and {flagged} are flagged",
            rows.len()
        )),
        "{glance}"
    );
    // The answer is the 4-rank shm-off cell's two changes.
    let answer = glance.lines().find(|l| l.starts_with("**Answer:")).unwrap();
    let want =
        [large, small].map(|b| paired(&rounds("default", "4", b), &rounds("shm-off", "4", b)));
    assert!(
        answer.contains(&format!("{:.1}x slower at 8 MiB", 1.0 + want[0])),
        "{answer}"
    );
    assert!(
        answer.contains(&format!("{:.1} % at 8 B on 4 ranks", want[1] * 100.0)),
        "{answer}"
    );
}
