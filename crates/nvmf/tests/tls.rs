//! NVMe/TCP over TLS 1.3 (PSK) between numio's target and numio's
//! initiator on loopback: data over both cipher suites and large transfers,
//! the discovery log's TREQ/TSAS, and each way a host is refused (no key,
//! another key, plain text, a Connect that is not what its identity says).
//! The Linux host against numio serve is the VM lab's `one-node/73-nvmf-tls`.

mod common;

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use nvme_spec::fabrics::DISCOVERY_NQN;
use nvme_spec::log::{lid, TCP_SECTYPE_TLS13, TREQ_SECURE_CHANNEL_REQUIRED};
use nvme_spec::Status;
use nvmf::config::HostConfig;
use nvmf::host::Stream;
use nvmf::tgt::counters::Refused;
use nvmf::tls::ConfiguredPsk;
use nvmf::{Initiator, InitiatorError, InitiatorOptions, TargetConfig};

struct Key {
    dir: PathBuf,
    key: ConfiguredPsk,
}

impl Key {
    fn new(tag: &str, len: usize) -> Self {
        let dir = std::env::temp_dir().join(format!("numio-tls-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = ConfiguredPsk::generate(len);
        let p = dir.join("tls.key");
        std::fs::write(&p, key.encode().as_bytes()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        Self { dir, key }
    }

    fn host(&self, nqn: &str) -> HostConfig {
        HostConfig {
            nqn: nqn.into(),
            dhchap_secret: None,
            dhchap_ctrl_secret: None,
            dhchap_hashes: Vec::new(),
            dhchap_dhgroups: Vec::new(),
            tls_key: Some(self.dir.join("tls.key")),
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tls_config(k: &Key) -> TargetConfig {
    let mut c = config(None);
    c.tls = true;
    c.subsystems[0].allow_any_host = false;
    c.subsystems[0].hosts.push(k.host(HOST));
    c
}

fn with_key(key: &ConfiguredPsk) -> InitiatorOptions {
    let mut o = opts();
    o.tls = Some(Arc::new(key.clone()));
    o
}

fn refused(srv: &nvmf::Server, why: Refused) -> u64 {
    srv.target.refusals.snapshot()[why as usize].1
}

#[test]
fn both_cipher_suites_carry_io_of_every_size() {
    for len in [32, 48] {
        let k = Key::new(&format!("io{len}"), len);
        let (srv, addr) = start(&tls_config(&k));
        let o = with_key(&k.key);
        let (a, mut q) = controller(addr, &o);
        assert_eq!(a.tls_cipher().as_deref(), Some(k.key.hash().cipher_suite()));
        assert!(q.tls_cipher().is_some(), "the I/O queue runs over TLS too");
        // In-capsule, R2T with several H2CData PDUs, and a large read.
        for (slba, blocks) in [(0u64, 1u32), (64, 64), (1024, 512)] {
            let data = pattern(slba as u32 + 1, blocks as usize * 512);
            q.write(1, slba, &data).unwrap();
            assert_eq!(
                q.read(1, slba, blocks).unwrap(),
                data,
                "{blocks} blocks at {slba}"
            );
        }
        assert_eq!(refused(&srv, Refused::TlsFailed), 0);
    }
}

#[test]
fn the_discovery_log_says_tls_is_required() {
    let k = Key::new("disc", 32);
    let (_srv, addr) = start(&tls_config(&k));
    let mut d = Initiator::connect_admin(addr, DISCOVERY_NQN, &with_key(&k.key)).unwrap();
    d.enable().unwrap();
    let page = d.get_log_page(lid::DISCOVERY, 0, 2048, 0).unwrap();
    let (_, entries) = nvme_spec::log::decode_discovery_log(&page);
    assert!(!entries.is_empty());
    for e in entries {
        assert_eq!(e.treq & 3, TREQ_SECURE_CHANNEL_REQUIRED, "{e:?}");
        assert_eq!(e.tcp_sectype, TCP_SECTYPE_TLS13, "{e:?}");
    }
}

#[test]
fn hosts_without_the_key_are_refused() {
    let k = Key::new("refuse", 32);
    let (srv, addr) = start(&tls_config(&k));
    // Another key: the handshake fails on both sides.
    let other = ConfiguredPsk::generate(32);
    match Initiator::connect_admin(addr, NQN, &with_key(&other)) {
        Err(InitiatorError::Tls(m)) => assert!(m.contains("TLS handshake failed"), "{m}"),
        other => panic!("expected a TLS error, got {other:?}"),
    }
    // An unknown host.
    let mut o = with_key(&k.key);
    o.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:ffffffff-2222-3333-4444-555555555555".into();
    assert!(matches!(
        Initiator::connect_admin(addr, NQN, &o),
        Err(InitiatorError::Tls(_))
    ));
    // Plain text where TLS is required: the target closes the connection.
    match Initiator::connect_admin(addr, NQN, &opts()) {
        Err(InitiatorError::Io(_)) => {}
        other => panic!("expected the target to close a plain-text connection, got {other:?}"),
    }
    wait_for(&srv.target, "three refused handshakes", |t| {
        t.refusals.snapshot()[Refused::TlsFailed as usize].1 == 3
    });
}

#[test]
fn a_connect_must_be_what_its_identity_says() {
    let k = Key::new("ident", 32);
    let (srv, addr) = start(&tls_config(&k));
    // A TLS session for the discovery subsystem, then a Connect to the NVM
    // subsystem: refused as an invalid host.
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(LONG)).unwrap();
    let tls = nvmf::tls::ossl::connect(tcp, &k.key, HOST, DISCOVERY_NQN).unwrap();
    let mut q = Initiator::over(Stream::Tls(tls), &opts()).unwrap();
    match q.fabrics_connect(NQN, 0, nvme_spec::fabrics::CNTLID_DYNAMIC) {
        Err(InitiatorError::Command { status, .. }) => {
            assert_eq!(status, Status::CONNECT_INVALID_HOST)
        }
        other => panic!("expected Connect Invalid Host, got {other:?}"),
    }
    assert_eq!(refused(&srv, Refused::TlsIdentity), 1);
}

#[test]
fn configurations_that_cannot_work_are_refused_with_the_fix() {
    let k = Key::new("cfg", 32);
    let mut c = tls_config(&k);
    c.subsystems[0]
        .allowed_hosts
        .push("nqn.2014-08.org.nvmexpress:uuid:nokey".into());
    let e = nvmf::Server::start(&c).unwrap_err().to_string();
    assert!(
        e.contains("has no TLS key and TLS is required") && e.contains("tls-key=FILE"),
        "{e}"
    );
    let mut c = tls_config(&k);
    c.subsystems[0].allow_any_host = true;
    let e = nvmf::Server::start(&c).unwrap_err().to_string();
    assert!(e.contains("allow_any_host"), "{e}");
    let mut c = tls_config(&k);
    c.tls = false;
    let e = nvmf::Server::start(&c).unwrap_err().to_string();
    assert!(e.contains("TLS is off: add --tls"), "{e}");
    let h = HostConfig::parse_flag(&format!("{HOST},tls-key=/k"))
        .unwrap()
        .unwrap();
    assert_eq!(h.tls_key, Some(PathBuf::from("/k")));
    assert_eq!(h.dhchap_secret, None);
}

// Issue 38: each failed handshake printed a line, so a flood of bad
// ClientHellos was a flood of log lines.
#[test]
fn a_flood_of_failed_handshakes_is_counted_and_its_lines_rate_limited() {
    use nvmf::tgt::log_limit::LINES_PER_WINDOW;
    let k = Key::new("flood", 32);
    let (srv, addr) = start(&tls_config(&k));
    let other = ConfiguredPsk::generate(32);
    let n = u64::from(LINES_PER_WINDOW) + 5;
    for _ in 0..n {
        assert!(Initiator::connect_admin(addr, NQN, &with_key(&other)).is_err());
    }
    wait_for(&srv.target, "every refused handshake counted", |t| {
        t.refusals.snapshot()[Refused::TlsFailed as usize].1 == n
    });
    assert_one_window_printed(&srv.target.auth_log, 5);
}
