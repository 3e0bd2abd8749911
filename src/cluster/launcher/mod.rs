//! Where this process sits in a multi-process run: its rank, the world size, its rank
//! on its node, the nodes of the job and where rank 0 listens. `nccl-bench run` starts
//! one process per rank under a cluster launcher (srun, mpirun/mpiexec, torchrun), and
//! each launcher describes the layout in its own environment variables; `--rank`,
//! `--world-size` and `--local-rank` override them one by one. The environment comes
//! in as a lookup function, so this module never reads the process environment and
//! tests say exactly what it holds.

use std::fmt;

use thiserror::Error;

use super::hostlist::{self, HostlistError};

/// What told us this process's rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// `--rank` on the command line.
    Flags,
    /// `RANK`/`WORLD_SIZE`, set by torchrun (and by hand, with `MASTER_ADDR`).
    Torchrun,
    /// `OMPI_COMM_WORLD_*`, set by Open MPI's mpirun (or srun with PMIx).
    OpenMpi,
    /// `PMI_RANK`/`PMI_SIZE`, set by MPICH's and Intel MPI's mpiexec (Hydra) and by
    /// srun's PMI-2 plugin.
    Mpich,
    /// `SLURM_PROCID`/`SLURM_NTASKS`, set by srun.
    Slurm,
}

impl Launcher {
    pub fn name(&self) -> &'static str {
        match self {
            Launcher::Flags => "flags",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Mpich => "MPICH/PMI",
            Launcher::Slurm => "Slurm",
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// This process's place in the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankLayout {
    pub rank: u32,
    pub world_size: u32,
    /// Rank among the processes on this node (which GPU to use).
    pub local_rank: u32,
    /// Index of this node: torchrun's `GROUP_RANK`, or `SLURM_NODEID` when Slurm's
    /// variables describe this process. (`OMPI_COMM_WORLD_NODE_RANK` is a rank within
    /// the node, not a node id.)
    pub node_id: Option<u32>,
    /// The job's hosts from Slurm's node list, in Slurm's order; empty outside Slurm.
    pub nodes: Vec<String>,
    pub launcher: Launcher,
    /// Where rank 0 listens, when anything says so.
    pub master: Option<MasterAddr>,
    /// How each value was found, for `--verbose`.
    pub notes: Vec<String>,
}

/// Where rank 0 listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterAddr {
    pub host: String,
    /// `MASTER_PORT`; `None` lets the caller pick its default.
    pub port: Option<u16>,
    /// Where `host` came from, e.g. "MASTER_ADDR" or "first node of SLURM_JOB_NODELIST".
    pub source: String,
}

/// Values given on the command line; each one beats every launcher variable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overrides {
    pub rank: Option<u32>,
    pub world_size: Option<u32>,
    pub local_rank: Option<u32>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LayoutError {
    #[error("cannot tell this process's rank: no Slurm, Open MPI, MPICH/PMI or torchrun variables (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK) and no --rank/--world-size; run under srun/mpirun/torchrun or pass them")]
    NoLauncher,
    #[error("{flag} is given but not --rank, and no launcher variable gives a rank (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK); pass --rank too")]
    NoRank { flag: &'static str },
    #[error("--rank is given but not --world-size, and no launcher variable gives a world size (SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE, WORLD_SIZE); pass --world-size too")]
    NoWorldSize,
    #[error("{present} is set but {missing} is not ({launcher} sets both): set {missing} or pass {flag}")]
    MissingPartner {
        present: &'static str,
        missing: String,
        launcher: Launcher,
        flag: &'static str,
    },
    #[error("{var}='{value}' is not a valid {what}: expected a non-negative integer")]
    NotANumber {
        var: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("world size is 0 (from {origin}): it must be at least 1")]
    ZeroWorldSize { origin: &'static str },
    #[error("rank {rank} (from {rank_origin}) is not below the world size {world_size} (from {size_origin})")]
    RankOutOfRange {
        rank: u32,
        rank_origin: &'static str,
        world_size: u32,
        size_origin: &'static str,
    },
    #[error("local rank {local_rank} (from {local_origin}) is not below the world size {world_size} (from {size_origin})")]
    LocalRankOutOfRange {
        local_rank: u32,
        local_origin: &'static str,
        world_size: u32,
        size_origin: &'static str,
    },
    #[error("cannot tell this process's local rank: {reason}; pass --local-rank")]
    NoLocalRank { reason: String },
    #[error("node id {node_id} (from {origin}) is not below the number of nodes ({count}) in {list_var}")]
    NodeOutOfRange {
        node_id: u32,
        origin: &'static str,
        count: usize,
        list_var: &'static str,
    },
    #[error("MASTER_PORT='{0}' is not a port number: expected an integer from 1 to 65535")]
    BadPort(String),
    #[error("MASTER_ADDR is set but empty: set it to the host name or address of rank 0's node, or unset it")]
    EmptyMasterAddr,
    #[error("cannot expand {var}='{value}'")]
    Hostlist {
        var: &'static str,
        value: String,
        #[source]
        source: HostlistError,
    },
}

/// The variables one launcher sets for each process it starts. Where a field lists
/// several names, the first one set is used.
struct LauncherVars {
    launcher: Launcher,
    rank: &'static str,
    world_size: &'static [&'static str],
    local_rank: &'static [&'static str],
}

/// Launchers whose variables say this process's rank, highest precedence first
/// (`--rank` beats them all). The rank source picks the launcher, and the world size
/// and local rank come from the same one. Why this order:
/// - mpirun/mpiexec inside a Slurm allocation (an sbatch script) inherit the batch
///   step's `SLURM_PROCID=0` on every rank (or, on other nodes, the ids of mpirun's
///   daemons), so MPI's own variables must win over Slurm's.
/// - torchrun sets `RANK` explicitly for each child, even when torchrun itself runs
///   under srun or mpirun, whose variables then describe the torchrun agent.
/// - `OMPI_COMM_WORLD_*` is Open MPI's own; `PMI_*` is generic (srun's PMI-2 plugin
///   sets it too), so the more specific description wins.
const LAUNCHERS: [LauncherVars; 4] = [
    LauncherVars {
        launcher: Launcher::Torchrun,
        rank: "RANK",
        world_size: &["WORLD_SIZE"],
        local_rank: &["LOCAL_RANK"],
    },
    LauncherVars {
        launcher: Launcher::OpenMpi,
        rank: "OMPI_COMM_WORLD_RANK",
        world_size: &["OMPI_COMM_WORLD_SIZE"],
        local_rank: &["OMPI_COMM_WORLD_LOCAL_RANK"],
    },
    LauncherVars {
        launcher: Launcher::Mpich,
        rank: "PMI_RANK",
        world_size: &["PMI_SIZE"],
        local_rank: &["MPI_LOCALRANKID", "PMI_LOCAL_RANK"],
    },
    SLURM,
];

const SLURM: LauncherVars = LauncherVars {
    launcher: Launcher::Slurm,
    rank: "SLURM_PROCID",
    world_size: &["SLURM_NTASKS", "SLURM_NPROCS"],
    local_rank: &["SLURM_LOCALID"],
};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A number and the variable or flag it came from.
#[derive(Debug, Clone, Copy)]
struct Sourced {
    value: u32,
    origin: &'static str,
}

/// Works out this process's rank layout from the launcher's environment (`env` looks
/// a variable up) and the command-line `overrides`.
pub fn detect(
    env: impl Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<RankLayout, LayoutError> {
    let env: Env = &env;
    let mut notes = Vec::new();
    let chosen = LAUNCHERS.iter().find(|l| env(l.rank).is_some());

    let rank = match (overrides.rank, chosen) {
        (Some(value), _) => flag(env, value, "--rank", chosen.map(|l| l.rank), &mut notes),
        (None, Some(l)) => read(env, &[l.rank], "rank")?.ok_or(LayoutError::NoLauncher)?,
        (None, None) => return Err(no_rank(env, overrides)),
    };
    let world_size = match (overrides.world_size, chosen) {
        (Some(value), _) => {
            let shadowed = chosen
                .and_then(|l| first_set(env, l.world_size))
                .map(|(var, _)| var);
            flag(env, value, "--world-size", shadowed, &mut notes)
        }
        (None, Some(l)) => match read(env, l.world_size, "world size")? {
            Some(size) => size,
            None if overrides.rank.is_some() => return Err(LayoutError::NoWorldSize),
            None => {
                return Err(LayoutError::MissingPartner {
                    present: l.rank,
                    missing: either(l.world_size),
                    launcher: l.launcher,
                    flag: "--world-size",
                })
            }
        },
        (None, None) => return Err(LayoutError::NoWorldSize),
    };
    check_rank(rank, world_size)?;
    notes.push(format!("rank {} from {}", rank.value, rank.origin));
    notes.push(format!(
        "world size {} from {}",
        world_size.value, world_size.origin
    ));

    let slurm_here = slurm_describes(env, rank.value, world_size.value);
    let local_rank = local_rank(env, overrides, chosen, slurm_here, world_size, &mut notes)?;
    if local_rank.value >= world_size.value {
        return Err(LayoutError::LocalRankOutOfRange {
            local_rank: local_rank.value,
            local_origin: local_rank.origin,
            world_size: world_size.value,
            size_origin: world_size.origin,
        });
    }

    let (nodes, nodes_var) = nodes(env, slurm_here, &mut notes)?;
    let node_id = node_id(env, chosen, slurm_here, &nodes, nodes_var, &mut notes)?;
    let master = master(env, &nodes, nodes_var, &mut notes)?;
    notes.extend(ignored(env, chosen, slurm_here));

    Ok(RankLayout {
        rank: rank.value,
        world_size: world_size.value,
        local_rank: local_rank.value,
        node_id,
        nodes,
        launcher: match (overrides.rank, chosen) {
            (None, Some(l)) => l.launcher,
            _ => Launcher::Flags,
        },
        master,
        notes,
    })
}

/// A flag's value; notes the launcher variable it shadows, if one is set.
fn flag(
    env: Env,
    value: u32,
    name: &'static str,
    shadowed: Option<&'static str>,
    notes: &mut Vec<String>,
) -> Sourced {
    if let Some(var) = shadowed {
        if let Some(v) = env(var) {
            notes.push(format!("ignored {var}={v} ({name} takes precedence)"));
        }
    }
    Sourced {
        value,
        origin: name,
    }
}

/// The error when nothing gives a rank: the most specific explanation wins.
fn no_rank(env: Env, overrides: &Overrides) -> LayoutError {
    // A launcher's world size without its rank is a broken environment, not a
    // missing launcher.
    let orphan = LAUNCHERS
        .iter()
        .find_map(|l| first_set(env, l.world_size).map(|(var, _)| (l, var)));
    if let Some((l, var)) = orphan {
        return LayoutError::MissingPartner {
            present: var,
            missing: l.rank.to_string(),
            launcher: l.launcher,
            flag: "--rank",
        };
    }
    match (overrides.world_size, overrides.local_rank) {
        (Some(_), Some(_)) => LayoutError::NoRank {
            flag: "--world-size (with --local-rank)",
        },
        (Some(_), None) => LayoutError::NoRank {
            flag: "--world-size",
        },
        (None, Some(_)) => LayoutError::NoRank {
            flag: "--local-rank",
        },
        (None, None) => LayoutError::NoLauncher,
    }
}

fn check_rank(rank: Sourced, world_size: Sourced) -> Result<(), LayoutError> {
    if world_size.value == 0 {
        return Err(LayoutError::ZeroWorldSize {
            origin: world_size.origin,
        });
    }
    if rank.value >= world_size.value {
        return Err(LayoutError::RankOutOfRange {
            rank: rank.value,
            rank_origin: rank.origin,
            world_size: world_size.value,
            size_origin: world_size.origin,
        });
    }
    Ok(())
}

/// Whether Slurm's variables describe this very process, i.e. srun started it (maybe
/// through an MPI's PMI), so `SLURM_PROCID` and `SLURM_NTASKS` agree with the rank and
/// world size found. Under mpirun in an allocation they belong to the batch step or
/// to mpirun's daemons, and their `SLURM_LOCALID`, `SLURM_NODEID` and step node list
/// describe another process.
fn slurm_describes(env: Env, rank: u32, world_size: u32) -> bool {
    let number = |names: &[&'static str]| {
        first_set(env, names).and_then(|(_, v)| v.trim().parse::<u32>().ok())
    };
    number(&[SLURM.rank]) == Some(rank) && number(SLURM.world_size) == Some(world_size)
}

fn local_rank(
    env: Env,
    overrides: &Overrides,
    chosen: Option<&LauncherVars>,
    slurm_here: bool,
    world_size: Sourced,
    notes: &mut Vec<String>,
) -> Result<Sourced, LayoutError> {
    let own_vars = chosen.map_or(&[][..], |l| l.local_rank);
    if let Some(value) = overrides.local_rank {
        let shadowed = first_set(env, own_vars).map(|(var, _)| var);
        let local = flag(env, value, "--local-rank", shadowed, notes);
        notes.push(format!("local rank {value} from --local-rank"));
        return Ok(local);
    }
    if let Some(local) = read(env, own_vars, "local rank")? {
        notes.push(format!("local rank {} from {}", local.value, local.origin));
        return Ok(local);
    }
    let slurm_chosen = chosen.is_some_and(|l| l.launcher == Launcher::Slurm);
    if slurm_here && !slurm_chosen {
        if let Some(local) = read(env, SLURM.local_rank, "local rank")? {
            notes.push(format!(
                "local rank {} from {} (SLURM_PROCID and SLURM_NTASKS match this process)",
                local.value, local.origin
            ));
            return Ok(local);
        }
    }
    let gives_none = match chosen {
        Some(l) => format!("{} sets no {}", l.launcher, l.local_rank.join(" or ")),
        None => "no launcher variable gives one".to_string(),
    };
    if world_size.value == 1 {
        notes.push(format!(
            "local rank 0: the world size is 1 and {gives_none}"
        ));
        return Ok(Sourced {
            value: 0,
            origin: "world size 1",
        });
    }
    let mut reason = format!("{gives_none}, and the world size is {}", world_size.value);
    if !slurm_here && !slurm_chosen && env(SLURM.local_rank[0]).is_some() {
        reason.push_str(
            " (SLURM_LOCALID is set but belongs to another process: SLURM_PROCID and SLURM_NTASKS do not match this one)",
        );
    }
    Err(LayoutError::NoLocalRank { reason })
}

/// The job's hosts. The step's list (the nodes of this srun, in task order) is only
/// trusted when Slurm describes this process: under mpirun it may be the step of
/// mpirun's daemons, which leaves out the batch node. The job's list is the same for
/// every process of the allocation.
fn nodes(
    env: Env,
    slurm_here: bool,
    notes: &mut Vec<String>,
) -> Result<(Vec<String>, Option<&'static str>), LayoutError> {
    let vars: &[&'static str] = if slurm_here {
        &["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"]
    } else {
        &["SLURM_JOB_NODELIST"]
    };
    let Some((var, value)) = first_set(env, vars) else {
        return Ok((Vec::new(), None));
    };
    let nodes = hostlist::expand(&value).map_err(|source| LayoutError::Hostlist {
        var,
        value: value.clone(),
        source,
    })?;
    notes.push(format!("{} nodes from {var}={value}", nodes.len()));
    Ok((nodes, Some(var)))
}

fn node_id(
    env: Env,
    chosen: Option<&LauncherVars>,
    slurm_here: bool,
    nodes: &[String],
    nodes_var: Option<&'static str>,
    notes: &mut Vec<String>,
) -> Result<Option<u32>, LayoutError> {
    let torchrun = chosen.is_some_and(|l| l.launcher == Launcher::Torchrun);
    if torchrun {
        if let Some(id) = read(env, &["GROUP_RANK"], "node id")? {
            notes.push(format!("node id {} from GROUP_RANK", id.value));
            return Ok(Some(id.value));
        }
    }
    if !slurm_here {
        return Ok(None);
    }
    let Some(id) = read(env, &["SLURM_NODEID"], "node id")? else {
        return Ok(None);
    };
    if let Some(list_var) = nodes_var {
        if id.value as usize >= nodes.len() {
            return Err(LayoutError::NodeOutOfRange {
                node_id: id.value,
                origin: id.origin,
                count: nodes.len(),
                list_var,
            });
        }
    }
    notes.push(format!("node id {} from SLURM_NODEID", id.value));
    Ok(Some(id.value))
}

/// Where rank 0 listens: `MASTER_ADDR` whatever the launcher; else the first node of
/// Slurm's node list (srun places task 0 there, and an sbatch script, hence mpirun,
/// runs there); else, with no node list, the node srun was started from.
fn master(
    env: Env,
    nodes: &[String],
    nodes_var: Option<&'static str>,
    notes: &mut Vec<String>,
) -> Result<Option<MasterAddr>, LayoutError> {
    let port = match env("MASTER_PORT") {
        Some(text) => Some(
            text.trim()
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or(LayoutError::BadPort(text))?,
        ),
        None => None,
    };
    let (host, source) = if let Some(addr) = env("MASTER_ADDR") {
        let addr = addr.trim();
        if addr.is_empty() {
            return Err(LayoutError::EmptyMasterAddr);
        }
        (addr.to_string(), "MASTER_ADDR".to_string())
    } else if let (Some(first), Some(var)) = (nodes.first(), nodes_var) {
        (first.clone(), format!("first node of {var}"))
    } else if let Some(ip) = env("SLURM_LAUNCH_NODE_IPADDR").filter(|ip| !ip.trim().is_empty()) {
        (
            ip.trim().to_string(),
            "SLURM_LAUNCH_NODE_IPADDR (no Slurm node list)".to_string(),
        )
    } else {
        if let Some(p) = port {
            notes.push(format!(
                "MASTER_PORT={p} unused: nothing says which host rank 0 is on (no MASTER_ADDR, no Slurm node list)"
            ));
        }
        return Ok(None);
    };
    notes.push(format!("master {host} from {source}"));
    if let Some(p) = port {
        notes.push(format!("master port {p} from MASTER_PORT"));
    }
    Ok(Some(MasterAddr { host, port, source }))
}

/// Notes for the launcher variables that are set but were not used.
fn ignored(env: Env, chosen: Option<&LauncherVars>, slurm_here: bool) -> Vec<String> {
    let mut notes = Vec::new();
    for l in &LAUNCHERS {
        let is_chosen = chosen.is_some_and(|c| c.launcher == l.launcher);
        // Slurm's variables agree with the chosen ones when Slurm describes this process.
        let agrees = slurm_here && l.launcher == Launcher::Slurm;
        if is_chosen || agrees {
            continue;
        }
        let set = std::iter::once(l.rank)
            .chain(l.world_size.iter().copied())
            .chain(l.local_rank.iter().copied())
            .filter_map(|var| env(var).map(|v| format!("{var}={v}")))
            .collect::<Vec<_>>();
        if set.is_empty() {
            continue;
        }
        // A launcher whose rank is set ranks below the chosen one; any other has only
        // stray variables.
        let why = match chosen {
            Some(c) if env(l.rank).is_some() => format!("{} variables take precedence", c.launcher),
            _ => format!("{} is not set", l.rank),
        };
        notes.push(format!("ignored {} ({why})", set.join(", ")));
    }
    notes
}

/// "A" or "A (or B)", for messages about variables with fallbacks.
fn either(names: &[&str]) -> String {
    match names {
        [first, rest @ ..] if !rest.is_empty() => format!("{first} (or {})", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The first of `names` that is set, with its value.
fn first_set(env: Env, names: &[&'static str]) -> Option<(&'static str, String)> {
    names
        .iter()
        .find_map(|&name| env(name).map(|value| (name, value)))
}

/// The first of `names` that is set, parsed as a number (`what` names it in errors).
fn read(
    env: Env,
    names: &[&'static str],
    what: &'static str,
) -> Result<Option<Sourced>, LayoutError> {
    let Some((var, value)) = first_set(env, names) else {
        return Ok(None);
    };
    match value.trim().parse::<u32>() {
        Ok(n) => Ok(Some(Sourced {
            value: n,
            origin: var,
        })),
        Err(_) => Err(LayoutError::NotANumber { var, value, what }),
    }
}

#[cfg(test)]
mod tests;
