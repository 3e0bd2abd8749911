//! How NCCL picks its socket interfaces (`ncclFindInterfaces`): with
//! `NCCL_SOCKET_IFNAME` (longer than one character) exactly what the list selects
//! ([`IfList`], NCCL's `parseStringList`/`matchIfList` syntax, also that of
//! `NCCL_IB_HCA`), else the first non-empty of `ib*`, anything but `docker*` and `lo`,
//! `docker*`, `lo`; only interfaces with an IPv4 or IPv6 address count (not `::1`),
//! restricted to one family by `NCCL_SOCKET_FAMILY=AF_INET|AF_INET6`. And which names
//! are virtual (lo, docker0, ...): interfaces other hosts cannot reach.

use std::net::IpAddr;

mod iflist;

pub use iflist::{IfEntry, IfList};

/// NCCL's automatic choice, in order.
const DEFAULT_ORDER: [&str; 4] = ["ib", "^docker,lo", "docker", "lo"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub operstate: Option<String>,
    /// `IFF_UP` from the flags, when readable.
    pub admin_up: Option<bool>,
    pub loopback: bool,
    pub addrs: Vec<IpAddr>,
}

impl Interface {
    /// Administratively up and not without carrier.
    pub fn is_up(&self) -> bool {
        self.admin_up != Some(false) && self.operstate.as_deref() != Some("down")
    }

    pub fn describe(&self) -> String {
        let mut state = self
            .operstate
            .clone()
            .unwrap_or_else(|| "state unknown".into());
        if self.admin_up == Some(false) {
            state = "down (administratively)".into();
        }
        if self.loopback {
            state.push_str(", loopback");
        }
        let addrs: Vec<String> = self.addrs.iter().map(IpAddr::to_string).collect();
        let addrs = if addrs.is_empty() {
            "no address".to_string()
        } else {
            addrs.join(", ")
        };
        format!("{}: {state}, {addrs}", self.name)
    }
}

/// The addresses NCCL would consider on `iface`.
pub fn usable_addrs(iface: &Interface, family: Option<Family>) -> Vec<IpAddr> {
    iface
        .addrs
        .iter()
        .filter(|a| !(a.is_ipv6() && a.is_loopback()))
        .filter(|a| match family {
            Some(Family::V4) => a.is_ipv4(),
            Some(Family::V6) => a.is_ipv6(),
            None => true,
        })
        .copied()
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

/// The interfaces NCCL would pick, and how it picked them.
pub fn selection<'a>(
    ifaces: &'a [Interface],
    ifname: Option<&str>,
    family_var: Option<&str>,
) -> (Vec<&'a Interface>, String) {
    let family = match family_var {
        Some("AF_INET") => Some(Family::V4),
        Some("AF_INET6") => Some(Family::V6),
        _ => None,
    };
    let pick = |list: &str| -> Vec<&'a Interface> {
        let list = IfList::parse(list);
        ifaces
            .iter()
            .filter(|i| !usable_addrs(i, family).is_empty() && list.selects(&i.name, None))
            .collect()
    };
    if let Some(v) = ifname.filter(|v| v.len() > 1) {
        return (pick(v), format!("NCCL_SOCKET_IFNAME={v}"));
    }
    for pattern in DEFAULT_ORDER {
        let chosen = pick(pattern);
        if !chosen.is_empty() {
            return (
                chosen,
                format!(
                    "NCCL's default order (ib*, then not docker*/lo, then docker*, then lo) \
                     stops at `{pattern}`"
                ),
            );
        }
    }
    (Vec::new(), "NCCL's default order finds nothing".into())
}

/// lo, docker0, virbr0 and the like: interfaces other hosts cannot reach.
pub fn is_virtual_interface(name: &str) -> bool {
    const PREFIXES: [&str; 9] = [
        "docker",
        "virbr",
        "veth",
        "br-",
        "cni",
        "flannel",
        "cali",
        "vxlan",
        "tailscale",
    ];
    name == "lo" || PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_interfaces_are_recognised_by_name() {
        for name in [
            "lo",
            "docker0",
            "virbr0",
            "veth12ab",
            "br-3f2a",
            "cni0",
            "flannel.1",
        ] {
            assert!(is_virtual_interface(name), "{name}");
        }
        for name in ["eth0", "ens5", "enp227s0f0", "ib0", "bond0", "low0"] {
            assert!(!is_virtual_interface(name), "{name}");
        }
    }
}
