//! A blocking NVMe/TCP host: a socket driver over one [`HostQueue`].
//!
//! Used by the target's tests (over loopback) and by the engine's `tcp`
//! backend to set a controller up (admin queue, Identify, the I/O queue's
//! ICReq and Connect) before [`Initiator::into_parts`] hands the I/O queue
//! and its socket to the backend's own non-blocking loop. Everything of the
//! protocol is the queue's; this driver writes what the queue has to send,
//! reads exactly the bytes it misses (one PDU at a time, so raw reads by a
//! test never find half a PDU taken), and keeps each command's data in a
//! `Vec` (it allocates per command; the queue does not).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use nvme_spec::command::io;
use nvme_spec::fabrics::{self, prop};
use nvme_spec::tcp::{self, pdu_type, Direction, Framing, Pdu};
use nvme_spec::{Cqe, Sqe, Status};

use super::command::{self, ConnectParams, HostIdentity, CC_ENABLED};
use super::error::InitiatorError;
use super::queue::{DataBuffers, HostQueue, QueueConfig, Transfer};
use super::stream::Stream;

pub use super::command::rw_sqe;

/// Connection options.
#[derive(Debug, Clone)]
pub struct InitiatorOptions {
    /// Host NQN.
    pub hostnqn: String,
    /// Host identifier.
    pub hostid: [u8; 16],
    /// Ask for header digests.
    pub header_digest: bool,
    /// Ask for data digests.
    pub data_digest: bool,
    /// Host PDU data alignment, zero-based dwords.
    pub hpda: u8,
    /// Keep alive timeout for admin connects, ms.
    pub kato_ms: u32,
    /// Submission queue entries to ask for.
    pub queue_entries: u16,
    /// Disable SQ flow control (target may then use C2HData SUCCESS).
    pub disable_sqflow: bool,
    /// Writes up to this many bytes go in the capsule; larger ones use R2T.
    pub in_capsule_max_bytes: u32,
    /// MAXR2T offered in ICReq: outstanding R2Ts per command, zero-based.
    pub max_r2t: u32,
    /// Largest transfer of one command: sizes the queue's buffers.
    pub max_data_bytes: u32,
    /// Socket read timeout.
    pub timeout: Duration,
    /// DH-HMAC-CHAP secrets, for targets that ask the host to
    /// authenticate.
    pub dhchap: Option<std::sync::Arc<super::auth::HostSecrets>>,
    /// The configured TLS PSK: every queue then runs over TLS 1.3.
    pub tls: Option<std::sync::Arc<crate::tls::ConfiguredPsk>>,
}

impl Default for InitiatorOptions {
    fn default() -> Self {
        Self {
            hostnqn: super::identity::FALLBACK_HOSTNQN.into(),
            hostid: [1; 16],
            header_digest: false,
            data_digest: false,
            hpda: 0,
            kato_ms: 5000,
            queue_entries: 32,
            disable_sqflow: false,
            in_capsule_max_bytes: 8192,
            max_r2t: 0,
            max_data_bytes: 4 << 20,
            timeout: Duration::from_secs(10),
            dhchap: None,
            tls: None,
        }
    }
}

impl InitiatorOptions {
    /// The queue these options ask for.
    pub fn queue_config(&self) -> QueueConfig {
        QueueConfig {
            entries: self.queue_entries,
            max_data_bytes: self.max_data_bytes,
            in_capsule_max_bytes: self.in_capsule_max_bytes,
            header_digest: self.header_digest,
            data_digest: self.data_digest,
            hpda: self.hpda,
            max_r2t: self.max_r2t,
        }
    }

    /// The host these options name.
    pub fn identity(&self) -> HostIdentity {
        HostIdentity {
            hostnqn: self.hostnqn.clone(),
            hostid: self.hostid,
        }
    }
}

/// A completed command: its CQE and any data returned.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The completion entry (synthesised when C2HData carried SUCCESS).
    pub cqe: Cqe,
    /// Data returned.
    pub data: Vec<u8>,
}

/// Each command id's data while it is in flight.
#[derive(Debug, Default)]
struct Buffers(Vec<(Vec<u8>, Vec<u8>)>);

impl DataBuffers for Buffers {
    fn outgoing(&self, cid: u16) -> &[u8] {
        &self.0[cid as usize].0
    }
    fn incoming(&mut self, cid: u16) -> &mut [u8] {
        &mut self.0[cid as usize].1
    }
}

/// One connected queue.
#[derive(Debug)]
pub struct Initiator {
    stream: Stream,
    queue: HostQueue,
    bufs: Buffers,
    next_cid: u16,
    /// MAXH2CDATA announced by the controller.
    pub maxh2cdata: u32,
    /// Queue id once connected.
    pub qid: u16,
    /// Controller id once connected.
    pub cntlid: u16,
    /// What DH-HMAC-CHAP settled on, when the target asked for it.
    pub negotiated: Option<super::auth::Negotiated>,
    opts: InitiatorOptions,
}

impl super::auth::AuthQueue for Initiator {
    fn auth_command(
        &mut self,
        sqe: Sqe,
        data: &[u8],
        read_len: u32,
    ) -> Result<Vec<u8>, InitiatorError> {
        self.command(sqe, data, read_len).map(|c| c.data)
    }
}

impl Initiator {
    /// TCP connect plus ICReq/ICResp (plain text: TLS needs the
    /// subsystem's NQN, which [`Initiator::connect_admin`] and
    /// [`Initiator::connect_io`] know).
    pub fn open(addr: SocketAddr, opts: &InitiatorOptions) -> Result<Self, InitiatorError> {
        Self::open_to(addr, None, opts)
    }

    /// TCP connect, the TLS handshake when `opts.tls` holds a key (its
    /// PSK identity names `subnqn`), then ICReq/ICResp.
    fn open_to(
        addr: SocketAddr,
        subnqn: Option<&str>,
        opts: &InitiatorOptions,
    ) -> Result<Self, InitiatorError> {
        let tcp = TcpStream::connect_timeout(&addr, opts.timeout)?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(opts.timeout))?;
        tcp.set_write_timeout(Some(opts.timeout))?;
        let stream = match (&opts.tls, subnqn) {
            (None, _) => Stream::Plain(tcp),
            (Some(key), Some(subnqn)) => Stream::Tls(
                crate::tls::ossl::connect(tcp, key, &opts.hostnqn, subnqn).map_err(
                    |e| match e {
                        crate::tls::ossl::TlsError::Library(e) => InitiatorError::Library(e),
                        e => InitiatorError::Tls(format!("{addr}: {e}")),
                    },
                )?,
            ),
            (Some(_), None) => {
                return Err(InitiatorError::Tls(
                    "a TLS connection names its subsystem: use connect_admin or connect_io".into(),
                ))
            }
        };
        Self::over(stream, opts)
    }

    /// ICReq/ICResp over a stream the caller connected (and, for TLS,
    /// handshook).
    pub fn over(stream: Stream, opts: &InitiatorOptions) -> Result<Self, InitiatorError> {
        let entries = opts.queue_entries as usize;
        let mut me = Self {
            stream,
            queue: HostQueue::new(opts.queue_config()),
            bufs: Buffers((0..entries).map(|_| Default::default()).collect()),
            next_cid: 1,
            maxh2cdata: 0,
            qid: 0,
            cntlid: 0,
            negotiated: None,
            opts: opts.clone(),
        };
        me.flush()?;
        while !me.queue.is_ready() {
            me.receive_pdu()?;
        }
        me.maxh2cdata = me.queue.maxh2cdata();
        Ok(me)
    }

    /// Opens an admin queue and connects to `subnqn` (dynamic controller).
    pub fn connect_admin(
        addr: SocketAddr,
        subnqn: &str,
        opts: &InitiatorOptions,
    ) -> Result<Self, InitiatorError> {
        let mut me = Self::open_to(addr, Some(subnqn), opts)?;
        me.fabrics_connect(subnqn, 0, fabrics::CNTLID_DYNAMIC)?;
        Ok(me)
    }

    /// Opens I/O queue `qid` of controller `cntlid`.
    pub fn connect_io(
        addr: SocketAddr,
        subnqn: &str,
        cntlid: u16,
        qid: u16,
        opts: &InitiatorOptions,
    ) -> Result<Self, InitiatorError> {
        let mut me = Self::open_to(addr, Some(subnqn), opts)?;
        me.fabrics_connect(subnqn, qid, cntlid)?;
        Ok(me)
    }

    /// Sends Connect; returns the controller id.
    pub fn fabrics_connect(
        &mut self,
        subnqn: &str,
        qid: u16,
        cntlid: u16,
    ) -> Result<u16, InitiatorError> {
        let p = ConnectParams {
            qid,
            cntlid,
            entries: self.opts.queue_entries,
            kato_ms: self.opts.kato_ms,
            disable_sq_flow: self.opts.disable_sqflow,
        };
        let (sqe, data) = command::connect(&self.opts.identity(), subnqn, &p);
        let c = self.command(sqe, &data, 0)?;
        self.qid = qid;
        self.cntlid = (c.cqe.result & 0xFFFF) as u16;
        if c.cqe.result & nvme_spec::auth::CONNECT_AUTHREQ_ATR != 0 {
            let Some(keys) = self.opts.dhchap.clone() else {
                return Err(InitiatorError::Auth(format!(
                    "{subnqn} requires this host ({}) to authenticate and no DH-HMAC-CHAP secret was given",
                    self.opts.hostnqn
                )));
            };
            let hostnqn = self.opts.hostnqn.clone();
            self.negotiated = Some(super::auth::authenticate(
                self, &hostnqn, subnqn, &keys, qid,
            )?);
        }
        Ok(self.cntlid)
    }

    /// Like [`Initiator::submit`], but a non-success status is an error.
    pub fn command(
        &mut self,
        sqe: Sqe,
        data_out: &[u8],
        read_len: u32,
    ) -> Result<Completion, InitiatorError> {
        let c = self.submit(sqe, data_out, read_len)?;
        let st = c.cqe.status();
        if !st.is_success() {
            return Err(InitiatorError::Command {
                opcode: sqe.opcode,
                status: st,
            });
        }
        Ok(c)
    }

    /// Sends one command (with `data_out` to write, or expecting up to
    /// `read_len` bytes back) and waits for its completion. Needs an idle
    /// queue; use [`Initiator::post`] and [`Initiator::reap`] to pipeline.
    pub fn submit(
        &mut self,
        sqe: Sqe,
        data_out: &[u8],
        read_len: u32,
    ) -> Result<Completion, InitiatorError> {
        if self.queue.in_flight() > 0 {
            return Err(InitiatorError::Unexpected(format!(
                "submit needs an idle queue; {} commands are in flight (reap them first)",
                self.queue.in_flight()
            )));
        }
        self.post(sqe, data_out.to_vec(), read_len)?;
        self.reap()
    }

    /// Sends one command without waiting; returns its command id. Writes up
    /// to `in_capsule_max_bytes` travel in the capsule, larger ones wait for
    /// the controller's R2T (answered inside [`Initiator::reap`]).
    pub fn post(
        &mut self,
        sqe: Sqe,
        data_out: Vec<u8>,
        read_len: u32,
    ) -> Result<u16, InitiatorError> {
        let entries = self.opts.queue_entries;
        if self.queue.in_flight() + 1 >= entries as usize {
            return Err(InitiatorError::Unexpected(format!(
                "queue full: {} commands in flight on a {entries}-entry queue",
                self.queue.in_flight(),
            )));
        }
        while self.queue.is_in_flight(self.next_cid) {
            self.next_cid = (self.next_cid + 1) % entries;
        }
        let cid = self.next_cid;
        self.next_cid = (cid + 1) % entries;
        let xfer = if !data_out.is_empty() {
            Transfer::ToController(data_out.len() as u32)
        } else if read_len > 0 {
            Transfer::FromController(read_len)
        } else {
            Transfer::None
        };
        self.bufs.0[cid as usize] = (data_out, vec![0u8; read_len as usize]);
        self.queue.submit(cid, sqe, xfer, &self.bufs)?;
        self.flush()?;
        Ok(cid)
    }

    /// Commands posted and not yet reaped.
    pub fn in_flight(&self) -> usize {
        self.queue.in_flight()
    }

    /// Waits for the next command to complete (answering R2Ts and storing
    /// C2HData meanwhile) and returns it.
    pub fn reap(&mut self) -> Result<Completion, InitiatorError> {
        loop {
            if let Some(c) = self.queue.completion() {
                let (_, data) = std::mem::take(&mut self.bufs.0[c.cqe.cid as usize]);
                return Ok(Completion { cqe: c.cqe, data });
            }
            self.flush()?;
            self.receive_pdu()?;
        }
    }

    /// Writes everything the queue has to send (H2CData included).
    fn flush(&mut self) -> Result<(), InitiatorError> {
        loop {
            let b = self.queue.tx_pending(&self.bufs);
            if b.is_empty() {
                return Ok(());
            }
            self.stream.write_all(b)?;
            let n = b.len();
            self.queue.tx_sent(n);
        }
    }

    /// Reads one whole PDU into the queue, which handles it.
    fn receive_pdu(&mut self) -> Result<(), InitiatorError> {
        loop {
            let n = self.queue.rx_missing();
            self.stream.read_exact(&mut self.queue.rx_space()[..n])?;
            self.queue.on_received(n, &mut self.bufs)?;
            if self.queue.rx_missing() == tcp::CommonHeader::SIZE {
                return Ok(());
            }
        }
    }

    /// Writes raw bytes (tests use this to send malformed PDUs).
    pub fn send_raw(&mut self, b: &[u8]) -> Result<(), InitiatorError> {
        self.stream.write_all(b)?;
        Ok(())
    }

    /// Reads one whole PDU's bytes past the queue (tests use this to see
    /// the target's answer to raw PDUs); a C2HTermReq is an error.
    pub fn recv_pdu_bytes(&mut self) -> Result<Vec<u8>, InitiatorError> {
        let framing = self.queue.framing();
        let mut ch = [0u8; 8];
        self.stream.read_exact(&mut ch)?;
        let h = tcp::check_common_header(&ch, Direction::ControllerToHost, &framing, 1 << 26)?;
        let mut buf = vec![0u8; h.plen as usize];
        buf[..8].copy_from_slice(&ch);
        self.stream.read_exact(&mut buf[8..])?;
        if h.pdu_type == pdu_type::C2H_TERM_REQ {
            if let Pdu::TermReq { hdr, .. } =
                tcp::decode(&buf, Direction::ControllerToHost, &framing)?
            {
                return Err(InitiatorError::Terminated {
                    fes: hdr.fes,
                    fei: hdr.fei(),
                });
            }
        }
        Ok(buf)
    }

    /// Hands over the connected socket and the queue, for a caller that
    /// runs its own pipelined, allocation-free loop over the queue (the
    /// engine's `tcp` backend). Refused while commands are in flight,
    /// since their data lives in this driver.
    pub fn into_parts(self) -> Result<(Stream, HostQueue), InitiatorError> {
        if self.queue.in_flight() > 0 {
            return Err(InitiatorError::Unexpected(format!(
                "into_parts needs an idle queue; {} commands are in flight",
                self.queue.in_flight()
            )));
        }
        Ok((self.stream, self.queue))
    }

    /// The TLS cipher suite, when the queue runs over TLS.
    pub fn tls_cipher(&self) -> Option<String> {
        self.stream.tls_cipher()
    }

    /// The negotiated framing.
    pub fn framing(&self) -> Framing {
        self.queue.framing()
    }

    /// Property Get.
    pub fn property_get(&mut self, offset: u32, eight_bytes: bool) -> Result<u64, InitiatorError> {
        let c = self.command(command::property_get(offset, eight_bytes), &[], 0)?;
        Ok(c.cqe.result as u64 | ((c.cqe.dw1 as u64) << 32))
    }

    /// Property Set (4 bytes).
    pub fn property_set(&mut self, offset: u32, value: u32) -> Result<(), InitiatorError> {
        self.command(command::property_set(offset, value), &[], 0)
            .map(|_| ())
    }

    /// Enables the controller (CC.EN with 64/16-byte queue entries) and
    /// checks CSTS.RDY.
    pub fn enable(&mut self) -> Result<(), InitiatorError> {
        self.property_set(prop::CC, CC_ENABLED)?;
        let csts = self.property_get(prop::CSTS, false)? as u32;
        if csts & fabrics::CSTS_READY == 0 {
            return Err(InitiatorError::Unexpected(format!(
                "CSTS {csts:#x} not ready after enable"
            )));
        }
        Ok(())
    }

    /// Normal shutdown (CC.SHN = 1); returns CSTS.
    pub fn shutdown(&mut self) -> Result<u32, InitiatorError> {
        let cc = self.property_get(prop::CC, false)? as u32;
        self.property_set(prop::CC, cc | (1 << fabrics::CC_SHN_SHIFT))?;
        Ok(self.property_get(prop::CSTS, false)? as u32)
    }

    /// Identify; returns 4096 bytes.
    pub fn identify(&mut self, cns: u8, nsid: u32) -> Result<Vec<u8>, InitiatorError> {
        let (sqe, xfer) = command::identify(cns, nsid);
        Ok(self.command(sqe, &[], xfer.len_bytes())?.data)
    }

    /// Get Log Page.
    pub fn get_log_page(
        &mut self,
        lid: u8,
        nsid: u32,
        len: u32,
        offset: u64,
    ) -> Result<Vec<u8>, InitiatorError> {
        let (sqe, _) = command::get_log_page(lid, nsid, len, offset);
        Ok(self.command(sqe, &[], len)?.data)
    }

    /// Set Features; returns the completion (status not checked).
    pub fn set_features(&mut self, fid: u8, cdw11: u32) -> Result<Completion, InitiatorError> {
        self.submit(command::set_features(fid, cdw11), &[], 0)
    }

    /// Keep Alive.
    pub fn keep_alive(&mut self) -> Result<(), InitiatorError> {
        self.command(command::keep_alive(), &[], 0).map(|_| ())
    }

    /// Reads `nlb` 512-byte blocks.
    pub fn read(&mut self, nsid: u32, slba: u64, nlb: u32) -> Result<Vec<u8>, InitiatorError> {
        let sqe = rw_sqe(io::READ, nsid, slba, nlb);
        Ok(self.command(sqe, &[], nlb * 512)?.data)
    }

    /// Writes `data` (a multiple of 512 bytes) at `slba`.
    pub fn write(&mut self, nsid: u32, slba: u64, data: &[u8]) -> Result<(), InitiatorError> {
        let sqe = rw_sqe(io::WRITE, nsid, slba, (data.len() / 512) as u32);
        self.command(sqe, data, 0).map(|_| ())
    }

    /// Sends an I/O or admin command with no data; returns its status.
    pub fn simple(&mut self, sqe: Sqe) -> Result<Status, InitiatorError> {
        Ok(self.submit(sqe, &[], 0)?.cqe.status())
    }
}

impl AsRawFd for Initiator {
    /// The socket, for a caller that polls it before [`Initiator::reap`]
    /// (the multipath backend's admin queue, waiting for an event).
    fn as_raw_fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }
}
