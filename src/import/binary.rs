//! Which nccl-tests binary produced an output, and so which collective it measured:
//! read from what the output itself names, never guessed from the table's shape. In
//! text that is nccl-tests' own banner (`# Collective test starting: alltoall_perf`,
//! printed since 2025, and its `concluded` twin) and the command line that ran the
//! binary; in `-J` JSON the binary's `args`. Every binary is named `<collective>_perf`
//! (`_perf_mpi` when built with `NAME_SUFFIX=_mpi`). An output that names none is an
//! all_reduce_perf one (what nccl-tests' older outputs are, as a rule), and says so.

use super::run::ImportError;
use crate::ops::collective::Collective;

/// Applies `import --coll`: the collective of an output that names no binary (it is
/// then as if the output named `<collective>_perf`). An output that names its binary
/// keeps it, and a `--coll` that differs is an error: the output knows better.
pub fn name_collective(run: &mut super::ImportedRun, collective: Collective) -> Result<(), String> {
    match &run.binary {
        Some(b) if run.collective != collective => Err(format!(
            "--coll {collective}: the output names {b}, which measures {}",
            run.collective
        )),
        Some(_) => Ok(()),
        None => {
            run.collective = collective;
            run.binary = Some(format!("{}_perf", collective.name()));
            Ok(())
        }
    }
}

/// The binary's file name when `word` names an nccl-tests binary (`./build/alltoall_perf`,
/// `all_gather_perf_mpi`, quoted or in backticks): `alltoall_perf`.
pub(crate) fn binary_name(word: &str) -> Option<&str> {
    let w = word.trim_matches(|c| c == '`' || c == '"' || c == '\'');
    let base = w.rsplit('/').next().unwrap_or(w);
    let stem = base
        .strip_suffix("_perf")
        .or_else(|| base.strip_suffix("_perf_mpi"))?;
    (!stem.is_empty()).then_some(base)
}

/// The collective a binary measures (`alltoall_perf` -> alltoall).
fn collective_of(binary: &str) -> Option<Collective> {
    let stem = binary
        .strip_suffix("_mpi")
        .unwrap_or(binary)
        .strip_suffix("_perf")?;
    // Exactly nccl-tests' names: `Collective::parse` would also take `allgather`.
    Collective::ALL.into_iter().find(|c| c.name() == stem)
}

/// One place where an output names its binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mention {
    /// Where, for messages: `line 3`, `args[0] of document 2`.
    pub(crate) at: String,
    pub(crate) binary: String,
}

/// The binary an output's mentions agree on and its collective; `None` when there are
/// none. Two binaries of different collectives, or one that is no collective
/// nccl-bench knows (`alltoallv_perf`, `hypercube_perf`), are errors: the rows could
/// not be labelled truthfully.
pub(crate) fn named_binary(
    mentions: &[Mention],
) -> Result<Option<(Collective, String)>, ImportError> {
    let mut found: Option<(Collective, &Mention)> = None;
    for m in mentions {
        let Some(collective) = collective_of(&m.binary) else {
            return Err(ImportError::UnknownBinary {
                at: m.at.clone(),
                binary: m.binary.clone(),
                known: Collective::ALL
                    .iter()
                    .map(|c| format!("{c}_perf"))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        match found {
            None => found = Some((collective, m)),
            Some((first, by)) if first != collective => {
                return Err(ImportError::SeveralBinaries {
                    first_at: by.at.clone(),
                    first: by.binary.clone(),
                    second_at: m.at.clone(),
                    second: m.binary.clone(),
                })
            }
            Some(_) => {}
        }
    }
    Ok(found.map(|(c, m)| (c, m.binary.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: usize, binary: &str) -> Mention {
        Mention {
            at: format!("line {line}"),
            binary: binary.to_string(),
        }
    }

    #[test]
    fn binary_names_and_their_collectives() {
        assert_eq!(binary_name("./build/alltoall_perf"), Some("alltoall_perf"));
        assert_eq!(
            binary_name("`/opt/nccl-tests/build/all_gather_perf_mpi`"),
            Some("all_gather_perf_mpi")
        );
        assert_eq!(binary_name("_perf"), None);
        assert_eq!(binary_name("perf"), None);
        assert_eq!(binary_name("./run_nccl_tests.sh"), None);
        for c in Collective::ALL {
            assert_eq!(collective_of(&format!("{c}_perf")), Some(c));
            assert_eq!(collective_of(&format!("{c}_perf_mpi")), Some(c));
        }
        assert_eq!(collective_of("allgather_perf"), None);
        assert_eq!(collective_of("alltoallv_perf"), None);
    }

    #[test]
    fn mentions_must_agree_on_one_known_binary() {
        assert_eq!(named_binary(&[]), Ok(None));
        let same = [at(1, "alltoall_perf"), at(9, "alltoall_perf_mpi")];
        assert_eq!(
            named_binary(&same),
            Ok(Some((Collective::AllToAll, "alltoall_perf".to_string())))
        );
        let two = [
            at(1, "alltoall_perf"),
            at(2, "alltoall_perf"),
            at(40, "all_gather_perf"),
        ];
        let err = named_binary(&two).unwrap_err().to_string();
        assert!(
            err.contains("line 1 names alltoall_perf but line 40 names all_gather_perf"),
            "{err}"
        );
        let err = named_binary(&[at(3, "hypercube_perf")])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("line 3: hypercube_perf is not a collective nccl-bench knows"),
            "{err}"
        );
        assert!(err.contains("alltoall_perf, sendrecv_perf"), "{err}");
    }
}
