//! A one-shot reading of the counters a soak samples (`machine::counters`): the GPUs'
//! throttle reasons and NVLink and ECC errors since NVML started counting, and every
//! InfiniBand/RoCE port's and NIC's error counters since boot. (XID events are seen
//! only while a soak watches: NVML delivers those that happen after it registers.)
//! Any error counted, or a throttle reason on, is a warning naming where: a link
//! that already counts errors at rest is the first suspect of a slow run.

use crate::machine::counters::{source_words, Kind, Reading, Sampler, THROTTLE_REASONS};
use crate::machine::Root;
use crate::model::{Check, Status};

pub const ID: &str = "counters";
pub const TITLE: &str = "Error counters";

/// Counts that are trouble when not zero (drops and link flaps are listed, not
/// warned about: a NIC drops multicast it does not want, and a link that came up
/// once counted a carrier change).
fn is_error(counter: &str) -> bool {
    !matches!(counter, "rx_dropped" | "tx_dropped" | "carrier_changes")
}

pub fn check(root: &Root, gpus: bool) -> Check {
    let mut sampler = Sampler::new(root.clone(), gpus, None);
    let readings = sampler.sample();
    judge(&readings, &sampler.notes())
}

/// The check from one reading of every counter, and what could not be read.
pub fn judge(readings: &[Reading], notes: &[String]) -> Check {
    let words = source_words;
    let mut trouble = Vec::new();
    let mut details = Vec::new();
    for r in readings {
        match r.kind {
            Kind::Count if r.value > 0.0 => {
                let line = format!(
                    "{}: {} {}",
                    words(&r.source),
                    crate::units::trim_number(r.value),
                    r.counter
                );
                if is_error(&r.counter) {
                    trouble.push(line);
                } else {
                    details.push(line);
                }
            }
            Kind::Flag if r.value > 0.5 => {
                let reason = THROTTLE_REASONS
                    .iter()
                    .find(|(_, name, _)| *name == r.counter)
                    .map_or(r.counter.as_str(), |t| t.2);
                trouble.push(format!("{}: {reason}", words(&r.source)));
            }
            _ => {}
        }
    }
    let sources = |prefix: &dyn Fn(&str) -> bool| {
        let mut s: Vec<&str> = readings
            .iter()
            .map(|r| r.source.as_str())
            .filter(|s| prefix(s))
            .collect();
        s.dedup();
        s.len()
    };
    let gpus = sources(&|s| s.starts_with("gpu") && !s.contains('.'));
    let links = sources(&|s| s.contains(".nvlink"));
    let ports = sources(&|s| s.contains(':'));
    let nics = sources(&|s| !s.starts_with("gpu") && !s.contains(':') && s != "host");
    let read = format!(
        "{} GPU(s), {links} NVLink(s), {ports} IB/RoCE port(s), {nics} NIC(s)",
        gpus
    );
    details.extend(notes.iter().map(|n| format!("not read: {n}")));
    let mut check = if trouble.is_empty() {
        Check::new(ID, TITLE, Status::Ok, format!("none counted on {read}"))
    } else {
        let mut c = Check::new(
            ID,
            TITLE,
            Status::Warn,
            format!(
                "{}: {}",
                crate::units::plural(
                    trouble.len(),
                    "counter is not zero",
                    "counters are not zero"
                ),
                trouble.join("; ")
            ),
        );
        c.fix = Some("a link or GPU that counts errors at rest slows collectives: run `nccl-bench soak` to see whether they grow under load, then reseat or replace the part".into());
        c
    };
    check.details = details;
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_errors_and_throttles_warn_with_where_and_clean_counters_do_not() {
        let clean = [
            Reading::new("mlx5_0:1", "symbol_error", 0.0, Kind::Count),
            Reading::new("eth0", "carrier_changes", 2.0, Kind::Count),
            Reading::new("gpu0", "throttle.hw_slowdown", 0.0, Kind::Flag),
            Reading::new("gpu0.nvlink0", "nvlink.replay", 0.0, Kind::Count),
        ];
        let ok = judge(&clean, &[]);
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert_eq!(
            ok.value,
            "none counted on 1 GPU(s), 1 NVLink(s), 1 IB/RoCE port(s), 1 NIC(s)"
        );
        assert_eq!(ok.details, ["NIC eth0: 2 carrier_changes"]);
        let mut sick = clean.to_vec();
        sick.push(Reading::new("mlx5_0:1", "link_downed", 3.0, Kind::Count));
        sick.push(Reading::new("gpu0", "throttle.hw_thermal", 1.0, Kind::Flag));
        let warn = judge(&sick, &["host: no CPU clock".into()]);
        assert_eq!(warn.status, Status::Warn);
        assert_eq!(
            warn.value,
            "2 counters are not zero: port mlx5_0:1: 3 link_downed; GPU 0: HW thermal slowdown"
        );
        assert!(warn
            .details
            .contains(&"not read: host: no CPU clock".to_string()));
    }

    #[test]
    fn a_port_counting_errors_in_a_machine_tree_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir
            .path()
            .join("sys/class/infiniband/mlx5_1/ports/1/counters");
        std::fs::create_dir_all(&c).unwrap();
        for (f, v) in [
            ("symbol_error", "0"),
            ("link_downed", "0"),
            ("link_error_recovery", "0"),
            ("port_rcv_errors", "12"),
            ("port_xmit_discards", "0"),
        ] {
            std::fs::write(c.join(f), v).unwrap();
        }
        let check = check(&Root::fake(dir.path(), []), false);
        assert_eq!(check.status, Status::Warn);
        assert!(
            check.value.contains("port mlx5_1:1: 12 port_rcv_errors"),
            "{}",
            check.value
        );
    }
}
