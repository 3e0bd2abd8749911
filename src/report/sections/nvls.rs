//! What NVLink SHARP gained, as the report says it: for each GPU count whose cases
//! used NVLS (`analysis::nvls::gains`), the busbw with and without NVLS at the largest
//! size both measured and what the median time did; where no config turns NVLS off,
//! how to sweep one.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::compare::CompareOptions;
use crate::analysis::nvls::gains;
use crate::export::reader::RunData;
use crate::units::Bytes;

/// The report's section; nothing where no case used NVLS.
pub fn markdown(s: &mut String, run: &RunData, options: CompareOptions) -> Result<()> {
    let gains = gains(run, options);
    if gains.is_empty() {
        return Ok(());
    }
    writeln!(s, "## What NVLS gained\n")?;
    writeln!(
        s,
        "NCCL set up NVLink SHARP (NVLS: the all-reduce reduced in the NVSwitches) for these cases; the ring's link ceiling does not bound them. Against the same sweep with `NCCL_NVLS_ENABLE=0`, at the largest size both measured:\n"
    )?;
    for g in &gains {
        let (Some(off), Some(busbw_off)) = (&g.without, g.busbw_without) else {
            writeln!(
                s,
                "- {} GPUs, {} at {}: {:.2} GB/s busbw with NVLS; no config turns NVLS off in this run (sweep with `--transports {},nvls-off` to see what it gains).",
                g.nranks,
                g.with,
                Bytes(g.bytes),
                g.busbw_with,
                g.with
            )?;
            continue;
        };
        let gain = (g.busbw_with / busbw_off - 1.0) * 100.0;
        let time = g
            .time_change
            .map(|c| format!("; its time: {} with NVLS", c.change.word()))
            .unwrap_or_default();
        writeln!(
            s,
            "- {} GPUs at {}: {} {:.2} GB/s busbw with NVLS, {} {:.2} GB/s without: NVLS {:+.1} %{time}.",
            g.nranks,
            Bytes(g.bytes),
            g.with,
            g.busbw_with,
            off,
            busbw_off,
            gain
        )?;
    }
    writeln!(s)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::nvls::tests::{case, gained, run, CONFIGS, OPTIONS};

    #[test]
    fn the_gain_reads_in_busbw_and_in_time() {
        let r = gained();
        let mut s = String::new();
        markdown(&mut s, &r, OPTIONS).unwrap();
        assert!(s.contains("## What NVLS gained"), "{s}");
        assert!(s.contains("8 GPUs at 1 GiB: default"), "{s}");
        assert!(s.contains("NVLS +30.0 %"), "{s}");
        assert!(s.contains("its time: faster with NVLS"), "{s}");
    }

    #[test]
    fn without_an_nvls_off_config_the_report_says_how_to_measure_it() {
        let r = run(
            &[("default", &[])],
            vec![case("default", 8, 1 << 30, "NVLS", 4000.0)],
        );
        let mut s = String::new();
        markdown(&mut s, &r, OPTIONS).unwrap();
        assert!(s.contains("--transports default,nvls-off"), "{s}");
        // No NVLS anywhere: no section.
        let r = run(
            &CONFIGS,
            vec![case("default", 8, 1 << 30, "P2P/CUMEM:100%", 4000.0)],
        );
        let mut s = String::new();
        markdown(&mut s, &r, OPTIONS).unwrap();
        assert!(s.is_empty(), "{s}");
    }
}
