//! The pool's budgets and deadline, and a reactor that keeps serving one
//! TLS host while another's handshake is stuck in a worker.

use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};

use zeroize::Zeroizing;

use super::super::config::{HostConfig, TargetConfig};
use super::super::counters::Refused;
use super::super::event_loop::{forward_accepts, Reactor};
use super::super::ring::Ring;
use super::super::subsystem::Target;
use super::super::wake::eventfd;
use super::*;
use crate::host::{Initiator, InitiatorOptions};
use crate::tls::ossl::{PskLookup, PskRefusal, ServerContext};
use crate::tls::{ConfiguredPsk, Identity};

/// A failure bound, not a wait: each step below waits for its event.
const LONG: Duration = Duration::from_secs(60);
const NQN: &str = "nqn.2026-01.io.numio:tls-pool";
const FAST: &str = "nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000f1";
const SLOW: &str = "nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000f2";

/// Looks `key` up for every identity, but holds `SLOW`'s handshake inside
/// OpenSSL (the PSK callback runs in the middle of the key exchange) until
/// the test lets it go: a handshake that takes as long as the test wants.
struct Gate {
    key: ConfiguredPsk,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

impl PskLookup for Gate {
    fn tls_psk(&self, id: &Identity) -> Result<Zeroizing<Vec<u8>>, PskRefusal> {
        if id.hostnqn == SLOW {
            let _ = self.entered.lock().unwrap().send(());
            let _ = self.release.lock().unwrap().recv_timeout(LONG);
        }
        self.key.psk_for(id).ok_or_else(|| PskRefusal::OtherKey {
            hostnqn: id.hostnqn.clone(),
            subnqn: id.subnqn.clone(),
        })
    }
}

/// A TLS target with one reactor on a thread of its own, fed by an
/// acceptor thread; `FAST` and `SLOW` hold the same key.
struct OneReactor {
    target: Arc<Target>,
    addr: SocketAddr,
    key: ConfiguredPsk,
    dir: PathBuf,
}

impl OneReactor {
    fn start(tag: &str, lookup: impl FnOnce(ConfiguredPsk) -> Option<Arc<dyn PskLookup>>) -> Self {
        let dir = std::env::temp_dir().join(format!("numio-tls-pool-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = ConfiguredPsk::generate(32);
        let p = dir.join("tls.key");
        std::fs::write(&p, key.encode().as_bytes()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut cfg = TargetConfig::from_toml(
            &format!(
                "[[subsystem]]\nnqn = \"{NQN}\"\n\
                 [[subsystem.namespace]]\nbacking = \"mem:1M\"\n"
            ),
            "test",
        )
        .unwrap();
        cfg.tls = true;
        for nqn in [FAST, SLOW] {
            cfg.subsystems[0].hosts.push(HostConfig {
                nqn: nqn.into(),
                dhchap_secret: None,
                dhchap_ctrl_secret: None,
                dhchap_hashes: Vec::new(),
                dhchap_dhgroups: Vec::new(),
                tls_key: Some(p.clone()),
            });
        }
        let mut target = Target::new(&cfg).unwrap();
        if let Some(l) = lookup(key.clone()) {
            Arc::get_mut(&mut target).expect("a fresh target").tls =
                Some(Arc::new(ServerContext::new(l).unwrap()));
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = channel();
        let wake = Arc::new(eventfd().unwrap());
        let (t, w) = (target.clone(), wake.clone());
        std::thread::spawn(move || Reactor::new(t, 0, rx, w, Ring::new(true).unwrap()).run());
        forward_accepts(listener, tx, target.clone(), wake);
        Self {
            target,
            addr,
            key,
            dir,
        }
    }

    fn opts(&self, hostnqn: &str) -> InitiatorOptions {
        InitiatorOptions {
            hostnqn: hostnqn.into(),
            timeout: Duration::from_secs(10),
            tls: Some(Arc::new(self.key.clone())),
            ..Default::default()
        }
    }
}

impl Drop for OneReactor {
    fn drop(&mut self) {
        self.target.shutting_down.store(true, Ordering::Release);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// Issue 38: the handshake's key exchange ran on the reactor, so a slow or
// flooded handshake delayed every queue on it.
#[test]
fn a_stuck_handshake_does_not_stop_the_reactor() {
    let (entered_tx, entered_rx) = channel();
    let (release_tx, release_rx) = channel();
    let r = OneReactor::start("stuck", |key| {
        Some(Arc::new(Gate {
            key,
            entered: Mutex::new(entered_tx),
            release: Mutex::new(release_rx),
        }))
    });
    let mut fast = Initiator::connect_admin(r.addr, NQN, &r.opts(FAST)).unwrap();
    fast.enable().unwrap();
    let (addr, slow_opts) = (r.addr, r.opts(SLOW));
    let slow = std::thread::spawn(move || {
        let mut a = Initiator::connect_admin(addr, NQN, &slow_opts)?;
        a.enable()
    });
    entered_rx
        .recv_timeout(LONG)
        .expect("the slow host's handshake reached its PSK lookup");
    // The slow handshake is held in a worker; the reactor serves the other
    // host (each command would time out, 10 s, on a blocked reactor).
    for _ in 0..20 {
        fast.identify(1, 0).unwrap();
        fast.keep_alive().unwrap();
    }
    assert_eq!(r.target.tls_handshakes.queued(), 1, "the stuck step");
    release_tx.send(()).unwrap();
    slow.join()
        .unwrap()
        .expect("the slow host connects once its handshake goes on");
    assert_eq!(
        r.target.refusals.snapshot()[Refused::TlsFailed as usize].1,
        0
    );
}

#[test]
fn a_source_over_its_budget_is_refused_and_counted() {
    let r = OneReactor::start("budget", |_| None);
    let me: IpAddr = "127.0.0.1".parse().unwrap();
    r.target
        .tls_handshakes
        .budgets
        .lock()
        .unwrap()
        .by_source
        .insert(me, TLS_JOBS_PER_SOURCE);
    assert!(
        Initiator::connect_admin(r.addr, NQN, &r.opts(FAST)).is_err(),
        "the handshake is refused"
    );
    assert!(r.target.wait_until(LONG, |t| {
        t.refusals.snapshot()[Refused::TlsBusy as usize].1 == 1
    }));
    // Its budget back, the same host connects.
    r.target
        .tls_handshakes
        .budgets
        .lock()
        .unwrap()
        .by_source
        .clear();
    let mut a = Initiator::connect_admin(r.addr, NQN, &r.opts(FAST)).unwrap();
    a.enable().unwrap();
    assert_eq!(r.target.tls_handshakes.queued(), 0, "every step uncharged");
}

#[test]
fn the_budgets_name_their_limit() {
    let pool = TlsPool::default();
    let charge = |ip: &str| HandshakeCharge {
        source: Some(ip.parse().unwrap()),
        accepted: Instant::now(),
        waker: None,
    };
    pool.budgets
        .lock()
        .unwrap()
        .by_source
        .insert("10.0.0.1".parse().unwrap(), TLS_JOBS_PER_SOURCE);
    assert_eq!(
        pool.charge(&charge("10.0.0.1")),
        Err(TlsRefusal::Source(TLS_JOBS_PER_SOURCE))
    );
    assert_eq!(pool.charge(&charge("10.0.0.2")), Ok(()));
    pool.budgets.lock().unwrap().queued = TLS_JOBS_MAX;
    assert_eq!(
        pool.charge(&charge("10.0.0.3")),
        Err(TlsRefusal::Full(TLS_JOBS_MAX))
    );
    assert!(TlsRefusal::Source(64)
        .to_string()
        .contains("TLS_JOBS_PER_SOURCE"));
    assert!(TlsRefusal::Full(256).to_string().contains("TLS_JOBS_MAX"));
}

#[test]
fn a_step_past_its_deadline_is_dropped_unrun() {
    struct NoKey;
    impl PskLookup for NoKey {
        fn tls_psk(&self, id: &Identity) -> Result<Zeroizing<Vec<u8>>, PskRefusal> {
            Err(PskRefusal::NoKey {
                hostnqn: id.hostnqn.clone(),
                subnqn: id.subnqn.clone(),
            })
        }
    }
    let ctx = ServerContext::new(Arc::new(NoKey)).unwrap();
    let session = Box::new(ctx.session().unwrap());
    let t0 = Instant::now();
    let late = t0 + HANDSHAKE_DEADLINE + Duration::from_secs(1);
    // A plain-text ICReq would fail the session if it were fed.
    let done = step(session, &[0u8; 8], t0, late);
    let why = done.result.unwrap_err();
    assert!(
        matches!(why, StepError::Late { deadline_s } if deadline_s == HANDSHAKE_DEADLINE.as_secs()),
        "{why:?}"
    );
    assert!(why.to_string().contains("HANDSHAKE_DEADLINE"), "{why}");
    assert!(done.plain.is_empty());
}
