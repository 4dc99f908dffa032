//! The `local` policy on in-memory topologies.

mod common;

use planner::cpuset::format_cpu_list;
use planner::{plan, MemPolicy, PlanRequest, Policy, TargetSpec, Workload};
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
    let sets: Vec<String> = p.targets.iter().map(|t| format_cpu_list(&t.cpus)).collect();
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
    assert_eq!(format_cpu_list(&p.targets[0].cpus), "0-3");
    assert_eq!(format_cpu_list(&p.targets[1].cpus), "4-7");
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
