//! `numio serve` refuses to export a block device that holds something (a
//! filesystem here), names it and the fix, and exports it with `--force`
//! (with a warning); a blank device is exported. Needs root and losetup
//! (a loop device over a temp file); skips with a message otherwise.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

struct Loop {
    dev: String,
    file: std::path::PathBuf,
}

impl Loop {
    fn new(tag: &str, ext4: bool) -> Option<Loop> {
        // SAFETY: geteuid has no preconditions.
        // NUMIO_TEST_UNPRIVILEGED: scripts/test --quick runs as if not root.
        if unsafe { libc::geteuid() } != 0 || std::env::var_os("NUMIO_TEST_UNPRIVILEGED").is_some()
        {
            eprintln!("skipping: needs root (losetup)");
            return None;
        }
        let file =
            std::env::temp_dir().join(format!("numio-serve-{tag}-{}.img", std::process::id()));
        std::fs::write(&file, vec![0u8; 16 << 20]).unwrap();
        if ext4 {
            let ok = Command::new("mkfs.ext4")
                .args(["-q", "-F"])
                .arg(&file)
                .status();
            if !ok.is_ok_and(|s| s.success()) {
                eprintln!("skipping: mkfs.ext4 is not installed");
                let _ = std::fs::remove_file(&file);
                return None;
            }
        }
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

fn serve(dev: &str, force: bool) -> std::process::Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numio"));
    c.args([
        "serve",
        "--ns",
        dev,
        "--listen",
        "127.0.0.1:0",
        "--discovery-port",
        "0",
    ]);
    if force {
        c.arg("--force");
    }
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The lines up to "ready" (stdout and stderr interleaved by thread).
fn until_ready(child: &mut std::process::Child) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    for r in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(r).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
    }
    let mut seen = Vec::new();
    while let Ok(l) = rx.recv_timeout(std::time::Duration::from_secs(120)) {
        let ready = l.contains("numio serve: ready");
        seen.push(l);
        if ready {
            break;
        }
    }
    seen
}

#[test]
fn a_device_with_a_filesystem_is_refused_unless_forced() {
    let Some(l) = Loop::new("ext4", true) else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args([
            "serve",
            "--ns",
            &l.dev,
            "--listen",
            "127.0.0.1:0",
            "--discovery-port",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "refused as bad input");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "refusing to export {}: it holds a ext4 filesystem",
            l.dev
        )) && err.contains("--force"),
        "{err}"
    );
    let mut forced = serve(&l.dev, true);
    let lines = until_ready(&mut forced);
    forced.kill().unwrap();
    forced.wait().unwrap();
    assert!(
        lines
            .iter()
            .any(|x| x.contains("warning: exporting") && x.contains("(--force-export)")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|x| x.contains("ready")), "{lines:?}");
}

#[test]
fn a_blank_device_is_exported() {
    let Some(l) = Loop::new("blank", false) else {
        return;
    };
    let mut s = serve(&l.dev, false);
    let lines = until_ready(&mut s);
    s.kill().unwrap();
    s.wait().unwrap();
    assert!(lines.iter().any(|x| x.contains("ready")), "{lines:?}");
    assert!(
        !lines.iter().any(|x| x.contains("warning: exporting")),
        "{lines:?}"
    );
}

/// `l`'s filesystem mounted on a temp directory; unmounted on drop.
struct Mounted(std::path::PathBuf);

impl Mounted {
    fn new(l: &Loop) -> Option<Mounted> {
        let dir = std::env::temp_dir().join(format!("numio-serve-mnt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount").arg(&l.dev).arg(&dir).status();
        if !ok.is_ok_and(|s| s.success()) {
            eprintln!("skipping: could not mount {}", l.dev);
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(Mounted(dir))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn summary_counts_a_refusal(summary: &Option<String>) -> bool {
    summary.as_deref().is_some_and(|l| l.contains("refused"))
}

fn reload_toml(backings: &[&str]) -> String {
    let mut t = String::from(
        "listen = [\"127.0.0.1:0\"]\ndiscovery_port = 0\n[[subsystem]]\n\
         nqn = \"nqn.2026-01.io.numio:reload-safety\"\nallow_any_host = true\n",
    );
    for b in backings {
        t.push_str(&format!("[[subsystem.namespace]]\nbacking = \"{b}\"\n"));
    }
    t
}

// Regression (issue 38): a SIGHUP reload opened the namespaces it added
// without the start-up write-safety check, so it exported a block device
// holding a mounted ext4 (and a host's write destroyed the filesystem).
#[test]
fn a_reload_refuses_a_mounted_device_names_it_and_applies_the_rest() {
    let Some(l) = Loop::new("reload", true) else {
        return;
    };
    let Some(_mnt) = Mounted::new(&l) else {
        return;
    };
    let cfg = common::Temp::new("serve-reload-safety.toml", 0);
    std::fs::write(cfg.path(), reload_toml(&["mem:16M"])).unwrap();
    let s = common::serve::Serve::start(&["--config", cfg.path(), "--cpus", "0"]);
    s.line("ready");
    std::fs::write(cfg.path(), reload_toml(&["mem:16M", &l.dev, "mem:8M"])).unwrap();
    s.signal(libc::SIGHUP);
    // stdout and stderr lines arrive in either order: gather up to the
    // summary, then the warning the summary counts, if it came after.
    let (mut said, mut refused, mut summary) = (Vec::new(), None, None);
    while summary.is_none() || (refused.is_none() && summary_counts_a_refusal(&summary)) {
        let l = s.line("");
        if l.contains("SIGHUP:") {
            refused = Some(l.clone());
        } else if l.contains("reloaded:") {
            summary = Some(l.clone());
        }
        said.push(l);
    }
    let (refused, summary) = (refused.unwrap_or_default(), summary.unwrap());
    assert!(
        said.iter().any(|l| l.contains("nsid 2 mem:8M added")),
        "{said:?}"
    );
    assert!(
        !said.iter().any(|x| x.contains(&format!("{} added", l.dev))),
        "{said:?}"
    );
    assert!(
        refused.contains(&format!(
            "namespace {} not added: refusing to export {}: it holds",
            l.dev, l.dev
        )) && refused.contains("--force"),
        "{refused}"
    );
    assert!(
        summary.contains("1 namespace(s) added")
            && summary.contains("1 namespace(s) refused (the rest applied)"),
        "{summary}"
    );
    let blkid = Command::new("blkid")
        .args(["-o", "value", "-s", "TYPE", &l.dev])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&blkid.stdout).trim(), "ext4");
}

// Regression (issue 38): `serve --ns mem:1T` on a 23 GiB machine started
// without a word; hosts' writes then ran it out of memory.
#[test]
fn ram_namespaces_past_the_memory_available_are_refused_naming_both() {
    let s = common::serve::Serve::start(&[
        "--ns",
        "mem:64T",
        "--listen",
        "127.0.0.1:0",
        "--discovery-port",
        "0",
    ]);
    let said = loop {
        let l = s.line("");
        if l.contains("refusing") || l.contains("ready") {
            break l;
        }
    };
    assert!(
        said.contains("refusing to serve RAM namespaces of 65536.0 GiB together")
            && said.contains("MemAvailable")
            && said.contains("--force"),
        "{said}"
    );
}
