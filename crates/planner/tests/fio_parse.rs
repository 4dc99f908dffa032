//! Reading fio job files and command lines; converting them to placements;
//! the fio → numio → fio round trip; errors with file and line.

mod common;

use std::path::{Path, PathBuf};

use planner::fio::{
    load_job_file, parse_command_line, parse_job_text, to_job_file, FioError, OptionError,
    ParseOptions,
};
use planner::{Distribution, MemPolicy, RwMode};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use topology::CpuList;
use topology::{CpuId, NodeId};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/fio")
        .join(name)
}

fn load(name: &str) -> Result<planner::fio::JobFile, FioError> {
    load_job_file(&fixture(name), &ParseOptions::default())
}

#[test]
fn vendor_file_reads_sixteen_sections() {
    let jf = load("vendor-16.fio").unwrap();
    assert_eq!(jf.jobs.len(), 16);
    let j = &jf.jobs[3];
    assert_eq!(j.name, "drive3");
    assert_eq!(j.filename.as_deref(), Some("/dev/nvme3n1"));
    assert_eq!(j.workload.rw, RwMode::RandRead);
    assert_eq!(j.workload.iodepth, 32);
    assert_eq!(j.workload.numjobs, 4);
    assert_eq!(j.workload.runtime_ns, Some(60_000_000_000));
    assert_eq!(j.workload.ramp_time_ns, 5_000_000_000);
    assert!(j.workload.time_based && j.workload.direct);
    assert_eq!(j.backend, "uring");
    assert!(j.options.group_reporting && j.options.new_group);
    assert_eq!(
        CpuList::of(&j.cpus_allowed.as_ref().unwrap().value).to_string(),
        "12-15,124-127"
    );
}

#[test]
fn vendor_file_pins_as_fio_does_with_global_job_numbers() {
    // fio's cpus_allowed_policy=split picks CPU (global job number mod set
    // size): drive1's jobs are jobs 4..7, so they land on 116-119, the SMT
    // siblings of its cores, not on 4-7.
    let topo = common::sixteen_drives();
    let p = load("vendor-16.fio")
        .unwrap()
        .to_placement(&topo, false)
        .unwrap();
    let cpus = |t: usize| -> Vec<u32> { p.targets[t].jobs.iter().map(|j| j.cpus[0].0).collect() };
    assert_eq!(cpus(0), vec![0, 1, 2, 3]);
    assert_eq!(cpus(1), vec![116, 117, 118, 119]);
    assert_eq!(cpus(2), vec![8, 9, 10, 11]);
    assert_eq!(
        CpuList::of(&p.targets[15].cpus).to_string(),
        "60-63,172-175"
    );
    assert!(p.targets.iter().all(|t| t.node == Some(NodeId(0))));
    assert_eq!(p.policy, "fio");
}

#[test]
fn numa_cpu_nodes_and_bind_policies() {
    let (nodes, cpus) = common::smt_sockets(2, 4);
    let mut ctrls = common::ctrls_on(0, 1, Some(0));
    ctrls.push(common::CtrlSpec {
        name: "nvme16".into(),
        node: Some(1),
    });
    let topo = common::build(&nodes, &cpus, &ctrls, vec![]);
    let jf = load("dual-socket.fio").unwrap();
    assert!(
        jf.warnings.iter().any(|w| w.contains("libaio")),
        "{:?}",
        jf.warnings
    );
    let p = jf.to_placement(&topo, false).unwrap();
    assert_eq!(CpuList::of(&p.targets[0].jobs[0].cpus).to_string(), "0-7");
    assert_eq!(CpuList::of(&p.targets[1].jobs[0].cpus).to_string(), "8-15");
    // split applies to cpus_allowed only, never to numa_cpu_nodes.
    let text = "[global]\ncpus_allowed_policy=split\nnumjobs=2\n[a]\nfilename=/dev/nvme0n1\nnuma_cpu_nodes=1\n";
    let q = parse_job_text(text, Path::new("n.fio"), &ParseOptions::default())
        .unwrap()
        .to_placement(&topo, false)
        .unwrap();
    assert!(q.targets[0]
        .jobs
        .iter()
        .all(|j| CpuList::of(&j.cpus).to_string() == "8-15"));
    assert_eq!(p.targets[1].jobs[0].mem, MemPolicy::Bind(vec![NodeId(1)]));
    assert_eq!(p.targets[1].node, Some(NodeId(1)));
    assert!(p.targets[1].options.stonewall);
    assert_eq!(p.targets[0].workload.bs_min_bytes, 4096);
    assert_eq!(p.targets[0].workload.bs_max_bytes, 65536);
    assert_eq!(p.targets[0].workload.rwmixread, 70);
    assert_eq!(p.targets[0].backend.as_deref(), Some("uring"));
    assert_eq!(p.targets[0].options.ioengine.as_deref(), Some("libaio"));
}

#[test]
fn every_supported_option_is_read() {
    let jf = load("all-options.fio").unwrap();
    let [a, b, c] = &jf.jobs[..] else {
        panic!("three jobs")
    };
    assert_eq!(a.workload.rw, RwMode::RandRw);
    assert_eq!(a.workload.rwmixread, 70);
    assert_eq!(
        (a.workload.bs_min_bytes, a.workload.bs_max_bytes),
        (4096, 16384)
    );
    assert_eq!(a.workload.size_bytes, Some(1 << 30));
    assert_eq!(a.workload.offset_bytes, 1 << 20);
    assert_eq!(a.workload.runtime_ns, Some(1_500_000_000));
    assert_eq!(a.workload.number_ios, Some(100_000));
    assert_eq!(a.workload.rate_iops, Some(5000));
    assert_eq!(a.workload.random_distribution, Distribution::Zipf(1.2));
    assert_eq!(a.workload.randseed, 42);
    assert!(a.workload.norandommap && a.workload.direct && a.options.thread);
    assert_eq!(a.options.description.as_deref(), Some("first job"));
    assert_eq!(a.options.hipri, Some(true));
    assert_eq!(a.options.fixedbufs, Some(true));
    assert_eq!(a.options.registerfiles, Some(true));
    assert_eq!(a.options.sqthread_poll, Some(false));
    assert_eq!(b.options.hipri, None);
    assert_eq!(b.name, "b-renamed");
    assert_eq!(b.backend, "passthru");
    assert!(!b.workload.direct);
    assert_eq!(b.workload.runtime_ns, None);
    assert_eq!(b.workload.size_bytes, None);
    assert_eq!(b.workload.rw, RwMode::Read);
    assert_eq!(c.filename.as_deref(), Some("/data/with:colon.bin"));
    assert_eq!(c.workload.runtime_ns, Some(3_600_000_000_000));
    assert_eq!(c.backend, "null");
    assert_eq!(c.options.wait_for.as_deref(), Some("a"));
}

#[test]
fn round_trip_fio_numio_fio_preserves_every_option() {
    let topo = common::flat(4);
    for name in [
        "all-options.fio",
        "vendor-16.fio",
        "dual-socket.fio",
        "cmdline.fio",
    ] {
        let topo = if name == "vendor-16.fio" {
            common::sixteen_drives()
        } else if name == "dual-socket.fio" {
            let (nodes, cpus) = common::smt_sockets(2, 4);
            let mut ctrls = common::ctrls_on(0, 1, Some(0));
            ctrls.push(common::CtrlSpec {
                name: "nvme16".into(),
                node: Some(1),
            });
            common::build(&nodes, &cpus, &ctrls, vec![])
        } else if name == "cmdline.fio" {
            common::flat(8)
        } else {
            topo.clone()
        };
        let p1 = load(name).unwrap().to_placement(&topo, false).unwrap();
        let text = to_job_file(&p1);
        let p2 = parse_job_text(&text, Path::new("emitted.fio"), &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{name}: emitted file does not parse: {e}\n{text}"))
            .to_placement(&topo, false)
            .unwrap();
        assert_eq!(p1.targets.len(), p2.targets.len(), "{name}");
        for (a, b) in p1.targets.iter().zip(&p2.targets) {
            assert_eq!(a.path, b.path, "{name}");
            assert_eq!(a.workload, b.workload, "{name}: {}", a.path);
            assert_eq!(a.jobs, b.jobs, "{name}: {}", a.path);
            assert_eq!(a.cpus, b.cpus, "{name}: {}", a.path);
            assert_eq!(a.backend, b.backend, "{name}: {}", a.path);
            assert_eq!(a.name, b.name, "{name}: {}", a.path);
            assert_eq!(a.options, b.options, "{name}: {}", a.path);
        }
        let options = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.starts_with(';'))
                .map(String::from)
                .collect()
        };
        assert_eq!(
            options(&to_job_file(&p2)),
            options(&text),
            "{name}: emission is stable"
        );
    }
}

#[test]
fn command_line_form_equals_the_job_file() {
    let text = std::fs::read_to_string(fixture("cmdline.txt")).unwrap();
    let args: Vec<String> = text.split_whitespace().map(String::from).collect();
    let cl = parse_command_line(&args, &ParseOptions::default()).unwrap();
    assert!(
        cl.warnings.iter().any(|w| w.contains("--output-format")),
        "{:?}",
        cl.warnings
    );
    let file = load("cmdline.fio").unwrap();
    let topo = common::flat(8);
    let a = cl.to_placement(&topo, false).unwrap();
    let b = file.to_placement(&topo, false).unwrap();
    assert_eq!(a.targets, b.targets);
    // `--key value` works for options that take a value.
    let args: Vec<String> = [
        "--name",
        "x",
        "--filename",
        "/dev/nvme0n1",
        "--bs",
        "8k",
        "--direct",
    ]
    .map(String::from)
    .to_vec();
    let cl = parse_command_line(&args, &ParseOptions::default()).unwrap();
    assert_eq!(cl.jobs[0].workload.bs_min_bytes, 8192);
    assert!(cl.jobs[0].workload.direct);
}

#[test]
fn numa_auto_places_jobs_without_cpus() {
    let topo = common::sixteen_drives();
    let text = "[global]\nnumjobs=4\n[a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme1n1\ncpus_allowed=100\n";
    let jf = parse_job_text(text, Path::new("auto.fio"), &ParseOptions::default()).unwrap();
    let off = jf.to_placement(&topo, false).unwrap();
    assert!(off.targets[0].jobs.iter().all(|j| j.cpus.is_empty()));
    let auto = jf.to_placement(&topo, true).unwrap();
    assert_eq!(
        CpuList::of(&auto.targets[0].cpus).to_string(),
        "0-3,112-115"
    );
    assert_eq!(auto.targets[0].jobs[1].cpus, vec![CpuId(1)]);
    assert_eq!(
        auto.targets[1].jobs[0].cpus,
        vec![CpuId(100)],
        "pinned jobs stay as written"
    );
    assert_eq!(auto.policy, "fio+local");
}

fn err(name: &str) -> String {
    load(name).unwrap_err().to_string()
}

#[test]
fn unknown_option_names_file_line_and_fix() {
    let e = err("bad/unknown-option.fio");
    assert!(e.contains("bad/unknown-option.fio:6"), "{e}");
    assert!(
        e.contains("`iodepht`") && e.contains("did you mean `iodepth`"),
        "{e}"
    );
    assert!(e.contains("--ignore-unknown"), "{e}");
    let opts = ParseOptions {
        ignore_unknown: true,
        ..ParseOptions::default()
    };
    let jf = load_job_file(&fixture("bad/unknown-option.fio"), &opts).unwrap();
    assert!(
        jf.warnings[0].contains("unknown-option.fio:6: option `iodepht` ignored"),
        "{:?}",
        jf.warnings
    );
}

#[test]
fn bad_files_name_file_and_line() {
    let e = err("bad/malformed-value.fio");
    assert!(
        e.contains("malformed-value.fio:3: bs=4q") && e.contains("suffix"),
        "{e}"
    );
    let e = err("bad/missing-filename.fio");
    assert!(
        e.contains("missing-filename.fio:5: job `lonely` has no filename"),
        "{e}"
    );
    let e = err("bad/circular-a.fio");
    assert!(e.contains("circular-b.fio:2: circular include"), "{e}");
    let e = err("bad/include-missing.fio");
    assert!(
        e.contains("does-not-exist.fio")
            && e.contains("included from")
            && e.contains("include-missing.fio:2"),
        "{e}"
    );
    let e = err("bad/outside-section.fio");
    assert!(
        e.contains("outside-section.fio:1: option `rw` outside any section"),
        "{e}"
    );
    let e = err("bad/dollar.fio");
    assert!(
        e.contains("dollar.fio:3") && e.contains("does not expand"),
        "{e}"
    );
    let topo = common::flat(4);
    let e = load("bad/cpu-missing.fio")
        .unwrap()
        .to_placement(&topo, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cpu-missing.fio:3: cpus_allowed=0-3,900") && e.contains("CPU 900"),
        "{e}"
    );
}

/// A refused value: the error carries the option, the value and why, as
/// fields; the lists of what would work come from the option tables.
#[test]
fn bad_values_carry_the_option_and_the_value() {
    let parse = |text: &str| {
        parse_job_text(text, Path::new("v.fio"), &ParseOptions::default()).unwrap_err()
    };
    let e = parse("[j]\nfilename=/dev/x\nrwmixread=150\n");
    let FioError::BadValue {
        at,
        key,
        value,
        reason,
    } = &e
    else {
        panic!("{e:?}");
    };
    assert_eq!(
        (at.line, key.as_str(), value.as_str()),
        (3, "rwmixread", "150")
    );
    assert_eq!(
        **reason,
        OptionError::OutOfRange {
            value: 150,
            min: 0,
            max: 100
        }
    );
    assert_eq!(
        e.to_string(),
        "v.fio:3: rwmixread=150: must be between 0 and 100"
    );
    let text = |body: &str| parse(&format!("[j]\nfilename=/dev/x\n{body}\n")).to_string();
    assert_eq!(
        text("ioengine=spdk"),
        "v.fio:3: ioengine=spdk: numio backends map from io_uring, io_uring_cmd, libaio, posixaio, psync, sync, pvsync, pvsync2, vsync and null"
    );
    assert_eq!(
        text("rw=readrandom"),
        "v.fio:3: rw=readrandom: use read, write, randread, randwrite, rw or randrw"
    );
    assert_eq!(
        text("cpus_allowed_policy=spread"),
        "v.fio:3: cpus_allowed_policy=spread: use shared or split"
    );
    assert_eq!(
        text("numa_mem_policy=preferred"),
        "v.fio:3: numa_mem_policy=preferred: use default, local or bind:NODES"
    );
    assert!(matches!(
        parse("[j]\nfilename=/dev/x\nrandom_distribution=zipf:1\n"),
        FioError::BadValue { reason, .. }
            if *reason == OptionError::Distribution(planner::DistributionError::ThetaOutOfRange { theta: 1.0 })
    ));
}

#[test]
fn unknown_section_reference_is_an_error() {
    let e = err("bad/unknown-reference.fio");
    assert!(
        e.contains(
            "unknown-reference.fio:6: wait_for=frist names no earlier job; earlier jobs are: first"
        ),
        "{e}"
    );
    let opts = ParseOptions {
        sections: vec!["drive99".into()],
        ..ParseOptions::default()
    };
    let e = load_job_file(&fixture("vendor-16.fio"), &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no job section named `drive99`") && e.contains("drive0, drive1"),
        "{e}"
    );
    let opts = ParseOptions {
        sections: vec!["drive7".into()],
        ..ParseOptions::default()
    };
    let jf = load_job_file(&fixture("vendor-16.fio"), &opts).unwrap();
    assert_eq!(jf.jobs.len(), 1);
}

#[test]
fn unsupported_values_are_errors_not_drops() {
    let cases = [
        ("rw=trim", "trim"),
        ("bs=4k,8k", "one block size"),
        ("size=50%", "percentages"),
        ("numa_mem_policy=interleave:0-1", "interleave"),
        ("ioengine=rbd", "backends map"),
        ("filename=/a:/b", "one file per job"),
        ("iodepth=0", "between 1"),
        ("random_distribution=pareto:0.9", "zipf"),
        ("cpus_allowed_policy=both", "shared or split"),
    ];
    for (line, want) in cases {
        let text = format!("[j]\nfilename=/dev/nvme0n1\n{line}\n");
        let e = parse_job_text(&text, Path::new("t.fio"), &ParseOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.fio:3: ") && e.contains(want),
            "{line}: {e}"
        );
    }
}

#[test]
fn readme_lists_every_supported_option() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/readme/plan.md"),
    )
    .unwrap();
    for opt in planner::fio::OPTIONS {
        assert!(
            doc.contains(&format!("| `{}` |", opt.name)),
            "docs/readme/plan.md lacks a row for `{}`",
            opt.name
        );
    }
}

#[test]
fn garbage_never_panics() {
    // A fixed-seed generator of job-file-like text: every input gives a
    // JobFile or an error, and every error names the file and a line.
    let pieces = [
        "[global]",
        "[j]",
        "[",
        "]",
        "filename=/dev/nvme0n1",
        "bs=",
        "bs=4k-",
        "bs=-4k",
        "rw=randrw",
        "numjobs=4096",
        "numjobs=99999",
        "iodepth=1k",
        "cpus_allowed=0-3",
        "cpus_allowed=3-0",
        "cpus_allowed_policy=split",
        "runtime=1x",
        "size=1.5.5g",
        "size=%",
        "include",
        "=",
        "==",
        "zipf",
        "random_distribution=zipf:",
        "numa_mem_policy=bind:",
        "wait_for=j",
        "ioengine=",
        "; c",
        "# c",
        "",
        " ",
        "\t",
        "name=",
        "rate_iops=1,2",
        "offset=99999999999999999999t",
        "randseed=-1",
        "time_based=maybe",
        "numa_cpu_nodes=0-1",
    ];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x9e37_79b9_7f4a_7c15);
    let mut next = || (rng.next_u64() >> 33) as usize;
    let topo = common::flat(4);
    for _ in 0..3000 {
        let lines: Vec<&str> = (0..next() % 8)
            .map(|_| pieces[next() % pieces.len()])
            .collect();
        let text = lines.join("\n");
        match parse_job_text(&text, Path::new("fuzz.fio"), &ParseOptions::default()) {
            Ok(jf) => {
                if let Err(e) = jf.to_placement(&topo, true) {
                    assert!(e.to_string().starts_with("fuzz.fio:"), "{e}\n{text}");
                }
            }
            Err(e) => assert!(e.to_string().contains("fuzz.fio"), "{e}\n{text}"),
        }
    }
}

/// fio's fixup_options sets norandommap for non-uniform distributions; the
/// reader does too, so a saved result says what the engine did.
#[test]
fn zipf_jobs_have_no_random_map_like_fio() {
    let text = "[z]\nfilename=/dev/nvme0n1\nrw=randread\nrandom_distribution=zipf\n[u]\nfilename=/dev/nvme0n1\nrw=randread\n";
    let jf = parse_job_text(text, Path::new("t.fio"), &ParseOptions::default()).unwrap();
    assert_eq!(
        jf.jobs[0].workload.random_distribution,
        Distribution::Zipf(1.1)
    );
    assert!(jf.jobs[0].workload.norandommap);
    assert!(
        !jf.jobs[1].workload.norandommap,
        "fio's default keeps the map"
    );
    let e = parse_job_text(
        "[z]\nfilename=/dev/nvme0n1\nrandom_distribution=zipf:1.2:0.5\n",
        Path::new("t.fio"),
        &ParseOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("zipf:1.2:0.5") && e.contains("centre"), "{e}");
}

#[test]
fn io_uring_cmd_on_a_generic_device_places_a_passthru_target() {
    // fio's cmd_type defaults to nvme: the job reads the same with or without it.
    let topo = common::flat(4);
    for cmd_type in ["", "cmd_type=nvme\n"] {
        let text = format!(
            "[pt]\nioengine=io_uring_cmd\n{cmd_type}filename=/dev/ng1n1\nrw=randread\nbs=4k\niodepth=32\n"
        );
        let jf = parse_job_text(&text, Path::new("pt.fio"), &ParseOptions::default()).unwrap();
        assert!(jf.warnings.is_empty(), "{:?}", jf.warnings);
        let p = jf.to_placement(&topo, true).unwrap();
        let t = &p.targets[0];
        assert_eq!(t.path, "/dev/ng1n1");
        assert_eq!(t.backend.as_deref(), Some("passthru"), "{cmd_type:?}");
        assert_eq!(
            t.node,
            Some(NodeId(0)),
            "the generic device resolves to its node"
        );
        assert!(
            t.options.ioengine.is_none(),
            "io_uring_cmd is passthru's own engine"
        );
        assert!(
            to_job_file(&p).contains("ioengine=io_uring_cmd"),
            "written back as fio's engine"
        );
    }
    let text = "[pt]\nioengine=io_uring_cmd\ncmd_type=generic\nfilename=/dev/ng1n1\n";
    let e = parse_job_text(text, Path::new("pt.fio"), &ParseOptions::default()).unwrap_err();
    assert!(e.to_string().contains("cmd_type=nvme"), "{e}");
}
