//! `numio serve` with two ports: SIGHUP re-reads `ana = [...]` from
//! `--config`, prints the change, and the host connected through the port
//! that changed gets the ANA Change notice; its I/O then gets the ANA
//! Inaccessible status. Every wait is for an event (a line on stdout, a
//! completion), never a clock.

mod common;

use common::lines::next_line;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use nvme_spec::ana::{AEC_ANA_CHANGE, AEN_ANA_CHANGE};
use nvme_spec::command::{admin, io};
use nvme_spec::{Sqe, Status};
use nvmf::host::command::rw_sqe;
use nvmf::{Initiator, InitiatorOptions};

const NQN: &str = "nqn.2026-01.io.numio:ana";
const WAIT: Duration = Duration::from_secs(120);

fn toml(states: &str) -> String {
    format!(
        "listen = [\"127.0.0.1:0\", \"127.0.0.1:0\"]\ndiscovery_port = 0\nana = [{states}]\n\
         [[subsystem]]\nnqn = \"{NQN}\"\nallow_any_host = true\n\
         [[subsystem.namespace]]\nbacking = \"mem:16M\"\n"
    )
}

fn connect(addr: SocketAddr) -> (Initiator, Initiator) {
    let o = InitiatorOptions {
        hostnqn: "nqn.2014-08.org.nvmexpress:uuid:0000-ana".into(),
        timeout: WAIT,
        ..Default::default()
    };
    let mut a = Initiator::connect_admin(addr, NQN, &o).unwrap();
    a.enable().unwrap();
    let nq = a
        .set_features(nvme_spec::features::fid::NUM_QUEUES, 0)
        .unwrap();
    assert!(nq.cqe.status().is_success());
    let q = Initiator::connect_io(addr, NQN, a.cntlid, 1, &o).unwrap();
    (a, q)
}

/// Sends `sig` to our child `pid`.
fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child, not yet waited for, so
    // the pid cannot have been reused.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "signal delivered");
}

#[test]
fn sighup_changes_a_ports_ana_state_and_tells_its_host() {
    let cfg = common::Temp::new("serve-ana.toml", 0);
    std::fs::write(cfg.path(), toml("\"optimized\", \"non-optimized\"")).unwrap();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["serve", "--config", cfg.path(), "--cpus", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("numio serve runs");
    // stdout and stderr lines, each in the order numio wrote it.
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
    let port = |l: String| -> SocketAddr { l.split_whitespace().nth(4).unwrap().parse().unwrap() };
    let p1 = port(next_line(&lines, "port 1 "));
    let p2_line = next_line(&lines, "port 2 ");
    assert!(
        p2_line.contains("ANA group 1 non-optimized, reactors on CPUs [0]"),
        "{p2_line}"
    );
    next_line(&lines, "ready");

    let (mut a, mut q) = connect(p1);
    let c = a.set_features(nvme_spec::features::fid::ASYNC_EVENT, AEC_ANA_CHANGE);
    assert!(c.unwrap().cqe.status().is_success());
    let aer = a
        .post(
            Sqe {
                opcode: admin::ASYNC_EVENT,
                ..Default::default()
            },
            Vec::new(),
            0,
        )
        .unwrap();

    std::fs::write(cfg.path(), toml("\"inaccessible\", \"non-optimized\"")).unwrap();
    let pid = i32::try_from(serve.id()).unwrap();
    signal(pid, libc::SIGHUP);
    let said = next_line(&lines, "ANA optimized -> inaccessible");
    assert!(
        said.starts_with(&format!("numio serve: port 1 ({p1})")),
        "{said}"
    );
    assert!(said.ends_with("sent to 1 controller(s)"), "{said}");
    let c = a.reap().expect("the AER completes");
    assert_eq!((c.cqe.cid, c.cqe.result), (aer, AEN_ANA_CHANGE));
    let st = q
        .submit(rw_sqe(io::READ, 1, 0, 8), &[], 4096)
        .unwrap()
        .cqe
        .status();
    assert_eq!(st, Status::ANA_INACCESSIBLE);

    // A bad state is refused with the names; the states stay.
    std::fs::write(cfg.path(), toml("\"down\"")).unwrap();
    signal(pid, libc::SIGHUP);
    let said = next_line(&lines, "SIGHUP");
    assert!(
        said.contains("\"down\" is not an ANA state: use optimized"),
        "{said}"
    );
    // Regression: a reload's message named the configured port 0, not the
    // bound one.
    assert!(said.contains(&format!("port 1 ({p1})")), "{said}");
    assert!(said.ends_with("ANA states unchanged"), "{said}");
    std::fs::write(cfg.path(), toml("\"optimized\", \"non-optimized\"")).unwrap();
    signal(pid, libc::SIGHUP);
    next_line(&lines, "ANA inaccessible -> optimized");
    let st = q
        .submit(rw_sqe(io::READ, 1, 0, 8), &[], 4096)
        .unwrap()
        .cqe
        .status();
    assert!(st.is_success(), "{st:?}");
    signal(pid, libc::SIGTERM);
    assert!(serve.wait().unwrap().success());
}
