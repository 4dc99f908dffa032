//! The host queue against a controller played by hand: each PDU a test
//! sends is framed here, each the queue sends is decoded.

use nvme_spec::command::io;
use nvme_spec::tcp::{fes, FatalError};
use nvme_spec::Status;

use super::*;
use crate::host::command;

const ENTRIES: u16 = 8;

/// Each command id's data: what it writes and where its read lands.
struct Bufs(Vec<(Vec<u8>, Vec<u8>)>);

impl DataBuffers for Bufs {
    fn outgoing(&self, cid: u16) -> &[u8] {
        &self.0[cid as usize].0
    }
    fn incoming(&mut self, cid: u16) -> &mut [u8] {
        &mut self.0[cid as usize].1
    }
}

fn cfg() -> QueueConfig {
    QueueConfig {
        entries: ENTRIES,
        max_data_bytes: 64 << 10,
        in_capsule_max_bytes: 4096,
        header_digest: false,
        data_digest: false,
        hpda: 0,
        max_r2t: 0,
    }
}

fn bufs() -> Bufs {
    Bufs((0..ENTRIES).map(|_| (Vec::new(), Vec::new())).collect())
}

/// Every PDU in `b`, decoded as the controller sees it.
fn sent<'a>(b: &'a [u8], framing: &Framing) -> Vec<Pdu<'a>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let plen = u32::from_le_bytes(b[pos + 4..pos + 8].try_into().unwrap()) as usize;
        out.push(tcp::decode(&b[pos..pos + plen], Direction::HostToController, framing).unwrap());
        pos += plen;
    }
    out
}

/// Takes everything the queue has to send.
fn drain(q: &mut HostQueue, bufs: &Bufs) -> Vec<u8> {
    let b = q.tx_pending(bufs).to_vec();
    q.tx_sent(b.len());
    b
}

fn ctrl_pdu(pdu_type: u8, flags: u8, hdr: &[u8], data: &[u8], framing: &Framing) -> Vec<u8> {
    let mut b = Vec::new();
    tcp::frame(&mut b, pdu_type, flags, hdr, data, framing);
    b
}

fn icresp(digest: u8, cpda: u8, maxh2cdata: u32) -> Vec<u8> {
    ctrl_pdu(
        pdu_type::IC_RESP,
        0,
        &tcp::icresp_body(cpda, digest, maxh2cdata),
        &[],
        &Framing::INITIAL,
    )
}

fn resp(cid: u16, status: Status, framing: &Framing) -> Vec<u8> {
    let mut cqe = Cqe {
        cid,
        ..Default::default()
    };
    cqe.set_status(status);
    ctrl_pdu(pdu_type::CAPSULE_RESP, 0, &cqe.encode(), &[], framing)
}

fn c2h(cid: u16, off: u32, data: &[u8], fl: u8, framing: &Framing) -> Vec<u8> {
    let body = tcp::data_body(cid, 0, off, data.len() as u32);
    ctrl_pdu(pdu_type::C2H_DATA, fl, &body, data, framing)
}

fn r2t(cid: u16, ttag: u16, off: u32, len: u32, framing: &Framing) -> Vec<u8> {
    ctrl_pdu(
        pdu_type::R2T,
        0,
        &tcp::data_body(cid, ttag, off, len),
        &[],
        framing,
    )
}

/// A queue past ICResp (no digests, MAXH2CDATA 8 KiB).
fn ready(b: &mut Bufs) -> HostQueue {
    let mut q = HostQueue::new(cfg());
    let ic = drain(&mut q, b);
    assert!(matches!(sent(&ic, &Framing::INITIAL)[..], [Pdu::IcReq(_)]));
    q.on_bytes(&icresp(0, 0, 8192), b).unwrap();
    assert!(q.is_ready());
    q
}

#[test]
fn icreq_asks_digests_alignment_and_maxr2t_and_icresp_sets_the_framing() {
    let mut b = bufs();
    let mut q = HostQueue::new(QueueConfig {
        header_digest: true,
        data_digest: true,
        hpda: 3,
        max_r2t: 1000,
        ..cfg()
    });
    let ic = drain(&mut q, &b);
    let Pdu::IcReq(r) = &sent(&ic, &Framing::INITIAL)[0] else {
        panic!("ICReq first");
    };
    assert_eq!(
        (r.hpda, r.digest, r.maxr2t),
        (3, 3, R2T_PER_COMMAND_MAX - 1)
    );
    assert_eq!(
        q.submit(0, Sqe::default(), Transfer::None, &b),
        Err(HostError::NotReady)
    );
    q.on_bytes(&icresp(tcp::DIGEST_HEADER, 1, 65536), &mut b)
        .unwrap();
    let f = q.framing();
    assert!(f.header_digest && !f.data_digest);
    assert_eq!((f.rx_data_align, f.tx_data_align), (16, 8));
    assert_eq!(q.maxh2cdata(), 65536);
}

#[test]
fn reads_complete_on_the_response_or_on_c2h_success() {
    let mut b = bufs();
    let mut q = ready(&mut b);
    let f = q.framing();
    b.0[1].1 = vec![0; 8192];
    b.0[2].1 = vec![0; 4096];
    let (sqe, x) = command::read(1, 0, 8192, 9);
    q.submit(1, sqe, x, &b).unwrap();
    let (sqe, x) = command::read(1, 8192, 4096, 9);
    q.submit(2, sqe, x, &b).unwrap();
    let out = drain(&mut q, &b);
    let caps = sent(&out, &f);
    let Pdu::CapsuleCmd { sqe, data, .. } = &caps[1] else {
        panic!("{caps:?}");
    };
    assert_eq!(
        (sqe.cid, sqe.dptr.length, sqe.dptr.type_byte),
        (2, 4096, SGL_TRANSPORT)
    );
    assert!(data.is_empty());
    // Command 1: two C2HData PDUs, then its response.
    let mut input = c2h(1, 0, &[1; 4096], 0, &f);
    input.extend(c2h(1, 4096, &[2; 4096], flags::DATA_LAST, &f));
    // Command 2: one C2HData with SUCCESS, no response.
    input.extend(c2h(
        2,
        0,
        &[3; 4096],
        flags::DATA_LAST | flags::DATA_SUCCESS,
        &f,
    ));
    input.extend(resp(1, Status::SUCCESS, &f));
    // Byte by byte: PDUs split anywhere still parse.
    for byte in &input {
        q.on_bytes(std::slice::from_ref(byte), &mut b).unwrap();
    }
    let c = q.completion().unwrap();
    assert_eq!((c.cqe.cid, c.data_bytes), (2, 4096));
    assert!(c.cqe.status().is_success());
    let c = q.completion().unwrap();
    assert_eq!((c.cqe.cid, c.data_bytes), (1, 8192));
    assert_eq!(q.completion(), None);
    assert_eq!(q.in_flight(), 0);
    assert_eq!(&b.0[1].1[..4096], &[1; 4096][..]);
    assert_eq!(&b.0[1].1[4096..], &[2; 4096][..]);
    assert_eq!(b.0[2].1, vec![3; 4096]);
}

#[test]
fn small_writes_go_in_the_capsule_and_large_ones_answer_r2t() {
    let mut b = bufs();
    let mut q = ready(&mut b);
    let f = q.framing();
    b.0[0].0 = vec![7; 4096];
    let big: Vec<u8> = (0..20000u32).map(|i| i as u8).collect();
    b.0[3].0 = big.clone();
    let (sqe, x) = command::write(1, 0, 4096, 9);
    q.submit(0, sqe, x, &b).unwrap();
    q.submit(
        3,
        command::rw_sqe(io::WRITE, 1, 8, 40),
        Transfer::ToController(20000),
        &b,
    )
    .unwrap();
    let out = drain(&mut q, &b);
    let caps = sent(&out, &f);
    let Pdu::CapsuleCmd { sqe, data, .. } = &caps[0] else {
        panic!()
    };
    assert_eq!(sqe.dptr.type_byte, SGL_IN_CAPSULE);
    assert_eq!(*data, &[7u8; 4096][..]);
    let Pdu::CapsuleCmd { sqe, data, .. } = &caps[1] else {
        panic!()
    };
    assert_eq!((sqe.dptr.type_byte, data.len()), (SGL_TRANSPORT, 0));
    // One R2T for 20000 bytes from offset 0: H2CData of at most
    // MAXH2CDATA (8 KiB), LAST on the final one.
    q.on_bytes(&r2t(3, 9, 0, 20000, &f), &mut b).unwrap();
    assert!(q.wants_to_send());
    let out = drain(&mut q, &b);
    let mut got = Vec::new();
    let pdus = sent(&out, &f);
    for (i, p) in pdus.iter().enumerate() {
        let Pdu::Data { hdr, data, .. } = p else {
            panic!("{p:?}")
        };
        assert_eq!(
            (hdr.cccid, hdr.ttag, hdr.data_offset as usize),
            (3, 9, got.len())
        );
        assert_eq!(
            hdr.ch.flags & flags::DATA_LAST != 0,
            i == pdus.len() - 1,
            "LAST on the last"
        );
        assert!(data.len() <= 8192);
        got.extend_from_slice(data);
    }
    assert_eq!(got, big);
    q.on_bytes(&resp(3, Status::SUCCESS, &f), &mut b).unwrap();
    q.on_bytes(&resp(0, Status::LBA_RANGE, &f), &mut b).unwrap();
    assert_eq!(q.completion().unwrap().cqe.cid, 3);
    assert_eq!(q.completion().unwrap().cqe.status(), Status::LBA_RANGE);
}

#[test]
fn a_completion_drops_the_rest_of_its_r2t_data() {
    const MIB4: u32 = 4 << 20;
    let mut b = bufs();
    let mut q = HostQueue::new(QueueConfig {
        max_data_bytes: MIB4,
        ..cfg()
    });
    drain(&mut q, &b);
    q.on_bytes(&icresp(0, 0, 65536), &mut b).unwrap();
    let f = q.framing();
    // Seven 4 MiB writes, each asked for at once: more than the 16 MiB
    // data window, so the last ones wait to be framed.
    for cid in 1..ENTRIES {
        b.0[cid as usize].0 = vec![cid as u8; MIB4 as usize];
        q.submit(cid, Sqe::default(), Transfer::ToController(MIB4), &b)
            .unwrap();
    }
    drain(&mut q, &b);
    for cid in 1..ENTRIES {
        q.on_bytes(&r2t(cid, 0, 0, MIB4, &f), &mut b).unwrap();
    }
    let first = drain(&mut q, &b);
    assert!(first.len() <= TX_DATA_WINDOW_MAX_BYTES, "{}", first.len());
    // The last write fails before its data was framed: none of it goes.
    let last = ENTRIES - 1;
    q.on_bytes(&resp(last, Status::DATA_TRANSFER_ERROR, &f), &mut b)
        .unwrap();
    let mut data_bytes = vec![0usize; ENTRIES as usize];
    let mut rest = first;
    loop {
        for p in sent(&rest, &f) {
            let Pdu::Data { hdr, data, .. } = p else {
                panic!("{p:?}")
            };
            assert!(data.iter().all(|&x| x == hdr.cccid as u8));
            data_bytes[hdr.cccid as usize] += data.len();
        }
        if !q.wants_to_send() {
            break;
        }
        rest = drain(&mut q, &b);
    }
    let full = MIB4 as usize;
    assert_eq!(data_bytes[1..last as usize], vec![full; last as usize - 1]);
    assert_eq!(data_bytes[last as usize], 0, "nothing of cid {last}");
    assert_eq!(q.completion().unwrap().cqe.cid, last);
}

#[test]
fn connect_gives_the_queue_its_id_and_controller() {
    let mut b = bufs();
    let mut q = ready(&mut b);
    let f = q.framing();
    let host = command::HostIdentity {
        hostnqn: "nqn.h".into(),
        hostid: [0; 16],
    };
    let p = command::ConnectParams {
        qid: 2,
        cntlid: 9,
        entries: ENTRIES,
        kato_ms: 0,
        disable_sq_flow: true,
    };
    let (sqe, data) = command::connect(&host, "nqn.s", &p);
    b.0[4].0 = data;
    q.submit(4, sqe, Transfer::ToController(1024), &b).unwrap();
    drain(&mut q, &b);
    let mut cqe = Cqe {
        cid: 4,
        result: 9,
        ..Default::default()
    };
    cqe.set_status(Status::SUCCESS);
    let pdu = ctrl_pdu(pdu_type::CAPSULE_RESP, 0, &cqe.encode(), &[], &f);
    q.on_bytes(&pdu, &mut b).unwrap();
    assert_eq!((q.qid(), q.cntlid()), (Some(2), Some(9)));
    // C2HData SUCCESS completions then name the queue.
    b.0[5].1 = vec![0; 512];
    q.submit(
        5,
        command::rw_sqe(io::READ, 1, 0, 1),
        Transfer::FromController(512),
        &b,
    )
    .unwrap();
    let d = c2h(5, 0, &[1; 512], flags::DATA_LAST | flags::DATA_SUCCESS, &f);
    q.on_bytes(&d, &mut b).unwrap();
    q.completion();
    assert_eq!(q.completion().unwrap().cqe.sqid, 2);
}

/// PDUs a controller must not send to a queue with one 4 KiB read (cid 1)
/// in flight, and the error each fails the queue with.
fn bad_pdus() -> Vec<(Vec<u8>, HostError)> {
    let f = Framing::INITIAL;
    vec![
        (
            resp(6, Status::SUCCESS, &f),
            HostError::UnknownCommand { cid: 6 },
        ),
        (
            c2h(1, 4000, &[0; 512], 0, &f),
            HostError::DataOutOfRange {
                cid: 1,
                offset: 4000,
                len: 512,
                read_bytes: 4096,
            },
        ),
        (
            c2h(1, 0, &[0; 512], flags::DATA_LAST | flags::DATA_SUCCESS, &f),
            HostError::EarlySuccess {
                cid: 1,
                received: 512,
                read_bytes: 4096,
            },
        ),
        (
            r2t(1, 0, 0, 512, &f),
            HostError::R2tOutOfRange {
                cid: 1,
                offset: 0,
                len: 512,
                write_bytes: 0,
            },
        ),
        (
            {
                let mut b = Vec::new();
                let e = FatalError {
                    fes: fes::DATA_OUT_OF_RANGE,
                    fei: 12,
                    what: "x",
                };
                tcp::frame_term_req(&mut b, pdu_type::C2H_TERM_REQ, &e, &[0; 24]);
                b
            },
            HostError::Terminated {
                fes: fes::DATA_OUT_OF_RANGE,
                fei: 12,
            },
        ),
        (
            icresp(0, 0, 8192),
            HostError::Unexpected {
                what: "ICResp",
                when: " after ICResp",
            },
        ),
    ]
}

#[test]
fn protocol_errors_fail_the_queue() {
    let read = |q: &mut HostQueue, b: &mut Bufs| {
        b.0[1].1 = vec![0; 4096];
        q.submit(
            1,
            command::rw_sqe(io::READ, 1, 0, 8),
            Transfer::FromController(4096),
            b,
        )
        .unwrap();
    };
    for (pdu, want) in bad_pdus() {
        let mut b = bufs();
        let mut q = ready(&mut b);
        read(&mut q, &mut b);
        assert_eq!(q.on_bytes(&pdu, &mut b), Err(want.clone()), "{want}");
        assert_eq!(q.phase(), QueuePhase::Failed);
        assert_eq!(q.on_bytes(&[0], &mut b), Err(HostError::Failed));
        assert_eq!(
            q.submit(2, Sqe::default(), Transfer::None, &b),
            Err(HostError::Failed)
        );
    }
    // A header the queue cannot take: PLEN beyond its receive buffer.
    let mut b = bufs();
    let mut q = ready(&mut b);
    let mut pdu = resp(0, Status::SUCCESS, &Framing::INITIAL);
    pdu[4..8].copy_from_slice(&(64u32 << 20).to_le_bytes());
    assert!(matches!(q.on_bytes(&pdu, &mut b), Err(HostError::Pdu(_))));
}

#[test]
fn data_digests_are_checked_and_r2ts_bounded_by_maxr2t() {
    let mut b = bufs();
    let mut q = HostQueue::new(QueueConfig {
        data_digest: true,
        ..cfg()
    });
    drain(&mut q, &b);
    q.on_bytes(&icresp(tcp::DIGEST_DATA, 0, 8192), &mut b)
        .unwrap();
    let f = q.framing();
    b.0[1].1 = vec![0; 512];
    q.submit(
        1,
        command::rw_sqe(io::READ, 1, 0, 1),
        Transfer::FromController(512),
        &b,
    )
    .unwrap();
    let mut d = c2h(1, 0, &[9; 512], 0, &f);
    let n = d.len();
    d[n - 1] ^= 1;
    assert_eq!(
        q.on_bytes(&d, &mut b),
        Err(HostError::DataDigest { cid: 1 })
    );

    // MAXR2T 0: one R2T outstanding per command until its data is framed.
    let mut b = bufs();
    let mut q = ready(&mut b);
    let f = q.framing();
    b.0[2].0 = vec![1; 16384];
    q.submit(2, Sqe::default(), Transfer::ToController(16384), &b)
        .unwrap();
    drain(&mut q, &b);
    q.on_bytes(&r2t(2, 0, 0, 8192, &f), &mut b).unwrap();
    drain(&mut q, &b);
    q.on_bytes(&r2t(2, 0, 8192, 4096, &f), &mut b).unwrap();
    assert_eq!(
        q.on_bytes(&r2t(2, 0, 12288, 4096, &f), &mut b),
        Err(HostError::TooManyR2ts { cid: 2, max: 1 })
    );
}

#[test]
fn bad_calls_are_refused_and_leave_the_queue_usable() {
    let mut b = bufs();
    let mut q = ready(&mut b);
    let none = Transfer::None;
    assert_eq!(
        q.submit(ENTRIES, Sqe::default(), none, &b),
        Err(HostError::BadCommandId {
            cid: ENTRIES,
            entries: ENTRIES
        })
    );
    q.submit(0, Sqe::default(), none, &b).unwrap();
    assert!(
        q.submit(0, Sqe::default(), none, &b).is_err(),
        "cid in flight"
    );
    assert_eq!(
        q.submit(1, Sqe::default(), Transfer::FromController(1 << 20), &b),
        Err(HostError::TooLarge {
            len: 1 << 20,
            max: 64 << 10
        })
    );
    for cid in 1..ENTRIES - 1 {
        q.submit(cid, Sqe::default(), none, &b).unwrap();
    }
    assert!(
        q.submit(ENTRIES - 1, Sqe::default(), none, &b).is_err(),
        "an {ENTRIES}-entry queue holds {} commands",
        ENTRIES - 1
    );
    assert!(q.is_ready());
}

/// Everything a vectored queue has to send, gathered from its slices in
/// sends of at most `chunk` bytes and at most `max_iov` slices.
fn drain_vectored(q: &mut HostQueue, bufs: &Bufs, chunk: usize, max_iov: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let mut iov = vec![std::io::IoSlice::new(&[]); max_iov];
        let n = q.tx_iovecs(bufs, &mut iov);
        let got: Vec<u8> = iov[..n].iter().flat_map(|s| s.iter().copied()).collect();
        if got.is_empty() {
            return out;
        }
        let k = got.len().min(chunk);
        out.extend_from_slice(&got[..k]);
        q.tx_sent(k);
    }
}

/// The same commands through a copying and a vectored queue, with and
/// without digests and alignment: in-capsule writes below and above the
/// splice threshold, a read, and a write sent as H2CData for two R2Ts;
/// the vectored queue's bytes, sent in odd pieces, are the copying one's.
#[test]
fn a_vectored_queue_sends_the_bytes_a_copying_one_does() {
    for (digest, cpda) in [(0u8, 0u8), (tcp::DIGEST_HEADER | tcp::DIGEST_DATA, 3)] {
        let mut streams = Vec::new();
        for vectored in [false, true] {
            let mut b = bufs();
            for (i, (out, _)) in b.0.iter_mut().enumerate() {
                *out = (0..20000u32).map(|j| (j * 7 + i as u32) as u8).collect();
            }
            let mut q = HostQueue::new(QueueConfig {
                header_digest: digest != 0,
                data_digest: digest != 0,
                max_r2t: 1,
                ..cfg()
            });
            q.set_vectored(vectored);
            let mut stream = drain(&mut q, &b);
            q.on_bytes(&icresp(digest, cpda, 8192), &mut b).unwrap();
            for (cid, len) in [(0u16, 512u32), (1, 4096), (2, 1024)] {
                let (sqe, xfer) = command::write(1, 0, len, 9);
                q.submit(cid, sqe, xfer, &b).unwrap();
            }
            let (sqe, xfer) = command::read(1, 0, 4096, 9);
            q.submit(3, sqe, xfer, &b).unwrap();
            let (sqe, xfer) = command::write(1, 0, 12288, 9);
            q.submit(4, sqe, xfer, &b).unwrap();
            let f = q.framing();
            q.on_bytes(&r2t(4, 7, 0, 8192, &f), &mut b).unwrap();
            q.on_bytes(&r2t(4, 8, 8192, 4096, &f), &mut b).unwrap();
            if vectored {
                stream.extend(drain_vectored(&mut q, &b, 1000, 3));
            } else {
                stream.extend(drain(&mut q, &b));
            }
            streams.push(stream);
        }
        assert_eq!(streams[0], streams[1], "digest {digest} cpda {cpda}");
        // And the stream is what a controller expects: 5 capsules, then
        // H2CData of 8 KiB (MAXH2CDATA) and 4 KiB, the last flagged.
        let f = Framing {
            header_digest: digest != 0,
            data_digest: digest != 0,
            rx_data_align: 1,
            tx_data_align: (cpda as usize + 1) * 4,
        };
        let ic_len = u32::from_le_bytes(streams[1][4..8].try_into().unwrap()) as usize;
        let pdus = sent(&streams[1][ic_len..], &f);
        assert_eq!(pdus.len(), 7);
        let Pdu::Data { hdr, data, .. } = &pdus[6] else {
            panic!("H2CData last")
        };
        assert_eq!((hdr.data_offset, data.len()), (8192, 4096));
        assert_ne!(hdr.ch.flags & flags::DATA_LAST, 0);
    }
}

/// A target that completes a write before the queue sent its data (a
/// hostile or broken one) gets the data as it was at the completion: the
/// buffer is the caller's again and is not read afterwards.
#[test]
fn a_write_completed_before_its_data_went_out_is_copied_first() {
    let mut b = bufs();
    let mut q = ready(&mut b);
    q.set_vectored(true);
    b.0[2].0 = vec![0xa5; 4096];
    let (sqe, xfer) = command::write(1, 0, 4096, 9);
    q.submit(2, sqe, xfer, &b).unwrap();
    let mut iov = vec![std::io::IoSlice::new(&[]); 4];
    let n = q.tx_iovecs(&b, &mut iov);
    assert_eq!(n, 2, "the capsule's header, then the data from the buffer");
    q.tx_sent(10);
    let f = q.framing();
    q.on_bytes(&resp(2, Status::SUCCESS, &f), &mut b).unwrap();
    assert_eq!(q.completion().unwrap().cqe.cid, 2);
    b.0[2].0.fill(0); // the caller reuses the buffer
    let rest = drain_vectored(&mut q, &b, usize::MAX, 4);
    assert_eq!(rest.len() + 10, 72 + 4096);
    assert!(rest[rest.len() - 4096..].iter().all(|&x| x == 0xa5));
}
