//! The `-J` JSON document, written from nccl-tests' src/util.cu schema.

use super::super::*;
use super::check_row;

pub(super) const JSON_ONE_LINE: &str = concat!(
    r#"{"version":3,"start_time":"2026-07-10 12:00:00","#,
    r#""args":["./build/all_reduce_perf","-b","8","-e","16","-f","2","-g","2","-I","1","-J","out.json"],"#,
    r#""env":["PATH=/usr/bin","NCCL_SHM_DISABLE=1","NCCL_DEBUG=INFO","MY_NCCL_X=2"],"nccl_version":21903,"#,
    r#""config":{"nthreads":1,"ngpus":2,"minimum_bytes":8,"maximum_bytes":16,"step_factor":2,"warmup_iters":1,"#,
    r#""iterations":3,"aggregated_iterations":1,"validation":1,"graph":0,"blocking_collectives":"false","#,
    r#""per_iter_timing":"true","per_iter_skip":0,"parallel_init":"false","devices":[{"rank":0,"group":0,"pid":12345,"#,
    r#""hostname":"node1","device":0,"device_hex":"0000:07:00","device_info":"NVIDIA H100 80GB HBM3"}]},"#,
    r#""results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1","#,
    r#""out_of_place":{"time":10.500000,"alg_bw":0.000762,"bus_bw":0.000762,"nwrong":0.000000},"#,
    r#""out_of_place_per_iter":{"skipped_iterations":0,"min_us":10.000000,"max_us":11.000000,"avg_us":10.500000,"#,
    r#""p50_us":10.500000,"p95_us":11.000000,"p99_us":11.000000,"stdev_us":0.408248,"cv_pct":3.888079,"#,
    r#""times_us":[10.000000,10.500000,11.000000]},"#,
    r#""in_place":{"time":10.200000,"alg_bw":0.000784,"bus_bw":0.000784,"nwrong":0.000000},"#,
    r#""in_place_per_iter":{"skipped_iterations":0,"min_us":10.000000,"max_us":10.400000,"avg_us":10.200000,"#,
    r#""p50_us":10.200000,"p95_us":10.400000,"p99_us":10.400000,"stdev_us":0.163299,"cv_pct":1.600970,"#,
    r#""times_us":[10.000000,10.200000,10.400000]},"actual_iterations":3,"experiment_name":""},"#,
    r#"{"size":16,"count":4,"type":"float","redop":"sum","root":"    -1","#,
    r#""out_of_place":{"time":"nan","alg_bw":"nan","bus_bw":"nan","nwrong":null},"#,
    r#""in_place":{"time":10.400000,"alg_bw":0.001538,"bus_bw":0.001538,"nwrong":2.000000},"#,
    r#""actual_iterations":3,"experiment_name":""}],"#,
    r#""out_of_bounds":{"count":0,"okay":"true"},"#,
    r#""average_bus_bandwidth":{"bandwidth":0.000773,"okay":"unchecked"},"errors":[],"end_time":"2026-07-10 12:00:01"}"#,
);

#[test]
fn json_document_as_nccl_tests_writes_it() {
    let run = parse(JSON_ONE_LINE).unwrap();
    // (Debug text: the NaN of the second row is not equal to itself)
    let direct = parse_json(JSON_ONE_LINE).unwrap();
    assert_eq!(format!("{run:?}"), format!("{direct:?}"));
    assert_eq!(run.format, Format::Json);
    assert_eq!(run.rows.len(), 2);
    assert_eq!(run.nranks, Some(2));
    assert_eq!(run.nccl_version.as_deref(), Some("2.19.3"));
    assert_eq!(run.nccl_tests_version, None);
    assert_eq!(run.started_at.as_deref(), Some("2026-07-10T12:00:00"));
    assert_eq!(
        run.command.as_deref(),
        Some("./build/all_reduce_perf -b 8 -e 16 -f 2 -g 2 -I 1 -J out.json")
    );
    assert_eq!(
        run.env,
        vec![
            ("NCCL_SHM_DISABLE".to_string(), "1".to_string()),
            ("NCCL_DEBUG".to_string(), "INFO".to_string()),
        ]
    );
    assert!(run.per_iteration);
    assert!(!run.cpu_time);
    assert_eq!(run.avg_busbw_gbps, Some(0.000773));
    assert_eq!(run.out_of_bounds, Some(0));

    let first = &run.rows[0];
    #[rustfmt::skip]
    check_row(first, 1, 8, 2, "float", "sum", Some(-1),
        (10.5, 0.000762, 0.000762, Some(0), None), (10.2, 0.000784, 0.000784, Some(0), None));
    assert_eq!(first.iteration_times_us, vec![10.0, 10.5, 11.0]);
    let stats = first.out_of_place.per_iter.as_ref().unwrap();
    assert_eq!(
        (stats.min_us, stats.max_us, stats.p99_us, stats.cv_pct),
        (10.0, 11.0, 11.0, 3.888079)
    );
    assert_eq!(
        (stats.avg_us, stats.p50_us, stats.skipped_iterations),
        (Some(10.5), Some(10.5), Some(0))
    );
    let in_stats = first.in_place.as_ref().unwrap().per_iter.as_ref().unwrap();
    assert_eq!(in_stats.times_us, vec![10.0, 10.2, 10.4]);

    let second = &run.rows[1];
    assert!(second.out_of_place.time_us.is_nan() && second.out_of_place.busbw_gbps.is_nan());
    assert_eq!(second.out_of_place.wrong, None);
    assert_eq!(second.in_place.as_ref().unwrap().wrong, Some(2));
    assert!(second.iteration_times_us.is_empty());
}

#[test]
fn json_reformatted_list_of_documents_with_row_lines() {
    // First JSON version spellings ("bandwidith"), -C (cpu_time), an MPI run (one
    // device entry per process), and a second document in a list.
    let doc = r#"[
{
  "version": 1,
  "args": ["mpirun", "-np", "2", "./all_reduce_perf", "-g", "4", "-C", "1", "-x", "it's"],
  "nccl_version": 2803,
  "config": {"nthreads": 1, "ngpus": 4, "per_iter_timing": "false",
             "devices": [{"rank": 0}, {"rank": 4}]},
  "results": [
    {"size": 1024, "count": 256, "type": "half", "redop": "max", "root": "    -1",
     "out_of_place": {"cpu_time": 20.5, "alg_bw": 0.05, "bus_bw": 0.0875, "nwrong": null},
     "in_place": {"cpu_time": 21, "alg_bw": 0.05, "bus_bw": 0.0875, "nwrong": null}},
    {"size": 2048, "count": 512, "type": "half", "redop": "max", "root": -1,
     "out_of_place": {"cpu_time": 30.0, "alg_bw": 0.07, "bus_bw": 0.12, "nwrong": 0}}
  ],
  "average_bus_bandwidith": {"bandwidith": 0.1, "okay": "unchecked"}
},
{
  "version": 1,
  "results": [
    {"size": 1024, "count": 256, "type": "half", "redop": "max", "root": "    -1",
     "out_of_place": {"cpu_time": 99, "alg_bw": 0.01, "bus_bw": 0.01, "nwrong": 0}},
    {"size": 4096, "count": 1024, "type": "half", "redop": "max", "root": "    -1",
     "out_of_place": {"cpu_time": 40, "alg_bw": 0.1, "bus_bw": 0.17, "nwrong": 0}}
  ]
}
]"#;
    let run = parse(doc).unwrap();
    assert_eq!(run.format, Format::Json);
    assert_eq!(run.nranks, Some(8));
    assert_eq!(run.nccl_version.as_deref(), Some("2.8.3"));
    assert!(run.cpu_time);
    assert!(!run.per_iteration);
    assert_eq!(run.avg_busbw_gbps, Some(0.1));
    assert_eq!(
        run.command.as_deref(),
        Some(r"mpirun -np 2 ./all_reduce_perf -g 4 -C 1 -x 'it'\''s'")
    );
    let got: Vec<(usize, u64, f64, bool)> = run
        .rows
        .iter()
        .map(|r| {
            (
                r.line,
                r.bytes,
                r.out_of_place.time_us,
                r.in_place.is_some(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (9, 1024, 20.5, true),
            (12, 2048, 30.0, false),
            (22, 4096, 40.0, false)
        ]
    );
    assert_eq!(run.rows[0].in_place.as_ref().unwrap().time_us, 21.0);
    assert_eq!(run.rows[0].dtype, "half");
}

#[test]
fn json_errors_carry_lines() {
    // truncated (a run killed while writing)
    let truncated = "{\n  \"version\": 3,\n  \"results\": [\n    {\"size\": 8,";
    let err = parse(truncated).unwrap_err();
    assert!(matches!(err, ImportError::Json { line: 4, .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("line 4: invalid nccl-tests JSON"),
        "{err}"
    );

    // wrong type
    let bad = "{\n\"results\": [\n {\"size\": \"eight\", \"count\": 2}\n]}";
    let err = parse(bad).unwrap_err();
    assert!(matches!(err, ImportError::Json { line: 3, .. }), "{err:?}");

    // a row with no time
    let no_time = concat!(
        "{\"results\": [\n",
        "{\"size\": 8, \"count\": 2, \"type\": \"float\", \"redop\": \"sum\", \"root\": \"-1\",\n",
        " \"out_of_place\": {\"alg_bw\": 1, \"bus_bw\": 1, \"nwrong\": 0}}]}"
    );
    let err = parse(no_time).unwrap_err();
    assert!(
        matches!(&err, ImportError::Json { line: 2, message } if message.contains("no time")),
        "{err:?}"
    );

    // a results list that is there but empty is a run without rows
    assert!(parse("{\"results\": []}").unwrap().rows.is_empty());
}

#[test]
fn per_process_times_of_a_multi_process_run_are_kept() {
    let doc = JSON_ONE_LINE.replacen(
        r#""times_us":[10.000000,10.500000,11.000000]}"#,
        r#""times_us":[10.000000,10.500000,11.000000],"per_process_max_times_us":[[10.000000,10.100000,11.000000],[9.900000,10.500000,10.800000]]}"#,
        1,
    );
    assert_ne!(doc, JSON_ONE_LINE);
    let run = parse(&doc).unwrap();
    let stats = run.rows[0].out_of_place.per_iter.as_ref().unwrap();
    assert_eq!(
        stats.process_times_us,
        vec![vec![10.0, 10.1, 11.0], vec![9.9, 10.5, 10.8]]
    );
    let in_place = run.rows[0].in_place.as_ref().unwrap();
    assert!(in_place
        .per_iter
        .as_ref()
        .unwrap()
        .process_times_us
        .is_empty());
}

#[test]
fn dispatch_between_text_and_json() {
    assert_eq!(
        parse(&format!("\n  {JSON_ONE_LINE}")).unwrap().format,
        Format::Json
    );
    assert!(matches!(parse("[]"), Err(ImportError::NoTable { .. })));
    assert!(matches!(
        parse("[1,0]<stdout>:hello"),
        Err(ImportError::NoTable { .. })
    ));
    assert!(matches!(
        parse("[0] hello"),
        Err(ImportError::NoTable { .. })
    ));
    // text that starts with a JSON-looking brace is reported as JSON
    assert!(matches!(
        parse("{ not json"),
        Err(ImportError::Json { line: 1, .. })
    ));
}
