//! Tests of `launcher::detect`: each launcher alone, precedence when several are
//! present, the local-rank and master-address fallbacks, and every error message.

use super::*;

/// An environment holding exactly `vars`.
fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

fn detect_in(vars: &[(&str, &str)]) -> RankLayout {
    detect_with(vars, &Overrides::default())
}

fn detect_with(vars: &[(&str, &str)], overrides: &Overrides) -> RankLayout {
    detect(env(vars), overrides).unwrap_or_else(|e| panic!("{e}"))
}

fn error_in(vars: &[(&str, &str)], overrides: &Overrides) -> String {
    match detect(env(vars), overrides) {
        Ok(layout) => panic!("expected an error, got {layout:?}"),
        Err(e) => e.to_string(),
    }
}

fn has_note(layout: &RankLayout, note: &str) -> bool {
    layout.notes.iter().any(|n| n == note)
}

fn assert_note(layout: &RankLayout, note: &str) {
    assert!(
        has_note(layout, note),
        "no note '{note}' in {:#?}",
        layout.notes
    );
}

fn strings(hosts: &[&str]) -> Vec<String> {
    hosts.iter().map(|h| h.to_string()).collect()
}

/// What srun sets for task 5 of 8 on the second of two nodes.
const SRUN_TASK_5: [(&str, &str); 6] = [
    ("SLURM_PROCID", "5"),
    ("SLURM_NTASKS", "8"),
    ("SLURM_LOCALID", "1"),
    ("SLURM_NODEID", "1"),
    ("SLURM_STEP_NODELIST", "gpu[07-08]"),
    ("SLURM_JOB_NODELIST", "gpu[06-08]"),
];

#[test]
fn slurm_alone() {
    let layout = detect_in(&SRUN_TASK_5);
    assert_eq!(layout.launcher, Launcher::Slurm);
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (5, 8, 1)
    );
    assert_eq!(layout.node_id, Some(1));
    assert_eq!(layout.nodes, strings(&["gpu07", "gpu08"]));
    assert_note(&layout, "rank 5 from SLURM_PROCID");
    assert_note(&layout, "world size 8 from SLURM_NTASKS");
    assert_note(&layout, "local rank 1 from SLURM_LOCALID");
    assert_note(&layout, "node id 1 from SLURM_NODEID");
    assert_note(&layout, "2 nodes from SLURM_STEP_NODELIST=gpu[07-08]");
}

#[test]
fn slurm_nprocs_stands_in_for_ntasks() {
    let layout = detect_in(&[
        ("SLURM_PROCID", "1"),
        ("SLURM_NPROCS", "2"),
        ("SLURM_LOCALID", "1"),
    ]);
    assert_eq!((layout.rank, layout.world_size), (1, 2));
    assert_note(&layout, "world size 2 from SLURM_NPROCS");
}

#[test]
fn open_mpi_alone() {
    let layout = detect_in(&[
        ("OMPI_COMM_WORLD_RANK", "3"),
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("OMPI_COMM_WORLD_NODE_RANK", "1"),
    ]);
    assert_eq!(layout.launcher, Launcher::OpenMpi);
    assert_eq!(layout.launcher.name(), "Open MPI");
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (3, 4, 1)
    );
    // OMPI_COMM_WORLD_NODE_RANK is a rank within the node, not a node id.
    assert_eq!(layout.node_id, None);
    assert!(layout.nodes.is_empty());
    assert_eq!(layout.master, None);
    assert_note(&layout, "rank 3 from OMPI_COMM_WORLD_RANK");
}

#[test]
fn mpich_alone_uses_mpi_localrankid() {
    let layout = detect_in(&[
        ("PMI_RANK", "2"),
        ("PMI_SIZE", "4"),
        ("MPI_LOCALRANKID", "0"),
        ("PMI_LOCAL_RANK", "1"),
    ]);
    assert_eq!(layout.launcher, Launcher::Mpich);
    assert_eq!(layout.launcher.name(), "MPICH/PMI");
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (2, 4, 0)
    );
    assert_note(&layout, "local rank 0 from MPI_LOCALRANKID");
}

#[test]
fn mpich_falls_back_to_pmi_local_rank() {
    let layout = detect_in(&[
        ("PMI_RANK", "2"),
        ("PMI_SIZE", "4"),
        ("PMI_LOCAL_RANK", "1"),
    ]);
    assert_eq!(layout.local_rank, 1);
    assert_note(&layout, "local rank 1 from PMI_LOCAL_RANK");
}

#[test]
fn torchrun_alone() {
    let layout = detect_in(&[
        ("RANK", "6"),
        ("WORLD_SIZE", "8"),
        ("LOCAL_RANK", "2"),
        ("GROUP_RANK", "1"),
        ("MASTER_ADDR", "10.0.0.1"),
        ("MASTER_PORT", "29500"),
    ]);
    assert_eq!(layout.launcher, Launcher::Torchrun);
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (6, 8, 2)
    );
    assert_eq!(layout.node_id, Some(1));
    assert_eq!(
        layout.master,
        Some(MasterAddr {
            host: "10.0.0.1".into(),
            port: Some(29500),
            source: "MASTER_ADDR".into()
        })
    );
    assert_note(&layout, "node id 1 from GROUP_RANK");
    assert_note(&layout, "master port 29500 from MASTER_PORT");
}

#[test]
fn flags_alone_for_a_single_process() {
    let overrides = Overrides {
        rank: Some(0),
        world_size: Some(1),
        local_rank: None,
    };
    let layout = detect_with(&[], &overrides);
    assert_eq!(layout.launcher, Launcher::Flags);
    assert_eq!(layout.launcher.name(), "flags");
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (0, 1, 0)
    );
    assert_note(
        &layout,
        "local rank 0: the world size is 1 and no launcher variable gives one",
    );
}

#[test]
fn open_mpi_inside_slurm_allocation_ignores_the_batch_steps_procid() {
    // mpirun in an sbatch script: every rank inherits the batch step's SLURM_PROCID=0
    // and a SLURM_NTASKS that need not match mpirun's world size.
    let layout = detect_in(&[
        ("OMPI_COMM_WORLD_RANK", "3"),
        ("OMPI_COMM_WORLD_SIZE", "8"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_LOCALID", "0"),
        ("SLURM_NODEID", "0"),
        ("SLURM_JOB_NODELIST", "node[01-02]"),
    ]);
    assert_eq!(layout.launcher, Launcher::OpenMpi);
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (3, 8, 3)
    );
    assert_eq!(layout.node_id, None);
    assert_eq!(layout.nodes, strings(&["node01", "node02"]));
    assert_note(
        &layout,
        "ignored SLURM_PROCID=0, SLURM_NTASKS=2, SLURM_LOCALID=0 (Open MPI variables take precedence)",
    );
}

#[test]
fn open_mpi_daemon_step_nodelist_is_not_trusted() {
    // On a node mpirun reached through srun, the step is mpirun's daemon step: its
    // node list leaves out the batch node, where rank 0 runs.
    let layout = detect_in(&[
        ("OMPI_COMM_WORLD_RANK", "5"),
        ("OMPI_COMM_WORLD_SIZE", "8"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "1"),
        ("SLURM_STEP_NODELIST", "node02"),
        ("SLURM_JOB_NODELIST", "node[01-02]"),
    ]);
    assert_eq!(layout.nodes, strings(&["node01", "node02"]));
    let master = layout.master.expect("master from the job's node list");
    assert_eq!(master.host, "node01");
    assert_eq!(master.source, "first node of SLURM_JOB_NODELIST");
}

#[test]
fn torchrun_under_slurm_uses_torchrun_variables() {
    // srun starts one torchrun agent per node; its children get RANK etc. and inherit
    // the agent's SLURM_PROCID (the node index).
    let layout = detect_in(&[
        ("RANK", "5"),
        ("WORLD_SIZE", "8"),
        ("LOCAL_RANK", "1"),
        ("GROUP_RANK", "1"),
        ("MASTER_ADDR", "node01"),
        ("MASTER_PORT", "29500"),
        ("SLURM_PROCID", "1"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_LOCALID", "0"),
        ("SLURM_NODEID", "1"),
        ("SLURM_STEP_NODELIST", "node[01-02]"),
        ("SLURM_JOB_NODELIST", "node[01-02]"),
    ]);
    assert_eq!(layout.launcher, Launcher::Torchrun);
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (5, 8, 1)
    );
    assert_eq!(layout.node_id, Some(1));
    assert_eq!(
        layout.master.clone().map(|m| (m.host, m.port, m.source)),
        Some(("node01".into(), Some(29500), "MASTER_ADDR".into()))
    );
    assert_note(
        &layout,
        "ignored SLURM_PROCID=1, SLURM_NTASKS=2, SLURM_LOCALID=0 (torchrun variables take precedence)",
    );
}

#[test]
fn flags_override_every_launcher() {
    let overrides = Overrides {
        rank: Some(1),
        world_size: Some(2),
        local_rank: Some(1),
    };
    let layout = detect_with(
        &[
            ("RANK", "7"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "3"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
        ],
        &overrides,
    );
    assert_eq!(layout.launcher, Launcher::Flags);
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (1, 2, 1)
    );
    assert_note(&layout, "ignored RANK=7 (--rank takes precedence)");
    assert_note(
        &layout,
        "ignored WORLD_SIZE=8 (--world-size takes precedence)",
    );
    assert_note(
        &layout,
        "ignored LOCAL_RANK=3 (--local-rank takes precedence)",
    );
    assert_note(
        &layout,
        "ignored OMPI_COMM_WORLD_RANK=3, OMPI_COMM_WORLD_SIZE=4 (torchrun variables take precedence)",
    );
}

#[test]
fn one_flag_overrides_one_value_of_the_launcher() {
    let overrides = Overrides {
        local_rank: Some(0),
        ..Overrides::default()
    };
    let layout = detect_with(
        &[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
        ],
        &overrides,
    );
    assert_eq!(layout.launcher, Launcher::OpenMpi);
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (3, 4, 0)
    );
    assert_note(
        &layout,
        "ignored OMPI_COMM_WORLD_LOCAL_RANK=3 (--local-rank takes precedence)",
    );
}

#[test]
fn rank_flag_takes_the_world_size_from_the_launcher() {
    let overrides = Overrides {
        rank: Some(2),
        ..Overrides::default()
    };
    let layout = detect_with(
        &[
            ("PMI_RANK", "0"),
            ("PMI_SIZE", "4"),
            ("MPI_LOCALRANKID", "2"),
        ],
        &overrides,
    );
    assert_eq!(layout.launcher, Launcher::Flags);
    assert_eq!(
        (layout.rank, layout.world_size, layout.local_rank),
        (2, 4, 2)
    );
    assert_note(&layout, "world size 4 from PMI_SIZE");
}

#[test]
fn pmi_under_srun_takes_the_local_rank_from_slurm() {
    // srun --mpi=pmi2 sets PMI_RANK/PMI_SIZE but no MPI_LOCALRANKID; Slurm's variables
    // describe the same process.
    let mut vars = vec![("PMI_RANK", "5"), ("PMI_SIZE", "8")];
    vars.extend(SRUN_TASK_5);
    let layout = detect_in(&vars);
    assert_eq!(layout.launcher, Launcher::Mpich);
    assert_eq!(layout.local_rank, 1);
    assert_eq!(layout.node_id, Some(1));
    assert_eq!(layout.nodes, strings(&["gpu07", "gpu08"]));
    assert_note(
        &layout,
        "local rank 1 from SLURM_LOCALID (SLURM_PROCID and SLURM_NTASKS match this process)",
    );
    assert!(
        !layout.notes.iter().any(|n| n.contains("ignored SLURM")),
        "{:#?}",
        layout.notes
    );
}

#[test]
fn pmi_in_allocation_does_not_borrow_another_process_localid() {
    let message = error_in(
        &[
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "4"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_LOCALID", "0"),
        ],
        &Overrides::default(),
    );
    assert_eq!(
        message,
        "cannot tell this process's local rank: MPICH/PMI sets no MPI_LOCALRANKID or PMI_LOCAL_RANK, \
         and the world size is 4 (SLURM_LOCALID is set but belongs to another process: SLURM_PROCID \
         and SLURM_NTASKS do not match this one); pass --local-rank"
    );
}

#[test]
fn missing_local_rank_is_zero_for_a_single_process() {
    let layout = detect_in(&[("PMI_RANK", "0"), ("PMI_SIZE", "1")]);
    assert_eq!(layout.local_rank, 0);
    assert_note(
        &layout,
        "local rank 0: the world size is 1 and MPICH/PMI sets no MPI_LOCALRANKID or PMI_LOCAL_RANK",
    );
}

#[test]
fn missing_local_rank_with_several_processes_asks_for_the_flag() {
    let overrides = Overrides {
        rank: Some(1),
        world_size: Some(2),
        local_rank: None,
    };
    assert_eq!(
        error_in(&[], &overrides),
        "cannot tell this process's local rank: no launcher variable gives one, and the world size is 2; pass --local-rank"
    );
}

#[test]
fn master_is_the_first_node_of_the_step_under_srun() {
    let layout = detect_in(&SRUN_TASK_5);
    assert_eq!(
        layout.master,
        Some(MasterAddr {
            host: "gpu07".into(),
            port: None,
            source: "first node of SLURM_STEP_NODELIST".into()
        })
    );
}

#[test]
fn master_from_the_job_nodelist_takes_master_port() {
    let layout = detect_in(&[
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "1"),
        ("SLURM_JOB_NODELIST", "a[3-4]b[1-2],c"),
        ("MASTER_PORT", "12345"),
    ]);
    assert_eq!(
        layout.nodes,
        strings(&["a3b1", "a3b2", "a4b1", "a4b2", "c"])
    );
    assert_eq!(
        layout.master,
        Some(MasterAddr {
            host: "a3b1".into(),
            port: Some(12345),
            source: "first node of SLURM_JOB_NODELIST".into()
        })
    );
}

#[test]
fn master_addr_wins_over_the_nodelist() {
    let mut vars = vec![("MASTER_ADDR", " head-node ")];
    vars.extend(SRUN_TASK_5);
    let master = detect_in(&vars).master.expect("master");
    assert_eq!(
        (master.host.as_str(), master.port, master.source.as_str()),
        ("head-node", None, "MASTER_ADDR")
    );
}

#[test]
fn launch_node_address_is_the_fallback_without_a_nodelist() {
    let layout = detect_in(&[
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "1"),
        ("SLURM_LAUNCH_NODE_IPADDR", "10.1.2.3"),
    ]);
    assert_eq!(
        layout.master.map(|m| (m.host, m.source)),
        Some((
            "10.1.2.3".into(),
            "SLURM_LAUNCH_NODE_IPADDR (no Slurm node list)".into()
        ))
    );
}

#[test]
fn launch_node_address_loses_to_the_nodelist() {
    let mut vars = vec![("SLURM_LAUNCH_NODE_IPADDR", "10.1.2.3")];
    vars.extend(SRUN_TASK_5);
    assert_eq!(
        detect_in(&vars).master.map(|m| m.host),
        Some("gpu07".into())
    );
}

#[test]
fn master_port_without_a_host_is_noted() {
    let layout = detect_in(&[
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_SIZE", "1"),
        ("MASTER_PORT", "29500"),
    ]);
    assert_eq!(layout.master, None);
    assert_note(
        &layout,
        "MASTER_PORT=29500 unused: nothing says which host rank 0 is on (no MASTER_ADDR, no Slurm node list)",
    );
}

#[test]
fn stray_world_size_of_a_higher_launcher_is_noted() {
    let layout = detect_in(&[
        ("WORLD_SIZE", "16"),
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_SIZE", "2"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
    ]);
    assert_eq!(layout.world_size, 2);
    assert_note(&layout, "ignored WORLD_SIZE=16 (RANK is not set)");
}

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
