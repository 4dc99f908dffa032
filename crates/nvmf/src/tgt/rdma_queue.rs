//! One NVMe/RDMA queue of the target, without I/O: the RDMA transport
//! binding laid over the same [`Connection`] state machine the TCP queues
//! run (subsystems, controllers, handlers, request states, ANA, auth and
//! counters are shared; only the transport differs).
//!
//! In: a received command capsule (SQE and in-capsule data), an RDMA READ
//! or WRITE completed. Out: [`Post`]s for the driver to make: RDMA READ of
//! host data a keyed SGL names, RDMA WRITE of read data into host memory,
//! SEND of a response capsule.
//!
//! The mapping: a capsule whose data pointer is a keyed SGL data block
//! reaches the connection with a transport data block of the same length;
//! the connection's R2T for it becomes an RDMA READ of that part of the
//! host's buffer, whose completion is fed back as the H2CData it stands
//! for; its C2HData becomes an RDMA WRITE; its response capsule a SEND
//! (with Invalidate when the host asked for it). Each command's transfers
//! run one at a time, in order, through one staging buffer of the driver's
//! registered memory; different commands run side by side. In-capsule data
//! goes to the connection as it came.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use nvme_spec::command::{SglDescriptor, SGL_TRANSPORT};
use nvme_spec::rdma::KeyedSgl;
use nvme_spec::tcp::{self, flags, pdu_type, Direction, Framing, Pdu};
use nvme_spec::{Cqe, Sqe};

use super::queue::{Connection, Phase};

/// What the driver posts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Post {
    /// RDMA READ `len` bytes of host memory into staging buffer `stage`;
    /// report the completion with [`RdmaQueue::read_done`] for `cid`.
    Read {
        /// Command id (the work request names it).
        cid: u16,
        /// Staging buffer.
        stage: u32,
        /// Bytes.
        len: u32,
        /// Host address.
        raddr: u64,
        /// Host key.
        rkey: u32,
    },
    /// Copy `data` into staging buffer `stage` and RDMA WRITE it to host
    /// memory; report the completion with [`RdmaQueue::write_done`].
    Write {
        /// Command id.
        cid: u16,
        /// Staging buffer.
        stage: u32,
        /// The data.
        data: Vec<u8>,
        /// Host address.
        raddr: u64,
        /// Host key.
        rkey: u32,
    },
    /// SEND this response capsule (a 16-byte CQE), invalidating the host's
    /// key where it asked.
    Send {
        /// The CQE.
        cqe: [u8; 16],
        /// Key to invalidate with the send.
        invalidate: Option<u32>,
    },
}

#[derive(Debug)]
enum Out {
    Write {
        off: u32,
        data: Vec<u8>,
        success: bool,
    },
    Read {
        ttag: u16,
        off: u32,
        len: u32,
    },
    Resp(Cqe),
}

#[derive(Debug, Default)]
struct Cmd {
    sgl: Option<KeyedSgl>,
    stage: Option<u32>,
    pending: VecDeque<Out>,
    busy: bool,
    reading: Option<(u16, u32, u32)>,
}

/// One queue.
#[derive(Debug)]
pub struct RdmaQueue {
    /// The queue state machine shared with NVMe/TCP.
    pub conn: Connection,
    stage_bytes: u32,
    cmds: HashMap<u16, Cmd>,
    free_stages: Vec<u32>,
    posts: VecDeque<Post>,
    closing: Option<String>,
}

impl RdmaQueue {
    /// A queue over `conn` (a fresh connection) with `stages` staging
    /// buffers of `stage_bytes` each (at least the target's largest R2T
    /// and C2HData chunk).
    pub fn new(mut conn: Connection, stages: u32, stage_bytes: u32) -> Self {
        // The ICReq an RDMA queue has no use for: no digests, no alignment,
        // one R2T (RDMA READ) outstanding per command.
        let mut ic = Vec::new();
        tcp::frame(
            &mut ic,
            pdu_type::IC_REQ,
            0,
            &tcp::icreq_body(0, 0, 0),
            &[],
            &Framing::INITIAL,
        );
        conn.on_bytes(&ic);
        let _icresp = conn.take_tx();
        Self {
            conn,
            stage_bytes,
            cmds: HashMap::new(),
            free_stages: (0..stages).rev().collect(),
            posts: VecDeque::new(),
            closing: None,
        }
    }

    /// Why the queue must close (disconnect once the posts are made).
    pub fn closing(&self) -> Option<&str> {
        self.closing
            .as_deref()
            .or(self.conn.close_reason.as_deref())
            .or((self.conn.phase() == Phase::Closing).then_some("closing"))
    }

    fn close(&mut self, why: String) {
        if self.closing.is_none() {
            self.closing = Some(why);
        }
    }

    /// The next post to make.
    pub fn next_post(&mut self) -> Option<Post> {
        self.posts.pop_front()
    }

    /// A command capsule arrived (`b`: SQE and in-capsule data).
    pub fn on_capsule(&mut self, b: &[u8]) {
        if b.len() < Sqe::SIZE {
            return self.close(format!(
                "command capsule of {} bytes, shorter than an SQE",
                b.len()
            ));
        }
        let mut sqe = Sqe::decode(&b[..Sqe::SIZE]);
        let data = &b[Sqe::SIZE..];
        let mut cmd = Cmd::default();
        if let Some(k) = KeyedSgl::from_dptr(&sqe.dptr) {
            // Each RDMA READ or WRITE names the SGL's address plus an
            // offset into it: the whole SGL must be addressable.
            if k.addr
                .checked_add(u64::from(k.length.saturating_sub(1)))
                .is_none()
            {
                return self.close(format!(
                    "command {}: a keyed SGL of {} bytes at {:#x} runs past the end of the \
                     address space",
                    sqe.cid, k.length, k.addr
                ));
            }
            if k.length > 0 {
                match self.free_stages.pop() {
                    Some(s) => cmd.stage = Some(s),
                    None => {
                        return self.close("more commands outstanding than the queue size".into())
                    }
                }
            }
            cmd.sgl = Some(k);
            sqe.dptr = SglDescriptor {
                addr: 0,
                length: k.length,
                rsvd: [0; 3],
                type_byte: SGL_TRANSPORT,
            };
        }
        if let Some(old) = self.cmds.insert(sqe.cid, cmd) {
            // A command id still in use: the connection answers with a
            // conflict for the new one; the old one's transfers go on.
            let new = self.cmds.insert(sqe.cid, old).expect("just inserted");
            if let Some(s) = new.stage {
                self.free_stages.push(s);
            }
        }
        self.conn.clock = Instant::now();
        self.conn.on_capsule(sqe, data, true);
        self.settle();
    }

    /// The staging buffer of `cid`'s RDMA READ in flight and its length.
    pub fn reading_stage(&self, cid: u16) -> Option<(u32, u32)> {
        let c = self.cmds.get(&cid)?;
        Some((c.stage?, c.reading?.2))
    }

    /// The RDMA READ for `cid` completed; `data` is its staging buffer,
    /// at least as long as the read ([`Self::reading_stage`]).
    pub fn read_done(&mut self, cid: u16, data: &[u8]) {
        let Some(c) = self.cmds.get_mut(&cid) else {
            return;
        };
        c.busy = false;
        let Some((ttag, off, len)) = c.reading.take() else {
            return;
        };
        let hdr = tcp::DataHeader {
            cccid: cid,
            ttag,
            data_offset: off,
            data_length: len,
            ..Default::default()
        };
        self.conn.clock = Instant::now();
        self.conn.on_h2c_data(hdr, &data[..len as usize], true);
        self.settle();
        self.pump(cid);
    }

    /// The RDMA WRITE for `cid` completed.
    pub fn write_done(&mut self, cid: u16) {
        if let Some(c) = self.cmds.get_mut(&cid) {
            c.busy = false;
        }
        self.pump(cid);
    }

    /// Periodic work (keep alive, deadlines, parked commands); false when
    /// the queue must close.
    pub fn tick(&mut self, now: Instant) -> bool {
        let alive = self.conn.tick(now);
        self.settle();
        alive && self.closing().is_none()
    }

    /// Runs queued storage and turns the connection's output into posts.
    pub fn settle(&mut self) {
        loop {
            self.conn.run_storage_blocking();
            let out = self.conn.take_tx();
            if out.is_empty() {
                break;
            }
            self.absorb(&out);
        }
    }

    fn absorb(&mut self, mut b: &[u8]) {
        let framing = Framing::INITIAL;
        let mut touched = Vec::new();
        while b.len() >= tcp::CommonHeader::SIZE {
            let plen = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")) as usize;
            if plen < tcp::CommonHeader::SIZE || plen > b.len() {
                self.close("internal: the connection's output is not whole PDUs".into());
                return;
            }
            let pdu = match tcp::decode(&b[..plen], Direction::ControllerToHost, &framing) {
                Ok(p) => p,
                Err(e) => {
                    self.close(format!("internal: output PDU does not decode: {}", e.what));
                    return;
                }
            };
            match pdu {
                Pdu::IcResp(_) => {}
                // A capsule that reused the id of a command in flight: its
                // answer goes now and is not the command's (whose transfers
                // and response go on, its key not invalidated).
                Pdu::CapsuleResp(cqe) if cqe.status() == nvme_spec::Status::CID_CONFLICT => {
                    self.posts.push_back(Post::Send {
                        cqe: cqe.encode(),
                        invalidate: None,
                    });
                }
                Pdu::CapsuleResp(cqe) => {
                    self.cmds
                        .entry(cqe.cid)
                        .or_default()
                        .pending
                        .push_back(Out::Resp(cqe));
                    touched.push(cqe.cid);
                }
                Pdu::Data { hdr, data, .. } => {
                    let success = hdr.ch.flags & flags::DATA_SUCCESS != 0;
                    self.cmds
                        .entry(hdr.cccid)
                        .or_default()
                        .pending
                        .push_back(Out::Write {
                            off: hdr.data_offset,
                            data: data.to_vec(),
                            success,
                        });
                    touched.push(hdr.cccid);
                }
                Pdu::R2t(hdr) => {
                    self.cmds
                        .entry(hdr.cccid)
                        .or_default()
                        .pending
                        .push_back(Out::Read {
                            ttag: hdr.ttag,
                            off: hdr.data_offset,
                            len: hdr.data_length,
                        });
                    touched.push(hdr.cccid);
                }
                Pdu::TermReq { hdr, .. } => {
                    let why = self
                        .conn
                        .close_reason
                        .clone()
                        .unwrap_or_else(|| format!("protocol error fes={:#x}", hdr.fes));
                    self.close(why);
                }
                _ => {}
            }
            b = &b[plen..];
        }
        for cid in touched {
            self.pump(cid);
        }
    }

    fn pump(&mut self, cid: u16) {
        loop {
            let Some(c) = self.cmds.get_mut(&cid) else {
                return;
            };
            if c.busy {
                return;
            }
            let Some(out) = c.pending.pop_front() else {
                return;
            };
            match out {
                Out::Write { off, data, success } => {
                    let (Some(k), Some(stage)) = (c.sgl, c.stage) else {
                        return self
                            .close(format!("read data for command {cid} without a keyed SGL"));
                    };
                    if u64::from(off) + data.len() as u64 > u64::from(k.length)
                        || data.len() > self.stage_bytes as usize
                    {
                        return self.close(format!("read data for command {cid} past its SGL"));
                    }
                    if success {
                        // No SUCCESS flag in NVMe/RDMA: the response follows
                        // the data as a capsule of its own.
                        let mut cqe = Cqe {
                            sqhd: 0xFFFF,
                            sqid: self.conn.qid().unwrap_or(0),
                            cid,
                            ..Default::default()
                        };
                        cqe.set_status(nvme_spec::Status::SUCCESS);
                        c.pending.push_front(Out::Resp(cqe));
                    }
                    c.busy = true;
                    self.posts.push_back(Post::Write {
                        cid,
                        stage,
                        data,
                        raddr: k.addr + u64::from(off),
                        rkey: k.key,
                    });
                }
                Out::Read { ttag, off, len } => {
                    let (Some(k), Some(stage)) = (c.sgl, c.stage) else {
                        return self
                            .close(format!("write data for command {cid} without a keyed SGL"));
                    };
                    if len > self.stage_bytes
                        || u64::from(off) + u64::from(len) > u64::from(k.length)
                    {
                        return self.close(format!("write data for command {cid} past its SGL"));
                    }
                    c.busy = true;
                    c.reading = Some((ttag, off, len));
                    self.posts.push_back(Post::Read {
                        cid,
                        stage,
                        len,
                        raddr: k.addr + u64::from(off),
                        rkey: k.key,
                    });
                }
                Out::Resp(cqe) => {
                    let c = self.cmds.remove(&cid).expect("looked up above");
                    if let Some(s) = c.stage {
                        self.free_stages.push(s);
                    }
                    self.posts.push_back(Post::Send {
                        cqe: cqe.encode(),
                        invalidate: c.sgl.filter(|k| k.invalidate).map(|k| k.key),
                    });
                    return;
                }
            }
        }
    }
}
