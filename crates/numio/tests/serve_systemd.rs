//! `numio serve` run as `numio-serve@.service` runs it: `Type=notify`
//! readiness over a notify socket this test creates (an abstract name, as
//! systemd uses), SIGHUP reload under a connected host (a namespace added,
//! a host allowed, a namespace removed: the host stays connected, hears of
//! each change through its Asynchronous Event Request and the Changed
//! Namespace List, and its I/O follows), RELOADING=1/READY=1 around each
//! reload and STOPPING=1 at SIGTERM. Every wait is for an event (a
//! datagram, a line, a completion), never a clock.

mod common;

use common::lines::next_line;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use nvme_spec::command::{admin, io};
use nvme_spec::identify::{cns, decode_ns_list};
use nvme_spec::log::lid;
use nvme_spec::{Sqe, Status};
use nvmf::host::command::rw_sqe;
use nvmf::{Initiator, InitiatorOptions};

const NQN: &str = "nqn.2026-01.io.numio:unit";
const HOST1: &str = "nqn.2014-08.org.nvmexpress:uuid:0000-unit-1";
const HOST2: &str = "nqn.2014-08.org.nvmexpress:uuid:0000-unit-2";
const WAIT: Duration = Duration::from_secs(120);
/// Asynchronous Event Enable bit 8 and the notice it enables.
const AEC_NS_ATTRIBUTE: u32 = 1 << 8;
const AEN_NS_ATTRIBUTE_CHANGED: u32 = 0x0004_0002;
/// How READY=1 starts, at start and after each reload.
const READY: &str = "READY=1\nSTATUS=serving 1 subsystem(s) on 127.0.0.1:";

fn toml(backings: &[&str], hosts: &[&str]) -> String {
    let mut t = format!(
        "listen = [\"127.0.0.1:0\"]\ndiscovery_port = 0\n[[subsystem]]\nnqn = \"{NQN}\"\nallowed_hosts = {hosts:?}\n"
    );
    for b in backings {
        t.push_str(&format!("[[subsystem.namespace]]\nbacking = \"{b}\"\n"));
    }
    t
}

/// The next datagram on the notify socket.
fn datagram(sock: &UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = sock
        .recv(&mut buf)
        .expect("a notify datagram from numio serve");
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

fn opts(hostnqn: &str) -> InitiatorOptions {
    InitiatorOptions {
        hostnqn: hostnqn.into(),
        timeout: WAIT,
        ..Default::default()
    }
}

fn admin_cmd(a: &mut Initiator, sqe: Sqe, read_len: u32) -> Vec<u8> {
    let cid = a.post(sqe, Vec::new(), read_len).unwrap();
    let c = a.reap().unwrap();
    assert_eq!(c.cqe.cid, cid, "an unexpected completion arrived first");
    assert!(c.cqe.status().is_success(), "{:?}", c.cqe.status());
    c.data
}

fn active_nsids(a: &mut Initiator) -> Vec<u32> {
    let sqe = Sqe {
        opcode: admin::IDENTIFY,
        cdw10: u32::from(cns::ACTIVE_NS_LIST),
        ..Default::default()
    };
    decode_ns_list(&admin_cmd(a, sqe, 4096))
}

fn changed_ns(a: &mut Initiator) -> Vec<u32> {
    let mut sqe = Sqe::default();
    nvme_spec::log::GetLogPage {
        lid: lid::CHANGED_NS,
        lsp: 0,
        rae: false,
        len_bytes: 4096,
        offset_bytes: 0,
    }
    .to_sqe(&mut sqe);
    admin_cmd(a, sqe, 4096)
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .take_while(|&id| id != 0)
        .collect()
}

fn post_aer(a: &mut Initiator) -> u16 {
    let sqe = Sqe {
        opcode: admin::ASYNC_EVENT,
        ..Default::default()
    };
    a.post(sqe, Vec::new(), 0).expect("AER posted")
}

fn read_status(q: &mut Initiator, nsid: u32) -> Status {
    q.submit(rw_sqe(io::READ, nsid, 0, 8), &[], 4096)
        .unwrap()
        .cqe
        .status()
}

/// Sends `sig` to our child `pid`.
fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child, not yet waited for, so
    // the pid cannot have been reused.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "signal delivered");
}

/// SIGHUP after writing `config`; returns the READY=1 datagram that ends
/// the reload, after checking the RELOADING=1 one before it.
fn reload(pid: i32, cfg: &common::Temp, config: String, notify: &UnixDatagram) -> String {
    std::fs::write(cfg.path(), config).unwrap();
    signal(pid, libc::SIGHUP);
    let reloading = datagram(notify);
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading:?}"
    );
    let ready = datagram(notify);
    assert!(ready.starts_with(READY), "{ready:?}");
    ready
}

/// numio serve on `config` with NOTIFY_SOCKET=@`name`: the child and its
/// stdout and stderr lines, each in the order numio wrote it.
fn spawn_serve(config: &str, name: &str) -> (Child, Receiver<String>) {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["serve", "--config", config, "--cpus", "0"])
        .env("NOTIFY_SOCKET", format!("@{name}"))
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
    (serve, lines)
}

/// HOST1's admin queue (Namespace Attribute notices on) and I/O queue 1.
fn connect(addr: SocketAddr) -> (Initiator, Initiator) {
    let mut a = Initiator::connect_admin(addr, NQN, &opts(HOST1)).unwrap();
    a.enable().unwrap();
    let nq = a.set_features(nvme_spec::features::fid::NUM_QUEUES, 0);
    assert!(nq.unwrap().cqe.status().is_success());
    let q = Initiator::connect_io(addr, NQN, a.cntlid, 1, &opts(HOST1)).unwrap();
    let aec = a.set_features(nvme_spec::features::fid::ASYNC_EVENT, AEC_NS_ATTRIBUTE);
    assert!(aec.unwrap().cqe.status().is_success());
    (a, q)
}

/// The AER `aer` completes with the Namespace Attribute Changed notice and
/// the Changed Namespace List names `changed`; `active` are then active.
fn told(a: &mut Initiator, aer: u16, changed: &[u32], active: &[u32]) {
    let c = a.reap().expect("the AER completes");
    assert_eq!((c.cqe.cid, c.cqe.result), (aer, AEN_NS_ATTRIBUTE_CHANGED));
    assert_eq!(changed_ns(a), changed);
    assert_eq!(active_nsids(a), active);
}

#[test]
fn serve_under_a_notify_socket_reloads_namespaces_and_hosts_under_a_connected_host() {
    let name = format!("numio-test-notify-{}", std::process::id());
    let notify = UnixDatagram::bind_addr(&UnixAddr::from_abstract_name(name.as_bytes()).unwrap())
        .expect("an abstract notify socket");
    notify.set_read_timeout(Some(WAIT)).unwrap();
    let cfg = common::Temp::new("serve-unit.toml", 0);
    std::fs::write(cfg.path(), toml(&["mem:16M"], &[HOST1])).unwrap();
    let (mut serve, lines) = spawn_serve(cfg.path(), &name);
    let ready = datagram(&notify);
    assert!(ready.starts_with(READY), "{ready:?}");
    let addr: SocketAddr = ready.rsplit(' ').next().unwrap().parse().unwrap();
    let pid = i32::try_from(serve.id()).unwrap();

    let (mut a, mut q) = connect(addr);
    assert!(
        Initiator::connect_admin(addr, NQN, &opts(HOST2)).is_err(),
        "HOST2 not allowed yet"
    );
    assert_eq!(read_status(&mut q, 2), Status::INVALID_NS);

    // A namespace and a host added: the connected host hears of nsid 2.
    let aer = post_aer(&mut a);
    reload(
        pid,
        &cfg,
        toml(&["mem:16M", "mem:32M"], &[HOST1, HOST2]),
        &notify,
    );
    next_line(&lines, &format!("{NQN}: nsid 2 mem:32M added"));
    next_line(
        &lines,
        &format!("{NQN}: allowed hosts changed (connected hosts stay)"),
    );
    told(&mut a, aer, &[2], &[1, 2]);
    assert!(
        read_status(&mut q, 2).is_success(),
        "the new namespace serves I/O on the old queue"
    );
    assert!(read_status(&mut q, 1).is_success());
    let b = Initiator::connect_admin(addr, NQN, &opts(HOST2)).expect("HOST2 now allowed");

    // The first namespace removed: announced, its I/O refused, nsid 2 stays.
    let aer = post_aer(&mut a);
    reload(pid, &cfg, toml(&["mem:32M"], &[HOST1, HOST2]), &notify);
    next_line(&lines, &format!("{NQN}: nsid 1 mem:16M removed"));
    told(&mut a, aer, &[1], &[2]);
    assert_eq!(read_status(&mut q, 1), Status::INVALID_NS);
    assert!(read_status(&mut q, 2).is_success());

    // A broken file changes nothing, and says so; READY=1 still follows.
    reload(pid, &cfg, "[[subsystem]]\nnqn = 7\n".into(), &notify);
    let said = next_line(&lines, "SIGHUP");
    assert!(
        said.ends_with("namespaces, hosts and ANA states unchanged"),
        "{said}"
    );
    assert!(read_status(&mut q, 2).is_success());

    drop(b);
    signal(pid, libc::SIGTERM);
    let stopping = datagram(&notify);
    assert!(stopping.starts_with("STOPPING=1\n"), "{stopping:?}");
    assert!(serve.wait().unwrap().success());
    next_line(&lines, "stopped; every namespace flushed");
}
