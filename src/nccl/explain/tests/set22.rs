//! Tests of the rules written from blind set 22: communicators torn down on some ranks
//! only, host names that do not resolve (and c10d's harmless IPv6 lookups), Gloo given
//! NCCL's interface syntax, an IB port that lost its link, and the work FIFO leak of
//! NCCL 2.20-2.22 under CUDA graphs. Each both ways: the failure, and a near miss it
//! leaves alone.

use super::*;

const ABORTED: &str =
    "h:10:20 [0] NCCL INFO comm 0x7f00 rank 0 nranks 2 cudaDev 0 busId 6000 - Abort COMPLETE\n";

#[test]
fn a_rank_still_logging_after_its_peer_tore_down_is_a_teardown_mismatch() {
    let text = format!(
        "h:10:20 [0] NCCL INFO misc/socket.cc:47 -> 3\n\
         h:11:21 [1] NCCL INFO misc/socket.cc:47 -> 3\n\
         {ABORTED}\
         h:11:21 [1] NCCL INFO misc/socket.cc:58 -> 3\n"
    );
    let f = finding_by_id(&pasted(&text), "teardown-some-ranks").clone();
    assert!(
        f.title.contains("rank 0") && f.title.contains("h:11 did not"),
        "{}",
        f.title
    );
    assert!(
        f.cause
            .starts_with("In this log rank 0 logged `Abort COMPLETE`"),
        "{}",
        f.cause
    );
    assert!(f.fix.contains("destroy_process_group") && f.fix.contains("same order"));
    // Both ranks torn down: nothing left waiting.
    let both = format!(
        "{text}h:11:21 [1] NCCL INFO comm 0x7f01 rank 1 nranks 2 cudaDev 1 busId 7000 - Destroy COMPLETE\n"
    );
    assert!(!ids(&pasted(&both)).contains(&"teardown-some-ranks"));
    // A process whose lines stop before the teardown: another run, or a cut log.
    let before = format!("h:11:21 [1] NCCL INFO misc/socket.cc:47 -> 3\n{ABORTED}");
    assert!(!ids(&pasted(&before)).contains(&"teardown-some-ranks"));
    // A process of a communicator of another size is not waiting on this one.
    let other = format!(
        "h:12:22 [0] NCCL INFO comm 0x7f02 rank 0 nranks 4 cudaDev 0 busId 6000 commId 0x1 - Init COMPLETE\n\
         h:10:20 [0] NCCL INFO comm 0x7f00 rank 0 nranks 2 cudaDev 0 busId 6000 commId 0x2 - Init COMPLETE\n\
         {ABORTED}h:12:22 [0] NCCL INFO misc/socket.cc:47 -> 3\n"
    );
    assert!(!ids(&pasted(&other)).contains(&"teardown-some-ranks"));
    // Two communicators of one size: a rank of the other one is not waiting on this.
    let groups = format!(
        "h:12:22 [0] NCCL INFO comm 0x7f02 rank 0 nranks 2 cudaDev 2 busId 8000 commId 0x1 - Init COMPLETE\n\
         h:10:20 [0] NCCL INFO comm 0x7f00 rank 0 nranks 2 cudaDev 0 busId 6000 commId 0xa - Init COMPLETE\n\
         {ABORTED}h:12:22 [0] NCCL INFO misc/socket.cc:47 -> 3\n"
    );
    assert!(!ids(&pasted(&groups)).contains(&"teardown-some-ranks"));
    // The clean-up after an error aborts on some ranks first: not a teardown mismatch.
    let after_error = format!("h:11:21 [1] misc/socket.cc:1 NCCL WARN socket closed\n{text}");
    assert!(!ids(&pasted(&after_error)).contains(&"teardown-some-ranks"));
    // A host whose name ends another's is not it: `gpunode-1:10` is not `node-1:10`.
    let names = "node-1:10:20 [0] NCCL INFO comm 0x7f00 rank 0 nranks 2 cudaDev 0 busId 6000 - Abort COMPLETE\n\
                 gpunode-1:10:21 [1] NCCL INFO misc/socket.cc:58 -> 3\n";
    let f = finding_by_id(&pasted(names), "teardown-some-ranks").clone();
    assert!(f.title.contains("gpunode-1:10 did not"), "{}", f.title);
}

#[test]
fn a_teardown_in_one_rank_file_says_nothing_of_the_other_files() {
    let rank0 = format!("h:11:21 [1] NCCL INFO misc/socket.cc:47 -> 3\n{ABORTED}");
    let rank1 = "h:11:21 [1] NCCL INFO misc/socket.cc:58 -> 3\n";
    let inputs = [
        Input {
            name: "rank0.log",
            text: &rank0,
        },
        Input {
            name: "rank1.log",
            text: rank1,
        },
    ];
    let e = explain_inputs(&inputs, &Options::default());
    assert!(!e
        .findings
        .iter()
        .any(|f| f.kind.as_str() == "teardown-some-ranks"));
}

#[test]
fn a_host_name_that_does_not_resolve_is_named() {
    let c10d = |name: &str| {
        format!(
            "[W726 02:14:09.077658670 socket.cpp:697] [c10d] The IPv6 network addresses of ({name}, 43913) cannot be retrieved (gai error: -2 - Name or service not known).\n"
        )
    };
    let e = pasted(&c10d("Worker-0.svc"));
    let f = finding_by_id(&e, "name-unresolved");
    assert!(f.title.contains("`Worker-0.svc`"), "{}", f.title);
    assert!(f.fix.contains("getent hosts Worker-0.svc") && f.fix.contains("headless service"));
    assert_eq!(f.severity, Severity::Warning);
    // localhost and IPv4 addresses: no name to resolve, nothing said of them.
    for name in ["localhost", "10.0.0.5"] {
        assert!(
            !ids(&pasted(&c10d(name))).contains(&"name-unresolved"),
            "{name}"
        );
    }
    // An address with a space before it is no address: it is quoted as posted.
    let spaced = finding_by_id(&pasted(&c10d(" 10.0.5.4")), "name-unresolved").clone();
    assert!(spaced.title.contains("` 10.0.5.4`"), "{}", spaced.title);
    // Beside one with no name to resolve, the failed lookup of a name is the one named.
    let both = format!("{}{}", c10d("localhost"), c10d("node-7"));
    assert!(finding_by_id(&pasted(&both), "name-unresolved")
        .title
        .contains("node-7"));
    // A resolver's failure on the rendezvous, with no name to quote.
    let plain =
        "torch.distributed: socket.gaierror: [Errno -3] Temporary failure in name resolution\n";
    let f = finding_by_id(&pasted(plain), "name-unresolved").clone();
    assert!(f.title.starts_with("a host name") && f.fix.contains("getent hosts <name>"));
    // The same failure from pip or a model hub is not the job's.
    let pip = "WARNING: Retrying after connection broken by 'NewConnectionError: [Errno -2] Name or service not known': /simple/torch/\n";
    assert!(!ids(&pasted(pip)).contains(&"name-unresolved"));
}

#[test]
fn gloo_given_an_interface_it_cannot_find_points_at_gloo_socket_ifname() {
    let text = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find address for: ^lo\n";
    let f = finding_by_id(&pasted(text), "gloo-ifname-not-found").clone();
    assert!(f.cause.contains("^lo") && f.fix.contains("GLOO_SOCKET_IFNAME"));
    let other = "RuntimeError: Gloo connectFullMesh failed with Connection reset by peer\n";
    // Gloo's lookup of the host name (GLOO_SOCKET_IFNAME unset) is another failure.
    let hostname = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:83] rp != nullptr. Unable to find address for: node-3\n";
    for near in [other, hostname] {
        assert!(
            !ids(&pasted(near)).contains(&"gloo-ifname-not-found"),
            "{near}"
        );
    }
}

#[test]
fn an_ib_port_error_event_is_a_link_that_went_down() {
    let text =
        "n48:1:2 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "ib-port-error");
    assert!(f.title.contains("link") && f.fix.contains("ibstat"));
    assert!(!ids(&e).contains(&"ib-error"), "{:?}", ids(&e));
    // Another async event is not this one.
    let other = "n48:1:2 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : local access violation work queue error\n";
    assert!(!ids(&pasted(other)).contains(&"ib-port-error"));
}

#[test]
fn a_launch_stuck_under_cuda_graphs_is_the_work_fifo_leak_of_its_releases() {
    let stack = "    sched_yield (libc.so.6)\n    ncclLaunchKernelBefore_NoUncapturedCuda (enqueue.cc:968)\n    ncclAllReduce (collectives.cc:49)\n";
    let e = pasted(stack);
    let f = finding_by_id(&e, "known-bug");
    assert!(f.title.contains("graph-work-fifo-leak"), "{}", f.title);
    // A hang elsewhere stops a launch there too: said as a possibility.
    assert!(
        f.cause.contains("dead peer") && f.fix.contains("2.22.3"),
        "{}",
        f.cause
    );
    assert_eq!(f.severity, Severity::Warning);
    // A release with the fix does not show it.
    let fixed = format!("h:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n{stack}");
    let e = pasted(&fixed);
    assert!(!e
        .findings
        .iter()
        .any(|f| f.title.contains("graph-work-fifo-leak")));
}
