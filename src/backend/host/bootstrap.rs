//! Bootstrap of a host communicator, shaped like NCCL's: rank 0 listens on a TCP
//! socket and its address is the unique id; every other rank connects to it,
//! announces its rank and its own data address, and gets back the table of all
//! ranks' addresses. The same star of connections then provides barriers (used while
//! shared-memory segments are created and mapped).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

const ID_PREFIX: &str = "nccl-bench-host";

/// What rank 0 hands to the others (through the orchestrator or a launcher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueId {
    pub addr: SocketAddr,
    pub magic: u64,
}

impl UniqueId {
    pub fn encode(&self) -> String {
        format!("{ID_PREFIX}/{}/{:016x}", self.addr, self.magic)
    }

    pub fn decode(text: &str) -> Result<UniqueId> {
        let bad = || anyhow!("malformed host backend unique id '{text}'");
        let mut parts = text.trim().split('/');
        if parts.next() != Some(ID_PREFIX) {
            return Err(bad());
        }
        let addr = parts.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        let magic = u64::from_str_radix(parts.next().ok_or_else(bad)?, 16).map_err(|_| bad())?;
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(UniqueId { addr, magic })
    }
}

/// Rank 0's listening socket, created with the unique id.
pub struct BootstrapRoot {
    listener: TcpListener,
    pub id: UniqueId,
}

impl BootstrapRoot {
    pub fn new(bind: IpAddr) -> Result<BootstrapRoot> {
        let listener = TcpListener::bind((bind, 0))
            .with_context(|| format!("host backend: cannot listen for the bootstrap on {bind}"))?;
        let addr = listener.local_addr()?;
        Ok(BootstrapRoot {
            listener,
            id: UniqueId {
                addr,
                magic: random_u64(),
            },
        })
    }
}

/// A random number for the id, so that a stray connection from another case is refused.
pub fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok()
    {
        return u64::from_le_bytes(bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ ((std::process::id() as u64) << 32)
}

enum Links {
    Alone,
    /// Rank 0: one stream per other rank (index = rank; entry 0 unused).
    Root(Vec<Option<TcpStream>>),
    Leaf(TcpStream),
}

/// An initialized bootstrap: every rank's data address and a barrier.
pub struct Bootstrap {
    links: Links,
    pub addresses: Vec<SocketAddr>,
    timeout: Duration,
}

impl Bootstrap {
    /// Joins the bootstrap. Rank 0 must pass the root it created the id with.
    pub fn init(
        id: &UniqueId,
        root: Option<BootstrapRoot>,
        rank: u32,
        nranks: u32,
        my_address: SocketAddr,
        timeout: Duration,
    ) -> Result<Bootstrap> {
        let deadline = Instant::now() + timeout;
        if nranks == 1 {
            return Ok(Bootstrap {
                links: Links::Alone,
                addresses: vec![my_address],
                timeout,
            });
        }
        if rank == 0 {
            let root = root.ok_or_else(|| anyhow!("rank 0 needs the bootstrap root it created"))?;
            Self::init_root(root, nranks, my_address, deadline, timeout)
        } else {
            Self::init_leaf(id, rank, nranks, my_address, deadline, timeout)
        }
    }

    fn init_root(
        root: BootstrapRoot,
        nranks: u32,
        my_address: SocketAddr,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Bootstrap> {
        let mut streams: Vec<Option<TcpStream>> = (0..nranks).map(|_| None).collect();
        let mut addresses: Vec<Option<SocketAddr>> = vec![None; nranks as usize];
        addresses[0] = Some(my_address);
        root.listener.set_nonblocking(true)?;
        let mut missing = nranks - 1;
        while missing > 0 {
            match root.listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false)?;
                    stream.set_read_timeout(Some(remaining(deadline)?))?;
                    let (magic, rank, their_n, addr) = read_hello(&mut stream)?;
                    if magic != root.id.magic {
                        continue; // not one of ours
                    }
                    if their_n != nranks || rank == 0 || rank >= nranks {
                        bail!("host backend bootstrap: rank {rank} of {their_n} joined a communicator of {nranks} ranks");
                    }
                    if streams[rank as usize].is_some() {
                        bail!("host backend bootstrap: rank {rank} joined twice");
                    }
                    addresses[rank as usize] = Some(addr);
                    streams[rank as usize] = Some(stream);
                    missing -= 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let absent: Vec<String> = (1..nranks)
                            .filter(|r| streams[*r as usize].is_none())
                            .map(|r| r.to_string())
                            .collect();
                        bail!(
                            "host backend bootstrap: ranks {} did not connect within {timeout:?}",
                            absent.join(", ")
                        );
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e).context("host backend bootstrap: accept failed"),
            }
        }
        let addresses: Vec<SocketAddr> = addresses.into_iter().flatten().collect();
        let mut table = Vec::new();
        for a in &addresses {
            put_str(&mut table, &a.to_string());
        }
        for s in streams.iter_mut().flatten() {
            s.write_all(&table)?;
        }
        Ok(Bootstrap {
            links: Links::Root(streams),
            addresses,
            timeout,
        })
    }

    fn init_leaf(
        id: &UniqueId,
        rank: u32,
        nranks: u32,
        my_address: SocketAddr,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Bootstrap> {
        let mut stream = connect_with_retry(id.addr, deadline).with_context(|| {
            format!(
                "host backend bootstrap: rank {rank} cannot reach rank 0 at {}",
                id.addr
            )
        })?;
        stream.set_read_timeout(Some(remaining(deadline)?))?;
        let mut hello = Vec::new();
        hello.extend_from_slice(&id.magic.to_le_bytes());
        hello.extend_from_slice(&rank.to_le_bytes());
        hello.extend_from_slice(&nranks.to_le_bytes());
        put_str(&mut hello, &my_address.to_string());
        stream.write_all(&hello)?;
        let mut addresses = Vec::with_capacity(nranks as usize);
        for _ in 0..nranks {
            let text = get_str(&mut stream)
                .context("host backend bootstrap: rank 0 closed the connection during set-up")?;
            addresses.push(
                text.parse()
                    .map_err(|_| anyhow!("bad address '{text}' from rank 0"))?,
            );
        }
        Ok(Bootstrap {
            links: Links::Leaf(stream),
            addresses,
            timeout,
        })
    }

    /// Returns once every rank has called it.
    pub fn barrier(&mut self) -> Result<()> {
        let timeout = self.timeout;
        let lost = || anyhow!("host backend bootstrap: a rank left during a barrier");
        match &mut self.links {
            Links::Alone => Ok(()),
            Links::Leaf(s) => {
                s.set_read_timeout(Some(timeout))?;
                s.write_all(b"B")?;
                let mut b = [0u8; 1];
                s.read_exact(&mut b).map_err(|_| lost())
            }
            Links::Root(streams) => {
                let mut b = [0u8; 1];
                for s in streams.iter_mut().flatten() {
                    s.set_read_timeout(Some(timeout))?;
                    s.read_exact(&mut b).map_err(|_| lost())?;
                }
                for s in streams.iter_mut().flatten() {
                    s.write_all(b"B")?;
                }
                Ok(())
            }
        }
    }
}

fn remaining(deadline: Instant) -> Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        bail!("host backend bootstrap: timed out");
    }
    Ok(left)
}

/// Connects, retrying while the listener is not up yet.
pub fn connect_with_retry(addr: SocketAddr, deadline: Instant) -> Result<TcpStream> {
    let mut delay = Duration::from_millis(1);
    loop {
        let left = remaining(deadline)?;
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() + delay >= deadline => {
                return Err(e).context(format!("connect to {addr}"))
            }
            Err(_) => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(100));
            }
        }
    }
}

fn read_hello(s: &mut TcpStream) -> Result<(u64, u32, u32, SocketAddr)> {
    let mut head = [0u8; 16];
    s.read_exact(&mut head)?;
    let magic = u64::from_le_bytes(head[0..8].try_into()?);
    let rank = u32::from_le_bytes(head[8..12].try_into()?);
    let nranks = u32::from_le_bytes(head[12..16].try_into()?);
    let text = get_str(s)?;
    let addr = text
        .parse()
        .map_err(|_| anyhow!("bad address '{text}' in hello"))?;
    Ok((magic, rank, nranks, addr))
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as u16).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

fn get_str(s: &mut TcpStream) -> Result<String> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len)?;
    let mut bytes = vec![0u8; u16::from_le_bytes(len) as usize];
    s.read_exact(&mut bytes)?;
    Ok(String::from_utf8(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_ids_round_trip_and_reject_garbage() {
        let id = UniqueId {
            addr: "127.0.0.1:4242".parse().unwrap(),
            magic: 0xdead_beef,
        };
        assert_eq!(UniqueId::decode(&id.encode()).unwrap(), id);
        for bad in [
            "",
            "x/127.0.0.1:1/00",
            "nccl-bench-host/nope/00",
            "nccl-bench-host/127.0.0.1:1/zz",
        ] {
            assert!(UniqueId::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn four_ranks_exchange_addresses_and_pass_barriers() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;
        let root = BootstrapRoot::new("127.0.0.1".parse().unwrap()).unwrap();
        let id = root.id.clone();
        let addr = |r: u32| -> SocketAddr { format!("127.0.0.1:{}", 5000 + r).parse().unwrap() };
        // Ranks reach the barrier at different times; none may leave it before the
        // last has arrived.
        let arrived = Arc::new(AtomicU32::new(0));
        let mut threads = Vec::new();
        for rank in 1..4u32 {
            let (id, arrived) = (id.clone(), arrived.clone());
            threads.push(std::thread::spawn(move || {
                let mut b =
                    Bootstrap::init(&id, None, rank, 4, addr(rank), Duration::from_secs(10))
                        .unwrap();
                std::thread::sleep(Duration::from_millis(40 * u64::from(rank)));
                arrived.fetch_add(1, Ordering::SeqCst);
                b.barrier().unwrap();
                assert_eq!(arrived.load(Ordering::SeqCst), 4, "rank {rank} left early");
                b.addresses
            }));
        }
        let mut b =
            Bootstrap::init(&id, Some(root), 0, 4, addr(0), Duration::from_secs(10)).unwrap();
        arrived.fetch_add(1, Ordering::SeqCst);
        b.barrier().unwrap();
        assert_eq!(arrived.load(Ordering::SeqCst), 4, "rank 0 left early");
        let expected: Vec<SocketAddr> = (0..4).map(addr).collect();
        assert_eq!(b.addresses, expected);
        for t in threads {
            assert_eq!(t.join().unwrap(), expected);
        }
    }

    #[test]
    fn a_missing_rank_is_named_within_the_timeout() {
        let root = BootstrapRoot::new("127.0.0.1".parse().unwrap()).unwrap();
        let id = root.id.clone();
        let start = Instant::now();
        let err = Bootstrap::init(
            &id,
            Some(root),
            0,
            3,
            "127.0.0.1:1".parse().unwrap(),
            Duration::from_millis(300),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("ranks 1, 2 did not connect"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(3));
    }
}
