//! `nccl-bench import`: nccl-tests outputs become run directories that `compare`
//! reads; malformed input is exit 2 with its line number, and nothing existing is
//! overwritten.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use nccl_bench::test_inputs::{need, Need};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new(common::bin())
        .args(args)
        .output()
        .unwrap()
}

fn import(file: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "import".as_ref(),
        file.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    run(&args)
}

#[test]
fn an_nccl_tests_table_becomes_a_run_directory() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("imported");
    let o = import(&fixture("all_reduce_perf-2ranks.txt"), &out, &[]);
    assert!(o.status.success(), "{}", common::text(&o));
    let rows = common::rows(&out);
    assert_eq!(rows.len(), 10, "5 sizes, out-of-place and in-place");
    let first = &rows[0];
    assert_eq!(
        first["config"], "shm-off",
        "named after the preset with the same NCCL variables"
    );
    assert_eq!(first["backend"], "nccl-tests");
    assert_eq!(first["nranks"], "2");
    assert_eq!(first["bytes"], "8");
    assert_eq!(first["time_us"], "10.500");
    assert_eq!(first["iters"], "50");
    assert_eq!(first["p50_us"], "", "no percentiles in nccl-tests output");
    assert_eq!(rows[1]["config"], "shm-off-inplace");
    assert_eq!(rows[1]["time_us"], "10.200");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["backend"]["used"], "nccl-tests");
    assert_eq!(manifest["configs"][0]["env"]["NCCL_SHM_DISABLE"], "1");

    // compare reads it and shows no change against itself: one mean a side, judged
    // against the threshold with no error rate.
    let o = run(&["compare".as_ref(), out.as_os_str(), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    // Its sentences wrap at the terminal's width: read as one line.
    let text = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("The candidate is within +-2.0 % at all 10 cases: every change between +0.0 % and +0.0 %; one measurement a side, no error rate."),
        "{text}"
    );
    // In-place against out-of-place within the import: in-place is ~3 % faster,
    // beyond the 2 % threshold on the means.
    let o = run(&[
        "compare".as_ref(),
        out.as_os_str(),
        "--config-a".as_ref(),
        "shm-off".as_ref(),
        "--config-b".as_ref(),
        "shm-off-inplace".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for pair in report["rows"].as_array().unwrap() {
        assert_eq!(pair["case"]["change"], "faster", "{pair}");
        assert_eq!(pair["case"]["estimate"]["basis"], "point", "{pair}");
    }
}

#[test]
fn malformed_input_is_exit_2_with_the_line_and_nothing_is_overwritten() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x");
    let o = import(&fixture("all_reduce_perf-bad-row.txt"), &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("line 14"), "{stderr}");
    assert!(!out.exists());

    let o = import(&fixture("broken.toml"), &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("table"),
        "{}",
        common::text(&o)
    );

    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), "mine").unwrap();
    let o = import(&fixture("all_reduce_perf-2ranks.txt"), &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    assert_eq!(std::fs::read_to_string(out.join("keep")).unwrap(), "mine");
}

/// The real outputs in ../shared/fixtures/nccl-tests, read in place.
#[test]
fn every_shared_nccl_tests_fixture_imports() {
    let _machine = crate::common::shared();
    let Some(dir) = need(Need::Fixtures("nccl-tests")) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let expected = [
        ("nccl-tests-1-old-error-column-no-root.txt", 20, Some("16")),
        ("nccl-tests-2-mpirun-tag-output-old-format.txt", 56, None),
        ("nccl-tests-3-srun-label-na-multinode.txt", 22, None),
        (
            "nccl-tests-5-current-v2.19.4-nccl-2.19.3-UNIDENTIFIED-SOURCE.txt",
            50,
            None,
        ),
        ("nccl-tests-5b-current-v2.20.0-partial.txt", 8, None),
    ];
    for (name, rows, nranks) in expected {
        let out = tmp.path().join(name);
        let extra: Vec<&str> = nranks.map(|n| vec!["--nranks", n]).unwrap_or_default();
        let o = import(&dir.join(name), &out, &extra);
        assert!(o.status.success(), "{name}: {}", common::text(&o));
        assert_eq!(common::rows(&out).len(), rows, "{name}");
    }
    let o = import(
        &dir.join("nccl-tests-1-old-error-column-no-root.txt"),
        &tmp.path().join("no-ranks"),
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give --nranks"));
}

/// A `-J` document as nccl-tests 2.17-2.19 writes it with `-I 1` (src/util.cu): one
/// line, `%lf` numbers, booleans and the root as strings, `per_process_max_times_us`
/// with two processes. `time(bytes, iteration)` gives each iteration's time (us);
/// the first process is the slower in even iterations.
fn json_v3(sizes: &[u64], iters: usize, skip: usize, time: impl Fn(u64, usize) -> f64) -> String {
    let list = |v: &[f64]| {
        let cells: Vec<String> = v.iter().map(|t| format!("{t:.6}")).collect();
        format!("[{}]", cells.join(","))
    };
    let mut results = Vec::new();
    for &bytes in sizes {
        let times: Vec<f64> = (0..iters).map(|i| time(bytes, i)).collect();
        let other: Vec<f64> = times.iter().map(|t| t - 0.25).collect();
        let (first, second) = (
            times
                .iter()
                .zip(&other)
                .enumerate()
                .map(|(i, (t, o))| if i % 2 == 0 { *t } else { *o })
                .collect::<Vec<_>>(),
            times
                .iter()
                .zip(&other)
                .enumerate()
                .map(|(i, (t, o))| if i % 2 == 0 { *o } else { *t })
                .collect::<Vec<_>>(),
        );
        let summary: Vec<f64> = times[skip..].to_vec();
        let mean = times.iter().sum::<f64>() / iters as f64;
        let algbw = bytes as f64 / mean / 1e3;
        let per_iter = |key: &str| {
            let mut sorted = summary.clone();
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len();
            let avg = sorted.iter().sum::<f64>() / n as f64;
            format!(
                concat!(
                    r#""{}":{{"skipped_iterations":{},"min_us":{:.6},"max_us":{:.6},"avg_us":{:.6},"#,
                    r#""p50_us":{:.6},"p95_us":{:.6},"p99_us":{:.6},"stdev_us":0.000000,"cv_pct":0.000000,"#,
                    r#""times_us":{},"per_process_max_times_us":[{},{}]}}"#
                ),
                key,
                skip,
                sorted[0],
                sorted[n - 1],
                avg,
                sorted[n / 2],
                sorted[n * 95 / 100],
                sorted[n * 99 / 100],
                list(&times),
                list(&first),
                list(&second)
            )
        };
        results.push(format!(
            concat!(
                r#"{{"size":{},"count":{},"type":"float","redop":"sum","root":"    -1","#,
                r#""out_of_place":{{"time":{:.6},"alg_bw":{:.6},"bus_bw":{:.6},"nwrong":0.000000}},{},"#,
                r#""in_place":{{"time":{:.6},"alg_bw":{:.6},"bus_bw":{:.6},"nwrong":0.000000}},{},"#,
                r#""actual_iterations":{},"experiment_name":""}}"#
            ),
            bytes,
            bytes / 4,
            mean,
            algbw,
            algbw,
            per_iter("out_of_place_per_iter"),
            mean,
            algbw,
            algbw,
            per_iter("in_place_per_iter"),
            iters
        ));
    }
    format!(
        concat!(
            r#"{{"version":3,"start_time":"2026-11-20 02:00:00","#,
            r#""args":["./build/all_reduce_perf","-b","1K","-e","4M","-f","4","-g","1","-n","{}","-I","1","-K","{}","-J","out.json"],"#,
            r#""env":["NCCL_DEBUG=WARN"],"nccl_version":22703,"#,
            r#""config":{{"nthreads":1,"ngpus":1,"minimum_bytes":1024,"maximum_bytes":4194304,"step_factor":4,"#,
            r#""warmup_iters":5,"iterations":{},"aggregated_iterations":1,"validation":1,"graph":0,"#,
            r#""blocking_collectives":"false","per_iter_timing":"true","per_iter_skip":{},"parallel_init":"false","#,
            r#""devices":[{{"rank":0,"group":0,"pid":101,"hostname":"node1","device":0,"device_hex":"0000:18:00","device_info":"NVIDIA H100 80GB HBM3"}},"#,
            r#"{{"rank":1,"group":0,"pid":102,"hostname":"node1","device":1,"device_hex":"0000:2a:00","device_info":"NVIDIA H100 80GB HBM3"}}]}},"#,
            r#""results":[{}],"out_of_bounds":{{"count":0,"okay":"true"}},"#,
            r#""average_bus_bandwidth":{{"bandwidth":1.000000,"okay":"unchecked"}},"errors":[],"end_time":"2026-11-20 02:00:09"}}"#
        ),
        iters,
        skip,
        iters,
        skip,
        results.join(",")
    )
}

/// Noise a run keeps from one import to the next: a fixed pattern, so the test
/// cannot fail by chance.
fn jitter(bytes: u64, i: usize, seed: u64) -> f64 {
    let x = (i as u64 * 2654435761 + bytes * 40503 + seed * 97) % 1000;
    1.0 + x as f64 / 1000.0 * 0.04
}

const JSON_SIZES: [u64; 4] = [1024, 16384, 1 << 20, 4 << 20];

fn json_time(bytes: u64, i: usize, scale_large: f64, seed: u64) -> f64 {
    let base = 8.0 + bytes as f64 / 20_000.0;
    let scale = if bytes >= 1 << 20 { scale_large } else { 1.0 };
    (base * jitter(bytes, i, seed) * scale * 1000.0).round() / 1000.0
}

#[test]
fn json_per_iteration_times_become_histograms_and_compare_judges_the_medians() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (iters, skip) = (200, 3);
    let doc = json_v3(&JSON_SIZES, iters, skip, |b, i| json_time(b, i, 1.0, 1));
    let file = tmp.path().join("base.json");
    std::fs::write(&file, &doc).unwrap();
    let base = tmp.path().join("base");
    let o = import(&file, &base, &[]);
    assert!(o.status.success(), "{}", common::text(&o));

    // Every time after the -K skip reaches the case's histogram, and nothing else.
    let histograms: std::collections::HashMap<String, hdrhistogram::Histogram<u64>> =
        nccl_bench::export::hlog::read(&base.join("histograms.hlog"))
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(histograms.len(), 8, "out-of-place and in-place, 4 sizes");
    let rows = common::rows(&base);
    for &bytes in &JSON_SIZES {
        let tag = format!("default/n2/{bytes}/float/sum");
        let h = &histograms[&tag];
        let mut expected: Vec<u64> = (skip..iters)
            .map(|i| (json_time(bytes, i, 1.0, 1) * 1e3).round() as u64)
            .collect();
        assert_eq!(h.len(), expected.len() as u64, "{tag}");
        expected.sort_unstable();
        let mut recorded = Vec::new();
        for v in h.iter_recorded() {
            for _ in 0..v.count_at_value() {
                recorded.push(v.value_iterated_to());
            }
        }
        for (r, e) in recorded.iter().zip(&expected) {
            assert!(h.equivalent(*r, *e), "{tag}: {r} ns recorded for {e} ns");
        }
        let row = rows
            .iter()
            .find(|r| r["config"] == "default" && r["bytes"] == bytes.to_string())
            .unwrap();
        assert_eq!(row["hist_tag"], tag);
        let p50: f64 = row["p50_us"].parse().unwrap();
        let median = expected[(expected.len() - 1) / 2] as f64 / 1e3;
        assert!((p50 - median).abs() / median < 0.002, "{p50} vs {median}");
        assert!(!row["median_ci_low_us"].is_empty() && !row["quality"].is_empty());
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(base.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["started_at"], "2026-11-20T02:00:00",
        "when nccl-tests ran"
    );
    let note = manifest["backend"]["note"].as_str().unwrap();
    assert!(
        note.contains("per-iteration times (-I 1) as histograms"),
        "{note}"
    );

    // Another night, 10 % slower from 1 MiB: one measurement a side (the medians),
    // judged against the 5 % threshold with no error rate, finds exactly those, and
    // the gate fails on them as nccl-tests' NCCL_TESTS_MIN_BW would.
    let doc = json_v3(&JSON_SIZES, iters, skip, |b, i| json_time(b, i, 1.10, 2));
    let file = tmp.path().join("slow.json");
    std::fs::write(&file, &doc).unwrap();
    let slow = tmp.path().join("slow");
    assert!(import(&file, &slow, &[]).status.success());
    let o = run(&[
        "compare".as_ref(),
        base.as_os_str(),
        slow.as_os_str(),
        "--threshold".as_ref(),
        "5%".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pairs = report["rows"].as_array().unwrap();
    assert_eq!(pairs.len(), 8);
    for pair in pairs {
        assert_eq!(pair["case"]["estimate"]["basis"], "point", "{pair}");
        let large = pair["bytes"].as_u64().unwrap() >= 1 << 20;
        assert_eq!(
            pair["case"]["change"],
            if large { "slower" } else { "within" },
            "{pair}"
        );
    }
}

/// `-I` over 20 iterations (nccl-tests' default `-n`): our p90, p99 and the
/// median's interval rest on 20 samples, so only the interval is given; nccl-tests'
/// own p95 and p99 stay, in their own columns, exactly as it printed them.
#[test]
fn an_import_of_twenty_iterations_keeps_nccl_tests_tails_and_gives_none_of_its_own() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let doc = json_v3(&JSON_SIZES, 20, 0, |b, i| json_time(b, i, 1.0, 3));
    let file = tmp.path().join("twenty.json");
    std::fs::write(&file, &doc).unwrap();
    let out = tmp.path().join("twenty");
    let o = import(&file, &out, &[]);
    assert!(o.status.success(), "{}", common::text(&o));
    let rows = common::rows(&out);
    assert_eq!(rows.len(), 8);
    for row in &rows {
        let bytes: u64 = row["bytes"].parse().unwrap();
        let mut times: Vec<f64> = (0..20).map(|i| json_time(bytes, i, 1.0, 3)).collect();
        times.sort_by(f64::total_cmp);
        // The document's own figures, as json_v3 printed them (%.6f, read at %.3f).
        let own = |v: f64| format!("{v:.3}");
        assert_eq!(row["nccl_tests_p95_us"], own(times[19]), "{row:?}");
        assert_eq!(row["nccl_tests_p99_us"], own(times[19]), "{row:?}");
        assert_eq!((row["p90_us"].as_str(), row["p99_us"].as_str()), ("", ""));
        assert!(!row["p50_us"].is_empty() && !row["max_us"].is_empty());
        assert!(!row["median_ci_low_us"].is_empty(), "20 samples give one");
        assert!(
            row["quality_note"].contains(
                "p90 and p99 left empty: 20 samples, a percentile needs 10 beyond it \
                 (p90 from 100, p99 from 1,000; nccl-tests' own p95 and p99 are in \
                 nccl_tests_p95_us and nccl_tests_p99_us)"
            ),
            "{row:?}"
        );
    }

    // Five iterations: not even an interval of the median.
    let doc = json_v3(&JSON_SIZES[..1], 5, 0, |b, i| json_time(b, i, 1.0, 3));
    std::fs::write(&file, &doc).unwrap();
    let five = tmp.path().join("five");
    assert!(import(&file, &five, &[]).status.success());
    let row = &common::rows(&five)[0];
    assert_eq!(row["median_ci_low_us"], "");
    assert!(
        row["quality_note"]
            .contains("5 iterations: too few for a 95 % interval of the median (6 needed)"),
        "{row:?}"
    );
}

fn started_at(run: &Path) -> String {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert!(
        manifest["backend"]["note"]
            .as_str()
            .is_some_and(|n| n.contains("started at") || n.contains("dated by")),
        "{manifest}"
    );
    manifest["started_at"].as_str().unwrap().to_string()
}

/// `history` orders imported nightly runs by when nccl-tests ran: a text output
/// without times is dated by its file, `-S` by its first row, `--started-at` wins.
#[test]
fn text_imports_are_dated_so_that_history_can_order_them() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("night.txt");
    std::fs::copy(fixture("all_reduce_perf-2ranks.txt"), &copy).unwrap();
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_790_000_000);
    std::fs::File::options()
        .write(true)
        .open(&copy)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let by_file = tmp.path().join("by-file");
    let o = import(&copy, &by_file, &[]);
    assert!(o.status.success(), "{}", common::text(&o));
    let t = started_at(&by_file);
    let parsed = chrono::DateTime::parse_from_rfc3339(&t).unwrap();
    assert_eq!(parsed.timestamp(), 1_790_000_000, "{t}");

    let given = tmp.path().join("given");
    let o = import(&copy, &given, &["--started-at", "2026-11-24 02:00"]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(started_at(&given), "2026-11-24T02:00:00");

    // -S: a timestamp column; its first row dates the run.
    let text = std::fs::read_to_string(&copy).unwrap();
    let stamped: String = text
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("#") && t.contains("size") && t.contains("count") {
                format!("{l}           timestamp\n")
            } else if t.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                format!("{l}  2026-07-10 12:00:01\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let stamped_file = tmp.path().join("stamped.txt");
    std::fs::write(&stamped_file, stamped).unwrap();
    let by_stamp = tmp.path().join("by-stamp");
    let o = import(&stamped_file, &by_stamp, &[]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(started_at(&by_stamp), "2026-07-10T12:00:01");

    let bad = tmp.path().join("bad");
    let o = import(&copy, &bad, &["--started-at", "last tuesday"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("'last tuesday' is not a time"),
        "{}",
        common::text(&o)
    );
    assert!(!bad.exists());
}

/// What an imported run's results.csv holds per case: (config, collective, bytes,
/// busbw, hist_tag).
fn cases(run: &Path) -> Vec<(String, String, String, String, String)> {
    common::rows(run)
        .into_iter()
        .map(|r| {
            (
                r["config"].clone(),
                r["collective"].clone(),
                r["bytes"].clone(),
                r["busbw_gbps"].clone(),
                r["hist_tag"].clone(),
            )
        })
        .collect()
}

/// The real outputs of alltoall_perf, all_gather_perf and sendrecv_perf in
/// tests/fixtures: each run directory names the collective its binary measured, with
/// the sizes and busbw nccl-tests printed (each binary's own bus factor).
#[test]
fn outputs_of_other_binaries_import_as_their_collective() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let expected = [
        (
            "nccl-tests-alltoall_perf-gb300-4ranks.txt",
            &[][..],
            "alltoall",
            "4",
            32,
            ("524288", "27.110"),
            ("17179869184", "627.690"),
        ),
        (
            "nccl-tests-all_gather_perf-gb10-2nodes.txt",
            &[][..],
            "all_gather",
            "2",
            12,
            ("536870912", "18.390"),
            ("17179869184", "23.740"),
        ),
        (
            "nccl-tests-sendrecv_perf-a100-8gpus.txt",
            &["--nranks", "8"][..],
            "sendrecv",
            "8",
            8,
            ("134217728", "110.810"),
            ("1073741824", "195.100"),
        ),
    ];
    for (name, extra, collective, nranks, count, first, last) in expected {
        let out = tmp.path().join(collective);
        let o = import(&fixture(name), &out, extra);
        assert!(o.status.success(), "{name}: {}", common::text(&o));
        let said = String::from_utf8_lossy(&o.stdout);
        assert!(said.contains(&format!("rows of {collective} (")), "{said}");
        let rows = common::rows(&out);
        assert_eq!(rows.len(), count, "{name}");
        for r in &rows {
            assert_eq!(r["collective"], collective, "{name}: {r:?}");
            assert_eq!(r["nranks"], nranks, "{name}");
            assert_eq!((r["dtype"].as_str(), r["op"].as_str()), ("float", "sum"));
            assert_eq!(r["status"], "ok", "{name}: {r:?}");
            assert_eq!(r["hist_tag"], "", "{name}: text has no per-iteration times");
        }
        let out_of_place: Vec<_> = cases(&out)
            .into_iter()
            .filter(|c| !c.0.ends_with("-inplace"))
            .map(|c| (c.2, c.3))
            .collect();
        let pair = |p: (&str, &str)| (p.0.to_string(), p.1.to_string());
        assert_eq!(out_of_place.first(), Some(&pair(first)), "{name}");
        assert_eq!(out_of_place.last(), Some(&pair(last)), "{name}");
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(manifest["collectives"], serde_json::json!([collective]));
        let note = manifest["backend"]["note"].as_str().unwrap();
        assert!(
            note.contains(&format!("nccl-tests {collective}_perf")),
            "{note}"
        );
    }
}

/// A `-J` document of alltoall_perf with per-iteration times: its histograms are
/// tagged with the collective, as a sweep's are.
#[test]
fn json_of_alltoall_perf_tags_its_histograms_with_the_collective() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let doc = json_v3(&JSON_SIZES, 40, 0, |b, i| json_time(b, i, 1.0, 3))
        .replace("./build/all_reduce_perf", "./build/alltoall_perf")
        .replace(r#""redop":"sum""#, r#""redop":"none""#);
    let file = tmp.path().join("a2a.json");
    std::fs::write(&file, doc).unwrap();
    let out = tmp.path().join("a2a");
    let o = import(&file, &out, &[]);
    assert!(o.status.success(), "{}", common::text(&o));
    let histograms: Vec<String> = nccl_bench::export::hlog::read(&out.join("histograms.hlog"))
        .unwrap()
        .into_iter()
        .map(|(tag, _)| tag)
        .collect();
    for (config, collective, bytes, _, tag) in cases(&out) {
        assert_eq!(collective, "alltoall");
        assert_eq!(tag, format!("{config}/n2/{bytes}/float/sum/alltoall"));
        assert!(histograms.contains(&tag), "{tag}: {histograms:?}");
    }
}

/// `compare` matches the cases of an imported alltoall_perf run with those of a host
/// sweep of alltoall (same ranks, sizes, type and op), and no all_reduce case.
#[test]
fn an_imported_alltoall_compares_with_a_host_sweep_of_alltoall() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let imported = tmp.path().join("gb300");
    let o = import(
        &fixture("nccl-tests-alltoall_perf-gb300-4ranks.txt"),
        &imported,
        &[],
    );
    assert!(o.status.success(), "{}", common::text(&o));
    let (out, shm) = (tmp.path().join("sweeps"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();
    let o = common::sweep(&out, &shm)
        .args([
            "--gpus",
            "4",
            "--coll",
            "alltoall",
            "--transports",
            "default",
        ])
        .args(["-b", "512K", "-e", "1M", "-n", "4", "--rounds", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let host = common::run_dir(&out);
    let o = run(&[
        "compare".as_ref(),
        imported.as_os_str(),
        host.as_os_str(),
        "--format".as_ref(),
        "csv".as_ref(),
    ]);
    // The host is far slower than a GB300: one measurement a side, beyond the
    // threshold, and the gate fails on it (exit 1, not an error).
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].contains(",collective,"), "{csv}");
    assert_eq!(lines.len(), 3, "512K and 1M: {}", common::text(&o));
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with("default,") && l.contains(",alltoall,")),
        "{csv}"
    );
}

/// Output that names two binaries, or an empty redop with no binary named, is exit 2
/// with what to do, and writes nothing.
#[test]
fn outputs_that_cannot_be_labelled_are_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let a2a =
        std::fs::read_to_string(fixture("nccl-tests-alltoall_perf-gb300-4ranks.txt")).unwrap();
    let two = tmp.path().join("two.txt");
    std::fs::write(
        &two,
        format!("$ ./build/all_gather_perf -b 8 -e 128M\n{a2a}"),
    )
    .unwrap();
    let out = tmp.path().join("x");
    let o = import(&two, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("line 1 names all_gather_perf but line 4 names alltoall_perf"),
        "{stderr}"
    );
    assert!(!out.exists());

    let old = fixture("nccl-tests-alltoall_perf-2021-empty-redop.txt");
    let o = import(&old, &out, &["--nranks", "64"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(":8: the rows' redop is empty"), "{stderr}");
    assert!(
        stderr.contains("put the command line that ran it"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// Real outputs of all_gather_perf, alltoall_perf and sendrecv_perf from one H100
/// (tests/fixtures/nccl-tests-*-h100-1gpu.*): the text and the `-J` document of the
/// same run read as the same cases of their collective. The size-0 row of
/// all_gather_perf and alltoall_perf (8 B: each rank's part rounds down to nothing)
/// is listed as not run, as a sweep lists such sizes, and the image's NCCL_VERSION and nccl-bench's own variables in the
/// document's env do not make its config "imported".
#[test]
fn text_and_json_of_one_real_run_read_the_same() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    for (collective, rows) in [("all_gather", 22), ("alltoall", 22), ("sendrecv", 24)] {
        let mut seen = Vec::new();
        for format in ["txt", "json"] {
            let name = format!("nccl-tests-{collective}_perf-h100-1gpu.{format}");
            let out = tmp.path().join(format!("{collective}-{format}"));
            let o = import(&fixture(&name), &out, &[]);
            assert!(o.status.success(), "{name}: {}", common::text(&o));
            let got = common::rows(&out);
            assert_eq!(got.len(), rows, "{name}");
            for r in &got {
                assert_eq!(r["collective"], collective, "{name}");
                assert_eq!(r["nranks"], "1", "{name}");
                assert_eq!(r["status"], "ok", "{name}: {r:?}");
                assert_ne!(r["bytes"], "0", "{name}: a size-0 row is not a case");
                assert!(r["config"].starts_with("default"), "{name}: {r:?}");
            }
            let manifest: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
            let not_run = manifest["sizes_not_run"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if collective != "sendrecv" {
                assert_eq!(not_run.len(), 1, "{manifest}");
                assert!(
                    not_run[0]
                        .as_str()
                        .unwrap()
                        .contains("1 row(s) of size 0 B"),
                    "{not_run:?}"
                );
                let report = std::fs::read_to_string(out.join("report.md")).unwrap();
                assert!(report.contains("## Sizes not run"), "{report}");
            } else {
                assert!(not_run.is_empty(), "{manifest}");
            }
            let mut cells: Vec<(String, String, String, String)> = got
                .iter()
                .map(|r| {
                    (
                        r["config"].clone(),
                        r["bytes"].clone(),
                        r["time_us"].clone(),
                        r["busbw_gbps"].clone(),
                    )
                })
                .collect();
            cells.sort();
            seen.push(cells);
        }
        // The text rounds times and bandwidths to 2 decimals (bandwidths over 1000
        // to 5 digits); the document keeps more: the same cases, within the text's
        // rounding.
        let (text, json) = (&seen[0], &seen[1]);
        assert_eq!(text.len(), json.len());
        for (t, j) in text.iter().zip(json) {
            assert_eq!((&t.0, &t.1), (&j.0, &j.1), "{collective}");
            let (a, b): (f64, f64) = (t.2.parse().unwrap(), j.2.parse().unwrap());
            assert!((a - b).abs() <= 0.0051, "{collective} {t:?} vs {j:?}");
            let (a, b): (f64, f64) = (t.3.parse().unwrap(), j.3.parse().unwrap());
            assert!(
                (a - b).abs() <= 0.0051_f64.max(1e-4 * a),
                "{collective} {t:?} vs {j:?}"
            );
        }
    }
}

/// `import --coll` names the collective of an output that names no binary (a 2021
/// alltoall_perf table whose redop is blank); an output that names its binary keeps
/// it, and a `--coll` that says otherwise is exit 2, as is a name no binary has.
#[test]
fn coll_names_the_collective_an_output_does_not() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let old = fixture("nccl-tests-alltoall_perf-2021-empty-redop.txt");
    let out = tmp.path().join("old");
    let o = import(&old, &out, &["--nranks", "64", "--coll", "alltoall"]);
    assert!(o.status.success(), "{}", common::text(&o));
    let rows = common::rows(&out);
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| r["collective"] == "alltoall"),
        "{rows:?}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let note = manifest["backend"]["note"].as_str().unwrap();
    assert!(note.contains("nccl-tests alltoall_perf"), "{note}");
    assert!(!note.contains("all_reduce assumed"), "{note}");

    let named = fixture("nccl-tests-alltoall_perf-gb300-4ranks.txt");
    let out = tmp.path().join("same");
    let o = import(&named, &out, &["--coll", "alltoall"]);
    assert!(o.status.success(), "{}", common::text(&o));
    let out = tmp.path().join("other");
    let o = import(&named, &out, &["--coll", "all_gather"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(
        common::text(&o)
            .contains("--coll all_gather: the output names alltoall_perf, which measures alltoall"),
        "{}",
        common::text(&o)
    );
    assert!(!out.exists());
    let o = import(&named, &out, &["--coll", "alltoallv"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(
        common::text(&o).contains("unknown collective"),
        "{}",
        common::text(&o)
    );
    assert!(!out.exists());
}
