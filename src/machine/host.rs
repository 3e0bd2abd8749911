//! Facts about this machine for the manifest: host name, kernel, CPU, memory, and
//! the size of a file system (the shm directory). Read from /proc and libc; a fact
//! that cannot be read is left empty, never guessed.

use std::path::Path;

use crate::model::HostInfo;

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return "unknown-host".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Total and free bytes of the file system holding `path`.
pub fn fs_space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct for a valid C path.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        let frsize = st.f_frsize as u64;
        Some((st.f_blocks as u64 * frsize, st.f_bavail as u64 * frsize))
    }
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn cpu_model() -> String {
    read_trimmed("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

fn memory_bytes() -> u64 {
    meminfo_kib("MemTotal:").map(|kb| kb * 1024).unwrap_or(0)
}

/// `MemAvailable` from /proc/meminfo, in bytes.
pub fn memory_available() -> Option<u64> {
    meminfo_kib("MemAvailable:").map(|kb| kb * 1024)
}

fn meminfo_kib(key: &str) -> Option<u64> {
    read_trimmed("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
}

/// Everything the manifest records about the host.
pub fn host_info(shm_dir: &Path, gpus: Vec<String>) -> HostInfo {
    let space = fs_space(shm_dir);
    HostInfo {
        hostname: hostname(),
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        cpu_model: cpu_model(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        memory_bytes: memory_bytes(),
        shm_dir: shm_dir.display().to_string(),
        shm_total_bytes: space.map(|s| s.0),
        shm_free_bytes: space.map(|s| s.1),
        gpus,
    }
}
