//! InfiniBand and RoCE ports NCCL's IB transport would use: every
//! `/sys/class/infiniband/<dev>/ports/<n>` with its `state` and `link_layer`; NCCL skips
//! ports that are not ACTIVE and keeps those `NCCL_IB_HCA` selects (the socket list
//! syntax, with `:port`). Memory registration needs a high `ulimit -l` and the verbs
//! devices in /dev/infiniband, which containers often lack.

use std::path::Path;

use super::settings::Settings;
use crate::machine::{Memlock, Root};
use crate::model::{Check, Status};
use crate::nccl::net::IfList;
use crate::units::human_bytes;
use crate::units::plural;

pub const ID: &str = "net.ib";
pub const TITLE: &str = "InfiniBand";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbPort {
    pub device: String,
    pub port: u32,
    /// `ACTIVE`, `DOWN`, `INIT`, ... (the word after `4: `).
    pub state: String,
    /// `InfiniBand` or `Ethernet` (RoCE).
    pub link_layer: String,
    pub rate: Option<String>,
}

impl IbPort {
    pub fn name(&self) -> String {
        format!("{}:{}", self.device, self.port)
    }

    pub fn is_active(&self) -> bool {
        self.state.starts_with("ACTIVE")
    }
}

/// The IB/RoCE ports of a machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IbPorts {
    pub ports: Vec<IbPort>,
    pub error: Option<String>,
}

impl IbPorts {
    pub fn read(root: &Root) -> IbPorts {
        let class = Path::new("/sys/class/infiniband");
        let devices = match std::fs::read_dir(root.path(class)) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return IbPorts::default(),
            Err(e) => {
                return IbPorts {
                    ports: Vec::new(),
                    error: Some(format!("cannot read {}: {e}", class.display())),
                }
            }
        };
        let mut ports = Vec::new();
        for dev in devices.flatten() {
            let device = dev.file_name().to_string_lossy().into_owned();
            let ports_dir = class.join(&device).join("ports");
            let Ok(entries) = std::fs::read_dir(root.path(&ports_dir)) else {
                continue;
            };
            for p in entries.flatten() {
                let Some(port) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                let read = |f: &str| {
                    root.read(&ports_dir.join(port.to_string()).join(f))
                        .ok()
                        .map(|s| s.trim().to_string())
                };
                let state = read("state")
                    .map(|s| {
                        s.split_once(':')
                            .map_or(s.as_str(), |(_, w)| w)
                            .trim()
                            .to_string()
                    })
                    .unwrap_or_else(|| "unknown".into());
                ports.push(IbPort {
                    device: device.clone(),
                    port,
                    state,
                    link_layer: read("link_layer").unwrap_or_else(|| "unknown".into()),
                    rate: read("rate"),
                });
            }
        }
        ports.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
        IbPorts { ports, error: None }
    }

    /// `mlx5_0:1` for every active port.
    pub fn active_names(&self) -> Vec<String> {
        self.ports
            .iter()
            .filter(|p| p.is_active())
            .map(IbPort::name)
            .collect()
    }

    pub fn check(&self, root: &Root, settings: &Settings) -> Check {
        if let Some(e) = &self.error {
            return Check::new(ID, TITLE, Status::Warn, e.clone());
        }
        let hca = settings.effective("NCCL_IB_HCA").filter(|v| !v.is_empty());
        if self.ports.is_empty() {
            let mut c = Check::new(
                ID,
                TITLE,
                Status::Ok,
                "no InfiniBand/RoCE device (NCCL uses TCP sockets between nodes)",
            );
            if let Some(v) = hca {
                c.details
                    .push(format!("NCCL_IB_HCA={v} has no device to select here"));
            }
            return c;
        }
        let disabled = if settings.is_on("NCCL_IB_DISABLE") {
            Some("NCCL_IB_DISABLE")
        } else if settings
            .effective("NCCL_NET")
            .is_some_and(|v| v.eq_ignore_ascii_case("socket"))
        {
            Some("NCCL_NET")
        } else {
            None
        };
        let list = hca.map(IfList::parse);
        let selected = |p: &IbPort| {
            list.as_ref()
                .is_none_or(|l| l.selects(&p.device, Some(p.port)))
        };
        let mut details: Vec<String> = self
            .ports
            .iter()
            .map(|p| {
                let rate = p
                    .rate
                    .as_ref()
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default();
                let mark = if disabled.is_none() && p.is_active() && selected(p) {
                    " (NCCL would use it)"
                } else {
                    ""
                };
                format!("{} {}, {}{rate}{mark}", p.name(), p.state, p.link_layer)
            })
            .collect();
        let active = self.active_names();
        let chosen: Vec<&IbPort> = self
            .ports
            .iter()
            .filter(|p| p.is_active() && selected(p))
            .collect();
        let counts = format!(
            "{} of {} active",
            active.len(),
            plural(self.ports.len(), "port", "ports")
        );
        if let Some(var) = disabled {
            let v = settings.effective(var).unwrap_or_default();
            let value = format!("{counts}; not used: {var}={v}");
            return Check::new(ID, TITLE, Status::Ok, value).with_details(details);
        }
        let mut status = Status::Ok;
        let mut fixes: Vec<String> = Vec::new();
        if let Some(l) = &list {
            let mistakes = l.mistakes();
            if !mistakes.is_empty() {
                status = Status::Warn;
                fixes.push(
                    "write NCCL_IB_HCA as `mlx5_0:1,mlx5_1:1`, `=mlx5_0` or `^mlx5_2`".into(),
                );
            }
            details.extend(mistakes);
        }
        if chosen.is_empty() {
            let example = if active.is_empty() {
                String::new()
            } else {
                format!(", e.g. `NCCL_IB_HCA={}`", active.join(","))
            };
            let (value, st, fix) = match hca {
                Some(v) => (
                    format!("NCCL_IB_HCA={v} selects no active port ({counts})"),
                    Status::Fail,
                    format!("Set NCCL_IB_HCA to active ports{example} (`ibstat` lists them)"),
                ),
                None => (
                    format!("no active port ({counts}): NCCL falls back to sockets between nodes"),
                    Status::Warn,
                    "Bring the links up: check cables and the subnet manager (`ibstat`, \
                     `ibv_devinfo`)"
                        .to_string(),
                ),
            };
            return Check::new(ID, TITLE, st, value)
                .with_fix(fix)
                .with_details(details);
        }
        let names: Vec<String> = chosen.iter().map(|p| p.name()).collect();
        let mut value = format!("NCCL would use {} ({counts})", names.join(", "));
        match root.memlock() {
            Ok(Memlock::Unlimited) => value.push_str("; ulimit -l unlimited"),
            Ok(Memlock::Bytes(n)) => {
                value.push_str(&format!("; ulimit -l {}", human_bytes(n)));
                details.insert(
                    0,
                    format!(
                        "ulimit -l is {}: ibverbs registers NCCL's buffers as locked memory and \
                         fails (or NCCL falls back to sockets) when the limit is reached",
                        human_bytes(n)
                    ),
                );
                status = Status::Warn;
                fixes.push(
                    "raise the memlock limit: `ulimit -l unlimited`, `docker run --ulimit \
                     memlock=-1:-1`, `LimitMEMLOCK=infinity` for systemd services"
                        .into(),
                );
            }
            Err(e) => details.push(format!("cannot read ulimit -l: {e}")),
        }
        let verbs = std::fs::read_dir(root.path(Path::new("/dev/infiniband")))
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("uverbs"))
            })
            .unwrap_or(false);
        if !verbs {
            details.insert(
                0,
                "no /dev/infiniband/uverbs*: ibverbs cannot open the devices (a container \
                 started without them)"
                    .into(),
            );
            status = Status::Warn;
            fixes.push(
                "give the container the devices: `docker run --device=/dev/infiniband` (and \
                 `--cap-add=IPC_LOCK`), or an RDMA device plugin on Kubernetes"
                    .into(),
            );
        }
        if chosen.iter().any(|p| p.link_layer == "Ethernet")
            && settings.effective("NCCL_IB_GID_INDEX").is_none()
        {
            details.push(
                "RoCE port(s): recent NCCL releases pick the GID index themselves; older ones \
                 use index 0 unless NCCL_IB_GID_INDEX is set (RoCEv2 is often 3)"
                    .into(),
            );
        }
        let check = Check::new(ID, TITLE, status, value).with_details(details);
        if fixes.is_empty() {
            check
        } else {
            let mut fix = fixes.join("; ");
            if let Some(first) = fix.get(..1) {
                fix.replace_range(..1, &first.to_uppercase());
            }
            check.with_fix(fix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;

    fn ib_host() -> FakeMachine {
        FakeMachine::new()
            .ib_port("mlx5_0", 1, "4: ACTIVE", "InfiniBand")
            .file(
                "/sys/class/infiniband/mlx5_0/ports/1/rate",
                "200 Gb/sec (4X HDR)\n",
            )
            .ib_port("mlx5_1", 1, "1: DOWN", "InfiniBand")
            .ib_port("mlx5_2", 1, "4: ACTIVE", "Ethernet")
            .file("/dev/infiniband/uverbs0", "")
    }

    fn run(m: &FakeMachine) -> Check {
        let root = m.root();
        IbPorts::read(&root).check(&root, &Settings::read(&root))
    }

    #[test]
    fn active_ports_with_unlimited_memlock_are_ok() {
        let m = ib_host().memlock("unlimited");
        let c = run(&m);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert_eq!(
            c.value,
            "NCCL would use mlx5_0:1, mlx5_2:1 (2 of 3 ports active); ulimit -l unlimited"
        );
        assert_eq!(
            c.details[0],
            "mlx5_0:1 ACTIVE, InfiniBand, 200 Gb/sec (4X HDR) (NCCL would use it)"
        );
        assert!(c.details.iter().any(|d| d.starts_with("RoCE port(s)")));
    }

    #[test]
    fn a_low_memlock_and_missing_verbs_devices_warn() {
        let m = FakeMachine::new()
            .ib_port("mlx5_0", 1, "4: ACTIVE", "InfiniBand")
            .memlock("65536");
        let c = run(&m);
        assert_eq!(c.status, Status::Warn);
        assert!(c.value.ends_with("ulimit -l 64.0 KiB"), "{}", c.value);
        let fix = c.fix.unwrap();
        assert!(fix.starts_with("Raise the memlock limit"), "{fix}");
        assert!(fix.contains("--device=/dev/infiniband"), "{fix}");
    }

    #[test]
    fn an_hca_list_selecting_no_active_port_fails() {
        let m = ib_host().memlock("unlimited").env("NCCL_IB_HCA", "mlx5_1");
        let c = run(&m);
        assert_eq!(c.status, Status::Fail);
        assert_eq!(
            c.value,
            "NCCL_IB_HCA=mlx5_1 selects no active port (2 of 3 ports active)"
        );
        assert!(c.fix.unwrap().contains("`NCCL_IB_HCA=mlx5_0:1,mlx5_2:1`"));
        let m = ib_host()
            .memlock("unlimited")
            .env("NCCL_IB_HCA", "=mlx5_0:1");
        assert_eq!(
            run(&m).value,
            "NCCL would use mlx5_0:1 (2 of 3 ports active); ulimit -l unlimited"
        );
        let m = ib_host().memlock("unlimited").env("NCCL_IB_HCA", "^mlx5_0");
        assert!(run(&m).value.starts_with("NCCL would use mlx5_2:1 ("));
    }

    #[test]
    fn no_devices_no_active_ports_and_disabled_ib() {
        let c = run(&FakeMachine::new());
        assert_eq!(c.status, Status::Ok);
        assert!(c.value.starts_with("no InfiniBand/RoCE device"));
        let down = FakeMachine::new().ib_port("mlx5_0", 1, "1: DOWN", "InfiniBand");
        let c = run(&down);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.value.starts_with("no active port (0 of 1 port active)"),
            "{}",
            c.value
        );
        let off = ib_host().env("NCCL_IB_DISABLE", "1");
        let c = run(&off);
        assert_eq!(
            (c.status, c.value.as_str()),
            (
                Status::Ok,
                "2 of 3 ports active; not used: NCCL_IB_DISABLE=1"
            )
        );
        assert_eq!(
            IbPorts::read(&off.root()).active_names(),
            ["mlx5_0:1", "mlx5_2:1"]
        );
    }
}
