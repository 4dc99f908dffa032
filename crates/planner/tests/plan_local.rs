//! The `local` policy on in-memory topologies.

mod common;

use planner::{
    plan, DeviceBacking, MemPolicy, NetworkRoute, PlanRequest, Policy, TargetDevice, TargetSpec,
    Workload,
};
use topology::CpuList;
use topology::{CpuId, NodeId};

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

#[test]
fn sixteen_drives_get_four_cores_and_their_siblings_each() {
    let topo = common::sixteen_drives();
    let names: Vec<String> = (0..16).map(|i| format!("/dev/nvme{i}n1")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let p = plan(&topo, &request(&refs, 4, Policy::Local)).unwrap();
    let sets: Vec<String> = p
        .targets
        .iter()
        .map(|t| CpuList::of(&t.cpus).to_string())
        .collect();
    let want: Vec<String> = (0..16)
        .map(|i| format!("{}-{},{}-{}", 4 * i, 4 * i + 3, 112 + 4 * i, 115 + 4 * i))
        .collect();
    assert_eq!(sets, want);
    assert_eq!(sets[0], "0-3,112-115");
    assert_eq!(sets[15], "60-63,172-175");
    for (i, t) in p.targets.iter().enumerate() {
        assert_eq!(t.node, Some(NodeId(0)));
        let jobs: Vec<u32> = t.jobs.iter().map(|j| j.cpus[0].0).collect();
        let base = 4 * i as u32;
        assert_eq!(
            jobs,
            vec![base, base + 1, base + 2, base + 3],
            "primaries first"
        );
        assert!(t.jobs.iter().all(|j| j.mem == MemPolicy::Local));
    }
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn siblings_are_used_after_primaries() {
    let topo = common::sixteen_drives();
    let p = plan(&topo, &request(&["nvme0n1"], 6, Policy::Local)).unwrap();
    let jobs: Vec<u32> = p.targets[0].jobs.iter().map(|j| j.cpus[0].0).collect();
    assert_eq!(jobs, vec![0, 1, 2, 3, 4, 5]);
    // 300 jobs on 112 cores: every primary, then every sibling, then wrap.
    let p = plan(&topo, &request(&["nvme0n1"], 300, Policy::Local)).unwrap();
    let jobs: Vec<u32> = p.targets[0].jobs.iter().map(|j| j.cpus[0].0).collect();
    assert_eq!(&jobs[..3], &[0, 1, 2]);
    assert_eq!(jobs[112], 112);
    assert_eq!(jobs[224], 0);
    assert!(p
        .warnings
        .iter()
        .any(|w| w.contains("300 jobs on 112 physical cores")));
    assert!(
        jobs.iter().all(|&c| c < 224),
        "never remote while local has CPUs"
    );
}

#[test]
fn targets_share_cores_evenly_when_jobs_exceed_cores() {
    let topo = common::flat(8);
    let p = plan(&topo, &request(&["nvme0n1", "nvme1n1"], 8, Policy::Local)).unwrap();
    assert_eq!(CpuList::of(&p.targets[0].cpus).to_string(), "0-3");
    assert_eq!(CpuList::of(&p.targets[1].cpus).to_string(), "4-7");
    let j: Vec<u32> = p.targets[1].jobs.iter().map(|j| j.cpus[0].0).collect();
    assert_eq!(j, vec![4, 5, 6, 7, 4, 5, 6, 7]);
    assert_eq!(p.warnings.len(), 1);
}

#[test]
fn plans_are_deterministic() {
    let topo = common::sixteen_drives();
    let req = request(&["nvme3n1", "/tmp/file", "nvme1n1"], 3, Policy::Local);
    assert_eq!(plan(&topo, &req).unwrap(), plan(&topo, &req).unwrap());
}

#[test]
fn regular_file_falls_back_with_a_warning() {
    let topo = common::sixteen_drives();
    let p = plan(&topo, &request(&["/data/file.bin"], 1, Policy::Local)).unwrap();
    assert_eq!(p.targets[0].node, None);
    assert_eq!(p.targets[0].jobs[0].cpus, vec![CpuId(0)]);
    assert!(p.warnings[0].contains("regular file"), "{:?}", p.warnings);
    assert!(p.warnings[0].contains("fallback"), "{:?}", p.warnings);
}

#[test]
fn resolves_every_target_spelling() {
    let topo = common::mixed();
    let node = |t: &str| planner::resolve_target(&topo, t).node.map(|n| n.0);
    assert_eq!(node("/dev/nvme1n1"), Some(1));
    assert_eq!(node("nvme1n1"), Some(1));
    assert_eq!(node("/dev/ng1n1"), Some(1), "generic char device");
    assert_eq!(node("/dev/nvme1n1p3"), Some(1), "partition");
    assert_eq!(
        node("/dev/nvme9c6n1"),
        Some(1),
        "multipath path via its controller"
    );
    assert_eq!(
        node("/dev/nvme9n1"),
        Some(0),
        "multipath head: lowest node of its optimized paths"
    );
    assert_eq!(node("/dev/ng9n1"), Some(0));
    assert_eq!(node("/dev/nvme4n1"), None, "numa_node -1");
    assert_eq!(node("/dev/sda"), None);
    assert_eq!(node("/mnt/data/file"), None);
    let head = planner::resolve_target(&topo, "nvme9n1");
    assert!(
        head.notes[0].contains("paths on nodes 0,1"),
        "{:?}",
        head.notes
    );
    let remote = planner::resolve_target(&topo, "nvme-tcp://10.0.0.7/nqn.2014-08.org.example:a/1");
    assert_eq!(remote.node, None);
    assert!(
        remote.notes[0].contains("remote NVMe/TCP namespace"),
        "{:?}",
        remote.notes
    );
    let part = planner::resolve_target(&topo, "nvme1n1p3");
    assert!(
        part.notes[0].contains("partition of nvme1n1"),
        "{:?}",
        part.notes
    );
    let unknown = planner::resolve_target(&topo, "/dev/nvme4n1");
    assert!(
        unknown.notes[0].contains("numa_node -1"),
        "{:?}",
        unknown.notes
    );
}

#[test]
fn nodes_without_cpus_or_memory_borrow_from_the_nearest() {
    let topo = common::mixed();
    let p = plan(
        &topo,
        &request(&["/dev/nvme2n1", "/dev/nvme3n1"], 2, Policy::Local),
    )
    .unwrap();
    // nvme2: node 2 has memory but no CPUs; node 1 is nearest (14).
    let t = &p.targets[0];
    assert_eq!(t.node, Some(NodeId(2)));
    assert_eq!(CpuList::of(&t.cpus).to_string(), "8-9,12-13");
    assert_eq!(t.jobs[0].mem, MemPolicy::Bind(vec![NodeId(2)]));
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("node 2 has no online CPUs") && n.contains("node 1 (distance 14)")));
    // nvme3: node 3 has CPUs but no memory; node 0 is nearest (17).
    let t = &p.targets[1];
    assert_eq!(CpuList::of(&t.cpus).to_string(), "16-17");
    assert_eq!(t.jobs[0].mem, MemPolicy::Bind(vec![NodeId(0)]));
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("node 3 has no memory") && n.contains("node 0 (distance 17)")));
}

#[test]
fn spread_ignores_locality_and_none_pins_nothing() {
    let topo = common::mixed();
    let p = plan(
        &topo,
        &request(&["/dev/nvme0n1", "/dev/nvme1n1"], 3, Policy::Spread),
    )
    .unwrap();
    let all: Vec<u32> = p
        .targets
        .iter()
        .flat_map(|t| t.jobs.iter().map(|j| j.cpus[0].0))
        .collect();
    // Nodes 0, 1 and 3 have CPUs (node 2 none): job i on the i-th in turn.
    assert_eq!(all, vec![0, 8, 16, 1, 9, 17]);
    let mems: Vec<&MemPolicy> = p.targets[0].jobs.iter().map(|j| &j.mem).collect();
    // Node 3 has no memory: its job's buffers go to the nearest node, 0.
    assert_eq!(
        mems,
        vec![
            &MemPolicy::Local,
            &MemPolicy::Local,
            &MemPolicy::Bind(vec![NodeId(0)])
        ]
    );
    let p = plan(&topo, &request(&["/dev/nvme0n1"], 3, Policy::None)).unwrap();
    assert!(p.targets[0]
        .jobs
        .iter()
        .all(|j| j.cpus.is_empty() && j.mem == MemPolicy::Default));
    assert_eq!(p.targets[0].jobs.len(), 3);
    assert_eq!(p.policy, "none");
}

#[test]
fn explicit_lists_are_checked() {
    let topo = common::mixed();
    let lists = |v: &[(&str, &[u32])]| {
        Policy::Explicit(
            v.iter()
                .map(|(t, c)| (t.to_string(), c.iter().copied().map(CpuId).collect()))
                .collect(),
        )
    };
    let p = plan(
        &topo,
        &request(&["/dev/nvme0n1"], 3, lists(&[("nvme0n1", &[8, 2])])),
    )
    .unwrap();
    let jobs: Vec<u32> = p.targets[0].jobs.iter().map(|j| j.cpus[0].0).collect();
    assert_eq!(jobs, vec![2, 8, 2]);
    assert!(p.targets[0]
        .notes
        .iter()
        .any(|n| n.contains("CPUs 8 are not on the target's node 0")));
    let err = |pol: Policy| {
        plan(&topo, &request(&["/dev/nvme0n1"], 1, pol))
            .unwrap_err()
            .to_string()
    };
    assert!(err(lists(&[])).contains("--cpus-for /dev/nvme0n1=LIST"));
    assert!(err(lists(&[("nvme0n1", &[99])])).contains("CPU 99"));
    assert!(err(lists(&[("nvme0n1", &[])])).contains("empty"));
    assert!(err(lists(&[("nvme0n1", &[1]), ("nvme7n1", &[1])])).contains("nvme7n1"));
}

#[test]
fn bad_requests_are_errors() {
    let topo = common::mixed();
    assert!(plan(&topo, &request(&[], 1, Policy::Local))
        .unwrap_err()
        .to_string()
        .contains("no targets"));
    assert!(plan(&topo, &request(&["/x"], 0, Policy::Local))
        .unwrap_err()
        .to_string()
        .contains("numjobs is 0"));
}

#[test]
fn a_resolved_link_plans_on_its_device() {
    let topo = common::mixed();
    let mut req = request(&["/dev/disk/by-id/nvme-fixture-1"], 1, Policy::Local);
    let p = plan(&topo, &req).unwrap();
    assert_eq!(p.targets[0].node, None);
    req.targets[0].device = Some(TargetDevice::Name("nvme1n1".into()));
    let p = plan(&topo, &req).unwrap();
    assert_eq!(p.targets[0].node, Some(NodeId(1)));
    assert_eq!(p.targets[0].path, "/dev/disk/by-id/nvme-fixture-1");
    assert!(
        p.targets[0].notes[0].contains("is nvme1n1"),
        "{:?}",
        p.targets[0].notes
    );
}

#[test]
fn a_file_plans_on_the_node_of_the_nvme_beneath_it() {
    let topo = common::mixed();
    let mut req = request(&["/mnt/nvme/data.bin", "/span/data.bin"], 1, Policy::Local);
    let on = |namespaces: &[&str]| {
        Some(TargetDevice::Stack(DeviceBacking {
            via: format!("a file on {}", namespaces.join(" and ")),
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            others: Vec::new(),
        }))
    };
    req.targets[0].device = on(&["nvme1n1"]);
    req.targets[1].device = on(&["nvme0n1", "nvme1n1"]);
    let p = plan(&topo, &req).unwrap();
    assert_eq!(p.targets[0].node, Some(NodeId(1)));
    assert_eq!(
        p.targets[0].notes[0],
        "/mnt/nvme/data.bin is a file on nvme1n1: node 1, nvme1n1's"
    );
    assert!(
        topo.online_cpus_of(NodeId(1))
            .contains(&p.targets[0].jobs[0].cpus[0]),
        "runs on node 1: {:?}",
        p.targets[0].jobs
    );
    assert_eq!(p.targets[1].node, None, "a stack over two nodes");
    assert!(
        p.targets[1].notes[0].contains("sit on nodes 0,1"),
        "{:?}",
        p.targets[1].notes
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.starts_with("/span/data.bin is ") && w.contains("fallback")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_plan_made_elsewhere_is_refused_by_check_on() {
    let big = common::sixteen_drives();
    let p = plan(&big, &request(&["/dev/nvme9n1"], 4, Policy::Local)).unwrap();
    p.check_on(&big).unwrap();
    let err = p.check_on(&common::flat(2)).unwrap_err().to_string();
    assert!(
        err.contains("target /dev/nvme9n1: CPU 2 is not online"),
        "{err}"
    );
}

#[test]
fn passthru_on_a_block_device_names_the_generic_device() {
    let topo = common::mixed();
    let mut req = request(&["/dev/nvme1n1", "/dev/ng0n1"], 1, Policy::Local);
    for t in &mut req.targets {
        t.backend = Some("passthru".into());
    }
    let p = plan(&topo, &req).unwrap();
    assert_eq!(
        p.warnings,
        vec![
            "/dev/nvme1n1: the passthru backend drives the generic device; use /dev/ng1n1"
                .to_string()
        ]
    );
}

#[test]
fn multipath_head_under_numa_iopolicy_splits_jobs_over_its_path_nodes() {
    let topo = common::mixed();
    let p = plan(&topo, &request(&["/dev/nvme9n1"], 4, Policy::Local)).unwrap();
    let jobs: Vec<u32> = p.targets[0].jobs.iter().map(|j| j.cpus[0].0).collect();
    assert_eq!(jobs, vec![0, 1, 8, 9], "two jobs on node 0, two on node 1");
    assert_eq!(
        CpuList::of(&p.targets[0].cpus).to_string(),
        "0-1,4-5,8-9,12-13"
    );
    assert!(
        p.targets[0].notes[0].contains("iopolicy numa"),
        "{:?}",
        p.targets[0].notes
    );
    // Three jobs: the first node takes the remainder.
    let p = plan(&topo, &request(&["/dev/nvme9n1"], 3, Policy::Local)).unwrap();
    let jobs: Vec<u32> = p.targets[0].jobs.iter().map(|j| j.cpus[0].0).collect();
    assert_eq!(jobs, vec![0, 1, 8]);
    // Under round-robin the path does not follow the CPU: one node.
    let mut rr = common::mixed();
    for s in &mut rr.subsystems {
        s.iopolicy = Some("round-robin".into());
    }
    let p = plan(&rr, &request(&["/dev/nvme9n1"], 4, Policy::Local)).unwrap();
    let jobs: Vec<u32> = p.targets[0].jobs.iter().map(|j| j.cpus[0].0).collect();
    assert_eq!(jobs, vec![0, 1, 2, 3]);
    assert!(p.targets[0].notes[0].contains("round-robin does not pick paths by CPU"));
}

// Regression: with native multipath the head `nvme0n1` may belong to controller
// `nvme1`; the planner guessed the controller from the name instead of asking
// discovery (`Namespace.controller`).
#[test]
fn a_head_resolves_through_its_real_controller_not_its_name() {
    let (nodes, cpus) = common::smt_sockets(2, 2);
    let ctrls = [
        common::CtrlSpec {
            name: "nvme0".into(),
            node: Some(0),
        },
        common::CtrlSpec {
            name: "nvme1".into(),
            node: Some(1),
        },
    ];
    let mut topo = common::build(&nodes, &cpus, &ctrls, vec![]);
    // Swap the heads: nvme0n1 sits on nvme1 (node 1), nvme1n1 on nvme0 (node 0).
    topo.subsystems[0].namespaces[0].block_device = "nvme1n1".into();
    topo.subsystems[0].namespaces[0].generic_device = Some("ng1n1".into());
    topo.subsystems[0].namespaces[0].controller = Some("nvme0".into());
    topo.subsystems[1].namespaces[0].block_device = "nvme0n1".into();
    topo.subsystems[1].namespaces[0].generic_device = Some("ng0n1".into());
    topo.subsystems[1].namespaces[0].controller = Some("nvme1".into());
    let node = |t: &str| planner::resolve_target(&topo, t).node.map(|n| n.0);
    assert_eq!(node("/dev/nvme0n1"), Some(1));
    assert_eq!(node("nvme1n1"), Some(0));
    assert_eq!(
        node("/dev/nvme0n1p1"),
        Some(1),
        "partition of the swapped head"
    );
}

/// Issue #16: `--jobs` had no upper bound (`--jobs 10000` took 8 GB of
/// memory and crashed); a target takes 4096 jobs at most, as in fio, and a
/// run 4096 in all.
#[test]
fn jobs_are_bounded_per_target_and_in_all() {
    let topo = common::sixteen_drives();
    let err = plan(&topo, &request(&["/dev/nvme0n1"], 10_000, Policy::Local)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "target /dev/nvme0n1: numjobs is 10000; give 1 to 4096 jobs per target (fio's limit too)"
    );
    let two = ["/dev/nvme0n1", "/dev/nvme1n1"];
    let err = plan(&topo, &request(&two, 2049, Policy::Local)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "4098 jobs in all (2 targets); one run takes at most 4096: fewer --jobs or fewer targets"
    );
    plan(&topo, &request(&two, 2048, Policy::None)).expect("4096 in all is allowed");
}

#[test]
fn an_nvme_tcp_namespace_plans_on_the_node_of_its_nic() {
    let topo = common::mixed();
    let url = "nvme-tcp://10.0.0.9:4420/nqn.2026-01.io.numio:a";
    let mut req = request(&[url], 1, Policy::Local);
    let route = |portal: &str, interface: &str, node: Option<u32>| NetworkRoute {
        portal: portal.into(),
        interface: Some(interface.into()),
        node: node.map(NodeId),
    };
    req.targets[0].device = Some(TargetDevice::Network(vec![route(
        "10.0.0.9:4420",
        "ens1f0",
        Some(1),
    )]));
    let p = plan(&topo, &req).unwrap();
    assert_eq!(p.targets[0].node, Some(NodeId(1)));
    assert!(
        topo.online_cpus_of(NodeId(1))
            .contains(&p.targets[0].jobs[0].cpus[0]),
        "runs on the NIC's node: {:?}",
        p.targets[0].jobs
    );
    assert!(
        p.targets[0].notes[0].contains("reached as 10.0.0.9:4420 through ens1f0 (NUMA node 1)"),
        "{:?}",
        p.targets[0].notes
    );
    // Loopback (and a node the machine does not have) places nothing: the
    // stated fallback, with the interfaces named.
    req.targets[0].device = Some(TargetDevice::Network(vec![
        route("127.0.0.1:4420", "lo", None),
        route("10.0.0.9:4420", "ens9", Some(7)),
    ]));
    let p = plan(&topo, &req).unwrap();
    assert_eq!(p.targets[0].node, None);
    assert!(
        p.targets[0].notes[0].contains("127.0.0.1:4420 through lo")
            && p.targets[0].notes[0].contains("no interface with a NUMA node"),
        "{:?}",
        p.targets[0].notes
    );
}

#[test]
fn a_pci_controller_plans_on_its_node_and_a_node_of_minus_one_is_said() {
    let topo = common::mixed();
    let mut req = request(&["pci:0000:41:00.0/1"], 1, Policy::Local);
    req.targets[0].device = Some(TargetDevice::Pci {
        address: "0000:41:00.0".into(),
        node: Some(NodeId(1)),
    });
    let p = plan(&topo, &req).unwrap();
    assert_eq!(p.targets[0].node, Some(NodeId(1)));
    assert!(
        topo.online_cpus_of(NodeId(1))
            .contains(&p.targets[0].jobs[0].cpus[0]),
        "runs on the controller's node: {:?}",
        p.targets[0].jobs
    );
    req.targets[0].device = Some(TargetDevice::Pci {
        address: "0000:41:00.0".into(),
        node: None,
    });
    let p = plan(&topo, &req).unwrap();
    assert_eq!(p.targets[0].node, None);
    assert!(
        p.targets[0].notes[0].contains("no NUMA node for the PCI controller 0000:41:00.0"),
        "{:?}",
        p.targets[0].notes
    );
}

// Issue 38: `--jobs 4096` took 6.4 GB (1.6 MB a job, mostly latency
// histograms) without a word.
#[test]
fn hundreds_of_jobs_are_warned_of_their_memory() {
    let topo = common::sixteen_drives();
    let p = plan(&topo, &request(&["nvme0n1"], 256, Policy::Local)).unwrap();
    assert!(
        !p.warnings.iter().any(|w| w.contains("GB")),
        "{:?}",
        p.warnings
    );
    let p = plan(
        &topo,
        &request(&["nvme0n1", "nvme1n1"], 2048, Policy::Local),
    )
    .unwrap();
    let w: Vec<&String> = p.warnings.iter().filter(|w| w.contains("GB")).collect();
    assert_eq!(
        w,
        ["4096 jobs: their latency histograms and counters take about 6.6 GB (1.6 MB a job) and long to tear down; above 256 jobs, fewer --jobs with a deeper --iodepth give the same load"],
    );
}

/// Issue 39: on a one-node machine a file's unknown node does not matter
/// (the only node is the right one), so it is the target's note and not a
/// warning; with several nodes the warning names the target once.
#[test]
fn an_unknown_node_warns_only_where_there_is_a_choice() {
    let req = request(&["/tmp/data.bin"], 1, Policy::Local);
    let p = plan(&common::flat(2), &req).unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(
        p.targets[0].notes,
        vec!["/tmp/data.bin is a regular file (or not under /dev): its NUMA node is not known"]
    );
    let p = plan(&common::mixed(), &req).unwrap();
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert_eq!(
        p.warnings[0].matches("/tmp/data.bin").count(),
        2,
        "{}",
        p.warnings[0]
    );
}
