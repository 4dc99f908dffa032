//! `numio precondition` end to end: a file runs its fill and short rounds
//! to a verdict, saved and reprinted, recorded for later benches' notes;
//! a loop device holding a filesystem is refused without --force-write
//! (root and losetup; skipped otherwise).

mod common;

use std::process::Command;

use common::{numio_env, Temp};

/// A state directory of the test's own (`XDG_STATE_HOME`), removed on drop.
struct StateDir(std::path::PathBuf);

impl StateDir {
    fn new(tag: &str) -> StateDir {
        let p = std::env::temp_dir().join(format!("numio-pstate-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        StateDir(p)
    }
    fn env(&self) -> [(&str, &str); 1] {
        [("XDG_STATE_HOME", self.0.to_str().unwrap())]
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn notes(json: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).expect("bench --json");
    v["environment"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_file_is_preconditioned_to_a_verdict_saved_reprinted_and_noted() {
    let state = StateDir::new("file");
    let target = Temp::new("precondition-file", 16 << 20);
    let saved = Temp::new("precondition-saved.json", 0);
    let (t, s) = (target.path(), saved.path());
    let args = [
        "precondition",
        t,
        "--round",
        "200ms",
        "--rounds",
        "12",
        "--fill",
        "1x",
        "--iodepth",
        "8",
        "--save",
        s,
    ];
    let (code, out, err) = numio_env(&state.env(), &args);
    assert!(code == 0 || code == 3, "exit {code}: {err}");
    assert!(err.contains("fill pass 1 of 1"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(s).unwrap()).unwrap();
    assert_eq!(v["schema"], "numio-precondition");
    let drive = &v["drives"][0];
    assert_eq!(drive["fill"][0]["bytes"], 16 << 20);
    let rounds = drive["rounds"].as_array().unwrap();
    assert!((5..=12).contains(&rounds.len()), "{rounds:?}");
    assert!(rounds.iter().all(|r| r["iops"].as_f64().unwrap() > 0.0));
    let outcome = drive["verdict"]["outcome"].as_str().unwrap();
    assert_eq!(outcome == "steady", code == 0, "{out}");
    assert!(outcome == "steady" || outcome == "not_met", "{outcome}");
    // A steady drive stopped at the end of its window.
    if outcome == "steady" {
        assert_eq!(drive["verdict"]["window"][1], rounds.len());
    }
    // `numio report FILE` prints what precondition printed.
    let (code, again, err) = numio_env(&state.env(), &["report", s]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again, out);
    // Later benches say it, and say when numio wrote to it since.
    let bench = |rw: &str| {
        numio_env(
            &state.env(),
            &["bench", t, "--rw", rw, "--runtime", "100ms", "--json"],
        )
    };
    let (_, json, err) = bench("randread");
    let n = notes(&json);
    assert!(
        n.iter()
            .any(|n| n.contains("preconditioned at") && n.contains("not written by numio since")),
        "{n:?} {err}"
    );
    bench("randwrite");
    let (_, json, _) = bench("randread");
    let n = notes(&json);
    assert!(
        n.iter().any(|n| n.contains("written since by numio at")),
        "{n:?}"
    );
}

#[test]
fn bad_flags_are_refused_before_any_write() {
    let state = StateDir::new("flags");
    let target = Temp::filled("precondition-flags", 1 << 20, 0xa5);
    let t = target.path();
    let (code, _, err) = numio_env(&state.env(), &["precondition", t, "--steady", "bw:5%"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--steady bw:5%: give snia, iops:P% or iops_slope:P%"),
        "{err}"
    );
    let (code, _, err) = numio_env(&state.env(), &["precondition", t, "--runtime", "5s"]);
    assert_eq!(code, 2);
    assert!(err.contains("--round"), "{err}");
    // Nothing was written.
    assert!(std::fs::read(t).unwrap().iter().all(|&b| b == 0xa5));
}

/// A loop device over a temp file holding ext4; `None` (skip) without root,
/// mkfs.ext4 or losetup.
fn ext4_loop(tag: &str) -> Option<(String, Temp)> {
    // SAFETY: geteuid has no preconditions.
    // NUMIO_TEST_UNPRIVILEGED: scripts/test --quick runs as if not root.
    if unsafe { libc::geteuid() } != 0 || std::env::var_os("NUMIO_TEST_UNPRIVILEGED").is_some() {
        eprintln!("skipping: needs root (losetup)");
        return None;
    }
    let file = Temp::new(tag, 16 << 20);
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", file.path()])
        .status();
    if !mkfs.is_ok_and(|s| s.success()) {
        eprintln!("skipping: mkfs.ext4 is not installed");
        return None;
    }
    let out = Command::new("losetup")
        .args(["--find", "--show", file.path()])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("skipping: losetup could not attach a loop device");
        return None;
    }
    Some((String::from_utf8(out.stdout).ok()?.trim().to_string(), file))
}

#[test]
fn a_device_holding_a_filesystem_is_refused_without_force_write() {
    let Some((dev, _file)) = ext4_loop("precondition-ext4") else {
        return;
    };
    let state = StateDir::new("ext4");
    let args = [
        "precondition",
        &dev,
        "--round",
        "100ms",
        "--rounds",
        "5",
        "--fill",
        "0",
    ];
    let (code, _, err) = numio_env(&state.env(), &args);
    let _ = Command::new("losetup").args(["-d", &dev]).status();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("refusing to write to {dev}: it holds a ext4"))
            && err.contains("--force-write"),
        "{err}"
    );
}
