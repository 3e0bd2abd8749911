//! Counters read from files, through `Root`: every InfiniBand/RoCE port's error
//! counters and state (`/sys/class/infiniband/<dev>/ports/<n>/counters/*`), every
//! NIC's error and drop counters and carrier changes (`/sys/class/net/<if>`), and the
//! host's CPU: cores busy, cores busy with other processes than the measurement's,
//! runnable threads (`/proc/stat`), load (`/proc/loadavg`) and mean clock
//! (`cpufreq/scaling_cur_freq`).

use std::path::Path;

use super::reading::{Kind, Reading};
use crate::machine::Root;

/// The port error counters that show a sick link (the IB spec's PortCounters).
pub const IB_COUNTERS: [&str; 5] = [
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "port_xmit_discards",
];

/// A NIC's counters of trouble (`statistics/*`) and its link flaps.
const NIC_COUNTERS: [&str; 4] = ["rx_errors", "tx_errors", "rx_dropped", "tx_dropped"];

fn entries(root: &Root, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.path(Path::new(dir)))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn number(root: &Root, path: &str) -> Option<f64> {
    root.read(Path::new(path)).ok()?.trim().parse().ok()
}

/// Every IB/RoCE port's counters, and its state as a number (4: ACTIVE).
pub fn ports(root: &Root, missing: &mut Vec<String>) -> Vec<Reading> {
    let mut out = Vec::new();
    for dev in entries(root, "/sys/class/infiniband") {
        let ports = format!("/sys/class/infiniband/{dev}/ports");
        for port in entries(root, &ports) {
            let dir = format!("{ports}/{port}");
            let source = format!("{dev}:{port}");
            if let Ok(state) = root.read(Path::new(&format!("{dir}/state"))) {
                // "4: ACTIVE"
                if let Some(n) = state.split(':').next().and_then(|n| n.trim().parse().ok()) {
                    out.push(Reading::new(&source, "port.state", n, Kind::Gauge));
                }
            }
            for counter in IB_COUNTERS {
                match number(root, &format!("{dir}/counters/{counter}")) {
                    Some(v) => out.push(Reading::new(&source, counter, v, Kind::Count)),
                    None => missing.push(format!("{source}: no {dir}/counters/{counter}")),
                }
            }
        }
    }
    out
}

/// Every network interface's error and drop counters and carrier changes, but the
/// loopback's.
pub fn nics(root: &Root, _missing: &mut Vec<String>) -> Vec<Reading> {
    let mut out = Vec::new();
    for nic in entries(root, "/sys/class/net") {
        if nic == "lo" {
            continue;
        }
        let dir = format!("/sys/class/net/{nic}");
        for counter in NIC_COUNTERS {
            if let Some(v) = number(root, &format!("{dir}/statistics/{counter}")) {
                out.push(Reading::new(&nic, counter, v, Kind::Count));
            }
        }
        if let Some(v) = number(root, &format!("{dir}/carrier_changes")) {
            out.push(Reading::new(&nic, "carrier_changes", v, Kind::Count));
        }
    }
    out
}

/// All cores' total and busy jiffies, and each own process's (pid, jiffies).
type CpuTimes = (u64, u64, Vec<(u32, u64)>);

/// The host's CPU, from one reading to the next.
pub struct HostCpu {
    /// The measurement's processes: they and their descendants are the own load.
    own: Vec<u32>,
    /// Jiffies at the last reading: all cores' total and busy, and each own
    /// process's user + system time.
    last: Option<CpuTimes>,
}

/// `cpu  user nice system idle iowait irq softirq steal ...`: (total, busy) jiffies
/// of all cores, the number of cores and `procs_running`.
fn proc_stat(text: &str) -> Option<(u64, u64, usize, Option<f64>)> {
    let mut lines = text.lines();
    let fields: Vec<u64> = lines
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    if fields.len() < 4 {
        return None;
    }
    // guest and guest_nice are already counted in user and nice.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields[3] + fields.get(4).copied().unwrap_or(0);
    let cores = text
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    let running = text
        .lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|v| v.trim().parse().ok());
    Some((total, total - idle, cores.max(1), running))
}

/// The parent of a process (`/proc/<pid>/stat` field 4).
fn parent(text: &str) -> Option<u32> {
    text[text.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// User + system jiffies of a process and of its children it has reaped
/// (`/proc/<pid>/stat` fields 14 to 17, counted after the command name, which may
/// hold spaces): a rank that exits moves its time into its parent's.
fn process_jiffies(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (the state).
    (11..15).map(|i| fields.get(i)?.parse::<u64>().ok()).sum()
}

impl HostCpu {
    pub fn new(own: Vec<u32>) -> HostCpu {
        HostCpu { own, last: None }
    }

    /// `own` and every process below them, from each `/proc/<pid>/stat`'s parent.
    fn family(&self, root: &Root) -> Vec<(u32, u64)> {
        let mut all: Vec<(u32, u32, u64)> = Vec::new();
        for name in entries(root, "/proc") {
            let Ok(pid) = name.parse::<u32>() else {
                continue;
            };
            let Ok(text) = root.read(Path::new(&format!("/proc/{pid}/stat"))) else {
                continue;
            };
            if let (Some(ppid), Some(j)) = (parent(&text), process_jiffies(&text)) {
                all.push((pid, ppid, j));
            }
        }
        let mut family = self.own.clone();
        let mut grew = true;
        while grew {
            grew = false;
            for (pid, ppid, _) in &all {
                if family.contains(ppid) && !family.contains(pid) {
                    family.push(*pid);
                    grew = true;
                }
            }
        }
        all.into_iter()
            .filter(|(pid, _, _)| family.contains(pid))
            .map(|(pid, _, j)| (pid, j))
            .collect()
    }

    pub fn read(&mut self, root: &Root, missing: &mut Vec<String>) -> Vec<Reading> {
        let mut out = Vec::new();
        let host = "host";
        match root
            .read(Path::new("/proc/stat"))
            .ok()
            .as_deref()
            .and_then(proc_stat)
        {
            Some((total, busy, cores, running)) => {
                let own = self.family(root);
                if let Some((t0, b0, own0)) = &self.last {
                    let per_core = total.saturating_sub(*t0) as f64 / cores as f64;
                    if per_core > 0.0 {
                        let busy_cores = busy.saturating_sub(*b0) as f64 / per_core;
                        out.push(Reading::new(
                            host,
                            "cpu.busy_cores",
                            busy_cores,
                            Kind::Gauge,
                        ));
                        // A process new since the last reading spent all its time since.
                        let mine: u64 = own
                            .iter()
                            .map(|(p, j)| {
                                let before = own0.iter().find(|(q, _)| q == p).map_or(0, |o| o.1);
                                j.saturating_sub(before)
                            })
                            .sum();
                        let other = (busy.saturating_sub(*b0).saturating_sub(mine)) as f64;
                        out.push(Reading::new(
                            host,
                            "cpu.other_cores",
                            other / per_core,
                            Kind::Gauge,
                        ));
                    }
                }
                if let Some(r) = running {
                    out.push(Reading::new(host, "cpu.runnable", r, Kind::Gauge));
                }
                self.last = Some((total, busy, own));
            }
            None => missing.push("host: /proc/stat unreadable: no CPU load".into()),
        }
        if let Some(load) = root
            .read(Path::new("/proc/loadavg"))
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
        {
            out.push(Reading::new(host, "cpu.load1", load, Kind::Gauge));
        }
        let clocks: Vec<f64> = entries(root, "/sys/devices/system/cpu")
            .iter()
            .filter(|c| {
                c.strip_prefix("cpu")
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .filter_map(|c| {
                number(
                    root,
                    &format!("/sys/devices/system/cpu/{c}/cpufreq/scaling_cur_freq"),
                )
            })
            .collect();
        if clocks.is_empty() {
            missing.push("host: no cpufreq/scaling_cur_freq: no CPU clock".into());
        } else {
            let mhz = clocks.iter().sum::<f64>() / clocks.len() as f64 / 1000.0;
            out.push(Reading::new(host, "cpu.mhz", mhz, Kind::Gauge));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let root = Root::fake(dir.path(), []);
        (dir, root)
    }

    #[test]
    fn ib_ports_nics_and_cpu_are_read_from_the_tree() {
        let c = "/sys/class/infiniband/mlx5_0/ports/1";
        let (dir, root) = tree(&[
            (&format!("{c}/state"), "4: ACTIVE\n"),
            (&format!("{c}/counters/symbol_error"), "0\n"),
            (&format!("{c}/counters/link_downed"), "2\n"),
            (&format!("{c}/counters/link_error_recovery"), "0\n"),
            (&format!("{c}/counters/port_rcv_errors"), "7\n"),
            ("/sys/class/net/eth0/statistics/rx_errors", "3\n"),
            ("/sys/class/net/eth0/carrier_changes", "5\n"),
            ("/sys/class/net/lo/statistics/rx_errors", "9\n"),
            (
                "/proc/stat",
                "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1\ncpu1 1\nprocs_running 3\n",
            ),
            (
                "/proc/1234/stat",
                "1234 (rank 0) R 1000 2 3 4 5 6 7 8 9 10 50 10 0 0\n",
            ),
            (
                "/proc/1000/stat",
                "1000 (nccl-bench) S 1 2 3 4 5 6 7 8 9 10 0 0 0 0\n",
            ),
            (
                "/proc/1300/stat",
                "1300 (yes) R 1 2 3 4 5 6 7 8 9 10 0 0 0 0\n",
            ),
            ("/proc/loadavg", "1.50 1.0 0.5 2/300 999\n"),
            (
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
                "2000000\n",
            ),
            (
                "/sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq",
                "3000000\n",
            ),
        ]);
        let mut missing = Vec::new();
        let ports = ports(&root, &mut missing);
        let value = |r: &[Reading], s: &str, c: &str| {
            r.iter()
                .find(|x| x.source == s && x.counter == c)
                .map(|x| x.value)
        };
        assert_eq!(value(&ports, "mlx5_0:1", "port.state"), Some(4.0));
        assert_eq!(value(&ports, "mlx5_0:1", "link_downed"), Some(2.0));
        assert_eq!(value(&ports, "mlx5_0:1", "port_rcv_errors"), Some(7.0));
        assert_eq!(
            missing,
            ["mlx5_0:1: no /sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_discards"]
        );
        let nics = nics(&root, &mut missing);
        assert_eq!(value(&nics, "eth0", "rx_errors"), Some(3.0));
        assert_eq!(value(&nics, "eth0", "carrier_changes"), Some(5.0));
        assert!(nics.iter().all(|r| r.source != "lo"));

        // 1234 is a child of the measurement's process 1000; 1300 is not.
        let mut cpu = HostCpu::new(vec![1000]);
        let first = cpu.read(&root, &mut missing);
        // The first reading has no CPU time to compare with yet.
        assert_eq!(value(&first, "host", "cpu.busy_cores"), None);
        assert_eq!(value(&first, "host", "cpu.runnable"), Some(3.0));
        assert_eq!(value(&first, "host", "cpu.load1"), Some(1.5));
        assert_eq!(value(&first, "host", "cpu.mhz"), Some(2500.0));
        // 200 more jiffies on 2 cores, all busy, 60 of them the rank's.
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu  200 0 200 800 0 0 0 0 0 0\ncpu0 1\ncpu1 1\nprocs_running 4\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("proc/1234/stat"),
            "1234 (rank 0) R 1000 2 3 4 5 6 7 8 9 10 100 20 0 0\n",
        )
        .unwrap();
        let second = cpu.read(&root, &mut missing);
        assert_eq!(value(&second, "host", "cpu.busy_cores"), Some(2.0));
        assert_eq!(value(&second, "host", "cpu.other_cores"), Some(1.4));
    }
}
