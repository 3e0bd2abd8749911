//! The bootstrap: `ncclGetUniqueId` starts a root thread listening on an abstract
//! Unix socket whose name the id carries (NCCL's root listens on a TCP socket the
//! same way). Each rank connects and says (rank, nranks, pid); when all have, the
//! root sends every rank the same shared-memory file (a memfd, by `SCM_RIGHTS`),
//! through which the ranks then exchange their data. Nothing is left behind: the
//! socket name goes with the root's socket, the memory with the last mapping.
//!
//! Abstract socket names belong to a network namespace. For ranks in different
//! namespaces (the two-"node" tests), `NCCL_BENCH_SIM_BOOTSTRAP_DIR` puts the root's
//! socket in that directory instead, a file that every namespace sharing the file
//! system reaches; the root removes it once every rank has joined.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of `ncclUniqueId`.
pub const ID_BYTES: usize = 128;
const MAGIC: &[u8; 6] = b"NBSIM1";

/// Makes a unique id and starts its root; the id names the root's socket.
pub fn unique_id(
    bytes_for: impl Fn(u32) -> usize + Send + 'static,
) -> std::io::Result<[u8; ID_BYTES]> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "nccl-bench-sim-{}-{}-{:x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        crate::realtime_ns()
    );
    let (listener, file) = match crate::env("NCCL_BENCH_SIM_BOOTSTRAP_DIR") {
        Some(dir) => {
            let path = std::path::Path::new(&dir).join(&name);
            let name = path.to_string_lossy().into_owned();
            (UnixListener::bind(&path)?, Some((path, name)))
        }
        None => (
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?,
            None,
        ),
    };
    let (path, name) = match file {
        Some((path, full)) => (Some(path), full),
        None => (None, name),
    };
    if name.len() > ID_BYTES - MAGIC.len() - 1 {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    std::thread::Builder::new()
        .name("sim-bootstrap".into())
        .spawn(move || {
            root(listener, bytes_for);
            if let Some(path) = path {
                let _ = std::fs::remove_file(path);
            }
        })?;
    let mut id = [0u8; ID_BYTES];
    id[..MAGIC.len()].copy_from_slice(MAGIC);
    id[MAGIC.len()..MAGIC.len() + name.len()].copy_from_slice(name.as_bytes());
    Ok(id)
}

/// The socket name an id carries; `None` for an id this stand-in did not make.
pub fn name_of(id: &[u8; ID_BYTES]) -> Option<String> {
    let rest = id.strip_prefix(MAGIC)?;
    let end = rest.iter().position(|&b| b == 0)?;
    String::from_utf8(rest[..end].to_vec()).ok()
}

/// A 64-bit digest of the id: NCCL's `commId` in its log lines.
pub fn comm_hash(id: &[u8; ID_BYTES]) -> u64 {
    id.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A rank's hello: (rank, nranks, pid).
fn read_hello(s: &mut UnixStream) -> std::io::Result<(u32, u32, i32)> {
    let mut b = [0u8; 12];
    s.read_exact(&mut b)?;
    let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    Ok((word(0), word(4), word(8) as i32))
}

fn root(listener: UnixListener, bytes_for: impl Fn(u32) -> usize) {
    let mut peers: Vec<(u32, UnixStream)> = Vec::new();
    let mut nranks = 0;
    while nranks == 0 || (peers.len() as u32) < nranks {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let Ok((rank, n, _pid)) = read_hello(&mut s) else {
            continue;
        };
        if nranks == 0 {
            nranks = n;
        }
        if n != nranks || rank >= n || peers.iter().any(|(r, _)| *r == rank) {
            // Status 1: this rank does not fit the communicator the others formed.
            let _ = s.write_all(&[1]);
            continue;
        }
        peers.push((rank, s));
    }
    drop(listener);
    let fd = match memfd(bytes_for(nranks)) {
        Ok(fd) => fd,
        Err(_) => {
            for (_, mut s) in peers {
                let _ = s.write_all(&[2]);
            }
            return;
        }
    };
    for (_, s) in &peers {
        let _ = send_fd(s, fd.as_raw_fd());
    }
}

fn memfd(len: usize) -> std::io::Result<OwnedFd> {
    // SAFETY: a name and flags; the descriptor is owned by the result.
    let fd = unsafe { libc::memfd_create(c"nccl-bench-sim".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just created and is owned here alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a valid descriptor and a length.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// A message of one status byte with room for one descriptor: the buffers and the
/// header pointing at them (which must not outlive them).
struct FdMessage {
    status: [u8; 1],
    iov: libc::iovec,
    control: Vec<u8>,
    msg: libc::msghdr,
}

impl FdMessage {
    fn new(status: u8) -> Box<FdMessage> {
        // SAFETY: CMSG_SPACE is a size computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        let mut m = Box::new(FdMessage {
            status: [status],
            iov: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 1,
            },
            control: vec![0u8; space],
            // SAFETY: msghdr is plain data; zero is its empty value.
            msg: unsafe { std::mem::zeroed() },
        });
        // The box does not move: the pointers into it stay valid.
        m.iov.iov_base = m.status.as_mut_ptr().cast();
        m.msg.msg_iov = &mut m.iov;
        m.msg.msg_iovlen = 1;
        m.msg.msg_control = m.control.as_mut_ptr().cast();
        m.msg.msg_controllen = space as _;
        m
    }
}

/// Sends status 0 and `fd` over `s`.
fn send_fd(s: &UnixStream, fd: RawFd) -> std::io::Result<()> {
    let m = FdMessage::new(0);
    // SAFETY: the control buffer has room for one SCM_RIGHTS header and descriptor
    // (cmsg(3)); sendmsg reads the message only during the call.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&m.msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(s.as_raw_fd(), &m.msg, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Why joining failed.
#[derive(Debug)]
pub enum JoinError {
    /// The id was not made by this stand-in.
    BadId,
    /// The root cannot be reached (its process is gone).
    Connect(std::io::Error),
    /// The root refused this rank: `nranks` or `rank` do not fit the others.
    Mismatch,
    Io(std::io::Error),
}

/// Joins the communicator `id` names; returns the shared memory file.
pub fn join(id: &[u8; ID_BYTES], rank: u32, nranks: u32) -> Result<OwnedFd, JoinError> {
    let name = name_of(id).ok_or(JoinError::BadId)?;
    // A path: the root's socket is a file (NCCL_BENCH_SIM_BOOTSTRAP_DIR).
    let mut s = if name.starts_with('/') {
        UnixStream::connect(&name).map_err(JoinError::Connect)?
    } else {
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).map_err(JoinError::Io)?;
        UnixStream::connect_addr(&addr).map_err(JoinError::Connect)?
    };
    let mut hello = Vec::with_capacity(12);
    hello.extend_from_slice(&rank.to_le_bytes());
    hello.extend_from_slice(&nranks.to_le_bytes());
    hello.extend_from_slice(&(std::process::id()).to_le_bytes());
    s.write_all(&hello).map_err(JoinError::Io)?;
    recv_fd(&s)
}

fn recv_fd(s: &UnixStream) -> Result<OwnedFd, JoinError> {
    let mut m = FdMessage::new(0xff);
    // SAFETY: recvmsg fills the message's buffers; a received descriptor is taken
    // over exactly once.
    unsafe {
        let n = libc::recvmsg(s.as_raw_fd(), &mut m.msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(JoinError::Io(std::io::Error::last_os_error()));
        }
        if n == 0 {
            return Err(JoinError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        if m.status[0] != 0 {
            return Err(JoinError::Mismatch);
        }
        let cmsg = libc::CMSG_FIRSTHDR(&m.msg);
        if cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(JoinError::Io(std::io::ErrorKind::InvalidData.into()));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}
