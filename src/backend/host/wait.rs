//! Waiting for a peer process without starving it, and without handing the core to
//! an unrelated process.
//!
//! When every rank of the machine has a core of its own (each is pinned to one), a
//! waiter spins for up to half a millisecond (a hand-off then costs a cache-line
//! transfer), then sleeps on a futex in the shared segment until the peer wakes it.
//! It never calls `sched_yield` there: on a pinned core, yielding can only give the
//! core to some other process (a compiler, the test harness, the orchestrator), and
//! the scheduler lets that process keep it until the next tick while the yielding
//! rank stays runnable and so gets no wake-up preemption. Every hand-off then costs
//! a tick: 2-rank 8-byte cases measured p50 1-4 ms instead of 0.2 us whenever one
//! CPU-bound process shared the machine. A sleeping rank, by contrast, is woken
//! ahead of such a process.
//!
//! With more ranks than cores the peer we wait for may be waiting for our core, so a
//! waiter yields for a short while (the peer on our core runs) before it sleeps; but
//! the first yield that returns only after a tick's worth of time shows that a
//! process outside the communicator holds the core, and from then on this process
//! sleeps without yielding.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a waiter spins, how long it yields before it sleeps, and how long one
/// sleep may last (a wake ends it sooner; the limit bounds how late an abort is
/// noticed).
#[derive(Debug, Clone, Copy)]
pub struct WaitPolicy {
    pub spin: Duration,
    pub yield_for: Duration,
    pub sleep: Duration,
}

/// The longest single sleep of a waiter.
const SLEEP: Duration = Duration::from_millis(10);

/// A yield that returns later than this gave the core to a process that kept it
/// until a scheduler tick, longer than ranks sharing a core hold it between hand-offs.
const CONTESTED_YIELD: Duration = Duration::from_micros(500);

/// Set once a yield in this process came back after `CONTESTED_YIELD`.
static CORE_CONTESTED: AtomicBool = AtomicBool::new(false);

impl WaitPolicy {
    /// Spin when every rank of this machine can have a core of its own; yield
    /// briefly when ranks must share cores.
    /// Cores are those this process may run on (its affinity mask, as `pin_rank`
    /// sees it), so call this before pinning.
    pub fn for_ranks(local_ranks: u32) -> WaitPolicy {
        let cores = match allowed_cpus().len() {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        if local_ranks as usize <= cores {
            WaitPolicy {
                spin: Duration::from_micros(500),
                yield_for: Duration::ZERO,
                sleep: SLEEP,
            }
        } else {
            WaitPolicy {
                spin: Duration::ZERO,
                yield_for: Duration::from_micros(50),
                sleep: SLEEP,
            }
        }
    }
}

/// Gives the core to a runnable peer, unless an earlier yield showed that the core is
/// contested by a process outside the communicator. Returns whether it yielded.
fn yield_to_peer() -> bool {
    if CORE_CONTESTED.load(Ordering::Relaxed) {
        return false;
    }
    let start = Instant::now();
    std::thread::yield_now();
    if start.elapsed() > CONTESTED_YIELD {
        CORE_CONTESTED.store(true, Ordering::Relaxed);
    }
    true
}

/// Raised when a peer marked the connection as aborted.
#[derive(Debug)]
pub struct Aborted;

/// Waits until `ready(word.load())` holds. `sleeping` is set while this side sleeps,
/// so that the other side knows to call `wake(word)` after it changes `word`.
pub fn wait_until(
    word: &AtomicU32,
    sleeping: &AtomicU32,
    abort: &AtomicU32,
    policy: WaitPolicy,
    ready: impl Fn(u32) -> bool,
) -> Result<u32, Aborted> {
    let v = word.load(Ordering::Acquire);
    if ready(v) {
        return Ok(v);
    }
    let start = Instant::now();
    let mut polls = 0u32;
    loop {
        let v = word.load(Ordering::Acquire);
        if ready(v) {
            return Ok(v);
        }
        polls = polls.wrapping_add(1);
        if polls % 64 != 0 {
            std::hint::spin_loop();
            continue;
        }
        if abort.load(Ordering::Relaxed) != 0 {
            return Err(Aborted);
        }
        let waited = start.elapsed();
        if waited < policy.spin {
            continue;
        }
        if waited < policy.spin + policy.yield_for && yield_to_peer() {
            continue;
        }
        // Announce the sleep, then re-check: the other side stores `word` before it
        // reads `sleeping` (both SeqCst), so either it sees us or we see its store.
        sleeping.store(1, Ordering::SeqCst);
        let v = word.load(Ordering::SeqCst);
        if ready(v) {
            sleeping.store(0, Ordering::Relaxed);
            return Ok(v);
        }
        futex_wait(word, v, policy.sleep);
        sleeping.store(0, Ordering::Relaxed);
    }
}

/// Publishes `value` in `word` and wakes the other side if it sleeps on it.
pub fn store_and_wake(word: &AtomicU32, sleeping: &AtomicU32, value: u32) {
    word.store(value, Ordering::SeqCst);
    if sleeping.load(Ordering::SeqCst) != 0 {
        futex_wake(word);
    }
}

/// Sleeps while `*word == expected`, at most `timeout` (spurious returns are fine).
/// The futex is not private: the word lives in memory shared between processes.
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as above; FUTEX_WAKE only reads the address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Pins this process to one CPU of those it may use, `local_index` modulo their count, when
/// every rank can have its own. Two ranks that the scheduler happens to put on one
/// core would otherwise take turns through every hand-off, and a case would measure
/// the scheduler (100 us per 32 KiB all-reduce instead of 3 us, seen on 2 cores).
/// Returns the CPU chosen, or `None` when ranks must share CPUs.
pub fn pin_rank(local_index: u32, local_ranks: u32) -> Option<usize> {
    if local_ranks as usize > allowed_cpus().len() {
        return None;
    }
    pin_to(local_index as usize)
}

/// Pins this process to the `index`-th CPU it may use (modulo their count); the
/// CPU, or `None` when the mask cannot be read or set.
pub fn pin_to(index: usize) -> Option<usize> {
    let allowed = allowed_cpus();
    if allowed.is_empty() {
        return None;
    }
    let cpu = allowed[index % allowed.len()];
    // SAFETY: cpu_set_t is plain data; the call sets this process's mask.
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        (libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) == 0)
            .then_some(cpu)
    }
}

/// The CPUs this process may run on (empty when the mask cannot be read).
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; the call reads this process's mask.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_sleeping_waiter_is_woken() {
        let word = Arc::new(AtomicU32::new(0));
        let sleeping = Arc::new(AtomicU32::new(0));
        let abort = Arc::new(AtomicU32::new(0));
        // Sleeps of up to 10 s: only the wake can end each of the three waits in time.
        let policy = WaitPolicy {
            spin: Duration::ZERO,
            yield_for: Duration::ZERO,
            sleep: Duration::from_secs(10),
        };
        let start = std::time::Instant::now();
        let (w, s, a) = (word.clone(), sleeping.clone(), abort.clone());
        let waiter = std::thread::spawn(move || wait_until(&w, &s, &a, policy, |v| v >= 3).is_ok());
        for v in 1..=3 {
            std::thread::sleep(Duration::from_millis(20));
            store_and_wake(&word, &sleeping, v);
        }
        assert!(waiter.join().unwrap());
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_contested_core_ends_the_yielding() {
        let was = CORE_CONTESTED.swap(true, Ordering::Relaxed);
        assert!(!yield_to_peer(), "no yield once a yield came back late");
        CORE_CONTESTED.store(was, Ordering::Relaxed);
        // More ranks than this process may use cores: no spin, a short yield.
        let shared = WaitPolicy::for_ranks(allowed_cpus().len() as u32 + 1);
        assert_eq!(
            (shared.spin, shared.yield_for),
            (Duration::ZERO, Duration::from_micros(50))
        );
        let own = WaitPolicy::for_ranks(1);
        assert_eq!(
            (own.spin, own.yield_for),
            (Duration::from_micros(500), Duration::ZERO)
        );
    }

    #[test]
    fn abort_ends_the_wait() {
        let word = AtomicU32::new(0);
        let sleeping = AtomicU32::new(0);
        let abort = AtomicU32::new(1);
        let policy = WaitPolicy::for_ranks(1);
        assert!(wait_until(&word, &sleeping, &abort, policy, |v| v > 0).is_err());
    }
}
