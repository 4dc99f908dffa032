//! DH-HMAC-CHAP between numio's target and numio's initiator on loopback:
//! every hash and DH group, bidirectional, and each way a host is refused
//! (no secret, a wrong one, a wrong controller secret, commands before
//! authenticating, out-of-sequence and malformed messages). The Linux host
//! against numio serve is the VM lab's `one-node/69-nvmf-dhchap`.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use nvme_spec::auth::{self as wire, Message, Negotiate, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND};
use nvme_spec::Status;
use nvmf::auth::{DhGroup, HashFn, Secret};
use nvmf::config::HostConfig;
use nvmf::tgt::counters::Refused;
use nvmf::{ConfigError, HostSecrets, Initiator, InitiatorError, TargetConfig};

struct Keys {
    dir: PathBuf,
    host: Secret,
    ctrl: Secret,
}

impl Keys {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("numio-dhchap-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let k = Self {
            dir,
            host: Secret::generate(32, Some(HashFn::Sha256)),
            ctrl: Secret::generate(48, Some(HashFn::Sha384)),
        };
        k.write("host.key", &k.host);
        k.write("ctrl.key", &k.ctrl);
        k
    }

    fn write(&self, name: &str, s: &Secret) -> PathBuf {
        let p = self.dir.join(name);
        std::fs::write(&p, s.encode().as_bytes()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    }

    fn host_config(&self, ctrl: bool, hashes: &[&str], groups: &[&str]) -> HostConfig {
        HostConfig {
            nqn: HOST.into(),
            dhchap_secret: Some(self.dir.join("host.key")),
            tls_key: None,
            dhchap_ctrl_secret: ctrl.then(|| self.dir.join("ctrl.key")),
            dhchap_hashes: hashes.iter().map(|s| s.to_string()).collect(),
            dhchap_dhgroups: groups.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn auth_config(h: HostConfig) -> TargetConfig {
    let mut c = config(Some("nqn.2014-08.org.nvmexpress:uuid:someone-else"));
    c.subsystems[0].hosts.push(h);
    c
}

fn with_secrets(host: &Secret, ctrl: Option<&Secret>) -> nvmf::InitiatorOptions {
    let mut o = opts();
    o.dhchap = Some(Arc::new(HostSecrets {
        secret: host.clone(),
        ctrl_secret: ctrl.cloned(),
    }));
    o
}

fn auth_error(r: Result<Initiator, InitiatorError>) -> String {
    match r {
        Err(InitiatorError::Auth(m)) => m,
        Err(e) => panic!("expected a DH-HMAC-CHAP error, got {e}"),
        Ok(_) => panic!("expected a DH-HMAC-CHAP error, the connect succeeded"),
    }
}

#[test]
fn every_hash_and_group_authenticates_and_serves_io() {
    let k = Keys::new("all");
    for (hash, group) in [
        ("sha256", "null"),
        ("sha384", "ffdhe2048"),
        ("sha512", "ffdhe3072"),
        ("sha256", "ffdhe4096"),
    ] {
        let (srv, addr) = start(&auth_config(k.host_config(true, &[hash], &[group])));
        for ctrl in [None, Some(&k.ctrl)] {
            let o = with_secrets(&k.host, ctrl);
            let (a, mut q) = controller(addr, &o);
            let n = a.negotiated.expect("the admin queue authenticated");
            assert_eq!((n.hash.name(), n.group.name()), (hash, group));
            assert_eq!(n.bidirectional, ctrl.is_some());
            assert!(q.negotiated.is_some(), "the I/O queue authenticated too");
            let data = pattern(7, 4096);
            q.write(1, 8, &data).unwrap();
            assert_eq!(q.read(1, 8, 8).unwrap(), data);
        }
        assert_eq!(
            srv.target.refusals.snapshot()[Refused::AuthFailed as usize].1,
            0
        );
    }
}

#[test]
fn the_largest_groups_agree_too() {
    let k = Keys::new("big");
    let (_srv, addr) = start(&auth_config(k.host_config(
        true,
        &["sha512"],
        &["ffdhe6144", "ffdhe8192"],
    )));
    let a = Initiator::connect_admin(addr, NQN, &with_secrets(&k.host, Some(&k.ctrl))).unwrap();
    assert_eq!(a.negotiated.unwrap().group, DhGroup::Ffdhe6144);
}

#[test]
fn hosts_without_or_with_a_wrong_secret_are_refused() {
    let k = Keys::new("wrong");
    let (srv, addr) = start(&auth_config(k.host_config(true, &[], &[])));
    let no_secret = auth_error(Initiator::connect_admin(addr, NQN, &opts()));
    assert!(no_secret.contains("no DH-HMAC-CHAP secret"), "{no_secret}");
    let other = Secret::generate(32, Some(HashFn::Sha256));
    let wrong = auth_error(Initiator::connect_admin(
        addr,
        NQN,
        &with_secrets(&other, None),
    ));
    assert!(
        wrong.contains("refused") && wrong.contains("wrong secret"),
        "{wrong}"
    );
    // The right host secret but the wrong controller secret: the host
    // refuses the controller.
    let bad_ctrl = auth_error(Initiator::connect_admin(
        addr,
        NQN,
        &with_secrets(&k.host, Some(&other)),
    ));
    assert!(bad_ctrl.contains("did not prove"), "{bad_ctrl}");
    let t = srv.target;
    t.wait_until(std::time::Duration::from_secs(10), |t| {
        t.refusals.snapshot()[Refused::AuthFailed as usize].1 >= 2
    });
    // The wrong secret (Failure1 from the target) and the host's Failure2.
    assert_eq!(t.refusals.snapshot()[Refused::AuthFailed as usize].1, 2);
    // Nobody was left connected.
    t.wait_until(std::time::Duration::from_secs(10), |t| {
        t.controller_count() == 0
    });
    assert_eq!(t.controller_count(), 0);
}

// Issue 38: each failed transaction printed a line, so a host guessing
// secrets filled the log.
#[test]
fn a_flood_of_failed_transactions_is_counted_and_its_lines_rate_limited() {
    use nvmf::tgt::log_limit::LINES_PER_WINDOW;
    let k = Keys::new("flood");
    let (srv, addr) = start(&auth_config(k.host_config(false, &[], &["null"])));
    let other = Secret::generate(32, Some(HashFn::Sha256));
    let n = u64::from(LINES_PER_WINDOW) + 5;
    for i in 1..=n {
        auth_error(Initiator::connect_admin(
            addr,
            NQN,
            &with_secrets(&other, None),
        ));
        // One at a time: each failed controller goes before the next
        // Connect (the unauthenticated controllers per source are capped).
        srv.target
            .wait_until(std::time::Duration::from_secs(10), |t| {
                t.refusals.snapshot()[Refused::AuthFailed as usize].1 == i
                    && t.controller_count() == 0
            });
    }
    assert_eq!(
        srv.target.refusals.snapshot()[Refused::AuthFailed as usize].1,
        n
    );
    assert_one_window_printed(&srv.target.auth_log, 5);
}

#[test]
fn nothing_runs_before_authentication() {
    let k = Keys::new("gate");
    let (_srv, addr) = start(&auth_config(k.host_config(false, &[], &[])));
    let mut a = Initiator::open(addr, &opts()).unwrap();
    let e = a.fabrics_connect(NQN, 0, 0xFFFF).unwrap_err();
    assert!(matches!(e, InitiatorError::Auth(_)), "{e}");
    // Connected, not authenticated: Property Get and Identify are refused.
    let err = a.property_get(0, true).unwrap_err();
    assert!(
        matches!(err, InitiatorError::Command { status, .. } if status == Status::AUTH_REQUIRED),
        "{err}"
    );
    assert!(a.identify(1, 0).is_err());
    // Now authenticate on the same queue; commands run.
    let keys = HostSecrets {
        secret: k.host.clone(),
        ctrl_secret: None,
    };
    nvmf::host::auth::authenticate(&mut a, HOST, NQN, &keys, 9).unwrap();
    assert!(a.property_get(0, true).is_ok());
    // Re-authentication on a live queue works too.
    nvmf::host::auth::authenticate(&mut a, HOST, NQN, &keys, 10).unwrap();
    assert!(a.property_get(0, true).is_ok());
}

#[test]
fn out_of_sequence_and_malformed_messages_end_the_queue() {
    let k = Keys::new("seq");
    let (srv, addr) = start(&auth_config(k.host_config(false, &[], &[])));
    // A Reply before any Negotiate: the next Receive brings Failure1 and
    // the target closes.
    let mut a = Initiator::open(addr, &opts()).unwrap();
    let _ = a.fabrics_connect(NQN, 0, 0xFFFF);
    let reply = Message::Success2(3).encode();
    a.command(
        wire::command(FCTYPE_AUTH_SEND, 0, reply.len() as u32),
        &reply,
        0,
    )
    .unwrap();
    let c = a
        .command(wire::command(FCTYPE_AUTH_RECEIVE, 0, 64), &[], 64)
        .unwrap();
    match Message::decode(&c.data).unwrap() {
        Message::Failure(f) => {
            assert_eq!(f.auth_id, wire::id::FAILURE1);
            assert_eq!(f.explanation, wire::explain::INCORRECT_MESSAGE);
        }
        m => panic!("expected Failure1, got {m:?}"),
    }
    assert!(a.property_get(0, true).is_err(), "the queue is closed");
    // Garbage in an Auth Send; a Negotiate offering no usable hash; a
    // wrong SECP.
    for bad in [
        vec![0xEEu8; 20],
        Message::Negotiate(Negotiate {
            t_id: 1,
            sc_c: 0,
            hashes: vec![9],
            dhgroups: vec![0],
        })
        .encode(),
    ] {
        let mut a = Initiator::open(addr, &opts()).unwrap();
        let _ = a.fabrics_connect(NQN, 0, 0xFFFF);
        a.command(
            wire::command(FCTYPE_AUTH_SEND, 0, bad.len() as u32),
            &bad,
            0,
        )
        .unwrap();
        let c = a
            .command(wire::command(FCTYPE_AUTH_RECEIVE, 0, 64), &[], 64)
            .unwrap();
        assert!(matches!(Message::decode(&c.data), Ok(Message::Failure(_))));
    }
    let mut a = Initiator::open(addr, &opts()).unwrap();
    let _ = a.fabrics_connect(NQN, 0, 0xFFFF);
    let mut sqe = wire::command(FCTYPE_AUTH_RECEIVE, 0, 64);
    sqe.cdw10 &= 0x00FF_FFFF; // SECP 0
    let e = a.command(sqe, &[], 64).unwrap_err();
    assert!(matches!(e, InitiatorError::Command { status, .. } if status == Status::INVALID_FIELD));
    assert_eq!(
        srv.target.refusals.snapshot()[Refused::AuthFailed as usize].1,
        3
    );
}

#[test]
fn host_flags_parse() {
    let h = HostConfig::parse_flag("nqn.h,dhchap-secret=/k,dhchap-ctrl-secret=/c,dhchap-hash=sha384:sha256,dhchap-dhgroup=ffdhe3072")
        .unwrap()
        .unwrap();
    assert_eq!(h.dhchap_secret, Some(PathBuf::from("/k")));
    assert_eq!(h.dhchap_ctrl_secret, Some(PathBuf::from("/c")));
    assert_eq!(h.dhchap_hashes, ["sha384", "sha256"]);
    assert_eq!(h.dhchap_dhgroups, ["ffdhe3072"]);
    assert_eq!(HostConfig::parse_flag("nqn.h").unwrap(), None);
    let e = HostConfig::parse_flag("nqn.h,dhchap-ctrl-secret=/c").unwrap_err();
    assert!(
        matches!(&e, ConfigError::HostSecret { flag } if flag == "nqn.h,dhchap-ctrl-secret=/c"),
        "{e:?}"
    );
    assert!(e.to_string().contains("dhchap-secret=FILE"), "{e}");
    let e = HostConfig::parse_flag("nqn.h,secret=x").unwrap_err();
    assert!(
        matches!(&e, ConfigError::HostOption { option, .. } if option == "secret"),
        "{e:?}"
    );
    assert!(e.to_string().contains("unknown option"), "{e}");
    let e = HostConfig::parse_flag("nqn.h,dhchap-secret").unwrap_err();
    assert!(
        matches!(&e, ConfigError::HostOptionValue { option, .. } if option == "dhchap-secret"),
        "{e:?}"
    );
    assert!(e.to_string().contains("needs a value"), "{e}");
}

#[test]
fn a_secret_file_others_can_read_stops_the_target() {
    let k = Keys::new("perm");
    std::fs::set_permissions(
        k.dir.join("host.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let e = match nvmf::tgt::subsystem::Target::new(&auth_config(k.host_config(false, &[], &[]))) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a world-readable secret was accepted"),
    };
    assert!(e.contains("chmod 600") && e.contains(HOST), "{e}");
    let mut bad = k.host_config(false, &["md5"], &[]);
    bad.dhchap_secret = Some(k.dir.join("host.key"));
    assert!(auth_config(bad)
        .validate()
        .unwrap_err()
        .to_string()
        .contains("sha256"));
}

/// Admin queues that Connect as a host that must authenticate and never do.
fn unauthenticated_from(from: std::net::Ipv4Addr, addr: std::net::SocketAddr) -> Initiator {
    unauthenticated_try(from, addr).expect("an unauthenticated controller")
}

/// One such Connect from `from`; the error when the target refuses it.
fn unauthenticated_try(
    from: std::net::Ipv4Addr,
    addr: std::net::SocketAddr,
) -> Result<Initiator, InitiatorError> {
    use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    bind(&fd, &std::net::SocketAddr::from((from, 0))).unwrap();
    connect(&fd, &addr).unwrap();
    let tcp = std::net::TcpStream::from(fd);
    let mut o = opts();
    o.timeout = LONG;
    tcp.set_read_timeout(Some(LONG)).unwrap();
    let mut a = Initiator::over(nvmf::host::stream::Stream::Plain(tcp), &o)?;
    match a.fabrics_connect(NQN, 0, 0xFFFF) {
        Err(InitiatorError::Auth(_)) => Ok(a),
        Err(e) => Err(e),
        Ok(_) => panic!("connected without authenticating"),
    }
}

/// Regression: admin queues that never authenticated held every
/// max_controllers slot, and the host with its secret got Controller Busy
/// (issue 38).
#[test]
fn unauthenticated_controllers_hold_no_slot_of_max_controllers() {
    let k = Keys::new("slots");
    let mut cfg = auth_config(k.host_config(false, &["sha256"], &["null"]));
    cfg.limits.max_controllers = 2;
    let (srv, addr) = start(&cfg);
    let t = &srv.target;
    let lo = std::net::Ipv4Addr::new(127, 0, 0, 2);
    let _idle: Vec<Initiator> = (0..3).map(|_| unauthenticated_from(lo, addr)).collect();
    assert_eq!(t.unauthenticated_controllers(), 3);
    // The host with its secret gets both controllers, and reads.
    let o = with_secrets(&k.host, None);
    let (_a1, mut q1) = controller(addr, &o);
    let (_a2, _q2) = controller(addr, &o);
    assert_eq!(q1.read(1, 0, 8).unwrap().len(), 4096);
    assert_eq!(t.unauthenticated_controllers(), 3);
    // A third authenticated controller is past max_controllers.
    match Initiator::connect_admin(addr, NQN, &o) {
        Err(InitiatorError::Command { status, .. }) => {
            assert_eq!(status, Status::CONNECT_CTRL_BUSY)
        }
        Err(e) => panic!("expected Controller Busy, got {e}"),
        Ok(_) => panic!("a third controller past max_controllers = 2"),
    }
}

/// A source refused at the unauthenticated limit has its next sockets
/// closed at accept, before a reactor reads their ICReq, for
/// SOURCE_BACKOFF; another source is served meanwhile (issue 38: 56
/// sockets from one address retrying every 50 ms made the reactor run
/// about 940 ICReq/Connect/refusal exchanges a second, and a good host's
/// p99 rose to 2.7-2.9x).
#[test]
fn a_source_refused_at_the_unauthenticated_limit_backs_off() {
    use nvmf::tgt::backoff::SOURCE_BACKOFF;
    use nvmf::tgt::ctrl_slots::UNAUTHENTICATED_PER_SOURCE;
    let k = Keys::new("backoff");
    let (srv, addr) = start(&auth_config(k.host_config(false, &["sha256"], &["null"])));
    let t = &srv.target;
    let count = |why: Refused| t.refusals.snapshot()[why as usize].1;
    let lo = std::net::Ipv4Addr::new(127, 0, 3, 1);
    let _held: Vec<Initiator> = (0..UNAUTHENTICATED_PER_SOURCE)
        .map(|_| unauthenticated_from(lo, addr))
        .collect();
    // The window starts when the target refuses, before this side hears
    // of it: a retry begun within SOURCE_BACKOFF of hearing is inside it.
    // A machine too busy to retry that soon is told to try again.
    let mut backed_off = false;
    for _ in 0..5 {
        match unauthenticated_try(lo, addr) {
            Err(InitiatorError::Command { status, .. }) => {
                assert_eq!(status, Status::CONNECT_CTRL_BUSY)
            }
            // Still inside the window of the last round's refusal.
            Err(_) => continue,
            Ok(_) => panic!("a source past UNAUTHENTICATED_PER_SOURCE"),
        }
        let heard = std::time::Instant::now();
        let retry = unauthenticated_try(lo, addr);
        let inside = heard.elapsed() < SOURCE_BACKOFF;
        match retry {
            Err(InitiatorError::Command { .. }) | Ok(_) if inside => {
                panic!("a Connect was read during the source's back-off")
            }
            Err(InitiatorError::Command { .. }) | Ok(_) => continue,
            Err(_) => {
                backed_off = true;
                break;
            }
        }
    }
    assert!(backed_off, "no retry came within SOURCE_BACKOFF in 5 tries");
    assert!(count(Refused::SourceBackoff) >= 1);
    // Another address is served meanwhile, and the host with its secret.
    let _other = unauthenticated_from(std::net::Ipv4Addr::new(127, 0, 3, 2), addr);
    let (_a, mut q) = controller(addr, &with_secrets(&k.host, None));
    assert_eq!(q.read(1, 0, 8).unwrap().len(), 4096);
}

/// Unauthenticated controllers are capped per source address (the next is
/// refused) and in all (the next tears down the oldest, whose queue closes).
#[test]
fn unauthenticated_controllers_are_capped_per_source_and_in_all() {
    use nvmf::tgt::ctrl_slots::{UNAUTHENTICATED_MAX, UNAUTHENTICATED_PER_SOURCE};
    let k = Keys::new("caps");
    let (srv, addr) = start(&auth_config(k.host_config(false, &["sha256"], &["null"])));
    let t = &srv.target;
    let src =
        |i: usize| std::net::Ipv4Addr::new(127, 0, 2, 1 + (i / UNAUTHENTICATED_PER_SOURCE) as u8);
    let mut held: Vec<Initiator> = (0..UNAUTHENTICATED_PER_SOURCE)
        .map(|i| unauthenticated_from(src(i), addr))
        .collect();
    match unauthenticated_try(src(0), addr) {
        Err(InitiatorError::Command { status, .. }) => {
            assert_eq!(status, Status::CONNECT_CTRL_BUSY)
        }
        Err(e) => panic!("expected Controller Busy, got {e}"),
        Ok(_) => panic!("a source past UNAUTHENTICATED_PER_SOURCE"),
    }
    let refused = |t: &nvmf::tgt::subsystem::Target| {
        t.refusals.snapshot()[Refused::Unauthenticated as usize].1
    };
    assert_eq!(refused(t), 1);
    for i in UNAUTHENTICATED_PER_SOURCE..UNAUTHENTICATED_MAX {
        held.push(unauthenticated_from(src(i), addr));
    }
    assert_eq!(t.unauthenticated_controllers(), UNAUTHENTICATED_MAX);
    // One more, from a new address: the oldest makes room and closes.
    held.push(unauthenticated_from(src(UNAUTHENTICATED_MAX), addr));
    assert_eq!(t.unauthenticated_controllers(), UNAUTHENTICATED_MAX);
    assert_eq!(refused(t), 2);
    expect_closed(&mut held[0], "the oldest unauthenticated controller");
    // The host with its secret still connects.
    let (_a, mut q) = controller(addr, &with_secrets(&k.host, None));
    assert_eq!(q.read(1, 0, 8).unwrap().len(), 4096);
}
