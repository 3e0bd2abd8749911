//! Tests of the rules written from blind set 27: a CUDA error's own words in its
//! meaning, ibv_create_cq under a low memlock limit, 802 from a CUDA call inside NCCL
//! (the NVLink fabric, not CUDA's start), NCCL builds read from `strings`, and an init
//! whose time goes to loading kernels. Each both ways: the failure, and a near miss.

use super::*;

#[test]
fn a_cuda_error_is_named_with_its_own_words() {
    let text = "NCCL error in: NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2\n\
                ncclUnhandledCudaError: Call to CUDA function failed.\n\
                Last error:\n\
                Cuda failure 999 'unknown error'\n";
    let f = finding_by_id(&pasted(text), "cuda-failure").clone();
    assert!(f.cause.contains("(999, `unknown error`)"), "{}", f.cause);
}

#[test]
fn ibv_create_cq_failing_with_enomem_reads_as_the_memlock_limit() {
    let text = "h:4016:4653 [7] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n";
    let f = finding_by_id(&pasted(text), "ib-error").clone();
    assert!(f.cause.contains("completion queue") && f.cause.contains("ibv_create_cq"));
    assert!(f.fix.contains("ulimit -l"));
    let other = text.replace("Cannot allocate memory", "Invalid argument");
    let f = finding_by_id(&pasted(&other), "ib-error").clone();
    assert!(!f.cause.contains("completion queue"), "{}", f.cause);
}

#[test]
fn error_802_inside_nccl_is_the_nvlink_fabric_not_cudas_start() {
    let inside = "[rank2]:     dist.all_reduce(tensor)\n\
                  [rank2]: ncclUnhandledCudaError: Call to CUDA function failed.\n\
                  [rank2]: Last error:\n\
                  [rank2]: Cuda failure 802 'system not yet initialized'\n";
    let e = pasted(inside);
    let f = finding_by_id(&e, "fabric-not-ready-in-nccl");
    assert!(f.fix.contains("NCCL_NVLS_ENABLE=0") && f.cause.contains("Fabric Manager"));
    assert!(!ids(&e).contains(&"fabric-manager-not-ready"));
    // NCCL's 802 with no collective under way: CUDA may not have started at all.
    let init = "h:1:1 [0] init.cc:1490 NCCL WARN Cuda failure 802 'system not yet initialized'\n";
    let found = ids(&pasted(init));
    assert!(found.contains(&"fabric-manager-not-ready"), "{found:?}");
    assert!(!found.contains(&"fabric-not-ready-in-nccl"), "{found:?}");
    // CUDA that does not start (nccl-tests' own check) is the Fabric Manager finding.
    let start = "gpu: Test CUDA failure common.cu:1030 'system not yet initialized'\n";
    let found = ids(&pasted(start));
    assert!(found.contains(&"fabric-manager-not-ready"), "{found:?}");
    assert!(!found.contains(&"fabric-not-ready-in-nccl"), "{found:?}");
}

#[test]
fn a_line_a_finding_reads_alone_is_read_though_another_finding_may_take_it() {
    // fabric-manager-not-ready gives way to the in-NCCL reading where a collective is
    // under way (`unless`); its line alone still makes a text explain reads.
    let input = |text| Input { name: "-", text };
    let line = "Error 802: system not yet initialized\n";
    assert!(is_explainable(&[input(line)]));
    assert!(ids(&pasted(line)).contains(&"fabric-manager-not-ready"));
    assert!(!is_explainable(&[input(
        "RuntimeError: the system is fine\n"
    )]));
}

#[test]
fn builds_read_from_strings_show_one_version_for_two_cudas() {
    let text = "$ strings /opt/conda/nvidia/nccl/lib/libnccl.so.2 | grep \"NCCL version\" | head -1\n\
                NCCL version 2.25.1+cuda12.2\n\
                $ strings /usr/lib/x86_64-linux-gnu/libnccl.so.2 | grep \"NCCL version\" | head -1\n\
                NCCL version 2.25.1+cuda12.8\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "nccl-builds");
    assert!(f.cause.contains("2.25.1+cuda12.2") && f.cause.contains("JIT-compiles"));
    assert!(!ids(&e).contains(&"init-stops"), "{:?}", ids(&e));
    // Two versions, or a wheel's `cu12` beside its own file's +cuda12.2: no JIT.
    let versions = text.replace("2.25.1+cuda12.8", "2.26.2+cuda12.8");
    let f = finding_by_id(&pasted(&versions), "nccl-builds").clone();
    assert!(!f.cause.contains("JIT"), "{}", f.cause);
    let wheel = "nvidia-nccl-cu12==2.25.1\n\
                 $ strings /opt/conda/nvidia/nccl/lib/libnccl.so.2 | grep \"NCCL version\"\n\
                 NCCL version 2.25.1+cuda12.2\n";
    let found = pasted(wheel);
    assert!(found.findings.iter().all(|f| !f.cause.contains("JIT")));
    // A version banner not under a `strings` command is a log's, not a file's build.
    let banners = "NCCL version 2.25.1+cuda12.2\nNCCL version 2.25.1+cuda12.8\n";
    assert!(!ids(&pasted(banners)).contains(&"nccl-builds"));
}

#[test]
fn an_init_spent_loading_kernels_points_at_a_build_without_this_gpus_code() {
    let timings = |kernels: f64, total: f64| {
        format!(
            "h:1:2 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 8 total {total:.2} (kernels {kernels:.2}, alloc 0.42, bootstrap 0.84, allgathers 0.08, topo 1.10, graphs 0.01, connections 0.39, rest 0.00)\n"
        )
    };
    let f = finding_by_id(&pasted(&timings(52.33, 55.17)), "init-kernels-slow").clone();
    assert!(f.title.contains("52 s of 55 s") && f.cause.contains("JIT"));
    // A fast init, or one whose time goes elsewhere, is not this.
    for (kernels, total) in [(0.4, 1.2), (3.0, 4.0), (6.0, 40.0)] {
        let found = ids(&pasted(&timings(kernels, total)));
        assert!(
            !found.contains(&"init-kernels-slow"),
            "{kernels} {total}: {found:?}"
        );
    }
}
