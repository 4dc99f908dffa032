//! `numio serve --port-cpus`: each port's connections go to the reactors
//! on its CPUs only. Two ports, one CPU each; the start-up lines name each
//! port's reactors and every connection's log line names the port it came
//! through and the CPU of the reactor that took it. Waits are for lines.

mod common;

use common::lines::next_line;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use nvmf::{Initiator, InitiatorOptions};

const NQN: &str = "nqn.2026-01.io.numio:ports";
const WAIT: Duration = Duration::from_secs(120);

#[test]
fn each_port_is_served_by_the_reactors_on_its_cpus() {
    let allowed = sysapi::affinity::allowed_cpus().unwrap();
    assert!(
        allowed.len() >= 2,
        "this test needs two CPUs to tell two ports' reactors apart; allowed: {allowed:?}"
    );
    let (c1, c2) = (allowed[0], allowed[1]);
    let mut serve = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["serve", "--ns", "mem:16M", "--nqn", NQN, "--allow-any-host"])
        .args(["--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0"])
        .args(["--discovery-port", "0", "--log-connections"])
        .args([
            "--port-cpus",
            &c1.to_string(),
            "--port-cpus",
            &c2.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("numio serve runs");
    let (tx, lines) = std::sync::mpsc::channel();
    let out: Box<dyn std::io::Read + Send> = Box::new(serve.stdout.take().unwrap());
    let err: Box<dyn std::io::Read + Send> = Box::new(serve.stderr.take().unwrap());
    for r in [out, err] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(r).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
    }
    let addr = |l: &str| -> SocketAddr { l.split_whitespace().nth(4).unwrap().parse().unwrap() };
    let l1 = next_line(&lines, "port 1 ");
    let l2 = next_line(&lines, "port 2 ");
    assert!(l1.ends_with(&format!("reactors on CPUs [{c1}]")), "{l1}");
    assert!(l2.ends_with(&format!("reactors on CPUs [{c2}]")), "{l2}");
    let reactors = next_line(&lines, "reactors on CPUs");
    assert!(reactors.contains(&format!("[{c1}, {c2}]")), "{reactors}");
    next_line(&lines, "ready");

    let o = InitiatorOptions {
        hostnqn: "nqn.2014-08.org.nvmexpress:uuid:0000-ports".into(),
        timeout: WAIT,
        ..Default::default()
    };
    let mut held = Vec::new();
    for (port, at, cpu) in [(2, &l2, c2), (1, &l1, c1), (2, &l2, c2), (2, &l2, c2)] {
        held.push(Initiator::connect_admin(addr(at), NQN, &o).expect("admin connect"));
        let said = next_line(&lines, "numio serve: connected");
        assert!(
            said.contains(&format!(" port {port} reactor CPU {cpu} ")),
            "port {port}'s connection on its reactor: {said}"
        );
    }
    drop(held);
    serve.kill().unwrap();
    serve.wait().unwrap();
}

#[test]
fn port_cpus_outside_the_allowed_cpus_or_too_many_lists_are_refused() {
    let run = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_numio"))
            .args(["serve", "--ns", "mem:16M", "--listen", "127.0.0.1:0"])
            .args(["--discovery-port", "0"])
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--port-cpus", "0", "--port-cpus", "0"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("one per --listen"), "{err}");
    let (code, err) = run(&["--port-cpus", "4095"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("--port-cpus: CPU 4095 is not one this process may run on"),
        "{err}"
    );
}
