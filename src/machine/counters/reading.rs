//! One counter's value as read (`Reading`) and how it reads (`Kind`: a count that
//! grows, a level, a condition on or off).

/// How a counter's value reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// `gpu3` -> `GPU 3`, `gpu5.nvlink3` -> `NVLink 3 on GPU 5`, `mlx5_0:1` -> `port
/// mlx5_0:1`, `host` -> `the host`, a NIC by its name.
pub fn source_words(source: &str) -> String {
    let gpu = |s: &str| {
        s.strip_prefix("gpu")
            .filter(|n| n.parse::<u32>().is_ok())
            .map(str::to_string)
    };
    if let Some((g, link)) = source.split_once(".nvlink") {
        if let Some(g) = gpu(g) {
            return format!("NVLink {link} on GPU {g}");
        }
    }
    if let Some(g) = gpu(source) {
        return format!("GPU {g}");
    }
    if source == "host" {
        return "the host".into();
    }
    if source.contains(':') {
        return format!("port {source}");
    }
    format!("NIC {source}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_read_as_words() {
        assert_eq!(source_words("gpu5.nvlink3"), "NVLink 3 on GPU 5");
        assert_eq!(source_words("gpu0"), "GPU 0");
        assert_eq!(source_words("mlx5_0:1"), "port mlx5_0:1");
        assert_eq!(source_words("eth0"), "NIC eth0");
        assert_eq!(source_words("host"), "the host");
    }
}
