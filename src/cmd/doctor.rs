//! `nccl-bench doctor`: checks the machine before NCCL runs on it (/dev/shm, leftover
//! segments, container, NCCL variables, network, GPUs, libnccl) and prints one line per
//! check, or the JSON document with `--json`. Exit 0 when nothing failed, 1 when a
//! check failed.

use anyhow::{bail, Result};

use crate::cli::DoctorArgs;
use crate::doctor::{render_json, render_text, run_checks, Options, Root};

pub fn run(args: &DoctorArgs) -> Result<u8> {
    let root = match &args.root {
        Some(dir) if !dir.is_dir() => bail!("--root {} is not a directory", dir.display()),
        Some(dir) => Root::fake_with_process_env(dir),
        None => Root::this_machine(),
    };
    let options = Options {
        local_ranks: args.gpus,
        shm_dir: args.shm_dir.clone(),
        clean: args.clean,
        nccl_lib: args.nccl_lib.clone(),
    };
    let report = run_checks(&root, &options);
    if args.json {
        print!("{}", render_json(&report));
    } else {
        print!("{}", render_text(&report));
    }
    Ok(report.exit_code())
}
