//! The NUMA contrast policies on topology fixtures: `spread` deals jobs to
//! the nodes in turn, `remote` puts each target on the node farthest from
//! it (issue 40: on the 448-CPU fixture, 2 targets x 4 jobs used to land on
//! CPUs 0-7 under both `local` and `spread`).

mod common;

use std::path::Path;

use planner::{plan, MemPolicy, Placement, PlanError, PlanRequest, Policy, TargetSpec, Workload};
use topology::{CpuId, NodeId, Topology};

fn fixture(name: &str) -> Topology {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sysfs");
    Topology::discover(&root.join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn request(targets: &[&str], numjobs: u32, policy: Policy) -> PlanRequest {
    PlanRequest {
        targets: targets.iter().map(|t| TargetSpec::new(*t)).collect(),
        workload: Workload {
            numjobs,
            ..Workload::default()
        },
        policy,
    }
}

/// The node of every job of every target, in plan order.
fn job_nodes(topo: &Topology, p: &Placement) -> Vec<Vec<u32>> {
    let node_of = |c: CpuId| {
        topo.nodes
            .iter()
            .find(|n| n.cpus.contains(&c))
            .map(|n| n.id.0)
            .expect("every planned CPU is on a node")
    };
    p.targets
        .iter()
        .map(|t| t.jobs.iter().map(|j| node_of(j.cpus[0])).collect())
        .collect()
}

fn cpus(p: &Placement, target: usize) -> Vec<u32> {
    p.targets[target].jobs.iter().map(|j| j.cpus[0].0).collect()
}

#[test]
fn spread_alternates_nodes_on_the_448_cpu_machine() {
    let topo = fixture("2s-448cpu-16nvme");
    let two = ["/dev/nvme0n1", "/dev/nvme1n1"];
    let local = plan(&topo, &request(&two, 4, Policy::Local)).unwrap();
    assert_eq!(job_nodes(&topo, &local), vec![vec![0; 4], vec![0; 4]]);
    let p = plan(&topo, &request(&two, 4, Policy::Spread)).unwrap();
    assert_eq!(p.policy, "spread");
    // Job i of the run on node i mod 2, each on its node's next core.
    assert_eq!(job_nodes(&topo, &p), vec![vec![0, 1, 0, 1]; 2]);
    assert_eq!(cpus(&p, 0), vec![0, 224, 1, 225]);
    assert_eq!(cpus(&p, 1), vec![2, 226, 3, 227]);
    // Buffers on the job's own node.
    assert!(p.targets[0].jobs.iter().all(|j| j.mem == MemPolicy::Local));
    assert!(p.targets[0]
        .notes
        .iter()
        .any(|n| n.contains("spread: jobs on nodes 0, 1")));
    // fio's split cannot deal a set to alternate nodes: a section per job.
    let fio = planner::fio::to_job_file(&p);
    assert!(
        fio.contains("[nvme0n1.1]\nnumjobs=1\nfilename=/dev/nvme0n1\ncpus_allowed=224\n"),
        "{fio}"
    );
}

#[test]
fn spread_takes_siblings_after_every_core_and_warns_past_them() {
    let topo = fixture("vm-two-socket");
    // Two nodes of two CPUs: 5 jobs put 3 on node 0's 2 CPUs.
    let p = plan(&topo, &request(&["/dev/nvme0n1"], 5, Policy::Spread)).unwrap();
    assert_eq!(job_nodes(&topo, &p), vec![vec![0, 1, 0, 1, 0]]);
    assert_eq!(cpus(&p, 0), vec![0, 2, 1, 3, 0]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.starts_with("node 0: 3 spread jobs on 2 CPUs")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn remote_lands_on_the_other_node_with_buffers_bound_there() {
    let topo = fixture("2s-448cpu-16nvme");
    let two = ["/dev/nvme0n1", "/dev/nvme1n1"];
    let p = plan(&topo, &request(&two, 4, Policy::Remote)).unwrap();
    assert_eq!(p.policy, "remote");
    assert_eq!(job_nodes(&topo, &p), vec![vec![1; 4], vec![1; 4]]);
    // Targets on one remote node share its cores as under local.
    assert_eq!(cpus(&p, 0), vec![224, 225, 226, 227]);
    assert_eq!(cpus(&p, 1), vec![228, 229, 230, 231]);
    for t in &p.targets {
        assert_eq!(t.node, Some(NodeId(0)), "the target's own node is kept");
        assert!(t
            .jobs
            .iter()
            .all(|j| j.mem == MemPolicy::Bind(vec![NodeId(1)])));
    }
    assert!(
        p.targets[0].notes.iter().any(|n| n
            == "remote: jobs on node 1 (distance 21 from the target's node 0), buffers bound to node 1"),
        "{:?}",
        p.targets[0].notes
    );
    let fio = planner::fio::to_job_file(&p);
    assert!(
        fio.contains("; /dev/nvme0n1: node 0, CPUs 224-227,336-339\n"),
        "{fio}"
    );
    assert!(
        fio.contains("cpus_allowed=224-227\ncpus_allowed_policy=split"),
        "{fio}"
    );
    assert!(fio.contains("numa_mem_policy=bind:1"), "{fio}");
    assert!(!fio.contains("bind:0"), "{fio}");
    let numactl = planner::numactl::to_numactl(&p);
    assert!(
        numactl.contains("--physcpubind=224-227,336-339 --membind=1"),
        "{numactl}"
    );
}

#[test]
fn remote_on_the_lab_two_socket_vm_is_the_other_socket() {
    let topo = fixture("vm-two-socket");
    // nvme3n1 is on node 0 (CPUs 0-1), nvme0n1 on node 1 (CPUs 2-3).
    let p = plan(
        &topo,
        &request(&["/dev/nvme3n1", "/dev/nvme0n1"], 2, Policy::Remote),
    )
    .unwrap();
    assert_eq!(job_nodes(&topo, &p), vec![vec![1, 1], vec![0, 0]]);
    assert_eq!(p.targets[0].jobs[0].mem, MemPolicy::Bind(vec![NodeId(1)]));
    assert_eq!(p.targets[1].jobs[0].mem, MemPolicy::Bind(vec![NodeId(0)]));
}

#[test]
fn remote_takes_the_farthest_node_with_free_cores_lowest_id_on_ties() {
    // nvme0n1 on node 5; nodes 0-3 are all 32 away, one core each.
    let topo = fixture("vm-eight-node");
    let p = plan(
        &topo,
        &request(
            &["/dev/nvme0n1", "/dev/nvme0n1", "/dev/nvme0n1"],
            1,
            Policy::Remote,
        ),
    )
    .unwrap();
    assert_eq!(job_nodes(&topo, &p), vec![vec![0], vec![1], vec![2]]);
    let four = fixture("vm-four-node");
    let p = plan(
        &four,
        &request(&["/dev/nvme0n1", "/dev/nvme1n1"], 1, Policy::Remote),
    )
    .unwrap();
    // nvme0n1 (node 3): nodes 0 and 1 are 21 away, 0 wins the tie;
    // nvme1n1 (node 0): nodes 2 and 3 are 21 away, 2 wins.
    assert_eq!(job_nodes(&four, &p), vec![vec![0], vec![2]]);
}

#[test]
fn remote_with_memoryless_and_cpuless_nodes() {
    let topo = common::mixed();
    let p = plan(
        &topo,
        &request(
            &[
                "/dev/nvme0n1",
                "/dev/nvme1n1",
                "/dev/nvme2n1",
                "/dev/nvme9n1",
            ],
            1,
            Policy::Remote,
        ),
    )
    .unwrap();
    let mems: Vec<&MemPolicy> = p.targets.iter().map(|t| &t.jobs[0].mem).collect();
    // nvme0n1 (node 0): node 1 (21) beats node 3 (17); node 2 has no CPUs.
    assert_eq!(cpus(&p, 0), vec![8]);
    // nvme1n1 (node 1): node 3 (28), whose memory-less buffers go to the
    // nearest node with memory, node 0 (17).
    assert_eq!(cpus(&p, 1), vec![16]);
    assert_eq!(mems[1], &MemPolicy::Bind(vec![NodeId(0)]));
    assert!(p.targets[1]
        .notes
        .iter()
        .any(|n| n.contains("node 3 has no memory")));
    // nvme2n1 (node 2, no CPUs): node 0 (31) is farthest.
    assert_eq!(cpus(&p, 2), vec![0]);
    // nvme9n1, a multipath head local to nodes 0 and 1: node 3 is the
    // only node that is neither.
    assert_eq!(cpus(&p, 3), vec![17]);
}

#[test]
fn remote_without_a_remote_node_is_an_error_naming_the_target_and_fix() {
    let one = fixture("one-node-1nvme");
    let err = plan(&one, &request(&["/dev/nvme0n1"], 1, Policy::Remote)).unwrap_err();
    assert!(matches!(err, PlanError::NoRemoteNode { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("target /dev/nvme0n1: --numa remote needs"),
        "{text}"
    );
    assert!(
        text.contains("this machine has 1 node with CPUs (0)"),
        "{text}"
    );
    assert!(text.contains("use --numa local or spread"), "{text}");
    let two = fixture("vm-two-socket");
    let err = plan(
        &two,
        &request(&["/dev/nvme0n1", "/data/file.bin"], 1, Policy::Remote),
    )
    .unwrap_err();
    assert!(
        matches!(err, PlanError::RemoteNodeUnknown { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("place it with --cpus-for /data/file.bin=LIST"),
        "{err}"
    );
    // nvme4n1 is a multipath head with a path on each node.
    let err = plan(&two, &request(&["/dev/nvme4n1"], 1, Policy::Remote)).unwrap_err();
    assert!(
        err.to_string()
            .contains("local to every node with online CPUs (0-1: a multipath head"),
        "{err}"
    );
}
