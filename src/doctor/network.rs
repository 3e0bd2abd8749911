//! Which network interfaces NCCL's socket transport and bootstrap would use: the
//! machine's interfaces (`machine::net`) through NCCL's choice (`nccl::net`), with
//! `NCCL_SOCKET_IFNAME` and `NCCL_SOCKET_FAMILY` as the environment and nccl.conf set
//! them, and a warning when only loopback or virtual interfaces would carry traffic
//! between hosts.

use std::net::IpAddr;

use super::settings::Settings;
use crate::machine::net::interfaces;
use crate::machine::Root;
use crate::model::{Check, Status};
use crate::nccl::net::{is_virtual_interface, selection, usable_addrs, Family, IfList, Interface};

pub const ID: &str = "net.socket";
pub const TITLE: &str = "Socket interfaces";

fn named(list: &[&Interface], family: Option<&str>) -> String {
    let fam = match family {
        Some("AF_INET") => Some(Family::V4),
        Some("AF_INET6") => Some(Family::V6),
        _ => None,
    };
    list.iter()
        .map(|i| {
            let addrs: Vec<String> = usable_addrs(i, fam).iter().map(IpAddr::to_string).collect();
            format!("{} ({})", i.name, addrs.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn is_reachable_kind(i: &Interface) -> bool {
    !i.loopback && !is_virtual_interface(&i.name)
}

pub fn check(root: &Root, settings: &Settings) -> Check {
    let (ifaces, problems) = interfaces(root);
    let ifname = settings.effective("NCCL_SOCKET_IFNAME");
    let family = settings.effective("NCCL_SOCKET_FAMILY");
    let mut details: Vec<String> = problems.clone();
    if ifaces.is_empty() {
        let value = problems
            .first()
            .cloned()
            .unwrap_or_else(|| "no network interface found".into());
        return Check::new(ID, TITLE, Status::Warn, value).with_details(details);
    }
    if let Err(e) = root.addresses() {
        // NCCL chooses among addresses: without them there is nothing to judge.
        details.retain(|d| !d.starts_with("cannot read interface addresses"));
        details.extend(ifaces.iter().map(Interface::describe));
        let value = format!("cannot read interface addresses: {e}");
        return Check::new(ID, TITLE, Status::Warn, value).with_details(details);
    }
    let (chosen, how) = selection(&ifaces, ifname, family);
    details.extend(ifaces.iter().map(|i| {
        let mark = if chosen.iter().any(|c| c.name == i.name) {
            " (NCCL would use it)"
        } else {
            ""
        };
        format!("{}{mark}", i.describe())
    }));
    details.push(format!("chosen by {how}; the bootstrap uses the first"));
    let mut status = Status::Ok;
    if let Some(v) = ifname {
        if v.len() <= 1 {
            details.push(format!(
                "NCCL_SOCKET_IFNAME={v} is ignored: NCCL reads it only when longer than one character"
            ));
            status = Status::Warn;
        }
        let mistakes = IfList::parse(v).mistakes();
        if !mistakes.is_empty() {
            status = Status::Warn;
        }
        details.extend(mistakes);
    } else if root.env("NCCL_COMM_ID").is_some() {
        details.push(
            "NCCL_COMM_ID is set: without an ib* interface NCCL first takes one in its subnet"
                .to_string(),
        );
    }
    let candidates: Vec<&Interface> = selection(&ifaces, None, family)
        .0
        .into_iter()
        .filter(|i| is_reachable_kind(i) && i.is_up())
        .collect();
    let suggestion = candidates.first().map(|i| i.name.clone());
    let example = suggestion
        .as_ref()
        .map(|n| format!(", e.g. `NCCL_SOCKET_IFNAME={n}` (`={n}` for exactly that name)"))
        .unwrap_or_default();
    let fix_text = format!(
        "Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on{example}; \
         `^docker,lo` excludes instead"
    );
    if chosen.is_empty() {
        let have: Vec<&str> = ifaces
            .iter()
            .filter(|i| !usable_addrs(i, None).is_empty())
            .map(|i| i.name.as_str())
            .collect();
        let value = format!(
            "{how} matches no interface with an address (here: {})",
            if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            }
        );
        return Check::new(ID, TITLE, Status::Fail, value)
            .with_fix(fix_text)
            .with_details(details);
    }
    let mut value = format!("NCCL would use {}", named(&chosen, family));
    if ifname.is_some_and(|v| v.len() > 1) {
        value.push_str(&format!(" ({how})"));
    }
    let mut fix = None;
    if chosen.iter().all(|i| !i.is_up()) {
        details.insert(0, "every interface NCCL would use is down".to_string());
        status = Status::Warn;
        fix = Some(fix_text.clone());
    }
    if chosen.iter().all(|i| !is_reachable_kind(i)) {
        details.insert(
            0,
            "only loopback or container-virtual interfaces: fine within one node, other \
             nodes cannot reach them"
                .to_string(),
        );
        status = Status::Warn;
        fix = Some(fix_text);
    }
    if status == Status::Warn && fix.is_none() {
        fix = Some(
            "Write NCCL_SOCKET_IFNAME as NCCL reads it: `eth0,ens5`, `=ens5` or `^docker,lo`"
                .into(),
        );
    }
    let check = Check::new(ID, TITLE, status, value).with_details(details);
    match fix {
        Some(f) => check.with_fix(f),
        None => check,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;

    fn host() -> FakeMachine {
        FakeMachine::new()
            .interface("lo", "unknown", "0x9")
            .interface("ens5", "up", "0x1003")
            .interface("docker0", "down", "0x1003")
            .interface("ifb0", "down", "0x82")
            .addresses("lo 127.0.0.1\nlo ::1\nens5 10.0.0.5\nens5 fe80::1\ndocker0 172.17.0.1\n")
    }

    fn run(m: FakeMachine) -> Check {
        let root = m.root();
        check(&root, &Settings::read(&root))
    }

    #[test]
    fn the_default_choice_skips_docker_and_lo() {
        let c = run(host());
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert_eq!(c.value, "NCCL would use ens5 (10.0.0.5, fe80::1)");
        let text = c.details.join("\n");
        assert!(
            text.contains("ens5: up, 10.0.0.5, fe80::1 (NCCL would use it)"),
            "{text}"
        );
        assert!(
            text.contains("ifb0: down (administratively), no address"),
            "{text}"
        );
        assert!(text.contains("stops at `^docker,lo`"), "{text}");
    }

    #[test]
    fn an_ifname_matching_nothing_fails_with_the_interface_to_use() {
        let c = run(host().env("NCCL_SOCKET_IFNAME", "eth0"));
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert_eq!(
            c.value,
            "NCCL_SOCKET_IFNAME=eth0 matches no interface with an address (here: docker0, ens5, lo)"
        );
        assert!(c.fix.unwrap().contains("`NCCL_SOCKET_IFNAME=ens5`"));
    }

    #[test]
    fn exclusion_and_exact_match_select_as_nccl_does() {
        let c = run(host().env("NCCL_SOCKET_IFNAME", "^docker"));
        // lo has 127.0.0.1, so excluding only docker leaves lo in.
        assert_eq!(
            c.value,
            "NCCL would use ens5 (10.0.0.5, fe80::1), lo (127.0.0.1) (NCCL_SOCKET_IFNAME=^docker)"
        );
        let c = run(host().env("NCCL_SOCKET_IFNAME", "=ens5"));
        assert_eq!(c.status, Status::Ok);
        assert!(c.value.starts_with("NCCL would use ens5 ("), "{}", c.value);
        let c = run(host().env("NCCL_SOCKET_IFNAME", "=ens"));
        assert_eq!(c.status, Status::Fail);
        let c = run(host().env("NCCL_SOCKET_IFNAME", "ens"));
        assert_eq!(c.status, Status::Ok);
    }

    #[test]
    fn loopback_only_warns_and_ib_interfaces_come_first() {
        let c = run(host().env("NCCL_SOCKET_IFNAME", "lo"));
        assert_eq!(c.status, Status::Warn);
        assert!(c.details[0].starts_with("only loopback"));
        let m = host()
            .interface("ib0", "up", "0x1003")
            .addresses("ens5 10.0.0.5\nib0 192.168.1.5\n");
        let c = run(m);
        assert_eq!(c.value, "NCCL would use ib0 (192.168.1.5)");
        let v4 = run(host().env("NCCL_SOCKET_FAMILY", "AF_INET"));
        assert_eq!(v4.value, "NCCL would use ens5 (10.0.0.5)");
    }

    #[test]
    fn odd_values_and_unreadable_sources_are_said() {
        let c = run(host().env("NCCL_SOCKET_IFNAME", "e"));
        assert_eq!(c.status, Status::Warn);
        assert!(c.details.iter().any(|d| d.contains("is ignored")));
        let c = run(host().env("NCCL_SOCKET_IFNAME", "eth0,=ens5"));
        assert_eq!(c.status, Status::Fail);
        assert!(c.details.iter().any(|d| d.contains("only at the start")));
        let c = run(FakeMachine::new());
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.value.starts_with("cannot read /sys/class/net"),
            "{}",
            c.value
        );
        let no_addrs = FakeMachine::new().interface("ens5", "up", "0x1003");
        let c = run(no_addrs);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.value.starts_with("cannot read interface addresses"),
            "{}",
            c.value
        );
        assert!(c
            .details
            .iter()
            .any(|d| d.starts_with("ens5: up, no address")));
    }
}
