//! Progress on the terminal: a bar over all cases (with ETA and the current case)
//! when stdout is a terminal, one line per finished case otherwise. Warnings go to
//! stderr either way.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::{CaseCounts, CaseKey, CaseResult, CaseStatus};
use crate::sweep::SweepObserver;
use crate::units::{clip, format_us, wrapped, Bytes, TERMINAL_WIDTH};

/// The observer for this terminal: a bar when stdout is one and `plain` is not asked.
pub fn for_terminal(plain: bool) -> Box<dyn SweepObserver> {
    if !plain && std::io::stdout().is_terminal() {
        Box::new(BarProgress {
            bar: None,
            rounds: 1,
        })
    } else {
        Box::new(LineProgress)
    }
}

fn key_label(key: &CaseKey) -> String {
    let config = crate::ops::collective::labelled(&key.config, key.collective.name());
    format!(
        "{:<12} n={:<3} {:>9}",
        config,
        key.nranks,
        Bytes(key.bytes).to_string()
    )
}

/// The one-line summary of a finished case, in at most [`TERMINAL_WIDTH`] columns:
/// busbw, the median and p99 of its iterations, the transports; results.csv has
/// the rest (the mean, the iterations, the whole error).
pub fn case_line(r: &CaseResult) -> String {
    let head = format!("{:<7} {}", r.status.as_str(), key_label(&r.key));
    match (r.status, r.latency, r.bandwidth) {
        (CaseStatus::Ok | CaseStatus::Wrong, Some(l), Some(b)) => {
            let fixed = format!(
                "{head}  {:>8.3} GB/s  p50 {:>9}  p99 {:>9}  ",
                b.busbw.0,
                format_us(l.p50_us),
                // "-" where the samples cannot support a p99 (as its CSV cell).
                l.tail(0.99, l.p99_us)
                    .map(format_us)
                    .unwrap_or_else(|| "-".into()),
            );
            // The transports get the room left, a share of all said by its name alone.
            let room = TERMINAL_WIDTH.saturating_sub(fixed.chars().count());
            let mut line = format!("{fixed}{}", transports_cell(&r.transports, room));
            if r.status == CaseStatus::Wrong {
                line.push_str(&format!("  WRONG: {}", r.error));
            }
            clip(&line, TERMINAL_WIDTH)
        }
        _ => clip(
            &format!("{head}  {}", failure_words(&r.error)),
            TERMINAL_WIDTH,
        ),
    }
}

/// The transports in at most `room` columns (8 at least): a share of all said by its
/// name alone (`NVLS;P2P/CUMEM`), cut with `...` where it still does not fit.
fn transports_cell(cell: &str, room: usize) -> String {
    let room = room.max(8);
    let cell = cell.replace(":100%", "");
    if cell.chars().count() <= room {
        return cell;
    }
    let kept: String = cell.chars().take(room - 3).collect();
    format!("{kept}...")
}

/// A failed case's reason in a few words. Where NCCL's log names the cause, it comes
/// first: the ranks' own errors are often its consequences (a peer that went away).
fn failure_words(error: &str) -> String {
    let Some(cause) = crate::nccl::log::logged_cause(error) else {
        return error.to_string();
    };
    let id = cause.split(": ").next().unwrap_or(cause);
    // `not run: NCCL's connection set-up failed at 8 B and would fail again ...`
    let earlier = error
        .strip_prefix("not run: ")
        .and_then(|rest| rest.split(" failed at ").nth(1))
        .and_then(|rest| rest.split(" and ").next());
    match earlier {
        Some(size) => format!("not run: would fail as {size} did (NCCL log: {id})"),
        None => format!("NCCL log: {id}; the whole error is in results.csv"),
    }
}

fn warning_lines(message: &str) -> String {
    wrapped(message, "warning: ", "  ")
}

fn summary_line(counts: &CaseCounts, run_dir: &Path, interrupted: bool) -> String {
    let mut parts = vec![format!("{} ok", counts.ok)];
    for (n, what) in [
        (counts.failed, "failed"),
        (counts.timeout, "timeout"),
        (counts.wrong, "wrong"),
        (counts.skipped, "skipped"),
        (
            counts.unsupported,
            "unsupported (forced choice NCCL refused)",
        ),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let flagged = counts.noisy + counts.outlier;
    if flagged > 0 {
        parts.push(format!(
            "{flagged} flagged: {} noisy, {} outlier",
            counts.noisy, counts.outlier
        ));
    }
    let state = if interrupted {
        "interrupted after"
    } else {
        "finished:"
    };
    format!(
        "sweep {state} {} of {} cases ({}); results in {}",
        counts.done,
        counts.total,
        parts.join(", "),
        run_dir.display()
    )
}

struct LineProgress;

/// `9 cases`, or `9 cases x 9 rounds`.
fn cases_line(total: u64, rounds: u32, note: &str) -> String {
    if rounds > 1 {
        format!("{total} cases x {rounds} rounds of process groups; {note}")
    } else {
        format!("{total} cases; {note}")
    }
}

impl SweepObserver for LineProgress {
    fn sweep_started(&mut self, total: u64, rounds: u32, note: &str) {
        print!("{}", wrapped(&cases_line(total, rounds, note), "", "  "));
    }
    fn case_started(&mut self, _: &CaseKey, _: u32) {}
    fn measured(&mut self, _: u64) {}
    fn case_finished(&mut self, r: &CaseResult) {
        println!("{}", case_line(r));
    }
    fn warning(&mut self, message: &str) {
        eprint!("{}", warning_lines(message));
    }
    fn note(&mut self, message: &str) {
        print!("{}", wrapped(message, "", "  "));
    }
    fn sweep_finished(&mut self, counts: &CaseCounts, run_dir: &Path, interrupted: bool) {
        print!(
            "{}",
            wrapped(&summary_line(counts, run_dir, interrupted), "", "  ")
        );
    }
}

struct BarProgress {
    bar: Option<ProgressBar>,
    rounds: u32,
}

impl SweepObserver for BarProgress {
    fn sweep_started(&mut self, total: u64, rounds: u32, note: &str) {
        print!("{}", wrapped(&cases_line(total, rounds, note), "", "  "));
        self.rounds = rounds;
        // Drawn on stdout, the stream whose being a terminal chose this observer;
        // it counts rounds of cases, which advance evenly.
        let units = total * u64::from(rounds.max(1));
        let bar = ProgressBar::with_draw_target(Some(units), ProgressDrawTarget::stdout());
        let template = if rounds > 1 {
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} case rounds, ETA {eta}  {msg}"
        } else {
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cases, ETA {eta}  {msg}"
        };
        let style =
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(200));
        self.bar = Some(bar);
    }
    fn case_started(&mut self, key: &CaseKey, round: u32) {
        if let Some(bar) = &self.bar {
            if self.rounds > 1 {
                bar.set_message(format!("{}  round {round}/{}", key_label(key), self.rounds));
            } else {
                bar.set_message(key_label(key));
            }
        }
    }
    fn measured(&mut self, rounds: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(rounds);
        }
    }
    fn case_finished(&mut self, r: &CaseResult) {
        match &self.bar {
            Some(bar) => bar.println(case_line(r)),
            None => println!("{}", case_line(r)),
        }
    }
    fn warning(&mut self, message: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprint!("{}", warning_lines(message))),
            None => eprint!("{}", warning_lines(message)),
        }
    }
    fn note(&mut self, message: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| print!("{}", wrapped(message, "", "  "))),
            None => print!("{}", wrapped(message, "", "  ")),
        }
    }
    fn sweep_finished(&mut self, counts: &CaseCounts, run_dir: &Path, interrupted: bool) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        print!(
            "{}",
            wrapped(&summary_line(counts, run_dir, interrupted), "", "  ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transports_fit_the_room_left() {
        assert_eq!(transports_cell("NVLS;P2P/CUMEM:100%", 20), "NVLS;P2P/CUMEM");
        assert_eq!(
            transports_cell("P2P/CUMEM:50%;SHM:50%", 21),
            "P2P/CUMEM:50%;SHM:50%"
        );
        assert_eq!(transports_cell("P2P/CUMEM:50%;SHM:50%", 12), "P2P/CUMEM...");
        assert_eq!(transports_cell("SHM:100%", 0), "SHM");
    }

    #[test]
    fn a_failure_leads_with_what_the_nccl_log_says() {
        let first = "rank 2: ncclAllReduce failed: ncclRemoteError (6): remote process exited; \
                     NCCL log: shm-enospc: Error: failed to extend /dev/shm/nccl-x";
        assert_eq!(
            failure_words(first),
            "NCCL log: shm-enospc; the whole error is in results.csv"
        );
        let later = format!(
            "not run: NCCL's connection set-up failed at 8 B and would fail again in fresh \
             processes: {first}"
        );
        assert_eq!(
            failure_words(&later),
            "not run: would fail as 8 B did (NCCL log: shm-enospc)"
        );
        assert_eq!(failure_words("rank 1 exited"), "rank 1 exited");
    }
}
