//! `nccl-bench explain`: reads what people paste (NCCL logs, PyTorch errors, nccl-tests
//! outputs; one file per rank or all in one) and prints the findings first, each with
//! its cause, evidence, fix and what not to do, then what the log shows. Exit 0 when
//! no finding is an error, 1 when one is, 2 for input with nothing to read.

use std::io::Read;

use anyhow::{bail, Context, Result};

use crate::cli::ExplainArgs;
use crate::nccl::explain::{self, explain_inputs, is_explainable, render_text, Input, Options};

/// Exit code when a finding is an error.
pub const EXIT_ERROR_FOUND: u8 = 1;

pub fn run(args: &ExplainArgs) -> Result<u8> {
    let mut texts: Vec<(String, String)> = Vec::new();
    for path in &args.files {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read standard input")?;
            texts.push(("standard input".to_string(), text));
        } else {
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            texts.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    let inputs: Vec<Input> = texts
        .iter()
        .map(|(name, text)| Input { name, text })
        .collect();
    if !is_explainable(&inputs) {
        let names: Vec<&str> = inputs.iter().map(|i| i.name).collect();
        bail!(
            "{} does not look like an NCCL log, a PyTorch distributed error or an nccl-tests output: no NCCL, torch.distributed, nccl-tests or CUDA line in it (run the job with NCCL_DEBUG=INFO)",
            names.join(", ")
        );
    }
    let options = Options {
        env: args.env.clone(),
    };
    let e = explain_inputs(&inputs, &options);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&e)?);
    } else {
        print!("{}", render_text(&e));
    }
    Ok(exit_code(&e))
}

/// 0 when no finding is an error, 1 when one is.
pub fn exit_code(e: &explain::Explanation) -> u8 {
    if e.has_error() {
        EXIT_ERROR_FOUND
    } else {
        0
    }
}
