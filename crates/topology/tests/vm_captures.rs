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
