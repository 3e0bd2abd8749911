//! NCCL's debug log: `NCCL_DEBUG` (VERSION, WARN, INFO, TRACE), `NCCL_DEBUG_SUBSYS`
//! (names, `ALL`, a leading `^` to exclude), `NCCL_DEBUG_FILE` with `%h`, `%p` and
//! `%%` expanded (stdout when the file cannot be opened, as NCCL does), and lines in
//! NCCL's format: `host:pid:tid [dev] NCCL INFO ...`, `... file.cc:line NCCL WARN ...`.
//! The last WARN is what `ncclGetLastError` returns.

use std::ffi::CString;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use crate::env;

pub const INIT: u64 = 1;
pub const COLL: u64 = 2;
pub const P2P: u64 = 4;
pub const SHM: u64 = 8;
pub const NET: u64 = 16;
pub const TUNING: u64 = 64;
pub const ENV: u64 = 128;
pub const NVLS: u64 = 2048;
pub const REG: u64 = 8192;

const SUBSYS: [(&str, u64); 10] = [
    ("INIT", INIT),
    ("COLL", COLL),
    ("P2P", 4),
    ("SHM", SHM),
    ("NET", NET),
    ("GRAPH", 32),
    ("TUNING", TUNING),
    ("ENV", ENV),
    ("NVLS", NVLS),
    ("REG", REG),
];

struct Log {
    level: u8,
    mask: u64,
    out: Mutex<Box<dyn Write + Send>>,
    host: String,
    pid: u32,
}

static LOG: OnceLock<Log> = OnceLock::new();
static LAST_ERROR: Mutex<Option<CString>> = Mutex::new(None);

/// This host's name as NCCL logs it: up to the first dot.
pub fn host_name() -> String {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(hostname).clone()
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
    // NCCL logs the host name up to the first dot.
    match rc {
        0 => name.split('.').next().unwrap_or_default().to_string(),
        _ => "localhost".to_string(),
    }
}

/// NCCL's expansion of `NCCL_DEBUG_FILE`.
pub fn expand(template: &str, host: &str, pid: u32) -> String {
    let mut out = String::new();
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('h') => out.push_str(host),
            Some('p') => out.push_str(&pid.to_string()),
            other => {
                out.push('%');
                out.extend(other);
            }
        }
    }
    out
}

fn log() -> &'static Log {
    LOG.get_or_init(|| {
        let level = match env("NCCL_DEBUG").map(|v| v.to_ascii_uppercase()).as_deref() {
            Some("VERSION") => 1,
            Some("WARN") => 2,
            Some("INFO") => 3,
            Some("TRACE") => 4,
            _ => 0,
        };
        let version = crate::nccl::version();
        let default_mask = if version >= (2, 17, 0) {
            INIT | ENV
        } else {
            INIT
        };
        let mask = env("NCCL_DEBUG_SUBSYS").map_or(default_mask, |spec| {
            let (invert, list) = match spec.strip_prefix('^') {
                Some(rest) => (true, rest.to_string()),
                None => (false, spec),
            };
            let mut m = 0;
            for name in list.split(',').map(|n| n.trim().to_ascii_uppercase()) {
                if name == "ALL" {
                    m = u64::MAX;
                } else if let Some((_, bit)) = SUBSYS.iter().find(|(n, _)| *n == name) {
                    m |= bit;
                }
            }
            if invert {
                !m
            } else {
                m
            }
        });
        let host = hostname();
        let pid = std::process::id();
        let out: Box<dyn Write + Send> = match env("NCCL_DEBUG_FILE").filter(|_| level > 0) {
            Some(t) => match std::fs::File::create(expand(&t, &host, pid)) {
                Ok(f) => Box::new(f),
                Err(_) => Box::new(std::io::stdout()),
            },
            None => Box::new(std::io::stdout()),
        };
        Log {
            level,
            mask,
            out: Mutex::new(out),
            host,
            pid,
        }
    })
}

fn tid() -> i64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

fn write(line: &str) {
    let l = log();
    let mut out = l.out.lock().unwrap();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

/// An INFO line of `subsys` for device `dev`.
pub fn info(subsys: u64, dev: usize, msg: &str) {
    let l = log();
    if l.level >= 3 && l.mask & subsys != 0 {
        write(&format!(
            "{}:{}:{} [{dev}] NCCL INFO {msg}\n",
            l.host,
            l.pid,
            tid()
        ));
    }
}

/// The version banner, logged from `NCCL_DEBUG=VERSION` up.
pub fn version(dev: usize, msg: &str) {
    let l = log();
    if l.level >= 1 {
        let line = if l.level >= 3 {
            format!("{}:{}:{} [{dev}] NCCL INFO {msg}\n", l.host, l.pid, tid())
        } else {
            format!("{msg}\n")
        };
        write(&line);
    }
}

/// A WARN line from `origin` (`file.cc:line`); it becomes NCCL's last error.
pub fn warn(dev: usize, origin: &str, msg: &str) {
    // The previous text is leaked, not freed: a caller may still hold its pointer.
    if let Some(old) = std::mem::replace(&mut *LAST_ERROR.lock().unwrap(), CString::new(msg).ok()) {
        std::mem::forget(old);
    }
    let l = log();
    if l.level >= 2 {
        write(&format!(
            "\n{}:{}:{} [{dev}] {origin} NCCL WARN {msg}\n",
            l.host,
            l.pid,
            tid()
        ));
    }
}

/// The text `ncclGetLastError` returns: valid until the next WARN.
pub fn last_error() -> *const std::ffi::c_char {
    static EMPTY: &[u8] = b"\0";
    match LAST_ERROR.lock().unwrap().as_ref() {
        Some(s) => s.as_ptr(),
        None => EMPTY.as_ptr().cast(),
    }
}
