//! Generated job files checked by the real fio (Debian's `fio`).
//!
//! - Every generated file passes `fio --parse-only`, on every topology
//!   (including CPUs this machine lacks: parse-only does not pin).
//! - On a topology made of this machine's own CPUs, fio runs the file with
//!   the null engine and each job reports the CPUs it is allowed on (read by
//!   the job process itself through fio's `exec_prerun`); they must be
//!   exactly the planned ones. Real pinning to CPUs the machine lacks is
//!   impossible, so the big topologies get the parse-only check.
//!
//! Without fio the tests print why and pass; under `CI=true` they fail.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use planner::cpuset::parse_cpu_list;
use planner::fio::to_job_file;
use planner::{
    plan, JobPlacement, MemPolicy, Placement, PlanRequest, Policy, TargetSpec, Workload,
};
use topology::{CpuId, CpuList, Topology};

fn have_fio(test: &str) -> bool {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: fio is not installed and CI=true; scripts/install-deps installs it"
        );
        eprintln!("{test}: skipped: fio is not installed (apt-get install fio)");
    }
    ok
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("planner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn parse_only(dir: &Path, label: &str, text: &str) {
    let file = dir.join(format!("{label}.fio"));
    std::fs::write(&file, text).unwrap();
    let out = Command::new("fio")
        .arg("--parse-only")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{label}: fio --parse-only rejected the file:\n{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
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

fn namespaces(topo: &Topology) -> Vec<String> {
    topo.subsystems
        .iter()
        .flat_map(|s| {
            s.namespaces
                .iter()
                .map(|n| format!("/dev/{}", n.block_device))
        })
        .collect()
}

#[test]
fn every_generated_file_passes_fio_parse_only() {
    if !have_fio("every_generated_file_passes_fio_parse_only") {
        return;
    }
    let dir = scratch("parse-only");
    let topos = [
        ("sixteen", common::sixteen_drives()),
        ("mixed", common::mixed()),
        ("flat2", common::flat(2)),
    ];
    for (name, topo) in &topos {
        let mut targets = namespaces(topo);
        targets.push("/data/file.bin".into());
        targets.push("ng0n1".into());
        let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
        let explicit = Policy::Explicit(
            refs.iter()
                .map(|t| (t.to_string(), vec![CpuId(0), CpuId(1)]))
                .collect(),
        );
        for (pname, policy) in [
            ("local", Policy::Local),
            ("spread", Policy::Spread),
            ("none", Policy::None),
            ("explicit", explicit),
        ] {
            for jobs in [1, 4, 9] {
                let p = plan(topo, &request(&refs, jobs, policy.clone())).unwrap();
                parse_only(&dir, &format!("{name}-{pname}-{jobs}"), &to_job_file(&p));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// CPUs this process may run on (the machine's, minus any cpuset limit).
fn my_cpus() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap();
    parse_cpu_list(line.split(':').nth(1).unwrap())
        .unwrap()
        .into_iter()
        .map(|c| c.0)
        .collect()
}

/// Rewrites a generated file to run quickly on scratch files with the null
/// engine, each job appending `SECTION<TAB>allowed CPUs` to `report`.
fn runnable(text: &str, dir: &Path, report: &Path) -> String {
    let drop = [
        "ioengine=",
        "size=",
        "runtime=",
        "time_based",
        "ramp_time=",
        "direct=",
        "filename=",
    ];
    let mut out = String::new();
    for line in text.lines() {
        if drop.iter().any(|d| line.starts_with(d)) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if line == "[global]" {
            out.push_str("ioengine=null\nsize=1m\n");
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let file = dir.join(format!("{name}.dat"));
            out.push_str(&format!("filename={}\n", file.display()));
            out.push_str(&format!(
                "exec_prerun=sh -c \"sed -n 's/Cpus_allowed_list:/{name}/p' /proc/self/status >> {}\"\n",
                report.display()
            ));
        }
    }
    out
}

/// Runs `placement` through fio; returns section → sorted CPU lists of its
/// jobs as the job processes saw them, and checks fio's JSON job count.
fn run_fio(label: &str, placement: &Placement) -> BTreeMap<String, Vec<String>> {
    let dir = scratch(label);
    let report = dir.join("cpus.txt");
    let file = dir.join("job.fio");
    let text = runnable(&to_job_file(placement), &dir, &report);
    std::fs::write(&file, &text).unwrap();
    let out = Command::new("fio")
        .current_dir(&dir)
        .args(["--output-format=json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{label}: fio failed:\n{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    // fio prints "NAME : Saving output of prerun in …" lines before the JSON.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout.find("\n{").map_or(0, |i| i + 1);
    let json: serde_json::Value = serde_json::from_str(&stdout[start..])
        .unwrap_or_else(|e| panic!("{label}: fio's JSON: {e}\n{stdout}"));
    let jobs = json["jobs"].as_array().unwrap();
    let planned: usize = placement.targets.iter().map(|t| t.jobs.len()).sum();
    assert_eq!(jobs.len(), planned, "{label}: fio ran every planned job");
    assert!(
        jobs.iter().all(|j| j["error"] == 0),
        "{label}: a job failed: {json}"
    );
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(&report).unwrap().lines() {
        let (section, cpus) = line.split_once('\t').unwrap();
        seen.entry(section.to_string())
            .or_default()
            .push(cpus.trim().to_string());
    }
    for v in seen.values_mut() {
        v.sort();
    }
    std::fs::remove_dir_all(&dir).unwrap();
    seen
}

/// What the plan says each section's jobs get (a target written as one
/// section per job has sections `name.0`, `name.1`, …).
fn planned(placement: &Placement) -> BTreeMap<String, Vec<String>> {
    let text = to_job_file(placement);
    let mut want: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in &placement.targets {
        let per_job_sections = text.contains(&format!("[{}.0]", t.job_name()));
        for (i, j) in t.jobs.iter().enumerate() {
            let section = if per_job_sections {
                format!("{}.{i}", t.job_name())
            } else {
                t.job_name()
            };
            want.entry(section)
                .or_default()
                .push(CpuList::of(&j.cpus).to_string());
        }
    }
    for v in want.values_mut() {
        v.sort();
    }
    want
}

#[test]
fn fio_pins_every_job_to_exactly_the_planned_cpus() {
    if !have_fio("fio_pins_every_job_to_exactly_the_planned_cpus") {
        return;
    }
    let cpus = my_cpus();
    if cpus.len() < 2 {
        eprintln!("fio_pins_every_job_to_exactly_the_planned_cpus: skipped: needs 2 CPUs, this process may use {cpus:?}");
        return;
    }
    let (c0, c1) = (cpus[0], cpus[1]);
    let topo = common::flat_cpus(&cpus[..2]);
    let cases = [
        (
            "local-two-targets",
            request(&["/x/a", "/x/b"], 1, Policy::Local),
        ),
        ("local-split", request(&["/x/a"], 2, Policy::Local)),
        (
            "local-oversubscribed",
            request(&["/x/a", "/x/b"], 3, Policy::Local),
        ),
        (
            "spread",
            request(&["/x/a", "/x/b", "/x/c"], 1, Policy::Spread),
        ),
        (
            "explicit",
            request(
                &["/x/a", "/x/b"],
                2,
                Policy::Explicit(vec![
                    ("/x/a".into(), vec![CpuId(c1)]),
                    ("/x/b".into(), vec![CpuId(c0), CpuId(c1)]),
                ]),
            ),
        ),
    ];
    for (label, req) in cases {
        let p = plan(&topo, &req).unwrap();
        assert!(p
            .targets
            .iter()
            .all(|t| t.jobs.iter().all(|j| !j.cpus.is_empty())));
        assert_eq!(run_fio(label, &p), planned(&p), "{label}");
    }
    // fio's split counts jobs across sections: a section starting at an odd
    // job number must not be written as split over its whole set.
    let mut req = request(
        &["/x/a", "/x/b"],
        2,
        Policy::Explicit(vec![
            ("/x/a".into(), vec![CpuId(c1)]),
            ("/x/b".into(), vec![CpuId(c0), CpuId(c1)]),
        ]),
    );
    req.targets[0].workload = Some(Workload {
        numjobs: 1,
        ..Workload::default()
    });
    let p = plan(&topo, &req).unwrap();
    assert!(
        to_job_file(&p).contains("[b.1]"),
        "split over b's set would give b's jobs {c1}, {c0}"
    );
    assert_eq!(run_fio("explicit-odd-offset", &p), planned(&p));
    // Two targets on one core with two SMT siblings (the vendor layout in
    // miniature): each gets the core's primary, b's section starts at job 1.
    let pair = common::smt_pair(c0, c1);
    let p = plan(&pair, &request(&["/x/a", "/x/b"], 1, Policy::Local)).unwrap();
    assert_eq!(
        CpuList::of(&p.targets[1].cpus).to_string(),
        CpuList::of(&[CpuId(c0), CpuId(c1)]).to_string()
    );
    assert_eq!(run_fio("smt-pair", &p), planned(&p));
    // Jobs in an order fio's split cannot give: one section per job.
    let mut p = plan(&topo, &request(&["/x/a"], 2, Policy::Local)).unwrap();
    p.targets[0].jobs = vec![
        JobPlacement {
            cpus: vec![CpuId(c1)],
            mem: MemPolicy::Local,
        },
        JobPlacement {
            cpus: vec![CpuId(c0)],
            mem: MemPolicy::Local,
        },
    ];
    assert!(to_job_file(&p).contains("[a.1]"));
    assert_eq!(run_fio("per-job", &p), planned(&p));
}

#[test]
fn fio_split_counts_jobs_globally_as_the_parser_assumes() {
    if !have_fio("fio_split_counts_jobs_globally_as_the_parser_assumes") {
        return;
    }
    let cpus = my_cpus();
    if cpus.len() < 2 {
        eprintln!("fio_split_counts_jobs_globally_as_the_parser_assumes: skipped: needs 2 CPUs");
        return;
    }
    let topo = common::flat_cpus(&cpus[..2]);
    let set = CpuList::of(&[CpuId(cpus[0]), CpuId(cpus[1])]).to_string();
    let text = format!(
        "[global]\ncpus_allowed={set}\ncpus_allowed_policy=split\n[a]\nfilename=/x/a\n[b]\nfilename=/x/b\n"
    );
    let p = planner::fio::parse_job_text(&text, Path::new("split.fio"), &Default::default())
        .unwrap()
        .to_placement(&topo, false)
        .unwrap();
    // Section b's only job is fio's job 1, so it gets the second CPU.
    assert_eq!(p.targets[1].jobs[0].cpus, vec![CpuId(cpus[1])]);
    assert_eq!(run_fio("global-split", &p), planned(&p));
}

/// Splits a command line like a shell would for plain words and
/// double-quoted strings (enough for `fio --showcmd` output).
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[test]
fn fio_showcmd_of_a_job_file_reads_back_as_the_same_jobs() {
    if !have_fio("fio_showcmd_of_a_job_file_reads_back_as_the_same_jobs") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio");
    let (nodes, cpus) = common::smt_sockets(2, 4);
    let mut ctrls = common::ctrls_on(0, 1, Some(0));
    ctrls.push(common::CtrlSpec {
        name: "nvme16".into(),
        node: Some(1),
    });
    let two = common::build(&nodes, &cpus, &ctrls, vec![]);
    for (file, topo) in [
        ("vendor-16.fio", common::sixteen_drives()),
        ("dual-socket.fio", two),
        ("cmdline.fio", common::flat(8)),
    ] {
        let out = Command::new("fio")
            .current_dir(&dir)
            .args(["--showcmd", file])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let words = split_words(&String::from_utf8_lossy(&out.stdout));
        let opts = planner::fio::ParseOptions::default();
        let from_cmd = planner::fio::parse_command_line(&words, &opts)
            .unwrap_or_else(|e| panic!("{file}: {e}\n{words:?}"))
            .to_placement(&topo, false)
            .unwrap();
        let from_file = planner::fio::load_job_file(&dir.join(file), &opts)
            .unwrap()
            .to_placement(&topo, false)
            .unwrap();
        assert_eq!(from_cmd.targets, from_file.targets, "{file}");
    }
}

#[test]
fn job_files_written_back_from_fixtures_pass_fio_parse_only() {
    if !have_fio("job_files_written_back_from_fixtures_pass_fio_parse_only") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio");
    let scratch_dir = scratch("written-back");
    let (nodes, cpus) = common::smt_sockets(2, 4);
    let mut ctrls = common::ctrls_on(0, 1, Some(0));
    ctrls.push(common::CtrlSpec {
        name: "nvme16".into(),
        node: Some(1),
    });
    let two = common::build(&nodes, &cpus, &ctrls, vec![]);
    for (file, topo) in [
        ("vendor-16.fio", common::sixteen_drives()),
        ("dual-socket.fio", two),
        ("cmdline.fio", common::flat(8)),
        ("all-options.fio", common::flat(4)),
    ] {
        let jf = planner::fio::load_job_file(&dir.join(file), &Default::default()).unwrap();
        let p = jf.to_placement(&topo, true).unwrap();
        parse_only(
            &scratch_dir,
            file.trim_end_matches(".fio"),
            &to_job_file(&p),
        );
    }
    std::fs::remove_dir_all(&scratch_dir).unwrap();
}
