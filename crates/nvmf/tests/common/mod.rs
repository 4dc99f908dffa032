//! Shared helpers: a target on an ephemeral loopback port.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use nvmf::config::{NamespaceConfig, SubsystemConfig};
use nvmf::tgt::subsystem::Target;
use nvmf::{Initiator, InitiatorError, InitiatorOptions, Server, TargetConfig};

pub const NQN: &str = "nqn.2026-01.io.numio:test";
pub const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";

/// A target of one subsystem `nqn` open to any host, serving `namespaces`
/// (specs as `--ns` takes them), for driving connections without a reactor.
pub fn one_subsystem(nqn: &str, namespaces: &[&str]) -> std::sync::Arc<Target> {
    let mut cfg = TargetConfig::default();
    cfg.subsystems.push(SubsystemConfig {
        nqn: nqn.into(),
        serial: "S".into(),
        model: "M".into(),
        allowed_hosts: vec![],
        allow_any_host: true,
        hosts: Vec::new(),
        namespaces: namespaces.iter().map(|n| NamespaceConfig::new(n)).collect(),
    });
    Target::new(&cfg).unwrap()
}

pub fn config(allowed: Option<&str>) -> TargetConfig {
    let mut c = TargetConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        discovery_port: 0,
        cpus: vec![0, 0],
        ..Default::default()
    };
    c.subsystems.push(SubsystemConfig {
        nqn: NQN.into(),
        serial: "SERIAL42".into(),
        model: "numio test model".into(),
        allowed_hosts: allowed.map(|h| vec![h.to_string()]).unwrap_or_default(),
        allow_any_host: allowed.is_none(),
        hosts: Vec::new(),
        namespaces: vec![
            NamespaceConfig::new("mem:64M"),
            NamespaceConfig::new("mem:8M"),
        ],
    });
    c
}

pub fn start(cfg: &TargetConfig) -> (Server, SocketAddr) {
    let s = Server::start(cfg).expect("target starts");
    let a = s.listen_addrs[0];
    (s, a)
}

pub fn opts() -> InitiatorOptions {
    InitiatorOptions {
        hostnqn: HOST.into(),
        ..Default::default()
    }
}

/// Admin queue connected, controller enabled, one I/O queue granted.
pub fn controller(addr: SocketAddr, o: &InitiatorOptions) -> (Initiator, Initiator) {
    let mut a = Initiator::connect_admin(addr, NQN, o).expect("admin connect");
    a.enable().expect("enable");
    let nq = a
        .set_features(nvme_spec::features::fid::NUM_QUEUES, 0x0003_0003)
        .unwrap();
    assert!(nq.cqe.status().is_success());
    let mut io_opts = o.clone();
    io_opts.queue_entries = 64;
    let q = Initiator::connect_io(addr, NQN, a.cntlid, 1, &io_opts).expect("io connect");
    (a, q)
}

/// A command capsule PDU of `sqe` (no in-capsule data), framed as
/// `framing` says: for tests that send raw PDUs past the initiator's queue.
pub fn capsule(sqe: &nvme_spec::Sqe, framing: &nvme_spec::tcp::Framing) -> Vec<u8> {
    use nvme_spec::tcp::{self, pdu_type};
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &sqe.encode(),
        &[],
        framing,
    );
    b
}

pub fn pattern(seed: u32, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// A failure bound for a wait, not a wait: generous, so a busy machine
/// cannot outrun it.
pub const LONG: Duration = Duration::from_secs(60);

/// Waits until `done` holds of the target, looking again each time the
/// target announces a change (a connection or controller gone, counters
/// folded in, a resize noticed); fails after [`LONG`].
pub fn wait_for(t: &Target, what: &str, done: impl FnMut(&Target) -> bool) {
    assert!(t.wait_until(LONG, done), "timed out waiting for {what}");
}

/// Waits for the target to close `i`'s connection (the event), failing on
/// any PDU, other error or the read timeout instead.
pub fn expect_closed(i: &mut Initiator, what: &str) {
    use std::io::ErrorKind::{ConnectionReset, UnexpectedEof};
    match i.recv_pdu_bytes() {
        Err(InitiatorError::Io(e)) if matches!(e.kind(), UnexpectedEof | ConnectionReset) => {}
        other => panic!("expected the target to close {what}, got {other:?}"),
    }
}

/// This process's resident set (VmRSS of /proc/self/status), bytes.
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    kb * 1024
}

/// Asserts that rate-limited `log` printed one window's lines
/// (`LINES_PER_WINDOW`) and held back the other `held_back` (each still
/// counted by the target).
pub fn assert_one_window_printed(log: &nvmf::tgt::log_limit::SharedLogLimit, held_back: u64) {
    use nvmf::tgt::log_limit::LINES_PER_WINDOW;
    assert_eq!(
        log.printed(),
        u64::from(LINES_PER_WINDOW),
        "one window's lines"
    );
    assert_eq!(log.held_back(), held_back, "the rest counted, not printed");
}
