//! The JSON-lines protocol between the orchestrator and its workers. Workers write
//! events on stdout (one JSON object per line) and read commands on stdin; stderr is
//! free text that ends up in the case's log. The orchestrator drives every step, so
//! all ranks run the same sizes and the same number of iterations.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};

use serde::{Deserialize, Serialize};

/// Worker -> orchestrator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    Hello {
        rank: u32,
        pid: u32,
        host: String,
    },
    /// Rank 0 only: the id the other ranks need.
    UniqueId {
        id: String,
    },
    /// The communicator is up; the transports this rank's connections use.
    Ready {
        transports: String,
        detail: String,
        /// The algorithm and protocol of a backend that decides them itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        algorithm: Option<(String, String)>,
    },
    /// Input filled, warm-up done, the size calibrated.
    Warm {
        bytes: u64,
        /// Iterations per timestamp this rank's calibration asks for
        /// (`Communicator::calibrate`).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        wanted: u64,
    },
    /// Per-iteration times of a timed batch, ns: the times of each run of the
    /// batch's `every` iterations are their shared step's time spread evenly.
    Batch {
        durations_ns: Cow<'a, [u64]>,
    },
    /// The answer to `Probe`: the library's estimate and its refusal, if any.
    Probed {
        #[serde(default)]
        predicted_us: Option<f64>,
        #[serde(default)]
        refused: Option<String>,
    },
    Checked {
        wrong: u64,
        first_wrong: Option<WrongElement>,
    },
    Error {
        message: String,
        /// The rank gave up at its own deadline (just before the case timeout) and
        /// stopped the collective: the case is a timeout, not a failure.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        timed_out: bool,
    },
    Bye,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrongElement {
    pub index: u64,
    pub got: f64,
    pub expected: f64,
}

/// Orchestrator -> worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    UniqueId {
        id: String,
    },
    /// Prepare a size: fill, poison the output, warm up.
    Size {
        bytes: u64,
        warmup: u64,
    },
    /// One untimed all-reduce to align the ranks, then `iters` timed ones, a
    /// timestamp after every `every` of them (the case's stride, one for all ranks).
    Time {
        iters: u64,
        #[serde(default = "one", skip_serializing_if = "is_one")]
        every: u64,
    },
    Check,
    /// A soak goes on: the case's time budget (`--timeout`) starts again now, so
    /// that it bounds each batch rather than the whole soak. No answer.
    Renew,
    /// One untimed all-reduce of a size, for the library's decision about it (a
    /// probe group, whose NCCL log has its `TUNING` lines).
    Probe {
        bytes: u64,
    },
    Exit,
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

/// Writes one message as a line and flushes.
pub fn send<T: Serialize>(out: &mut impl Write, message: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, message)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Reads the next command; `None` at end of input (the orchestrator is gone).
pub fn read_command(input: &mut impl BufRead, line: &mut String) -> io::Result<Option<Command>> {
    read_message(input, line)
}

/// Reads the next JSON-lines message of any type; `None` at end of input. A line
/// that is not one is an error quoting (the start of) it.
pub fn read_message<T: serde::de::DeserializeOwned>(
    input: &mut impl BufRead,
    line: &mut String,
) -> io::Result<Option<T>> {
    line.clear();
    if input.read_line(line)? == 0 {
        return Ok(None);
    }
    serde_json::from_str(line.trim()).map(Some).map_err(|e| {
        let text = line.trim();
        let shown = text
            .char_indices()
            .nth(120)
            .map_or(text, |(i, _)| &text[..i]);
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected message {shown:?}: {e}"),
        )
    })
}

/// Parses a line a worker printed; `None` when it is not a protocol event.
pub fn parse_event(line: &str) -> Option<Event<'static>> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str(line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_commands_round_trip() {
        let events = [
            Event::Hello {
                rank: 1,
                pid: 42,
                host: "n1".into(),
            },
            Event::Warm {
                bytes: 8,
                wanted: 1,
            },
            Event::Warm {
                bytes: 8,
                wanted: 5,
            },
            Event::Batch {
                durations_ns: Cow::Owned(vec![1, 2, 3]),
            },
            Event::Checked {
                wrong: 2,
                first_wrong: Some(WrongElement {
                    index: 7,
                    got: 1.0,
                    expected: 2.0,
                }),
            },
            Event::Error {
                message: "boom".into(),
                timed_out: false,
            },
            Event::Error {
                message: "stuck".into(),
                timed_out: true,
            },
        ];
        for e in events {
            let mut buf = Vec::new();
            send(&mut buf, &e).unwrap();
            assert!(buf.ends_with(b"\n"));
            assert_eq!(parse_event(std::str::from_utf8(&buf).unwrap()), Some(e));
        }
        let mut input = io::Cursor::new(
            b"{\"cmd\":\"time\",\"iters\":5}\n{\"cmd\":\"time\",\"iters\":6,\"every\":3}\n{\"cmd\":\"exit\"}\n"
                .to_vec(),
        );
        let mut line = String::new();
        assert_eq!(
            read_command(&mut input, &mut line).unwrap(),
            Some(Command::Time { iters: 5, every: 1 })
        );
        assert_eq!(
            read_command(&mut input, &mut line).unwrap(),
            Some(Command::Time { iters: 6, every: 3 })
        );
        assert_eq!(
            read_command(&mut input, &mut line).unwrap(),
            Some(Command::Exit)
        );
        assert_eq!(read_command(&mut input, &mut line).unwrap(), None);
        assert_eq!(parse_event("NCCL INFO something"), None);
    }
}
