//! `numio serve --log-format json|logfmt --log-level …`: every line a
//! machine can read (JSON objects with the event's fields, numbers as
//! numbers; logfmt pairs), the level filter (`warn` drops the state lines,
//! `debug` adds ordinary disconnects), and journald's priority prefix when
//! `JOURNAL_STREAM` names the stream. Waits are for lines, never a clock.

mod common;

use common::lines::{lines_of, next_line};

use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nvmf::{Initiator, InitiatorOptions};

const NQN: &str = "nqn.2026-01.io.numio:logs";
const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:0000-logs";
const WAIT: Duration = Duration::from_secs(120);

fn serve(extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numio"));
    c.args(["serve", "--ns", "mem:4M", "--nqn", NQN])
        .args(["--listen", "127.0.0.1:0", "--discovery-port", "0"])
        .args(["--cpus", "0", "--log-connections"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child, not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert!(child.wait().unwrap().success());
}

fn host() -> InitiatorOptions {
    InitiatorOptions {
        hostnqn: HOST.into(),
        timeout: WAIT,
        ..Default::default()
    }
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

#[test]
fn json_lines_carry_the_events_fields() {
    let mut child = serve(&["--log-format", "json", "--allow-host", HOST])
        .spawn()
        .expect("numio serve runs");
    let out = lines_of(child.stdout.take().unwrap());
    let listening = json(&next_line(&out, "\"event\":\"listening\""));
    let addr: SocketAddr = listening["addr"].as_str().unwrap().parse().unwrap();
    assert_eq!(listening["level"], "info");
    assert_eq!(
        listening["msg"].as_str().unwrap(),
        format!("NVMe/TCP listening on {addr}")
    );
    let ts = listening["ts"].as_str().unwrap();
    assert!(
        ts.len() == 24 && ts.ends_with('Z') && &ts[10..11] == "T",
        "RFC 3339 UTC with ms: {ts}"
    );
    let ns = json(&next_line(&out, "\"event\":\"namespace\""));
    assert_eq!(
        (ns["nsid"].as_i64(), ns["size_bytes"].as_i64()),
        (Some(1), Some(4 << 20))
    );
    next_line(&out, "\"event\":\"ready\"");

    let mut a = Initiator::connect_admin(addr, NQN, &host()).unwrap();
    a.enable().unwrap();
    let c = json(&next_line(&out, "\"event\":\"connected\""));
    assert_eq!(c["subsystem"], NQN);
    assert_eq!(c["host"], HOST);
    assert_eq!(c["qid"], 0, "a number, not a string: {c}");
    assert_eq!(c["cntlid"], a.cntlid);
    assert_eq!(c["reactor_cpu"], 0);
    assert!(c["msg"].as_str().unwrap().starts_with("connected "), "{c}");
    drop(a);
    stop(child);
}

#[test]
fn logfmt_and_levels() {
    // warn: no state lines on stdout; the open-to-any-host warning on
    // stderr in logfmt.
    let mut child = serve(&["--log-format", "logfmt", "--log-level", "warn"])
        .spawn()
        .expect("numio serve runs");
    let err = lines_of(child.stderr.take().unwrap());
    let w = next_line(&err, "event=open_to_any_host");
    assert!(w.starts_with("ts=20") && w.contains(" level=warn "), "{w}");
    assert!(
        w.contains(" msg=\"any host may connect (restrict with --allow-host NQN)\""),
        "{w}"
    );
    // SAFETY: kill(2) on our own child, not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "info lines are below warn"
    );

    // debug: an ordinary disconnect is said too.
    let mut child = serve(&["--log-format", "logfmt", "--log-level", "debug"])
        .spawn()
        .expect("numio serve runs");
    let out = lines_of(child.stdout.take().unwrap());
    let err = lines_of(child.stderr.take().unwrap());
    let l = next_line(&out, "event=listening");
    let addr: SocketAddr = l
        .split(" addr=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    next_line(&out, "event=ready");
    let a = Initiator::connect_admin(addr, NQN, &host()).unwrap();
    next_line(&out, "event=connected");
    drop(a);
    let closed = next_line(&err, "event=connection_closed");
    assert!(closed.contains(" level=debug "), "{closed}");
    assert!(closed.contains(" qid=0"), "{closed}");
    stop(child);
}

#[test]
fn the_journal_gets_priorities() {
    // stderr to a file whose device and inode JOURNAL_STREAM names, as
    // systemd names the journal's socket.
    let dir = std::env::temp_dir().join(format!("numio-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stderr");
    let file = std::fs::File::create(&path).unwrap();
    let md = file.metadata().unwrap();
    let mut child = serve(&[])
        .env("JOURNAL_STREAM", format!("{}:{}", md.dev(), md.ino()))
        .stderr(file)
        .spawn()
        .expect("numio serve runs");
    let out = lines_of(child.stdout.take().unwrap());
    // The warning is written before the ready line.
    let ready = next_line(&out, "ready");
    assert!(
        ready.starts_with("numio serve: "),
        "stdout is no journal: {ready}"
    );
    let err = std::fs::read_to_string(&path).unwrap();
    assert!(
        err.lines().any(|l| l
            == "<4>numio serve: warning: any host may connect (restrict with --allow-host NQN)"),
        "{err}"
    );
    stop(child);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_values_are_refused_naming_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["serve", "--ns", "mem:1M", "--log-format", "xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("xml")
            && err.contains("text")
            && err.contains("logfmt")
            && err.contains("json"),
        "{err}"
    );
}
