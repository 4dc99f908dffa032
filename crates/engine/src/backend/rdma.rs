//! The `rdma` backend: NVMe over RDMA from user space, one I/O queue (one
//! RDMA connection, a reliable-connected queue pair) per worker, over
//! nvmf's NVMe/RDMA host ([`nvmf::host::rdma`]) and the system's rdma-core.
//!
//! Target syntax: `nvme-rdma://HOST[:PORT]/SUBNQN[/NSID]` (port 4420 and
//! NSID 1 by default). Set-up: an admin queue (Connect, CC.EN, Identify
//! Controller, which must offer keyed SGLs, Number of Queues = 1, Identify
//! Namespace), then I/O queue 1 with `iodepth + 1` entries. A slot's command
//! id is its slot index. Writes up to the controller's in-capsule size go
//! in the command capsule, larger ones and every read through the command
//! id's registered buffer, which the target reads or writes by RDMA; the
//! data is copied between that buffer and the worker's (the worker's
//! buffers are not registered with the RDMA device). The admin queue stays
//! open for the run: closing it would end the controller.

use std::io;
use std::time::Duration;

use nvme_spec::Cqe;
use nvmf::host::command;
use nvmf::host::command::HostIdentity;
use nvmf::host::rdma::{RdmaController, RdmaQueue};
use nvmf::host::Transfer;

use super::tcp::{parse_fabric_url, ResolveError, TcpOptions, TcpUrl, UrlError};
use super::{Backend, Completion, IoRequest};
use crate::stats::Dir;

/// The scheme of an NVMe/RDMA target.
pub const SCHEME: &str = planner::Fabric::Rdma.scheme();
/// How long a reply may take before the run fails.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `path` names an NVMe/RDMA target.
pub fn is_rdma_target(path: &str) -> bool {
    planner::TargetAddr::parse(path).fabric() == Some(planner::Fabric::Rdma)
}

/// Parses `nvme-rdma://HOST[:PORT]/SUBNQN[/NSID]`.
pub fn parse_rdma_url(s: &str) -> Result<TcpUrl, UrlError> {
    let fabric = planner::Fabric::Rdma;
    if s.strip_prefix(SCHEME)
        .is_some_and(|rest| rest.contains(','))
    {
        return Err(UrlError::SeveralPortals {
            fabric,
            text: s.to_string(),
        });
    }
    parse_fabric_url(s, fabric)
}

/// A set-up step of the `rdma` backend that failed, with its inputs.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// rdma-core cannot be loaded (the text names the package).
    #[error("{source}")]
    Libraries {
        /// The loader's error.
        source: sysapi::rdma::RdmaError,
    },
    /// The URL does not parse.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The host does not resolve.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The admin queue's Connect, sent as `hostnqn`, failed.
    #[error("connect as host {hostnqn} with {}:{} failed: {source}; {}", .url.host, .url.port, hint(true, .url, .source))]
    Connect {
        /// The target.
        url: Box<TcpUrl>,
        /// The host NQN sent.
        hostnqn: String,
        /// The initiator's error.
        source: Box<nvmf::InitiatorError>,
    },
    /// A later set-up step failed.
    #[error("{step} with {}:{} failed: {source}; {}", .url.host, .url.port, hint(.step.starts_with("connect"), .url, .source))]
    Step {
        /// The step (`Identify Namespace`, …).
        step: &'static str,
        /// The target.
        url: Box<TcpUrl>,
        /// The initiator's error.
        source: Box<nvmf::InitiatorError>,
    },
    /// Identify Namespace refused the NSID.
    #[error(
        "namespace {} is not in subsystem {} (the controller reports NSIDs up to {nn}); give an \
         existing NSID as nvme-rdma://{}:{}/{}/NSID",
        .url.nsid, .url.subnqn, .url.host, .url.port, .url.subnqn
    )]
    NoNamespace {
        /// The target.
        url: Box<TcpUrl>,
        /// The controller's number of namespaces (Identify Controller NN).
        nn: u32,
    },
    /// An iodepth whose queue is larger than the controller grants.
    #[error(
        "iodepth={depth} needs a {entries}-entry queue; the controller grants at most {granted} \
         (CAP.MQES); use --iodepth {} or less",
        .granted.saturating_sub(1)
    )]
    QueueEntries {
        /// The iodepth asked.
        depth: usize,
        /// Entries it needs.
        entries: u32,
        /// Entries granted (CAP.MQES + 1).
        granted: u32,
    },
    /// I/Os larger than the controller's largest transfer.
    #[error(
        "I/Os of {io_bytes} B exceed the controller's largest transfer ({max_transfer_bytes} B, \
         MDTS); use a smaller --bs"
    )]
    TransferSize {
        /// The largest I/O asked.
        io_bytes: usize,
        /// The controller's largest transfer.
        max_transfer_bytes: u64,
    },
}

/// What set-up learnt about an NVMe/RDMA namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmeRdma {
    /// The target as parsed.
    pub url: TcpUrl,
    /// The address connected to.
    pub addr: std::net::SocketAddr,
    /// Largest transfer of one command (MDTS).
    pub max_transfer_bytes: u64,
    /// Largest write sent in the command capsule (IOCCSZ).
    pub in_capsule_max_bytes: u32,
    /// Largest I/O queue the controller grants (CAP.MQES + 1).
    pub max_queue_entries: u32,
}

fn identity(o: &TcpOptions) -> HostIdentity {
    o.initiator().identity()
}

/// The likely fix of a failed set-up step (`connect`: a Connect's).
fn hint(connect: bool, url: &TcpUrl, e: &nvmf::InitiatorError) -> String {
    match e {
        nvmf::InitiatorError::Command { status, .. } if connect => format!(
            "the target refused subsystem {:?} ({status}): check the NQN (`nvme discover -t rdma -a {} -s {}`) and that this host may connect (--hostnqn)",
            url.subnqn, url.host, url.port
        ),
        _ => format!(
            "check that an NVMe/RDMA target listens on {}:{} (numio serve --transport rdma, or an nvmet-rdma port) and that an RDMA device holds this host's route to it (`rdma link`)",
            url.host, url.port
        ),
    }
}

impl SetupError {
    fn step(url: &TcpUrl, step: &'static str) -> impl FnOnce(nvmf::InitiatorError) -> Self {
        let url = Box::new(url.clone());
        move |e| SetupError::Step {
            step,
            url,
            source: Box::new(e),
        }
    }
}

/// An admin queue to `url`'s subsystem, controller enabled, one I/O queue
/// asked for.
fn controller(url: &TcpUrl, o: &TcpOptions) -> Result<RdmaController, SetupError> {
    sysapi::rdma::check_libraries().map_err(|source| SetupError::Libraries { source })?;
    let addr = url.resolve()?;
    let host = identity(o);
    let hostnqn = host.hostnqn.clone();
    let mut c = RdmaController::connect(addr, &url.subnqn, host, REPLY_TIMEOUT).map_err(|e| {
        SetupError::Connect {
            url: Box::new(url.clone()),
            hostnqn,
            source: Box::new(e),
        }
    })?;
    c.set_queues(1)
        .map_err(SetupError::step(url, "Set Features (Number of Queues)"))?;
    Ok(c)
}

/// Connects, reads Identify Controller and Namespace: the namespace's size
/// and LBA size, and the controller's limits.
pub fn inspect(url_text: &str, o: &TcpOptions) -> Result<(NvmeRdma, u64, u32), SetupError> {
    let url = parse_rdma_url(url_text)?;
    let mut c = controller(&url, o)?;
    let (size, lba) = c.namespace(url.nsid).map_err(|e| match e {
        nvmf::InitiatorError::Command { .. } => SetupError::NoNamespace {
            url: Box::new(url.clone()),
            nn: c.id.nn,
        },
        e => SetupError::step(&url, "Identify Namespace")(e),
    })?;
    let t = NvmeRdma {
        addr: c.addr,
        max_transfer_bytes: u64::from(c.max_transfer_bytes()),
        in_capsule_max_bytes: c.in_capsule_bytes(),
        max_queue_entries: c.max_queue_entries,
        url,
    };
    c.admin.disconnect();
    Ok((t, size, lba))
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    buf: *mut u8,
    len_bytes: u32,
    dir: Dir,
}

/// One NVMe/RDMA I/O queue.
pub struct RdmaBackend {
    /// Kept open: the controller lives as long as its admin queue.
    _ctrl: RdmaController,
    q: RdmaQueue,
    slots: Box<[Slot]>,
    nsid: u32,
    lba_shift: u32,
    cqes: Vec<Cqe>,
    refused: Option<String>,
    /// What set-up negotiated, reported with the result.
    pub note: String,
}

impl RdmaBackend {
    /// Connects one admin and one I/O queue (`depth + 1` entries) to `t`.
    pub fn connect(
        t: &NvmeRdma,
        lba_bytes: u32,
        depth: usize,
        max_io_bytes: usize,
        o: &TcpOptions,
        node: Option<u32>,
    ) -> Result<RdmaBackend, SetupError> {
        let depth = depth.max(1);
        let entries = depth as u32 + 1;
        if entries > t.max_queue_entries {
            return Err(SetupError::QueueEntries {
                depth,
                entries,
                granted: t.max_queue_entries,
            });
        }
        if max_io_bytes as u64 > t.max_transfer_bytes {
            return Err(SetupError::TransferSize {
                io_bytes: max_io_bytes,
                max_transfer_bytes: t.max_transfer_bytes,
            });
        }
        let ctrl = controller(&t.url, o)?;
        let q = ctrl
            .io_queue(1, entries as u16, max_io_bytes as u32, node)
            .map_err(SetupError::step(&t.url, "connecting I/O queue 1"))?;
        let note = format!(
            "rdma backend: NVMe/RDMA I/O queue of {entries} entries to {}, writes up to {} B in the capsule, other data by the target's RDMA READ/WRITE of registered buffers (copied to and from the worker's)",
            t.addr,
            t.in_capsule_max_bytes.min(max_io_bytes as u32)
        );
        let idle = Slot {
            buf: std::ptr::null_mut(),
            len_bytes: 0,
            dir: Dir::Read,
        };
        Ok(RdmaBackend {
            _ctrl: ctrl,
            q,
            slots: vec![idle; depth].into_boxed_slice(),
            nsid: t.url.nsid,
            lba_shift: lba_bytes.trailing_zeros(),
            cqes: Vec::with_capacity(depth),
            refused: None,
            note,
        })
    }

    /// Moves the responses that arrived (with `wait`, waiting up to the
    /// reply timeout for one) into `out` after its first `n`; returns the
    /// new count.
    fn collect(&mut self, out: &mut [Completion], mut n: usize, wait: bool) -> io::Result<usize> {
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.clear();
        let r = if wait {
            self.q.wait(&mut cqes, REPLY_TIMEOUT)
        } else {
            self.q.poll(&mut cqes)
        };
        for &c in cqes.iter() {
            if n < out.len() {
                out[n] = self.completion(c);
                n += 1;
            }
        }
        self.cqes = cqes;
        r.map_err(|e| io::Error::other(e.to_string()))?;
        Ok(n)
    }

    fn completion(&mut self, cqe: Cqe) -> Completion {
        let slot = cqe.cid;
        let s = self.slots[slot as usize];
        let st = cqe.status();
        let result = if !st.is_success() {
            super::nvme_error_result(st.field())
        } else {
            if s.dir == Dir::Read {
                let data = self.q.data(slot, s.len_bytes as usize);
                // SAFETY: the worker handed this slot's buffer of len_bytes
                // with the I/O (Backend::queue's contract) and leaves it
                // alone until this completion is reaped; the queue's
                // registered buffer never overlaps it.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), s.buf, data.len()) };
            }
            s.len_bytes as i32
        };
        Completion {
            slot: u32::from(slot),
            result,
        }
    }
}

impl Backend for RdmaBackend {
    unsafe fn queue(&mut self, io: IoRequest) {
        let cid = io.slot as u16;
        let (sqe, xfer) = match io.dir {
            Dir::Read => command::read(self.nsid, io.offset_bytes, io.len_bytes, self.lba_shift),
            Dir::Write => command::write(self.nsid, io.offset_bytes, io.len_bytes, self.lba_shift),
        };
        if io.dir == Dir::Write {
            let dst = self.q.data_mut(cid, io.len_bytes as usize);
            // SAFETY: io.buf holds len_bytes the worker handed over for this
            // I/O (this fn's contract); dst is the queue's own buffer.
            unsafe { std::ptr::copy_nonoverlapping(io.buf, dst.as_mut_ptr(), dst.len()) };
        }
        self.slots[cid as usize] = Slot {
            buf: io.buf,
            len_bytes: io.len_bytes,
            dir: io.dir,
        };
        debug_assert!(matches!(
            xfer,
            Transfer::FromController(_) | Transfer::ToController(_)
        ));
        if let Err(e) = self.q.submit(sqe, cid, xfer) {
            self.refused.get_or_insert(e.to_string());
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        // Each command was posted as it was queued.
        Ok(())
    }

    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize> {
        if let Some(e) = self.refused.take() {
            return Err(io::Error::other(e));
        }
        let mut n = self.collect(out, 0, false)?;
        while n < min {
            let before = n;
            n = self.collect(out, n, true)?;
            if n == before {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no reply from the NVMe/RDMA target in {}s with {} I/Os in flight",
                        REPLY_TIMEOUT.as_secs(),
                        self.q.in_flight()
                    ),
                ));
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_errors_name_the_rdma_form() {
        let u = parse_rdma_url("nvme-rdma://10.0.0.1/nqn.2026-01.io.numio:a/2").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.nsid), ("10.0.0.1", 4420, 2));
        assert_eq!(u.subnqn, "nqn.2026-01.io.numio:a");
        let e = parse_rdma_url("nvme-rdma://10.0.0.1").unwrap_err();
        assert_eq!(
            e,
            UrlError::NoSubsystem {
                fabric: planner::Fabric::Rdma
            }
        );
        let e = e.to_string();
        assert!(e.contains("nvme-rdma://HOST"), "{e}");
        assert!(!e.contains("nvme-tcp"), "{e}");
        let e = parse_rdma_url("nvme-rdma://a/n,nvme-rdma://b/n").unwrap_err();
        assert!(matches!(e, UrlError::SeveralPortals { .. }), "{e:?}");
        assert!(
            e.to_string().contains(
                "several portals; the rdma backend reaches one (NVMe/RDMA multipath is not built yet)"
            ),
            "{e}"
        );
        let e = SetupError::QueueEntries {
            depth: 64,
            entries: 65,
            granted: 32,
        };
        assert_eq!(
            e.to_string(),
            "iodepth=64 needs a 65-entry queue; the controller grants at most 32 (CAP.MQES); use --iodepth 31 or less"
        );
        assert!(is_rdma_target("nvme-rdma://h/n"));
        assert!(!is_rdma_target("nvme-tcp://h/n"));
    }
}
