//! The NVMe/RDMA host: one queue as an RDMA connection.
//!
//! [`RdmaQueue::connect`] resolves the target's address and route, builds
//! the endpoint (one registered region: a command capsule buffer, a
//! response buffer and a data buffer per command id) and connects with the
//! NVMe/RDMA private data (queue id, HRQSIZE, HSQSIZE); a reject names the
//! target's reason. Commands go out as one SEND of the SQE (and in-capsule
//! data for small writes on I/O queues, as the Linux host sends them);
//! other data is named by a keyed SGL over the command id's data buffer,
//! which the target reads or writes by RDMA. Responses arrive in receives
//! posted once per command id and re-posted as each is consumed.
//!
//! [`RdmaController`] sets a controller up over an admin queue the way the
//! TCP [`Initiator`](super::Initiator) does (Connect, CC.EN, CSTS.RDY,
//! Identify, Number of Queues) and connects I/O queues to it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use nvme_spec::command::{admin, SglDescriptor, SGL_IN_CAPSULE};
use nvme_spec::fabrics::{self, prop, CNTLID_DYNAMIC};
use nvme_spec::identify::{cns, IdentifyController};
use nvme_spec::rdma::{CmAccept, CmRequest, KeyedSgl, RejectStatus, RECFMT, SGLS_KEYED};
use nvme_spec::{Cqe, Sqe, Status};
use sysapi::rdma::{
    self as verbs, Answer, CmId, Completion, ConnParams, Endpoint, EventChannel, QueueSizes,
};

use super::command::{self, ConnectParams, HostIdentity, CC_ENABLED};
use super::error::InitiatorError;
use super::queue::Transfer;

const SEND: u64 = 1 << 60;
const RECV: u64 = 2 << 60;
const KIND: u64 = 0xF << 60;

fn rdma_err(e: verbs::RdmaError) -> InitiatorError {
    InitiatorError::Unexpected(format!("RDMA: {e}"))
}

/// What one queue is sized for.
#[derive(Debug, Clone, Copy)]
pub struct RdmaQueueConfig {
    /// Queue id (0: admin).
    pub qid: u16,
    /// Submission queue entries (one-based); command ids are
    /// `0..entries - 1`.
    pub entries: u16,
    /// Largest data transfer of one command.
    pub max_data_bytes: u32,
    /// Writes up to this many bytes go in the capsule (I/O queues; 0: never).
    pub in_capsule_max_bytes: u32,
    /// How long connecting and each reply may take.
    pub timeout: Duration,
    /// NUMA node for the queue's buffers, where known.
    pub node: Option<u32>,
}

struct Layout {
    slots: usize,
    capsule: usize,
    data: usize,
    capsule_at: usize,
    resp_at: usize,
    data_at: usize,
    total: usize,
}

impl Layout {
    fn new(c: &RdmaQueueConfig) -> Self {
        let slots = c.entries.max(2) as usize - 1;
        let capsule = 64 + c.in_capsule_max_bytes as usize;
        let data = (c.max_data_bytes as usize).max(4096);
        let capsule_at = 0;
        let resp_at = capsule_at + slots * capsule;
        let data_at = (resp_at + slots * 16).div_ceil(4096) * 4096;
        let total = data_at + slots * data;
        Self {
            slots,
            capsule,
            data,
            capsule_at,
            resp_at,
            data_at,
            total,
        }
    }
}

/// One NVMe/RDMA queue.
pub struct RdmaQueue {
    ep: Endpoint,
    l: Layout,
    cfg: RdmaQueueConfig,
    in_flight: usize,
    wcs: Vec<Completion>,
    /// Sends posted whose completions have not been polled.
    sends_out: usize,
}

impl std::fmt::Debug for RdmaQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaQueue")
            .field("qid", &self.cfg.qid)
            .field("entries", &self.cfg.entries)
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl RdmaQueue {
    /// Connects queue `cfg.qid` to the target at `addr` (RDMA CM
    /// connection only; the Fabrics Connect command follows).
    pub fn connect(addr: SocketAddr, cfg: RdmaQueueConfig) -> Result<Self, InitiatorError> {
        let mut ch = EventChannel::new().map_err(rdma_err)?;
        let id = CmId::new(&ch).map_err(rdma_err)?;
        id.resolve(&mut ch, addr, cfg.timeout).map_err(rdma_err)?;
        let rd_atom = id.max_rd_atom();
        let l = Layout::new(&cfg);
        let sizes = QueueSizes {
            send: l.slots as u32 * 2,
            recv: l.slots as u32,
            region_bytes: l.total,
            node: cfg.node,
        };
        let mut ep = Endpoint::new(id, sizes).map_err(rdma_err)?;
        for i in 0..l.slots {
            ep.post_recv(RECV | i as u64, l.resp_at + i * 16, 16)
                .map_err(rdma_err)?;
        }
        let req = CmRequest {
            recfmt: RECFMT,
            qid: cfg.qid,
            hrqsize: l.slots as u16,
            hsqsize: cfg.entries - 1,
            cntlid: CNTLID_DYNAMIC,
        };
        let params = ConnParams {
            responder_resources: rd_atom,
            initiator_depth: 0,
            rnr_retry: 7,
        };
        match ep
            .connect(&req.encode(), params, cfg.timeout)
            .map_err(|e| InitiatorError::Unexpected(format!("RDMA connect to {addr}: {e}")))?
        {
            Answer::Accepted(private) => {
                if let Some(a) = CmAccept::decode(&private) {
                    if a.crqsize != 0 && a.crqsize < cfg.entries - 1 {
                        return Err(InitiatorError::Unexpected(format!(
                            "{addr} accepted queue {} with CRQSIZE {} < the {} commands asked for",
                            cfg.qid,
                            a.crqsize,
                            cfg.entries - 1
                        )));
                    }
                }
            }
            Answer::Rejected {
                status,
                private_data,
            } => {
                let why = match RejectStatus::decode(&private_data) {
                    Some(s) => format!("{} (NVMe/RDMA status {})", s.describe(), s as u16),
                    // IB CM reject reason 8: invalid service ID.
                    None if status == 8 => {
                        "nothing listens there over RDMA (RDMA CM reject reason 8, no such service)"
                            .into()
                    }
                    None => format!("RDMA CM reject reason {status}"),
                };
                return Err(InitiatorError::Unexpected(format!(
                    "{addr} rejected NVMe/RDMA queue {} of {} entries: {why}",
                    cfg.qid, cfg.entries
                )));
            }
        }
        Ok(Self {
            ep,
            l,
            cfg,
            in_flight: 0,
            wcs: Vec::with_capacity(64),
            sends_out: 0,
        })
    }

    /// Command ids available (`entries - 1`).
    pub fn slots(&self) -> usize {
        self.l.slots
    }

    /// Commands sent whose responses have not come.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Command id `cid`'s data buffer (write data goes in before
    /// [`Self::submit`]; read data is there after its completion).
    pub fn data(&self, cid: u16, len: usize) -> &[u8] {
        let at = self.l.data_at + cid as usize * self.l.data;
        &self.ep.region().bytes()[at..at + len.min(self.l.data)]
    }

    /// Command id `cid`'s data buffer, to fill.
    pub fn data_mut(&mut self, cid: u16, len: usize) -> &mut [u8] {
        let at = self.l.data_at + cid as usize * self.l.data;
        let n = len.min(self.l.data);
        &mut self.ep.region_mut().bytes_mut()[at..at + n]
    }

    /// Sends `sqe` as command id `cid`, moving `xfer` bytes through the
    /// id's data buffer (write data already there).
    pub fn submit(&mut self, mut sqe: Sqe, cid: u16, xfer: Transfer) -> Result<(), InitiatorError> {
        if cid as usize >= self.l.slots {
            return Err(InitiatorError::Unexpected(format!(
                "command id {cid} past the queue's {} slots",
                self.l.slots
            )));
        }
        let len = xfer.len_bytes();
        if len as usize > self.l.data {
            return Err(InitiatorError::Unexpected(format!(
                "a {len}-byte transfer is larger than the queue's {}-byte buffers",
                self.l.data
            )));
        }
        sqe.cid = cid;
        // PSDT: SGLs.
        sqe.flags = (sqe.flags & 0x3F) | 0x40;
        let data_at = self.l.data_at + cid as usize * self.l.data;
        let cap_at = self.l.capsule_at + cid as usize * self.l.capsule;
        let in_capsule = matches!(xfer, Transfer::ToController(_))
            && self.cfg.qid > 0
            && len > 0
            && len <= self.cfg.in_capsule_max_bytes;
        let mut cap_len = 64;
        if in_capsule {
            sqe.dptr = SglDescriptor {
                addr: 0,
                length: len,
                rsvd: [0; 3],
                type_byte: SGL_IN_CAPSULE,
            };
            let r = self.ep.region_mut().bytes_mut();
            r.copy_within(data_at..data_at + len as usize, cap_at + 64);
            cap_len += len as usize;
        } else {
            let r = self.ep.region();
            sqe.dptr = KeyedSgl {
                addr: if len == 0 {
                    0
                } else {
                    r.addr() + data_at as u64
                },
                length: len,
                key: if len == 0 { 0 } else { r.rkey() },
                invalidate: false,
            }
            .to_dptr();
        }
        self.ep.region_mut().bytes_mut()[cap_at..cap_at + 64].copy_from_slice(&sqe.encode());
        // Send completions are polled to free send queue entries; a capsule
        // buffer is reused only after its response arrived.
        self.ep
            .post_send(SEND | u64::from(cid), cap_at, cap_len as u32, None, true)
            .map_err(rdma_err)?;
        self.sends_out += 1;
        self.in_flight += 1;
        Ok(())
    }

    /// Moves responses that arrived into `out` without waiting.
    pub fn poll(&mut self, out: &mut Vec<Cqe>) -> Result<usize, InitiatorError> {
        let mut wcs = std::mem::take(&mut self.wcs);
        let r = self.poll_into(&mut wcs, out);
        self.wcs = wcs;
        r
    }

    fn poll_into(
        &mut self,
        wcs: &mut Vec<Completion>,
        out: &mut Vec<Cqe>,
    ) -> Result<usize, InitiatorError> {
        let mut got = 0;
        loop {
            if self.ep.poll(wcs).map_err(rdma_err)? == 0 {
                return Ok(got);
            }
            got += self.handle(wcs, out)?;
        }
    }

    /// Waits up to `timeout` for at least one response; returns how many
    /// were moved into `out` (0: the time passed).
    pub fn wait(&mut self, out: &mut Vec<Cqe>, timeout: Duration) -> Result<usize, InitiatorError> {
        let deadline = Instant::now() + timeout;
        loop {
            let n = self.poll(out)?;
            if n > 0 {
                return Ok(n);
            }
            let mut wcs = std::mem::take(&mut self.wcs);
            let armed = self.ep.arm(&mut wcs).map_err(rdma_err);
            self.wcs = wcs;
            if armed? > 0 {
                // Completions came while arming: handle them now.
                let mut wcs = std::mem::take(&mut self.wcs);
                let r = self.handle(&mut wcs, out);
                self.wcs = wcs;
                let n = r?;
                if n > 0 {
                    return Ok(n);
                }
                continue;
            }
            if let Some(e) = self.ep.try_event().map_err(rdma_err)? {
                if e.kind == verbs::event::DISCONNECTED || e.kind == verbs::event::DEVICE_REMOVAL {
                    return Err(InitiatorError::Unexpected(format!(
                        "the target closed the NVMe/RDMA queue {} ({})",
                        self.cfg.qid,
                        verbs::event_name(e.kind)
                    )));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(0);
            }
            verbs::poll_in(&self.ep.fds(), left).map_err(rdma_err)?;
        }
    }

    fn handle(
        &mut self,
        wcs: &mut [Completion],
        out: &mut Vec<Cqe>,
    ) -> Result<usize, InitiatorError> {
        let mut got = 0;
        for w in wcs.iter() {
            if !w.ok() {
                return Err(InitiatorError::Unexpected(format!(
                    "RDMA {} failed: {} (the target went away or refused the transfer)",
                    if w.wr_id & KIND == SEND {
                        "send"
                    } else {
                        "receive"
                    },
                    w.status_name()
                )));
            }
            match w.wr_id & KIND {
                SEND => self.sends_out = self.sends_out.saturating_sub(1),
                RECV => {
                    let i = (w.wr_id & !KIND) as usize;
                    let at = self.l.resp_at + i * 16;
                    let cqe = Cqe::decode(&self.ep.region().bytes()[at..at + 16]);
                    self.ep.post_recv(w.wr_id, at, 16).map_err(rdma_err)?;
                    self.in_flight = self.in_flight.saturating_sub(1);
                    out.push(cqe);
                    got += 1;
                }
                _ => {}
            }
        }
        Ok(got)
    }

    /// Sends one command on id 0 and waits for its response; read data is
    /// returned. For set-up, with nothing else in flight.
    pub fn exec(
        &mut self,
        sqe: Sqe,
        write: &[u8],
        xfer: Transfer,
    ) -> Result<(Cqe, Vec<u8>), InitiatorError> {
        if !write.is_empty() {
            self.data_mut(0, write.len()).copy_from_slice(write);
        }
        let opcode = sqe.opcode;
        self.submit(sqe, 0, xfer)?;
        let mut out = Vec::new();
        let deadline = Instant::now() + self.cfg.timeout;
        while out.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.wait(&mut out, left)? == 0 && Instant::now() >= deadline {
                return Err(InitiatorError::Unexpected(format!(
                    "no response to command {opcode:#04x} within {:?}",
                    self.cfg.timeout
                )));
            }
        }
        let cqe = out[0];
        if !cqe.status().is_success() {
            return Err(InitiatorError::Command {
                opcode,
                status: cqe.status(),
            });
        }
        let data = match xfer {
            Transfer::FromController(n) => self.data(0, n as usize).to_vec(),
            _ => Vec::new(),
        };
        Ok((cqe, data))
    }

    /// The Fabrics Connect of this queue; returns the controller id.
    pub fn fabrics_connect(
        &mut self,
        host: &HostIdentity,
        subnqn: &str,
        cntlid: u16,
        kato_ms: u32,
    ) -> Result<u16, InitiatorError> {
        let (sqe, data) = command::connect(
            host,
            subnqn,
            &ConnectParams {
                qid: self.cfg.qid,
                cntlid,
                entries: self.cfg.entries,
                kato_ms,
                disable_sq_flow: false,
            },
        );
        let (cqe, _) = self.exec(sqe, &data, Transfer::ToController(data.len() as u32))?;
        Ok(cqe.result as u16)
    }

    /// Disconnects (the target sees the queue go).
    pub fn disconnect(&self) {
        self.ep.disconnect();
    }
}

/// A controller set up over an NVMe/RDMA admin queue.
#[derive(Debug)]
pub struct RdmaController {
    /// The admin queue (keep it: the controller lives as long as it).
    pub admin: RdmaQueue,
    /// Controller id.
    pub cntlid: u16,
    /// Identify Controller.
    pub id: IdentifyController,
    /// CAP.MQES + 1: most entries of an I/O queue.
    pub max_queue_entries: u32,
    /// The host's identity.
    pub host: HostIdentity,
    /// The subsystem.
    pub subnqn: String,
    /// The target's address.
    pub addr: SocketAddr,
}

impl RdmaController {
    /// Connects an admin queue to `subnqn` at `addr`, enables the
    /// controller and reads Identify Controller.
    pub fn connect(
        addr: SocketAddr,
        subnqn: &str,
        host: HostIdentity,
        timeout: Duration,
    ) -> Result<Self, InitiatorError> {
        let mut admin = RdmaQueue::connect(
            addr,
            RdmaQueueConfig {
                qid: 0,
                entries: 32,
                max_data_bytes: 64 << 10,
                in_capsule_max_bytes: 0,
                timeout,
                node: None,
            },
        )?;
        let cntlid = admin.fabrics_connect(&host, subnqn, CNTLID_DYNAMIC, 0)?;
        let (cqe, _) = admin.exec(command::property_get(prop::CAP, true), &[], Transfer::None)?;
        let cap = u64::from(cqe.result) | (u64::from(cqe.dw1) << 32);
        admin.exec(
            command::property_set(prop::CC, CC_ENABLED),
            &[],
            Transfer::None,
        )?;
        let deadline = Instant::now() + timeout;
        loop {
            let (c, _) = admin.exec(
                command::property_get(prop::CSTS, false),
                &[],
                Transfer::None,
            )?;
            if c.result & fabrics::CSTS_READY != 0 {
                break;
            }
            if Instant::now() >= deadline {
                return Err(InitiatorError::Unexpected(format!(
                    "CSTS {:#x} not ready within {timeout:?} of enable",
                    c.result
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let (sqe, xfer) = command::identify(cns::CONTROLLER, 0);
        let (_, data) = admin.exec(sqe, &[], xfer)?;
        let id = IdentifyController::decode(&data);
        if id.sgls & SGLS_KEYED == 0 {
            return Err(InitiatorError::Unexpected(format!(
                "{addr}: the controller does not take keyed SGL data blocks (SGLS {:#x}), which NVMe/RDMA needs",
                id.sgls
            )));
        }
        Ok(Self {
            admin,
            cntlid,
            id,
            max_queue_entries: (cap & 0xFFFF) as u32 + 1,
            host,
            subnqn: subnqn.to_string(),
            addr,
        })
    }

    /// Largest transfer of one command (MDTS; 1 MiB where it sets none).
    pub fn max_transfer_bytes(&self) -> u32 {
        match self.id.mdts {
            0 => 1 << 20,
            m => 4096u32.saturating_mul(1u32 << u32::from(m).min(18)),
        }
    }

    /// In-capsule data an I/O queue may carry (IOCCSZ).
    pub fn in_capsule_bytes(&self) -> u32 {
        (self.id.ioccsz * 16).saturating_sub(64)
    }

    /// Asks for `n` I/O queues (Set Features Number of Queues); returns
    /// how many were granted.
    pub fn set_queues(&mut self, n: u16) -> Result<u16, InitiatorError> {
        let v = u32::from(n - 1) | (u32::from(n - 1) << 16);
        let (c, _) = self.admin.exec(
            command::set_features(nvme_spec::features::fid::NUM_QUEUES, v),
            &[],
            Transfer::None,
        )?;
        Ok(((c.result & 0xFFFF) as u16 + 1).min(((c.result >> 16) as u16) + 1))
    }

    /// Identify Namespace `nsid`: (size in bytes, LBA size); an inactive
    /// namespace is an error naming it.
    pub fn namespace(&mut self, nsid: u32) -> Result<(u64, u32), InitiatorError> {
        let (sqe, xfer) = command::identify(cns::NAMESPACE, nsid);
        let (_, data) = self.admin.exec(sqe, &[], xfer)?;
        let ns = nvme_spec::identify::IdentifyNamespace::decode(&data);
        if ns.nsze == 0 {
            return Err(InitiatorError::Command {
                opcode: admin::IDENTIFY,
                status: Status::INVALID_NS,
            });
        }
        let lba = 1u32 << ns.lbads.clamp(9, 16);
        Ok((ns.nsze * u64::from(lba), lba))
    }

    /// Connects I/O queue `qid` of `entries` entries for transfers of up
    /// to `max_data_bytes`.
    pub fn io_queue(
        &self,
        qid: u16,
        entries: u16,
        max_data_bytes: u32,
        node: Option<u32>,
    ) -> Result<RdmaQueue, InitiatorError> {
        let mut q = RdmaQueue::connect(
            self.addr,
            RdmaQueueConfig {
                qid,
                entries,
                max_data_bytes,
                in_capsule_max_bytes: self.in_capsule_bytes().min(max_data_bytes),
                timeout: self.admin.cfg.timeout,
                node,
            },
        )?;
        q.fabrics_connect(&self.host, &self.subnqn, self.cntlid, 0)?;
        Ok(q)
    }
}
