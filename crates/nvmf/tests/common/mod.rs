//! Shared helpers: a target on an ephemeral loopback port.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use nvmf::config::{NamespaceConfig, SubsystemConfig};
use nvmf::{Initiator, InitiatorOptions, Server, TargetConfig};

pub const NQN: &str = "nqn.2026-01.io.numio:test";
pub const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";

/// A target of one subsystem `nqn` open to any host, serving `namespaces`
/// (specs as `--ns` takes them), for driving connections without a reactor.
pub fn one_subsystem(
    nqn: &str,
    namespaces: &[&str],
) -> std::sync::Arc<nvmf::target::subsystem::Target> {
    let mut cfg = TargetConfig::default();
    cfg.subsystems.push(SubsystemConfig {
        nqn: nqn.into(),
        serial: "S".into(),
        model: "M".into(),
        allowed_hosts: vec![],
        allow_any_host: true,
        namespaces: namespaces.iter().map(|n| NamespaceConfig::new(n)).collect(),
    });
    nvmf::target::subsystem::Target::new(&cfg).unwrap()
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

pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
