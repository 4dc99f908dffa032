//! Write safety on real block devices: a loop device holding a filesystem
//! signature, a partition table or a mount is refused for writes unless
//! `force_write`; a blank one is written. Needs root and losetup; skips
//! with a message otherwise.

mod common;

use std::process::Command;

use common::{bounded, placement, TempFile};
use engine::{BackendKind, EngineError, RunOptions};
use planner::RwMode;

/// A loop device over a temp file, detached on drop.
struct Loop {
    dev: String,
    _file: TempFile,
}

impl Loop {
    fn over(file: TempFile) -> Option<Loop> {
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file.path)
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let dev = String::from_utf8(out.stdout).ok()?.trim().to_string();
        Some(Loop { dev, _file: file })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn loop_with(tag: &str, patch: impl FnOnce(&mut Vec<u8>)) -> Option<Loop> {
    // SAFETY: geteuid has no preconditions.
    // NUMIO_TEST_UNPRIVILEGED: scripts/test --quick runs as if not root.
    if unsafe { libc::geteuid() } != 0 || std::env::var_os("NUMIO_TEST_UNPRIVILEGED").is_some() {
        eprintln!("skipping: block-device safety tests need root (losetup)");
        return None;
    }
    let f = TempFile::new(tag, 8 << 20, 0);
    let mut bytes = f.bytes();
    patch(&mut bytes);
    std::fs::write(&f.path, &bytes).unwrap();
    let l = Loop::over(f);
    if l.is_none() {
        eprintln!("skipping: losetup could not attach a loop device");
    }
    l
}

fn write_run(dev: &str, force_write: bool) -> Result<engine::RunResult, EngineError> {
    let mut w = bounded(RwMode::RandWrite, 4096, 4);
    w.number_ios = Some(64);
    w.time_based = true;
    w.runtime_ns = Some(10_000_000_000);
    let opts = RunOptions {
        backend: BackendKind::Sync,
        force_write,
        ..RunOptions::default()
    };
    engine::run(&placement(dev, w, 1), &opts, &mut |_| {})
}

#[test]
fn filesystem_signature_is_refused_without_force_write() {
    let Some(l) = loop_with("ext4sig", |b| {
        b[1080] = 0x53;
        b[1081] = 0xef;
    }) else {
        return;
    };
    let e = write_run(&l.dev, false).unwrap_err().to_string();
    assert!(
        // libblkid names it (ext2: only the magic is there).
        e.contains("a ext2 filesystem signature")
            && e.contains("--force-write")
            && e.contains(&l.dev),
        "{e}"
    );
    let r = write_run(&l.dev, true).expect("--force-write overrides");
    assert_eq!(r.total.ops, 64);
}

#[test]
fn partition_table_is_refused() {
    let Some(l) = loop_with("gpt", |b| b[512..520].copy_from_slice(b"EFI PART")) else {
        return;
    };
    let e = write_run(&l.dev, false).unwrap_err().to_string();
    assert!(e.contains("GPT partition table"), "{e}");
}

#[test]
fn reads_are_never_refused_and_blank_devices_are_written() {
    let Some(l) = loop_with("blank", |_| {}) else {
        return;
    };
    let r = write_run(&l.dev, false).expect("a blank device may be written");
    assert_eq!(r.total.ops, 64);
    assert!(r.environment.targets[0].kind == "block_device");
    let Some(sig) = loop_with("sig-read", |b| b[0..4].copy_from_slice(b"XFSB")) else {
        return;
    };
    let mut w = bounded(RwMode::RandRead, 4096, 4);
    w.number_ios = Some(64);
    w.time_based = true;
    w.runtime_ns = Some(10_000_000_000);
    let r = engine::run(
        &placement(&sig.dev, w, 1),
        &RunOptions::default(),
        &mut |_| {},
    )
    .expect("reads are safe");
    assert_eq!(r.total.ops, 64);
}

/// A loop device over an 8 MiB file `mkfs` formatted; `None` (and a note)
/// without root, losetup or that mkfs.
fn loop_mkfs(tag: &str, mkfs: &str) -> Option<Loop> {
    let f = TempFile::new(&format!("{tag}-image"), 8 << 20, 0);
    match Command::new(mkfs).arg(&f.path).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("{mkfs}: {}", String::from_utf8_lossy(&out.stderr)),
        Err(_) => {
            eprintln!("skipping: {mkfs} is not installed (util-linux)");
            return None;
        }
    }
    let formatted = f.bytes();
    loop_with(tag, |b| b.copy_from_slice(&formatted))
}

/// Issue #16: a minix and a bfs filesystem (both known to blkid) were
/// written without --force-write, and blkid found nothing afterwards.
#[test]
fn filesystems_libblkid_knows_are_refused_minix_and_bfs_included() {
    for (mkfs, name) in [("mkfs.minix", "minix"), ("mkfs.bfs", "bfs")] {
        let Some(l) = loop_mkfs(name, mkfs) else {
            continue;
        };
        let e = write_run(&l.dev, false).unwrap_err().to_string();
        assert!(
            e.contains(&format!("a {name} filesystem signature")) && e.contains("--force-write"),
            "{e}"
        );
        let after = sysapi::blkid::probe(std::path::Path::new(&l.dev)).unwrap();
        assert!(after.is_some(), "{name} is still there after the refusal");
    }
}
