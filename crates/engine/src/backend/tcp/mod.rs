//! The `tcp` backend: NVMe/TCP from user space, one I/O queue (one TCP
//! connection) per worker, as a thin adapter over nvmf's host queue
//! ([`nvmf::host::HostQueue`]), which holds all of the protocol.
//!
//! Target syntax: `nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]` (port 4420 and
//! NSID 1 by default; `setup.rs`). Set-up uses the blocking
//! [`nvmf::Initiator`]: an admin queue (Connect with keep-alive off, CC.EN,
//! Number of Queues = 1), then I/O queue 1 with `iodepth + 1` entries,
//! whose socket and queue [`Initiator::into_parts`] hands over. What is
//! left here is the adapter: a slot's command id is its slot index and its
//! buffer is the command's data ([`DataBuffers`]); `queue` hands the Read
//! or Write to the host queue, `submit` writes what the queue has to send
//! without waiting, `reap` reads what the socket holds into the queue and
//! turns its completions into the worker's, waiting only while fewer than
//! `min` are done: in the socket's read over plain TCP, in poll(2) over
//! TLS or while bytes wait to be sent. Nothing allocates in steady state (the
//! queue's buffers are sized at connect). The admin queue stays open for
//! the run: closing it would end the controller and its I/O queue.
//!
//! Several comma-separated portals of one namespace
//! (`nvme-tcp://A/NQN,nvme-tcp://B/NQN`, checked in `portals.rs`) make a
//! multipath target, driven by [`MultipathBackend`] (`multipath.rs`, with
//! each path's admin queue and reconnection in `path.rs`); one portal
//! keeps this single-queue backend.
//!
//! Set-up's errors (`error.rs`, shared with the `rdma` backend's URL and
//! host resolution) are [`SetupError`], one variant per step with that
//! step's inputs; a lost path says why as a [`PathLost`].

use std::io;
use std::os::fd::AsRawFd;

use nvmf::host::{command, DataBuffers, HostCompletion, HostError, HostQueue};
use nvmf::Initiator;

use super::{Backend, Completion, IoRequest};
use crate::stats::Dir;

mod error;
mod multipath;
mod path;
mod portals;
mod setup;
mod url;

pub use error::{Difference, PortalsError, ResolveError, SetupError, UrlError};
pub use multipath::{MultipathBackend, PathsReport};
pub use path::PathLost;
pub use portals::{is_multipath, parse_portals};
pub(crate) use setup::parse_fabric_url;
use setup::{admin_queue, MAX_QUEUE_ENTRIES, REPLY_TIMEOUT};
pub use setup::{
    is_tcp_target, parse_url, NvmeTcp, Portal, TcpOptions, TcpUrl, DEFAULT_PORT, SCHEME,
};
pub use url::{portal_name, MAX_PORTALS};

/// Connects to the target, reads Identify Controller and Namespace: the
/// namespace's size and LBA size, and the controller's limits. A target of
/// several comma-separated portals is one namespace reached through each
/// (`portals.rs`), its limits the smallest of all.
pub fn inspect(url_text: &str, o: &TcpOptions) -> Result<(NvmeTcp, u64, u32), SetupError> {
    if portals::is_multipath(url_text) {
        portals::inspect(url_text, o)
    } else {
        setup::inspect_single(url_text, o)
    }
}

/// A slot's I/O while its command is in flight.
#[derive(Debug, Clone, Copy)]
struct Slot {
    buf: *mut u8,
    len_bytes: u32,
    dir: Dir,
}

/// The worker's slot buffers by command id (= slot index).
struct Slots(Box<[Slot]>);

impl DataBuffers for Slots {
    fn outgoing(&self, cid: u16) -> &[u8] {
        let s = self.0[cid as usize];
        // SAFETY: the host queue reaches a command's data only while the
        // command is in flight, i.e. between `queue` (which stored this
        // slot's buffer, `len_bytes` long, handed to the backend by the
        // worker) and the completion `reap` returns; the worker leaves the
        // buffer alone meanwhile.
        unsafe { std::slice::from_raw_parts(s.buf, s.len_bytes as usize) }
    }
    fn incoming(&mut self, cid: u16) -> &mut [u8] {
        let s = self.0[cid as usize];
        // SAFETY: as in `outgoing`; the queue writes a read's data into it
        // while the command is in flight, from its receive buffer, which
        // never overlaps a slot buffer.
        unsafe { std::slice::from_raw_parts_mut(s.buf, s.len_bytes as usize) }
    }
}

/// Most slices in one send: framed runs and write data alternate, so this
/// covers 32 in-capsule writes per system call.
const IOVECS_PER_SEND: usize = 64;

/// One NVMe/TCP I/O queue driven without allocation.
pub struct TcpBackend {
    /// Kept open: the controller lives as long as its admin queue.
    _admin: Initiator,
    stream: nvmf::host::Stream,
    queue: HostQueue,
    slots: Slots,
    nsid: u32,
    lba_shift: u32,
    /// A command the queue refused (a bug here or a failed queue), reported
    /// by the next `reap`.
    refused: Option<HostError>,
    /// What set-up negotiated, reported with the result.
    pub note: String,
    /// Busy-poll the socket instead of sleeping in poll(2) (`--poll`).
    poll: bool,
    /// Since when a busy-polling reap has found nothing (its reply
    /// timeout).
    idle_since: Option<std::time::Instant>,
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
    ) -> Result<TcpBackend, SetupError> {
        let depth = depth.max(1);
        let entries = depth as u32 + 1;
        if entries > t.max_queue_entries.min(MAX_QUEUE_ENTRIES) {
            return Err(SetupError::QueueEntries {
                depth,
                entries,
                granted: t.max_queue_entries,
                paths: false,
            });
        }
        let mut io_opts = o.initiator();
        io_opts.queue_entries = entries as u16;
        io_opts.in_capsule_max_bytes = t.in_capsule_max_bytes;
        io_opts.max_data_bytes = max_io_bytes as u32;
        let admin = admin_queue(&t.url, t.addr, &io_opts)?;
        // The I/O queue asks the target to disable SQ flow control (CATTR
        // bit 2): no SQHD to track, and a read's last C2HData may carry
        // SUCCESS instead of a separate response capsule (SPDK's target sent
        // each read's data, waited for that send, then the response).
        io_opts.disable_sqflow = true;
        let q = Initiator::connect_io(t.addr, &t.url.subnqn, admin.cntlid, 1, &io_opts)
            .map_err(|e| SetupError::step(&t.url, t.addr, "connecting I/O queue 1", e))?;
        let (stream, mut queue) = q.into_parts().map_err(|e| SetupError::IntoParts {
            addr: t.addr,
            source: Box::new(e),
        })?;
        queue.set_vectored(stream.can_wait_in_read());
        stream
            .set_wait_in_read(REPLY_TIMEOUT)
            .map_err(|source| SetupError::ReceiveTimeout {
                addr: t.addr,
                source,
            })?;
        let on = |b: bool| if b { "on" } else { "off" };
        let framing = queue.framing();
        let tls = stream
            .tls_cipher()
            .map_or_else(String::new, |c| format!(", TLS 1.3 {c}"));
        let polling = if o.poll { ", busy-polling" } else { "" };
        let note = format!(
            "tcp backend: NVMe/TCP I/O queue of {entries} entries to {}, header digest {}, data digest {}, writes up to {} B in the capsule{tls}{polling}",
            t.addr,
            on(framing.header_digest),
            on(framing.data_digest),
            t.in_capsule_max_bytes
        );
        let idle = Slot {
            buf: std::ptr::null_mut(),
            len_bytes: 0,
            dir: Dir::Read,
        };
        Ok(TcpBackend {
            _admin: admin,
            stream,
            queue,
            slots: Slots(vec![idle; depth].into_boxed_slice()),
            nsid: t.url.nsid,
            lba_shift: lba_bytes.trailing_zeros(),
            refused: None,
            note,
            poll: o.poll,
            idle_since: None,
        })
    }

    /// Writes what the socket takes now: over plain TCP in sendmsg(2)s
    /// whose slices point at the write data in the worker's buffers (the
    /// queue is vectored), else from the queue's send buffer.
    fn flush(&mut self) -> io::Result<()> {
        loop {
            let r = if self.stream.can_wait_in_read() {
                let mut iov = [io::IoSlice::new(&[]); IOVECS_PER_SEND];
                let n = self.queue.tx_iovecs(&self.slots, &mut iov);
                if n == 0 {
                    return Ok(());
                }
                self.stream.write_vectored_nowait(&iov[..n])
            } else {
                let b = self.queue.tx_pending(&self.slots);
                if b.is_empty() {
                    return Ok(());
                }
                self.stream.write_nowait(b)
            };
            match r {
                Ok(0) => return Err(closed()),
                Ok(n) => self.queue.tx_sent(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads what the socket holds into the queue; false when nothing was
    /// there. With `wait`, sleeps in the read until something arrives
    /// (false then means the reply timeout passed).
    fn receive(&mut self, wait: bool) -> io::Result<bool> {
        let space = self.queue.rx_space();
        let n = loop {
            let r = if wait {
                self.stream.read_wait(space)
            } else {
                self.stream.read_nowait(space)
            };
            match r {
                Ok(0) => return Err(closed()),
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.queue
            .on_received(n, &mut self.slots)
            .map_err(protocol)?;
        Ok(true)
    }

    /// The worker's completion of a command the queue completed.
    fn completion(&self, c: HostCompletion) -> io::Result<Completion> {
        let slot = c.cqe.cid;
        let s = self.slots.0[slot as usize];
        let st = c.cqe.status();
        let result = if !st.is_success() {
            crate::backend::nvme_error_result(st.field())
        } else if s.dir == Dir::Read && c.data_bytes != s.len_bytes {
            return Err(bad(format!(
                "read cid {slot} completed with {} of {} bytes",
                c.data_bytes, s.len_bytes
            )));
        } else {
            s.len_bytes as i32
        };
        Ok(Completion {
            slot: u32::from(slot),
            result,
        })
    }

    /// One empty turn of a busy-polling reap: gives up as [`Self::wait`]
    /// does when the target stays silent for the reply timeout.
    fn spin(&mut self) -> io::Result<()> {
        let since = *self.idle_since.get_or_insert_with(std::time::Instant::now);
        if since.elapsed() >= REPLY_TIMEOUT {
            return Err(self.silent());
        }
        std::hint::spin_loop();
        Ok(())
    }

    /// The target said nothing for the reply timeout.
    fn silent(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no reply from the NVMe/TCP target in {}s with {} I/Os in flight",
                REPLY_TIMEOUT.as_secs(),
                self.queue.in_flight()
            ),
        )
    }

    /// Waits until the socket is readable (or writable, with bytes to send).
    fn wait(&self) -> io::Result<()> {
        if self.stream.buffered() {
            // TLS decrypted more than the queue took: no need to poll.
            return Ok(());
        }
        let mut pfd = libc::pollfd {
            fd: self.stream.as_raw_fd(),
            events: libc::POLLIN
                | if self.queue.wants_to_send() {
                    libc::POLLOUT
                } else {
                    0
                },
            revents: 0,
        };
        // SAFETY: one valid pollfd on the stack for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, REPLY_TIMEOUT.as_millis() as i32) };
        match rc {
            0 => Err(self.silent()),
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
}

impl Backend for TcpBackend {
    unsafe fn queue(&mut self, io: IoRequest) {
        debug_assert!(
            !self.queue.is_in_flight(io.slot as u16),
            "slot queued twice"
        );
        debug_assert_eq!(io.offset_bytes & ((1 << self.lba_shift) - 1), 0);
        debug_assert_eq!(io.len_bytes & ((1 << self.lba_shift) - 1), 0);
        let (sqe, xfer) = match io.dir {
            Dir::Read => command::read(self.nsid, io.offset_bytes, io.len_bytes, self.lba_shift),
            Dir::Write => command::write(self.nsid, io.offset_bytes, io.len_bytes, self.lba_shift),
        };
        self.slots.0[io.slot as usize] = Slot {
            buf: io.buf,
            len_bytes: io.len_bytes,
            dir: io.dir,
        };
        if let Err(e) = self.queue.submit(io.slot as u16, sqe, xfer, &self.slots) {
            self.refused.get_or_insert(e);
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        self.flush()
    }

    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize> {
        if let Some(e) = self.refused.take() {
            return Err(bad(e.to_string()));
        }
        loop {
            self.flush()?;
            // A plain socket sleeps in its read when the worker must wait
            // and nothing waits to be sent: one system call instead of a
            // read that finds nothing, poll(2) and the read.
            let sleep_in_read = !self.poll
                && min > 0
                && self.stream.can_wait_in_read()
                && !self.queue.wants_to_send()
                && self.queue.completions_ready() < min;
            let got = self.receive(sleep_in_read)?;
            if got {
                self.idle_since = None;
            } else if sleep_in_read {
                return Err(self.silent());
            }
            if self.queue.wants_to_send() {
                // H2CData answering the R2Ts just read.
                self.flush()?;
            }
            let done = self.queue.completions_ready();
            if done >= min.max(1) || (min == 0 && !got) {
                break;
            }
            if !got {
                if self.poll {
                    self.spin()?;
                } else {
                    self.wait()?;
                }
            }
        }
        let mut n = 0;
        while n < out.len() {
            let Some(c) = self.queue.completion() else {
                break;
            };
            out[n] = self.completion(c)?;
            n += 1;
        }
        Ok(n)
    }
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

fn protocol(e: HostError) -> io::Error {
    bad(e.to_string())
}
