//! Every error of `launcher::detect`, by its exact message.

use super::*;

#[test]
fn error_without_any_launcher_or_flag() {
    assert_eq!(
        error_in(&[("PATH", "/usr/bin")], &Overrides::default()),
        "cannot tell this process's rank: no Slurm, Open MPI, MPICH/PMI or torchrun variables \
         (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK) and no --rank/--world-size; run under \
         srun/mpirun/torchrun or pass them"
    );
}

#[test]
fn error_for_a_non_numeric_value_names_variable_and_value() {
    assert_eq!(
        error_in(
            &[("RANK", "zero"), ("WORLD_SIZE", "2")],
            &Overrides::default()
        ),
        "RANK='zero' is not a valid rank: expected a non-negative integer"
    );
    assert_eq!(
        error_in(
            &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "-1")],
            &Overrides::default()
        ),
        "SLURM_NTASKS='-1' is not a valid world size: expected a non-negative integer"
    );
    assert_eq!(
        error_in(
            &[
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", ""),
            ],
            &Overrides::default()
        ),
        "OMPI_COMM_WORLD_LOCAL_RANK='' is not a valid local rank: expected a non-negative integer"
    );
    let mut vars = vec![("SLURM_NODEID", "x")];
    vars.extend(&SRUN_TASK_5[..3]);
    assert_eq!(
        error_in(&vars, &Overrides::default()),
        "SLURM_NODEID='x' is not a valid node id: expected a non-negative integer"
    );
}

#[test]
fn error_for_rank_not_below_world_size() {
    assert_eq!(
        error_in(
            &[("PMI_RANK", "4"), ("PMI_SIZE", "4")],
            &Overrides::default()
        ),
        "rank 4 (from PMI_RANK) is not below the world size 4 (from PMI_SIZE)"
    );
    let overrides = Overrides {
        world_size: Some(2),
        ..Overrides::default()
    };
    assert_eq!(
        error_in(&[("RANK", "3"), ("WORLD_SIZE", "8")], &overrides),
        "rank 3 (from RANK) is not below the world size 2 (from --world-size)"
    );
}

#[test]
fn error_for_local_rank_not_below_world_size() {
    assert_eq!(
        error_in(
            &[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "2")],
            &Overrides::default()
        ),
        "local rank 2 (from LOCAL_RANK) is not below the world size 2 (from WORLD_SIZE)"
    );
}

#[test]
fn error_for_world_size_zero() {
    assert_eq!(
        error_in(
            &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "0")],
            &Overrides::default()
        ),
        "world size is 0 (from SLURM_NTASKS): it must be at least 1"
    );
}

#[test]
fn error_for_rank_without_world_size() {
    assert_eq!(
        error_in(&[("RANK", "1")], &Overrides::default()),
        "RANK is set but WORLD_SIZE is not (torchrun sets both): set WORLD_SIZE or pass --world-size"
    );
    assert_eq!(
        error_in(&[("SLURM_PROCID", "1")], &Overrides::default()),
        "SLURM_PROCID is set but SLURM_NTASKS (or SLURM_NPROCS) is not (Slurm sets both): set \
         SLURM_NTASKS (or SLURM_NPROCS) or pass --world-size"
    );
}

#[test]
fn error_for_world_size_without_rank() {
    assert_eq!(
        error_in(&[("OMPI_COMM_WORLD_SIZE", "4")], &Overrides::default()),
        "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not (Open MPI sets both): set \
         OMPI_COMM_WORLD_RANK or pass --rank"
    );
}

#[test]
fn error_for_rank_flag_without_world_size() {
    let overrides = Overrides {
        rank: Some(0),
        ..Overrides::default()
    };
    let expected = "--rank is given but not --world-size, and no launcher variable gives a world \
                    size (SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE, WORLD_SIZE); pass --world-size too";
    assert_eq!(error_in(&[], &overrides), expected);
    // The launcher the flag overrides has no world size either.
    assert_eq!(error_in(&[("RANK", "0")], &overrides), expected);
}

#[test]
fn error_for_world_size_flag_without_rank() {
    let overrides = Overrides {
        world_size: Some(2),
        ..Overrides::default()
    };
    assert_eq!(
        error_in(&[], &overrides),
        "--world-size is given but not --rank, and no launcher variable gives a rank \
         (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK); pass --rank too"
    );
}

#[test]
fn error_for_master_port_not_a_port() {
    for port in ["http", "0", "65536", "-1"] {
        assert_eq!(
            error_in(
                &[("MASTER_PORT", port), ("RANK", "0"), ("WORLD_SIZE", "1")],
                &Overrides::default()
            ),
            format!(
                "MASTER_PORT='{port}' is not a port number: expected an integer from 1 to 65535"
            )
        );
    }
}

#[test]
fn error_for_empty_master_addr() {
    assert_eq!(
        error_in(
            &[("MASTER_ADDR", " "), ("RANK", "0"), ("WORLD_SIZE", "1")],
            &Overrides::default()
        ),
        "MASTER_ADDR is set but empty: set it to the host name or address of rank 0's node, or unset it"
    );
}

#[test]
fn error_for_a_malformed_nodelist_keeps_the_hostlist_cause() {
    let result = detect(
        env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_JOB_NODELIST", "node[3-1]"),
        ]),
        &Overrides::default(),
    );
    let error = result.expect_err("reversed range");
    assert_eq!(
        error.to_string(),
        "cannot expand SLURM_JOB_NODELIST='node[3-1]'"
    );
    let cause = std::error::Error::source(&error).map(|c| c.to_string());
    assert_eq!(
        cause.as_deref(),
        Some("reversed range '3-1' in host name 'node[3-1]': the start must not exceed the end")
    );
}

#[test]
fn error_for_node_id_outside_the_nodelist() {
    assert_eq!(
        error_in(
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "1"),
                ("SLURM_LOCALID", "0"),
                ("SLURM_NODEID", "2"),
                ("SLURM_STEP_NODELIST", "n[1-2]"),
            ],
            &Overrides::default()
        ),
        "node id 2 (from SLURM_NODEID) is not below the number of nodes (2) in SLURM_STEP_NODELIST"
    );
}

#[test]
fn differing_world_sizes_across_launchers_are_not_an_error() {
    let layout = detect_in(&[
        ("OMPI_COMM_WORLD_RANK", "1"),
        ("OMPI_COMM_WORLD_SIZE", "16"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("SLURM_PROCID", "1"),
        ("SLURM_NTASKS", "2"),
    ]);
    assert_eq!(layout.world_size, 16);
}
