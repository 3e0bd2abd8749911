//! The `transports` cell of results.csv, written and read in one place.
//!
//! The sweep writes it from NCCL's log (`NcclLog::transports_cell`) or, on the host
//! backend, from the ranks' own words (`sweep::merge`): `P2P/CUMEM:100%`,
//! `SHM:75%;NET/Socket:25%`, `NVLS;P2P/CUMEM:100%` (NVLink SHARP set up beside the
//! ring's connections), or one bare label (`SHM`: every rank said the same). Entries
//! are `;`-separated; older runs and hand-written cells may separate them with
//! spaces, and a label may stand without its share. Everything that decides on a
//! case's transports (ceilings, the published figure that applies, the verdict)
//! reads the cell through [`TransportsCell`], so that a mixed cell is read whole.

/// A `transports` cell, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransportsCell {
    /// NVLink SHARP was set up (`NVLS` without a share).
    pub nvls: bool,
    /// The ring's connections per transport label, with their shares (0..=1) in the
    /// order written. A label written without a share, alone, has all of it; several
    /// such labels share evenly.
    pub shares: Vec<(String, f64)>,
}

/// The cell's label for NVLink SHARP.
pub const NVLS: &str = "NVLS";

impl TransportsCell {
    pub fn parse(cell: &str) -> TransportsCell {
        let mut nvls = false;
        let mut given: Vec<(String, Option<f64>)> = Vec::new();
        for entry in cell
            .split([';', ' ', '\t', ','])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (label, share) = match entry.rsplit_once(':') {
                Some((label, pct)) => match pct.trim().trim_end_matches('%').parse::<f64>() {
                    Ok(p) if p.is_finite() && p >= 0.0 => (label.trim(), Some(p / 100.0)),
                    _ => (entry, None),
                },
                None => (entry, None),
            };
            if label == NVLS && share.is_none() {
                nvls = true;
                continue;
            }
            given.push((label.to_string(), share));
        }
        let bare = given.iter().filter(|(_, s)| s.is_none()).count();
        let stated: f64 = given.iter().filter_map(|(_, s)| *s).sum();
        let rest = if bare > 0 {
            (1.0 - stated).max(0.0) / bare as f64
        } else {
            0.0
        };
        TransportsCell {
            nvls,
            shares: given
                .into_iter()
                .map(|(label, share)| (label, share.unwrap_or(rest)))
                .collect(),
        }
    }

    /// Writes the cell: `NVLS` first where it was set up, then the shares.
    pub fn write(nvls: bool, shares: &str) -> String {
        match (nvls, shares.is_empty()) {
            (false, _) => shares.to_string(),
            (true, true) => NVLS.to_string(),
            (true, false) => format!("{NVLS};{shares}"),
        }
    }

    /// No transport recorded at all.
    pub fn is_empty(&self) -> bool {
        !self.nvls && self.shares.is_empty()
    }

    /// The labels of the ring's connections, in the order written.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.shares.iter().map(|(l, _)| l.as_str())
    }

    /// Whether a connection label starting with `prefix` (`P2P`, `SHM`, `NET`,
    /// `NET/IB`) carries any of the ring.
    pub fn uses(&self, prefix: &str) -> bool {
        self.shares
            .iter()
            .any(|(l, s)| l.starts_with(prefix) && *s > 0.0)
    }

    /// The share of the ring's connections whose label starts with `prefix`.
    pub fn share(&self, prefix: &str) -> f64 {
        self.shares
            .iter()
            .filter(|(l, _)| l.starts_with(prefix))
            .map(|(_, s)| s)
            .sum()
    }

    /// Every connection is P2P (and something is recorded).
    pub fn p2p_only(&self) -> bool {
        !self.shares.is_empty() && self.labels().all(|l| l.starts_with("P2P"))
    }

    /// Reduced in a switch or the network (NVLS, CollNet): the ring's link bound
    /// does not apply.
    pub fn in_network(&self) -> bool {
        self.nvls || self.uses("COLLNET") || self.uses("CollNet")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_as_the_sweep_writes_them() {
        let c = TransportsCell::parse("SHM:75%;NET/Socket:25%");
        assert!(!c.nvls);
        assert_eq!(
            c.shares,
            [("SHM".to_string(), 0.75), ("NET/Socket".to_string(), 0.25)]
        );
        assert!(c.uses("SHM") && c.uses("NET") && !c.uses("P2P"));
        assert!((c.share("NET") - 0.25).abs() < 1e-12);
        assert!(!c.p2p_only() && !c.in_network());

        let c = TransportsCell::parse("NVLS;P2P/CUMEM:100%");
        assert!(c.nvls && c.in_network() && c.p2p_only());
        assert_eq!(c.labels().collect::<Vec<_>>(), ["P2P/CUMEM"]);

        let c = TransportsCell::parse("NVLS");
        assert!(c.nvls && c.shares.is_empty() && !c.is_empty() && !c.p2p_only());

        let c = TransportsCell::parse("P2P/CUMEM:50%;SHM:50%");
        assert!(c.uses("P2P") && c.uses("SHM") && !c.p2p_only());
    }

    #[test]
    fn bare_labels_and_older_separators() {
        let c = TransportsCell::parse("SHM");
        assert_eq!(c.shares, [("SHM".to_string(), 1.0)]);
        let c = TransportsCell::parse("SHM NET/Socket");
        assert_eq!(
            c.shares,
            [("SHM".to_string(), 0.5), ("NET/Socket".to_string(), 0.5)]
        );
        assert!(TransportsCell::parse("").is_empty());
        assert!(TransportsCell::parse(" ; ").is_empty());
        // A colon that is not a share stays in the label.
        let c = TransportsCell::parse("NET/IB:x");
        assert_eq!(c.shares, [("NET/IB:x".to_string(), 1.0)]);
    }

    #[test]
    fn written_and_read_back() {
        assert_eq!(TransportsCell::write(false, "SHM:100%"), "SHM:100%");
        assert_eq!(
            TransportsCell::write(true, "P2P/CUMEM:100%"),
            "NVLS;P2P/CUMEM:100%"
        );
        assert_eq!(TransportsCell::write(true, ""), "NVLS");
        assert_eq!(TransportsCell::write(false, ""), "");
        let c = TransportsCell::parse(&TransportsCell::write(true, "SHM:60%;P2P/IPC:40%"));
        assert!(c.nvls);
        assert_eq!(c.labels().collect::<Vec<_>>(), ["SHM", "P2P/IPC"]);
    }
}
