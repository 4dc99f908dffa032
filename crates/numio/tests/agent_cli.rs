//! `numio agent` driven directly on its stdin, as the controller would:
//! its limits and its `ready`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn agent() -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_numio"))
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("numio agent")
}

// Issue 38: the agent read the controller's lines without a length limit
// (a 1 GiB line cost 1.06 GB).
#[test]
fn a_controller_line_over_the_limit_ends_the_agent() {
    let mut a = agent();
    let mut stdin = a.stdin.take().unwrap();
    let line = vec![b'x'; (1 << 20) + 10];
    // The agent may exit before it reads all of it: a broken pipe is fine.
    let _ = stdin.write_all(&line).and_then(|()| stdin.write_all(b"\n"));
    drop(stdin);
    let out = a.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("over the limit of 1024 KiB") && err.contains("1048586 bytes"),
        "{err}"
    );
}

// Issue 38: `prepare` said `ready` without opening its targets, so a host
// that could not open them failed only after the start.
#[test]
fn prepare_opens_its_targets_before_ready() {
    let mut a = agent();
    let mut stdin = a.stdin.take().unwrap();
    let mut out = BufReader::new(a.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with(r#"{"type":"hello""#), "{line}");
    let missing = "/nonexistent-numio-agent-test/target";
    writeln!(
        stdin,
        r#"{{"type":"prepare","argv":["--runtime","1"],"targets":["{missing}"]}}"#
    )
    .unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with(r#"{"type":"error""#), "{line}");
    assert!(line.contains(missing), "{line}");
    drop(stdin);
    let _ = a.wait();
}
