//! One counter's value as read (`Reading`) and how it reads (`Kind`: a count that
//! grows, a level, a condition on or off).

/// How a counter's value reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Grows: what matters is how much it grew (errors, replays, events).
    Count,
    /// A level (a clock, a temperature, the CPU load).
    Gauge,
    /// 0 or 1: a condition is on (a throttle reason).
    Flag,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Count => "count",
            Kind::Gauge => "gauge",
            Kind::Flag => "flag",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        match text {
            "count" => Some(Kind::Count),
            "gauge" => Some(Kind::Gauge),
            "flag" => Some(Kind::Flag),
            _ => None,
        }
    }
}

/// One counter's value: `source` names what it belongs to (`gpu3`, `gpu5.nvlink3`,
/// `mlx5_0:1`, `eth0`, `host`), `counter` what it counts (`nvlink.replay`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub source: String,
    pub counter: String,
    pub value: f64,
    pub kind: Kind,
}

impl Reading {
    pub fn new(source: &str, counter: &str, value: f64, kind: Kind) -> Reading {
        Reading {
            source: source.to_string(),
            counter: counter.to_string(),
            value,
            kind,
        }
    }
}
