//! Snapshots captured in the VM lab (`tests/fixtures/sysfs/vm-*`, written by
//! `tests/vm/capture` from real Linux NVMe drivers in QEMU guests): each
//! replays to exactly the JSON `numio topo --json` printed in the guest
//! (`expected-topo.json`), and its model is consistent.

mod common;

use common::all_fixture_dirs;
use topology::{DeviceNode, Topology};

#[test]
fn vm_captures_replay_to_the_guests_json() {
    let captures: Vec<_> = all_fixture_dirs()
        .into_iter()
        .filter(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vm-"))
        })
        .collect();
    if captures.is_empty() {
        eprintln!("no vm-* captures under tests/fixtures/sysfs yet (tests/vm/capture writes them)");
    }
    for dir in captures {
        let t = Topology::discover(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(
            !t.nodes.is_empty() && t.cpus.iter().any(|c| c.online),
            "{}",
            dir.display()
        );
        // Every controller sits on an online node or says it does not know.
        for c in &t.controllers {
            if let DeviceNode::Known(n) = c.numa_node {
                assert!(
                    t.node(n).is_some(),
                    "{}: {} on node {n} which is not online",
                    dir.display(),
                    c.name
                );
            }
        }
        // Every namespace resolves back through the lookups.
        for name in t.block_devices() {
            let d = t
                .find_device(name)
                .unwrap_or_else(|| panic!("{}: {name} not found", dir.display()));
            assert!(
                !d.controllers.is_empty(),
                "{}: {name} has no controller",
                dir.display()
            );
        }
        let expected = dir.join("expected-topo.json");
        if let Ok(text) = std::fs::read_to_string(&expected) {
            let want: serde_json::Value =
                serde_json::from_str(&text).expect("expected-topo.json is JSON");
            let got = serde_json::to_value(&t).expect("serializable");
            assert_eq!(
                got,
                want,
                "{}: replay differs from the guest's JSON",
                dir.display()
            );
        }
    }
}

fn capture(name: &str) -> Option<Topology> {
    let dir = common::fixtures_dir().join(name);
    if !dir.exists() {
        eprintln!("{name} not captured yet; skipping");
        return None;
    }
    Some(Topology::discover(&dir).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn serious(t: &Topology) -> Vec<(String, String)> {
    topology::doctor::diagnose(t)
        .into_iter()
        .filter(|f| f.severity > topology::doctor::Severity::Info)
        .map(|f| (f.code, f.subject))
        .collect()
}

#[test]
fn vm_two_socket_has_a_multipath_subsystem_across_both_nodes() {
    let Some(t) = capture("vm-two-socket") else {
        return;
    };
    assert_eq!(
        t.nodes.iter().map(|n| n.id.0).collect::<Vec<_>>(),
        vec![0, 1]
    );
    let mp = t
        .subsystems
        .iter()
        .find(|s| s.controllers.len() == 2)
        .expect("one subsystem with two controllers");
    let nodes: Vec<Option<topology::NodeId>> = mp
        .controllers
        .iter()
        .map(|c| t.controller(c).expect("controller").numa_node.node())
        .collect();
    assert!(
        nodes.contains(&Some(topology::NodeId(0))) && nodes.contains(&Some(topology::NodeId(1))),
        "{nodes:?}"
    );
    let ns = &mp.namespaces[0];
    let d = t
        .find_device(&format!("/dev/{}", ns.block_device))
        .expect("shared namespace");
    assert_eq!(d.nodes(), vec![topology::NodeId(0), topology::NodeId(1)]);
    assert_eq!(serious(&t), vec![], "well-placed two-socket guest");
}

#[test]
fn vm_memoryless_flags_the_controller_behind_the_empty_node() {
    let Some(t) = capture("vm-memoryless") else {
        return;
    };
    let ml = t
        .controllers
        .iter()
        .find(|c| c.serial == "NUMIO-ML")
        .expect("NUMIO-ML controller");
    assert_eq!(ml.numa_node, DeviceNode::Unknown);
    assert_eq!(
        serious(&t),
        vec![("controller-node-unknown".to_string(), ml.name.clone())]
    );
}

#[test]
fn vm_one_node_is_clean() {
    let Some(t) = capture("vm-one-node") else {
        return;
    };
    assert_eq!(t.nodes.len(), 1);
    assert!(!t.controllers.is_empty());
    assert_eq!(serious(&t), vec![]);
}

#[test]
fn vm_four_node_has_smt_pairs_split_over_four_nodes_and_an_offline_thread() {
    let Some(t) = capture("vm-four-node") else {
        return;
    };
    let cpus = |ids: &[u32]| ids.iter().copied().map(topology::CpuId).collect::<Vec<_>>();
    assert_eq!(t.nodes.len(), 4);
    assert_eq!(t.nodes[0].cpus, cpus(&[0, 1]));
    assert_eq!(t.nodes[2].cpus, cpus(&[4]), "CPU 5 was taken offline");
    assert_eq!(t.nodes[3].distances, vec![21, 21, 11, 10]);
    assert_eq!(t.cpus[0].siblings, cpus(&[0, 1]));
    assert_eq!(t.cpus[7].siblings, cpus(&[6, 7]));
    assert_eq!(
        (t.cpus[1].package, t.cpus[1].core),
        (Some(0), Some(0)),
        "the second thread of core 0"
    );
    let offline = &t.cpus[5];
    assert!(!offline.online);
    assert_eq!(offline.node, Some(topology::NodeId(2)));
    assert_eq!(t.cpus[4].siblings, cpus(&[4]), "its sibling is offline");
    let nodes: Vec<(String, Option<topology::NodeId>)> = t
        .controllers
        .iter()
        .map(|c| (c.serial.clone(), c.numa_node.node()))
        .collect();
    assert!(nodes.contains(&("NUMIO-4N-0".to_string(), Some(topology::NodeId(0)))));
    assert!(nodes.contains(&("NUMIO-4N-3".to_string(), Some(topology::NodeId(3)))));
    assert!(serious(&t).contains(&("cpus-offline".to_string(), "cpus".to_string())));
}

#[test]
fn vm_eight_node_has_one_cpu_per_node_and_a_three_level_distance_table() {
    let Some(t) = capture("vm-eight-node") else {
        return;
    };
    assert_eq!(t.nodes.len(), 8);
    for n in &t.nodes {
        assert_eq!(n.cpus, vec![topology::CpuId(n.id.0)]);
        assert_eq!(n.distances.len(), 8);
    }
    assert_eq!(t.nodes[5].distances, vec![32, 32, 32, 32, 12, 10, 22, 22]);
    let c = &t.controllers[0];
    assert_eq!(
        (c.serial.as_str(), c.numa_node.node()),
        ("NUMIO-8N-5", Some(topology::NodeId(5)))
    );
    assert_eq!(c.local_cpus, vec![topology::CpuId(5)]);
    assert!(t.notes.is_empty() && t.unreadable.is_empty());
}
