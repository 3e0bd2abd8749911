//! Two "nodes" on one machine: network and host-name namespaces joined by a veth
//! pair (10.77.0.1 on node1, 10.77.0.2 on node2), made in a user namespace, so no
//! root is needed. Four `nccl-bench run` ranks, two per node, with the host backend
//! and `NCCL_SOCKET_IFNAME`, as a two-node job starts: the ranks meet over the veth
//! link, ranks of one node talk over SHM and the nodes over TCP, like NCCL.

use crate::common;

use crate::common::{rows, text};

/// After `common::TWO_NODES`: four ranks, two per node.
const RANKS: &str = r#"
export WORLD_SIZE=4 MASTER_ADDR=10.77.0.1 MASTER_PORT=29555 NCCL_SOCKET_IFNAME=v
set -- run --backend host --plain -b 1K -e 64K -n 5 --transports default \
    --rendezvous-timeout 20s --shm-dir "$shm" --out "$out" --label two-nodes
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

#[test]
fn two_nodes_meet_over_their_network_and_use_shm_only_within_a_node() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (o, out) = common::in_namespaces(
        &format!("{}{RANKS}", common::TWO_NODES),
        tmp.path(),
        "ip and nsenter",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = common::run_dir(&out);
    let all = rows(&run);
    assert_eq!(all.len(), 7, "{all:?}");
    for row in &all {
        assert_eq!(row["status"], "ok", "{row:?}");
        // Links 0->1 and 2->3 stay in a node, 1->2 and 3->0 cross: half and half.
        assert_eq!(row["transports"], "SHM:50%;NET/Socket:50%", "{row:?}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["cluster"]["hosts"],
        serde_json::json!(["node1", "node2"])
    );
    assert_eq!(manifest["cluster"]["rendezvous"], "10.77.0.1:29555");
    // A collective's time is every node's: the report points to the pairs.
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("this run cannot say which node is slow; `nccl-bench run --pairs`"),
        "{report}"
    );
    let shm = tmp.path().join("shm");
    assert!(common::dir_entries(&shm).is_empty(), "segments left behind");
}
