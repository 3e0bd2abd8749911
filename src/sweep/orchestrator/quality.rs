//! The orchestrator's quality pass over a group once its sizes are done: flag the
//! cases to distrust, measure them again in fresh processes (as many rounds as the
//! first measurement), keep the better-behaved measurement of each and rewrite its row (the rules and the choice are in
//! `stats::quality` and `sweep::remeasure`; this is the running and the writing).

use std::sync::atomic::Ordering;

use anyhow::Result;

use super::super::failure::Failure;
use super::super::plan::Group;
use super::super::remeasure::{self, Measurement, NoSecond};
use super::{Orchestrator, Take, Taken, Takes};
use crate::export::csv::RowCells;
use crate::stats::quality::{verdict, Quality};
use crate::units::{plural, Bytes};

impl Orchestrator<'_> {
    /// The quality pass over a group's cases once its sizes are done: flags the cases
    /// to distrust, measures them again in fresh processes (unless `--no-remeasure`
    /// or `interrupted`), and rewrites the rows whose measurement or quality changed.
    /// Returns whether the sweep was interrupted meanwhile.
    pub(super) fn assess_group(
        &mut self,
        group: &Group,
        firsts: Vec<Taken>,
        sequence: &mut u32,
        interrupted: bool,
    ) -> Result<bool> {
        let measurements: Vec<Measurement> = firsts.into_iter().map(|t| t.measurement).collect();
        let refs: Vec<&Measurement> = measurements.iter().collect();
        let flags = remeasure::group_flags(&refs);
        let flagged: Vec<usize> = (0..flags.len()).filter(|&i| !flags[i].is_empty()).collect();
        if flagged.is_empty() {
            return Ok(interrupted);
        }
        let sizes: Vec<u64> = flagged
            .iter()
            .map(|&i| measurements[i].result.key.bytes)
            .collect();
        // As many rounds as the first take, one after the other: the second
        // measurement's interval stands on the same footing as the first's.
        let rounds = measurements
            .iter()
            .map(|m| m.result.rounds() as u32)
            .max()
            .unwrap_or(1)
            .max(1);
        let mut seconds = Takes::new(Take::Second, rounds);
        // A second take runs with what the probe found for the first.
        for m in &measurements {
            let probe = super::SizeProbe {
                tuning: m.result.tuning.clone(),
                refused: None,
            };
            seconds.probes.insert(m.result.key.bytes, probe);
        }
        let mut why_not = None;
        let mut interrupted = interrupted || self.interrupted.load(Ordering::SeqCst);
        if interrupted {
            why_not = Some(NoSecond::Interrupted);
        } else if !self.settings.remeasure {
            why_not = Some(NoSecond::Disabled);
        } else {
            self.observer.warning(&format!(
                "{} n={}: re-measuring {} in fresh processes ({})",
                crate::ops::collective::labelled(&group.config.name, group.collective.name()),
                group.nranks,
                plural(sizes.len(), "case", "cases"),
                flagged
                    .iter()
                    .map(|&i| format!(
                        "{} {}",
                        Bytes(measurements[i].result.key.bytes),
                        verdict(&flags[i])
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            for round in 1..=rounds {
                seconds.round = round;
                *sequence += 1;
                if let Some(f) = self.run_group(group, &sizes, 1, *sequence, &mut seconds)? {
                    match f.failure {
                        Failure::Interrupted => {
                            interrupted = true;
                            why_not = Some(NoSecond::Interrupted);
                        }
                        Failure::Write(e) => anyhow::bail!(e),
                        _ => why_not = Some(NoSecond::Failed(f.reason)),
                    }
                    break;
                }
            }
        }
        let mut histograms = Vec::new();
        // The size a failed re-measurement stopped at (the ones after it never ran).
        let mut stopped_at: Option<u64> = None;
        let outcomes: Vec<Result<Measurement, NoSecond>> = sizes
            .iter()
            .map(|&bytes| {
                let taken = seconds
                    .taken
                    .iter_mut()
                    .find(|t| t.measurement.result.key.bytes == bytes);
                match (taken, &why_not) {
                    (Some(t), _) => {
                        histograms.push((
                            t.measurement.result.clone(),
                            t.histogram.take(),
                            t.offset,
                        ));
                        Ok(t.measurement.clone())
                    }
                    (None, Some(NoSecond::Failed(reason))) => match stopped_at {
                        None => {
                            stopped_at = Some(bytes);
                            Err(NoSecond::Failed(reason.clone()))
                        }
                        Some(at) => Err(NoSecond::NotReached(format!(
                            "the re-measurement failed at {}",
                            Bytes(at)
                        ))),
                    },
                    (None, Some(why)) => Err(why.clone()),
                    (None, None) => Err(NoSecond::NotReached(
                        "the re-measurement ended before this size".into(),
                    )),
                }
            })
            .collect();
        // Both measurements stay in the histogram log.
        for (result, histogram, offset) in &histograms {
            if let Some(h) = histogram {
                self.writer.record_histogram(result, h, *offset)?;
            }
        }
        let mut distrusted = Vec::new();
        let mut replaced = Vec::new();
        for (outcome, &i) in remeasure::decide(&measurements, &flagged, &outcomes)
            .into_iter()
            .zip(&flagged)
        {
            let first = &measurements[i].result;
            let kept = outcome.kept;
            let counts = &mut self.manifest.cases;
            if kept.status != first.status {
                counts.change_status(first.status, kept.status);
            }
            counts.change_quality(first.quality, kept.quality);
            if !kept.quality.is_some_and(Quality::trusted) {
                distrusted.push(format!(
                    "{} {}",
                    Bytes(kept.key.bytes),
                    kept.quality
                        .map(|q| q.name())
                        .unwrap_or(kept.status.as_str())
                ));
            }
            replaced.push((RowCells::from(first), RowCells::from(&kept)));
        }
        // The rows in one rewrite of results.csv, then the counts that match them.
        self.writer.replace_rows(&replaced)?;
        self.writer.write_manifest(&self.manifest)?;
        let cleared = flagged.len() - distrusted.len();
        let config = crate::ops::collective::labelled(&group.config.name, group.collective.name());
        let mut summary = format!("{config} n={}: ", group.nranks);
        if cleared > 0 {
            summary.push_str(&format!(
                "{} passed when re-measured",
                plural(cleared, "case", "cases")
            ));
            if !distrusted.is_empty() {
                summary.push_str("; ");
            }
        }
        if !distrusted.is_empty() {
            summary.push_str(&format!(
                "{} to distrust ({}); results.csv's quality_note says why",
                plural(distrusted.len(), "case", "cases"),
                distrusted.join(", ")
            ));
        }
        self.observer.warning(&summary);
        Ok(interrupted)
    }
}
