//! How the ranks of a `run` find rank 0: a TCP address every node can reach
//! (`MASTER_ADDR:MASTER_PORT`, `--rendezvous HOST:PORT`, or the first node of a
//! Slurm job), or a file on a shared file system that rank 0 writes its address to
//! (`--rendezvous file:PATH`). Rank 0 accepts one connection per rank until all
//! have arrived or the deadline passes; the others retry until the same deadline.
//! Every wait is bounded: nothing here can hang a job.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::wire::{self, Down, Hello};

/// Rank 0's port when neither the launcher nor the user names one.
pub const DEFAULT_PORT: u16 = 29517;

/// Where rank 0 listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendezvous {
    Tcp { host: String, port: u16 },
    File(PathBuf),
}

impl std::fmt::Display for Rendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rendezvous::Tcp { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            Rendezvous::Tcp { host, port } => write!(f, "{host}:{port}"),
            Rendezvous::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

impl Rendezvous {
    /// Parses `--rendezvous`: `HOST:PORT`, `[V6]:PORT` or `file:PATH`.
    pub fn parse(text: &str) -> Result<Rendezvous> {
        let text = text.trim();
        if let Some(path) = text.strip_prefix("file:") {
            if path.is_empty() {
                bail!("--rendezvous file: needs a path on a file system every node sees");
            }
            return Ok(Rendezvous::File(PathBuf::from(path)));
        }
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| anyhow!("--rendezvous '{text}': expected HOST:PORT or file:PATH"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            bail!("--rendezvous '{text}': the host is empty");
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| anyhow!("--rendezvous '{text}': '{port}' is not a port number"))?;
        Ok(Rendezvous::Tcp {
            host: host.to_string(),
            port,
        })
    }
}

/// Rank 0's listening socket.
pub struct Listener {
    listener: TcpListener,
    /// What to tell the user the others connect to.
    pub address: String,
}

impl Listener {
    /// Listens on every interface at the rendezvous port (an ephemeral one for a file
    /// rendezvous, which then names it in the file).
    pub fn open(rendezvous: &Rendezvous, job: Option<&str>) -> Result<Listener> {
        let port = match rendezvous {
            Rendezvous::Tcp { port, .. } => *port,
            Rendezvous::File(_) => 0,
        };
        let listener = TcpListener::bind(("0.0.0.0", port)).with_context(|| {
            format!("rank 0 cannot listen on port {port} (another job on this node? pick another MASTER_PORT or --rendezvous HOST:PORT)")
        })?;
        listener.set_nonblocking(true)?;
        let address = match rendezvous {
            Rendezvous::Tcp { .. } => rendezvous.to_string(),
            Rendezvous::File(path) => {
                let port = listener.local_addr()?.port();
                let host = crate::machine::host::hostname();
                write_file(path, &host, port, job)?;
                format!("{host}:{port} (written to {})", path.display())
            }
        };
        Ok(Listener { listener, address })
    }

    /// The next connection, if one arrives before `deadline`.
    pub fn accept(&self, deadline: Instant) -> Option<TcpStream> {
        while Instant::now() < deadline {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    return Some(stream);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        None
    }
}

/// Writes `HOST PORT JOB` to the rendezvous file, atomically.
fn write_file(path: &Path, host: &str, port: u16, job: Option<&str>) -> Result<()> {
    let text = format!("{host} {port} {}\n", job.unwrap_or("-"));
    crate::export::atomic::write(path, text.as_bytes())
        .with_context(|| format!("cannot write the rendezvous file {}", path.display()))
}

/// Reads the rendezvous file; `None` while it is absent, incomplete, or from another job.
fn read_file(path: &Path, job: Option<&str>) -> Option<(String, u16)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut parts = text.split_whitespace();
    let host = parts.next()?.to_string();
    let port = parts.next()?.parse().ok()?;
    let theirs = parts.next()?;
    match job {
        Some(mine) if theirs != mine => None,
        _ => Some((host, port)),
    }
}

/// A rank's connection to rank 0 after its hello was accepted.
pub struct Joined {
    pub reader: BufReader<TcpStream>,
    pub writer: TcpStream,
}

/// Connects to rank 0, retrying until `deadline`, and introduces this rank.
pub fn join(rendezvous: &Rendezvous, hello: &Hello, deadline: Instant) -> Result<Joined> {
    let mut delay = Duration::from_millis(50);
    loop {
        let last_error = match try_connect(rendezvous, hello.job.as_deref(), deadline) {
            Ok(stream) => return introduce(stream, hello, deadline),
            Err(e) => e,
        };
        if Instant::now() + delay >= deadline {
            bail!(
                "rank {} could not reach rank 0 at {rendezvous} before the deadline (last attempt: {last_error}); check that rank 0 started, and MASTER_ADDR/MASTER_PORT or --rendezvous",
                hello.rank
            );
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

fn try_connect(
    rendezvous: &Rendezvous,
    job: Option<&str>,
    deadline: Instant,
) -> std::result::Result<TcpStream, String> {
    let (host, port) = match rendezvous {
        Rendezvous::Tcp { host, port } => (host.clone(), *port),
        Rendezvous::File(path) => read_file(path, job)
            .ok_or_else(|| format!("{} has no address of this job yet", path.display()))?,
    };
    let addrs: Vec<SocketAddr> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last = format!("{host} has no address");
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = left.min(Duration::from_secs(5));
        if wait.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&addr, wait) {
            Ok(s) => return Ok(s),
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(last)
}

fn introduce(stream: TcpStream, hello: &Hello, deadline: Instant) -> Result<Joined> {
    let _ = stream.set_nodelay(true);
    keepalive(&stream);
    let mut writer = stream.try_clone()?;
    wire::send(&mut writer, hello).context("cannot send this rank's hello to rank 0")?;
    let left = deadline.saturating_duration_since(Instant::now());
    stream.set_read_timeout(Some(left.max(Duration::from_secs(1))))?;
    let mut reader = BufReader::new(stream);
    let answer = wire::receive::<Down>(&mut reader, &mut String::new());
    // Later reads wait as long as rank 0 runs the sweep.
    reader.get_ref().set_read_timeout(None)?;
    match answer {
        Ok(Some(Down::Welcome)) => Ok(Joined { reader, writer }),
        Ok(Some(Down::Refused { reason })) => bail!("rank 0 refused rank {}: {reason}", hello.rank),
        Ok(Some(Down::Done { message, .. })) => bail!(
            "rank 0 gave up before the run started: {}",
            message.unwrap_or_default()
        ),
        Ok(Some(other)) => bail!("unexpected answer from rank 0: {other:?}"),
        Ok(None) => bail!("rank 0 closed the connection without answering (is it an nccl-bench run of the same version?)"),
        Err(e) => bail!("no answer from rank 0 before the deadline: {e}"),
    }
}

/// Reads the hello of a fresh connection (bounded by `deadline`).
pub fn read_hello(stream: &TcpStream, deadline: Instant) -> Result<(Hello, BufReader<TcpStream>)> {
    let left = deadline.saturating_duration_since(Instant::now());
    stream.set_read_timeout(Some(
        left.clamp(Duration::from_millis(100), Duration::from_secs(10)),
    ))?;
    // A hello is a few hundred bytes: a stranger streaming data is cut off.
    let mut limited = BufReader::new(std::io::Read::take(stream.try_clone()?, 64 * 1024));
    let hello: Hello = wire::receive(&mut limited, &mut String::new())?
        .ok_or_else(|| anyhow!("the connection closed before its hello"))?;
    let reader = BufReader::new(stream.try_clone()?);
    if hello.magic != wire::MAGIC {
        bail!(
            "it speaks '{}', not '{}' (a different nccl-bench version?)",
            hello.magic,
            wire::MAGIC
        );
    }
    stream.set_read_timeout(None)?;
    Ok((hello, reader))
}

/// Answers a hello.
pub fn answer(stream: &mut TcpStream, answer: &Down) -> Result<()> {
    wire::send(stream, answer)?;
    stream.flush()?;
    Ok(())
}

/// Lets the kernel notice a node that vanished (no FIN) within about a minute, idle
/// (keepalive) or with data unacknowledged (TCP_USER_TIMEOUT), so neither side waits
/// for a dead peer for the kernel's default quarter of an hour.
pub fn keepalive(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let fd = stream.as_raw_fd();
    let set = |level, name, value: libc::c_int| {
        // SAFETY: setsockopt on a socket we own, with a pointer to a live c_int.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                &value as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 30);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 10);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3);
    set(libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, 60_000);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendezvous_addresses_parse_or_say_why_not() {
        assert_eq!(
            Rendezvous::parse("node01:29500").unwrap(),
            Rendezvous::Tcp {
                host: "node01".into(),
                port: 29500
            }
        );
        assert_eq!(
            Rendezvous::parse("[fe80::1]:7").unwrap().to_string(),
            "[fe80::1]:7"
        );
        assert_eq!(
            Rendezvous::parse("file:/shared/rv").unwrap(),
            Rendezvous::File("/shared/rv".into())
        );
        for (bad, says) in [
            ("node01", "expected HOST:PORT"),
            ("node01:http", "'http' is not a port number"),
            ("node01:0", "'0' is not a port number"),
            (":80", "the host is empty"),
            ("file:", "needs a path"),
        ] {
            let e = Rendezvous::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_file_of_another_job_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rv");
        assert_eq!(read_file(&path, None), None);
        write_file(&path, "n1", 4000, Some("77.0")).unwrap();
        assert_eq!(read_file(&path, Some("77.0")), Some(("n1".into(), 4000)));
        assert_eq!(read_file(&path, Some("78.0")), None);
        write_file(&path, "n2", 4001, None).unwrap();
        assert_eq!(read_file(&path, None), Some(("n2".into(), 4001)));
    }
}
