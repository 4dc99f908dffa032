//! The `tcp` backend: NVMe/TCP from user space, one I/O queue (one TCP
//! connection) per worker.
//!
//! Target syntax: `nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]` (port 4420 and
//! NSID 1 by default). Set-up uses the blocking [`nvmf::Initiator`]: an
//! admin queue (Connect with keep-alive off, CC.EN, Number of Queues = 1),
//! then I/O queue 1 with `iodepth + 1` entries, whose socket
//! [`Initiator::into_stream`] hands over. The data path is here and
//! allocates nothing in steady state: each slot's command id is its slot
//! index; `queue` frames the command capsule (a write's data in the capsule
//! up to the controller's IOCCSZ, else sent as H2CData when the R2T comes)
//! into a send buffer sized at start-up; `submit` writes it without waiting;
//! `reap` reads whatever the socket holds into a fixed receive buffer,
//! copies C2HData into the slot's buffer and completes on CapsuleResp (or
//! on C2HData with SUCCESS), waiting in poll(2) only while fewer than `min`
//! are done. The admin queue stays open for the run: closing it would end
//! the controller and its I/O queue.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nvme_spec::command::{io as nvm, SglDescriptor, SGL_IN_CAPSULE, SGL_TRANSPORT};
use nvme_spec::fabrics::prop;
use nvme_spec::identify::{cns, IdentifyController, IdentifyNamespace};
use nvme_spec::tcp::{self, flags, pdu_type, Direction, Framing, Pdu};
use nvme_spec::Sqe;
use nvmf::{Initiator, InitiatorError, InitiatorOptions};

use super::{Backend, Completion, IoRequest};
use crate::result::NVME_STATUS_BASE;
use crate::stats::Dir;

/// The scheme of an NVMe/TCP target.
pub const SCHEME: &str = "nvme-tcp://";
/// The NVMe/TCP port IANA assigned.
pub const DEFAULT_PORT: u16 = 4420;
/// Most I/O queue entries a controller may grant (CAP.MQES is 16 bits).
const MAX_QUEUE_ENTRIES: u32 = 65536;
/// How long a reply may take before the run fails.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// Room for a PDU's header, header digest, padding and data digest.
const PDU_OVERHEAD_BYTES: usize = 256;
/// Most write data the send buffer is sized to hold for R2Ts at once.
const TX_DATA_MAX_BYTES: usize = 16 << 20;

/// Connection options of the `tcp` backend (`--tcp-hostnqn`, `--tcp-hdgst`,
/// `--tcp-ddgst`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Host NQN (`None`: the initiator's default).
    pub hostnqn: Option<String>,
    /// Ask for header digests (CRC32C on every PDU header).
    pub header_digest: bool,
    /// Ask for data digests (CRC32C on every PDU's data).
    pub data_digest: bool,
}

impl TcpOptions {
    fn initiator(&self) -> InitiatorOptions {
        let mut o = InitiatorOptions {
            header_digest: self.header_digest,
            data_digest: self.data_digest,
            // No keep-alive: the run sends no admin commands to keep one.
            kato_ms: 0,
            timeout: REPLY_TIMEOUT,
            ..InitiatorOptions::default()
        };
        if let Some(h) = &self.hostnqn {
            o.hostnqn = h.clone();
        }
        o
    }
}

/// A parsed `nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpUrl {
    /// Host name or address as given (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Subsystem NQN.
    pub subnqn: String,
    /// Namespace id.
    pub nsid: u32,
}

/// What set-up learnt about an NVMe/TCP namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmeTcp {
    /// The target as parsed.
    pub url: TcpUrl,
    /// The address connected to.
    pub addr: SocketAddr,
    /// Largest transfer of one command (Identify Controller MDTS).
    pub max_transfer_bytes: u64,
    /// Largest write sent in the command capsule (IOCCSZ).
    pub in_capsule_max_bytes: u32,
    /// Largest I/O queue the controller grants (CAP.MQES + 1).
    pub max_queue_entries: u32,
}

/// Whether `path` names an NVMe/TCP target.
pub fn is_tcp_target(path: &str) -> bool {
    path.starts_with(SCHEME)
}

/// Parses `nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]`; the error names the part
/// that is wrong and shows the form.
pub fn parse_url(s: &str) -> Result<TcpUrl, String> {
    const FORM: &str = "use nvme-tcp://HOST[:PORT]/SUBNQN[/NSID], e.g. nvme-tcp://127.0.0.1:4420/nqn.2026-11.io.numio:mem0/1";
    let rest = s
        .strip_prefix(SCHEME)
        .ok_or_else(|| format!("not an NVMe/TCP target (no {SCHEME}); {FORM}"))?;
    let (authority, path) = rest
        .split_once('/')
        .ok_or_else(|| format!("no subsystem NQN after the address; {FORM}"))?;
    let (host, port) = split_host_port(authority).map_err(|e| format!("{e}; {FORM}"))?;
    let (subnqn, nsid) = match path.rsplit_once('/') {
        Some((nqn, ns)) => {
            let nsid = ns
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0 && n != u32::MAX)
                .ok_or_else(|| format!("NSID {ns:?} is not a namespace id (1 or more); {FORM}"))?;
            (nqn, nsid)
        }
        None => (path, 1),
    };
    if subnqn.is_empty() || subnqn.len() > 223 || subnqn.contains('/') {
        return Err(format!(
            "subsystem NQN {subnqn:?} is empty, longer than 223 bytes or holds '/'; {FORM}"
        ));
    }
    Ok(TcpUrl {
        host: host.to_string(),
        port,
        subnqn: subnqn.to_string(),
        nsid,
    })
}

fn split_host_port(a: &str) -> Result<(&str, u16), String> {
    let (host, port) = if let Some(v6) = a.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("address {a:?} opens '[' without ']'"))?;
        (h, after.strip_prefix(':'))
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    if host.is_empty() {
        return Err(format!("no host in {a:?}"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("port {p:?} is not a TCP port (1..=65535)"))?,
    };
    Ok((host, port))
}

impl TcpUrl {
    /// Resolves the host; the error says what was asked.
    pub fn resolve(&self) -> Result<SocketAddr, String> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve host {:?}: {e}", self.host))?
            .next()
            .ok_or_else(|| format!("host {:?} has no address", self.host))
    }
}

/// A connect or command failure during set-up, with what was asked and the
/// likely fix.
fn setup_error(url: &TcpUrl, addr: SocketAddr, step: &str, e: InitiatorError) -> String {
    let hint = match &e {
        InitiatorError::Io(io) if io.kind() == io::ErrorKind::ConnectionRefused => format!(
            "nothing listens on {addr}; start a target there (numio serve --listen {addr} ..., or an nvmet-tcp port) or fix HOST:PORT"
        ),
        InitiatorError::Io(io)
            if matches!(io.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) =>
        {
            format!("{addr} did not answer within {}s; check the address and any firewall", REPLY_TIMEOUT.as_secs())
        }
        InitiatorError::Command { status, .. } if step == "connect" => {
            let why = if status.sc() == 0x84 {
                "this host NQN is not allowed"
            } else {
                "no such subsystem NQN, or a parameter it cannot take"
            };
            format!(
                "the target refused subsystem {:?} ({why}): check the NQN (`nvme discover -t tcp -a {} -s {}`) and that the host may connect (--tcp-hostnqn)",
                url.subnqn, url.host, url.port
            )
        }
        _ => "check that the target speaks NVMe/TCP on this port".into(),
    };
    format!("{step} with {addr} failed: {e}; {hint}")
}

/// An admin queue to `url`'s subsystem, controller enabled, one I/O queue
/// asked for.
fn admin_queue(url: &TcpUrl, addr: SocketAddr, o: &InitiatorOptions) -> Result<Initiator, String> {
    let o = InitiatorOptions {
        queue_entries: InitiatorOptions::default().queue_entries,
        ..o.clone()
    };
    let mut a = Initiator::connect_admin(addr, &url.subnqn, &o)
        .map_err(|e| setup_error(url, addr, "connect", e))?;
    a.enable()
        .map_err(|e| setup_error(url, addr, "enabling the controller", e))?;
    let nq = a
        .set_features(nvme_spec::features::fid::NUM_QUEUES, 0)
        .map_err(|e| setup_error(url, addr, "Set Features (Number of Queues)", e))?;
    if !nq.cqe.status().is_success() {
        return Err(format!(
            "{addr}: Set Features (Number of Queues = 1) failed: {}",
            nq.cqe.status()
        ));
    }
    Ok(a)
}

/// Connects to the target, reads Identify Controller and Namespace: the
/// namespace's size and LBA size, and the controller's limits.
pub fn inspect(url_text: &str, o: &TcpOptions) -> Result<(NvmeTcp, u64, u32), String> {
    let url = parse_url(url_text)?;
    let addr = url.resolve()?;
    let io = o.initiator();
    let mut a = admin_queue(&url, addr, &io)?;
    let cap = a
        .property_get(prop::CAP, true)
        .map_err(|e| setup_error(&url, addr, "reading CAP", e))?;
    let ctrl = a
        .identify(cns::CONTROLLER, 0)
        .map_err(|e| setup_error(&url, addr, "Identify Controller", e))
        .map(|b| IdentifyController::decode(&b))?;
    let unknown = |detail: String| {
        format!(
            "namespace {} is not in subsystem {} ({detail}; the controller reports NSIDs up to {}); give an existing NSID as nvme-tcp://{}:{}/{}/NSID",
            url.nsid, url.subnqn, ctrl.nn, url.host, url.port, url.subnqn
        )
    };
    let ns = match a.identify(cns::NAMESPACE, url.nsid) {
        Ok(b) => IdentifyNamespace::decode(&b),
        Err(InitiatorError::Command { status, .. }) => {
            return Err(unknown(format!("Identify Namespace: {status}")))
        }
        Err(e) => return Err(setup_error(&url, addr, "Identify Namespace", e)),
    };
    if ns.nsze == 0 {
        return Err(unknown("Identify Namespace shows no blocks".into()));
    }
    if !(9..=16).contains(&ns.lbads) {
        return Err(format!(
            "namespace {} reports LBA size 2^{}, which numio does not drive",
            url.nsid, ns.lbads
        ));
    }
    let lba_bytes = 1u32 << ns.lbads;
    // CAP.MPSMIN (bits 51:48) gives the page size MDTS counts in.
    let page = 4096u64 << ((cap >> 48) & 0xF);
    let max_transfer_bytes = match ctrl.mdts {
        0 => u64::MAX,
        m => page << m,
    };
    let in_capsule_max_bytes = (ctrl.ioccsz * 16).saturating_sub(64);
    let t = NvmeTcp {
        url,
        addr,
        max_transfer_bytes,
        in_capsule_max_bytes,
        max_queue_entries: (cap & 0xFFFF) as u32 + 1,
    };
    Ok((t, ns.nsze << ns.lbads, lba_bytes))
}

/// What a slot's I/O in flight needs from the wire.
#[derive(Debug, Clone, Copy)]
struct Slot {
    buf: *mut u8,
    len_bytes: u32,
    dir: Dir,
    /// Read data received so far.
    received_bytes: u32,
    busy: bool,
}

const IDLE: Slot = Slot {
    buf: std::ptr::null_mut(),
    len_bytes: 0,
    dir: Dir::Read,
    received_bytes: 0,
    busy: false,
};

/// One NVMe/TCP I/O queue driven without allocation.
pub struct TcpBackend {
    /// Kept open: the controller lives as long as its admin queue.
    _admin: Initiator,
    stream: TcpStream,
    framing: Framing,
    maxh2cdata: u32,
    nsid: u32,
    lba_shift: u32,
    in_capsule_max_bytes: u32,
    slots: Box<[Slot]>,
    /// Bytes to send; `tx[tx_sent..]` is still unsent.
    tx: Vec<u8>,
    tx_sent: usize,
    /// Bytes received; `rx[rx_head..rx_len]` is not yet parsed.
    rx: Box<[u8]>,
    rx_head: usize,
    rx_len: usize,
    done: Box<[Completion]>,
    done_len: usize,
    /// What set-up negotiated, reported with the result.
    pub note: String,
}

impl TcpBackend {
    /// Connects one admin and one I/O queue (`depth + 1` entries) to `t`,
    /// for I/Os of up to `max_io_bytes`.
    pub fn connect(
        t: &NvmeTcp,
        lba_bytes: u32,
        depth: usize,
        max_io_bytes: usize,
        o: &TcpOptions,
    ) -> Result<TcpBackend, String> {
        let depth = depth.max(1);
        let entries = depth as u32 + 1;
        if entries > t.max_queue_entries.min(MAX_QUEUE_ENTRIES) {
            return Err(format!(
                "iodepth={depth} needs a {entries}-entry queue; the controller grants at most {} (CAP.MQES); use --iodepth {} or less",
                t.max_queue_entries,
                t.max_queue_entries - 1
            ));
        }
        let mut io_opts = o.initiator();
        io_opts.queue_entries = entries as u16;
        io_opts.in_capsule_max_bytes = t.in_capsule_max_bytes;
        let admin = admin_queue(&t.url, t.addr, &io_opts)?;
        let q = Initiator::connect_io(t.addr, &t.url.subnqn, admin.cntlid, 1, &io_opts)
            .map_err(|e| setup_error(&t.url, t.addr, "connecting I/O queue 1", e))?;
        let (stream, framing, maxh2cdata) =
            q.into_stream().map_err(|e| format!("{}: {e}", t.addr))?;
        stream
            .set_nonblocking(true)
            .map_err(|e| format!("{}: making the socket non-blocking: {e}", t.addr))?;
        let pdu_max = max_io_bytes + PDU_OVERHEAD_BYTES;
        let in_capsule = (t.in_capsule_max_bytes as usize).min(max_io_bytes);
        // Every command with its in-capsule data, and H2CData answering R2Ts
        // for up to TX_DATA_MAX_BYTES of writes at once (all of them at
        // depth × bs below that). More is held only while the socket is
        // full; a buffer grown then keeps its size.
        let r2t_bytes = (depth * pdu_max).min(TX_DATA_MAX_BYTES.max(2 * pdu_max));
        let tx_bytes = depth * (in_capsule + PDU_OVERHEAD_BYTES) + r2t_bytes;
        let on = |b: bool| if b { "on" } else { "off" };
        let note = format!(
            "tcp backend: NVMe/TCP I/O queue of {entries} entries to {}, header digest {}, data digest {}, writes up to {} B in the capsule",
            t.addr,
            on(framing.header_digest),
            on(framing.data_digest),
            t.in_capsule_max_bytes
        );
        Ok(TcpBackend {
            _admin: admin,
            stream,
            framing,
            maxh2cdata: maxh2cdata.max(tcp::MIN_MAXH2CDATA),
            nsid: t.url.nsid,
            lba_shift: lba_bytes.trailing_zeros(),
            in_capsule_max_bytes: t.in_capsule_max_bytes,
            slots: vec![IDLE; depth].into_boxed_slice(),
            tx: Vec::with_capacity(tx_bytes),
            tx_sent: 0,
            rx: vec![0u8; pdu_max.max(64 << 10)].into_boxed_slice(),
            rx_head: 0,
            rx_len: 0,
            done: vec![Completion::default(); depth].into_boxed_slice(),
            done_len: 0,
            note,
        })
    }

    /// Drops the sent prefix of the send buffer so appends reuse its room.
    fn compact_tx(&mut self) {
        if self.tx_sent == self.tx.len() {
            self.tx.clear();
        } else if self.tx_sent > 0 {
            self.tx.copy_within(self.tx_sent.., 0);
            self.tx.truncate(self.tx.len() - self.tx_sent);
        }
        self.tx_sent = 0;
    }

    /// Writes what the socket takes now.
    fn flush(&mut self) -> io::Result<()> {
        while self.tx_sent < self.tx.len() {
            match self.stream.write(&self.tx[self.tx_sent..]) {
                Ok(0) => return Err(closed()),
                Ok(n) => self.tx_sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.tx_sent == self.tx.len() {
            self.compact_tx();
        }
        Ok(())
    }

    /// Reads what the socket holds and handles every whole PDU; false when
    /// nothing was there.
    fn receive(&mut self) -> io::Result<bool> {
        if self.rx_head > 0 {
            self.rx.copy_within(self.rx_head..self.rx_len, 0);
            self.rx_len -= self.rx_head;
            self.rx_head = 0;
        }
        // Room is always left: a PDU is at most rx.len() bytes (checked on
        // its header), and whole ones are handled before the next read.
        debug_assert!(self.rx_len < self.rx.len());
        let n = loop {
            match self.stream.read(&mut self.rx[self.rx_len..]) {
                Ok(0) => return Err(closed()),
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.rx_len += n;
        while self.rx_len - self.rx_head >= tcp::CommonHeader::SIZE {
            let b = &self.rx[self.rx_head..self.rx_len];
            let ch = tcp::check_common_header(
                b,
                Direction::ControllerToHost,
                &self.framing,
                self.rx.len(),
            )
            .map_err(protocol)?;
            let plen = ch.plen as usize;
            if b.len() < plen {
                break;
            }
            let (start, end) = (self.rx_head, self.rx_head + plen);
            self.rx_head = end;
            self.handle(start, end)?;
        }
        Ok(true)
    }

    /// Handles the PDU at `rx[start..end]`.
    fn handle(&mut self, start: usize, end: usize) -> io::Result<()> {
        let pdu = tcp::decode(
            &self.rx[start..end],
            Direction::ControllerToHost,
            &self.framing,
        )
        .map_err(protocol)?;
        match pdu {
            Pdu::CapsuleResp(cqe) => {
                let slot = self.busy_slot(cqe.cid)?;
                let s = self.slots[slot];
                let st = cqe.status();
                let result = if !st.is_success() {
                    -(NVME_STATUS_BASE + i32::from(st.field() & 0x7ff))
                } else if s.dir == Dir::Read && s.received_bytes != s.len_bytes {
                    return Err(bad(format!(
                        "read cid {slot} completed with {} of {} bytes",
                        s.received_bytes, s.len_bytes
                    )));
                } else {
                    s.len_bytes as i32
                };
                self.finish(slot, result);
            }
            Pdu::Data {
                hdr,
                data,
                data_digest_ok,
            } => {
                let slot = self.busy_slot(hdr.cccid)?;
                let s = &mut self.slots[slot];
                let off = hdr.data_offset as usize;
                if s.dir != Dir::Read || off + data.len() > s.len_bytes as usize {
                    return Err(bad(format!(
                        "C2HData for cid {slot} at {off}+{} outside its {}-byte read",
                        data.len(),
                        s.len_bytes
                    )));
                }
                if !data_digest_ok {
                    return Err(bad(format!("C2HData data digest mismatch (cid {slot})")));
                }
                // SAFETY: the slot is busy, so the worker handed its buffer
                // (len_bytes long) to this backend until the completion is
                // reaped; off + data.len() ≤ len_bytes was checked above, and
                // `data` lies in `rx`, which never overlaps a slot buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), s.buf.add(off), data.len());
                }
                s.received_bytes += data.len() as u32;
                if hdr.ch.flags & flags::DATA_SUCCESS != 0 {
                    if s.received_bytes != s.len_bytes {
                        return Err(bad(format!(
                            "C2HData SUCCESS for cid {slot} after {} of {} bytes",
                            s.received_bytes, s.len_bytes
                        )));
                    }
                    let len = s.len_bytes as i32;
                    self.finish(slot, len);
                }
            }
            Pdu::R2t(h) => {
                let slot = self.busy_slot(h.cccid)?;
                self.send_h2c(slot, h.ttag, h.data_offset, h.data_length)?;
            }
            Pdu::TermReq { hdr, .. } => {
                return Err(bad(format!(
                    "the target ended the connection (C2HTermReq fes={:#x} fei={})",
                    hdr.fes,
                    hdr.fei()
                )))
            }
            Pdu::IcReq(_) | Pdu::IcResp(_) | Pdu::CapsuleCmd { .. } => {
                return Err(bad("unexpected PDU type on an I/O queue".into()))
            }
        }
        Ok(())
    }

    fn busy_slot(&self, cid: u16) -> io::Result<usize> {
        let slot = cid as usize;
        if slot < self.slots.len() && self.slots[slot].busy {
            Ok(slot)
        } else {
            Err(bad(format!(
                "PDU for command id {cid}, which is not in flight"
            )))
        }
    }

    fn finish(&mut self, slot: usize, result: i32) {
        self.slots[slot].busy = false;
        self.done[self.done_len] = Completion {
            slot: slot as u32,
            result,
        };
        self.done_len += 1;
    }

    /// Answers an R2T: the asked range of the slot's write as H2CData PDUs
    /// of at most MAXH2CDATA each.
    fn send_h2c(&mut self, slot: usize, ttag: u16, off: u32, len: u32) -> io::Result<()> {
        let s = self.slots[slot];
        let end = off as u64 + len as u64;
        if s.dir != Dir::Write || len == 0 || end > u64::from(s.len_bytes) {
            return Err(bad(format!(
                "R2T for cid {slot} asks {off}+{len} of a {}-byte {:?}",
                s.len_bytes, s.dir
            )));
        }
        // SAFETY: the slot is busy: its buffer (len_bytes long) belongs to
        // this backend until the completion is reaped, and nothing writes it
        // meanwhile; off + len ≤ len_bytes was checked above.
        let data = unsafe { std::slice::from_raw_parts(s.buf.add(off as usize), len as usize) };
        self.compact_tx();
        let chunk = self.maxh2cdata as usize;
        let need = data.len() + data.len().div_ceil(chunk) * PDU_OVERHEAD_BYTES;
        if self.tx.len() + need > self.tx.capacity() {
            self.flush()?;
            self.compact_tx();
        }
        let mut at = 0;
        while at < data.len() {
            let n = chunk.min(data.len() - at);
            let last = at + n == data.len();
            let body = tcp::data_body(slot as u16, ttag, off + at as u32, n as u32);
            tcp::frame(
                &mut self.tx,
                pdu_type::H2C_DATA,
                if last { flags::DATA_LAST } else { 0 },
                &body,
                &data[at..at + n],
                &self.framing,
            );
            at += n;
        }
        Ok(())
    }

    /// Waits until the socket is readable (or writable, with bytes to send).
    fn wait(&self, in_flight: usize) -> io::Result<()> {
        let mut pfd = libc::pollfd {
            fd: self.stream.as_raw_fd(),
            events: libc::POLLIN
                | if self.tx_sent < self.tx.len() {
                    libc::POLLOUT
                } else {
                    0
                },
            revents: 0,
        };
        // SAFETY: one valid pollfd on the stack for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, REPLY_TIMEOUT.as_millis() as i32) };
        match rc {
            0 => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no reply from the NVMe/TCP target in {}s with {in_flight} I/Os in flight",
                    REPLY_TIMEOUT.as_secs()
                ),
            )),
            r if r < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    Ok(())
                } else {
                    Err(e)
                }
            }
            _ => Ok(()),
        }
    }

    fn in_flight(&self) -> usize {
        self.slots.iter().filter(|s| s.busy).count()
    }
}

impl Backend for TcpBackend {
    fn queue(&mut self, io: IoRequest) {
        let slot = io.slot as usize;
        debug_assert!(!self.slots[slot].busy, "slot {slot} queued twice");
        debug_assert_eq!(io.offset_bytes & ((1 << self.lba_shift) - 1), 0);
        debug_assert_eq!(io.len_bytes & ((1 << self.lba_shift) - 1), 0);
        let write = io.dir == Dir::Write;
        let in_capsule = write && io.len_bytes <= self.in_capsule_max_bytes;
        let mut sqe = nvmf::initiator::rw_sqe(
            if write { nvm::WRITE } else { nvm::READ },
            self.nsid,
            io.offset_bytes >> self.lba_shift,
            io.len_bytes >> self.lba_shift,
        );
        sqe.cid = io.slot as u16;
        sqe.flags |= 0x40; // PSDT: SGL
        sqe.dptr = SglDescriptor {
            addr: 0,
            length: io.len_bytes,
            rsvd: [0; 3],
            type_byte: if in_capsule {
                SGL_IN_CAPSULE
            } else {
                SGL_TRANSPORT
            },
        };
        let data: &[u8] = if in_capsule {
            // SAFETY: `queue` hands the slot's buffer (len_bytes long) to
            // this backend; it is only read here, before the worker touches
            // it again at the completion.
            unsafe { std::slice::from_raw_parts(io.buf, io.len_bytes as usize) }
        } else {
            &[]
        };
        if self.tx_sent > 0 {
            self.compact_tx();
        }
        tcp::frame(
            &mut self.tx,
            pdu_type::CAPSULE_CMD,
            0,
            &encode_sqe(&sqe),
            data,
            &self.framing,
        );
        self.slots[slot] = Slot {
            buf: io.buf,
            len_bytes: io.len_bytes,
            dir: io.dir,
            received_bytes: 0,
            busy: true,
        };
    }

    fn submit(&mut self) -> io::Result<()> {
        self.flush()
    }

    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize> {
        loop {
            self.flush()?;
            let got = self.receive()?;
            if self.tx_sent < self.tx.len() {
                // H2CData answering the R2Ts just read.
                self.flush()?;
            }
            if self.done_len >= min.max(1) || (min == 0 && !got) {
                break;
            }
            if !got {
                self.wait(self.in_flight())?;
            }
        }
        let n = self.done_len.min(out.len());
        out[..n].copy_from_slice(&self.done[self.done_len - n..self.done_len]);
        self.done_len -= n;
        Ok(n)
    }
}

fn encode_sqe(sqe: &Sqe) -> [u8; 64] {
    sqe.encode()
}

fn closed() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the NVMe/TCP target closed the connection",
    )
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("NVMe/TCP: {what}"))
}

fn protocol(e: tcp::FatalError) -> io::Error {
    bad(format!("invalid PDU from the target: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults() {
        let u = parse_url("nvme-tcp://127.0.0.1:4421/nqn.2026-11.io.numio:mem0/2").unwrap();
        assert_eq!(
            u,
            TcpUrl {
                host: "127.0.0.1".into(),
                port: 4421,
                subnqn: "nqn.2026-11.io.numio:mem0".into(),
                nsid: 2
            }
        );
        let u = parse_url("nvme-tcp://target/nqn.x:y").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.nsid), ("target", 4420, 1));
        let u = parse_url("nvme-tcp://[::1]:4420/nqn.x:y/7").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.nsid), ("::1", 4420, 7));
    }

    #[test]
    fn malformed_urls_name_the_part_and_the_form() {
        for (url, part) in [
            ("tcp://h/nqn", "no nvme-tcp://"),
            ("nvme-tcp://h:4420", "no subsystem NQN"),
            ("nvme-tcp://h:99999/nqn", "port \"99999\""),
            ("nvme-tcp://h:0/nqn", "port \"0\""),
            ("nvme-tcp://:4420/nqn", "no host"),
            ("nvme-tcp://h/nqn/x", "NSID \"x\""),
            ("nvme-tcp://h/nqn/0", "NSID \"0\""),
            ("nvme-tcp://h/", "subsystem NQN \"\""),
            ("nvme-tcp://[::1/nqn", "without ']'"),
        ] {
            let e = parse_url(url).unwrap_err();
            assert!(e.contains(part), "{url}: {e}");
            assert!(
                e.contains("nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]"),
                "{url}: {e}"
            );
        }
    }
}
