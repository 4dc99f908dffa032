//! Fabrics commands: Connect (binds the queue) and Property Get/Set (the
//! controller registers CAP, VS, CC, CSTS).

use nvme_spec::fabrics::{
    self, prop, ConnectCmd, ConnectData, ConnectDataError, CC_ENABLE, CC_SHN_SHIFT, CNTLID_DYNAMIC,
    CSTS_READY, CSTS_SHST_COMPLETE,
};
use nvme_spec::{auth, Status};

use super::command::{Binding, Ctx, Outcome};
use super::counters::Refused;
use super::subsystem::ConnectRefusal;
use crate::log::{self, Level, Stream};

/// Version reported in VS and Identify: NVMe 1.3.
pub const NVME_VERSION: u32 = fabrics::version(1, 3, 0);
/// CAP.TO in 500 ms units (ready is immediate; this bounds host waits).
const CAP_TIMEOUT_500MS: u8 = 20;

/// Connect error result: IATTR (bit 16: 1 = in connect data) | IPO.
fn ipo(in_data: bool, offset: u32) -> u64 {
    ((in_data as u64) << 16) | offset as u64
}

fn refuse(status: Status, result: u64) -> Outcome {
    Outcome::refuse(status, result)
}

/// Runs a fabrics command.
pub fn execute(ctx: &mut Ctx<'_>) -> Outcome {
    let sqe = ctx.sqe();
    match sqe.fctype() {
        fabrics::FCTYPE_CONNECT => connect(ctx),
        fabrics::FCTYPE_PROPERTY_GET | fabrics::FCTYPE_PROPERTY_SET => {
            if ctx.binding.map(|b| b.qid) != Some(0) {
                return Outcome::err(Status::CMD_SEQ_ERROR);
            }
            if sqe.fctype() == fabrics::FCTYPE_PROPERTY_GET {
                property_get(ctx, sqe.cdw10 & 1 == 1, sqe.cdw11)
            } else {
                property_set(
                    ctx,
                    sqe.cdw11,
                    sqe.cdw12 as u64 | ((sqe.cdw13 as u64) << 32),
                )
            }
        }
        auth::FCTYPE_AUTH_SEND | auth::FCTYPE_AUTH_RECEIVE => {
            if ctx.binding.is_none() {
                return Outcome::err(Status::CMD_SEQ_ERROR);
            }
            let (outcome, failure) = authenticate(ctx, sqe.fctype() == auth::FCTYPE_AUTH_SEND);
            if let Some(f) = failure {
                auth_failed(ctx, &f);
            }
            if let Some(s) = ctx.auth.take_success() {
                let b = ctx.binding.expect("authentication runs on a bound queue");
                // The admin queue's success gives its controller a slot of
                // max_controllers (or tears it down: none left).
                if b.qid == 0 {
                    ctx.target.controller_authenticated(b.ctrl.cntlid);
                }
                authenticated(ctx, s);
            }
            outcome
        }
        _ => Outcome::err(Status::INVALID_OPCODE),
    }
}

/// Runs an Authentication Send (`send`) or Receive on the queue's
/// DH-HMAC-CHAP state; a Receive's message goes back zero-padded to the
/// whole allocation length.
fn authenticate(ctx: &mut Ctx<'_>, send: bool) -> (Outcome, Option<super::auth::AuthFailure>) {
    use super::auth::Progress;
    let ctrl = ctx.ctrl().clone();
    let cmd = super::auth::AuthCommand {
        sqe: ctx.req.sqe,
        data: &ctx.req.buf,
        hostnqn: &ctrl.hostnqn,
        subnqn: &ctrl.subsys.nqn,
        now: ctx.now,
        slot: ctx.slot,
        pool: &ctx.target.dh,
        source: ctx.source,
        waker: ctx.waker,
    };
    if send {
        let (r, failure) = super::auth::send(ctx.auth, &cmd);
        let outcome = match r {
            Progress::Pending => Outcome::AwaitingAuth,
            Progress::Done(r) => r.map_or_else(Outcome::err, |()| Outcome::ok(0)),
        };
        (outcome, failure)
    } else {
        let (r, failure) = super::auth::receive(ctx.auth, &cmd);
        let outcome = match r {
            Progress::Pending => Outcome::AwaitingAuth,
            Progress::Done(Ok(msg)) => {
                let al = (ctx.req.sqe.cdw11 as usize).min(ctx.req.buf.len());
                let buf = &mut ctx.req.buf[..al];
                buf.fill(0);
                buf[..msg.len()].copy_from_slice(&msg);
                Outcome::data(al)
            }
            Progress::Done(Err(s)) => Outcome::err(s),
        };
        (outcome, failure)
    }
}

/// Logs a queue's successful DH-HMAC-CHAP transaction (with
/// `--log-connections`, as Connect is).
fn authenticated(ctx: &Ctx<'_>, s: super::auth::Succeeded) {
    if !ctx.target.log_connections {
        return;
    }
    let b = ctx.binding.expect("authentication runs on a bound queue");
    let dir = if s.bidirectional { "yes" } else { "no" };
    log::emit(
        Stream::Out,
        Level::Info,
        "authenticated",
        format_args!(
            "authenticated {} qid {} cntlid {} host {} hash {} dhgroup {} bidirectional {dir}",
            b.ctrl.subsys.nqn, b.qid, b.ctrl.cntlid, b.ctrl.hostnqn, s.hash, s.group
        ),
        &[
            ("subsystem", b.ctrl.subsys.nqn.as_str().into()),
            ("qid", b.qid.into()),
            ("cntlid", b.ctrl.cntlid.into()),
            ("host", b.ctrl.hostnqn.as_str().into()),
            ("hash", s.hash.name().into()),
            ("dhgroup", s.group.name().into()),
            ("bidirectional", dir.into()),
        ],
    );
}

/// Counts and logs a failed DH-HMAC-CHAP transaction (the connection
/// closes once its response is sent); the line goes through the target's
/// `auth_log` rate limit.
fn auth_failed(ctx: &Ctx<'_>, f: &super::auth::AuthFailure) {
    let b = ctx.binding.expect("authentication runs on a bound queue");
    let (counted, limit) = match &f.limit {
        Some((r, why)) => (*r, Some(why.as_str())),
        None => (Refused::AuthFailed, None),
    };
    ctx.target.refusals.count(counted);
    // A flood of failures must not flood the log (counted either way).
    if !ctx.target.auth_log.admit(std::time::Instant::now()) {
        return;
    }
    let why = if let Some(limit) = limit {
        limit
    } else if f.by_host && f.explanation == nvme_spec::auth::explain::FAILED {
        "the host refused the target's response (it holds another controller secret)"
    } else {
        crate::auth::explain_text(f.explanation)
    };
    let who = if f.by_host { "host" } else { "target" };
    let source = ctx
        .source
        .map_or_else(|| "-".to_string(), |ip| ip.to_string());
    log::emit(
        Stream::Err,
        Level::Warn,
        "auth_failed",
        format_args!(
            "DH-HMAC-CHAP failed for host {} from {source} on {} qid {} cntlid {}: {why} (ended by the {who})",
            b.ctrl.hostnqn, b.ctrl.subsys.nqn, b.qid, b.ctrl.cntlid
        ),
        &[
            ("host", b.ctrl.hostnqn.as_str().into()),
            ("subsystem", b.ctrl.subsys.nqn.as_str().into()),
            ("qid", b.qid.into()),
            ("cntlid", b.ctrl.cntlid.into()),
            ("reason", why.into()),
            ("counted_as", counted.name().into()),
            ("source", source.as_str().into()),
            ("by", who.into()),
        ],
    );
}

fn connect(ctx: &mut Ctx<'_>) -> Outcome {
    let target = ctx.target;
    let invalid = |status, result| {
        target.refusals.count(Refused::InvalidConnect);
        refuse(status, result)
    };
    if ctx.binding.is_some() {
        return Outcome::err(Status::CMD_SEQ_ERROR);
    }
    let req = &ctx.req;
    let cmd = ConnectCmd::from_sqe(&req.sqe);
    if cmd.recfmt != 0 {
        return invalid(Status::CONNECT_INCOMPATIBLE_FORMAT, 0);
    }
    let data = match ConnectData::decode(&req.buf) {
        Ok(d) => d,
        Err(ConnectDataError::Short { .. }) => {
            return invalid(Status::CONNECT_INVALID_PARAM, ipo(false, 24))
        }
        Err(ConnectDataError::BadNqn { offset, .. }) => {
            return invalid(Status::CONNECT_INVALID_PARAM, ipo(true, offset))
        }
    };
    let limits = ctx.target.limits;
    let (subnqn, hostnqn) = (data.subnqn_str(), data.hostnqn_str());
    let max_entries = if cmd.qid == 0 {
        limits.admin_queue_depth
    } else {
        limits.max_queue_depth
    };
    if cmd.sqsize == 0 || cmd.sqsize >= max_entries {
        return invalid(Status::CONNECT_INVALID_PARAM, ipo(false, 44));
    }
    if ctx.target.tls.is_some() {
        // The PSK identity names the host and the subsystem; a host may not
        // connect as another, nor to a subsystem its key is not for.
        let same = ctx
            .tls
            .is_some_and(|p| p.identity.hostnqn == hostnqn && p.identity.subnqn == subnqn);
        if !same {
            return refusal(
                target,
                ConnectRefusal::TlsIdentityMismatch,
                &subnqn,
                &hostnqn,
            );
        }
    }
    let result = if cmd.qid == 0 {
        if data.cntlid != CNTLID_DYNAMIC {
            return invalid(Status::CONNECT_INVALID_PARAM, ipo(true, 16));
        }
        ctx.target.create_controller_from(
            ctx.port,
            &subnqn,
            &hostnqn,
            data.hostid,
            cmd.kato_ms,
            ctx.source,
        )
    } else {
        ctx.target
            .join_controller(data.cntlid, &subnqn, &hostnqn, data.hostid, cmd.qid)
    };
    let ctrl = match result {
        Ok(c) => c,
        Err(r) => return refusal(target, r, &subnqn, &hostnqn),
    };
    let cntlid = ctrl.cntlid;
    if ctx.target.log_connections {
        let hostnqn = if hostnqn.is_empty() {
            "(none: an empty host NQN)".to_string()
        } else {
            hostnqn.clone()
        };
        let on = |b: bool| if b { "on" } else { "off" };
        let cpu = ctx
            .reactor_cpu
            .map_or_else(String::new, |c| format!(" reactor CPU {c}"));
        let (hd, dd) = (on(ctx.framing.header_digest), on(ctx.framing.data_digest));
        let mut fields = vec![
            ("subsystem", (&subnqn).into()),
            ("qid", cmd.qid.into()),
            ("cntlid", cntlid.into()),
            ("host", (&hostnqn).into()),
            ("port", ctx.port.into()),
            ("sqsize", (cmd.sqsize + 1).into()),
            ("header_digest", hd.into()),
            ("data_digest", dd.into()),
        ];
        if let Some(c) = ctx.reactor_cpu {
            fields.push(("reactor_cpu", c.into()));
        }
        let tls = ctx
            .tls
            .map_or_else(String::new, |p| format!(" tls {}", p.cipher));
        if let Some(p) = ctx.tls {
            fields.push(("tls", p.cipher.as_str().into()));
        }
        log::emit(
            Stream::Out,
            Level::Info,
            "connected",
            format_args!(
                "connected {subnqn} qid {} cntlid {cntlid} host {hostnqn} port {}{cpu} sqsize {} digests header={hd} data={dd}{tls}",
                cmd.qid,
                ctx.port,
                cmd.sqsize + 1,
            ),
            &fields,
        );
    }
    Outcome::Connected {
        binding: Binding {
            qid: cmd.qid,
            sq_entries: cmd.sqsize + 1,
            ctrl,
        },
        // CATTR bit 2: the host disabled SQ flow control.
        sq_flow_disabled: cmd.cattr & 0x04 != 0,
    }
}

/// The status and IATTR/IPO result for a refused Connect. A refusal for
/// the host's identity or an unknown subsystem prints a line (rate-limited)
/// naming the NQNs, so the operator sees which host to allow.
fn refusal(
    target: &super::subsystem::Target,
    r: ConnectRefusal,
    subnqn: &str,
    hostnqn: &str,
) -> Outcome {
    use ConnectRefusal as C;
    let named = |event: &str, text: std::fmt::Arguments<'_>| {
        limit_line(target, || {
            log::emit(
                Stream::Err,
                Level::Warn,
                event,
                text,
                &[("subnqn", subnqn.into()), ("host", hostnqn.into())],
            )
        })
    };
    match r {
        C::HostNotAllowed => named(
            "host_not_allowed",
            format_args!(
                "Connect refused: host {hostnqn} is not allowed on {subnqn}; allow it with \
                 --allow-host {hostnqn} (allowed_hosts in the config), or connect as an allowed host"
            ),
        ),
        C::UnknownSubsystem | C::NotOnPort => named(
            "unknown_subsystem",
            format_args!(
                "Connect refused: host {hostnqn} asked for subsystem {subnqn}, which is not served on this port"
            ),
        ),
        C::TlsIdentityMismatch => named(
            "tls_identity_mismatch",
            format_args!(
                "Connect refused: host {hostnqn} asked for {subnqn}, which its TLS PSK identity does not name"
            ),
        ),
        _ => {}
    }
    let (why, status, result) = match r {
        C::UnknownSubsystem | C::NotOnPort => (
            Refused::UnknownSubsystem,
            Status::CONNECT_INVALID_PARAM,
            ipo(true, 256),
        ),
        C::HostNotAllowed => (
            Refused::HostNotAllowed,
            Status::CONNECT_INVALID_HOST,
            ipo(true, 512),
        ),
        C::UnknownController => (Refused::Busy, Status::CONNECT_INVALID_PARAM, ipo(true, 16)),
        C::HostIdMismatch => (
            Refused::HostIdMismatch,
            Status::CONNECT_INVALID_PARAM,
            ipo(true, 0),
        ),
        C::Busy => {
            limit_line(target, || {
                log::emit(
                    Stream::Err,
                    Level::Warn,
                    "controller_limit",
                    format_args!(
                        "Connect refused: controller limit reached ({} live controllers, \
                     max_controllers in [limits]); raise it, or look for a host holding idle \
                     admin queues",
                        target.limits.max_controllers
                    ),
                    &[("max_controllers", target.limits.max_controllers.into())],
                )
            });
            (Refused::Busy, Status::CONNECT_CTRL_BUSY, 0)
        }
        C::UnauthenticatedPerSource => {
            limit_line(target, || {
                log::emit(
                    Stream::Err,
                    Level::Warn,
                    "unauthenticated_limit",
                    format_args!(
                        "Connect refused: {} controllers from this source address wait for \
                     DH-HMAC-CHAP (UNAUTHENTICATED_PER_SOURCE); they free their slots \
                     when they authenticate or at the authentication deadline",
                        super::ctrl_slots::UNAUTHENTICATED_PER_SOURCE
                    ),
                    &[("limit", "UNAUTHENTICATED_PER_SOURCE".into())],
                )
            });
            (Refused::Unauthenticated, Status::CONNECT_CTRL_BUSY, 0)
        }
        C::TlsIdentityMismatch => (
            Refused::TlsIdentity,
            Status::CONNECT_INVALID_HOST,
            ipo(true, 512),
        ),
        C::BadQueueId => (Refused::Busy, Status::CONNECT_INVALID_PARAM, ipo(false, 42)),
    };
    target.refusals.count(why);
    refuse(status, result)
}

/// Prints a line about a Connect refused at a limit through the target's
/// `refusal_log` rate limit: a host that retries in a loop is counted each
/// time ([`Target::refusals`]) but printed at most the limit's lines per
/// window.
///
/// [`Target::refusals`]: super::subsystem::Target::refusals
fn limit_line(target: &super::subsystem::Target, line: impl FnOnce()) {
    if target.refusal_log.admit(std::time::Instant::now()) {
        line();
    }
}

fn property_get(ctx: &Ctx<'_>, eight_bytes: bool, offset: u32) -> Outcome {
    let b = ctx.binding.expect("admin queue is bound");
    let limits = ctx.target.limits;
    let regs = b.ctrl.regs.lock().expect("controller lock");
    let v: u64 = match (offset, eight_bytes) {
        (prop::CAP, true) => {
            let depth = if b.ctrl.subsys.is_discovery {
                limits.admin_queue_depth
            } else {
                limits.max_queue_depth
            };
            fabrics::cap(depth - 1, CAP_TIMEOUT_500MS)
        }
        (prop::VS, false) => NVME_VERSION as u64,
        (prop::CC, false) => regs.cc as u64,
        (prop::CSTS, false) => regs.csts as u64,
        _ => return Outcome::err(Status::INVALID_FIELD),
    };
    Outcome::ok(v)
}

fn property_set(ctx: &Ctx<'_>, offset: u32, value: u64) -> Outcome {
    if offset != prop::CC {
        return Outcome::err(Status::INVALID_FIELD);
    }
    let b = ctx.binding.expect("admin queue is bound");
    let new = value as u32;
    let mut regs = b.ctrl.regs.lock().expect("controller lock");
    let old = regs.cc;
    regs.cc = new;
    if new & CC_ENABLE != 0 && old & CC_ENABLE == 0 {
        regs.csts = CSTS_READY;
    }
    if new & CC_ENABLE == 0 && old & CC_ENABLE != 0 {
        regs.csts &= !CSTS_READY;
    }
    let shn = (new >> CC_SHN_SHIFT) & 3;
    if shn != 0 && (old >> CC_SHN_SHIFT) & 3 == 0 {
        drop(regs);
        for ns in &b.ctrl.subsys.namespaces {
            if let Err(e) = ns.flush() {
                log::emit(
                    Stream::Err,
                    Level::Error,
                    "flush_failed",
                    format_args!("flush of namespace {} failed at shutdown: {e}", ns.spec),
                    &[
                        ("namespace", ns.spec.as_str().into()),
                        ("error", e.to_string().into()),
                    ],
                );
            }
        }
        let mut regs = b.ctrl.regs.lock().expect("controller lock");
        regs.csts |= CSTS_SHST_COMPLETE;
    } else if shn == 0 {
        regs.csts &= !(3 << 2);
    }
    Outcome::ok(0)
}
