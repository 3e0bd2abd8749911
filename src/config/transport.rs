//! Transport configurations: named sets of NCCL environment variables, read from TOML
//! files (`configs/*.toml`) or taken from the built-in presets (the same files,
//! compiled in). Validation is strict where a mistake would silently measure the
//! wrong thing: unknown keys and bad values are errors naming the line; an `NCCL_*`
//! variable NCCL does not know is a warning, because NCCL ignores it without a word.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use thiserror::Error;
use toml::Spanned;

use crate::nccl::register::Registration;
use crate::nccl::vars;
use crate::ops::collective::Collective;

/// One transport configuration: what a sweep runs in its own fresh processes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransportConfig {
    pub name: String,
    pub description: String,
    /// Environment set for the workers (on top of the caller's).
    pub env: BTreeMap<String, String>,
    /// A libnccl of its own (NCCL backend), to compare NCCL builds in one sweep;
    /// relative paths are relative to the TOML file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl_lib: Option<std::path::PathBuf>,
    /// Where it was defined: a path, or `built-in:<file>`.
    pub source: String,
    /// The devices its ranks run on, rank by rank (GPUs; cores on the host
    /// backend): set for each pair of `sweep --pairs`. Otherwise rank r uses device r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<usize>>,
    /// The ranks of a cluster job its group uses, in order (each pair of nodes of
    /// `run --pairs`). Otherwise every rank of the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<u32>>,
    /// How its ranks register their buffers with NCCL (`register = "symmetric"`);
    /// unset: as `--register` says for the whole sweep (none by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register: Option<Registration>,
}

impl TransportConfig {
    /// Whether this configuration disables NCCL's shared-memory transport.
    pub fn shm_disabled(&self) -> bool {
        self.env
            .get("NCCL_SHM_DISABLE")
            .is_some_and(|v| env_truthy(v))
    }
}

/// NCCL reads integer parameters with strtoll: "1" disables, "0" does not.
pub fn env_truthy(value: &str) -> bool {
    value.trim().parse::<i64>().map(|v| v != 0).unwrap_or(false)
}

/// The opposite reading, for the parameters that enable (`NCCL_NVLS_ENABLE=0`
/// turns NVLS off): only an integer 0 is off.
pub fn env_falsy(value: &str) -> bool {
    value.trim().parse::<i64>() == Ok(0)
}

#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    #[error("{origin}: {message}")]
    Toml { origin: String, message: String },
    #[error("{origin}:{line}: {message}")]
    Invalid {
        origin: String,
        line: usize,
        message: String,
    },
    #[error("cannot read transport config {path}: {message}")]
    Io { path: String, message: String },
    #[error("unknown transport configuration '{name}' (known: {known})")]
    UnknownName { name: String, known: String },
    #[error("transport configuration '{name}' is given twice ({first} and {second})")]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
    #[error("{origin}: no [[config]] entries")]
    Empty { origin: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    /// The collectives a sweep of this file measures unless `--coll` says.
    #[serde(default)]
    collectives: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    config: Vec<RawConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    env: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    #[serde(default)]
    nccl_lib: Option<String>,
    #[serde(default)]
    register: Option<Spanned<String>>,
}

/// The presets compiled into the binary, usable by name with `--transports`.
pub const BUILTIN_FILES: [(&str, &str); 3] = [
    (
        "shm-decision.toml",
        include_str!("../../configs/shm-decision.toml"),
    ),
    (
        "transports.toml",
        include_str!("../../configs/transports.toml"),
    ),
    (
        "algorithms.toml",
        include_str!("../../configs/algorithms.toml"),
    ),
];

/// The default sweep: every configuration of `configs/shm-decision.toml`.
pub fn default_configs() -> Vec<TransportConfig> {
    let (name, text) = BUILTIN_FILES[0];
    parse(text, &format!("built-in:{name}"))
        .map(|parsed| parsed.configs)
        .unwrap_or_default()
}

/// Every built-in preset, each name once (the files agree where they overlap; a unit
/// test holds them to that).
pub fn builtin_configs() -> Vec<TransportConfig> {
    let mut all: Vec<TransportConfig> = Vec::new();
    for (name, text) in BUILTIN_FILES {
        if let Ok(parsed) = parse(text, &format!("built-in:{name}")) {
            for c in parsed.configs {
                if !all.iter().any(|known| known.name == c.name) {
                    all.push(c);
                }
            }
        }
    }
    all
}

/// A parsed file: its configurations and the warnings it deserves.
#[derive(Debug, Default)]
pub struct ParsedConfigs {
    pub configs: Vec<TransportConfig>,
    pub warnings: Vec<String>,
    /// The file's `collectives = [...]`, where it names them.
    pub collectives: Option<Vec<Collective>>,
}

/// Reads and validates a transport configuration file.
pub fn load(path: &Path) -> Result<ParsedConfigs, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses and validates the text of a transport configuration file.
pub fn parse(text: &str, origin: &str) -> Result<ParsedConfigs, ConfigError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| ConfigError::Toml {
        origin: origin.to_string(),
        message: e.to_string().trim_end().to_string(),
    })?;
    if raw.config.is_empty() {
        return Err(ConfigError::Empty {
            origin: origin.to_string(),
        });
    }
    let invalid = |offset: usize, message: String| ConfigError::Invalid {
        origin: origin.to_string(),
        line: line_of(text, offset),
        message,
    };
    let mut parsed = ParsedConfigs::default();
    if let Some(names) = raw.collectives {
        let at = names.span().start;
        let mut list = Vec::new();
        for name in names.get_ref() {
            for c in Collective::parse_list(name).map_err(|e| invalid(at, e))? {
                if !list.contains(&c) {
                    list.push(c);
                }
            }
        }
        if list.is_empty() {
            return Err(invalid(at, "collectives = [] names no collective".into()));
        }
        parsed.collectives = Some(list);
    }
    for rc in raw.config {
        let name = rc.name.get_ref().clone();
        if let Err(why) = check_name(&name) {
            return Err(invalid(rc.name.span().start, why));
        }
        if parsed.configs.iter().any(|c| c.name == name) {
            return Err(invalid(
                rc.name.span().start,
                format!("config name '{name}' is defined twice in this file"),
            ));
        }
        let mut env = BTreeMap::new();
        for (key, value) in rc.env {
            let var = key.get_ref();
            let line = line_of(text, key.span().start);
            if !is_env_name(var) {
                return Err(invalid(
                    key.span().start,
                    format!("'{var}' is not a valid environment variable name"),
                ));
            }
            let value_text = match value.get_ref() {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => u8::from(*b).to_string(),
                other => {
                    return Err(invalid(
                        value.span().start,
                        format!(
                            "{var} must be a string, an integer or a boolean, not {}",
                            other.type_str()
                        ),
                    ))
                }
            };
            if let Some(warning) = vars::check(var) {
                parsed
                    .warnings
                    .push(format!("{origin}:{line}: config '{name}': {warning}"));
            }
            env.insert(var.clone(), value_text);
        }
        let nccl_lib = rc.nccl_lib.map(|p| {
            let p = std::path::PathBuf::from(p);
            match Path::new(origin).parent() {
                Some(dir) if p.is_relative() && !origin.starts_with("built-in:") => dir.join(p),
                _ => p,
            }
        });
        let register = match rc.register {
            Some(r) => Some(
                Registration::parse(r.get_ref())
                    .map_err(|why| invalid(r.span().start, format!("config '{name}': {why}")))?,
            ),
            None => None,
        };
        parsed.configs.push(TransportConfig {
            name,
            description: rc.description,
            env,
            nccl_lib,
            source: origin.to_string(),
            devices: None,
            ranks: None,
            register,
        });
    }
    Ok(parsed)
}

/// Config names end up in file names, CSV cells and histogram tags.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid config name '{name}': use letters, digits, '-', '_' and '.', starting with a letter or digit (at most 64)"
        ))
    }
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Picks configurations by name: from the given files first, then the presets.
pub fn select(
    names: &[String],
    from_files: &[TransportConfig],
) -> Result<Vec<TransportConfig>, ConfigError> {
    let builtins = builtin_configs();
    let mut chosen: Vec<TransportConfig> = Vec::new();
    for name in names {
        let found = from_files
            .iter()
            .find(|c| &c.name == name)
            .or_else(|| builtins.iter().find(|c| &c.name == name));
        match found {
            Some(c) => push_unique(&mut chosen, c.clone())?,
            None => {
                let mut known: Vec<&str> = from_files.iter().map(|c| c.name.as_str()).collect();
                known.extend(builtins.iter().map(|c| c.name.as_str()));
                known.dedup();
                return Err(ConfigError::UnknownName {
                    name: name.clone(),
                    known: known.join(", "),
                });
            }
        }
    }
    Ok(chosen)
}

/// Adds a configuration, refusing a second one of the same name.
pub fn push_unique(
    list: &mut Vec<TransportConfig>,
    config: TransportConfig,
) -> Result<(), ConfigError> {
    if let Some(existing) = list.iter().find(|c| c.name == config.name) {
        return Err(ConfigError::Duplicate {
            name: config.name.clone(),
            first: existing.source.clone(),
            second: config.source,
        });
    }
    list.push(config);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_files_parse_and_agree_where_they_overlap() {
        let mut seen: BTreeMap<String, TransportConfig> = BTreeMap::new();
        for (file, text) in BUILTIN_FILES {
            let parsed = parse(text, file).unwrap();
            assert!(parsed.warnings.is_empty(), "{file}: {:?}", parsed.warnings);
            for c in parsed.configs {
                if let Some(prev) = seen.get(&c.name) {
                    assert_eq!(prev.env, c.env, "{} differs between files", c.name);
                    assert_eq!(prev.description, c.description);
                }
                seen.insert(c.name.clone(), c);
            }
        }
        let defaults: Vec<String> = default_configs().into_iter().map(|c| c.name).collect();
        assert_eq!(defaults, ["default", "shm-off", "p2p-off", "net-only"]);
        let all = builtin_configs();
        for needed in ["ib-off", "socket-only", "nvls-off", "proto-ll", "algo-ring"] {
            assert!(all.iter().any(|c| c.name == needed), "{needed} missing");
        }
        let net_only = all.iter().find(|c| c.name == "net-only").unwrap();
        assert!(net_only.shm_disabled());
        assert_eq!(net_only.env["NCCL_P2P_DISABLE"], "1");
    }

    #[test]
    fn a_config_may_name_its_own_libnccl() {
        let text = "[[config]]\nname = \"old\"\nnccl_lib = \"nccl-2.19/libnccl.so.2\"\n[[config]]\nname = \"abs\"\nnccl_lib = \"/opt/nccl/libnccl.so.2\"\n";
        let parsed = parse(text, "/etc/bench/c.toml").unwrap();
        assert_eq!(
            parsed.configs[0].nccl_lib.as_deref(),
            Some(Path::new("/etc/bench/nccl-2.19/libnccl.so.2"))
        );
        assert_eq!(
            parsed.configs[1].nccl_lib.as_deref(),
            Some(Path::new("/opt/nccl/libnccl.so.2"))
        );
    }

    #[test]
    fn a_config_may_register_its_buffers_and_a_bad_mode_names_its_line() {
        let text = "[[config]]\nname = \"plain\"\n[[config]]\nname = \"sym\"\nregister = \"symmetric\"\n[[config]]\nname = \"r1\"\nregister = \"1\"\n";
        let parsed = parse(text, "r.toml").unwrap();
        let modes: Vec<_> = parsed.configs.iter().map(|c| c.register).collect();
        assert_eq!(
            modes,
            [
                None,
                Some(Registration::Symmetric),
                Some(Registration::Local)
            ]
        );
        let err = parse(
            "[[config]]\nname = \"w\"\n\nregister = \"window\"\n",
            "r.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("r.toml:4: config 'w': unknown buffer registration 'window'"),
            "{err}"
        );
    }

    #[test]
    fn values_may_be_integers_or_booleans() {
        let text =
            "[[config]]\nname = \"a\"\nenv = { NCCL_SHM_DISABLE = 1, NCCL_NVLS_ENABLE = false }\n";
        let parsed = parse(text, "t.toml").unwrap();
        let env = &parsed.configs[0].env;
        assert_eq!(env["NCCL_SHM_DISABLE"], "1");
        assert_eq!(env["NCCL_NVLS_ENABLE"], "0");
        assert!(parsed.configs[0].shm_disabled());
    }

    #[test]
    fn unknown_key_is_an_error_naming_key_and_line() {
        let text = "[[config]]\nname = \"a\"\ndescripton = \"typo\"\n";
        let err = parse(text, "t.toml").unwrap_err().to_string();
        assert!(err.contains("descripton"), "{err}");
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn broken_toml_is_an_error_with_its_line() {
        let err = parse("[[config]]\nname = \"a\nenv = {}\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("t.toml: "), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn bad_values_and_names_are_errors_with_the_line() {
        let text = "[[config]]\nname = \"a\"\n\n[config.env]\nNCCL_ALGO = [\"Ring\"]\n";
        assert_eq!(
            parse(text, "t.toml").unwrap_err().to_string(),
            "t.toml:5: NCCL_ALGO must be a string, an integer or a boolean, not array"
        );
        let text = "[[config]]\nname = \"has space\"\n";
        let err = parse(text, "t.toml").unwrap_err().to_string();
        assert!(
            err.starts_with("t.toml:2: invalid config name 'has space'"),
            "{err}"
        );
        let text = "[[config]]\nname = \"a\"\n[[config]]\nname = \"a\"\n";
        assert_eq!(
            parse(text, "t.toml").unwrap_err().to_string(),
            "t.toml:4: config name 'a' is defined twice in this file"
        );
        assert!(matches!(
            parse("", "t.toml"),
            Err(ConfigError::Empty { .. })
        ));
    }

    #[test]
    fn unknown_nccl_variable_is_a_warning_not_an_error() {
        let text = "[[config]]\nname = \"blog\"\nenv = { NCCL_SHM_USE_CUDA_MEMORY = \"1\", MY_VAR = \"x\" }\n";
        let parsed = parse(text, "t.toml").unwrap();
        assert_eq!(parsed.configs.len(), 1);
        assert_eq!(parsed.warnings.len(), 1, "{:?}", parsed.warnings);
        assert!(parsed.warnings[0].starts_with("t.toml:3: config 'blog': "));
        assert!(parsed.warnings[0].contains("NCCL_SHM_USE_CUDA_MEMORY"));
    }

    #[test]
    fn selection_prefers_files_then_presets_and_names_the_unknown() {
        let file = parse(
            "[[config]]\nname = \"shm-off\"\ndescription = \"mine\"\nenv = { NCCL_SHM_DISABLE = \"1\" }\n",
            "mine.toml",
        )
        .unwrap()
        .configs;
        let chosen = select(&["shm-off".into(), "ib-off".into()], &file).unwrap();
        assert_eq!(chosen[0].source, "mine.toml");
        assert_eq!(chosen[1].source, "built-in:transports.toml");
        let err = select(&["shm-of".into()], &file).unwrap_err().to_string();
        assert!(
            err.starts_with("unknown transport configuration 'shm-of' (known: shm-off"),
            "{err}"
        );
        let dup = select(&["ib-off".into(), "ib-off".into()], &file).unwrap_err();
        assert!(matches!(dup, ConfigError::Duplicate { .. }));
    }
}
