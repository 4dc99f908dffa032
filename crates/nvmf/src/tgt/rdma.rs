//! NVMe/RDMA listeners of `numio serve --transport rdma`: the RDMA CM
//! listener and one thread per connected queue, each driving an
//! [`RdmaQueue`] over a [`sysapi::rdma::Endpoint`].
//!
//! A connect request's private data (queue id, HSQSIZE, HRQSIZE) is
//! checked before anything is allocated: a bad one is rejected with the
//! NVMe/RDMA status that names it. An accepted queue gets its receive
//! buffers (one command capsule each, posted once and re-posted as each is
//! consumed), staging buffers for RDMA READ and WRITE and response buffers,
//! all in one region registered once, on the node of the CPU the queue's
//! thread runs on. The thread polls its completion queue while work comes
//! and sleeps on the completion channel when the queue is idle (the same
//! event-driven idle as the TCP reactors).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvme_spec::rdma::{CmAccept, CmRequest, RejectStatus, RECFMT};
use sysapi::rdma::{
    self as verbs, CmId, Completion, ConnParams, Endpoint, EventChannel, QueueSizes,
};

use super::config::ADMIN_IN_CAPSULE_BYTES;
use super::counters::Refused;
use super::error::TargetError;
use super::event_loop::{DRAIN_GRACE, TICK};
use super::queue::Connection;
use super::rdma_queue::{Post, RdmaQueue};
use super::subsystem::Target;
use crate::log::{Level, Stream};

const RECV: u64 = 1 << 60;
const READ: u64 = 2 << 60;
const WRITE: u64 = 3 << 60;
const SEND: u64 = 4 << 60;
const KIND: u64 = 0xF << 60;
/// A response the host has not taken for this long ends the queue: a host
/// that posts no receive keeps the target's send in receiver-not-ready
/// retries for ever (the host's connect asks for unlimited RNR retries,
/// and that count is the one the target's queue pair uses).
pub const SEND_STALL: Duration = Duration::from_secs(10);

/// Bound RDMA listeners, not yet served.
#[derive(Debug)]
pub struct RdmaListeners {
    /// Bound addresses (ports resolved when 0 was given), in order.
    pub addrs: Vec<SocketAddr>,
    ch: EventChannel,
    ids: Vec<CmId>,
}

/// Binds `addrs` for NVMe/RDMA (before the target exists, so its ports
/// name the bound addresses); a missing rdma-core or RDMA device fails
/// here with its fix.
pub fn bind(addrs: &[SocketAddr]) -> Result<RdmaListeners, TargetError> {
    let fail = |what: String| TargetError::Rdma(what);
    verbs::check_libraries().map_err(|e| fail(e.0))?;
    let ch = EventChannel::new().map_err(|e| fail(e.0))?;
    let mut ids = Vec::new();
    let mut bound = Vec::new();
    for a in addrs {
        let id = CmId::new(&ch).map_err(|e| fail(e.0))?;
        id.listen(*a, 1024).map_err(|e| fail(e.0))?;
        bound.push(SocketAddr::new(a.ip(), id.local_port()));
        ids.push(id);
    }
    Ok(RdmaListeners {
        addrs: bound,
        ch,
        ids,
    })
}

impl RdmaListeners {
    /// Serves the listeners as NVMe/RDMA ports `first_port`,
    /// `first_port + 1`, ... of `target`: starts the CM thread (which joins
    /// the queue threads it starts).
    pub fn serve(
        self,
        target: &Arc<Target>,
        first_port: u16,
    ) -> Result<JoinHandle<()>, TargetError> {
        let t = target.clone();
        let (ch, ids) = (self.ch, self.ids);
        std::thread::Builder::new()
            .name("numio-rdma-cm".into())
            .spawn(move || cm_loop(t, ch, ids, first_port))
            .map_err(|source| TargetError::Os {
                what: "spawning the RDMA CM thread",
                source,
            })
    }
}

fn cm_loop(target: Arc<Target>, mut ch: EventChannel, ids: Vec<CmId>, first_port: u16) {
    let mut queues: Vec<JoinHandle<()>> = Vec::new();
    while !target.shutting_down.load(Ordering::Acquire) {
        if verbs::poll_in(&[ch.fd()], TICK).is_err() {
            break;
        }
        queues.retain(|h| !h.is_finished());
        loop {
            let ev = match ch.try_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(e) => {
                    warn("rdma_cm_error", format!("RDMA CM: {e}"));
                    break;
                }
            };
            if ev.kind != verbs::event::CONNECT_REQUEST {
                continue;
            }
            let port = ids
                .iter()
                .position(|l| l.token() == ev.listen_token)
                .map_or(first_port, |i| first_port + i as u16);
            if let Some(h) = on_connect_request(&target, ev, port) {
                queues.push(h);
            }
        }
    }
    for h in queues {
        let _ = h.join();
    }
    drop(ids);
}

fn warn(event: &'static str, msg: String) {
    if crate::log::enabled(Level::Warn) {
        crate::log::emit(Stream::Err, Level::Warn, event, format_args!("{msg}"), &[]);
    }
}

/// Checks a connect request's private data against the target's limits:
/// the queue's depth, or the reject status and what was wrong.
pub fn check_request(
    target: &Target,
    private: &[u8],
) -> Result<(CmRequest, u16), (RejectStatus, String)> {
    let req = CmRequest::decode(private).map_err(|s| {
        let what = match s {
            RejectStatus::InvalidRecfmt => format!(
                "RECFMT {} (only 0 exists)",
                u16::from_le_bytes([private[0], private[1]])
            ),
            _ => format!("{} bytes of private data, 32 needed", private.len()),
        };
        (s, what)
    })?;
    let depth = u32::from(req.hsqsize) + 1;
    let (max, which) = if req.qid == 0 {
        (target.limits.admin_queue_depth, "admin_queue_depth")
    } else {
        (
            target.limits.max_queue_depth,
            "max_queue_depth (--queue-depth)",
        )
    };
    if req.hsqsize == 0 || depth > u32::from(max) {
        return Err((
            RejectStatus::InvalidHsqsize,
            format!(
                "HSQSIZE {} asks for a {depth}-entry queue {}; the target takes 2 to {max} ({which})",
                req.hsqsize, req.qid
            ),
        ));
    }
    if req.hrqsize == 0 {
        return Err((
            RejectStatus::InvalidHrqsize,
            "HRQSIZE 0: the host can take no response".into(),
        ));
    }
    if req.qid > target.limits.max_io_queues {
        return Err((
            RejectStatus::InvalidQid,
            format!(
                "queue id {} past the {} I/O queues a controller may have (max_io_queues)",
                req.qid, target.limits.max_io_queues
            ),
        ));
    }
    Ok((req, depth as u16))
}

fn on_connect_request(
    target: &Arc<Target>,
    ev: verbs::CmEvent,
    port: u16,
) -> Option<JoinHandle<()>> {
    let id = ev.new_id?;
    let peer = id.peer_addr();
    let peer_s = peer.map_or_else(|| "an unknown peer".into(), |p| p.to_string());
    let refuse = |id: CmId, st: RejectStatus, why: String| {
        target.refusals.count(Refused::InvalidConnect);
        target.changed();
        warn(
            "rdma_connect_rejected",
            format!("rejecting an NVMe/RDMA queue from {peer_s}: {why}"),
        );
        let _ = id.reject(&st.encode());
        None
    };
    if target.shutting_down.load(Ordering::Acquire) {
        return refuse(
            id,
            RejectStatus::NoResources,
            "the target is shutting down".into(),
        );
    }
    let (req, depth) = match check_request(target, &ev.private_data) {
        Ok(r) => r,
        Err((st, what)) => {
            let why = format!("{}: {what}", st.describe());
            return refuse(id, st, why);
        }
    };
    // An RDMA queue is never closed for room (the ledger has no socket of
    // it); one without an address takes a slot all the same.
    let ticket = match peer.map(|p| p.ip()) {
        Some(ip) => match target.admit(ip, None) {
            Ok((t, _)) => t,
            Err(why) => return refuse(id, RejectStatus::NoResources, why.to_string()),
        },
        None => target.admit_unaddressed(),
    };
    let ird = ev.responder_resources;
    let t = target.clone();
    let tk = ticket.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("numio-rdma-q{}", req.qid))
        .spawn(move || {
            serve_queue(&t, id, req, depth, ird, port, peer_s);
            t.release(&tk);
        });
    match spawned {
        Ok(h) => Some(h),
        Err(e) => {
            warn(
                "rdma_queue_thread",
                format!("cannot start an RDMA queue thread: {e}"),
            );
            target.release(&ticket);
            None
        }
    }
}

/// Memory layout of a queue's region.
struct Layout {
    depth: u32,
    capsule: usize,
    stage: usize,
    recv_at: usize,
    stage_at: usize,
    resp_at: usize,
    resp_slots: u32,
    total: usize,
}

impl Layout {
    fn new(target: &Target, qid: u16, depth: u16) -> Self {
        let in_capsule = if qid == 0 {
            ADMIN_IN_CAPSULE_BYTES
        } else {
            target.limits.io_in_capsule_bytes
        };
        let depth = u32::from(depth);
        let capsule = 64 + in_capsule as usize;
        let stage = target
            .limits
            .max_h2c_data_bytes
            .max(target.limits.max_c2h_data_bytes) as usize;
        let resp_slots = depth * 2;
        let recv_at = 0;
        let stage_at = recv_at + depth as usize * capsule;
        let resp_at = stage_at + depth as usize * stage;
        let total = resp_at + resp_slots as usize * 16;
        Self {
            depth,
            capsule,
            stage,
            recv_at,
            stage_at,
            resp_at,
            resp_slots,
            total,
        }
    }
}

fn serve_queue(
    target: &Arc<Target>,
    id: CmId,
    req: CmRequest,
    depth: u16,
    ird: u8,
    port: u16,
    peer: String,
) {
    let l = Layout::new(target, req.qid, depth);
    // SAFETY: sched_getcpu has no arguments and no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    let node = usize::try_from(cpu).ok().and_then(topology_node);
    let sizes = QueueSizes {
        // Responses, RDMA WRITEs and READs: at most one of each per command
        // in flight, plus slack for responses still completing.
        send: l.depth * 3 + l.resp_slots,
        recv: l.depth,
        region_bytes: l.total,
        node,
    };
    let rdma_ird = id.max_rd_atom().min(ird.max(1));
    let mut ep = match Endpoint::new(id, sizes) {
        Ok(ep) => ep,
        Err(e) => {
            warn(
                "rdma_queue_setup",
                format!("NVMe/RDMA queue from {peer}: {e}"),
            );
            return;
        }
    };
    for i in 0..l.depth {
        if let Err(e) = ep.post_recv(
            RECV | u64::from(i),
            l.recv_at + i as usize * l.capsule,
            l.capsule as u32,
        ) {
            warn(
                "rdma_queue_setup",
                format!("NVMe/RDMA queue from {peer}: {e}"),
            );
            return;
        }
    }
    let accept = CmAccept {
        recfmt: RECFMT,
        crqsize: depth,
    };
    let params = ConnParams {
        responder_resources: 0,
        initiator_depth: rdma_ird,
        // Finite: a host that posts no receives fails its queue.
        rnr_retry: 6,
    };
    if let Err(e) = ep.accept(&accept.encode(), params) {
        warn(
            "rdma_queue_setup",
            format!("NVMe/RDMA queue from {peer}: {e}"),
        );
        return;
    }
    let conn = Connection::new(target.clone()).on_port(port);
    let mut q = RdmaQueue::new(conn, l.depth, l.stage as u32);
    let mut free_resp: Vec<u32> = (0..l.resp_slots).rev().collect();
    // When each response buffer's send was posted (None: free).
    let mut resp_posted: Vec<Option<Instant>> = vec![None; l.resp_slots as usize];
    let mut wcs = Vec::with_capacity(64);
    let mut last_tick = Instant::now();
    let mut drain_deadline: Option<Instant> = None;
    let why: Option<String>;
    'run: loop {
        // Work the completions; when there are none, arm and sleep.
        let n = match ep.poll(&mut wcs) {
            Ok(n) => n,
            Err(e) => {
                why = Some(e.0);
                break;
            }
        };
        let n = if n == 0 {
            match ep.arm(&mut wcs) {
                Ok(0) => {
                    let _ = verbs::poll_in(&ep.fds(), TICK);
                    0
                }
                Ok(n) => n,
                Err(e) => {
                    why = Some(e.0);
                    break;
                }
            }
        } else {
            n
        };
        for w in wcs.iter().take(n).copied().collect::<Vec<Completion>>() {
            if !w.ok() {
                why = Some(format!(
                    "{} on a work request ({})",
                    w.status_name(),
                    kind_name(w.wr_id)
                ));
                break 'run;
            }
            let idx = w.wr_id & !KIND;
            match w.wr_id & KIND {
                RECV => {
                    let at = l.recv_at + idx as usize * l.capsule;
                    let len = (w.byte_len as usize).min(l.capsule);
                    let capsule = ep.region().bytes()[at..at + len].to_vec();
                    if let Err(e) = ep.post_recv(w.wr_id, at, l.capsule as u32) {
                        why = Some(e.0);
                        break 'run;
                    }
                    q.on_capsule(&capsule);
                }
                READ => {
                    let cid = idx as u16;
                    let Some((stage, len)) = q.reading_stage(cid) else {
                        continue;
                    };
                    let at = l.stage_at + stage as usize * l.stage;
                    let data = ep.region().bytes()[at..at + len as usize].to_vec();
                    q.read_done(cid, &data);
                }
                WRITE => q.write_done(idx as u16),
                SEND => {
                    free_resp.push(idx as u32);
                    resp_posted[idx as usize] = None;
                }
                _ => {}
            }
        }
        // Make the posts.
        while let Some(p) = q.next_post() {
            if let Err(e) = make_post(&mut ep, &l, &mut free_resp, &mut resp_posted, p) {
                why = Some(e.to_string());
                break 'run;
            }
        }
        // Connection events: a disconnect ends the queue.
        loop {
            match ep.try_event() {
                Ok(Some(ev))
                    if ev.kind == verbs::event::DISCONNECTED
                        || ev.kind == verbs::event::DEVICE_REMOVAL =>
                {
                    why = Some(format!("host {}", verbs::event_name(ev.kind)));
                    break 'run;
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    why = Some(e.0);
                    break 'run;
                }
            }
        }
        let now = Instant::now();
        if now.duration_since(last_tick) >= TICK {
            last_tick = now;
            if let Some(t) = resp_posted.iter().flatten().min() {
                if now.duration_since(*t) >= SEND_STALL {
                    why = Some(format!(
                        "a response not taken for {} s (RNR: the host posts no receives)",
                        SEND_STALL.as_secs()
                    ));
                    break;
                }
            }
            if target.shutting_down.load(Ordering::Acquire) {
                let deadline = *drain_deadline.get_or_insert_with(|| now + DRAIN_GRACE);
                if now >= deadline || q.conn.can_close_for_shutdown() {
                    why = Some("target shutting down".into());
                    break;
                }
            }
            if !q.tick(now) {
                // Posts made above went out before the disconnect.
                while let Some(p) = q.next_post() {
                    let _ = make_post(&mut ep, &l, &mut free_resp, &mut resp_posted, p);
                }
                why = Some(q.closing().unwrap_or("closed").to_string());
                break;
            }
        }
        if let Some(w) = q.closing() {
            why = Some(w.to_string());
            break;
        }
    }
    if target.log_connections && crate::log::enabled(Level::Info) {
        crate::log::emit(
            Stream::Out,
            Level::Info,
            "rdma_queue_closed",
            format_args!(
                "NVMe/RDMA queue {} from {peer} closed: {}",
                req.qid,
                why.as_deref().unwrap_or("closed")
            ),
            &[],
        );
    }
    ep.disconnect();
    q.conn.release();
    target.changed();
}

fn kind_name(wr_id: u64) -> &'static str {
    match wr_id & KIND {
        RECV => "receive",
        READ => "RDMA READ",
        WRITE => "RDMA WRITE",
        SEND => "send",
        _ => "unknown",
    }
}

/// A post the queue asked for that the RDMA device refused (rdma-core's
/// text names the call).
#[derive(Debug, thiserror::Error)]
enum PostError {
    /// RDMA READ of a write's data from the host.
    #[error("RDMA READ for command {cid}: {source}")]
    Read {
        /// The command.
        cid: u16,
        /// rdma-core's error.
        source: sysapi::rdma::RdmaError,
    },
    /// RDMA WRITE of a read's data to the host.
    #[error("RDMA WRITE for command {cid}: {source}")]
    Write {
        /// The command.
        cid: u16,
        /// rdma-core's error.
        source: sysapi::rdma::RdmaError,
    },
    /// Send of a response capsule.
    #[error("send of response buffer {slot}: {source}")]
    Send {
        /// The response buffer.
        slot: u32,
        /// rdma-core's error.
        source: sysapi::rdma::RdmaError,
    },
    /// A response with every send buffer in flight.
    #[error("more responses in flight than the queue's send buffers")]
    NoResponseBuffer,
}

fn make_post(
    ep: &mut Endpoint,
    l: &Layout,
    free_resp: &mut Vec<u32>,
    resp_posted: &mut [Option<Instant>],
    p: Post,
) -> Result<(), PostError> {
    match p {
        Post::Read {
            cid,
            stage,
            len,
            raddr,
            rkey,
        } => ep
            .post_read(
                READ | u64::from(cid),
                l.stage_at + stage as usize * l.stage,
                len,
                raddr,
                rkey,
            )
            .map_err(|source| PostError::Read { cid, source }),
        Post::Write {
            cid,
            stage,
            data,
            raddr,
            rkey,
        } => {
            let at = l.stage_at + stage as usize * l.stage;
            ep.region_mut().bytes_mut()[at..at + data.len()].copy_from_slice(&data);
            ep.post_write(
                WRITE | u64::from(cid),
                at,
                data.len() as u32,
                raddr,
                rkey,
                true,
            )
            .map_err(|source| PostError::Write { cid, source })
        }
        Post::Send { cqe, invalidate } => {
            let Some(slot) = free_resp.pop() else {
                return Err(PostError::NoResponseBuffer);
            };
            let at = l.resp_at + slot as usize * 16;
            resp_posted[slot as usize] = Some(Instant::now());
            ep.region_mut().bytes_mut()[at..at + 16].copy_from_slice(&cqe);
            ep.post_send(SEND | u64::from(slot), at, 16, invalidate, true)
                .map_err(|source| PostError::Send { slot, source })
        }
    }
}

fn topology_node(cpu: usize) -> Option<u32> {
    let p = format!("/sys/devices/system/cpu/cpu{cpu}");
    std::fs::read_dir(p)
        .ok()?
        .flatten()
        .find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
}

/// How long a queue thread sleeps at most between ticks.
pub const IDLE_WAIT: Duration = TICK;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_post_names_its_step_and_command() {
        let e = PostError::Read {
            cid: 7,
            source: sysapi::rdma::RdmaError("ibv_post_send: Cannot allocate memory".into()),
        };
        assert!(matches!(e, PostError::Read { cid: 7, .. }));
        assert_eq!(
            e.to_string(),
            "RDMA READ for command 7: ibv_post_send: Cannot allocate memory"
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
