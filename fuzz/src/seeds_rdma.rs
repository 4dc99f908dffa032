//! The `rdma_queue` target's seeds ([`crate::rdma`]): writes moved by RDMA
//! READ and reads by RDMA WRITE through keyed SGLs, in-capsule data, an
//! Identify whose key the response invalidates, completions out of order,
//! more commands than staging buffers, and a command id used twice.

use nvme_spec::command::{admin, io, SglDescriptor, SGL_IN_CAPSULE};
use nvme_spec::rdma::KeyedSgl;
use nvme_spec::Sqe;
use nvmf::host::command::rw_sqe;

use crate::rdma::{capsule, encode_ops, RdmaKnobs, RdmaOp};
use crate::seeds::Seed;

const T: &str = "rdma_queue";

/// The seeds.
pub fn all() -> Vec<Seed> {
    let io = RdmaKnobs::default();
    let admin = RdmaKnobs { admin: true, ..io };
    let few = RdmaKnobs {
        few_stages: true,
        ..io
    };
    vec![
        seed("write-read-keyed", io, &write_then_read()),
        seed("in-capsule-write", io, &in_capsule_write()),
        seed("identify-invalidate", admin, &identify()),
        seed("out-of-order", io, &out_of_order()),
        seed("more-commands-than-stages", few, &overrun()),
        seed("cid-twice", io, &cid_twice()),
    ]
}

fn seed(name: &'static str, knobs: RdmaKnobs, ops: &[RdmaOp]) -> Seed {
    let mut bytes = vec![knobs.to_byte()];
    bytes.extend(encode_ops(ops));
    Seed {
        target: T,
        name,
        bytes,
    }
}

/// A keyed SGL of `length` bytes at a host address of key `key`.
fn keyed(key: u32, length: u32, invalidate: bool) -> SglDescriptor {
    KeyedSgl {
        addr: 0x2000_0000 + u64::from(key) * 0x10_0000,
        length,
        key,
        invalidate,
    }
    .to_dptr()
}

/// A Read or Write of `nlb` 512-byte blocks of namespace 1 at `slba`, its
/// data by keyed SGL.
fn rw(opcode: u8, cid: u16, slba: u64, nlb: u32) -> RdmaOp {
    let mut sqe = rw_sqe(opcode, 1, slba, nlb);
    sqe.cid = cid;
    sqe.flags = 0x40;
    sqe.dptr = keyed(u32::from(cid), nlb * 512, false);
    RdmaOp::Capsule(capsule(&sqe, &[]))
}

/// 32 KiB written in four 8 KiB RDMA READs, read back in two 16 KiB RDMA
/// WRITEs.
fn write_then_read() -> Vec<RdmaOp> {
    vec![
        rw(io::WRITE, 10, 0, 64),
        RdmaOp::CompleteAll,
        rw(io::READ, 11, 0, 64),
        RdmaOp::CompleteAll,
    ]
}

fn in_capsule_write() -> Vec<RdmaOp> {
    let mut sqe = rw_sqe(io::WRITE, 1, 8, 8);
    sqe.cid = 12;
    sqe.flags = 0x40;
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: 4096,
        rsvd: [0; 3],
        type_byte: SGL_IN_CAPSULE,
    };
    vec![RdmaOp::Capsule(capsule(&sqe, &[0x5A; 4096]))]
}

fn identify() -> Vec<RdmaOp> {
    let sqe = Sqe {
        opcode: admin::IDENTIFY,
        cid: 2,
        flags: 0x40,
        cdw10: 1,
        dptr: keyed(2, 4096, true),
        ..Default::default()
    };
    vec![RdmaOp::Capsule(capsule(&sqe, &[])), RdmaOp::CompleteAll]
}

/// Two writes in flight; the later one's READs complete first.
fn out_of_order() -> Vec<RdmaOp> {
    vec![
        rw(io::WRITE, 20, 100, 32),
        rw(io::WRITE, 21, 200, 32),
        RdmaOp::Complete { index: 1, fill: 1 },
        RdmaOp::Complete { index: 1, fill: 2 },
        RdmaOp::Complete { index: 0, fill: 3 },
        RdmaOp::CompleteAll,
    ]
}

/// Five writes waiting for their data on a queue of four staging buffers.
fn overrun() -> Vec<RdmaOp> {
    (30..35).map(|cid| rw(io::WRITE, cid, 0, 16)).collect()
}

/// A write, then another capsule with its command id before it is done.
fn cid_twice() -> Vec<RdmaOp> {
    vec![
        rw(io::WRITE, 40, 0, 32),
        rw(io::READ, 40, 0, 32),
        RdmaOp::CompleteAll,
        RdmaOp::Tick,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::{parse_ops, RdmaSession};

    fn run(s: &Seed) -> RdmaSession {
        let mut session = RdmaSession::open(RdmaKnobs::from_byte(s.bytes[0]));
        let ops = parse_ops(&s.bytes[1..]);
        assert_eq!(encode_ops(&ops), s.bytes[1..], "{} round-trips", s.name);
        session.run(&ops);
        session
    }

    fn succeeded(s: &RdmaSession, cid: u16) -> bool {
        s.responses()
            .iter()
            .any(|c| c.cid == cid && c.status().is_success())
    }

    /// One test: the target is shared and each session counts controllers.
    #[test]
    fn rdma_queue_seeds_reach_what_they_name() {
        for s in all() {
            let session = run(&s);
            let want: &[u16] = match s.name {
                "write-read-keyed" => &[10, 11],
                "in-capsule-write" => &[12],
                "identify-invalidate" => &[2],
                "out-of-order" => &[20, 21],
                "cid-twice" => &[40],
                "more-commands-than-stages" => {
                    assert!(session.closing(), "{}: the fifth write closes", s.name);
                    &[]
                }
                other => panic!("no check for seed {other}"),
            };
            for &cid in want {
                assert!(
                    succeeded(&session, cid),
                    "{}: command {cid}: {:?}",
                    s.name,
                    session.responses()
                );
            }
            session.close();
        }
    }
}
