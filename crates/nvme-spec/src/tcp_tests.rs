use super::*;
use crate::command::{Cqe, Sqe};

const H2C: Direction = Direction::HostToController;
const C2H: Direction = Direction::ControllerToHost;

fn digests(align: usize) -> Framing {
    Framing {
        header_digest: true,
        data_digest: true,
        rx_data_align: align,
        tx_data_align: align,
    }
}

fn one(pdu_type: u8, extra: u8, hdr: &[u8], data: &[u8], f: &Framing) -> Vec<u8> {
    let mut v = Vec::new();
    frame(&mut v, pdu_type, extra, hdr, data, f);
    v
}

#[test]
fn icreq_icresp_round_trip() {
    let b = one(
        pdu_type::IC_REQ,
        0,
        &icreq_body(3, DIGEST_HEADER | DIGEST_DATA, 0),
        &[],
        &Framing::INITIAL,
    );
    assert_eq!(b.len(), 128);
    assert_eq!(&b[..8], &[0, 0, 128, 0, 128, 0, 0, 0]);
    match decode(&b, H2C, &Framing::INITIAL).unwrap() {
        Pdu::IcReq(r) => {
            assert_eq!((r.pfv, r.hpda, r.digest, r.maxr2t), (0, 3, 3, 0));
        }
        p => panic!("{p:?}"),
    }
    // IC PDUs never carry digests, even when the framing has them on.
    let b = one(
        pdu_type::IC_RESP,
        0,
        &icresp_body(0, 1, 131072),
        &[],
        &digests(1),
    );
    assert_eq!(b.len(), 128);
    match decode(&b, C2H, &Framing::INITIAL).unwrap() {
        Pdu::IcResp(r) => assert_eq!((r.cpda, r.digest, r.maxh2cdata), (0, 1, 131072)),
        p => panic!("{p:?}"),
    }
}

#[test]
fn icreq_malformed() {
    let mut b = one(
        pdu_type::IC_REQ,
        0,
        &icreq_body(0, 0, 0),
        &[],
        &Framing::INITIAL,
    );
    b[8] = 1; // PFV 1
    let e = decode(&b, H2C, &Framing::INITIAL).unwrap_err();
    assert_eq!((e.fes, e.fei), (fes::UNSUPPORTED_PARAMETER, 8));
    b[8] = 0;
    b[10] = 32; // HPDA
    let e = decode(&b, H2C, &Framing::INITIAL).unwrap_err();
    assert_eq!((e.fes, e.fei), (fes::UNSUPPORTED_PARAMETER, 10));
    b[10] = 0;
    b[4] = 129; // PLEN
    let e = check_common_header(&b, H2C, &Framing::INITIAL, 1 << 20).unwrap_err();
    assert_eq!((e.fes, e.fei), (fes::INVALID_HEADER_FIELD, 4));
    let mut r = one(
        pdu_type::IC_RESP,
        0,
        &icresp_body(0, 0, 1000),
        &[],
        &Framing::INITIAL,
    );
    assert_eq!(decode(&r, C2H, &Framing::INITIAL).unwrap_err().fei, 12);
    r[12..16].copy_from_slice(&8192u32.to_le_bytes());
    assert!(decode(&r, C2H, &Framing::INITIAL).is_ok());
}

#[test]
fn capsule_cmd_with_in_capsule_data_and_digests() {
    let sqe = Sqe {
        opcode: 1,
        cid: 77,
        nsid: 1,
        ..Default::default()
    };
    let data: Vec<u8> = (0..100u8).collect();
    for f in [Framing::INITIAL, digests(1), digests(32)] {
        let b = one(pdu_type::CAPSULE_CMD, 0, &sqe.encode(), &data, &f);
        let pdo = b[3] as usize;
        assert_eq!(pdo % f.tx_data_align, 0);
        assert_eq!(b[2], 72);
        match decode(&b, H2C, &f).unwrap() {
            Pdu::CapsuleCmd {
                sqe: s,
                data: d,
                data_digest_ok,
            } => {
                assert_eq!(s, sqe);
                assert_eq!(d, &data[..]);
                assert!(data_digest_ok);
            }
            p => panic!("{p:?}"),
        }
    }
    // Without data: PLEN is just the header (+ digest) and PDO is 0.
    let b = one(pdu_type::CAPSULE_CMD, 0, &sqe.encode(), &[], &digests(1));
    assert_eq!((b.len(), b[3], b[1]), (76, 0, flags::HDGST));
    assert!(matches!(
        decode(&b, H2C, &digests(1)).unwrap(),
        Pdu::CapsuleCmd { data: [], .. }
    ));
}

#[test]
fn capsule_resp_round_trip() {
    let cqe = Cqe {
        result: 0x10001,
        sqhd: 2,
        cid: 5,
        ..Default::default()
    };
    let b = one(pdu_type::CAPSULE_RESP, 0, &cqe.encode(), &[], &digests(1));
    assert_eq!(b.len(), 28);
    assert_eq!(decode(&b, C2H, &digests(1)).unwrap(), Pdu::CapsuleResp(cqe));
    assert_eq!(
        decode(&b, H2C, &digests(1)).unwrap_err().fei,
        0,
        "a response is not valid host to controller"
    );
}

#[test]
fn data_pdus_and_r2t_round_trip() {
    let data = vec![0xA5u8; 4096];
    for (t, dir, fl) in [
        (pdu_type::H2C_DATA, H2C, flags::DATA_LAST),
        (
            pdu_type::C2H_DATA,
            C2H,
            flags::DATA_LAST | flags::DATA_SUCCESS,
        ),
    ] {
        for f in [Framing::INITIAL, digests(1)] {
            let b = one(t, fl, &data_body(9, 3, 8192, 4096), &data, &f);
            match decode(&b, dir, &f).unwrap() {
                Pdu::Data {
                    hdr,
                    data: d,
                    data_digest_ok,
                } => {
                    assert_eq!(
                        (hdr.cccid, hdr.ttag, hdr.data_offset, hdr.data_length),
                        (9, 3, 8192, 4096)
                    );
                    assert_eq!(hdr.ch.flags & (flags::DATA_LAST | flags::DATA_SUCCESS), fl);
                    assert_eq!(d.len(), 4096);
                    assert!(data_digest_ok);
                }
                p => panic!("{p:?}"),
            }
        }
    }
    let b = one(
        pdu_type::R2T,
        0,
        &data_body(9, 1, 0, 65536),
        &[],
        &digests(1),
    );
    match decode(&b, C2H, &digests(1)).unwrap() {
        Pdu::R2t(h) => assert_eq!(
            (h.cccid, h.ttag, h.data_offset, h.data_length),
            (9, 1, 0, 65536)
        ),
        p => panic!("{p:?}"),
    }
}

#[test]
fn term_req_layout_fei_at_offset_10() {
    let err = FatalError {
        fes: fes::INVALID_HEADER_FIELD,
        fei: 0x0102_0304,
        what: "test",
    };
    let offending = [0xEEu8; 200];
    let mut b = Vec::new();
    frame_term_req(&mut b, pdu_type::C2H_TERM_REQ, &err, &offending);
    assert_eq!(b.len(), TERM_REQ_MAX_PLEN, "quotes at most 128 bytes");
    assert_eq!(&b[8..10], &[1, 0]);
    assert_eq!(&b[10..14], &[4, 3, 2, 1]);
    match decode(&b, C2H, &digests(4)).unwrap() {
        Pdu::TermReq { hdr, quoted } => {
            assert_eq!((hdr.fes, hdr.fei()), (1, 0x0102_0304));
            assert_eq!(quoted.len(), 128);
        }
        p => panic!("{p:?}"),
    }
    let mut h = Vec::new();
    frame_term_req(&mut h, pdu_type::H2C_TERM_REQ, &err, &offending[..8]);
    assert_eq!(h.len(), 32);
    assert!(matches!(
        decode(&h, H2C, &Framing::INITIAL).unwrap(),
        Pdu::TermReq { .. }
    ));
    h[4] = 153;
    assert_eq!(
        check_common_header(&h, H2C, &Framing::INITIAL, 1 << 20)
            .unwrap_err()
            .fei,
        4
    );
}

#[test]
fn malformed_common_headers() {
    let sqe = Sqe::default().encode();
    let good = one(
        pdu_type::CAPSULE_CMD,
        0,
        &sqe,
        &[1, 2, 3, 4],
        &Framing::INITIAL,
    );
    let f = Framing::INITIAL;
    let cases: [(usize, u8, u16, u32); 6] = [
        (0, 0x08, fes::INVALID_HEADER_FIELD, 0), // unknown type
        (0, 0x05, fes::INVALID_HEADER_FIELD, 0), // response from host
        (2, 71, fes::INVALID_HEADER_FIELD, 2),   // HLEN
        (1, flags::HDGST, fes::INVALID_HEADER_FIELD, 1),
        (3, 10, fes::INVALID_HEADER_FIELD, 3), // PDO inside header
        (1, flags::DDGST, fes::INVALID_HEADER_FIELD, 1),
    ];
    for (off, val, want_fes, want_fei) in cases {
        let mut b = good.clone();
        b[off] = val;
        let e = decode(&b, H2C, &f).unwrap_err();
        assert_eq!(
            (e.fes, e.fei),
            (want_fes, want_fei),
            "byte {off} = {val:#x}: {e}"
        );
    }
    // PLEN larger than the connection allows.
    assert_eq!(check_common_header(&good, H2C, &f, 40).unwrap_err().fei, 4);
    // Truncated buffer: PLEN no longer matches.
    assert_eq!(decode(&good[..good.len() - 1], H2C, &f).unwrap_err().fei, 4);
    // Misaligned PDO when the receiver asked for 8-byte alignment.
    let aligned = Framing {
        rx_data_align: 8,
        ..f
    };
    let mut b = good.clone();
    b[3] = 73;
    assert_eq!(decode(&b, H2C, &aligned).unwrap_err().fei, 3);
}

#[test]
fn digest_errors() {
    let f = digests(1);
    let good = one(
        pdu_type::H2C_DATA,
        flags::DATA_LAST,
        &data_body(1, 0, 0, 8),
        &[7; 8],
        &f,
    );
    let mut b = good.clone();
    b[12] ^= 1; // corrupt DATAO: header digest no longer matches
    let e = decode(&b, H2C, &f).unwrap_err();
    assert_eq!(e.fes, fes::HEADER_DIGEST_ERROR);
    assert_eq!(e.fei, u32::from_le_bytes(good[24..28].try_into().unwrap()));
    let mut b = good.clone();
    let n = b.len();
    b[n - 5] ^= 0xFF; // corrupt data: reported, not fatal
    match decode(&b, H2C, &f).unwrap() {
        Pdu::Data { data_digest_ok, .. } => assert!(!data_digest_ok),
        p => panic!("{p:?}"),
    }
    // DATAL disagreeing with the payload.
    let bad = one(
        pdu_type::H2C_DATA,
        0,
        &data_body(1, 0, 0, 9),
        &[7; 8],
        &Framing::INITIAL,
    );
    assert_eq!(decode(&bad, H2C, &Framing::INITIAL).unwrap_err().fei, 16);
}

#[test]
fn decoder_rejects_input_shorter_than_a_common_header() {
    // Regression: cargo fuzz (pdu_decode) found decode() indexing past a
    // 1-byte buffer.
    for len in 0..8 {
        let e = decode(&[0x4A; 8][..len], H2C, &Framing::INITIAL).unwrap_err();
        assert_eq!((e.fes, e.fei), (fes::INVALID_HEADER_FIELD, 4));
    }
}

#[test]
fn decoder_never_panics_on_short_or_random_input() {
    let mut seed = 0x1234_5678u32;
    for len in 0..300usize {
        let mut b = vec![0u8; len];
        for x in b.iter_mut() {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *x = (seed >> 16) as u8;
        }
        if len >= 8 {
            b[0] = (len % 10) as u8;
            b[2] = header_len(b[0]).unwrap_or(0) as u8;
            b[4..8].copy_from_slice(&(len as u32).to_le_bytes());
            let _ = decode(&b, H2C, &Framing::INITIAL);
            let _ = decode(&b, C2H, &digests(4));
        }
    }
}
