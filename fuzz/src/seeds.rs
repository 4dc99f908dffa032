//! The seed corpus: valid sessions for each fuzz target, built from the
//! same byte-stream builders the harnesses use, so the fuzzer's first
//! inputs reach deep states (a live controller, an R2T write half done, a
//! DH-HMAC-CHAP transaction under way) and its mutations start there.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example seeds` writes them to
//! `fuzz/corpus/<target>/seed-<name>`; the tests check that the committed
//! files are what this module builds and that each seed does what its name
//! says.
//!
//! Input layouts: `pdu_decode`: a knobs byte (bit 0 header digest, bit 1
//! data digest, bit 2 8-byte data alignment, bit 3 controller to host),
//! then one PDU. `connection`: a chunk-size byte (chunks of byte + 1),
//! then the stream from ICReq on. `io_queue`: a chunk-size byte, a knobs
//! byte ([`IoKnobs`]), then the stream the I/O queue gets after the
//! harness's ICReq and Connect. `auth`: a knobs byte (bit 0: the
//! bidirectional host), then [`Op`]s. The input-reading targets' layouts
//! are in [`crate::inputs`]; `rdma_queue`'s in [`crate::rdma`].

use std::path::Path;

use nvme_spec::auth::{self as wire, Message, Negotiate, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND};
use nvme_spec::command::{io, DsmRange};
use nvme_spec::fabrics::{prop, DISCOVERY_NQN};
use nvme_spec::log::lid;
use nvme_spec::tcp::{self, pdu_type};
use nvme_spec::Sqe;
use nvmf::host::command::{self, rw_sqe, CC_ENABLED};

use crate::auth_ops::{encode_ops, Op, ReplyOp};
use crate::harness::{IoKnobs, IO_MAXH2CDATA, RESIDENT_CNTLID};
use crate::wire::{Connect, HostStream, IcParams};

/// One seed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// The fuzz target (the corpus directory).
    pub target: &'static str,
    /// The file name.
    pub name: &'static str,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Every seed, target by target.
pub fn all() -> Vec<Seed> {
    let mut v = pdu_decode();
    v.extend(connection());
    v.extend(io_queue());
    v.extend(auth());
    v.extend(crate::seeds_inputs::all());
    v.extend(crate::seeds_rdma::all());
    v
}

/// Prefix of the seed files' names: libFuzzer names the inputs it adds by
/// their SHA-1, and `.gitignore` keeps those out of git.
pub const FILE_PREFIX: &str = "seed-";

impl Seed {
    /// The file's path under the corpus directory.
    pub fn path(&self, dir: &Path) -> std::path::PathBuf {
        dir.join(self.target)
            .join(format!("{FILE_PREFIX}{}", self.name))
    }
}

/// Writes every seed to `dir/<target>/seed-<name>`.
pub fn write_all(dir: &Path) -> std::io::Result<()> {
    for s in all() {
        let p = s.path(dir);
        std::fs::create_dir_all(p.parent().expect("a target directory"))?;
        std::fs::write(p, &s.bytes)?;
    }
    Ok(())
}

fn seed(target: &'static str, name: &'static str, head: &[u8], rest: &[u8]) -> Seed {
    let mut bytes = head.to_vec();
    bytes.extend_from_slice(rest);
    Seed {
        target,
        name,
        bytes,
    }
}

fn with_cid(mut sqe: Sqe, cid: u16) -> Sqe {
    sqe.cid = cid;
    sqe
}

/// A data pattern: byte `i` is `seed + i` (mod 251).
pub fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed as usize + i) as u8 % 251).collect()
}

/// Seeds of the `pdu_decode` target: one PDU of each kind that carries
/// fields, with and without digests.
pub fn pdu_decode() -> Vec<Seed> {
    let t = "pdu_decode";
    let digests = IcParams {
        header_digest: true,
        data_digest: true,
        maxr2t: 0,
    };
    let mut ic = HostStream::new();
    ic.icreq(digests);
    let mut connect = HostStream::new();
    connect.connect(&Connect::admin());
    let mut h2c = HostStream::after_icreq(digests);
    h2c.h2c_data(3, 0, 4096, &pattern(3, 512), true);
    let to_host = |pdu_type, hdr: &[u8], data: &[u8]| {
        let mut b = Vec::new();
        let f = digests.framing();
        tcp::frame(&mut b, pdu_type, 0, hdr, data, &f);
        b
    };
    let cqe = nvme_spec::Cqe {
        cid: 5,
        ..Default::default()
    };
    let resp = to_host(pdu_type::CAPSULE_RESP, &cqe.encode(), &[]);
    let r2t = to_host(pdu_type::R2T, &tcp::data_body(7, 1, 8192, 8192), &[]);
    let c2h = to_host(
        pdu_type::C2H_DATA,
        &tcp::data_body(9, 0, 0, 64),
        &[0xC2; 64],
    );
    vec![
        seed(t, "icreq", &[0], &ic.out),
        seed(t, "connect-capsule", &[0], &connect.out),
        seed(t, "h2c-data-digests", &[3], &h2c.out),
        seed(t, "capsule-resp-hdgst", &[9], &resp),
        seed(t, "r2t-hdgst", &[9], &r2t),
        seed(t, "c2h-data-digests", &[11], &c2h),
    ]
}

/// Seeds of the `connection` target (one connection, from ICReq on).
pub fn connection() -> Vec<Seed> {
    let t = "connection";
    vec![
        seed(t, "admin-session", &[255], &admin_session()),
        seed(t, "io-queue-r2t-write", &[99], &resident_io_queue()),
        seed(t, "discovery", &[255], &discovery()),
        seed(t, "auth-negotiate", &[255], &auth_negotiate()),
        seed(t, "connect-data-by-r2t", &[15], &connect_by_r2t()),
    ]
}

/// ICReq, admin Connect, CAP, CC.EN, CSTS, Identify controller and
/// namespace, Set Features (number of queues), Keep Alive.
fn admin_session() -> Vec<u8> {
    let mut s = HostStream::new();
    s.icreq(IcParams::default()).connect(&Connect::admin());
    s.command(with_cid(command::property_get(prop::CAP, true), 2), &[]);
    s.command(
        with_cid(command::property_set(prop::CC, CC_ENABLED), 3),
        &[],
    );
    s.command(with_cid(command::property_get(prop::CSTS, false), 4), &[]);
    s.command_transport(with_cid(command::identify(1, 0).0, 5), 4096);
    s.command_transport(with_cid(command::identify(0, 1).0, 6), 4096);
    s.command(with_cid(command::set_features(0x07, 0x0003_0003), 7), &[]);
    s.command(with_cid(command::keep_alive(), 8), &[]);
    s.out
}

/// ICReq, Connect of I/O queue 1 to the resident controller, an 8 KiB
/// Write by R2T (a transport SGL: the target asks for the data) with its
/// H2CData in two pieces,
/// the data read back, an in-capsule write and a Flush.
fn resident_io_queue() -> Vec<u8> {
    let mut s = HostStream::new();
    s.icreq(IcParams::default())
        .connect(&Connect::io(1, RESIDENT_CNTLID));
    let data = pattern(1, 8192);
    s.command_transport(with_cid(rw_sqe(io::WRITE, 1, 64, 16), 2), 8192);
    s.h2c_all(2, 0, &data, 4096, 1 << 17);
    s.command_transport(with_cid(rw_sqe(io::READ, 1, 64, 16), 3), 8192);
    s.command(with_cid(rw_sqe(io::WRITE, 1, 0, 1), 4), &pattern(2, 512));
    s.command(with_cid(rw_sqe(io::FLUSH, 1, 0, 0), 5), &[]);
    s.out
}

/// ICReq, Connect to the discovery subsystem, CC.EN, Identify, the
/// discovery log page's header and then all of it.
fn discovery() -> Vec<u8> {
    let mut s = HostStream::new();
    let c = Connect {
        subnqn: DISCOVERY_NQN,
        ..Connect::admin()
    };
    s.icreq(IcParams::default()).connect(&c);
    s.command(
        with_cid(command::property_set(prop::CC, CC_ENABLED), 2),
        &[],
    );
    s.command_transport(with_cid(command::identify(1, 0).0, 3), 4096);
    let (h, _) = command::get_log_page(lid::DISCOVERY, 0, 1024, 0);
    s.command_transport(with_cid(h, 4), 1024);
    let (all, _) = command::get_log_page(lid::DISCOVERY, 0, 4096, 0);
    s.command_transport(with_cid(all, 5), 4096);
    s.out
}

/// An AUTH_Negotiate offering every hash and the null and ffdhe2048
/// groups.
fn negotiate(t_id: u16) -> Negotiate {
    Negotiate {
        t_id,
        sc_c: wire::SC_C_NONE,
        hashes: vec![1, 2, 3],
        dhgroups: vec![0, 1],
    }
}

/// ICReq, admin Connect, Authentication Send of AUTH_Negotiate and an
/// Authentication Receive (this target's host has no secret: both fail).
fn auth_negotiate() -> Vec<u8> {
    let mut s = HostStream::new();
    s.icreq(IcParams::default()).connect(&Connect::admin());
    let m = Message::Negotiate(negotiate(1)).encode();
    s.command(wire::command(FCTYPE_AUTH_SEND, 2, m.len() as u32), &m);
    s.command_transport(wire::command(FCTYPE_AUTH_RECEIVE, 3, 4096), 4096);
    s.out
}

/// ICReq, an admin Connect whose data comes by R2T and H2CData, Keep
/// Alive.
fn connect_by_r2t() -> Vec<u8> {
    let mut s = HostStream::new();
    let c = Connect {
        by_r2t: true,
        ..Connect::admin()
    };
    s.icreq(IcParams::default()).connect(&c);
    s.command(with_cid(command::keep_alive(), 2), &[]);
    s.out
}

/// Seeds of the `io_queue` target (after the harness's Connect).
pub fn io_queue() -> Vec<Seed> {
    let t = "io_queue";
    let plain = IoKnobs::default();
    let two_r2ts = IoKnobs {
        ic: IcParams {
            maxr2t: 1,
            ..IcParams::default()
        },
        ..plain
    };
    let digests = IoKnobs {
        ic: IcParams {
            header_digest: true,
            data_digest: true,
            maxr2t: 0,
        },
        small_queue: true,
        ..plain
    };
    let teardown = IoKnobs {
        disable_sq_flow: true,
        admin_first: true,
        ..plain
    };
    let io = |k: IoKnobs, chunk: u8, f: fn(&mut HostStream)| {
        let mut s = HostStream::after_icreq(k.ic);
        f(&mut s);
        (vec![chunk, k.to_byte()], s.out)
    };
    let mk = |name, (head, rest): (Vec<u8>, Vec<u8>)| seed(t, name, &head, &rest);
    vec![
        mk("in-capsule-writes-reads", io(plain, 255, in_capsule_rw)),
        mk("r2t-writes", io(two_r2ts, 255, r2t_writes)),
        mk("digests-r2t", io(digests, 63, digests_r2t)),
        mk("zeroes-dsm", io(plain, 255, zeroes_dsm)),
        mk("admin-first-mid-write", io(teardown, 255, mid_write)),
    ]
}

/// In-capsule 4 KiB writes and reads back on each namespace (512-byte
/// RAM, 4 KiB RAM, file), a Flush of the file and of every namespace.
fn in_capsule_rw(s: &mut HostStream) {
    for (i, (nsid, lba_shift)) in [(1u32, 9u32), (2, 12), (3, 9)].into_iter().enumerate() {
        let cid = 10 * (i as u16 + 1);
        let data = pattern(i as u8, 4096);
        let nlb = 4096 >> lba_shift;
        s.command(with_cid(rw_sqe(io::WRITE, nsid, 8, nlb), cid), &data);
        s.command_transport(with_cid(rw_sqe(io::READ, nsid, 8, nlb), cid + 1), 4096);
    }
    s.command(with_cid(rw_sqe(io::FLUSH, 3, 0, 0), 40), &[]);
    s.command(with_cid(rw_sqe(io::FLUSH, 0xFFFF_FFFF, 0, 0), 41), &[]);
}

/// A 16 KiB write to RAM and a 12 KiB write to the file, each by R2Ts of
/// MAXH2CDATA (two outstanding) and H2CData in 4 KiB pieces, read back.
fn r2t_writes(s: &mut HostStream) {
    let max = IO_MAXH2CDATA as usize;
    for (cid, nsid, len) in [(1u16, 1u32, 16384usize), (3, 3, 12288)] {
        let nlb = (len >> 9) as u32;
        s.command_transport(with_cid(rw_sqe(io::WRITE, nsid, 128, nlb), cid), len as u32);
        s.h2c_all(cid, 0, &pattern(cid as u8, len), 4096, max);
        s.command_transport(
            with_cid(rw_sqe(io::READ, nsid, 128, nlb), cid + 1),
            len as u32,
        );
    }
}

/// With header and data digests on a 4-entry queue: a 12 KiB R2T write
/// to the 4 KiB-block namespace and its read.
fn digests_r2t(s: &mut HostStream) {
    let max = IO_MAXH2CDATA as usize;
    s.command_transport(with_cid(rw_sqe(io::WRITE, 2, 4, 3), 7), 12288);
    s.h2c_all(7, 0, &pattern(7, 12288), max, max);
    s.command_transport(with_cid(rw_sqe(io::READ, 2, 4, 3), 8), 12288);
}

/// Write Zeroes on RAM and file namespaces, and Dataset Management
/// deallocating two ranges of each.
fn zeroes_dsm(s: &mut HostStream) {
    s.command(with_cid(rw_sqe(io::WRITE_ZEROES, 1, 0, 16), 1), &[]);
    s.command(with_cid(rw_sqe(io::WRITE_ZEROES, 3, 0, 16), 2), &[]);
    let ranges: Vec<u8> = [(0u64, 8u32), (64, 16)]
        .iter()
        .flat_map(|&(slba, nlb)| {
            DsmRange {
                cattr: 0,
                nlb,
                slba,
            }
            .encode()
        })
        .collect();
    for (cid, nsid) in [(3u16, 1u32), (4, 3)] {
        let sqe = Sqe {
            opcode: io::DSM,
            cid,
            nsid,
            cdw10: 1, // two ranges (zero-based)
            cdw11: io::DSM_ATTR_DEALLOCATE,
            ..Default::default()
        };
        s.command(sqe, &ranges);
    }
}

/// A 64 KiB read (C2HData in pieces), then a write whose R2T is answered
/// only in part when the admin queue closes first.
fn mid_write(s: &mut HostStream) {
    s.command_transport(with_cid(rw_sqe(io::READ, 1, 0, 128), 1), 65536);
    s.command_transport(with_cid(rw_sqe(io::WRITE, 3, 0, 32), 2), 16384);
    s.h2c_data(2, 0, 0, &pattern(2, 2048), false);
}

/// Seeds of the `auth` target: three transactions that authenticate with
/// the right key (the null group one way, ffdhe2048, bidirectional), and
/// two that go wrong (malformed messages, the deadline).
pub fn auth() -> Vec<Seed> {
    let t = "auth";
    vec![
        seed(t, "one-way-null", &[0], &encode_ops(&one_way(0, 0))),
        seed(t, "one-way-ffdhe2048", &[0], &encode_ops(&one_way(1, 2))),
        seed(t, "bidirectional", &[1], &encode_ops(&bidirectional())),
        seed(t, "malformed", &[0], &encode_ops(&malformed())),
        seed(t, "deadline", &[1], &encode_ops(&deadline())),
    ]
}

/// A Reply whose R1 the session computes over the last Challenge.
fn computed_reply() -> ReplyOp {
    ReplyOp {
        t_id: None,
        response: None,
        c2: false,
        seqnum: 0,
        dh_value: None,
    }
}

/// Negotiate offering DH group `group` alone, the Challenge, a computed
/// Reply, Success1, then [`Op::Other`]`(other)`.
fn one_way(group: u8, other: u8) -> Vec<Op> {
    vec![
        Op::Negotiate(Negotiate {
            dhgroups: vec![group],
            ..negotiate(1 + u16::from(group))
        }),
        Op::Receive(4096),
        Op::Reply(computed_reply()),
        Op::Receive(4096),
        Op::Other(other),
    ]
}

/// A Reply asking the controller to authenticate itself (C2, S2 = 7),
/// Success1 with R2, Success2, Keep Alive.
fn bidirectional() -> Vec<Op> {
    vec![
        Op::Negotiate(Negotiate {
            dhgroups: vec![0],
            ..negotiate(1)
        }),
        Op::Receive(4096),
        Op::Reply(ReplyOp {
            c2: true,
            seqnum: 7,
            ..computed_reply()
        }),
        Op::Receive(4096),
        Op::Success2(None),
        Op::Other(3),
    ]
}

/// Negotiate by R2T, a short Receive, a Success2 whose CDW11 is one more
/// than its data, a Reply with a made-up R1 and a DH value for the null
/// group, the Failure1 that follows, Property Set.
fn malformed() -> Vec<Op> {
    let null_only = Negotiate {
        dhgroups: vec![0],
        ..negotiate(1)
    };
    vec![
        Op::SendRaw {
            via_r2t: true,
            len_mismatch: false,
            msg: Message::Negotiate(null_only).encode(),
        },
        Op::Receive(64),
        Op::SendRaw {
            via_r2t: false,
            len_mismatch: true,
            msg: Message::Success2(1).encode(),
        },
        Op::Reply(ReplyOp {
            t_id: Some(1),
            response: Some(vec![0xAA; 32]),
            c2: false,
            seqnum: 0,
            dh_value: Some(vec![2; 16]),
        }),
        Op::Receive(4096),
        Op::Other(1),
    ]
}

/// Negotiate, an Authentication Receive as a raw SQE, an Asynchronous
/// Event Request, 31 s without finishing, a Failure2.
fn deadline() -> Vec<Op> {
    let mut raw_receive = [0u8; 64];
    raw_receive.copy_from_slice(&wire::command(FCTYPE_AUTH_RECEIVE, 0, 256).encode());
    vec![
        Op::Negotiate(Negotiate {
            dhgroups: vec![0],
            ..negotiate(1)
        }),
        Op::RawSqe {
            sqe: raw_receive,
            data: vec![],
        },
        Op::Other(5),
        Op::Tick(31),
        Op::Failure2 {
            t_id: 1,
            explanation: wire::explain::FAILED,
        },
    ]
}

#[cfg(test)]
#[path = "seeds_tests.rs"]
mod tests;
