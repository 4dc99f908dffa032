//! Property tests of the NVMe/TCP framing: every PDU [`tcp::frame`] builds,
//! with any header fields, data, digests and data alignment, decodes back to
//! the same fields and data with good digests; and the decoder never panics
//! on arbitrary bytes.

use nvme_spec::tcp::{self, flags, pdu_type, Direction, FatalError, Framing, Pdu};
use nvme_spec::{Cqe, Sqe};
use proptest::prelude::*;

const H2C: Direction = Direction::HostToController;
const C2H: Direction = Direction::ControllerToHost;

/// Negotiated framing: digests on or off, data alignment 1 or a multiple of
/// 4 up to 128 bytes (HPDA/CPDA 0..=31 dwords).
fn framing() -> impl Strategy<Value = Framing> {
    let align = prop_oneof![Just(1usize), (1usize..=32).prop_map(|dwords| 4 * dwords)];
    (any::<bool>(), any::<bool>(), align).prop_map(|(header_digest, data_digest, align)| Framing {
        header_digest,
        data_digest,
        rx_data_align: align,
        tx_data_align: align,
    })
}

fn data(min: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), min..=2048)
}

fn one(pdu_type: u8, extra: u8, hdr: &[u8], data: &[u8], f: &Framing) -> Vec<u8> {
    let mut v = Vec::new();
    tcp::frame(&mut v, pdu_type, extra, hdr, data, f);
    v
}

proptest! {
    #[test]
    fn capsule_cmd_round_trips(raw in any::<[u8; 64]>(), data in data(0), f in framing()) {
        // Every SQE bit pattern: decode is a bijection (round_trip.rs).
        let sqe = Sqe::decode(&raw);
        let b = one(pdu_type::CAPSULE_CMD, 0, &sqe.encode(), &data, &f);
        prop_assert_eq!(tcp::header_len(b[0]), Some(72));
        prop_assert_eq!(b[3] as usize % f.tx_data_align, 0, "PDO aligned");
        match tcp::decode(&b, H2C, &f).unwrap() {
            Pdu::CapsuleCmd { sqe: s, data: d, data_digest_ok } => {
                prop_assert_eq!(s, sqe);
                prop_assert_eq!(d, &data[..]);
                prop_assert!(data_digest_ok);
            }
            p => prop_assert!(false, "{:?}", p),
        }
    }

    #[test]
    fn capsule_resp_round_trips(raw in any::<[u8; 16]>(), f in framing()) {
        let cqe = Cqe::decode(&raw);
        let b = one(pdu_type::CAPSULE_RESP, 0, &cqe.encode(), &[], &f);
        prop_assert_eq!(tcp::decode(&b, C2H, &f).unwrap(), Pdu::CapsuleResp(cqe));
    }

    #[test]
    fn data_pdus_round_trip(
        h2c in any::<bool>(),
        (cccid, ttag, offset) in any::<(u16, u16, u32)>(),
        last in any::<bool>(),
        data in data(1),
        f in framing(),
    ) {
        let (t, dir) = if h2c { (pdu_type::H2C_DATA, H2C) } else { (pdu_type::C2H_DATA, C2H) };
        let fl = if last { flags::DATA_LAST } else { 0 };
        let body = tcp::data_body(cccid, ttag, offset, data.len() as u32);
        let b = one(t, fl, &body, &data, &f);
        match tcp::decode(&b, dir, &f).unwrap() {
            Pdu::Data { hdr, data: d, data_digest_ok } => {
                prop_assert_eq!(
                    (hdr.ch.pdu_type, hdr.cccid, hdr.ttag, hdr.data_offset, hdr.data_length),
                    (t, cccid, ttag, offset, data.len() as u32)
                );
                prop_assert_eq!(hdr.ch.flags & flags::DATA_LAST, fl);
                prop_assert_eq!(d, &data[..]);
                prop_assert!(data_digest_ok);
            }
            p => prop_assert!(false, "{:?}", p),
        }
    }

    #[test]
    fn r2t_round_trips((cccid, ttag, offset, length) in any::<(u16, u16, u32, u32)>(), f in framing()) {
        let b = one(pdu_type::R2T, 0, &tcp::data_body(cccid, ttag, offset, length), &[], &f);
        match tcp::decode(&b, C2H, &f).unwrap() {
            Pdu::R2t(h) => prop_assert_eq!(
                (h.cccid, h.ttag, h.data_offset, h.data_length),
                (cccid, ttag, offset, length)
            ),
            p => prop_assert!(false, "{:?}", p),
        }
    }

    #[test]
    fn ic_pdus_round_trip(
        align in 0u8..=31,
        digest in 0u8..4,
        maxr2t in any::<u32>(),
        maxh2cdata_dwords in (tcp::MIN_MAXH2CDATA / 4)..=u32::MAX / 4,
        f in framing(),
    ) {
        // IC PDUs are framed before anything is negotiated and carry no digests.
        let b = one(pdu_type::IC_REQ, 0, &tcp::icreq_body(align, digest, maxr2t), &[], &f);
        match tcp::decode(&b, H2C, &Framing::INITIAL).unwrap() {
            Pdu::IcReq(r) => prop_assert_eq!((r.pfv, r.hpda, r.digest, r.maxr2t), (0, align, digest, maxr2t)),
            p => prop_assert!(false, "{:?}", p),
        }
        let maxh2cdata = 4 * maxh2cdata_dwords;
        let b = one(pdu_type::IC_RESP, 0, &tcp::icresp_body(align, digest, maxh2cdata), &[], &f);
        match tcp::decode(&b, C2H, &Framing::INITIAL).unwrap() {
            Pdu::IcResp(r) => prop_assert_eq!((r.cpda, r.digest, r.maxh2cdata), (align, digest, maxh2cdata)),
            p => prop_assert!(false, "{:?}", p),
        }
    }

    #[test]
    fn term_req_round_trips(
        h2c in any::<bool>(),
        fes in any::<u16>(),
        fei in any::<u32>(),
        offending in proptest::collection::vec(any::<u8>(), 0..300),
        f in framing(),
    ) {
        let (t, dir) = if h2c { (pdu_type::H2C_TERM_REQ, H2C) } else { (pdu_type::C2H_TERM_REQ, C2H) };
        let err = FatalError { fes, fei, what: "property test" };
        let mut b = Vec::new();
        tcp::frame_term_req(&mut b, t, &err, &offending);
        let quoted_len = offending.len().min(tcp::TERM_REQ_MAX_PLEN - 24);
        prop_assert_eq!(b.len(), 24 + quoted_len);
        // A TermReq never carries digests, whatever was negotiated.
        match tcp::decode(&b, dir, &f).unwrap() {
            Pdu::TermReq { hdr, quoted } => {
                prop_assert_eq!((hdr.fes, hdr.fei()), (fes, fei));
                prop_assert_eq!(quoted, &offending[..quoted_len]);
            }
            p => prop_assert!(false, "{:?}", p),
        }
    }

    #[test]
    fn decoder_never_panics_on_a_damaged_pdu(
        raw in any::<[u8; 64]>(),
        data in data(0),
        f in framing(),
        (at, value) in any::<(prop::sample::Index, u8)>(),
        h2c in any::<bool>(),
    ) {
        let mut b = one(pdu_type::CAPSULE_CMD, 0, &Sqe::decode(&raw).encode(), &data, &f);
        let i = at.index(b.len());
        b[i] = value;
        let dir = if h2c { H2C } else { C2H };
        let _ = tcp::check_common_header(&b, dir, &f, 1 << 20);
        let _ = tcp::decode(&b, dir, &f);
        let _ = tcp::decode(&b[..i], dir, &f);
    }
}
