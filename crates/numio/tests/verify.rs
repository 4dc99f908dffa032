//! `--verify` and `--verify-only` end to end: a write run saves its
//! generation, damage of every kind is done to the file behind numio's
//! back, and a later `--verify-only` reports each at its offset and kind
//! and exits 1 (issue #16).

mod common;

use std::os::unix::fs::FileExt;

use common::{numio, Temp};

fn state_file(tag: &str) -> Temp {
    let t = Temp::new(tag, 0);
    std::fs::remove_file(&t.0).unwrap();
    t
}

/// Issue #16: verify said how many, not where, and a lost write over an
/// earlier numio pattern went unnoticed (the pattern depended only on the
/// offset and a fixed seed).
#[test]
fn verify_only_reports_lost_writes_corruption_misdirection_and_zeroes_by_offset() {
    let t = Temp::new("verify-target", 4 << 20);
    let state = state_file("verify-state");
    let write = [
        "bench",
        t.path(),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--iodepth",
        "4",
        "--no-time-based",
        "--verify",
        "--verify-state",
        state.path(),
        "--no-progress",
    ];
    let (code, _, err) = numio(&write);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("verify state saved to"), "{err}");
    let gen1 = std::fs::read(&t.0).unwrap();
    let (code, _, err) = numio(&write);
    assert_eq!(code, 0, "generation 2: {err}");

    let f = std::fs::OpenOptions::new().write(true).open(&t.0).unwrap();
    // Lost writes: 8 KiB at 1 MiB still hold generation 1.
    f.write_all_at(&gen1[1 << 20..(1 << 20) + 8192], 1 << 20)
        .unwrap();
    // Corruption: one flipped byte in the block at 2 MiB.
    let byte = std::fs::read(&t.0).unwrap()[(2 << 20) + 100];
    f.write_all_at(&[byte ^ 0x40], (2 << 20) + 100).unwrap();
    // Misdirected: the 4 KiB written for offset 0 landed at 512 KiB.
    let now = std::fs::read(&t.0).unwrap();
    f.write_all_at(&now[..4096], 512 << 10).unwrap();
    // Zeroes: 4 KiB at 3 MiB discarded.
    f.write_all_at(&[0u8; 4096], 3 << 20).unwrap();
    drop(f);

    let (code, out, err) = numio(&[
        "bench",
        t.path(),
        "--verify-only",
        "--verify-state",
        state.path(),
        "--no-progress",
    ]);
    assert_eq!(code, 1, "mismatches exit 1: {out}{err}");
    assert!(out.contains("expected generation 2"), "{out}");
    for line in [
        "0x80000..0x81000 (4096 B) misdirected",
        "0x100000..0x102000 (8192 B) lost_write",
        "0x200000..0x200200 (512 B) corrupt",
        "0x300000..0x301000 (4096 B) zeroes",
    ] {
        assert!(out.contains(line), "{line} in:\n{out}");
    }
    assert!(
        out.contains("33 mismatched: 8 misdirected (a block written for another offset), 16 lost write (an older generation), 1 corrupt (bad checksum or header), 8 zeroes (unwritten or discarded)"),
        "{out}"
    );

    let (code, json, err) = numio(&[
        "bench",
        t.path(),
        "--verify-only",
        "--verify-state",
        state.path(),
        "--json",
        "--no-progress",
    ]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let verify = &v["targets"][0]["verify"];
    assert_eq!(verify["checked_blocks"], 8192, "{verify}");
    assert_eq!(verify["expected"]["generation"], 2);
    let m = &verify["mismatched_blocks"];
    assert_eq!(
        (
            &m["lost_write"],
            &m["corrupt"],
            &m["misdirected"],
            &m["zeroes"]
        ),
        (&16.into(), &1.into(), &8.into(), &8.into()),
        "{verify}"
    );
    assert_eq!(verify["ranges"].as_array().unwrap().len(), 4, "{verify}");
    assert_eq!(verify["ranges"][1]["kind"], "lost_write");
    assert_eq!(verify["ranges"][1]["offset_bytes"], 1 << 20);
    assert_eq!(verify["ranges"][1]["len_bytes"], 8192);
}

#[test]
fn verify_only_without_a_saved_state_says_how_to_make_one() {
    let t = Temp::new("verify-nostate", 1 << 20);
    let state = state_file("verify-nostate-state");
    let (code, _, err) = numio(&[
        "bench",
        t.path(),
        "--verify-only",
        "--verify-state",
        state.path(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("has no saved verify state in")
            && err.contains("write it with --verify first"),
        "{err}"
    );
}

/// A later write run over part of the target leaves an older generation
/// elsewhere: no lost write there, for a plain read or for --verify-only
/// (which reads back only what the last run wrote).
#[test]
fn a_partial_rewrite_is_no_lost_write() {
    let t = Temp::new("verify-partial", 2 << 20);
    let state = state_file("verify-partial-state");
    let s = state.path();
    let common = [
        "--iodepth",
        "4",
        "--no-time-based",
        "--no-progress",
        "--verify-state",
        s,
    ];
    let run = |args: &[&str]| {
        let mut all = vec!["bench", t.path()];
        all.extend_from_slice(args);
        all.extend_from_slice(&common);
        numio(&all)
    };
    let (code, _, err) = run(&["--rw", "write", "--bs", "64k", "--verify"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&[
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--size",
        "512k",
        "--verify",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["--rw", "randread", "--bs", "4k", "--randommap", "--verify"]);
    assert_eq!(code, 0, "a plain read takes any generation: {out}{err}");
    assert!(
        out.contains("4096 blocks of 512 B checked, expected generation any, no mismatch"),
        "{out}"
    );
    let (code, out, err) = run(&["--verify-only"]);
    assert_eq!(
        code, 0,
        "the replay reads the 512 KiB written last: {out}{err}"
    );
    assert!(
        out.contains("1024 blocks of 512 B checked, expected generation 2, no mismatch"),
        "{out}"
    );
}

/// A verify state that cannot be saved (a read-only home, as in the VM
/// lab's guest) is a warning: the run and its report stand.
#[test]
fn an_unsavable_state_is_a_warning_not_a_failure() {
    let t = Temp::new("verify-unsavable", 1 << 20);
    let (code, out, err) = numio(&[
        "bench",
        t.path(),
        "--rw",
        "write",
        "--no-time-based",
        "--verify",
        "--json",
        "--no-progress",
        "--verify-state",
        "/proc/numio-verify-state.json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: cannot save the verify state to /proc/numio-verify-state.json"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("the report");
    assert_eq!(v["targets"][0]["verify"]["written"]["generation"], 1);
}

/// Issue #16: sequence numbers were written but never checked. A random
/// write run overwrites blocks; when the last overwrite of a block is
/// lost, the block holds the same generation with an older sequence, and
/// `--verify-only` took it.
#[test]
fn verify_only_catches_a_lost_overwrite_of_the_same_generation() {
    let t = Temp::new("verify-overwrite", 64 << 10);
    let state = state_file("verify-overwrite-state");
    let (code, _, err) = numio(&[
        "bench",
        t.path(),
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--iodepth",
        "1",
        "--number-ios",
        "64",
        "--randseed",
        "7",
        "--verify",
        "--verify-state",
        state.path(),
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{err}");
    let replay = [
        "bench",
        t.path(),
        "--verify-only",
        "--verify-state",
        state.path(),
        "--no-progress",
    ];
    let (code, out, err) = numio(&replay);
    assert_eq!(code, 0, "an intact run checks out: {out}{err}");

    // The 4 KiB block written last of all: its last write lost, it keeps
    // what the write just before it left (same generation, an older
    // sequence), as a device that drops a write would.
    let data = std::fs::read(&t.0).unwrap();
    let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
    let (at, seq) = (0..16)
        .map(|b| (b * 4096, word(b * 4096 + 32)))
        .max_by_key(|&(_, s)| s)
        .unwrap();
    assert!(seq > 16, "64 writes over 16 blocks overwrite some: {seq}");
    let key = engine::worker::VerifyKey {
        write: engine::result::VerifyStamp {
            generation: word(at + 16),
            seed: word(at + 24),
        },
        expect: None,
        also: None,
        job: 0,
        replay_window: None,
    };
    let mut older = vec![0u8; 4096];
    engine::worker::fill_blocks(&mut older, at as u64, 4096, &key, seq - 1);
    let f = std::fs::OpenOptions::new().write(true).open(&t.0).unwrap();
    f.write_all_at(&older, at as u64).unwrap();
    drop(f);

    let (code, out, err) = numio(&replay);
    assert_eq!(code, 1, "a lost overwrite exits 1: {out}{err}");
    let line = format!("{at:#x}..{:#x} (4096 B) lost_write", at + 4096);
    assert!(out.contains(&line), "{line} in:\n{out}");
    assert!(out.contains("8 mismatched: 8 lost write"), "{out}");
}

// Regression (issue 38): a verify state older than the data (restored
// from a backup) made `--verify-only` report every block as a lost write,
// exit 1, on a healthy target. A newer generation says the state is stale.
#[test]
fn verify_only_with_a_state_older_than_the_data_says_stale_not_lost() {
    let t = Temp::new("verify-stale", 1 << 20);
    let state = state_file("verify-stale-state");
    let write = [
        "bench",
        t.path(),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--no-time-based",
        "--verify",
        "--verify-state",
        state.path(),
        "--no-progress",
    ];
    let (code, _, err) = numio(&write);
    assert_eq!(code, 0, "{err}");
    let backup = std::fs::read(&state.0).unwrap();
    let (code, _, err) = numio(&write);
    assert_eq!(code, 0, "generation 2: {err}");
    std::fs::write(&state.0, backup).unwrap();

    let (code, out, err) = numio(&[
        "bench",
        t.path(),
        "--verify-only",
        "--verify-state",
        state.path(),
        "--no-progress",
    ]);
    assert!(
        !out.contains("lost write (an older generation)") && !out.contains("mismatched"),
        "{out}"
    );
    assert!(
        out.contains("2048 written after the saved state (generation 2: the state is stale, not a lost write), no mismatch"),
        "{out}"
    );
    assert!(
        err.contains(&format!("the verify state {} is stale for", state.path()))
            && err.contains("--verify-state FILE"),
        "{err}"
    );
    assert_eq!(code, 2, "a stale state is an input to fix: {err}");
}

// Regression (issue 38): with HOME and XDG_STATE_HOME unset the verify
// state went to $TMPDIR/numio/ and was written through links planted
// there, overwriting the file they pointed to.
#[test]
fn without_home_the_state_is_refused_and_no_temp_link_is_followed() {
    let t = Temp::new("verify-nohome", 1 << 20);
    let tmp = std::env::temp_dir().join(format!("numio-test-nohome-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("numio")).unwrap();
    let victim = tmp.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    for name in ["verify-state.json", "verify-state.lock"] {
        std::os::unix::fs::symlink(&victim, tmp.join("numio").join(name)).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["bench", t.path(), "--rw", "write", "--bs", "64k"])
        .args(["--no-time-based", "--verify", "--no-progress"])
        .env_remove("HOME")
        .env_remove("XDG_STATE_HOME")
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    std::fs::remove_dir_all(&tmp).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("neither XDG_STATE_HOME nor HOME is set")
            && err.contains("--verify-state FILE"),
        "{err}"
    );
}

#[test]
fn a_state_directory_others_may_write_is_refused() {
    let t = Temp::new("verify-wdir", 1 << 20);
    let xdg = std::env::temp_dir().join(format!("numio-test-xdg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&xdg);
    std::fs::create_dir_all(xdg.join("numio")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(xdg.join("numio"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["bench", t.path(), "--rw", "write", "--bs", "64k"])
        .args(["--no-time-based", "--verify", "--no-progress"])
        .env("XDG_STATE_HOME", &xdg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let left = std::fs::read_dir(xdg.join("numio")).unwrap().count();
    std::fs::remove_dir_all(&xdg).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is writable by others (mode 777)"), "{err}");
    assert_eq!(left, 0, "nothing written there");
}
