//! The host backend's link ceilings, measured just before a sweep: what one core
//! copies per second (the SHM ring's rank copies through a segment with one core),
//! and what one TCP connection carries over the loopback interface in one direction
//! (each direction of the NET/Socket ring is such a connection).
//!
//! Each is the best of a few repetitions after a warm-up, with buffers larger than
//! the last-level cache, so that it is the memory system's rate and not a cache's.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use crate::model::{Ceilings, LinkKind, LinkRate};

/// Bytes per memcpy: well past any last-level cache of today.
const MEMCPY_BYTES: usize = 128 << 20;
/// Bytes each way over TCP per repetition.
const TCP_BYTES: usize = 64 << 20;
const REPEATS: usize = 5;

/// Measures both; a failure is recorded in `errors`, never fatal.
pub fn measure() -> Ceilings {
    measure_with(MEMCPY_BYTES, TCP_BYTES)
}

pub(crate) fn measure_with(memcpy_bytes: usize, tcp_bytes: usize) -> Ceilings {
    let mut c = Ceilings {
        cache_bytes: last_level_cache(std::path::Path::new(CACHE_DIR)),
        ..Ceilings::default()
    };
    c.links.push(memcpy(memcpy_bytes));
    match tcp_loopback(tcp_bytes) {
        Ok(l) => c.links.push(l),
        Err(e) => c
            .errors
            .push(format!("TCP loopback: {e} (no NET/Socket ceiling)")),
    }
    c
}

/// Where Linux describes the first CPU's caches (`index*/level`, `index*/size`).
const CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";

/// The size of the highest-level cache under `dir` (`32768K`), bytes; `None` where
/// the kernel does not say.
fn last_level_cache(dir: &std::path::Path) -> Option<u64> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let level: u32 = read(e.path().join("level"))?.trim().parse().ok()?;
            let size = read(e.path().join("size"))?;
            let size = size.trim();
            let split = size
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(size.len());
            let (digits, unit) = size.split_at(split);
            let n: u64 = digits.parse().ok()?;
            let scale = match unit {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => return None,
            };
            Some((level, n * scale))
        })
        .max()
        .map(|(_, bytes)| bytes)
}

fn memcpy(bytes: usize) -> LinkRate {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    dst.copy_from_slice(&src);
    let best = (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
            t.elapsed()
        })
        .min()
        .unwrap_or_default();
    LinkRate {
        kind: LinkKind::Memcpy,
        gpus: Vec::new(),
        gbps: rate(bytes, best),
        bytes: bytes as u64,
        how: format!(
            "memcpy on one core, {}, best of {REPEATS}",
            crate::units::Bytes(bytes as u64)
        ),
    }
}

/// One connection over 127.0.0.1, one end sending `bytes` to the other.
fn tcp_loopback(bytes: usize) -> std::io::Result<LinkRate> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let addr = listener.local_addr()?;
    let client = TcpStream::connect(addr)?;
    let (server, _) = listener.accept()?;
    for s in [&client, &server] {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        s.set_write_timeout(Some(Duration::from_secs(30)))?;
    }
    // One direction at a time: a sender and a receiver thread. Both directions at
    // once would put four busy threads on the ranks' cores and measure the
    // scheduler, and the rate of one direction bounds each direction of the ring.
    let exchange = |bytes: usize| -> std::io::Result<Duration> {
        let t = Instant::now();
        thread::scope(|scope| {
            let receiver = scope.spawn(|| receive(&server, bytes));
            send(&client, bytes)?;
            receiver
                .join()
                .map_err(|_| std::io::Error::other("the TCP receiver panicked"))??;
            Ok(t.elapsed())
        })
    };
    exchange(bytes / 4)?;
    let mut best = Duration::MAX;
    for _ in 0..REPEATS.min(3) {
        best = best.min(exchange(bytes)?);
    }
    Ok(LinkRate {
        kind: LinkKind::TcpLoopback,
        gpus: Vec::new(),
        gbps: rate(bytes, best),
        bytes: bytes as u64,
        how: format!(
            "one TCP connection over 127.0.0.1, one direction, {}, best of 3",
            crate::units::Bytes(bytes as u64)
        ),
    })
}

fn send(mut to: &TcpStream, bytes: usize) -> std::io::Result<()> {
    let chunk = vec![7u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        to.write_all(&chunk[..n])?;
        left -= n;
    }
    Ok(())
}

fn receive(mut from: &TcpStream, bytes: usize) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = from.read(&mut buf[..left.min(1 << 20)])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        left -= n;
    }
    Ok(())
}

fn rate(bytes: usize, took: Duration) -> f64 {
    if took.is_zero() {
        return 0.0;
    }
    bytes as f64 / took.as_secs_f64() / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_links_are_measured_with_what_they_are() {
        let c = measure_with(8 << 20, 8 << 20);
        assert!(c.errors.is_empty(), "{c:?}");
        let kinds: Vec<LinkKind> = c.links.iter().map(|l| l.kind).collect();
        assert_eq!(kinds, [LinkKind::Memcpy, LinkKind::TcpLoopback]);
        for l in &c.links {
            // Any machine copies and loops back between 10 MB/s and 10 TB/s.
            assert!(l.gbps > 0.01 && l.gbps < 10_000.0, "{l:?}");
            assert_eq!(l.bytes, 8 << 20);
        }
        assert!(c.links[1].how.contains("127.0.0.1, one direction"), "{c:?}");
    }

    #[test]
    fn the_last_level_cache_is_the_highest_level_the_kernel_lists() {
        let dir = tempfile::tempdir().unwrap();
        for (i, level, size) in [(0, "1", "32K"), (2, "2", "1024K"), (3, "3", "32768K")] {
            let d = dir.path().join(format!("index{i}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(last_level_cache(dir.path()), Some(32 << 20));
        std::fs::write(dir.path().join("index3/size"), "bad\n").unwrap();
        assert_eq!(last_level_cache(dir.path()), Some(1 << 20));
        assert_eq!(last_level_cache(&dir.path().join("none")), None);
    }
}
