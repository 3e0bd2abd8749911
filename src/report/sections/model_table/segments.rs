//! The report's table of the model per NCCL choice: for each config, the runs of
//! consecutive sizes where NCCL ran one algorithm and protocol, each with its own
//! alpha and beta. `analysis::model_table` fits them.

use std::fmt::Write as _;

use anyhow::Result;

use super::cells::{alpha_cell, beta_cell, no_fit};
use crate::analysis::model_table::Segment;
use crate::units::Bytes;

/// "8 B to 64 KiB", or one size.
fn span(s: &Segment) -> String {
    if s.first_bytes == s.last_bytes {
        Bytes(s.first_bytes).to_string()
    } else {
        format!("{} to {}", Bytes(s.first_bytes), Bytes(s.last_bytes))
    }
}

/// The report's table of the segments of one rank count's configs (name, busbw /
/// algbw factor, segments), where any config has them.
pub fn markdown(s: &mut String, here: &[(&str, f64, &[Segment])]) -> Result<()> {
    if here.iter().all(|(_, _, segs)| segs.is_empty()) {
        return Ok(());
    }
    writeln!(
        s,
        "Per NCCL choice: the sizes where NCCL ran one algorithm and protocol (from its TUNING lines), each fitted apart, so the sizes around a switch are modelled too:\n"
    )?;
    writeln!(
        s,
        "| config | NCCL's choice | sizes | alpha (fixed cost) | beta (bus bandwidth) | residual (rms) |\n|---|---|---|---|---|---|"
    )?;
    for (config, bus, segs) in here {
        for seg in segs.iter() {
            let cells = match &seg.fit {
                Ok(f) => format!(
                    "{} | {} | {:.1} %",
                    alpha_cell(f),
                    beta_cell(f, *bus),
                    f.rms_residual * 100.0
                ),
                Err(why) => format!("{} | |", no_fit(why)),
            };
            writeln!(
                s,
                "| {config} | {} | {} ({}) | {cells} |",
                seg.choice,
                span(seg),
                seg.sizes
            )?;
        }
    }
    writeln!(s)?;
    Ok(())
}
