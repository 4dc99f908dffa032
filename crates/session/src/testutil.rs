//! Helpers of the session's unit tests: temp files and null-backend plans
//! (no device, no I/O: the engine's `null` backend completes every I/O at
//! once).

use std::sync::atomic::{AtomicU32, Ordering};

use planner::{JobPlacement, MemPolicy, Placement, RwMode, TargetPlacement, Workload};

/// A sparse file under the temp dir, removed on drop.
pub struct TempFile(pub std::path::PathBuf);

impl TempFile {
    pub fn new(tag: &str) -> TempFile {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "numio-session-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::File::create(&path)
            .and_then(|f| f.set_len(1 << 20))
            .expect("create a temp file");
        TempFile(path)
    }
    pub fn path(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `ios` random reads per job, bounded by count, not time.
pub fn counted(ios: u64) -> Workload {
    Workload {
        rw: RwMode::RandRead,
        iodepth: 4,
        runtime_ns: None,
        time_based: false,
        number_ios: Some(ios),
        direct: false,
        ..Workload::default()
    }
}

/// Every path in `paths` with `jobs` unpinned jobs of `w`.
pub fn placement(paths: &[String], w: &Workload, jobs: usize) -> Placement {
    Placement {
        policy: "none".into(),
        targets: paths
            .iter()
            .map(|p| TargetPlacement {
                path: p.clone(),
                workload: w.clone(),
                jobs: vec![
                    JobPlacement {
                        cpus: vec![],
                        mem: MemPolicy::Default,
                    };
                    jobs
                ],
                ..TargetPlacement::default()
            })
            .collect(),
        warnings: vec![],
    }
}

/// Engine options of the null backend.
pub fn null_opts() -> engine::RunOptions {
    engine::RunOptions {
        backend: engine::BackendKind::Null,
        ..engine::RunOptions::default()
    }
}
