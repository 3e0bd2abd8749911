//! Tests of the rules written from blind set 26: NCCL's socket failure as PyTorch
//! repeats it after `Last error:` (behind a launcher's node prefix), NCCL's `internal
//! error` as PyTorch reports it, and the P2P test a first collective's timeout
//! suggests. Each both ways: the failure, and a near miss it leaves alone.

use super::*;

#[test]
fn nccl_socket_failure_after_last_error_is_read_behind_a_node_prefix() {
    let text = "node2: Last error:\n\
                node2: Net : Call to recv from 10.0.0.2<56843> failed : Connection refused\n";
    let f = finding_by_id(&pasted(text), "socket-connect").clone();
    assert!(f.fix.contains("NCCL_SOCKET_IFNAME") && f.fix.contains("firewall"));
    // Another socket error is a socket error, not a refused connection.
    let reset = text.replace("Connection refused", "Connection reset by peer");
    let found = ids(&pasted(&reset));
    assert!(!found.contains(&"socket-connect"), "{found:?}");
    assert!(found.contains(&"socket-error"), "{found:?}");
    // Words alike from elsewhere are not NCCL's.
    let other = "node2: Call to recv from the cache failed : Connection refused\n";
    assert!(!ids(&pasted(other)).contains(&"socket-connect"));
    let fine = "node2: Net : Call to recv from 10.0.0.2<56843> returned 0 bytes\n";
    assert!(!ids(&pasted(fine)).contains(&"socket-connect"));
    // One line holding the system error and, after it, the socket failure it explains.
    let one = "RuntimeError: NCCL Error 2: unhandled system error. Last error: Net : Call to recv from 10.0.0.2<56843> failed : Connection refused\n";
    assert!(ids(&pasted(one)).contains(&"socket-connect"));
}

#[test]
fn nccl_internal_error_as_pytorch_reports_it_is_a_failure() {
    let text = "NCCL error in: ProcessGroupNCCL.cpp:1269, internal error, NCCL version 2.14.3\n";
    let found = ids(&pasted(text));
    assert!(found.contains(&"other-error"), "{found:?}");
    assert!(!found.contains(&"init-stops"), "{found:?}");
    // An internal error of something else is not NCCL's.
    let tokenizer = "RuntimeError: tokenizer failed, internal error, see the log\n";
    assert!(!ids(&pasted(tokenizer)).contains(&"other-error"));
}

#[test]
fn a_first_collective_timeout_suggests_the_p2p_test() {
    let line = watchdog_timeout;
    let first = finding_by_id(&pasted(&line(1)), "torch-timeout").clone();
    assert!(
        first.cause.contains("NCCL_P2P_DISABLE=1") && first.cause.contains("driver version"),
        "{}",
        first.cause
    );
    // Two hosts named: the first collective crosses nodes, no P2P test.
    let two = format!(
        "h1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n\
         h2:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n{}",
        line(1)
    );
    let f = finding_by_id(&pasted(&two), "torch-timeout").clone();
    assert!(!f.cause.contains("NCCL_P2P_DISABLE=1"), "{}", f.cause);
    // A first SEND is not a collective every rank joins.
    let send = line(1).replace("OpType=ALLREDUCE", "OpType=SEND");
    let f = finding_by_id(&pasted(&send), "torch-timeout").clone();
    assert!(!f.cause.contains("NCCL_P2P_DISABLE=1"), "{}", f.cause);
    // Later collectives got through: the path between the GPUs works.
    let later = finding_by_id(&pasted(&line(812)), "torch-timeout").clone();
    assert!(
        !later.cause.contains("NCCL_P2P_DISABLE=1"),
        "{}",
        later.cause
    );
}
