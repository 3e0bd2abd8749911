//! Tests of the importer on nccl-tests outputs written here, one per format variant
//! (`fixtures` reads the shared real ones, `json` the `-J` documents), and the helpers
//! they share.

use super::*;

/// Joins lines with '\n' so that a fixture's line numbers are its indices + 1.
pub(super) fn text(lines: &[&str]) -> String {
    lines.join("\n") + "\n"
}

/// (time_us, algbw, busbw, #wrong, error)
pub(super) type T = (f64, f64, f64, Option<u64>, Option<f64>);

pub(super) fn timing(t: &Timing) -> T {
    (t.time_us, t.algbw_gbps, t.busbw_gbps, t.wrong, t.error)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn check_row(
    row: &ImportedRow,
    line: usize,
    bytes: u64,
    count: u64,
    dtype: &str,
    op: &str,
    root: Option<i64>,
    out: T,
    inp: T,
) {
    assert_eq!(row.line, line, "line of {row:?}");
    assert_eq!((row.bytes, row.count), (bytes, count), "{row:?}");
    assert_eq!(
        (row.dtype.as_str(), row.op.as_str()),
        (dtype, op),
        "{row:?}"
    );
    assert_eq!(row.root, root, "{row:?}");
    assert_eq!(timing(&row.out_of_place), out, "out-of-place of {row:?}");
    assert_eq!(
        row.in_place.as_ref().map(timing),
        Some(inp),
        "in-place of {row:?}"
    );
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

mod collectives;
mod fixtures;

// ---------------------------------------------------------------------------------
// Own fixtures: every format variant

const CURRENT: &[&str] = &[
    "## all-reduce with SHM disabled",
    "",
    "```",
    "$ NCCL_SHM_DISABLE=1 ./build/all_reduce_perf -b 8 -e 16 -f 2 -g 2 -o all",
    "# nccl-tests version 2.19.4 nccl-headers=21903 nccl-library=21903",
    "# Collective test starting: all_reduce_perf",
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
    "#",
    "# Using devices",
    "#  Rank  0 Group  0 Pid  12345 on      node1 device  0 [0000:07:00] NVIDIA H100 80GB HBM3",
    "#  Rank  1 Group  0 Pid  12345 on      node1 device  1 [0000:08:00] NVIDIA H100 80GB HBM3",
    "node1:12345:12345 [0] NCCL INFO NCCL version 2.19.3+cuda12.3",
    "node1:12345:12350 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.",
    "node1:12345:12350 [1] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
    "#",
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
    "node1:12345:12345 [0] NCCL INFO Launch mode Parallel",
    "           8             2     float     sum      -1    10.50    0.00    0.00       0    10.20    0.00    0.00       0",
    "          16             4     float     sum      -1    10.60    0.00    0.00       0    10.40    0.00    0.00       0",
    "           8             2     float     max      -1    11.00    0.00    0.00       0    10.90    0.00    0.00  1e+06",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 0.001 ",
    "#",
    "# Collective test concluded: all_reduce_perf",
    "```",
    "",
    "8 16 more rows would not be part of the table.",
];

#[test]
fn current_format_with_markdown_info_lines_and_env() {
    let run = parse(&text(CURRENT)).unwrap();
    assert_eq!(run.format, Format::Text);
    assert_eq!(run.rows.len(), 3);
    #[rustfmt::skip]
    check_row(&run.rows[0], 20, 8, 2, "float", "sum", Some(-1),
        (10.5, 0.0, 0.0, Some(0), None), (10.2, 0.0, 0.0, Some(0), None));
    #[rustfmt::skip]
    check_row(&run.rows[2], 22, 8, 2, "float", "max", Some(-1),
        (11.0, 0.0, 0.0, Some(0), None), (10.9, 0.0, 0.0, Some(1_000_000), None));
    assert_eq!(run.nranks, Some(2));
    assert_eq!(run.nccl_version.as_deref(), Some("2.19.3+cuda12.3"));
    assert_eq!(run.nccl_tests_version.as_deref(), Some("2.19.4"));
    assert_eq!(
        run.env,
        vec![
            ("NCCL_SHM_DISABLE".to_string(), "1".to_string()),
            ("NCCL_SOCKET_IFNAME".to_string(), "eth0".to_string()),
        ]
    );
    assert_eq!(
        run.command.as_deref(),
        Some("NCCL_SHM_DISABLE=1 ./build/all_reduce_perf -b 8 -e 16 -f 2 -g 2 -o all")
    );
    assert_eq!(run.avg_busbw_gbps, Some(0.001));
    assert_eq!(run.out_of_bounds, Some(0));
    assert!(!run.per_iteration && !run.cpu_time);
    assert!(run.rows.iter().all(|r| r.iteration_times_us.is_empty()));
}

#[test]
fn old_format_error_column_and_na() {
    let lines = [
        "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 ",
        "#",
        "#                                                     out-of-place                       in-place",
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        "     1048576        262144   float     sum    192.4    5.45   10.22  5e-07    193.6    5.42   10.16  1e+00",
        "     2097152        524288   float     sum    271.3    7.73   14.50    N/A    271.3    7.73   14.49    N/A",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 12.3",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert_eq!(run.rows.len(), 2);
    #[rustfmt::skip]
    check_row(&run.rows[0], 6, 1048576, 262144, "float", "sum", None,
        (192.4, 5.45, 10.22, None, Some(5e-07)), (193.6, 5.42, 10.16, None, Some(1.0)));
    #[rustfmt::skip]
    check_row(&run.rows[1], 7, 2097152, 524288, "float", "sum", None,
        (271.3, 7.73, 14.50, None, None), (271.3, 7.73, 14.49, None, None));
    assert_eq!(run.avg_busbw_gbps, Some(12.3));
    assert_eq!(run.nranks, None);
}

#[test]
fn format_2017_times_in_milliseconds() {
    let lines = [
        "nThread 1 nGpus 4 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 ",
        "# Using devices",
        "#   Rank  0 on      host1 device  0 [0x04] Tesla P100-SXM2-16GB",
        "#   Rank  1 on      host1 device  1 [0x05] Tesla P100-SXM2-16GB",
        "#   Rank  2 on      host1 device  2 [0x06] Tesla P100-SXM2-16GB",
        "#   Rank  3 on      host1 device  3 [0x07] Tesla P100-SXM2-16GB",
        "",
        "#                                 out-of-place                    in-place",
        "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res",
        "           8             2   float     sum    0.034   0.00   0.00    0e+00    0.033   0.00   0.00    0e+00",
        "        1024           256   float     sum    1.250   0.82   1.23    1e-07    1.500   0.68   1.02  \tN/A",
        " Out of bounds values : 0 OK",
        " Avg bus bandwidth    : 0.5625 ",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert_eq!(run.rows.len(), 2);
    assert_eq!(run.nranks, Some(4));
    let last = &run.rows[1];
    assert_eq!(
        (last.line, last.bytes, last.count, last.op.as_str()),
        (11, 1024, 256, "sum")
    );
    assert!(close(last.out_of_place.time_us, 1250.0), "{last:?}");
    assert!(close(last.in_place.as_ref().unwrap().time_us, 1500.0));
    assert_eq!(last.out_of_place.error, Some(1e-07));
    assert_eq!(last.in_place.as_ref().unwrap().error, None);
    assert_eq!(last.out_of_place.busbw_gbps, 1.23);
    assert!(close(run.rows[0].out_of_place.time_us, 34.0));
    assert_eq!(run.rows[0].root, None);
    assert_eq!(run.avg_busbw_gbps, Some(0.5625));
    assert_eq!(run.out_of_bounds, Some(0));
}

#[test]
fn mpirun_tag_output_keeps_the_first_ranks_table_once() {
    // A non-MPI build started by mpirun: every rank prints its own table.
    let lines = [
        "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid   1001 on      node1 device  0 [0x07] NVIDIA A100-SXM4-40GB",
        "[1,1]<stdout>:#  Rank  0 Group  0 Pid   1002 on      node1 device  1 [0x08] NVIDIA A100-SXM4-40GB",
        "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "[1,1]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        "[1,1]<stderr>:node1:1002:1002 [1] NCCL INFO comm 0x5555 rank 0 nranks 1 cudaDev 1 busId 8000 - Init COMPLETE",
        "[1,0]<stdout>:           8             2     float     sum      -1     4.10    0.00    0.00      0     4.00    0.00    0.00      0",
        "[1,1]<stdout>:           8             2     float     sum      -1     9.90    0.00    0.00      0     9.80    0.00    0.00      0",
        "[1,1]<stdout>:          16             4     float     sum      -1   garbage",
        "[1,0]<stdout>:          16             4     float     sum      -1     4.20    0.00    0.00      0     4.30    0.00    0.00      0",
        "[1,0]<stdout>:          16             4     float     sum      -1     5.20    0.00    0.00      0     5.30    0.00    0.00      0",
        "[1,1]<stdout>:# Out of bounds values : 3 FAILED",
        "[1,0]<stdout>:# Out of bounds values : 0 OK",
        "[1,0]<stdout>:# Avg bus bandwidth    : 0.00042 ",
        "[1,1]<stdout>:# Avg bus bandwidth    : 0.00099 ",
    ];
    let run = parse(&text(&lines)).unwrap();
    assert_eq!(run.format, Format::Text);
    let got: Vec<(usize, u64, f64)> = run
        .rows
        .iter()
        .map(|r| (r.line, r.bytes, r.out_of_place.time_us))
        .collect();
    assert_eq!(got, vec![(8, 8, 4.1), (11, 16, 4.2)]);
    assert_eq!(run.out_of_bounds, Some(0));
    assert_eq!(run.avg_busbw_gbps, Some(0.00042));
    // rank lines of both processes say "Rank 0": one rank each (non-MPI build)
    assert_eq!(run.nranks, Some(1));
}

#[test]
fn srun_and_mpich_prefixes_with_na() {
    let srun = [
        " 0: # nThread 1 nGpus 1 minBytes 8388608 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0",
        " 0: #  Rank  0 Group  0 Pid 291005 on    node005 device  0 [0x18] NVIDIA H100 80GB HBM3",
        " 0: #  Rank  1 Group  0 Pid 541703 on    node007 device  0 [0x18] NVIDIA H100 80GB HBM3",
        " 0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        " 1: node007:541703:541703 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0:1",
        " 0:      8388608       2097152     float     sum      -1    215.3   38.96   38.96    N/A    180.0   46.60   46.60    N/A",
        " 0:     16777216       4194304     float     sum      -1    262.9   63.81   63.81    N/A    261.9   64.05   64.05    N/A",
        " 0: # Out of bounds values : 0 OK",
        " 0: # Avg bus bandwidth    : 53.355",
        " 0:",
    ];
    let run = parse(&text(&srun)).unwrap();
    assert_eq!(run.rows.len(), 2);
    #[rustfmt::skip]
    check_row(&run.rows[1], 7, 16777216, 4194304, "float", "sum", Some(-1),
        (262.9, 63.81, 63.81, None, None), (261.9, 64.05, 64.05, None, None));
    assert_eq!(run.nranks, Some(2));
    assert_eq!(
        run.env,
        vec![("NCCL_IB_HCA".to_string(), "mlx5_0:1".to_string())]
    );

    let mpich: Vec<String> = srun.iter().map(|l| l.replacen(" 0: ", "[0] ", 1)).collect();
    let mpich: Vec<&str> = mpich.iter().map(String::as_str).collect();
    let run2 = parse(&text(&mpich)).unwrap();
    assert_eq!(run2.rows, run.rows);
    assert_eq!(run2.avg_busbw_gbps, Some(53.355));
}

#[test]
fn per_iteration_columns_and_timestamps() {
    let lines = [
        "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803",
        "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows ",
        "#",
        "#                                              out-of-place (+ per-iteration)                                in-place (+ per-iteration)",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)   %Y-%m-%d %H:%M:%S",
        "     1048576        262144     float     sum      -1    65.27   16.07   28.11       0    60.10    80.55    79.90     4.21    64.90   16.16   28.27       0    60.00    75.12    74.80     3.90  2026-07-10 12:00:01",
        "# Out of bounds values : 0 OK",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert!(run.per_iteration);
    assert_eq!(run.nccl_version.as_deref(), Some("2.28.3"));
    assert_eq!(run.nccl_tests_version.as_deref(), Some("2.19.6"));
    let row = &run.rows[0];
    #[rustfmt::skip]
    check_row(row, 7, 1048576, 262144, "float", "sum", Some(-1),
        (65.27, 16.07, 28.11, Some(0), None), (64.90, 16.16, 28.27, Some(0), None));
    let out = row.out_of_place.per_iter.as_ref().unwrap();
    assert_eq!(
        (out.min_us, out.max_us, out.p99_us, out.cv_pct),
        (60.10, 80.55, 79.90, 4.21)
    );
    assert_eq!(out.avg_us, None);
    let inp = row.in_place.as_ref().unwrap().per_iter.as_ref().unwrap();
    assert_eq!(
        (inp.min_us, inp.max_us, inp.p99_us, inp.cv_pct),
        (60.00, 75.12, 74.80, 3.90)
    );
    assert!(row.iteration_times_us.is_empty());
    // -S: the first row's timestamp dates the run.
    assert_eq!(run.started_at.as_deref(), Some("2026-07-10T12:00:01"));

    // The run directory keeps nccl-tests' i_p99 as its own, and has none of ours
    // (no per-iteration times to compute it from).
    let tmp = tempfile::tempdir().unwrap();
    let request = ImportRequest {
        file: "night.txt".into(),
        out: tmp.path().join("run"),
        config: None,
        nranks: Some(2),
        started_at: None,
    };
    write_run(&run, &request).unwrap();
    let csv = std::fs::read_to_string(tmp.path().join("run/results.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let cell = |r: &csv::StringRecord, name: &str| {
        r[header.iter().position(|h| h == name).unwrap()].to_string()
    };
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let own: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                cell(r, "p99_us"),
                cell(r, "nccl_tests_p95_us"),
                cell(r, "nccl_tests_p99_us"),
            )
        })
        .collect();
    assert_eq!(
        own,
        [
            ("".into(), "".into(), "79.900".into()),
            ("".into(), "".into(), "74.800".into())
        ]
    );
}

#[test]
fn cputime_header() {
    let lines = [
        "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong",
        "        1024           256     float     sum      -1    12.00    0.09    0.09       0    11.00    0.09    0.09       0",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert!(run.cpu_time);
    assert_eq!(run.rows[0].out_of_place.time_us, 12.0);
    assert_eq!(run.avg_busbw_gbps, None);
}

#[test]
fn continued_command_line_and_exports() {
    let lines = [
        "export NCCL_NET=IB",
        "mpirun -np 16 -N 8 \\",
        "  -x NCCL_IB_DISABLE=0 -x NCCL_DEBUG=INFO \\",
        "  ./build/all_reduce_perf -b 8M -e 8G -f 2 -g 1",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "     8388608       2097152     float     sum      -1    215.3   38.96   73.04      0    180.0   46.60   87.38      0",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert_eq!(
        run.command.as_deref(),
        Some("mpirun -np 16 -N 8 -x NCCL_IB_DISABLE=0 -x NCCL_DEBUG=INFO ./build/all_reduce_perf -b 8M -e 8G -f 2 -g 1")
    );
    let names: Vec<&str> = run.env.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["NCCL_NET", "NCCL_IB_DISABLE", "NCCL_DEBUG"]);
    assert_eq!(run.env[1].1, "0");
}

#[test]
fn a_comma_separated_value_is_one_value() {
    let lines = [
        "export NCCL_IB_HCA=mlx5_0,mlx5_1, NCCL_NET=IB",
        "srun --export=ALL,NCCL_SOCKET_IFNAME=^lo,docker0,NCCL_ALGO=Ring ./build/all_reduce_perf -b 8 -e 8",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    let env: Vec<(&str, &str)> = run
        .env
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        env,
        [
            ("NCCL_IB_HCA", "mlx5_0,mlx5_1"),
            ("NCCL_NET", "IB"),
            ("NCCL_SOCKET_IFNAME", "^lo,docker0"),
            ("NCCL_ALGO", "Ring"),
        ]
    );
}

#[test]
fn prose_mentioning_the_binary_is_not_a_command() {
    let lines = [
        "Run all_reduce_perf with two GPUs, then compare.",
        "We ran ./build/all_reduce_perf -b 8 -e 8 -g 2 on the box.",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert_eq!(
        run.command.as_deref(),
        Some("./build/all_reduce_perf -b 8 -e 8 -g 2 on the box.")
    );
    let only_prose = text(&[lines[0], lines[2], lines[3]]);
    assert_eq!(parse_text(&only_prose).unwrap().command, None);
}

#[test]
fn partial_table_followed_by_prose_and_second_table() {
    let lines = [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0",
        "",
        "8 GPUs, 2 nodes; second run below",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "          16             4     float     sum      -1    10.60    0.00    0.00      0    10.40    0.00    0.00      0",
        "           8             2     float     sum      -1   broken",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert_eq!(run.rows.len(), 1);
    assert_eq!(run.rows[0].bytes, 8);
}

// ---------------------------------------------------------------------------------
// Errors

#[test]
fn malformed_row_inside_table_is_bad_row_with_its_line() {
    let mut lines = CURRENT.to_vec();
    lines[20] = "          16             4     float     sum      -1    1o.60    0.00    0.00       0    10.40    0.00    0.00       0";
    let err = parse(&text(&lines)).unwrap_err();
    match &err {
        ImportError::BadRow { line, text, why } => {
            assert_eq!(*line, 21);
            assert!(text.starts_with("16 "), "{text}");
            assert!(why.contains("time '1o.60'"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().starts_with("line 21: "), "{err}");

    // too few columns
    lines[20] =
        "          16             4     float     sum      -1    10.60    0.00    0.00       0";
    let err = parse(&text(&lines)).unwrap_err();
    assert!(
        matches!(&err, ImportError::BadRow { line: 21, why, .. } if why.contains("9 columns where the header has 13")),
        "{err}"
    );

    // a lone size with nothing after it
    lines[20] = "          16";
    assert!(matches!(
        parse(&text(&lines)),
        Err(ImportError::BadRow { line: 21, .. })
    ));

    // a bad #wrong
    lines[20] = "          16             4     float     sum      -1    10.60    0.00    0.00      -1    10.40    0.00    0.00       0";
    assert!(matches!(
        parse(&text(&lines)),
        Err(ImportError::BadRow { line: 21, .. })
    ));
}

#[test]
fn malformed_prefixed_row_of_the_table_owner() {
    let lines = [
        "[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "[1,0]<stdout>:nccl-tests-efa-worker-0:26:26 [0] NCCL INFO Launch mode Parallel",
        "[1,0]<stdout>:           8             2   float     sum    167.5    0.00    0.00  2e-07    167.1    0.00    0.00  1e-07",
        "[1,0]<stdout>:          16             4   float     sum    167.3    0.00    0.00  1e-07    167.4    0.00",
    ];
    let err = parse(&text(&lines)).unwrap_err();
    assert!(
        matches!(err, ImportError::BadRow { line: 4, .. }),
        "{err:?}"
    );
}

#[test]
fn no_table_is_no_table() {
    let lines = [
        "node1:12345:12345 [0] NCCL INFO NCCL version 2.19.3+cuda12.3",
        "node1:12345:12345 [0] NCCL INFO comm 0x5555 rank 0 nranks 2 cudaDev 0 busId 7000 - Init COMPLETE",
        "           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0",
        "# Avg bus bandwidth    : 0.001",
    ];
    let err = parse(&text(&lines)).unwrap_err();
    assert_eq!(
        err,
        ImportError::NoTable {
            path_hint: "the input".to_string()
        }
    );
    let err = err.with_path_hint("logs/run1.txt");
    assert!(err.to_string().contains("logs/run1.txt"), "{err}");
    assert!(matches!(parse(""), Err(ImportError::NoTable { .. })));
    assert!(matches!(
        parse_json("{\"version\":3}"),
        Err(ImportError::NoTable { .. })
    ));
}

#[test]
fn header_without_rows_is_an_empty_run() {
    let lines = [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "node1:1:1 [0] enqueue.cc:100 NCCL WARN Cuda failure 'out of memory'",
        "node1: Test NCCL failure common.cu:1026 'unhandled cuda error'",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert!(run.rows.is_empty());
}

mod json;
