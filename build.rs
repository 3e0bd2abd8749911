//! Records the git commit nccl-bench was built from (for the run manifest).
//!
//! Cargo rebuilds every target of the package whenever this script runs again, so it
//! runs again only when the commit changes (HEAD, the branch it names, packed refs),
//! not when git's index does: `git add` must not recompile the crate. The revision is
//! the commit alone; changes not committed yet are not tracked.

use std::path::Path;
use std::process::Command;

fn main() {
    // A path that does not exist would make Cargo run this script on every build:
    // name only those that do (none outside a git checkout, where the revision is
    // "unknown" and stays so).
    println!("cargo:rerun-if-changed=build.rs");
    let git = Path::new(".git");
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    // HEAD names a branch (`ref: refs/heads/main`): that branch's file moves with
    // each commit.
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
        if let Some(branch) = head.trim().strip_prefix("ref: ") {
            watched.push(branch.to_string());
        }
    }
    for file in watched {
        if git.join(&file).is_file() {
            println!("cargo:rerun-if-changed=.git/{file}");
        }
    }
    let rev = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=NCCL_BENCH_GIT_REV={rev}");
}
