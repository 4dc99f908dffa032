//! Fuzzes the NVMe/TCP PDU decoder in both directions and with every framing
//! (digests on/off, alignment), and the SQE-level parsers the target uses.
//! Invariants: no panic; a PDU that decodes re-frames to a PDU that decodes
//! to the same values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvme_spec::tcp::{self, Direction, Framing, Pdu};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (knobs, bytes) = (data[0], &data[1..]);
    let framing = Framing {
        header_digest: knobs & 1 != 0,
        data_digest: knobs & 2 != 0,
        rx_data_align: if knobs & 4 != 0 { 8 } else { 1 },
        tx_data_align: 1,
    };
    let dir = if knobs & 8 != 0 {
        Direction::ControllerToHost
    } else {
        Direction::HostToController
    };
    if bytes.len() >= 8 && tcp::check_common_header(bytes, dir, &framing, 1 << 20).is_ok() {
        let plen = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        if plen <= bytes.len() {
            if let Ok(pdu) = tcp::decode(&bytes[..plen], dir, &framing) {
                check_round_trip(&pdu, dir, &framing);
            }
        }
    }
    let _ = tcp::decode(bytes, dir, &framing);
    if bytes.len() >= 64 {
        let sqe = nvme_spec::Sqe::decode(bytes);
        assert_eq!(nvme_spec::Sqe::decode(&sqe.encode()), sqe);
        let _ = nvme_spec::log::GetLogPage::from_sqe(&sqe);
        let _ = nvme_spec::fabrics::ConnectCmd::from_sqe(&sqe);
    }
    if bytes.len() >= 1024 {
        let _ = nvme_spec::fabrics::ConnectData::decode(bytes);
        let _ = nvme_spec::log::decode_discovery_log(bytes);
    }
    let _ = nvme_spec::identify::decode_ns_descriptors(bytes);
});

fn check_round_trip(pdu: &Pdu<'_>, dir: Direction, framing: &Framing) {
    let tx = Framing {
        tx_data_align: framing.rx_data_align,
        ..*framing
    };
    let mut out = Vec::new();
    match pdu {
        Pdu::CapsuleCmd {
            sqe,
            data,
            data_digest_ok: true,
        } => {
            tcp::frame(
                &mut out,
                tcp::pdu_type::CAPSULE_CMD,
                0,
                &sqe.encode(),
                data,
                &tx,
            );
            match tcp::decode(&out, dir, framing) {
                Ok(Pdu::CapsuleCmd {
                    sqe: s2, data: d2, ..
                }) => {
                    assert_eq!(&s2, sqe);
                    assert_eq!(&d2, data);
                }
                other => panic!("re-framed capsule did not decode: {other:?}"),
            }
        }
        Pdu::CapsuleResp(cqe) => {
            tcp::frame(
                &mut out,
                tcp::pdu_type::CAPSULE_RESP,
                0,
                &cqe.encode(),
                &[],
                &tx,
            );
            assert_eq!(
                tcp::decode(&out, dir, framing).ok(),
                Some(Pdu::CapsuleResp(*cqe))
            );
        }
        _ => {}
    }
}
