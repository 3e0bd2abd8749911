//! User buffer registration, as nccl-tests' `-R` asks for it: none (`-R 0`), local
//! (`-R 1`, `ncclCommRegister` on the send and receive buffers, NCCL 2.19+) or
//! symmetric windows (`-R 2`, `ncclCommWindowRegister` with `NCCL_WIN_COLL_SYMMETRIC`,
//! NCCL 2.27+). Registered buffers come from `ncclMemAlloc` (cuMem memory NCCL can map
//! into its peers), as nccl-tests allocates them from 2.19.
//!
//! What registration changes, from NCCL's sources: a local registration lets NCCL
//! move a collective's bytes from and to the user's buffers without its own staging
//! copies where the transport can map them (P2P IPC, NVLS, the network); a symmetric
//! window, on one node whose GPUs all reach each other directly over P2P with cuMem
//! on (`comm->symmetricSupport`), lets a lone all-reduce, all-gather or
//! reduce-scatter of a type and operator the symmetric kernels implement run one of
//! them (`AllReduce_AGxLL_R`, ..., logged as `<Coll> [Symmetric]: N Bytes -> Kernel
//! ...`). Where it cannot, NCCL registers nothing and says nothing: the TUNING lines
//! are the evidence of what ran.
//!
//! nccl-tests quietly downgrades `-R 2` to local registration before 2.27 and
//! ignores `-R` before 2.19; a benchmark that did that would label a case with what
//! it did not run, so a library without the calls refuses the sweep
//! ([`Registration::missing_call`]).

use std::fmt;

use super::NcclVersion;

/// How a config's ranks register their buffers with NCCL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Registration {
    /// Plain device buffers, nothing registered (nccl-tests' default, `-R 0`).
    #[default]
    None,
    /// `ncclCommRegister` on each rank's send and receive buffers (`-R 1`).
    Local,
    /// `ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC)`, a collective call
    /// (`-R 2`).
    Symmetric,
}

/// `NCCL_WIN_COLL_SYMMETRIC` (nccl.h, 2.27+).
pub const WIN_COLL_SYMMETRIC: i32 = 0x01;

impl Registration {
    pub const ALL: [Registration; 3] = [
        Registration::None,
        Registration::Local,
        Registration::Symmetric,
    ];

    /// The name configs, flags, the manifest and the CSV use.
    pub fn name(self) -> &'static str {
        match self {
            Registration::None => "none",
            Registration::Local => "local",
            Registration::Symmetric => "symmetric",
        }
    }

    /// nccl-tests' `-R` value for the same thing.
    pub fn nccl_tests_flag(self) -> u8 {
        match self {
            Registration::None => 0,
            Registration::Local => 1,
            Registration::Symmetric => 2,
        }
    }

    /// Reads a name, or nccl-tests' number (`0`, `1`, `2`).
    pub fn parse(text: &str) -> Result<Registration, String> {
        let t = text.trim().to_ascii_lowercase();
        Registration::ALL
            .into_iter()
            .find(|r| r.name() == t || r.nccl_tests_flag().to_string() == t)
            .ok_or_else(|| {
                format!(
                    "unknown buffer registration '{text}' (expected none, local or symmetric; or nccl-tests' -R 0, 1 or 2)"
                )
            })
    }

    /// The calls a library needs for this registration, in the order a rank makes
    /// them, each with the first release that has it.
    pub fn calls(self) -> &'static [(&'static str, (u32, u32))] {
        const ALLOC: (&str, (u32, u32)) = ("ncclMemAlloc", (2, 19));
        const FREE: (&str, (u32, u32)) = ("ncclMemFree", (2, 19));
        match self {
            Registration::None => &[],
            Registration::Local => &[
                ALLOC,
                ("ncclCommRegister", (2, 19)),
                ("ncclCommDeregister", (2, 19)),
                FREE,
            ],
            Registration::Symmetric => &[
                ALLOC,
                ("ncclCommWindowRegister", (2, 27)),
                ("ncclCommWindowDeregister", (2, 27)),
                FREE,
            ],
        }
    }

    /// Why a library of `version` that lacks `missing` (names from
    /// [`Registration::calls`]) cannot register this way: the reason a sweep is
    /// refused with. `None` where it can.
    pub fn missing_call(self, version: Option<NcclVersion>, missing: &[&str]) -> Option<String> {
        let first = missing.first()?;
        let release = version
            .map(|v| format!("NCCL {v}"))
            .unwrap_or("this library".into());
        let need = self
            .calls()
            .iter()
            .find(|(name, _)| name == first)
            .map(|(_, (x, y))| format!(" (NCCL {x}.{y} and later have it)"))
            .unwrap_or_default();
        Some(format!(
            "--register {} needs {first}, which {release} does not export{need}; nccl-tests would quietly run something else (-R {} is {} there), so nccl-bench does not",
            self.name(),
            self.nccl_tests_flag(),
            match self {
                Registration::Symmetric => "local registration before 2.27, nothing before 2.19",
                _ => "ignored before 2.19",
            }
        ))
    }
}

/// The note of a case whose buffers were in symmetric windows but that NCCL (2.27+)
/// ran with `algo`, not a symmetric kernel, for function `func` (NCCL's name): NCCL
/// says nothing when it cannot use the windows (from 2.29 it even returns no window),
/// so the case says it. `None` where a symmetric kernel ran, or none could have.
pub fn unused_windows_note(
    register: Registration,
    version: Option<NcclVersion>,
    func: &str,
    algo: &str,
) -> Option<String> {
    let kernels = matches!(func, "AllReduce" | "AllGather" | "ReduceScatter");
    let since = version.is_some_and(|v| (v.major, v.minor) >= (2, 27));
    (register == Registration::Symmetric
        && since
        && kernels
        && !algo.is_empty()
        && algo != "Symmetric"
        && algo != "CE")
        .then(|| {
            format!(
                "buffers in symmetric windows, yet NCCL ran {algo}, not a symmetric kernel: it needs one node whose GPUs all reach each other over P2P, cuMem on, and a type and operator its kernels implement (sums of floating types but double for {func})"
            )
        })
}

impl fmt::Display for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Registration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Registration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Registration, D::Error> {
        let text = String::deserialize(d)?;
        Registration::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_nccl_tests_numbers_read_back() {
        for r in Registration::ALL {
            assert_eq!(Registration::parse(r.name()), Ok(r));
            assert_eq!(Registration::parse(&r.nccl_tests_flag().to_string()), Ok(r));
        }
        assert_eq!(
            Registration::parse(" Symmetric "),
            Ok(Registration::Symmetric)
        );
        let e = Registration::parse("window").unwrap_err();
        assert!(
            e.contains("'window'") && e.contains("none, local or symmetric"),
            "{e}"
        );
        assert!(Registration::parse("3").is_err());
    }

    #[test]
    fn windows_nccl_did_not_use_are_said_only_where_a_kernel_could_have_run() {
        let v = NcclVersion::parse("2.28.9");
        let note = unused_windows_note(Registration::Symmetric, v, "AllReduce", "Ring").unwrap();
        assert!(
            note.starts_with("buffers in symmetric windows, yet NCCL ran Ring"),
            "{note}"
        );
        for (r, v, func, algo) in [
            (Registration::Symmetric, v, "AllReduce", "Symmetric"),
            (Registration::Symmetric, v, "AllGather", "CE"),
            (Registration::Symmetric, v, "Broadcast", "Ring"),
            (Registration::Symmetric, v, "AllReduce", ""),
            (Registration::Local, v, "AllReduce", "Ring"),
            (
                Registration::Symmetric,
                NcclVersion::parse("2.26.6"),
                "AllReduce",
                "Ring",
            ),
        ] {
            assert_eq!(
                unused_windows_note(r, v, func, algo),
                None,
                "{r} {func} {algo}"
            );
        }
    }

    #[test]
    fn a_library_without_the_calls_is_refused_with_the_release_that_has_them() {
        let v = NcclVersion::parse("2.26.6");
        let why = Registration::Symmetric
            .missing_call(v, &["ncclCommWindowRegister"])
            .unwrap();
        assert!(
            why.contains("ncclCommWindowRegister") && why.contains("NCCL 2.26.6"),
            "{why}"
        );
        assert!(why.contains("NCCL 2.27 and later"), "{why}");
        let why = Registration::Local
            .missing_call(None, &["ncclMemAlloc"])
            .unwrap();
        assert!(
            why.contains("2.19") && why.contains("this library"),
            "{why}"
        );
        assert_eq!(Registration::Local.missing_call(v, &[]), None);
        assert!(Registration::None.calls().is_empty());
    }
}
