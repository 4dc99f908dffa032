//! Golden plans for every topology fixture (`tests/fixtures/sysfs/*` and the
//! in-memory mixed machine): the plan file, the fio job file and the
//! numactl lines under `local`, and the fio file under `spread`, `none` and,
//! where the machine has a node remote to its drives, `remote`.
//!
//! `UPDATE_GOLDEN=1 cargo test -p planner --test snapshots` rewrites them;
//! a fixture without goldens gets them written (and fails under `CI=true`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use planner::{plan, PlanRequest, Policy, TargetSpec, Workload};
use topology::CpuList;
use topology::Topology;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> Vec<(String, Topology)> {
    let dir = repo().join("tests/fixtures/sysfs");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out: Vec<(String, Topology)> = names
        .into_iter()
        .map(|n| {
            let topo =
                Topology::discover(&dir.join(&n)).unwrap_or_else(|e| panic!("fixture {n}: {e}"));
            (n, topo)
        })
        .collect();
    out.push(("mem-mixed".into(), common::mixed()));
    out
}

fn targets(topo: &Topology) -> Vec<String> {
    let mut t: Vec<String> = Vec::new();
    for ns in topo.subsystems.iter().flat_map(|s| &s.namespaces) {
        let p = format!("/dev/{}", ns.block_device);
        if !t.contains(&p) {
            t.push(p);
        }
    }
    t.push("/data/file.bin".into());
    t
}

fn request(targets: &[String], policy: Policy) -> PlanRequest {
    PlanRequest {
        targets: targets.iter().map(|t| TargetSpec::new(t.clone())).collect(),
        workload: Workload {
            numjobs: 4,
            ..Workload::default()
        },
        policy,
    }
}

fn check(golden: &Path, actual: &str, stale: &mut Vec<String>) {
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    match std::fs::read_to_string(golden) {
        Ok(want) if !update => {
            if want != actual {
                stale.push(format!(
                    "{} differs (UPDATE_GOLDEN=1 rewrites it):\n--- golden\n{want}\n--- actual\n{actual}",
                    golden.display()
                ));
            }
        }
        found => {
            std::fs::write(golden, actual).unwrap();
            if found.is_err() {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "{} was missing; run the test locally and commit it",
                    golden.display()
                );
                eprintln!(
                    "wrote new golden {}; review and commit it",
                    golden.display()
                );
            }
        }
    }
}

#[test]
fn plans_of_every_fixture_match_their_goldens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    std::fs::create_dir_all(&dir).unwrap();
    let fio = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut stale = Vec::new();
    for (name, topo) in fixtures() {
        let t = targets(&topo);
        let local = plan(&topo, &request(&t, Policy::Local)).unwrap();
        check(
            &dir.join(format!("{name}.local.plan.json")),
            &local.to_plan_file(),
            &mut stale,
        );
        check(
            &dir.join(format!("{name}.local.numactl")),
            &planner::numactl::to_numactl(&local),
            &mut stale,
        );
        let mut policies = vec![
            ("local", plan(&topo, &request(&t, Policy::Local)).unwrap()),
            ("spread", plan(&topo, &request(&t, Policy::Spread)).unwrap()),
            ("none", plan(&topo, &request(&t, Policy::None)).unwrap()),
        ];
        // remote: the NVMe targets with a node remote to them (a file has no
        // node; a one-node machine none); every other one refused as such.
        let mut drives = Vec::new();
        for d in t.iter().filter(|p| p.starts_with("/dev/")) {
            match plan(&topo, &request(std::slice::from_ref(d), Policy::Remote)) {
                Ok(_) => drives.push(d.clone()),
                Err(e) => assert!(
                    matches!(
                        e,
                        planner::PlanError::NoRemoteNode { .. }
                            | planner::PlanError::RemoteNodeUnknown { .. }
                            | planner::PlanError::LocalEverywhere { .. }
                    ),
                    "{name}: {e}"
                ),
            }
        }
        if !drives.is_empty() {
            policies.push((
                "remote",
                plan(&topo, &request(&drives, Policy::Remote)).unwrap(),
            ));
        }
        for (pname, p) in policies {
            let golden = dir.join(format!("{name}.{pname}.fio"));
            check(&golden, &planner::fio::to_job_file(&p), &mut stale);
            if fio {
                let out = Command::new("fio")
                    .arg("--parse-only")
                    .arg(&golden)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}: {}",
                    golden.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    assert!(stale.is_empty(), "{}", stale.join("\n\n"));
}

#[test]
fn sixteen_drive_fixture_gets_four_cores_and_siblings_per_drive() {
    let root = repo().join("tests/fixtures/sysfs/2s-448cpu-16nvme");
    if !root.exists() {
        panic!("fixture {} is missing", root.display());
    }
    let topo = Topology::discover(&root).unwrap();
    let drives: Vec<String> = (0..16).map(|i| format!("/dev/nvme{i}n1")).collect();
    let p = plan(&topo, &request(&drives, Policy::Local)).unwrap();
    let sets: Vec<String> = p
        .targets
        .iter()
        .map(|t| CpuList::of(&t.cpus).to_string())
        .collect();
    let want: Vec<String> = (0..16)
        .map(|i| format!("{}-{},{}-{}", 4 * i, 4 * i + 3, 112 + 4 * i, 115 + 4 * i))
        .collect();
    assert_eq!(sets, want);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn plan_files_of_every_fixture_load_back_unchanged() {
    for (name, topo) in fixtures() {
        let p = plan(&topo, &request(&targets(&topo), Policy::Local)).unwrap();
        let back = planner::Placement::from_plan_file(&p.to_plan_file(), Path::new(&name)).unwrap();
        assert_eq!(back, p, "{name}");
    }
}
