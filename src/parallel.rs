//! Work on every core for the commands that read finished runs (decoding thousands of
//! histograms, bootstrapping thousands of pairs): an order-keeping parallel map on
//! scoped standard threads. The results are those of the sequential map, in the same
//! order, whatever the number of threads; any randomness must come from the item
//! (the comparisons seed each pair from its key), never from the thread.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Items a thread takes at a time: small enough to balance pairs of unequal cost (a
/// case compared with itself costs nothing, a bootstrap a fraction of a millisecond),
/// large enough that taking one is negligible.
const BLOCK: usize = 64;

/// `items.iter().map(f).collect()`, on as many threads as the machine has cores.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    map_on(cores, items, f)
}

/// `items.iter().map(f).collect()` on at most `threads` threads (1: on this one).
/// A panic in `f` is raised again here.
pub fn map_on<T: Sync, R: Send>(threads: usize, items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.min(items.len().div_ceil(BLOCK));
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(BLOCK, Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let block = &items[start..(start + BLOCK).min(items.len())];
            done.push((start, block.iter().map(&f).collect::<Vec<R>>()));
        }
    };
    let mut blocks: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut blocks = work();
        for helper in helpers {
            match helper.join() {
                Ok(more) => blocks.extend(more),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        blocks
    });
    blocks.sort_unstable_by_key(|(start, _)| *start);
    blocks
        .into_iter()
        .flat_map(|(_, results)| results)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_on_any_number_of_threads() {
        let items: Vec<u64> = (0..1000).collect();
        let sequential: Vec<u64> = items.iter().map(|x| x * x + 1).collect();
        for threads in [0, 1, 2, 3, 8, 64] {
            assert_eq!(
                map_on(threads, &items, |x| x * x + 1),
                sequential,
                "{threads}"
            );
        }
        assert_eq!(map(&items, |x| x * x + 1), sequential);
        assert!(map_on(4, &[] as &[u64], |x| *x).is_empty());
    }

    #[test]
    #[should_panic(expected = "item 700")]
    fn a_panic_in_a_helper_thread_is_raised_again() {
        let items: Vec<u64> = (0..1000).collect();
        map_on(4, &items, |&x| {
            if x == 700 {
                panic!("item 700");
            }
            x
        });
    }
}
