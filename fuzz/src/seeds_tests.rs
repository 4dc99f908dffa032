//! The committed corpus is the generator's output, and each seed does what
//! its name says when its target's harness runs it. One test per target:
//! the targets are shared by the whole process and each test counts its
//! controllers.

use std::collections::{BTreeMap, BTreeSet};

use nvme_spec::Status;

use super::*;
use crate::auth_ops::parse_ops;
use crate::auth_session::{auth_target, AuthSession};
use crate::harness::{connection_target, Driven, IoSession};
use crate::wire::{self, FromController};

fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

#[test]
fn the_committed_corpus_is_what_the_generator_builds() {
    let dir = corpus_dir();
    let want: BTreeSet<std::path::PathBuf> = all().iter().map(|s| s.path(&dir)).collect();
    let targets: BTreeSet<&str> = all().iter().map(|s| s.target).collect();
    let mut got = BTreeSet::new();
    for t in targets {
        for e in std::fs::read_dir(dir.join(t)).expect("fuzz/corpus/<target>") {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            // Inputs libFuzzer added (named by their SHA-1) are not seeds.
            if name.starts_with(FILE_PREFIX) {
                got.insert(p);
            }
        }
    }
    let fix =
        "run `cargo run --manifest-path fuzz/Cargo.toml --example seeds` and commit fuzz/corpus";
    assert_eq!(got, want, "{fix}");
    for s in all() {
        let p = s.path(&dir);
        assert!(
            std::fs::read(&p).unwrap() == s.bytes,
            "{} differs: {fix}",
            p.display()
        );
    }
}

/// Responses by command id, and whether a C2HTermReq came.
fn responses(out: &[FromController]) -> (BTreeMap<u16, Status>, bool) {
    let mut r = BTreeMap::new();
    let mut term = false;
    for p in out {
        match p {
            FromController::Response(c) => {
                r.insert(c.cid, c.status());
            }
            FromController::TermReq => term = true,
            _ => {}
        }
    }
    (r, term)
}

fn ok(r: &BTreeMap<u16, Status>, cids: impl IntoIterator<Item = u16>) -> bool {
    cids.into_iter()
        .all(|c| r.get(&c).is_some_and(|s| s.is_success()))
}

#[test]
fn connection_seeds_reach_what_they_name() {
    let target = connection_target();
    for s in connection() {
        let mut d = Driven::new(target);
        d.framing = Some(wire::IcParams::default().framing());
        let chunk = s.bytes[0] as usize + 1;
        let mut out = Vec::new();
        for c in s.bytes[1..].chunks(chunk) {
            out.extend(d.exchange(c));
        }
        let (r, term) = responses(&out);
        assert!(!term && !d.closing(), "{}: {out:?}", s.name);
        let r2t = |cid| {
            out.iter()
                .any(|p| matches!(p, FromController::R2t { cccid, .. } if *cccid == cid))
        };
        match s.name {
            "admin-session" => assert!(ok(&r, 1..=8), "{r:?}"),
            "io-queue-r2t-write" => {
                assert!(ok(&r, 1..=5) && r2t(2), "{r:?}");
                assert_eq!(d.conn.qid(), Some(1));
            }
            "discovery" => assert!(ok(&r, 1..=5), "{r:?}"),
            "auth-negotiate" => {
                // Its host has no secret: both authentication commands fail.
                assert!(ok(&r, [1]) && r.len() == 3 && !ok(&r, [2]) && !ok(&r, [3]));
            }
            "connect-data-by-r2t" => assert!(ok(&r, 1..=2) && r2t(1), "{r:?}"),
            other => panic!("no check for connection seed {other}"),
        }
        d.release();
        assert_eq!(target.controller_count(), 1, "{}", s.name);
    }
}

#[test]
fn io_queue_seeds_complete_every_command() {
    for s in io_queue() {
        let knobs = IoKnobs::from_byte(s.bytes[1]);
        let mut io = IoSession::open(knobs);
        let tx = io.run(&s.bytes[2..], s.bytes[0] as usize + 1);
        let out = wire::from_controller(&tx, &knobs.ic.framing());
        let (r, term) = responses(&out);
        assert!(!term && !io.io.closing(), "{}: {out:?}", s.name);
        let want: &[u16] = match s.name {
            "in-capsule-writes-reads" => &[10, 11, 20, 21, 30, 31, 40, 41],
            "r2t-writes" => &[1, 2, 3, 4],
            "digests-r2t" => &[7, 8],
            "zeroes-dsm" => &[1, 2, 3, 4],
            // SQ flow control is off, so the read ends with C2HData
            // SUCCESS and no response; the write waits for the rest of its
            // data when the admin queue goes.
            "admin-first-mid-write" => {
                let read: usize = out
                    .iter()
                    .map(|p| match p {
                        FromController::Data { cccid: 1, data, .. } => data.len(),
                        _ => 0,
                    })
                    .sum();
                assert_eq!(read, 65536);
                &[]
            }
            other => panic!("no check for io_queue seed {other}"),
        };
        assert!(
            ok(&r, want.iter().copied()) && r.len() == want.len(),
            "{}: {r:?}",
            s.name
        );
        io.close();
    }
}

#[test]
fn auth_seeds_authenticate_with_the_secret_and_never_without() {
    let t = auth_target();
    for s in auth() {
        for right in [true, false] {
            let key = if right {
                t.host_secret.clone()
            } else {
                nvmf::auth::Secret::generate(32, None)
            };
            let mut a = AuthSession::open(s.bytes[0], key);
            for op in parse_ops(&s.bytes[1..]) {
                a.run(&op);
            }
            let got = a.property_get_succeeds();
            let other = a.other_succeeded;
            a.release();
            assert_eq!(t.target.controller_count(), 0);
            let authenticates = ["one-way-null", "one-way-ffdhe2048", "bidirectional"];
            if right && authenticates.contains(&s.name) {
                assert_eq!((got, other), (Some(true), true), "{}", s.name);
            } else {
                assert!(
                    got != Some(true) && !other,
                    "{} (right key: {right})",
                    s.name
                );
            }
        }
    }
}

#[test]
fn pdu_decode_seeds_decode_with_their_knobs() {
    use nvme_spec::tcp::{self, Direction, Framing};
    for s in pdu_decode() {
        let k = s.bytes[0];
        let f = Framing {
            header_digest: k & 1 != 0,
            data_digest: k & 2 != 0,
            rx_data_align: if k & 4 != 0 { 8 } else { 1 },
            tx_data_align: 1,
        };
        let dir = if k & 8 != 0 {
            Direction::ControllerToHost
        } else {
            Direction::HostToController
        };
        let pdu = tcp::decode(&s.bytes[1..], dir, &f);
        assert!(pdu.is_ok(), "{}: {pdu:?}", s.name);
    }
}
