//! The time axis of a bench run, end to end on a real block device: every
//! I/O numio issues is reported (set-up, ramp, measured), matching the
//! device's own counters in /sys/block; the intervals add up to the run;
//! a throttle injected mid-run (dm-delay swapped in under a dm device)
//! shows in the intervals at its second and is flagged. Needs root,
//! losetup and dmsetup; skips with a message otherwise.

mod common;

use std::process::Command;

use common::running::{progress_s, Running};

struct Loop {
    dev: String,
    file: std::path::PathBuf,
}

const SECTORS: u64 = (64 << 20) / 512;

impl Loop {
    fn new(tag: &str) -> Option<Loop> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || std::env::var_os("NUMIO_TEST_UNPRIVILEGED").is_some()
        {
            eprintln!("skipping: needs root (losetup)");
            return None;
        }
        let file =
            std::env::temp_dir().join(format!("numio-time-{tag}-{}.img", std::process::id()));
        std::fs::write(&file, vec![0u8; (SECTORS * 512) as usize]).unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!("skipping: losetup could not attach a loop device");
            let _ = std::fs::remove_file(&file);
            return None;
        }
        let dev = String::from_utf8(out.stdout).ok()?.trim().to_string();
        Some(Loop { dev, file })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Sectors read and written so far, from /sys/block/NAME/stat (fields 3
/// and 7): whatever the block layer merged, 8 sectors per 4 KiB I/O.
fn sectors(dev: &str) -> (u64, u64) {
    let name = dev.rsplit('/').next().unwrap();
    let text = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (f[2], f[6])
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("bench --json: {e}: {out}"))
}

fn count(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key).and_then(|x| x.as_u64()).unwrap_or(0)
}

#[test]
fn every_io_is_reported_and_matches_the_device() {
    let Some(l) = Loop::new("count") else { return };
    // A write run bounded by count: exactly those writes, no trial.
    let before = sectors(&l.dev);
    let (code, out, err) = common::numio(&[
        "bench",
        &l.dev,
        "--rw",
        "randwrite",
        "--number-ios",
        "1000",
        "--force-write",
        "--json",
        "--progress",
        "never",
    ]);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    let after = sectors(&l.dev);
    assert_eq!(r["write"]["ops"], 1000);
    assert!(
        r.get("setup_io").is_none() && r.get("ramp_io").is_none(),
        "{out}"
    );
    assert_eq!(
        (after.1 - before.1) / 8,
        1000,
        "the device saw other writes"
    );
    assert_eq!(after.0, before.0, "a write run read");

    // A time-based read run with a ramp: trial + ramp + measured reads are
    // what the device saw, each reported apart.
    let before = sectors(&l.dev);
    let (code, out, err) = common::numio(&[
        "bench",
        &l.dev,
        "--rw",
        "randread",
        "--runtime",
        "2s",
        "--ramp-time",
        "500ms",
        "--json",
        "--progress",
        "never",
        "--interval",
        "250ms",
    ]);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    let after = sectors(&l.dev);
    let measured = count(&r["read"], "ops");
    let setup = count(&r["setup_io"], "reads");
    let ramp = count(&r["ramp_io"], "reads");
    assert!(ramp > 0 && measured > 0, "{out}");
    assert_eq!(
        count(&r["setup_io"], "writes") + count(&r["ramp_io"], "writes"),
        0
    );
    assert_eq!(
        (after.0 - before.0) / 8,
        setup + ramp + measured,
        "device reads against set-up {setup} + ramp {ramp} + measured {measured}"
    );
    assert_eq!(after.1, before.1, "a read run wrote");
    // The intervals add up to the run, on the grid asked for.
    assert_eq!(r["interval_ns"], 250_000_000);
    for scope in [&r, &r["targets"][0]] {
        let ivs = scope["intervals"].as_array().expect("intervals");
        assert!(ivs.len() >= 7, "{} intervals of 250 ms in 2 s", ivs.len());
        let sum: u64 = ivs.iter().map(|i| count(&i["total"], "ops")).sum();
        assert_eq!(sum, measured);
    }
}

/// A block-I/O cgroup of the test's own, to throttle one device's reads
/// for the tasks in it: cgroup v1's blkio controller, or v2's io.
struct Throttle {
    dir: std::path::PathBuf,
    v2: bool,
}

impl Throttle {
    fn new() -> Option<Throttle> {
        let name = format!("numio-throttle-{}", std::process::id());
        let v1 = std::path::Path::new("/sys/fs/cgroup/blkio");
        let v2 = std::path::Path::new("/sys/fs/cgroup");
        let (dir, is_v2) = if v1.join("blkio.throttle.read_iops_device").exists() {
            (v1.join(&name), false)
        } else if std::fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "io"))
        {
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+io");
            (v2.join(&name), true)
        } else {
            eprintln!("skipping: no blkio (v1) or io (v2) cgroup controller to throttle with");
            return None;
        };
        std::fs::create_dir(&dir).ok()?;
        Some(Throttle { dir, v2: is_v2 })
    }
    fn add(&self, pid: u32) {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).expect("joins the cgroup");
    }
    /// Caps reads of `dev` (MAJ:MIN) at `iops`.
    fn cap_reads(&self, dev: &str, iops: u64) {
        let (file, line) = if self.v2 {
            ("io.max", format!("{dev} riops={iops}"))
        } else {
            ("blkio.throttle.read_iops_device", format!("{dev} {iops}"))
        };
        std::fs::write(self.dir.join(file), line).expect("the cap is set");
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        // Empty by now (numio exited); a cgroup directory is removed with rmdir.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn a_throttle_mid_run_shows_at_its_second_and_is_flagged() {
    let Some(l) = Loop::new("throttle") else {
        return;
    };
    let Some(cg) = Throttle::new() else { return };
    let name = l.dev.rsplit('/').next().unwrap();
    let majmin = std::fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap();
    let save = std::env::temp_dir().join(format!("numio-throttle-{}.json", std::process::id()));
    let save_s = save.to_str().unwrap();
    let run = Running::start(&[
        "bench",
        &l.dev,
        "--rw",
        "randread",
        "--iodepth",
        "16",
        "--runtime",
        "8s",
        "--progress",
        "always",
        "--save",
        save_s,
    ]);
    // Into the cgroup before the workers start (they, and io_uring's
    // threads, inherit it): numio sets up for a while after it starts.
    cg.add(run.pid());
    // The progress line says the measured seconds; at 3 s, cap the reads
    // at 500 IOPS.
    let line = run.wait_for(1, "progress at 3 s", |l| {
        progress_s(l).is_some_and(|t| t >= 3.0)
    });
    cg.cap_reads(majmin.trim(), 500);
    let at = progress_s(&line).unwrap();
    let (code, _, err) = run.wait();
    assert_eq!(code, 0, "{err}");
    let (code, table, err) = common::numio(&["report", save_s, "--intervals"]);
    let _ = std::fs::remove_file(&save);
    assert_eq!(code, 0, "{err}");
    // Rows of the table: "t (s)  IOPS ... flags".
    let rows: Vec<(f64, bool)> = table
        .lines()
        .filter_map(|l| {
            let t: f64 = l.split_whitespace().next()?.parse().ok()?;
            Some((t, l.contains("rolling median")))
        })
        .collect();
    assert!(rows.len() >= 8, "{table}");
    let first = rows
        .iter()
        .find(|r| r.1)
        .unwrap_or_else(|| panic!("nothing flagged:\n{table}"));
    // Flagged at the second the throttle began (or the next, where it
    // began late in its second), nothing before it.
    assert!(
        first.0 >= at.floor() && first.0 <= at.floor() + 1.0,
        "throttled at {at:.1}s, first flagged interval at {}s:\n{table}",
        first.0
    );
    // And every full interval after it stays flagged (a cliff, not a blip).
    assert!(
        rows.iter()
            .filter(|r| r.0 > first.0 && r.0 < 7.0)
            .all(|r| r.1),
        "{table}"
    );
}
