//! The orchestrator's quality pass over a group once its sizes are done: the rules
//! across sizes (`stats::quality::neighbour_flags`) join each case's own, and the
//! rows whose quality they change are rewritten. Nothing is measured again: a flag
//! is shown beside every answer the case is part of, never a reason to pick another
//! measurement.

use anyhow::Result;

use super::super::plan::Group;
use super::{Measurement, Orchestrator};
use crate::export::csv::CaseRow;
use crate::model::CaseStatus;
use crate::stats::quality::{case_flags, neighbour_flags, reasons, verdict, Flag, Point};
use crate::units::{plural, Bytes};

/// Every flag of each measurement: its own, and the rules across sizes among the
/// ok cases with timings. Others get none.
pub(crate) fn group_flags(takes: &[Measurement]) -> Vec<Vec<Flag>> {
    let assessed: Vec<usize> = (0..takes.len())
        .filter(|&i| takes[i].result.status == CaseStatus::Ok && takes[i].result.latency.is_some())
        .collect();
    let points: Vec<Point> = assessed
        .iter()
        .filter_map(|&i| {
            let l = takes[i].result.latency?;
            Some(Point {
                bytes: takes[i].result.key.bytes,
                p50_us: l.p50_us,
                ci_us: l.median_ci_us,
            })
        })
        .collect();
    let mut flags = vec![Vec::new(); takes.len()];
    for (&i, neighbours) in assessed.iter().zip(neighbour_flags(&points)) {
        flags[i] = case_flags(&takes[i].shape);
        flags[i].extend(neighbours);
    }
    flags
}

impl Orchestrator<'_> {
    /// The quality pass over a group's cases once its sizes are done: rewrites the
    /// rows whose quality the rules across sizes change, and says which are flagged.
    pub(super) fn assess_group(&mut self, group: &Group, taken: &[Measurement]) -> Result<()> {
        let flags = group_flags(taken);
        let mut flagged = Vec::new();
        let mut replaced = Vec::new();
        for (m, f) in taken.iter().zip(&flags).filter(|(_, f)| !f.is_empty()) {
            let first = &m.result;
            let mut kept = first.clone();
            kept.quality = Some(verdict(f));
            kept.quality_note = reasons(f);
            flagged.push(format!("{} {}", Bytes(kept.key.bytes), verdict(f).name()));
            if (kept.quality, &kept.quality_note) != (first.quality, &first.quality_note) {
                self.manifest
                    .cases
                    .change_quality(first.quality, kept.quality);
                replaced.push((CaseRow::from(first), CaseRow::from(&kept)));
            }
        }
        if !replaced.is_empty() {
            // The rows in one rewrite of results.csv, then the counts that match them.
            self.writer.replace_rows(&replaced)?;
            self.writer.write_manifest(&self.manifest)?;
        }
        if !flagged.is_empty() {
            let config =
                crate::ops::collective::labelled(&group.config.name, group.collective.name());
            self.observer.warning(&format!(
                "{config} n={}: {} flagged ({}), never called within the threshold; see quality_note in results.csv",
                group.nranks,
                plural(flagged.len(), "case", "cases"),
                flagged.join(", ")
            ));
        }
        Ok(())
    }
}
