//! Outputs of the binaries other than all_reduce_perf: real ones of alltoall_perf,
//! all_gather_perf and sendrecv_perf in ../../tests/fixtures, and written ones for
//! what those do not show (binaries that disagree, several roots, `-J` JSON).

use std::collections::HashMap;

use super::super::*;
use super::{check_row, text};
use crate::ops::collective::Collective;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of results.csv and the manifest of `run` imported into a fresh directory.
fn imported(
    run: &ImportedRun,
    nranks: Option<u32>,
) -> (Vec<HashMap<String, String>>, serde_json::Value) {
    let tmp = tempfile::tempdir().unwrap();
    let request = ImportRequest {
        file: "out.txt".into(),
        out: tmp.path().join("run"),
        config: None,
        nranks,
        started_at: None,
    };
    write_run(run, &request).unwrap();
    let mut reader = csv::Reader::from_path(tmp.path().join("run/results.csv")).unwrap();
    let rows = reader.deserialize().map(Result::unwrap).collect();
    let manifest =
        serde_json::from_slice(&std::fs::read(tmp.path().join("run/manifest.json")).unwrap())
            .unwrap();
    (rows, manifest)
}

fn write_error(run: &ImportedRun, nranks: Option<u32>) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let request = ImportRequest {
        file: "out.txt".into(),
        out: tmp.path().join("run"),
        config: None,
        nranks,
        started_at: None,
    };
    format!("{:#}", write_run(run, &request).unwrap_err())
}

#[test]
fn alltoall_perf_named_by_its_banner() {
    let body = fixture("nccl-tests-alltoall_perf-gb300-4ranks.txt");
    let run = parse(&body).unwrap();
    assert_eq!(run.collective, Collective::AllToAll);
    assert_eq!(run.binary.as_deref(), Some("alltoall_perf"));
    assert_eq!(run.command, None);
    assert_eq!(run.nranks, Some(4));
    assert_eq!(run.ranks[3].gpu, "NVIDIA GB300");
    assert_eq!(run.nccl_version.as_deref(), Some("2.28.7+cuda13.0"));
    assert_eq!(run.rows.len(), 16);
    #[rustfmt::skip]
    check_row(&run.rows[0], 16, 524288, 32768, "float", "none", Some(-1),
        (14.50, 36.15, 27.11, Some(0), None), (13.74, 38.15, 28.61, None, None));
    #[rustfmt::skip]
    check_row(&run.rows[15], 31, 17179869184, 1073741824, "float", "none", Some(-1),
        (20527.0, 836.92, 627.69, Some(0), None), (18929.0, 907.60, 680.70, None, None));
    assert_eq!(run.avg_busbw_gbps, Some(381.478));
    assert_eq!(run.out_of_bounds, Some(0));

    let (rows, manifest) = imported(&run, None);
    assert_eq!(rows.len(), 32, "16 sizes, out-of-place and in-place");
    assert!(rows.iter().all(|r| r["collective"] == "alltoall"));
    // `none` is no reduction op: the cases carry the default, as a sweep's do.
    assert!(rows.iter().all(|r| r["op"] == "sum"));
    assert_eq!(rows[0]["bytes"], "524288");
    assert_eq!(rows[0]["busbw_gbps"], "27.110");
    assert_eq!(rows[1]["config"], "default-inplace");
    assert_eq!(manifest["collectives"], serde_json::json!(["alltoall"]));
    assert_eq!(manifest["root"], 0);
    let note = manifest["backend"]["note"].as_str().unwrap();
    assert!(note.contains("(nccl-tests alltoall_perf):"), "{note}");
    assert!(!note.contains("assumed"), "{note}");
}

#[test]
fn all_gather_perf_named_by_banner_and_command_line() {
    let body = fixture("nccl-tests-all_gather_perf-gb10-2nodes.txt");
    let run = parse(&body).unwrap();
    assert_eq!(run.collective, Collective::AllGather);
    assert_eq!(run.binary.as_deref(), Some("all_gather_perf"));
    let command = run.command.as_deref().unwrap();
    assert!(command.starts_with("mpirun -np 2 -H"), "{command}");
    assert!(
        command.ends_with("~/nccl-tests/build/all_gather_perf -b 512M -e 16G -f 2 -g 1"),
        "{command}"
    );
    assert_eq!(run.nranks, Some(2));
    assert_eq!(run.nccl_tests_version.as_deref(), Some("2.19.6"));
    assert_eq!(run.nccl_version.as_deref(), Some("2.28.9"));
    // A comma-separated value stays one value.
    let env: HashMap<&str, &str> = run
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(env["NCCL_IB_HCA"], "=rocep1s0f1,roceP2p1s0f1");
    assert_eq!(env["NCCL_IB_GID_INDEX"], "3");
    assert_eq!(run.rows.len(), 6);
    #[rustfmt::skip]
    check_row(&run.rows[0], 26, 536870912, 67108864, "float", "none", Some(-1),
        (14594.4, 36.79, 18.39, Some(0), None), (13778.0, 38.97, 19.48, Some(0), None));
    #[rustfmt::skip]
    check_row(&run.rows[5], 31, 17179869184, 2147483648, "float", "none", Some(-1),
        (361820.0, 47.48, 23.74, Some(0), None), (354934.0, 48.40, 24.20, Some(0), None));
    assert_eq!(run.avg_busbw_gbps, Some(22.1205));

    let (rows, manifest) = imported(&run, None);
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r["collective"] == "all_gather"));
    assert_eq!(rows[10]["bytes"], "17179869184");
    assert_eq!(rows[10]["busbw_gbps"], "23.740");
    assert_eq!(rows[10]["config"], "imported");
    assert_eq!(manifest["collectives"], serde_json::json!(["all_gather"]));
    let note = manifest["backend"]["note"].as_str().unwrap();
    assert!(
        note.contains("(nccl-tests all_gather_perf 2.19.6, `mpirun"),
        "{note}"
    );
}

#[test]
fn sendrecv_perf_named_by_its_command_keeps_the_op_it_printed() {
    let body = fixture("nccl-tests-sendrecv_perf-a100-8gpus.txt");
    let run = parse(&body).unwrap();
    assert_eq!(run.collective, Collective::SendRecv);
    assert_eq!(run.binary.as_deref(), Some("sendrecv_perf"));
    assert_eq!(
        run.command.as_deref(),
        Some("./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8")
    );
    assert_eq!(run.nranks, None, "no rank lines");
    assert_eq!(run.rows.len(), 4);
    #[rustfmt::skip]
    check_row(&run.rows[0], 9, 134217728, 33554432, "float", "sum", Some(-1),
        (1211.2, 110.81, 110.81, Some(0), None), (1211.8, 110.76, 110.76, None, None));
    assert_eq!(run.avg_busbw_gbps, None, "the excerpt has no footer");

    let err = write_error(&run, None);
    assert!(err.contains("give --nranks"), "{err}");
    let (rows, manifest) = imported(&run, Some(8));
    assert_eq!(rows.len(), 8);
    assert!(rows
        .iter()
        .all(|r| r["collective"] == "sendrecv" && r["op"] == "sum"));
    assert_eq!(rows[6]["bytes"], "1073741824");
    assert_eq!(rows[6]["busbw_gbps"], "195.100");
    assert_eq!(manifest["collectives"], serde_json::json!(["sendrecv"]));
}

#[test]
fn alltoall_of_2021_with_an_empty_redop_needs_its_binary_named() {
    let body = fixture("nccl-tests-alltoall_perf-2021-empty-redop.txt");
    let run = parse(&body).unwrap();
    assert_eq!(run.binary, None);
    assert_eq!(run.collective, Collective::AllReduce, "nothing names it");
    assert_eq!(run.rows.len(), 2);
    #[rustfmt::skip]
    check_row(&run.rows[0], 8, 268435456, 1048576, "float", "", None,
        (520935.0, 0.52, 0.51, None, Some(0.0)), (519562.0, 0.52, 0.51, None, Some(1.0)));
    #[rustfmt::skip]
    check_row(&run.rows[1], 9, 536870912, 2097152, "float", "", None,
        (1041974.0, 0.52, 0.51, None, Some(0.0)), (1041299.0, 0.52, 0.51, None, Some(1.0)));
    // An all_reduce table always names its op: this one cannot be all_reduce's.
    let err = write_error(&run, Some(64));
    assert!(err.contains("out.txt:8: the rows' redop is empty"), "{err}");
    assert!(err.contains("put the command line that ran it"), "{err}");

    // With the command line that ran it, it is alltoall's.
    let named = format!("$ mpirun -np 64 ./build/alltoall_perf -b 256M -e 512M\n{body}");
    let run = parse(&named).unwrap();
    assert_eq!(run.collective, Collective::AllToAll);
    let (rows, manifest) = imported(&run, Some(64));
    assert_eq!(rows.len(), 4);
    assert!(rows
        .iter()
        .all(|r| r["collective"] == "alltoall" && r["op"] == "sum"));
    assert_eq!(rows[2]["time_us"], "1041974.000");
    assert_eq!(manifest["collectives"], serde_json::json!(["alltoall"]));
}

#[test]
fn a_blank_redop_before_the_root_column_is_read_as_empty() {
    // all_gather_perf in August 2022: `redop` and `root` columns, the op printed blank.
    let lines = [
        "# Collective test starting: all_gather_perf",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "        1024            64     float              -1    20.10    0.05    0.04      0    19.90    0.05    0.04      0",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    #[rustfmt::skip]
    check_row(&run.rows[0], 3, 1024, 64, "float", "", Some(-1),
        (20.10, 0.05, 0.04, Some(0), None), (19.90, 0.05, 0.04, Some(0), None));
    // A row short of another column is still malformed.
    let short = [
        lines[1],
        "        1024            64     float     sum      -1    20.10    0.05    0.04      0    19.90    0.05    0.04",
    ];
    assert!(matches!(
        parse_text(&text(&short)),
        Err(ImportError::BadRow { line: 2, .. })
    ));
}

#[test]
fn an_all_reduce_output_naming_no_binary_says_it_was_assumed() {
    let lines = [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0",
    ];
    let run = parse_text(&text(&lines)).unwrap();
    assert_eq!(
        (run.collective, run.binary.as_deref()),
        (Collective::AllReduce, None)
    );
    let (rows, manifest) = imported(&run, Some(2));
    assert!(rows.iter().all(|r| r["collective"] == "all_reduce"));
    assert_eq!(manifest["collectives"], serde_json::json!(["all_reduce"]));
    let note = manifest["backend"]["note"].as_str().unwrap();
    assert!(
        note.contains("nccl-tests all_reduce_perf, all_reduce assumed: the output names no"),
        "{note}"
    );
    // A copied all_gather table without its banner is not taken for all_reduce's.
    let none = text(&[lines[0], &lines[1].replace("  sum", " none")]);
    let err = write_error(&parse_text(&none).unwrap(), Some(2));
    assert!(err.contains("the rows' redop is `none` where"), "{err}");
}

#[test]
fn two_binaries_in_one_output_are_refused_with_both_lines() {
    let lines = [
        "$ ./build/all_reduce_perf -b 8 -e 8 -g 2",
        "# Collective test starting: all_gather_perf",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0",
    ];
    let err = parse_text(&text(&lines)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1 names all_reduce_perf but line 2 names all_gather_perf: an import reads \
         the run of one nccl-tests binary (split the file, one run in each)"
    );
    // The same binary named twice, with and without `_mpi`, is one.
    let same = [
        "$ mpirun -np 2 ./build/all_gather_perf_mpi -b 8 -e 8",
        lines[1],
        lines[2],
        lines[3],
        "# Collective test concluded: all_gather_perf",
    ];
    let run = parse_text(&text(&same)).unwrap();
    assert_eq!(run.collective, Collective::AllGather);
    assert_eq!(
        run.binary.as_deref(),
        Some("all_gather_perf_mpi"),
        "the first named"
    );
    // A binary nccl-bench has no collective for.
    let v = text(&[
        "# Collective test starting: alltoallv_perf",
        lines[2],
        lines[3],
    ]);
    let err = parse_text(&v).unwrap_err().to_string();
    assert!(
        err.starts_with("line 1: alltoallv_perf is not a collective nccl-bench knows"),
        "{err}"
    );
}

#[test]
fn rooted_rows_keep_their_root_and_several_roots_are_refused() {
    let lines = [
        "# Collective test starting: broadcast_perf",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "        1024           256     float    none       1    20.10    0.05    0.05      0    19.90    0.05    0.05      0",
        "        2048           512     float    none       1    21.10    0.10    0.10      0    20.90    0.10    0.10      0",
        "        1024           256     float    none       2    20.30    0.05    0.05      0    20.10    0.05    0.05      0",
    ];
    let run = parse_text(&text(&lines[..4])).unwrap();
    assert_eq!(run.collective, Collective::Broadcast);
    let (rows, manifest) = imported(&run, Some(4));
    assert!(rows.iter().all(|r| r["collective"] == "broadcast"));
    assert_eq!(manifest["root"], 1);
    let run = parse_text(&text(&lines)).unwrap();
    let err = write_error(&run, Some(4));
    assert!(
        err.contains("out.txt:5: rows of several roots (1 and 2); import each root's rows"),
        "{err}"
    );
}

/// A `-J` document as nccl-tests' src/util.cu writes one for alltoall_perf (no public
/// one was found), `args[0]` being the binary.
fn alltoall_json(binary: &str) -> String {
    concat!(
        r#"{"version":3,"start_time":"2026-07-10 12:00:00","#,
        r#""args":["BINARY","-b","1M","-e","1M","-g","2","-J","out.json"],"env":[],"#,
        r#""nccl_version":22807,"config":{"nthreads":1,"ngpus":2,"devices":[{"rank":0}]},"#,
        r#""results":[{"size":1048576,"count":131072,"type":"float","redop":"none","root":"    -1","#,
        r#""out_of_place":{"time":40.000000,"alg_bw":26.214400,"bus_bw":13.107200,"nwrong":0.000000},"#,
        r#""in_place":{"time":39.000000,"alg_bw":26.886564,"bus_bw":13.443282,"nwrong":null}}],"#,
        r#""out_of_bounds":{"count":0,"okay":"true"},"#,
        r#""average_bus_bandwidth":{"bandwidth":13.275241,"okay":"unchecked"}}"#,
    )
    .replace("BINARY", binary)
}

#[test]
fn json_names_its_binary_in_args() {
    let run = parse(&alltoall_json("./build/alltoall_perf")).unwrap();
    assert_eq!(run.format, Format::Json);
    assert_eq!(run.collective, Collective::AllToAll);
    assert_eq!(run.binary.as_deref(), Some("alltoall_perf"));
    assert_eq!(run.rows[0].op, "none");
    assert_eq!(run.rows[0].root, Some(-1));
    let (rows, manifest) = imported(&run, None);
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r["collective"] == "alltoall" && r["op"] == "sum"));
    assert_eq!(rows[0]["busbw_gbps"], "13.107");
    assert_eq!(manifest["collectives"], serde_json::json!(["alltoall"]));

    let list = format!(
        "[{},{}]",
        alltoall_json("alltoall_perf"),
        alltoall_json("/opt/sendrecv_perf")
    );
    let err = parse(&list).unwrap_err().to_string();
    assert_eq!(
        err,
        "args[0] of document 1 names alltoall_perf but args[0] of document 2 names \
         sendrecv_perf: an import reads the run of one nccl-tests binary (split the \
         file, one run in each)"
    );
    let unnamed = parse(&alltoall_json("./a.out")).unwrap();
    assert_eq!(
        (unnamed.collective, unnamed.binary),
        (Collective::AllReduce, None)
    );
}
