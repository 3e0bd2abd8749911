//! `run --pairs` on three "nodes" of one machine: network and host-name namespaces
//! on a bridge (10.78.0.1 is node1, the bridge itself; node2 and node3 hang off it
//! by veth pairs), made in a user namespace, so no root is needed. node3's link is
//! throttled both ways with a token bucket (`tc ... tbf`), as a node with a bad NIC
//! or cable: its two pairs must be slow, node1-node2 not, and the report must name
//! node3 itself rather than one link.

use crate::common;

use crate::common::{rows, text};

const SCRIPT: &str = r#"
set -u
bench=$1; out=$2; shm=$3; logs=$4
ip link set lo up || exit 99
ip link add v1 type bridge || exit 99
ip addr add 10.78.0.1/24 dev v1 && ip link set v1 up || exit 99
hostname node1
for n in 2 3; do
    unshare --net --uts sleep 300 &
    pid=$!
    while [ "$(readlink /proc/$pid/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.01; done
    ip link add h$n type veth peer name v$n || exit 99
    ip link set h$n master v1 && ip link set h$n up || exit 99
    ip link set v$n netns "$pid" || exit 99
    nsenter -t "$pid" -n -u sh -c "hostname node$n; ip link set lo up; ip addr add 10.78.0.$n/24 dev v$n; ip link set v$n up" || exit 99
    eval "node$n=$pid"
done
# node3's link: 300 Mbit/s each way.
tc qdisc add dev h3 root tbf rate 300mbit burst 64kb latency 200ms || exit 99
nsenter -t "$node3" -n tc qdisc add dev v3 root tbf rate 300mbit burst 64kb latency 200ms || exit 99
export WORLD_SIZE=3 MASTER_ADDR=10.78.0.1 MASTER_PORT=29556 NCCL_SOCKET_IFNAME=v
# Six rounds, the fewest that give each case an interval: node3's pairs are several
# times slower, far outside it.
set -- run --pairs --backend host --plain -b 128K -e 512K -f 4 -n 20 --rounds 6 --transports default \
    --rendezvous-timeout 20s --shm-dir "$shm" --out "$out" --label node-pairs
RANK=2 LOCAL_RANK=0 nsenter -t "$node3" -n -u "$bench" "$@" >"$logs/r2" 2>&1 & p2=$!
RANK=1 LOCAL_RANK=0 nsenter -t "$node2" -n -u "$bench" "$@" >"$logs/r1" 2>&1 & p1=$!
RANK=0 LOCAL_RANK=0 "$bench" "$@" >"$logs/r0" 2>&1
rc=$?
for p in $p1 $p2; do wait "$p" || rc=$?; done
kill "$node2" "$node3"
for r in 0 1 2; do echo "== rank $r"; cat "$logs/r$r"; done
exit $rc
"#;

#[test]
fn the_node_with_a_slow_link_is_named_from_its_pairs() {
    let _machine = crate::common::alone();
    let tmp = tempfile::tempdir().unwrap();
    let (o, out) = common::in_namespaces(SCRIPT, tmp.path(), "ip, tc and nsenter");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = common::run_dir(&out);
    let all = rows(&run);
    let mut configs: Vec<&str> = all.iter().map(|r| r["config"].as_str()).collect();
    configs.dedup();
    assert_eq!(
        configs,
        ["default.pair0-1", "default.pair0-2", "default.pair1-2"]
    );
    assert_eq!(all.len(), 3 * 2, "{all:?}");
    for row in &all {
        assert_eq!(row["status"], "ok", "{row:?}");
        assert_eq!(row["nranks"], "2", "{row:?}");
        // One rank per node: every connection crosses nodes.
        assert_eq!(row["transports"], "NET/Socket", "{row:?}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["cluster"]["hosts"],
        serde_json::json!(["node1", "node2", "node3"])
    );
    assert_eq!(manifest["configs"][1]["ranks"], serde_json::json!([0, 2]));

    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let section = &report[report.find("## Pairs").expect("a Pairs section")..];
    assert!(
        section.contains("Pairs of nodes (`run --pairs`: the 2 ranks of both nodes)."),
        "{section}"
    );
    assert!(section.contains("| | node1 | node2 | node3 |"), "{section}");
    assert!(
        section.contains("**Slow node node3**: every one of its 2 pairs"),
        "{section}"
    );
    assert!(
        !section.contains("**Slow node node1") && !section.contains("**Slow node node2"),
        "{section}"
    );
    assert!(!section.contains("nodes node1 and node2 (+"), "{section}");
    assert!(!report.contains("this run cannot say which node is slow"));
    assert!(run.join("plots/pairs-default.svg").is_file());
}
