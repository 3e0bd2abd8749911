//! The function NCCL 2.30.7 names in a WARN line, after `file:line`:
//! `os/linux.cc:843 (ncclOsShmOpen) NCCL WARN ...` (`src/debug.cc` of v2.30.7-1 prints
//! `%s:%d (%s) NCCL WARN` with the caller's `__func__`; every release before prints
//! `%s:%d NCCL WARN`). Each origin the stand-in warns from is mapped to the function
//! that holds that WARN in v2.30.7's sources; where the stand-in's WARN has no twin
//! there (a symbol a release lacks, a simulated crash), to the function of that file
//! the stand-in's call plays.

use super::Version;

/// The first release whose WARN lines name their function.
pub const FROM: Version = (2, 30, 7);

/// Origins (`file.cc:line`) with the function of their WARN in v2.30.7.
const EXACT: &[(&str, &str)] = &[
    ("transport/nvls.cc:379", "nvlsAllocateMem"),
    ("init.cc:1740", "ncclCommInitRankDev"),
    ("init.cc:1480", "initTransportsRank"),
    ("init.cc:1760", "initTransportsRank"),
    ("init.cc:904", "initTransportsRank"),
    ("init.cc:1886", "ncclCommInitRankFunc"),
    ("init.cc:1", "ncclCommWindowRegister"),
    ("misc/socket.cc:49", "socketProgress"),
    ("misc/socket.cc:483", "ncclSocketConnect"),
    ("enqueue.cc:1946", "ArgsCheck"),
    ("enqueue.cc:1848", "topoGetAlgoInfo"),
    ("enqueue.cc:1859", "topoGetAlgoInfo"),
    ("enqueue.cc:1182", "scheduleP2pTasksToPlan"),
    ("enqueue.cc:1500", "hostStreamPlanCallback"),
    ("enqueue.cc:1528", "reclaimPlan"),
    ("group.cc:113", "ncclGroupSimulateEnd"),
    ("graph/tuning.cc:276", "ncclTopoTuneModel"),
];

/// Files whose WARNs the stand-in plays all sit in one function in v2.30.7.
const BY_FILE: &[(&str, &str)] = &[
    ("os/linux.cc", "ncclOsShmOpen"),
    ("misc/shmutils.cc", "ncclShmOpen"),
    ("misc/argcheck.cc", "CudaPtrCheck"),
    ("group.cc", "ncclGroupEndInternal"),
    ("graph/tuning.cc", "parseList"),
    ("bootstrap.cc", "bootstrapInit"),
    ("transport.cc", "ncclTransportP2pSetup"),
    ("transport/nvls.cc", "nvlsAllocateMem"),
    ("register/register.cc", "ncclRegister"),
    ("allocator.cc", "ncclMemAlloc"),
    ("net.cc", "ncclNetInit"),
    ("collectives.cc", "ncclEnqueueCheck"),
    ("init.cc", "initTransportsRank"),
    ("enqueue.cc", "ncclEnqueueCheck"),
];

/// The function of `origin` (`file.cc:line`) in v2.30.7.
pub fn of(origin: &str) -> &'static str {
    if let Some((_, f)) = EXACT.iter().find(|(o, _)| *o == origin) {
        return f;
    }
    let file = origin.rsplit_once(':').map_or(origin, |(file, _)| file);
    BY_FILE
        .iter()
        .find(|(f, _)| *f == file)
        .map_or("ncclCommInitRankFunc", |(_, f)| f)
}

/// `origin` as release `v` prints it before `NCCL WARN`.
pub fn decorate(v: Version, origin: &str) -> String {
    if v >= FROM {
        format!("{origin} ({})", of(origin))
    } else {
        origin.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_2_30_7_names_the_function() {
        assert_eq!(
            decorate((2, 30, 7), "os/linux.cc:843"),
            "os/linux.cc:843 (ncclOsShmOpen)"
        );
        assert_eq!(
            decorate((2, 30, 7), "transport/nvls.cc:379"),
            "transport/nvls.cc:379 (nvlsAllocateMem)"
        );
        assert_eq!(decorate((2, 30, 4), "os/linux.cc:715"), "os/linux.cc:715");
        assert_eq!(of("group.cc:657"), "ncclGroupEndInternal");
        // A segment NCCL could not make: 2.30 moved it to os/linux.cc.
        let (extend, create) = super::super::shm::shm_open_lines((2, 30, 7));
        assert_eq!(
            (decorate((2, 30, 7), extend), decorate((2, 30, 7), create)),
            (
                "os/linux.cc:795 (ncclOsShmOpen)".to_string(),
                "os/linux.cc:843 (ncclOsShmOpen)".to_string()
            )
        );
        assert_eq!(
            super::super::shm::shm_open_lines((2, 27, 7)).1,
            "misc/shmutils.cc:129",
            "the line of the real 2.27 logs"
        );
        assert_eq!(of("somewhere.cc:1"), "ncclCommInitRankFunc");
    }
}
