//! Property tests: every fixed layout decodes to what was encoded, for any
//! field values the layout can hold (SQE, CQE, SGL, status, DSM ranges,
//! fabrics Connect, Get Log Page, features, Identify, log pages).
//! The PDU framing has its own file (`pdu_round_trip.rs`).

use nvme_spec::command::DsmRange;
use nvme_spec::fabrics::{ConnectCmd, ConnectData, NQN_MAX_LEN};
use nvme_spec::features::{IrqCoalescing, NumQueues};
use nvme_spec::identify::{
    decode_ns_descriptors, decode_ns_list, encode_ns_descriptors, encode_ns_list,
    IdentifyController, IdentifyNamespace, IDENTIFY_SIZE,
};
use nvme_spec::log::{
    decode_discovery_log, encode_discovery_log, DiscoveryEntry, ErrorEntry, GetLogPage, SmartLog,
};
use nvme_spec::{Cqe, SglDescriptor, Sqe, Status, StatusCodeType};
use proptest::prelude::*;

fn sgl() -> impl Strategy<Value = SglDescriptor> {
    (any::<u64>(), any::<u32>(), any::<[u8; 3]>(), any::<u8>()).prop_map(
        |(addr, length, rsvd, type_byte)| SglDescriptor {
            addr,
            length,
            rsvd,
            type_byte,
        },
    )
}

/// Any SQE: every field takes any value.
fn sqe() -> impl Strategy<Value = Sqe> {
    (
        (any::<u8>(), any::<u8>(), any::<u16>(), any::<u32>()),
        (any::<u32>(), any::<u32>(), any::<u64>(), sgl()),
        any::<[u32; 6]>(),
    )
        .prop_map(
            |((opcode, flags, cid, nsid), (cdw2, cdw3, mptr, dptr), c)| Sqe {
                opcode,
                flags,
                cid,
                nsid,
                cdw2,
                cdw3,
                mptr,
                dptr,
                cdw10: c[0],
                cdw11: c[1],
                cdw12: c[2],
                cdw13: c[3],
                cdw14: c[4],
                cdw15: c[5],
            },
        )
}

fn cqe() -> impl Strategy<Value = Cqe> {
    any::<(u32, u32, u16, u16, u16, u16)>().prop_map(
        |(result, dw1, sqhd, sqid, cid, status_phase)| Cqe {
            result,
            dw1,
            sqhd,
            sqid,
            cid,
            status_phase,
        },
    )
}

/// Printable ASCII without leading or trailing blanks: what NVMe's
/// space-padded text fields give back unchanged.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("([!-~]([ -~]{{0,{}}}[!-~])?)?", max - 2)).unwrap()
}

/// An NQN-like name: 1 to 223 characters, no NUL.
fn nqn() -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-z0-9.:-]{{1,{NQN_MAX_LEN}}}")).unwrap()
}

proptest! {
    #[test]
    fn sqe_round_trips(s in sqe()) {
        let b = s.encode();
        prop_assert_eq!(Sqe::decode(&b), s);
        prop_assert_eq!(&b[2..4], &s.cid.to_le_bytes());
        prop_assert_eq!(&b[40..44], &s.cdw10.to_le_bytes());
    }

    #[test]
    fn sgl_round_trips(d in sgl()) {
        let mut b = [0u8; SglDescriptor::SIZE];
        d.encode(&mut b);
        prop_assert_eq!(SglDescriptor::decode(&b), d);
        prop_assert_eq!(b[15], d.type_byte);
    }

    #[test]
    fn cqe_round_trips(c in cqe()) {
        prop_assert_eq!(Cqe::decode(&c.encode()), c);
    }

    #[test]
    fn status_round_trips_through_the_field_and_a_cqe(field in 0u16..0x8000) {
        let s = Status::from_field(field);
        prop_assert_eq!(s.field(), field);
        let mut c = Cqe::default();
        c.set_status(s);
        prop_assert_eq!(Cqe::decode(&c.encode()).status(), s);
        prop_assert_eq!(c.status_phase & 1, 0, "phase bit stays 0");
        let rebuilt = Status::new(s.sct(), s.sc());
        prop_assert_eq!(rebuilt.field(), field & 0x7FF, "SCT and SC only");
        prop_assert_eq!(s.dnr(), field & 0x4000 != 0);
    }

    #[test]
    fn status_code_type_round_trips(sct in 0u8..8, sc in any::<u8>()) {
        let t = match sct {
            0 => StatusCodeType::Generic,
            1 => StatusCodeType::CommandSpecific,
            2 => StatusCodeType::MediaError,
            3 => StatusCodeType::Path,
            o => StatusCodeType::Other(o),
        };
        let s = Status::new(t, sc);
        prop_assert_eq!((s.sct(), s.sc()), (t, sc));
        prop_assert_eq!(s.is_success(), sct == 0 && sc == 0);
    }

    #[test]
    fn dsm_range_round_trips(cattr in any::<u32>(), nlb in any::<u32>(), slba in any::<u64>()) {
        let r = DsmRange { cattr, nlb, slba };
        prop_assert_eq!(DsmRange::decode(&r.encode()), r);
    }

    #[test]
    fn connect_cmd_round_trips_through_an_encoded_sqe(
        (recfmt, qid, sqsize, cattr, kato_ms) in any::<(u16, u16, u16, u8, u32)>(),
        base in sqe(),
    ) {
        let c = ConnectCmd { recfmt, qid, sqsize, cattr, kato_ms };
        let mut s = base;
        c.to_sqe(&mut s);
        prop_assert_eq!(ConnectCmd::from_sqe(&Sqe::decode(&s.encode())), c);
    }

    #[test]
    fn connect_data_round_trips(
        hostid in any::<[u8; 16]>(),
        cntlid in any::<u16>(),
        subnqn in nqn(),
        hostnqn in nqn(),
    ) {
        let d = ConnectData::new(hostid, cntlid, &subnqn, &hostnqn);
        let back = ConnectData::decode(&d.encode()).unwrap();
        prop_assert_eq!(back.subnqn_str(), subnqn);
        prop_assert_eq!(back.hostnqn_str(), hostnqn);
        prop_assert_eq!(back, d);
    }

    #[test]
    fn get_log_page_round_trips(
        lid in any::<u8>(),
        lsp in 0u8..0x80,
        rae in any::<bool>(),
        numd in any::<u32>(),
        offset_bytes in any::<u64>(),
        base in sqe(),
    ) {
        let g = GetLogPage { lid, lsp, rae, len_bytes: 4 * (numd as u64 + 1), offset_bytes };
        let mut s = base;
        g.to_sqe(&mut s);
        prop_assert_eq!(GetLogPage::from_sqe(&Sqe::decode(&s.encode())), g);
    }

    #[test]
    fn features_round_trip(nsq in 1u32..=65_536, ncq in 1u32..=65_536, time in any::<u8>(), thr in any::<u8>()) {
        let n = NumQueues { nsq, ncq };
        prop_assert_eq!(NumQueues::decode(n.encode()), n);
        let c = IrqCoalescing { time_100us: time, thr_zero_based: thr };
        prop_assert_eq!(IrqCoalescing::decode(c.encode()), c);
        let from_us = IrqCoalescing::from_us_and_threshold(c.time_us(), c.threshold()).unwrap();
        prop_assert_eq!(from_us, c);
    }
}

fn identify_controller() -> impl Strategy<Value = IdentifyController> {
    (
        (text(20), text(40), text(8), nqn()),
        any::<(u16, u8, u8, u16, u32, u32, u8, u8)>(),
        any::<(u8, u8, u8, u16, u16, u32, u16, u8)>(),
        any::<(u32, u32, u32, u16, u8)>(),
        any::<(u8, u8, u32, u32, u32)>(),
    )
        .prop_map(|((serial, model, firmware, subnqn), a, b, c, d)| {
            let (vid, cmic, mdts, cntlid, ver, oaes, cntrltype, acl) = a;
            let (aerl, lpa, elpe, kas, maxcmd, nn, oncs, vwc) = b;
            let (sgls, ioccsz, iorcsz, icdoff, msdbd) = c;
            let (anatt, anacap, anagrpmax, nanagrpid, mnan) = d;
            IdentifyController {
                vid,
                serial,
                model,
                firmware,
                cmic,
                mdts,
                cntlid,
                ver,
                oaes,
                cntrltype,
                acl,
                aerl,
                lpa,
                elpe,
                kas,
                maxcmd,
                nn,
                oncs,
                vwc,
                sgls,
                anatt,
                anacap,
                anagrpmax,
                nanagrpid,
                mnan,
                subnqn,
                ioccsz,
                iorcsz,
                icdoff,
                msdbd,
            }
        })
}

fn discovery_entry() -> impl Strategy<Value = DiscoveryEntry> {
    (
        any::<(u8, u8, u8, u8, u16, u16, u16)>(),
        text(32),
        nqn(),
        text(256),
    )
        .prop_map(
            |((trtype, adrfam, subtype, treq, portid, cntlid, asqsz), trsvcid, subnqn, traddr)| {
                DiscoveryEntry {
                    trtype,
                    adrfam,
                    subtype,
                    treq,
                    portid,
                    cntlid,
                    asqsz,
                    trsvcid,
                    subnqn,
                    traddr,
                    // Only a TCP entry's TSAS carries a security type.
                    tcp_sectype: if trtype == nvme_spec::log::TRTYPE_TCP {
                        treq
                    } else {
                        0
                    },
                }
            },
        )
}

proptest! {
    #[test]
    fn identify_controller_round_trips(c in identify_controller()) {
        let b = c.encode();
        prop_assert_eq!(b.len(), IDENTIFY_SIZE);
        prop_assert_eq!(IdentifyController::decode(&b), c);
    }

    #[test]
    fn identify_namespace_round_trips(
        (nsze, ncap, nuse) in any::<(u64, u64, u64)>(),
        (nsfeat, nmic, dlfeat, lbads) in any::<(u8, u8, u8, u8)>(),
        nguid in any::<[u8; 16]>(),
        anagrpid in any::<u32>(),
    ) {
        let n = IdentifyNamespace { nsze, ncap, nuse, nsfeat, nmic, dlfeat, nguid, lbads, anagrpid };
        prop_assert_eq!(IdentifyNamespace::decode(&n.encode()), n);
    }

    #[test]
    fn ns_descriptors_round_trip(
        descs in proptest::collection::vec((1u8..=255, proptest::collection::vec(any::<u8>(), 0..=32)), 0..60),
    ) {
        let pairs: Vec<(u8, &[u8])> = descs.iter().map(|(t, id)| (*t, id.as_slice())).collect();
        prop_assert_eq!(decode_ns_descriptors(&encode_ns_descriptors(&pairs)), descs);
    }

    #[test]
    fn ns_list_round_trips(ids in proptest::collection::vec(1u32.., 0..1200), after in any::<u32>()) {
        let mut want: Vec<u32> = ids.iter().copied().filter(|&n| n > after).collect();
        want.sort_unstable();
        want.truncate(1024);
        prop_assert_eq!(decode_ns_list(&encode_ns_list(&ids, after)), want);
    }

    #[test]
    fn error_entry_round_trips(
        (error_count, lba) in any::<(u64, u64)>(),
        (sqid, cid, status) in any::<(u16, u16, u16)>(),
        nsid in any::<u32>(),
    ) {
        let e = ErrorEntry { error_count, sqid, cid, status, lba, nsid };
        prop_assert_eq!(ErrorEntry::decode(&e.encode()), e);
    }

    #[test]
    fn smart_log_reports_data_units_rounded_up(read_bytes in any::<u64>(), written_bytes in any::<u64>()) {
        let s = SmartLog { read_bytes, written_bytes, ..Default::default() };
        prop_assert_eq!(
            SmartLog::decode_data_units(&s.encode()),
            (read_bytes.div_ceil(512_000), written_bytes.div_ceil(512_000))
        );
    }

    #[test]
    fn discovery_log_round_trips(genctr in any::<u64>(), entries in proptest::collection::vec(discovery_entry(), 0..4)) {
        let page = encode_discovery_log(genctr, &entries);
        prop_assert_eq!(decode_discovery_log(&page), (genctr, entries));
    }
}
