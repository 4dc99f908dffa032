//! The connection state machine under mutated byte streams (the fuzz
//! target's invariants, run deterministically on stable in `cargo test`):
//! no panic, closing is final, release leaves no controller behind.

mod common;

use nvme_spec::command::SglDescriptor;
use nvme_spec::fabrics::{ConnectCmd, ConnectData, CNTLID_DYNAMIC};
use nvme_spec::tcp::{self, pdu_type, Framing};
use nvme_spec::Sqe;
use nvmf::tgt::queue::{Connection, Phase};

const NQN: &str = "nqn.2026-01.io.numio:mut";

fn valid_stream() -> Vec<u8> {
    let f = Framing::INITIAL;
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::IC_REQ,
        0,
        &tcp::icreq_body(0, 0, 0),
        &[],
        &f,
    );
    let mut sqe = Sqe {
        cid: 1,
        flags: 0x40,
        ..Default::default()
    };
    ConnectCmd {
        recfmt: 0,
        qid: 0,
        sqsize: 31,
        cattr: 0,
        kato_ms: 0,
    }
    .to_sqe(&mut sqe);
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: 1024,
        rsvd: [0; 3],
        type_byte: nvme_spec::command::SGL_IN_CAPSULE,
    };
    let data = ConnectData::new([0; 16], CNTLID_DYNAMIC, NQN, "nqn.h").encode();
    let f4 = Framing {
        tx_data_align: 1,
        ..f
    };
    tcp::frame(&mut b, pdu_type::CAPSULE_CMD, 0, &sqe.encode(), &data, &f4);
    let id = Sqe {
        opcode: nvme_spec::command::admin::IDENTIFY,
        cid: 2,
        flags: 0x40,
        cdw10: 1,
        dptr: SglDescriptor {
            addr: 0,
            length: 4096,
            rsvd: [0; 3],
            type_byte: nvme_spec::command::SGL_TRANSPORT,
        },
        ..Default::default()
    };
    tcp::frame(&mut b, pdu_type::CAPSULE_CMD, 0, &id.encode(), &[], &f4);
    b
}

#[test]
fn connection_survives_mutated_streams() {
    let target = common::one_subsystem(NQN, &["mem:1M"]);
    let good = valid_stream();
    // The unmutated stream connects and gets Identify data back.
    let mut c = Connection::new(target.clone());
    c.on_bytes(&good);
    assert_eq!(c.phase(), Phase::Ready);
    assert_eq!(c.qid(), Some(0));
    assert!(
        c.take_tx().len() > 4096,
        "ICResp, Connect response, C2HData and response"
    );
    c.release();
    assert_eq!(target.controller_count(), 0);

    let mut seed = 0x9E37_79B9u32;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let mut terminated = 0;
    for _ in 0..3000 {
        let mut s = good.clone();
        for _ in 0..(rnd() % 4 + 1) {
            let i = rnd() as usize % s.len();
            s[i] = rnd() as u8;
        }
        if rnd() % 8 == 0 {
            s.truncate(rnd() as usize % s.len());
        }
        let mut conn = Connection::new(target.clone());
        let chunk = (rnd() % 200 + 1) as usize;
        let mut closed = false;
        for part in s.chunks(chunk) {
            conn.on_bytes(part);
            let tx = conn.take_tx();
            if closed {
                assert_eq!(conn.phase(), Phase::Closing, "closing is final");
                assert!(tx.is_empty(), "nothing is sent after the TermReq");
            }
            if !closed && conn.phase() == Phase::Closing {
                terminated += 1;
                closed = true;
            }
        }
        conn.release();
        assert_eq!(target.controller_count(), 0);
    }
    assert!(
        terminated > 100,
        "mutations reach the TermReq paths ({terminated})"
    );
}
