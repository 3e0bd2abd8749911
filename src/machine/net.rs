//! The machine's network interfaces: names, state and flags from
//! `/sys/class/net/<if>/{operstate,flags}`, addresses from the root (`getifaddrs` on the
//! real machine). Which of them NCCL would use is `nccl::net`'s business.

use std::path::Path;

use super::Root;
use crate::nccl::net::Interface;

const IFF_UP: u32 = 0x1;
const IFF_LOOPBACK: u32 = 0x8;
/// The interfaces of the root, sorted by name, and what could not be read.
pub fn interfaces(root: &Root) -> (Vec<Interface>, Vec<String>) {
    let mut problems = Vec::new();
    let mut list: Vec<Interface> = Vec::new();
    let net = Path::new("/sys/class/net");
    match std::fs::read_dir(root.path(net)) {
        Ok(entries) => {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let read = |f: &str| root.read(&net.join(&name).join(f)).ok();
                let flags = read("flags").and_then(|f| {
                    let f = f.trim();
                    u32::from_str_radix(f.trim_start_matches("0x"), 16).ok()
                });
                list.push(Interface {
                    operstate: read("operstate").map(|s| s.trim().to_string()),
                    admin_up: flags.map(|f| f & IFF_UP != 0),
                    loopback: flags.is_some_and(|f| f & IFF_LOOPBACK != 0) || name == "lo",
                    name,
                    addrs: Vec::new(),
                });
            }
        }
        Err(e) => problems.push(format!("cannot read /sys/class/net: {e}")),
    }
    match root.addresses() {
        Ok(addrs) => {
            for a in addrs {
                let i = match list.iter().position(|i| i.name == a.interface) {
                    Some(i) => i,
                    None => {
                        list.push(Interface {
                            name: a.interface.clone(),
                            operstate: None,
                            admin_up: None,
                            loopback: a.interface == "lo",
                            addrs: Vec::new(),
                        });
                        list.len() - 1
                    }
                };
                if !list[i].addrs.contains(&a.addr) {
                    list[i].addrs.push(a.addr);
                }
            }
        }
        Err(e) => problems.push(format!("cannot read interface addresses: {e}")),
    }
    list.sort_by(|a, b| a.name.cmp(&b.name));
    (list, problems)
}
