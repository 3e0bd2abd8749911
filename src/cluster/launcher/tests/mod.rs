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

mod errors;
