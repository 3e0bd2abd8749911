//! Are we in a container, and does it share the host's IPC namespace? Ranks of one
//! node use NCCL's SHM transport only when they see the same /dev/shm, and a container
//! gets its own (64 MiB in Docker) unless run with `--ipc=host` or given a bigger one.
//!
//! The markers: `/.dockerenv` (Docker), `/run/.containerenv` (Podman, CRI-O), container
//! names in `/proc/1/cgroup` or `/proc/self/cgroup` (cgroup v1; under cgroup v2 a
//! container usually sees `0::/`), and `KUBERNETES_SERVICE_HOST` (every Kubernetes pod).
//! The IPC namespace is compared with pid 1's: that tells "shared with the host" only
//! when pid 1 is the host's init, which a container with its own PID namespace hides,
//! so the answer is often, honestly, "unknown".

use std::path::Path;

use crate::machine::Root;
use crate::model::{Check, Status};

pub const ID: &str = "container";
pub const TITLE: &str = "Container";

/// cgroup path fragments and the runtime they name.
const CGROUP_MARKERS: [(&str, &str); 6] = [
    ("kubepods", "Kubernetes"),
    ("docker", "Docker"),
    ("cri-containerd", "containerd"),
    ("containerd", "containerd"),
    ("crio", "CRI-O"),
    ("libpod", "Podman"),
];

/// What the markers say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerFacts {
    /// Runtime names with the marker that gave each away.
    pub markers: Vec<(String, String)>,
    pub ipc: Ipc,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ipc {
    /// Same namespace as pid 1 and no container marker: the host's.
    Host,
    /// Different from pid 1's.
    Private,
    /// Same as pid 1's inside a container (pid 1 is likely the container's own init),
    /// or unreadable.
    Unknown(String),
}

impl ContainerFacts {
    pub fn probe(root: &Root) -> ContainerFacts {
        let mut markers: Vec<(String, String)> = Vec::new();
        let mut add = |runtime: &str, marker: String| {
            if !markers.iter().any(|(r, _)| r == runtime) {
                markers.push((runtime.to_string(), marker));
            }
        };
        if root.path(Path::new("/.dockerenv")).exists() {
            add("Docker", "/.dockerenv".into());
        }
        if root.path(Path::new("/run/.containerenv")).exists() {
            add("Podman/CRI-O", "/run/.containerenv".into());
        }
        for file in ["/proc/1/cgroup", "/proc/self/cgroup"] {
            let Ok(text) = root.read(Path::new(file)) else {
                continue;
            };
            for (fragment, runtime) in CGROUP_MARKERS {
                if text.lines().any(|l| l.contains(fragment)) {
                    add(runtime, format!("`{fragment}` in {file}"));
                }
            }
        }
        if root.env("KUBERNETES_SERVICE_HOST").is_some() {
            add("Kubernetes", "KUBERNETES_SERVICE_HOST is set".into());
        }
        let ipc = ipc_namespace(root, !markers.is_empty());
        ContainerFacts { markers, ipc }
    }
}

fn ipc_namespace(root: &Root, in_container: bool) -> Ipc {
    let link = |pid: &str| {
        let path = format!("/proc/{pid}/ns/ipc");
        std::fs::read_link(root.path(Path::new(&path)))
            .map(|t| t.display().to_string())
            .map_err(|e| format!("cannot read {path}: {e}"))
    };
    match (link("self"), link("1")) {
        (Ok(me), Ok(init)) if me != init => Ipc::Private,
        (Ok(_), Ok(_)) if in_container => Ipc::Unknown(
            "same as pid 1's, but in a container pid 1 is usually the container's own \
             init, so this does not show whether the host's is shared"
                .into(),
        ),
        (Ok(_), Ok(_)) => Ipc::Host,
        (Err(e), _) | (_, Err(e)) => Ipc::Unknown(e),
    }
}

pub fn check(root: &Root, shm_dir: &Path) -> Check {
    let facts = ContainerFacts::probe(root);
    let mut details: Vec<String> = facts
        .markers
        .iter()
        .map(|(runtime, marker)| format!("{runtime}: {marker}"))
        .collect();
    let where_ = if facts.markers.is_empty() {
        "not in a container (no /.dockerenv, /run/.containerenv, container cgroup or \
         KUBERNETES_SERVICE_HOST)"
            .to_string()
    } else {
        let names: Vec<&str> = facts.markers.iter().map(|(r, _)| r.as_str()).collect();
        format!("in a container ({})", names.join(", "))
    };
    let ipc = match &facts.ipc {
        Ipc::Host => "IPC namespace: the host's (same as pid 1's)".to_string(),
        Ipc::Private => {
            "IPC namespace: private (not pid 1's): ranks in other containers do not see \
             this one's shared memory"
                .to_string()
        }
        Ipc::Unknown(why) => {
            details.push(format!("IPC namespace: {why}"));
            "IPC namespace: unknown".to_string()
        }
    };
    if !facts.markers.is_empty() {
        details.push(format!(
            "ranks of one node share NCCL's SHM segments only in one IPC namespace: run them \
             in one container or pod, or use `--ipc=host` / `--ipc=container:<first>`; {} \
             is this container's own unless mounted from the host",
            shm_dir.display()
        ));
    }
    Check::new(ID, TITLE, Status::Ok, format!("{where_}; {ipc}")).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;

    #[test]
    fn a_bare_host_with_readable_namespaces_shares_the_hosts() {
        let m = FakeMachine::new()
            .file("/proc/1/cgroup", "0::/init.scope\n")
            .symlink("/proc/self/ns/ipc", "ipc:[4026531839]")
            .symlink("/proc/1/ns/ipc", "ipc:[4026531839]");
        let c = check(&m.root(), Path::new("/dev/shm"));
        assert_eq!(c.status, Status::Ok);
        assert!(c.value.starts_with("not in a container"), "{}", c.value);
        assert!(c
            .value
            .ends_with("IPC namespace: the host's (same as pid 1's)"));
    }

    #[test]
    fn docker_and_kubernetes_are_recognised_and_unknown_is_said() {
        let m = FakeMachine::new()
            .file("/.dockerenv", "")
            .file("/proc/1/cgroup", "12:pids:/kubepods/besteffort/pod1/abc\n")
            .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
            .symlink("/proc/self/ns/ipc", "ipc:[4026532201]")
            .symlink("/proc/1/ns/ipc", "ipc:[4026532201]");
        let f = ContainerFacts::probe(&m.root());
        let names: Vec<&str> = f.markers.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(names, ["Docker", "Kubernetes"]);
        assert!(matches!(f.ipc, Ipc::Unknown(ref why) if why.contains("own init")));
        let c = check(&m.root(), Path::new("/dev/shm"));
        assert_eq!(
            c.value,
            "in a container (Docker, Kubernetes); IPC namespace: unknown"
        );
    }

    #[test]
    fn a_different_namespace_is_private_and_unreadable_links_are_unknown() {
        let m = FakeMachine::new()
            .file("/run/.containerenv", "")
            .symlink("/proc/self/ns/ipc", "ipc:[4026532201]")
            .symlink("/proc/1/ns/ipc", "ipc:[4026531839]");
        assert_eq!(ContainerFacts::probe(&m.root()).ipc, Ipc::Private);
        let bare = FakeMachine::new();
        let f = ContainerFacts::probe(&bare.root());
        assert!(f.markers.is_empty());
        assert!(
            matches!(f.ipc, Ipc::Unknown(ref why) if why.starts_with("cannot read /proc/self/ns/ipc"))
        );
    }
}
