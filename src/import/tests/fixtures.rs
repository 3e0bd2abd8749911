//! The real outputs in ../shared/fixtures/nccl-tests, read in place.

use super::super::*;
use super::check_row;

// ---------------------------------------------------------------------------------
// Real outputs in ../shared/fixtures/nccl-tests (read in place)

fn fixture(name: &str) -> Option<String> {
    let dir = crate::test_inputs::need(crate::test_inputs::Need::Fixtures("nccl-tests"))?;
    let path = dir.join(name);
    let body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(body)
}

fn parse_fixture(name: &str) -> Option<ImportedRun> {
    let body = fixture(name)?;
    let run = parse(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(run.format, Format::Text);
    assert_eq!(run, parse_text(&body).unwrap());
    Some(run)
}

#[test]
fn fixture_1_old_error_column_no_root() {
    let Some(run) = parse_fixture("nccl-tests-1-old-error-column-no-root.txt") else {
        return;
    };
    assert_eq!(run.rows.len(), 10);
    let e = Some(5e-07);
    let first = &run.rows[0];
    let last = run.rows.last().unwrap();
    #[rustfmt::skip]
    check_row(first, 6, 1048576, 262144, "float", "sum", None,
        (192.4, 5.45, 10.22, None, e), (193.6, 5.42, 10.16, None, e));
    #[rustfmt::skip]
    check_row(last, 15, 536870912, 134217728, "float", "sum", None,
        (18620.0, 28.83, 54.06, None, e), (18732.0, 28.66, 53.74, None, e));
    assert_eq!(run.nranks, None);
    assert_eq!(run.nccl_version, None);
    assert_eq!(run.nccl_tests_version, None);
    assert_eq!(run.avg_busbw_gbps, Some(35.3542));
    assert_eq!(run.out_of_bounds, Some(0));
    assert_eq!(run.command, None);
    assert!(run.env.is_empty());
    assert!(!run.per_iteration && !run.cpu_time);
}

#[test]
fn fixture_2_mpirun_tag_output_old_format() {
    let Some(run) = parse_fixture("nccl-tests-2-mpirun-tag-output-old-format.txt") else {
        return;
    };
    assert_eq!(run.rows.len(), 28);
    let first = &run.rows[0];
    let last = run.rows.last().unwrap();
    #[rustfmt::skip]
    check_row(first, 16, 8, 2, "float", "sum", None,
        (167.5, 0.0, 0.0, None, Some(2e-07)), (167.1, 0.0, 0.0, None, Some(1e-07)));
    #[rustfmt::skip]
    check_row(last, 43, 1073741824, 268435456, "float", "sum", None,
        (61556.0, 17.44, 32.71, None, Some(5e-07)), (61303.0, 17.52, 32.84, None, Some(5e-07)));
    // no rank lines in the excerpt: "comm ... rank 0 nranks 16 ... Init COMPLETE"
    assert_eq!(run.nranks, Some(16));
    assert_eq!(run.nccl_version, None);
    assert_eq!(run.avg_busbw_gbps, Some(7.80081));
    assert_eq!(run.out_of_bounds, Some(0));
    let sizes: Vec<u64> = run.rows.iter().map(|r| r.bytes).collect();
    assert_eq!(sizes, (3..=30).map(|p| 1u64 << p).collect::<Vec<_>>());
}

#[test]
fn fixture_3_srun_label_na_multinode() {
    let Some(run) = parse_fixture("nccl-tests-3-srun-label-na-multinode.txt") else {
        return;
    };
    assert_eq!(run.rows.len(), 11);
    let first = &run.rows[0];
    let last = run.rows.last().unwrap();
    #[rustfmt::skip]
    check_row(first, 26, 8388608, 2097152, "float", "sum", Some(-1),
        (215.3, 38.96, 73.04, None, None), (180.0, 46.60, 87.38, None, None));
    #[rustfmt::skip]
    check_row(last, 36, 8589934592, 2147483648, "float", "sum", Some(-1),
        (103530.0, 82.97, 155.57, None, None), (103538.0, 82.96, 155.56, None, None));
    assert_eq!(run.nranks, Some(16));
    assert_eq!(run.nccl_version, None);
    assert_eq!(run.nccl_tests_version, None);
    assert_eq!(run.avg_busbw_gbps, Some(142.735));
    assert_eq!(run.out_of_bounds, Some(0));
    // The rank lines: 16 ranks on two hosts, GPU names whole.
    assert_eq!(run.ranks.len(), 16);
    let r15 = &run.ranks[15];
    assert_eq!(
        (
            r15.rank,
            r15.pid,
            r15.host.as_str(),
            r15.device,
            r15.bus_id.as_str()
        ),
        (15, 541705, "node007", 7, "0xc1")
    );
    assert!(run.ranks.iter().all(|r| r.gpu == "NVIDIA H100 80GB HBM3"));
    assert_eq!(run.ranks.iter().filter(|r| r.host == "node005").count(), 8);
}

#[test]
fn fixture_5_current_v2_19_4() {
    let Some(run) =
        parse_fixture("nccl-tests-5-current-v2.19.4-nccl-2.19.3-UNIDENTIFIED-SOURCE.txt")
    else {
        return;
    };
    assert_eq!(run.rows.len(), 25);
    let first = &run.rows[0];
    let last = run.rows.last().unwrap();
    #[rustfmt::skip]
    check_row(first, 21, 8, 2, "float", "sum", Some(-1),
        (34.84, 0.0, 0.0, Some(0), None), (36.18, 0.0, 0.0, Some(0), None));
    #[rustfmt::skip]
    check_row(last, 45, 134217728, 33554432, "float", "sum", Some(-1),
        (1295.41, 103.61, 181.32, Some(0), None), (1284.21, 104.51, 182.90, Some(0), None));
    assert_eq!(run.nranks, Some(8));
    // no "NCCL version" line: decoded from nccl-library=21903
    assert_eq!(run.nccl_version.as_deref(), Some("2.19.3"));
    assert_eq!(run.nccl_tests_version.as_deref(), Some("2.19.4"));
    assert_eq!(run.avg_busbw_gbps, Some(34.9024));
    assert_eq!(run.out_of_bounds, Some(0));
    assert_eq!(
        run.command.as_deref(),
        Some("./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8")
    );
}

#[test]
fn fixture_5b_current_v2_20_0_partial() {
    let Some(run) = parse_fixture("nccl-tests-5b-current-v2.20.0-partial.txt") else {
        return;
    };
    assert_eq!(run.rows.len(), 4);
    let first = &run.rows[0];
    let last = run.rows.last().unwrap();
    #[rustfmt::skip]
    check_row(first, 14, 8192, 2048, "float", "sum", Some(-1),
        (35.15, 0.23, 0.23, Some(0), None), (30.33, 0.27, 0.27, Some(0), None));
    #[rustfmt::skip]
    check_row(last, 17, 65536, 16384, "float", "sum", Some(-1),
        (67.93, 0.96, 0.96, Some(0), None), (64.71, 1.01, 1.01, Some(0), None));
    assert_eq!(run.nranks, Some(2));
    assert_eq!(run.nccl_version.as_deref(), Some("2.31.2"));
    assert_eq!(run.nccl_tests_version.as_deref(), Some("2.20.0"));
    // cut after 4 rows: no footer
    assert_eq!(run.avg_busbw_gbps, None);
    assert_eq!(run.out_of_bounds, None);
}

/// A crashed run from ../shared/fixtures/nccl-logs: header printed, then CUDA failure.
#[test]
fn fixture_log_2_crashed_run_has_header_but_no_rows() {
    let Some(_) = fixture("nccl-tests-1-old-error-column-no-root.txt") else {
        return;
    };
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/nccl-logs/nccl-log-2-shm-direct-2.25-rtx5090.txt"
    );
    let body = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let run = parse(&body).unwrap();
    assert!(run.rows.is_empty());
    assert_eq!(run.nranks, Some(2));
    assert_eq!(run.nccl_version.as_deref(), Some("2.25.1+cuda12.8"));
    assert_eq!(
        run.env,
        vec![("NCCL_DEBUG".to_string(), "INFO".to_string())]
    );
    assert_eq!(
        run.command.as_deref(),
        Some("NCCL_DEBUG=INFO ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2")
    );
    assert_eq!(run.avg_busbw_gbps, None);
}

#[test]
fn every_fixture_file_parses() {
    let Some(dir) = crate::test_inputs::need(crate::test_inputs::Need::Fixtures("nccl-tests"))
    else {
        return;
    };
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for path in names {
        let body = std::fs::read_to_string(&path).unwrap();
        let run = parse(&body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!run.rows.is_empty(), "{}", path.display());
    }
}
