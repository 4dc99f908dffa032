//! `numio coalesce` end to end where no controller can be changed: bad
//! input is refused with exit status 2 and a message naming it, `show`
//! lists a snapshot's controllers without pretending to read them, the
//! state file makes `show` warn, and `restore` keeps a record it cannot put
//! back. (Changing real controllers is proven in the VM lab:
//! tests/vm/tests/coalesce/.)

mod common;

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/sysfs")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// A private state directory, removed on drop.
struct StateDir(PathBuf);

impl StateDir {
    fn new(tag: &str) -> StateDir {
        let d = std::env::temp_dir().join(format!("numio-coalesce-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        StateDir(d)
    }

    /// Runs numio with `NUMIO_STATE_DIR` pointing here.
    fn numio(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_numio"))
            .args(args)
            .env("NUMIO_STATE_DIR", &self.0)
            .output()
            .expect("numio runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A record of a controller no machine has.
    fn write_record(&self) {
        let text = r#"{"schema_version":1,"records":[{"name":"nvme7","address":"0000:ee:00.0","serial":"NO-SUCH-SERIAL","feature":8,"original_raw":0,"pid":4242,"command":"numio coalesce set","since_unix_s":1}]}"#;
        std::fs::write(self.0.join("coalesce.json"), text).unwrap();
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn bad_values_are_named_with_exit_status_2_before_any_controller_is_touched() {
    let s = StateDir::new("bad");
    for (args, want) in [
        (
            &["--threshold", "256", "--time", "100us"][..],
            "--threshold 256: above 255",
        ),
        (
            &["--threshold", "x", "--time", "100us"],
            "--threshold x: not a whole number",
        ),
        (
            &["--threshold", "3", "--time", "25.6ms"],
            "--time 25.6ms: above 25.5 ms",
        ),
        (
            &["--threshold", "3", "--time", "150us"],
            "--time 150us: not a multiple of 100 µs",
        ),
        (
            &["--threshold", "3", "--time", "soon"],
            "--time soon: expected a number",
        ),
    ] {
        let mut full = vec!["coalesce", "set", "nvme999"];
        full.extend_from_slice(args);
        let (code, out, err) = s.numio(&full);
        assert_eq!(code, 2, "{full:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(want), "{full:?}: {err}");
    }
    assert!(!s.0.join("coalesce.json").exists(), "nothing recorded");
}

#[test]
fn unknown_or_missing_controllers_are_refused() {
    let s = StateDir::new("unknown");
    let (code, _, err) = s.numio(&[
        "coalesce",
        "set",
        "nvme999",
        "--threshold",
        "9",
        "--time",
        "100us",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown controller or namespace `nvme999`") && err.contains("numio topo"),
        "{err}"
    );
    let (code, _, err) = s.numio(&["coalesce", "off", "/dev/nvme999n1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`/dev/nvme999n1`"), "{err}");
    // No target at all: clap's usage error, exit status 2.
    let (code, _, err) = s.numio(&["coalesce", "off"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CTRL|NS"), "{err}");
    let (code, _, err) = s.numio(&[
        "coalesce",
        "show",
        "--root",
        &fixture("vm-two-socket"),
        "nvme9",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("this machine has nvme0, nvme1, nvme2, nvme3, nvme4"),
        "{err}"
    );
}

#[test]
fn show_on_a_snapshot_lists_controllers_and_says_their_values_are_not_read() {
    let (code, out, err) = common::numio(&["coalesce", "--root", &fixture("2node-multipath-tcp")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("nvme0 [node 0] pcie 0000:17:00.0"), "{out}");
    assert_eq!(
        out.matches("not read: --root is a snapshot").count(),
        2,
        "{out}"
    );
    assert!(
        out.contains("nvme2 [node unknown] tcp")
            && out.contains("a fabrics controller has no interrupts"),
        "{out}"
    );
    // A multipath head maps to its two controllers.
    let (code, out, err) = common::numio(&[
        "coalesce",
        "show",
        "/dev/nvme0n1",
        "--json",
        "--root",
        &fixture("2node-multipath-tcp"),
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let names: Vec<&str> = j["controllers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nvme0", "nvme1"]);
    assert_eq!(j["controllers"][0]["address"], "0000:17:00.0");
    assert_eq!(j["controllers"][0]["transport"], "pcie");
    assert!(
        j["controllers"][0]["raw"].is_null(),
        "not read from a snapshot"
    );
    assert_eq!(j["pending_restore"], serde_json::json!([]));
}

#[test]
fn show_warns_while_a_state_file_holds_records() {
    let s = StateDir::new("warn");
    s.write_record();
    // Live: whatever this machine's controllers read, the warning is there.
    let (_, out, err) = s.numio(&["coalesce", "show", "--json"]);
    assert!(
        err.contains(
            "records coalescing values numio changed and has not put back: nvme7 (original 0x0000"
        ) && err.contains("`numio coalesce restore`"),
        "{err}"
    );
    let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let pending = j["pending_restore"].as_array().unwrap();
    let mine = pending
        .iter()
        .find(|r| r["serial"] == "NO-SUCH-SERIAL")
        .expect("the record is listed");
    assert_eq!(mine["name"], "nvme7");
    assert_eq!(mine["original_raw"], 0);
}

#[test]
fn restore_keeps_a_record_whose_controller_is_not_there() {
    let s = StateDir::new("restore");
    let (code, _, err) = s.numio(&["coalesce", "restore"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("nothing to restore"), "{err}");
    s.write_record();
    let (code, _, err) = s.numio(&["coalesce", "restore"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("nvme7 (0000:ee:00.0, serial NO-SUCH-SERIAL): not put back: no controller at 0000:ee:00.0"),
        "{err}"
    );
    assert!(err.contains("run `numio coalesce restore` again"), "{err}");
    assert!(s.0.join("coalesce.json").exists(), "the record stays");
}

#[test]
fn a_damaged_state_file_is_named_and_left_alone() {
    let s = StateDir::new("damaged");
    std::fs::write(s.0.join("coalesce.json"), "{").unwrap();
    let (code, _, err) = s.numio(&["coalesce", "restore"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("coalesce.json: cannot parse it"), "{err}");
    assert_eq!(
        std::fs::read_to_string(s.0.join("coalesce.json")).unwrap(),
        "{"
    );
}
