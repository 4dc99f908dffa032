//! Helpers shared by the engine's integration tests: temp files and
//! one-target placements.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use planner::{JobPlacement, MemPolicy, Placement, RwMode, TargetPlacement, Workload};

/// A file under the temp dir, removed on drop.
pub struct TempFile {
    pub path: PathBuf,
}

impl TempFile {
    /// A file of `len` bytes filled with `byte`.
    pub fn new(tag: &str, len: usize, byte: u8) -> TempFile {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "numio-engine-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let mut f = std::fs::File::create(&path).expect("create temp file");
        f.write_all(&vec![byte; len]).expect("fill temp file");
        f.sync_all().expect("sync temp file");
        TempFile { path }
    }
    pub fn path_str(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("read temp file")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A workload bounded by I/O count or size, not time.
pub fn bounded(rw: RwMode, bs: u64, iodepth: u32) -> Workload {
    Workload {
        rw,
        bs_min_bytes: bs,
        bs_max_bytes: bs,
        iodepth,
        runtime_ns: None,
        time_based: false,
        norandommap: false,
        direct: true,
        ..Workload::default()
    }
}

/// One target, `jobs` unpinned jobs.
pub fn placement(path: &str, workload: Workload, jobs: usize) -> Placement {
    Placement {
        policy: "explicit".into(),
        targets: vec![TargetPlacement {
            path: path.to_string(),
            node: None,
            workload,
            jobs: vec![
                JobPlacement {
                    cpus: vec![],
                    mem: MemPolicy::Default,
                };
                jobs
            ],
            ..TargetPlacement::default()
        }],
        warnings: vec![],
    }
}

/// Runs without progress output.
pub fn run(p: &Placement, opts: &engine::RunOptions) -> engine::RunResult {
    engine::run(p, opts, &mut |_| {}).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Whether `path` opens with O_DIRECT (tmpfs before Linux 6.6 refuses it).
pub fn opens_direct(path: &str) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .is_ok()
}
