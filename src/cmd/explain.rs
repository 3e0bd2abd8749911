//! `nccl-bench explain`: reads NCCL logs as people paste them and prints what they
//! say (versions, ranks, network, transports per rank pair) and a diagnosis with a
//! fix for every known failure. A file with nothing of NCCL in it is exit 2.

use std::io::Read;

use anyhow::{bail, Context, Result};

use crate::cli::ExplainArgs;
use crate::nccl::explain::{explain, is_nccl_log, render_text};
use crate::nccl::log as nccl_log;

pub fn run(args: &ExplainArgs) -> Result<u8> {
    let mut text = String::new();
    let mut names = Vec::new();
    for path in &args.files {
        if path.as_os_str() == "-" {
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read standard input")?;
            names.push("standard input".to_string());
        } else {
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            text.push_str(&String::from_utf8_lossy(&bytes));
            names.push(path.display().to_string());
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let log = nccl_log::parse(&text);
    if !is_nccl_log(&log) {
        bail!(
            "{} does not look like an NCCL log: no `NCCL INFO`/`NCCL WARN` line and no NCCL error text (run the job with NCCL_DEBUG=INFO)",
            names.join(", ")
        );
    }
    print!("{}", render_text(&explain(&log)));
    Ok(0)
}
