//! Snapshots and bad input: every fixture round-trips through save/load to
//! identical JSON; snapshots hold exactly what discovery read, symlinks as
//! symlinks; missing, partial and foreign roots fail with clear errors;
//! unreadable files are reported, never panicked on.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{all_fixture_dirs, fixtures_dir, TempDir};
use topology::{snapshot, Topology, TopologyError, SCHEMA_VERSION};

fn json(t: &Topology) -> String {
    serde_json::to_string_pretty(t).expect("serializable")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("readable fixture") {
        let entry = entry.expect("entry");
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().expect("type");
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).expect("link"), &dst)
                .expect("symlink");
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

#[test]
fn every_fixture_round_trips_through_a_snapshot_to_identical_json() {
    let tmp = TempDir::new("roundtrip");
    let dirs = all_fixture_dirs();
    assert!(dirs.len() >= 7, "the generated fixtures are committed");
    for dir in dirs {
        let (before, recording) = Topology::discover_recorded(&dir).expect("fixture discovers");
        let file = tmp.0.join(format!(
            "{}.tar.gz",
            dir.file_name().expect("name").to_string_lossy()
        ));
        recording.save(&file).expect("snapshot saved");
        let after = Topology::load(&file).expect("snapshot loads");
        assert_eq!(
            json(&before),
            json(&after),
            "{} changed through save/load",
            dir.display()
        );
        // And saving the replay gives the same paths again.
        let (_, again) = snapshot::open(&file)
            .expect("opens")
            .discover_recorded()
            .expect("replay discovers");
        assert_eq!(
            again.paths(),
            recording.paths(),
            "{}: replay read other paths",
            dir.display()
        );
    }
}

#[test]
fn a_snapshot_holds_exactly_what_was_read_with_symlinks_kept() {
    let tmp = TempDir::new("contents");
    let root = fixtures_dir().join("2node-multipath-tcp");
    let (_, recording) = Topology::discover_recorded(&root).expect("discovers");
    let file = tmp.0.join("snap.tar.gz");
    recording.save(&file).expect("saved");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&file).expect("open"),
    ));
    let mut names = BTreeSet::new();
    let mut links = Vec::new();
    for entry in archive.entries().expect("entries") {
        let entry = entry.expect("entry");
        let name = entry
            .path()
            .expect("path")
            .to_string_lossy()
            .trim_end_matches('/')
            .to_string();
        if entry.header().entry_type() == tar::EntryType::Symlink {
            let target = entry
                .link_name()
                .expect("link name")
                .expect("has target")
                .to_string_lossy()
                .into_owned();
            links.push((name.clone(), target));
        }
        names.insert(name);
    }
    let mut expected: BTreeSet<String> = recording.paths().into_iter().collect();
    expected.insert(snapshot::MANIFEST_NAME.to_string());
    assert_eq!(names, expected);
    assert!(links.contains(&(
        "sys/class/nvme/nvme0".to_string(),
        "../../devices/pci0000:16/0000:16:02.0/0000:17:00.0/nvme/nvme0".to_string()
    )));
    // Trimmed: files discovery does not read are not there.
    assert!(!names.contains("sys/devices/system/cpu/cpu3/online"));
    assert!(names.contains("sys/devices/system/cpu/cpu3/topology/core_id"));
    let manifest = recording.manifest();
    assert_eq!(manifest.schema_version, SCHEMA_VERSION);
    assert_eq!(
        manifest.files.len() + manifest.links.len() + manifest.dirs.len(),
        recording.paths().len()
    );
}

#[test]
fn the_live_machine_discovers_with_nodes_and_cpus() {
    let t = Topology::discover(Path::new("/")).expect("this Linux machine discovers");
    assert!(!t.nodes.is_empty(), "at least one node");
    assert!(t.cpus.iter().any(|c| c.online), "at least one online CPU");
    let tree = topology::render::tree(&t);
    assert!(tree.contains(&format!("node {}:", t.nodes[0].id)), "{tree}");
    if t.controllers.is_empty() {
        assert!(tree.contains("no NVMe controllers found"), "{tree}");
    }
}

#[test]
fn a_missing_root_names_the_path() {
    let err = Topology::discover(Path::new("/nonexistent/numio-root")).expect_err("missing root");
    assert!(matches!(err, TopologyError::RootMissing { .. }));
    assert!(
        err.to_string()
            .contains("/nonexistent/numio-root does not exist"),
        "{err}"
    );
    let err = Topology::load(Path::new("/nonexistent/snap.tar.gz")).expect_err("missing snapshot");
    assert!(
        err.to_string().contains("/nonexistent/snap.tar.gz"),
        "{err}"
    );
}

#[test]
fn a_partial_root_names_the_missing_file() {
    let tmp = TempDir::new("partial");
    std::fs::create_dir_all(tmp.0.join("sys/devices/system/cpu")).expect("mkdir");
    let err = Topology::discover(&tmp.0).expect_err("no cpu/online");
    assert!(
        matches!(err, TopologyError::MissingRequired { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("sys/devices/system/cpu/online is missing"),
        "{err}"
    );

    // Older kernels write no `node/online`: the node directories stand in
    // for it, and a note says so (issue #15).
    std::fs::write(tmp.0.join("sys/devices/system/cpu/online"), "0-1\n").expect("write");
    std::fs::create_dir_all(tmp.0.join("sys/devices/system/node/node0")).expect("mkdir");
    let t = Topology::discover(&tmp.0).expect("node/online derived");
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.notes.len(), 1);
    assert_eq!(
        (t.notes[0].code.as_str(), t.notes[0].path.as_str()),
        ("node-online-missing", "sys/devices/system/node/online")
    );

    std::fs::write(tmp.0.join("sys/devices/system/node/online"), "zero\n").expect("write");
    let err = Topology::discover(&tmp.0).expect_err("bad node/online");
    assert!(
        err.to_string()
            .contains("`zero` in node list `zero` is not a node number"),
        "{err}"
    );
}

#[test]
fn unreadable_files_are_recorded_and_replayed_not_panicked_on() {
    let tmp = TempDir::new("unreadable");
    let root = tmp.0.join("root");
    copy_tree(&fixtures_dir().join("one-node-1nvme"), &root);
    // A directory where a file should be (read fails: EISDIR) and garbage.
    let meminfo = root.join("sys/devices/system/node/node0/meminfo");
    std::fs::remove_file(&meminfo).expect("rm");
    std::fs::create_dir(&meminfo).expect("mkdir");
    std::fs::write(
        root.join("sys/devices/system/cpu/cpu1/topology/core_id"),
        "one\n",
    )
    .expect("write");
    std::fs::write(root.join("proc/interrupts"), "garbage header\n").expect("write");
    let (t, recording) = Topology::discover_recorded(&root).expect("still discovers");
    let paths: Vec<&str> = t.unreadable.iter().map(|u| u.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "proc/interrupts",
            "sys/devices/system/cpu/cpu1/topology/core_id",
            "sys/devices/system/node/node0/meminfo"
        ]
    );
    assert_eq!(t.nodes[0].memory_bytes, 0);
    assert_eq!(t.cpus[1].core, None);
    assert_eq!(t.controllers.len(), 1, "the rest is still there");
    let report = topology::doctor::Report::new(&t);
    assert!(report.findings.iter().any(|f| f.code == "unreadable-files"));
    let file = tmp.0.join("snap.tar.gz");
    recording.save(&file).expect("saved");
    let replay = Topology::load(&file).expect("loads");
    assert_eq!(
        json(&t),
        json(&replay),
        "the replay reports the same unreadable files"
    );
}

fn write_tar_gz(path: &Path, entries: &[(&str, &str)]) {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).expect("create"),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    for (name, text) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o444);
        tar.append_data(&mut h, name, text.as_bytes())
            .expect("append");
    }
    tar.into_inner().expect("tar").finish().expect("gz");
}

#[test]
fn a_snapshot_of_another_schema_version_is_refused() {
    let tmp = TempDir::new("schema");
    let file = tmp.0.join("future.tar.gz");
    let manifest = r#"{"schema_version": 999, "something_new": true}"#;
    write_tar_gz(
        &file,
        &[
            (snapshot::MANIFEST_NAME, manifest),
            ("sys/devices/system/cpu/online", "0\n"),
        ],
    );
    let err = Topology::load(&file).expect_err("schema 999");
    assert!(
        matches!(err, TopologyError::SchemaMismatch { found: 999, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("schema version 999")
            && text.contains(&format!("reads version {SCHEMA_VERSION}")),
        "{text}"
    );
    assert!(text.contains("future.tar.gz"), "names the file: {text}");

    let dir = tmp.0.join("dir");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(snapshot::MANIFEST_NAME), manifest).expect("write");
    let err = Topology::discover(&dir).expect_err("schema 999 directory");
    assert!(
        matches!(err, TopologyError::SchemaMismatch { found: 999, .. }),
        "{err:?}"
    );
}

#[test]
fn files_that_are_not_snapshots_are_refused() {
    let tmp = TempDir::new("notsnap");
    let text = tmp.0.join("notes.txt");
    std::fs::write(&text, "hello").expect("write");
    let err = Topology::load(&text).expect_err("text file");
    assert!(matches!(err, TopologyError::NotASnapshot { .. }), "{err:?}");
    let foreign = tmp.0.join("foreign.tar.gz");
    write_tar_gz(&foreign, &[("sys/devices/system/cpu/online", "0\n")]);
    let err = Topology::load(&foreign).expect_err("no manifest");
    assert!(
        err.to_string().contains("no numio-snapshot.json inside"),
        "{err}"
    );
}

fn overwrite_files(dir: &Path, text: &str) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let entry = entry.expect("entry");
        let kind = entry.file_type().expect("type");
        if kind.is_dir() {
            overwrite_files(&entry.path(), text);
        } else if kind.is_file() {
            std::fs::write(entry.path(), text).expect("write");
        }
    }
}

#[test]
fn garbage_in_every_file_is_reported_never_panicked_on() {
    for garbage in [
        "",
        "x",
        "-1",
        "[",
        "0-",
        "4294967295",
        "nvme0q1: 1 2",
        "\u{0}\u{ff}",
    ] {
        let tmp = TempDir::new("garbage");
        let root = tmp.0.join("root");
        copy_tree(&fixtures_dir().join("2node-multipath-tcp"), &root);
        // Keep the two files every root needs, so discovery gets past them.
        overwrite_files(&root, garbage);
        std::fs::write(root.join("sys/devices/system/cpu/online"), "0-3\n").expect("write");
        std::fs::write(root.join("sys/devices/system/node/online"), "0\n").expect("write");
        let t = Topology::discover(&root).unwrap_or_else(|e| panic!("garbage {garbage:?}: {e}"));
        assert_eq!(
            t.controllers.len(),
            3,
            "garbage {garbage:?}: controllers still found by their links"
        );
        if !garbage.is_empty() {
            assert!(!t.unreadable.is_empty(), "garbage {garbage:?} is reported");
        }
        let _ = topology::render::tree(&t);
        let _ = topology::doctor::Report::new(&t);
    }
}

#[test]
fn a_kernel_without_numa_gives_one_node_with_every_cpu() {
    let tmp = TempDir::new("nonuma");
    let cpu = tmp.0.join("sys/devices/system/cpu");
    std::fs::create_dir_all(cpu.join("cpu1/topology")).expect("mkdir");
    std::fs::write(cpu.join("online"), "0-1\n").expect("write");
    std::fs::write(cpu.join("cpu1/topology/core_id"), "1\n").expect("write");
    std::fs::create_dir_all(tmp.0.join("proc")).expect("mkdir");
    std::fs::write(
        tmp.0.join("proc/meminfo"),
        "MemTotal:        2048 kB\nMemFree: 1 kB\n",
    )
    .expect("write");
    let t = Topology::discover(&tmp.0).expect("discovers without sys/devices/system/node");
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(
        t.nodes[0].cpus,
        vec![topology::CpuId(0), topology::CpuId(1)]
    );
    assert_eq!(t.nodes[0].memory_bytes, 2048 * 1024);
    assert_eq!(t.cpus[1].core, Some(1));
    assert_eq!(
        t.cpus[0].core, None,
        "missing topology files leave fields empty"
    );
    assert!(t.controllers.is_empty() && t.unreadable.is_empty());
}

#[test]
fn irq_affinity_falls_back_to_the_requested_mask() {
    let tmp = TempDir::new("smpaff");
    let root = tmp.0.join("root");
    copy_tree(&fixtures_dir().join("one-node-1nvme"), &root);
    let irq = root.join("proc/irq/121");
    std::fs::remove_file(irq.join("effective_affinity_list")).expect("rm");
    std::fs::write(irq.join("smp_affinity_list"), "0,4\n").expect("write");
    let t = Topology::discover(&root).expect("discovers");
    let q1 = t.controllers[0]
        .irqs
        .iter()
        .find(|i| i.irq == 121)
        .expect("irq 121");
    assert_eq!(q1.name, "nvme0q1");
    assert_eq!(
        q1.effective_affinity,
        vec![topology::CpuId(0), topology::CpuId(4)]
    );
}
