//! Workloads from a real COLL log (torchtitan, TP=2) and from CSVs; every bad file
//! names its line and field.

use super::*;

fn real(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn summary(w: &Workload) -> Vec<(Collective, Option<u32>, u64, u64)> {
    w.entries
        .iter()
        .map(|e| (e.collective, e.nranks, e.bytes, e.calls))
        .collect()
}

#[test]
fn a_real_coll_log_counts_each_call_once_at_nccl_tests_sizes() {
    // pytorch/torchtitan#1369: two ranks of one TP group log their reduce-scatters
    // and all-gathers of 2,097,152 floats per rank (16 MiB at nccl-tests' size), and
    // rank 0 two one-float all-reduces. Each rank's lines are a part of the log: the
    // busier rank's count stands.
    let w = Workload::parse(
        &real("tune-04-tp2-coll-reducescatter-allgather-counts.log"),
        "tune-04",
    )
    .unwrap();
    assert_eq!(w.format, Format::NcclColl);
    assert_eq!(
        summary(&w),
        [
            (Collective::AllGather, Some(2), 16 << 20, 2),
            (Collective::ReduceScatter, Some(2), 16 << 20, 2),
            (Collective::AllReduce, Some(2), 4, 2),
        ]
    );
    assert_eq!(w.total_bytes(), 2 * 2 * (16 << 20) + 8);
    // A broadcast of 24 int8 on 1,024 ranks (NVIDIA/nccl#1304).
    let w = Workload::parse(
        &real("tune-03-broadcast-coll-and-trace-fallback-ring-ll.log"),
        "tune-03",
    )
    .unwrap();
    assert_eq!(summary(&w), [(Collective::Broadcast, Some(1024), 24, 1)]);
}

#[test]
fn one_call_logged_by_every_rank_counts_once_and_sends_are_sendrecv() {
    let line = |host_pid: &str, func: &str, op: u32, count: u64, comm: &str| {
        format!(
            "{host_pid}:1 [0] NCCL INFO {func}: opCount {op:x} sendbuff 0x1 recvbuff 0x2 count {count} datatype 9 op 0 root 0 comm {comm} [nranks=4] stream 0x3\n"
        )
    };
    let mut text = String::new();
    for rank in 0..4 {
        let who = format!("n1:{rank}");
        let comm = format!("0x{rank}00");
        text += &line(&who, "AllReduce", 0, 1 << 20, &comm);
        text += &line(&who, "AllReduce", 1, 1 << 20, &comm);
        text += &line(&who, "Send", 2, 4096, &comm);
        text += &line(&who, "Recv", 3, 4096, &comm);
    }
    let w = Workload::parse(&text, "four ranks").unwrap();
    assert_eq!(
        summary(&w),
        [
            (Collective::AllReduce, Some(4), 2 << 20, 2),
            (Collective::SendRecv, Some(4), 8192, 1),
        ]
    );
}

#[test]
fn a_csv_gives_calls_per_step_and_merges_repeats() {
    let w = Workload::parse(
        "# DDP buckets of one step\ncollective,bytes,count,nranks\nall_reduce,25M,40,8\nAllGather,4194304,10,8\nall_reduce,25M,2,8\nbroadcast,8,1,\n",
        "job.csv",
    )
    .unwrap();
    assert_eq!(w.format, Format::Csv);
    assert_eq!(
        summary(&w),
        [
            (Collective::AllReduce, Some(8), 25 << 20, 42),
            (Collective::AllGather, Some(8), 4 << 20, 10),
            (Collective::Broadcast, None, 8, 1),
        ]
    );
    assert_eq!(w.total_calls(), 53);
}

#[test]
fn bad_files_name_the_line_and_field() {
    let err = |text: &str| Workload::parse(text, "job.csv").unwrap_err();
    assert!(
        err("hello\nworld\n").starts_with("job.csv holds no NCCL COLL line"),
        "{}",
        err("hello\n")
    );
    for (text, says) in [
        ("collective,bytes\n", "job.csv:1: the header must name collective, bytes and count"),
        ("collective,bytes,count,step\n", "job.csv:1: unknown column `step`"),
        ("collective,bytes,count\n", "job.csv: a header and no call"),
        ("collective,bytes,count\nall_reduce,1M\n", "job.csv:2: 2 fields where the header has 3"),
        ("collective,bytes,count\nallgatherv,1M,2\n", "job.csv:2: field `collective`: unknown collective"),
        ("collective,bytes,count\nall_reduce,big,2\n", "job.csv:2: field `bytes`:"),
        ("collective,bytes,count\nall_reduce,0,2\n", "job.csv:2: field `bytes`: a call moves at least one byte"),
        ("collective,bytes,count\nall_reduce,1M,-3\n", "job.csv:2: field `count`: `-3` is not a number of calls"),
        ("collective,bytes,count,nranks\nall_reduce,1M,3,0\n", "job.csv:2: field `nranks`: `0` is not a number of ranks"),
        (
            "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 8 datatype 42 op 0 root 0 comm 0x5 [nranks=2] stream 0x3\n",
            "job.csv:1: datatype 42 is not one NCCL 2.30 has",
        ),
        (
            "\nh:1:1 [0] NCCL INFO AllGatherV: opCount 0 sendbuff 0x1 recvbuff 0x2 count 8 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x3\n",
            "job.csv:2: `AllGatherV` is not a collective nccl-bench measures",
        ),
    ] {
        let e = err(text);
        assert!(e.starts_with(says), "{text:?}: {e}");
    }
}

/// NCCL's own example of the Inspector plugin's output (its README, 2.30.7): an
/// all-reduce of 16 GiB and a reduce-scatter of 2 GiB per rank on 8 ranks, whose own
/// algbw (418 GB/s in 41,057 us) says the size is one rank's share.
#[test]
fn the_inspectors_json_counts_each_call_once_at_nccl_tests_sizes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-inspector-readme-2.30.7.json");
    let w = Workload::parse(&std::fs::read_to_string(path).unwrap(), "readme").unwrap();
    assert_eq!(w.format, Format::Inspector);
    assert_eq!(
        summary(&w),
        [
            (Collective::AllReduce, Some(8), 16 << 30, 1),
            (Collective::ReduceScatter, Some(8), 16 << 30, 1),
        ]
    );
    assert_eq!(w.per(), "in the trace");
    // Two ranks of one communicator record the same calls: counted once; a call
    // written twice by the dump thread once; a send once, its receive not at all.
    let object = |rank: i64, coll: &str, sn: u64, bytes: u64| {
        let (kind, size, seq) = if coll == "Send" || coll == "Recv" {
            ("p2p", "p2p_msg_size_bytes", "p2p_sn")
        } else {
            ("coll", "coll_msg_size_bytes", "coll_sn")
        };
        format!(
            r#"{{"header":{{"id":"0xabc","rank":{rank},"n_ranks":2,"nnodes":1}},"{kind}_perf":{{"{kind}":"{coll}","{seq}":{sn},"{size}":{bytes},"{kind}_exec_time_us":10}}}}"#
        )
    };
    let mut text = String::new();
    for rank in 0..2 {
        for sn in 0..3 {
            text.push_str(&object(rank, "AllGather", sn, 1 << 20));
            text.push('\n');
        }
    }
    text.push_str(&object(0, "AllGather", 2, 1 << 20));
    text.push_str(&object(0, "Send", 0, 4096));
    text.push_str(&object(1, "Recv", 0, 4096));
    let w = Workload::parse(&text, "two ranks").unwrap();
    assert_eq!(
        summary(&w),
        [
            (Collective::AllGather, Some(2), 2 << 20, 3),
            (Collective::SendRecv, Some(2), 4096, 1),
        ]
    );
}

#[test]
fn an_inspector_file_that_does_not_read_names_the_object_and_field() {
    let err = |text: &str| Workload::parse(text, "f.json").unwrap_err();
    let head = r#""header":{"id":"0x1","rank":0,"n_ranks":4}"#;
    assert_eq!(
        err(&format!(
            r#"{{{head},"coll_perf":{{"coll":"AllReduce","coll_sn":1}}}}"#
        )),
        "f.json: object 1: `coll_perf.coll_msg_size_bytes` is not a byte count"
    );
    assert_eq!(
        err(&format!(r#"{{{head},"metadata":{{}}}}"#)),
        "f.json: object 1: neither `coll_perf` nor `p2p_perf`"
    );
    assert_eq!(
        err(r#"{"header":{"id":"0x1","rank":0,"n_ranks":0},"coll_perf":{}}"#),
        "f.json: object 1: `header.n_ranks` is not a number of ranks"
    );
    assert_eq!(
        err(&format!(
            r#"{{{head},"coll_perf":{{"coll":"AllToAllV","coll_sn":1,"coll_msg_size_bytes":8}}}}"#
        )),
        "f.json: object 1: `AllToAllV` is not a collective nccl-bench measures"
    );
    let cut = err(&format!("{{{head},\n\"coll_perf\":{{\"coll\":"));
    assert!(
        cut.starts_with("f.json:2:") && cut.contains("not the Inspector's JSON"),
        "{cut}"
    );
}

/// A Kineto trace per rank, with the metadata PyTorch records for each collective (as
/// PyTorch's own test of it spells the fields: `test/distributed/
/// test_cuda_graph_annotations.py`, "In msg nelems", "Group size", "dtype": "Float",
/// ...), on the CPU op and on its kernel: each call once, at nccl-tests' size.
#[test]
fn a_kineto_trace_counts_each_collective_once_at_nccl_tests_sizes() {
    let event = |cat: &str, name: &str, coll: &str, inn: u64, out: u64, dtype: &str| {
        format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","ts":1,"dur":2,"args":{{"Collective name":"{coll}","In msg nelems":{inn},"Out msg nelems":{out},"Group size":8,"dtype":"{dtype}","Process Group Name":"0","Process Group Ranks":"[0, 1, 2, 3, 4, 5, 6, 7]"}}}}"#
        )
    };
    let trace = |rank: u32| {
        let mut events = Vec::new();
        for _ in 0..3 {
            events.push(event(
                "cpu_op",
                "record_param_comms",
                "allreduce",
                6_553_600,
                6_553_600,
                "Float",
            ));
            events.push(event(
                "kernel",
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                "allreduce",
                6_553_600,
                6_553_600,
                "Float",
            ));
        }
        for _ in 0..2 {
            events.push(event(
                "cpu_op",
                "record_param_comms",
                "_allgather_base",
                1 << 20,
                8 << 20,
                "BFloat16",
            ));
            events.push(event(
                "kernel",
                "ncclDevKernel_AllGather_RING_LL",
                "_allgather_base",
                1 << 20,
                8 << 20,
                "BFloat16",
            ));
        }
        events.push(event(
            "kernel",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "barrier",
            1,
            1,
            "Float",
        ));
        format!(
            r#"{{"distributedInfo":{{"backend":"nccl","rank":{rank},"world_size":8}},"traceEvents":[{}]}}"#,
            events.join(",")
        )
    };
    let w = Workload::parse(&(trace(0) + "\n" + &trace(1)), "traces").unwrap();
    assert_eq!(w.format, Format::Kineto);
    assert_eq!(
        summary(&w),
        [
            (Collective::AllReduce, Some(8), 25 << 20, 3),
            (Collective::AllGather, Some(8), 16 << 20, 2),
        ]
    );
    // CPU ops alone (no CUDA activity traced) give the same.
    let cpu_only = trace(0)
        .split("},{")
        .filter(|e| !e.contains("\"kernel\""))
        .collect::<Vec<_>>()
        .join("},{");
    let w = Workload::parse(&(cpu_only + "}]}"), "cpu").unwrap();
    assert_eq!(
        summary(&w)[0],
        (Collective::AllReduce, Some(8), 25 << 20, 3)
    );
}

#[test]
fn a_kineto_trace_without_collectives_or_with_a_bad_field_is_an_error() {
    let err = |text: &str| Workload::parse(text, "t.json").unwrap_err();
    assert!(
        err(r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"gemm","args":{}}]}"#)
            .contains("no collective with PyTorch's NCCL metadata"),
    );
    let one = |args: &str| format!(r#"{{"traceEvents":[{{"cat":"kernel","args":{{{args}}}}}]}}"#);
    assert_eq!(
        err(&one(
            r#""Collective name":"allreduce","In msg nelems":4,"Out msg nelems":4,"Group size":2,"dtype":"Quaternion""#
        )),
        "t.json: trace 1, event 0: dtype `Quaternion` is not one PyTorch names"
    );
    assert_eq!(
        err(&one(
            r#""Collective name":"allreduce","Out msg nelems":4,"Group size":2,"dtype":"Float""#
        )),
        "t.json: trace 1, event 0: `In msg nelems` is not a number of elements"
    );
    assert_eq!(
        err(&one(
            r#""Collective name":"all_scan","In msg nelems":4,"Out msg nelems":4,"Group size":2,"dtype":"Float""#
        )),
        "t.json: trace 1, event 0: `all_scan` is not a collective nccl-bench measures"
    );
}

fn kineto(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kineto")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Real traces (tests/fixtures/kineto, with their sources): DDP on an A100 (2 ranks,
/// all-reduce buckets and broadcasts, on the CPU op and the kernel, and `wait` ops),
/// vLLM on a B200 (one all-gather on 8 ranks), and a CPU-only trace whose `wait`
/// ops carry the metadata too: each call once, at nccl-tests' size.
#[test]
fn real_kineto_traces_give_each_collective_once_at_nccl_tests_sizes() {
    let w = Workload::parse(
        &kineto("kineto-a100-ddp-allreduce-broadcast-hta.json"),
        "a100",
    )
    .unwrap();
    assert_eq!(w.format, Format::Kineto);
    let mut got = summary(&w);
    got.sort_by_key(|e| (e.0.name(), e.2));
    let reduce = |bytes| (Collective::AllReduce, Some(2), bytes, 3);
    let broadcast = |bytes| (Collective::Broadcast, Some(2), bytes, 3);
    assert_eq!(
        got,
        [
            reduce(8_196_000),
            reduce(9_724_160),
            reduce(26_255_360),
            reduce(26_550_272),
            reduce(31_502_336),
            broadcast(424),
            broadcast(212_480),
        ]
    );
    let w = Workload::parse(&kineto("kineto-b200-vllm-allgather-tracelens.json"), "b200").unwrap();
    // 201,088 BFloat16 elements out: 402,176 bytes, nccl-tests' all-gather size.
    assert_eq!(summary(&w), [(Collective::AllGather, Some(8), 402_176, 1)]);
    let w = Workload::parse(
        &kineto("kineto-v100-cpuonly-allreduce-broadcast-hta.json"),
        "v100",
    )
    .unwrap();
    let got = summary(&w);
    assert_eq!(got.len(), 7, "{got:?}");
    assert!(got.iter().all(|e| e.1 == Some(1) && e.3 == 5), "{got:?}");
}
