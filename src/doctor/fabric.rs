//! The NVLink fabric of an NVSwitch machine (HGX H100/H200/B200, GB200 racks): each
//! GPU registers with the fabric that Fabric Manager sets up, and NVML says how far
//! that went ([`nvlink::fabric`]: not started, in progress, completed, and a completed
//! registration's status). A GPU that has not registered cannot use NVLink SHARP
//! (NVLS): NCCL's multicast bind fails with CUDA error 401, and on HGX machines CUDA
//! may not start at all (error 802, system not yet initialized). GPUs without such a
//! fabric, or a driver without the call, are no finding.

use super::nvlink::{self, Fabric, FABRIC_COMPLETED, FABRIC_IN_PROGRESS, FABRIC_NOT_STARTED};
use crate::machine::Root;
use crate::model::{Check, Status};
use crate::units::plural;

pub const ID: &str = "fabric";
pub const TITLE: &str = "NVLink fabric";

/// What to do about a GPU that did not register.
const FIX: &str = "Check Fabric Manager: `systemctl status nvidia-fabricmanager` and its log \
     (/var/log/fabricmanager.log); `nvidia-smi -q` shows each GPU's Fabric State and Status. \
     Restart Fabric Manager (or reboot the node) until every GPU is Completed / Success; \
     until then NCCL_NVLS_ENABLE=0 keeps NCCL off NVLS (the `nvls-off` config measures what \
     that costs)";

pub fn check(root: &Root) -> Check {
    if !root.is_real() {
        return Check::new(ID, TITLE, Status::Ok, "not asked (a fake root)");
    }
    judge(&nvlink::fabric())
}

fn state_words(f: &Fabric) -> String {
    match f.state {
        FABRIC_NOT_STARTED => "not started".to_string(),
        FABRIC_IN_PROGRESS => "in progress".to_string(),
        FABRIC_COMPLETED if f.status == 0 => "completed".to_string(),
        FABRIC_COMPLETED => format!("completed with NVML error {}", f.status),
        other => format!("state {other}"),
    }
}

/// The check from each GPU's registration (in NVML's order, `None` where NVML has
/// none for it), or why NVML could not be asked.
pub fn judge(read: &Result<Vec<Option<Fabric>>, String>) -> Check {
    let gpus = match read {
        Err(why) => {
            return Check::new(ID, TITLE, Status::Ok, format!("not read: {why}"));
        }
        Ok(gpus) => gpus,
    };
    let on_fabric: Vec<(usize, &Fabric)> = gpus
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.as_ref().map(|f| (i, f)))
        .collect();
    if on_fabric.is_empty() {
        return Check::new(
            ID,
            TITLE,
            Status::Ok,
            format!(
                "no NVLink fabric to register with ({}; NVML: not supported)",
                plural(gpus.len(), "GPU", "GPUs")
            ),
        );
    }
    let details: Vec<String> = on_fabric
        .iter()
        .map(|(i, f)| format!("GPU {i}: {}, clique {}", state_words(f), f.clique))
        .collect();
    let unregistered: Vec<String> = on_fabric
        .iter()
        .filter(|(_, f)| f.state != FABRIC_COMPLETED || f.status != 0)
        .map(|(i, f)| format!("GPU {i} ({})", state_words(f)))
        .collect();
    if unregistered.is_empty() {
        let mut cliques: Vec<u32> = on_fabric.iter().map(|(_, f)| f.clique).collect();
        cliques.dedup();
        return Check::new(
            ID,
            TITLE,
            Status::Ok,
            format!(
                "every GPU registered ({} of {}, {})",
                on_fabric.len(),
                gpus.len(),
                plural(cliques.len(), "clique", "cliques")
            ),
        )
        .with_details(details);
    }
    Check::new(
        ID,
        TITLE,
        Status::Fail,
        format!(
            "{} of {} not registered with the NVLink fabric: {}; NVLS cannot bind there \
             (CUDA error 401) and CUDA may not start (error 802)",
            unregistered.len(),
            plural(on_fabric.len(), "GPU", "GPUs"),
            unregistered.join(", ")
        ),
    )
    .with_fix(FIX)
    .with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fabric(state: u8, status: i32) -> Option<Fabric> {
        Some(Fabric {
            state,
            status,
            clique: 0,
        })
    }

    #[test]
    fn every_gpu_registered_is_ok_and_one_in_progress_fails_by_name() {
        let done = fabric(FABRIC_COMPLETED, 0);
        let ok = judge(&Ok(vec![done; 8]));
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert!(
            ok.value.contains("every GPU registered (8 of 8, 1 clique)"),
            "{}",
            ok.value
        );
        let mut gpus = vec![done; 8];
        gpus[2] = fabric(FABRIC_IN_PROGRESS, 0);
        gpus[5] = fabric(FABRIC_COMPLETED, 999);
        let bad = judge(&Ok(gpus));
        assert_eq!(bad.status, Status::Fail);
        assert!(
            bad.value.starts_with(
                "2 of 8 GPUs not registered with the NVLink fabric: GPU 2 (in progress), GPU 5 (completed with NVML error 999)"
            ),
            "{}",
            bad.value
        );
        assert!(bad.fix.as_deref().unwrap().contains("nvidia-fabricmanager"));
        assert!(bad.fix.as_deref().unwrap().contains("NCCL_NVLS_ENABLE=0"));
    }

    #[test]
    fn no_fabric_or_no_nvml_is_no_finding() {
        let none = judge(&Ok(vec![None; 4]));
        assert_eq!(none.status, Status::Ok);
        assert!(none.value.starts_with("no NVLink fabric"), "{}", none.value);
        let missing = judge(&Err("libnvidia-ml.so.1: not found".into()));
        assert_eq!(missing.status, Status::Ok);
        assert!(
            missing.value.starts_with("not read: libnvidia-ml"),
            "{}",
            missing.value
        );
    }
}
