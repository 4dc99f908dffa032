//! `numio vfio` end to end where nothing can be bound: bad addresses and
//! functions that are no NVMe controller exit 2 naming the input and the
//! fix, and `status --json` describes this machine. (Binding is proven in
//! the VM lab: tests/vm/tests/iommu/.)

use std::path::PathBuf;
use std::process::Command;

fn numio(state: &PathBuf, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(args)
        .env("NUMIO_STATE_DIR", state)
        .output()
        .expect("numio runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn state(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numio-vfio-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn bad_addresses_exit_2_naming_the_input_and_the_forms() {
    let s = state("bad");
    for args in [
        &["vfio", "bind", "nvme0"][..],
        &["vfio", "unbind", "0000:02:00"][..],
    ] {
        let (code, _, err) = numio(&s, args);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("`{}` is not a PCI address", args[2]))
                && err.contains("lspci -D"),
            "{err}"
        );
    }
    // ff:1f.7 exists on no machine this runs on.
    let (code, _, err) = numio(&s, &["vfio", "bind", "pci:00ff:ff:1f.7"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("00ff:ff:1f.7: no such PCI function") && err.contains("lspci -D"),
        "{err}"
    );
    std::fs::remove_dir_all(&s).unwrap();
}

#[test]
fn status_json_describes_this_machine() {
    let s = state("status");
    let (code, out, err) = numio(&s, &["vfio", "status", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["iommu"].is_boolean(), "{out}");
    assert!(
        v["devices"].is_array() && v["hugepages"].is_array(),
        "{out}"
    );
    assert!(v["modules"]["vfio_pci"].is_boolean(), "{out}");
    std::fs::remove_dir_all(&s).unwrap();
}
