//! `nccl-bench configs`: the transport configurations a `sweep` or `run` would use,
//! with their variables. `--names` prints one name per line for scripts that loop
//! over the configs of a file (one `run` each).

use anyhow::Result;

use crate::cli::ConfigsArgs;
use crate::config::transport::{builtin_configs, default_configs};
use crate::config::{select_configs, TransportConfig};

pub fn run(args: &ConfigsArgs) -> Result<u8> {
    let listing_presets = args.config.is_empty() && args.transports.is_empty();
    let (configs, warnings) = if listing_presets {
        (builtin_configs(), Vec::new())
    } else {
        let chosen = select_configs(&args.config, &args.transports)?;
        (chosen.configs, chosen.warnings)
    };
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if args.names {
        for c in &configs {
            println!("{}", c.name);
        }
        return Ok(0);
    }
    let defaults: Vec<String> = default_configs().into_iter().map(|c| c.name).collect();
    print!(
        "{}",
        describe(&configs, listing_presets.then_some(&defaults[..]))
    );
    Ok(0)
}

/// One block per config: name (starred when `sweep` runs it by default), what it
/// is, and the variables it sets.
fn describe(configs: &[TransportConfig], defaults: Option<&[String]>) -> String {
    let mut out = String::new();
    for c in configs {
        let star = match defaults {
            Some(d) if d.contains(&c.name) => " *",
            _ => "",
        };
        out.push_str(&format!("{}{star}\n", c.name));
        crate::units::wrap_into(
            &mut out,
            &c.description,
            crate::units::TERMINAL_WIDTH,
            "    ",
            "      ",
        );
        if c.env.is_empty() {
            out.push_str("    (no variables: NCCL's defaults)\n");
        }
        for (k, v) in &c.env {
            out.push_str(&format!("    {k}={v}\n"));
        }
        if let Some(lib) = &c.nccl_lib {
            out.push_str(&format!("    libnccl: {}\n", lib.display()));
        }
    }
    if defaults.is_some() {
        out.push_str("\n* run by `sweep` when neither --config nor --transports is given\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_described_with_their_variables_and_the_defaults_starred() {
        let defaults: Vec<String> = default_configs().into_iter().map(|c| c.name).collect();
        let text = describe(&builtin_configs(), Some(&defaults));
        assert!(text.starts_with("default *\n"), "{text}");
        assert!(text.contains("shm-off *\n"), "{text}");
        assert!(text.contains("    NCCL_SHM_DISABLE=1\n"), "{text}");
        assert!(
            text.contains("    (no variables: NCCL's defaults)\n"),
            "{text}"
        );
        assert!(text.contains("socket-only\n"), "{text}");
        assert!(!text.contains("socket-only *"), "{text}");
    }
}
