use super::*;
use crate::model::DeviceNode::{Known, Unknown};

/// `2node-multipath-tcp`: nvme0n1 with paths nvme0c0n1 (nvme0, node 0) and
/// nvme0c1n1 (nvme1, node 1), distance 21; nvme0n1 one tcp path (node -1).
fn fixture() -> Topology {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/sysfs/2node-multipath-tcp");
    Topology::discover(&root).expect("fixture")
}

/// The dual-port head under `policy`, its controllers on `nodes`.
fn dual(policy: &str, nodes: [DeviceNode; 2]) -> Topology {
    let mut t = fixture();
    t.subsystems[0].iopolicy = Some(policy.to_string());
    for (c, n) in t.controllers.iter_mut().zip(nodes) {
        c.numa_node = n;
    }
    for p in &mut t.subsystems[0].namespaces[0].paths {
        p.numa_nodes = None;
    }
    t
}

fn head(t: &Topology) -> HeadAudit {
    audit(t).remove(0)
}

fn taken(a: &HeadAudit, node: u32) -> (Vec<usize>, Vec<usize>, Verdict) {
    let r = &a.routes[node as usize];
    assert_eq!(r.node, NodeId(node));
    (r.taken.clone(), r.ties.clone(), r.verdict)
}

#[test]
fn numa_takes_the_local_path_from_each_node() {
    let a = head(&dual("numa", [Known(NodeId(0)), Known(NodeId(1))]));
    assert_eq!(a.block_device, "nvme0n1");
    assert_eq!(a.policy, Some(IoPolicy::Numa));
    assert!(!a.kernel_reports);
    assert_eq!(taken(&a, 0), (vec![0], vec![], Verdict::Nearest));
    assert_eq!(taken(&a, 1), (vec![1], vec![], Verdict::Nearest));
    assert_eq!(a.routes[1].distances, vec![Some(21), Some(10)]);
    assert_eq!(a.routes[0].source, RouteSource::Model);
}

// The published case: a controller of numa_node -1 counts as local from
// every node, so it ties with the local path and beats a remote one.
#[test]
fn numa_counts_an_unknown_node_as_local() {
    let a = head(&dual("numa", [Known(NodeId(0)), Unknown]));
    assert_eq!(a.routes[0].kernel_distances, vec![10, 10]);
    assert_eq!(a.routes[0].distances, vec![Some(10), None]);
    // Node 0: a tie, the first path of the list wins; the other could.
    assert_eq!(taken(&a, 0), (vec![0], vec![1], Verdict::MayNotBeNearest));
    // Node 1: the -1 path (10) beats the node-0 path (21).
    assert_eq!(taken(&a, 1), (vec![1], vec![], Verdict::UnknownNode));
    assert_eq!(a.routes[1].nearest_distance, Some(21));
}

#[test]
fn numa_prefers_optimized_and_falls_back_to_non_optimized() {
    let mut t = dual("numa", [Known(NodeId(0)), Known(NodeId(1))]);
    let paths = &mut t.subsystems[0].namespaces[0].paths;
    paths[0].ana_state = Some("non-optimized".to_string());
    let a = head(&t);
    // Node 0's local path is non-optimized: the remote optimized one wins,
    // and is the nearest the controller allows (ANA comes first).
    assert_eq!(taken(&a, 0), (vec![1], vec![], Verdict::Nearest));
    assert_eq!(
        a.routes[0].nearest_distance,
        Some(21),
        "the optimized tier only"
    );
    let paths = &mut t.subsystems[0].namespaces[0].paths;
    paths[1].ana_state = Some("inaccessible".to_string());
    let a = head(&t);
    assert!(!a.paths[1].usable);
    assert_eq!(taken(&a, 1), (vec![0], vec![], Verdict::Nearest));
    paths_all(&mut t, "inaccessible");
    assert_eq!(taken(&head(&t), 0), (vec![], vec![], Verdict::NoPath));
}

fn paths_all(t: &mut Topology, state: &str) {
    for p in &mut t.subsystems[0].namespaces[0].paths {
        p.ana_state = Some(state.to_string());
    }
}

#[test]
fn a_controller_that_is_not_live_is_skipped() {
    let mut t = dual("numa", [Known(NodeId(0)), Known(NodeId(1))]);
    t.controllers[0].state = "resetting".to_string();
    let a = head(&t);
    assert_eq!(taken(&a, 0), (vec![1], vec![], Verdict::Nearest));
    assert_eq!(a.routes[0].nearest_distance, Some(21));
}

#[test]
fn round_robin_and_queue_depth_spread_over_every_optimized_path() {
    for policy in ["round-robin", "queue-depth"] {
        let a = head(&dual(policy, [Known(NodeId(0)), Known(NodeId(1))]));
        assert_eq!(
            taken(&a, 0),
            (vec![0, 1], vec![], Verdict::NotNearest),
            "{policy}"
        );
        assert_eq!(
            taken(&a, 1),
            (vec![0, 1], vec![], Verdict::NotNearest),
            "{policy}"
        );
        assert_eq!(a.routes[0].kernel_distances, vec![10, 10]);
        assert_eq!(a.queue_depth_available, policy == "queue-depth");
    }
    let mut t = dual("round-robin", [Known(NodeId(0)), Known(NodeId(1))]);
    t.subsystems[0].namespaces[0].paths[1].ana_state = Some("non-optimized".into());
    // The nearest of the optimized tier: the non-optimized path does not count.
    assert_eq!(taken(&head(&t), 1), (vec![0], vec![], Verdict::Nearest));
}

#[test]
fn both_paths_on_one_node_tie_and_are_both_nearest() {
    let a = head(&dual("numa", [Known(NodeId(1)), Known(NodeId(1))]));
    assert_eq!(taken(&a, 1), (vec![0], vec![1], Verdict::Nearest));
    assert_eq!(taken(&a, 0), (vec![0], vec![1], Verdict::Nearest));
}

// The kernel's numa_nodes (6.15+) wins over the model, even where the
// model would choose otherwise; a node it does not list is modelled.
#[test]
fn the_kernels_numa_nodes_win_over_the_model() {
    let mut t = dual("numa", [Known(NodeId(0)), Known(NodeId(1))]);
    let paths = &mut t.subsystems[0].namespaces[0].paths;
    paths[0].numa_nodes = Some(vec![]);
    paths[1].numa_nodes = Some(vec![NodeId(0)]);
    let a = head(&t);
    assert!(a.kernel_reports);
    assert_eq!(taken(&a, 0), (vec![1], vec![], Verdict::NotNearest));
    assert_eq!(a.routes[0].source, RouteSource::Kernel);
    assert_eq!(taken(&a, 1), (vec![1], vec![], Verdict::Nearest));
    assert_eq!(a.routes[1].source, RouteSource::Model);
}

#[test]
fn a_single_path_head_is_audited_and_the_policy_name_is_kept() {
    let mut t = fixture();
    t.subsystems[1].iopolicy = Some("latency".to_string());
    let all = audit(&t);
    assert_eq!(all.len(), 2);
    let tcp = &all[1];
    assert_eq!(tcp.iopolicy, "latency");
    assert_eq!(tcp.policy, None);
    assert_eq!(tcp.paths[0].node, Unknown);
    assert_eq!(tcp.routes[0].verdict, Verdict::UnknownNode);
}

#[test]
fn distances_outside_the_table() {
    let t = fixture();
    assert_eq!(distance(&t, NodeId(0), Known(NodeId(1))), Some(21));
    assert_eq!(distance(&t, NodeId(0), Known(NodeId(5))), None);
    assert_eq!(
        kernel_distance(&t, NodeId(0), Known(NodeId(5))),
        REMOTE_DISTANCE
    );
    assert_eq!(kernel_distance(&t, NodeId(0), Unknown), LOCAL_DISTANCE);
}

// The lab's published case (tests/vm/topologies/mp-memoryless.sh, 6.1):
// nvme0 sits behind a node without CPUs or memory (numa_node -1), nvme1 on
// node 0; the -1 path is first in controller order, so node 0 ties and
// takes it, and node 1 takes it (10) over the node-0 path (21).
#[test]
fn the_lab_published_case() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/sysfs/vm-mp-memoryless");
    let t = Topology::discover(&root).expect("fixture");
    let a = head(&t);
    assert_eq!(a.block_device, "nvme0n1");
    assert!(!a.kernel_reports, "6.1 writes no numa_nodes");
    let devices: Vec<&str> = a.paths.iter().map(|p| p.device.as_str()).collect();
    assert_eq!(devices, ["nvme0c0n1", "nvme0c1n1"]);
    assert_eq!(a.paths[0].node, Unknown);
    assert_eq!(taken(&a, 0), (vec![0], vec![1], Verdict::UnknownNode));
    assert_eq!(taken(&a, 1), (vec![0], vec![], Verdict::UnknownNode));
    assert_eq!(a.routes[1].distances, vec![None, Some(21)]);
}
