//! Tests of the rules written from blind set 20 and its review: an nccl-tests table
//! whose busbw steps down and stays down, pasted with a launcher's rank tags inside its
//! rows, and the cuMem mismatch's fix, which no longer reads as advice to enlarge
//! /dev/shm. Each both ways: the failure, and a near miss it leaves alone.

use super::*;
use crate::nccl::explain::is_explainable;

/// Rows as one thread pasted them, from `first` bytes up: `[0]` tags before the size
/// and inside the rows.
fn table_from(first: u64, busbw: &[f64]) -> String {
    busbw
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let bytes = first << i;
            format!(
                "[0] {bytes:>12} {:>12}     float     sum      -1[0]    1000.0    1.00 {b:>7.2}      0[0]    1000.0    1.00 {b:>7.2}      0\n",
                bytes / 4
            )
        })
        .collect()
}

fn table(busbw: &[f64]) -> String {
    table_from(4 << 20, busbw)
}

fn explainable(text: &str) -> bool {
    is_explainable(&[Input { name: "-", text }])
}

#[test]
fn a_busbw_step_that_stays_points_at_nccls_choice() {
    let text = table(&[12.9, 16.2, 24.1, 29.5, 5.27, 5.22, 4.09]);
    // A bare table, tags and all, is an nccl-tests output to read.
    assert!(explainable(&text));
    let f = finding_by_id(&pasted(&text), "tests-busbw-step").clone();
    assert!(
        f.title.contains("29.5 GB/s") && f.title.contains("5.3 GB/s"),
        "{}",
        f.title
    );
    assert!(
        f.title.contains("32 MiB") && f.title.contains("64 MiB"),
        "{}",
        f.title
    );
    assert!(
        f.fix.contains("NCCL_ALGO") && f.fix.contains("TUNING"),
        "{}",
        f.fix
    );
    for busbw in [
        // A dip that recovers, a fall that is not a step, a step only at the last size.
        &[12.9, 16.2, 24.1, 29.5, 5.27, 28.0, 29.0][..],
        &[12.9, 16.2, 24.1, 29.5, 20.0, 18.0, 17.0],
        &[12.9, 16.2, 24.1, 29.5, 29.0, 28.0, 5.0],
        // A gradual decline, a lone fast row, a tail rising back.
        &[30.0, 24.0, 19.0, 14.0, 13.0, 12.0],
        &[12.0, 13.0, 60.0, 12.0, 13.0, 15.0],
        &[40.0, 45.0, 18.0, 20.0, 22.0],
    ] {
        let e = pasted(&table(busbw));
        assert!(
            !ids(&e).contains(&"tests-busbw-step"),
            "{busbw:?}: {:?}",
            ids(&e)
        );
    }
    // The same step below 1 MiB (latency-bound sizes), or in two tables pasted together.
    let small = table_from(64 << 10, &[12.9, 16.2, 24.1, 5.27, 5.22, 4.09]);
    let twice = format!("{text}{text}");
    for other in [small, twice] {
        assert!(!ids(&pasted(&other)).contains(&"tests-busbw-step"));
    }
}

#[test]
fn launcher_prefixes_leave_the_rows_readable() {
    let row = "  8388608  2097152  float  sum  -1  5729.5  1.46  2.56  0  5477.3  1.53  2.68  0";
    for prefix in ["[1,0]<stdout>:", "0: ", ""] {
        let text = format!("{prefix}{row}\n");
        assert!(explainable(&text), "{text}");
        let f = finding_by_id(&pasted(&text), "tests-busbw").clone();
        assert!(f.title.contains("2.6 GB/s"), "{prefix}: {}", f.title);
    }
    // Numbers in columns that are no nccl-tests row: nothing to read.
    assert!(!explainable("1 2 int x y 3.5 4.5 5.5 6\n"));
}

#[test]
fn the_cumem_mismatch_fix_does_not_enlarge_dev_shm() {
    let text = "h:1:1 [7] misc/shmutils.cc:132 NCCL WARN Error while attaching to shared memory \
                segment /dev/shm/nccl- (size 0), error: No such file or directory (2)\n";
    let f = finding_by_id(&pasted(text), "shm-cumem-mismatch").clone();
    assert!(f.fix.contains("NCCL_CUMEM_HOST_ENABLE=0"), "{}", f.fix);
    assert!(!f.fix.contains("--shm-size"), "{}", f.fix);
    // /dev/shm out of room is still told to enlarge it.
    let full =
        "h:1:1 [0] misc/shmutils.cc:60 NCCL WARN Error: failed to extend /dev/shm/nccl-ab12 \
                to 9637892 bytes, error: No space left on device (28)\n";
    let f = finding_by_id(&pasted(full), "shm-no-space").clone();
    assert!(f.fix.contains("--shm-size"), "{}", f.fix);
}
