//! `nccl-bench ceilings` (hidden): measures the GPUs' link ceilings in this process
//! and prints them as one JSON line on stdout. The sweep runs it in a process of its
//! own with a time limit (`backend::nccl::ceiling::run_in_child`). What could not be
//! measured is data, in the result's `errors` (exit 0); only bad arguments are errors
//! of the command (exit 2).

use std::io::Write;

use anyhow::{bail, Context, Result};

use crate::backend::nccl::ceiling;
use crate::cli::CeilingsArgs;

pub fn run(args: &CeilingsArgs) -> Result<u8> {
    for (i, d) in args.devices.iter().enumerate() {
        if args.devices[..i].contains(d) {
            bail!("--devices lists GPU {d} twice");
        }
    }
    let bytes = match usize::try_from(args.bytes.0) {
        Ok(0) => bail!("--bytes must be at least 1"),
        Ok(b) => b,
        Err(_) => bail!(
            "--bytes {} does not fit in this machine's memory",
            args.bytes
        ),
    };
    let result = ceiling::measure(&args.devices, bytes);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(&result)?)
        .and_then(|()| out.flush())
        .context("writing the result")?;
    Ok(0)
}
