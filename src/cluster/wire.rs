//! Messages between rank 0 (the coordinator) and the `nccl-bench run` process of
//! every rank (its agent), one JSON object per line over the rendezvous connection.
//! The agent starts and stops its rank's worker when told and relays the worker's
//! protocol lines both ways, so the coordinator drives remote workers exactly as
//! `sweep` drives its children.

use serde::{Deserialize, Serialize};

use crate::machine::counters::Reading;
use crate::sweep::group::WorkerSpec;
use crate::sweep::protocol::Command;

/// The first line of every connection: refuses a stray client early.
pub const MAGIC: &str = "nccl-bench-run/1";

/// Agent -> coordinator, first message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub magic: String,
    pub rank: u32,
    pub world_size: u32,
    pub local_rank: u32,
    /// The CUDA device this rank drives (among those visible to it).
    pub device: usize,
    /// That device's PCI bus id, where this rank sees GPUs: two ranks of one host
    /// with the same bus id would share a GPU, whatever their device numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    pub host: String,
    pub pid: u32,
    /// The transport configuration this rank was started with, and its variables.
    pub config: String,
    pub config_env: std::collections::BTreeMap<String, String>,
    /// `host` or `nccl`, as this rank resolved `--backend` on its node.
    pub backend: String,
    /// The libnccl this rank loads and its version.
    pub nccl: Option<crate::model::NcclChoice>,
    /// Why this rank cannot run (no driver, no libnccl, ...), found before joining.
    pub problem: Option<String>,
    /// The launcher's job identity, when it has one: a stale rendezvous file from
    /// another job is recognized by it.
    pub job: Option<String>,
}

/// Coordinator -> agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum Down {
    /// The hello was accepted.
    Welcome,
    /// The hello was refused; the agent exits 2 with this reason.
    Refused { reason: String },
    /// Start the worker of group `seq`.
    Spawn { seq: u32, spec: Box<WorkerSpec> },
    /// A protocol command for the worker's stdin.
    Worker { command: Command },
    /// Close the worker's stdin, let it exit within `grace_ms`, then kill it.
    Finish { grace_ms: u64 },
    /// Kill the worker now.
    Kill,
    /// Read this node's counters every `interval_ms` and send them up until the run
    /// is done (one rank per node is asked). `own` are the pids of the node's ranks'
    /// `run` processes (their load is the soak's), `gpus` the PCI bus ids of the
    /// node's GPUs in the run (none: no GPU counters).
    Counters {
        interval_ms: u64,
        own: Vec<u32>,
        gpus: Option<Vec<String>>,
    },
    /// The run is over: exit with this code (after printing `message`, if any).
    Done { code: u8, message: Option<String> },
}

/// Agent -> coordinator, after the hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "up", rename_all = "snake_case")]
pub enum Up {
    /// A line the worker wrote on stdout (a protocol event or free text).
    Out { seq: u32, line: String },
    /// A line the worker wrote on stderr.
    Err { seq: u32, line: String },
    /// New lines of one of NCCL's debug files on the agent's node.
    NcclLog {
        seq: u32,
        file: String,
        lines: Vec<String>,
    },
    /// The worker's stdout closed.
    Closed { seq: u32 },
    /// The worker is gone (reaped), and how it ended.
    Exited { seq: u32, how: String },
    /// The worker could not be started.
    SpawnFailed { seq: u32, message: String },
    /// One reading of this node's counters (`Down::Counters`), taken `t_ms` after
    /// the agent was asked, and what could not be read, each said once.
    Counters {
        t_ms: u64,
        readings: Vec<Reading>,
        notes: Vec<String>,
    },
}

pub use crate::sweep::protocol::{read_message as receive, send};

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn messages_round_trip_as_lines() {
        let downs = [
            Down::Welcome,
            Down::Worker {
                command: Command::Time { iters: 3, every: 2 },
            },
            Down::Done {
                code: 1,
                message: Some("rank 2 failed".into()),
            },
        ];
        let mut buf = Vec::new();
        for d in &downs {
            send(&mut buf, d).unwrap();
        }
        let mut input = io::Cursor::new(buf);
        let mut line = String::new();
        for d in &downs {
            assert_eq!(
                receive::<Down>(&mut input, &mut line).unwrap().as_ref(),
                Some(d)
            );
        }
        assert_eq!(receive::<Down>(&mut input, &mut line).unwrap(), None);
    }

    #[test]
    fn a_stranger_is_an_error_naming_what_it_sent() {
        let mut input = io::Cursor::new(b"GET / HTTP/1.1\r\n".to_vec());
        let e = receive::<Hello>(&mut input, &mut String::new()).unwrap_err();
        assert!(e.to_string().contains("GET / HTTP/1.1"), "{e}");
    }
}
