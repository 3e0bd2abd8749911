//! NCCL's `COLL` lines (`NCCL_DEBUG_SUBSYS=COLL`): one per collective call, on every rank,
//! in the same words from 2.19 to 2.30 (`%zi` became `%zu` in 2.22):
//! `AllReduce: opCount 3 sendbuff 0x7f.. recvbuff 0x7f.. count 262144 datatype 7 op 0 root
//! 0 comm 0x55.. [nranks=8] stream 0x55..`. The count is the user's: per rank for
//! all-gather (the send count) and reduce-scatter (the receive count).

use serde::{Deserialize, Serialize};

/// One collective call as its `COLL` line states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollCall {
    /// NCCL's name: `AllReduce`, `AllGather`, `ReduceScatter`, `Broadcast`, `Reduce`,
    /// `Send`, `Recv`, `AlltoAll`, `Gather`, `Scatter`...
    pub func: String,
    /// The communicator's operation counter, hexadecimal in the log.
    pub op_count: u64,
    pub count: u64,
    /// `ncclDataType_t`: 0 int8, 1 uint8, 2 int32, 3 uint32, 4 int64, 5 uint64, 6 half,
    /// 7 float, 8 double, 9 bfloat16, 10+ fp8.
    pub datatype: u32,
    pub op: u32,
    pub root: i64,
    pub comm: String,
    pub nranks: u32,
}

impl CollCall {
    /// The bytes of one element of the call's type; `None` for a code NCCL did not have
    /// in 2.30.
    pub fn type_size(&self) -> Option<u64> {
        match self.datatype {
            0 | 1 | 10 | 11 => Some(1),
            6 | 9 => Some(2),
            2 | 3 | 7 => Some(4),
            4 | 5 | 8 => Some(8),
            _ => None,
        }
    }
}

/// Reads a `COLL` line's message (after `NCCL INFO`); `None` for any other line.
pub(super) fn parse_coll_line(message: &str) -> Option<CollCall> {
    let (func, rest) = message.split_once(": opCount ")?;
    if func.is_empty() || func.contains(char::is_whitespace) {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let value = |key: &str| words.windows(2).find(|w| w[0] == key).map(|w| w[1]);
    let op_count = u64::from_str_radix(words.first()?.trim_start_matches("0x"), 16).ok()?;
    let nranks = words
        .iter()
        .find_map(|w| w.strip_prefix("[nranks=")?.strip_suffix(']'))?
        .parse()
        .ok()?;
    Some(CollCall {
        func: func.to_string(),
        op_count,
        count: value("count")?.parse().ok()?,
        datatype: value("datatype")?.parse().ok()?,
        op: value("op")?.parse().ok()?,
        root: value("root")?.parse().ok()?,
        comm: value("comm")?.to_string(),
        nranks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coll_lines_of_every_version_read_the_same() {
        // 2.28.9, from the H200 run in results/examples/h200-1gpu-gpu-check.
        let c = parse_coll_line(
            "AllReduce: opCount 0 sendbuff 0x7fa050c00000 recvbuff 0x7fa050e00000 count 2 \
             datatype 7 op 0 root 0 comm 0x559a7e7f87e0 [nranks=1] stream 0x559a7e5ed220",
        )
        .unwrap();
        assert_eq!(
            (
                c.func.as_str(),
                c.op_count,
                c.count,
                c.datatype,
                c.op,
                c.root,
                c.nranks
            ),
            ("AllReduce", 0, 2, 7, 0, 0, 1)
        );
        assert_eq!(c.type_size(), Some(4));
        // A hexadecimal opCount, as NCCL prints it (`%lx`).
        let c = parse_coll_line(
            "AllGather: opCount 1f sendbuff 0x1 recvbuff 0x2 count 262144 datatype 9 op 0 \
             root 0 comm 0x3 [nranks=8] stream 0x4",
        )
        .unwrap();
        assert_eq!(
            (c.op_count, c.count, c.type_size()),
            (0x1f, 262144, Some(2))
        );
        assert!(parse_coll_line("AllReduce: 1048576 Bytes -> Algo RING proto LL").is_none());
        assert!(parse_coll_line("Init COMPLETE: opCount 1").is_none());
        assert!(parse_coll_line("AllReduce: opCount zz count 1").is_none());
    }
}
