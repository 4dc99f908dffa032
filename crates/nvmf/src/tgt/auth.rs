//! DH-HMAC-CHAP on the target: each queue's transaction as a state
//! machine, run by the Authentication Send and Receive fabrics commands.
//!
//! A host listed with a secret ([`HostKeys`]) gets ATR set in its Connect
//! response; from then on its queue runs nothing but authentication
//! commands ([`Status::AUTH_REQUIRED`] for the rest) until the transaction
//! succeeds. The steps, as the controller sees them:
//! ```text
//!            Negotiate ok                 Receive
//! Idle ─────────────────► ChallengeNext ─────────► ReplyNext
//!  ▲ (Negotiate restarts from any step)              │ Reply: R1 checks out
//!  │                                                 ▼
//! Done ◄── Success2 ── Success2Next ◄── Receive ── Success1Next
//!  ▲     (C2 sent: bidirectional)        │ (no C2: authenticated at Reply)
//!  └─────────────────────────────────────┘
//! any error ──► Failure1Next ── Receive (AUTH_Failure1) ──► Failed: close
//! ```
//! A failed transaction ends the connection once its Failure1 is sent (the
//! kernel's target takes the controller down the same way); a host that
//! does not finish within [`AUTH_DEADLINE`] of its Connect is closed too (a
//! Negotiate does not restart that clock), and a queue may send at most
//! [`NEGOTIATIONS_MAX`] Negotiates before it succeeds.
//! Re-authentication (a Negotiate on an authenticated queue) keeps the
//! queue serving until it fails.
//!
//! The exponentiations (the key pair for the Challenge, the shared secret
//! of the Reply) run on the target's [`DhPool`]: the command waits
//! ([`Progress::Pending`], the request in `AwaitingAuth`) and runs again
//! when the pool has the result. R1 cannot be checked before the shared
//! secret (the augmented challenge hashes it), so everything else is
//! checked first: the transaction id, the response's and the DH value's
//! lengths.

use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvme_spec::auth::{
    self as wire, explain, id, Challenge, Failure, Message, Negotiate, Reply, Success1,
};
use nvme_spec::{Sqe, Status};
use zeroize::Zeroizing;

use super::config::HostConfig;
use super::counters::Refused;
use super::dh_pool::{DhCharge, DhDone, DhPool, DhTicket, DhWork};
use super::error::ConfigError;
use crate::auth::{self, DhGroup, HashFn, KeyPair, Secret, Transaction};

/// How long a queue that must authenticate may take from Connect (or from
/// a re-authentication's Negotiate) to success. Generous: an 8192-bit DH
/// exchange under emulation takes seconds on each side.
pub const AUTH_DEADLINE: Duration = Duration::from_secs(30);
/// Negotiates one queue may send before a transaction succeeds: the first
/// and a few restarts (a host retrying after a lost message). Each costs
/// the target an exponentiation, so a queue that keeps restarting is
/// closed.
pub const NEGOTIATIONS_MAX: u32 = 4;

/// What one host authenticates with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostKeys {
    /// The host's secret (it proves itself with it).
    pub secret: Secret,
    /// The controller's secret, for bidirectional authentication.
    pub ctrl_secret: Option<Secret>,
    /// Hash functions allowed, in preference order.
    pub hashes: Vec<HashFn>,
    /// DH groups allowed, in preference order.
    pub dhgroups: Vec<DhGroup>,
}

impl HostKeys {
    /// Reads the secrets a host's configuration names (`None`: it names no
    /// DH-HMAC-CHAP secret).
    pub fn load(h: &HostConfig) -> Result<Option<Self>, ConfigError> {
        let Some(secret) = &h.dhchap_secret else {
            return Ok(None);
        };
        let read = |p: &Path| {
            Secret::from_file(p).map_err(|e| {
                ConfigError::Invalid(format!("host {}: DH-HMAC-CHAP secret {e}", h.nqn))
            })
        };
        let hashes = if h.dhchap_hashes.is_empty() {
            HashFn::ALL.to_vec()
        } else {
            h.dhchap_hashes
                .iter()
                .map(|n| HashFn::parse(n))
                .collect::<Result<_, _>>()
                .map_err(|e| ConfigError::Invalid(format!("host {}: {e}", h.nqn)))?
        };
        let dhgroups = if h.dhchap_dhgroups.is_empty() {
            DhGroup::PREFERRED.to_vec()
        } else {
            h.dhchap_dhgroups
                .iter()
                .map(|n| DhGroup::parse(n))
                .collect::<Result<_, _>>()
                .map_err(|e| ConfigError::Invalid(format!("host {}: {e}", h.nqn)))?
        };
        Ok(Some(Self {
            secret: read(secret)?,
            ctrl_secret: h.dhchap_ctrl_secret.as_deref().map(read).transpose()?,
            hashes,
            dhgroups,
        }))
    }
}

/// One transaction's state once Negotiate chose a hash and a group.
#[derive(Debug)]
struct Txn {
    t_id: u16,
    hash: HashFn,
    group: DhGroup,
    keys: Arc<HostKeys>,
    /// C1 and S1, once the challenge went out.
    c1: Zeroizing<Vec<u8>>,
    s1: u32,
    pair: Option<Arc<KeyPair>>,
    session_key: Option<Zeroizing<Vec<u8>>>,
    /// C2 and S2, when the host asked to authenticate the controller.
    c2: Option<(Zeroizing<Vec<u8>>, u32)>,
}

#[derive(Debug, Default)]
enum Step {
    #[default]
    Idle,
    ChallengeNext(Box<Txn>),
    /// The key pair for the Challenge is being generated for the Receive
    /// in request slot `slot`.
    Generating {
        txn: Box<Txn>,
        job: DhTicket,
        slot: u16,
    },
    ReplyNext(Box<Txn>),
    /// The shared secret is being computed for the Reply in `slot`.
    Deriving {
        txn: Box<Txn>,
        job: DhTicket,
        slot: u16,
    },
    Success1Next(Box<Txn>),
    Success2Next {
        t_id: u16,
        hash: HashFn,
        group: DhGroup,
    },
    Failure1Next {
        t_id: u16,
        explanation: u8,
    },
    Failed,
}

/// A queue's authentication.
#[derive(Debug, Default)]
pub struct QueueAuth {
    keys: Option<Arc<HostKeys>>,
    authenticated: bool,
    step: Step,
    /// When the pending transaction (or the wait for one) began.
    since: Option<Instant>,
    /// A transaction that just succeeded, until the log takes it.
    success: Option<Succeeded>,
    /// Negotiates since the queue connected or last succeeded.
    negotiations: u32,
    /// The target's limit that failed the transaction, until its Failure1
    /// reports it.
    limit: Option<(Refused, String)>,
}

/// What a successful transaction settled on, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Succeeded {
    /// The hash function.
    pub hash: HashFn,
    /// The DH group.
    pub group: DhGroup,
    /// Whether the controller authenticated itself too.
    pub bidirectional: bool,
}

/// Why a queue's authentication failed, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFailure {
    /// The reason code explanation sent or received.
    pub explanation: u8,
    /// Whether the host sent it (Failure2) rather than the target.
    pub by_host: bool,
    /// A limit of the target's that ended it (counted under its own
    /// reason), with the sentence that names it.
    pub limit: Option<(Refused, String)>,
}

/// How far an authentication command got.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress<T> {
    /// It finished: its result.
    Done(Result<T, Status>),
    /// It waits for the DH pool; run it again once [`QueueAuth::resumable`].
    Pending,
}

impl QueueAuth {
    /// A queue bound to a controller whose host has `keys` (`None`: no
    /// authentication required).
    pub fn on_connect(keys: Option<Arc<HostKeys>>, now: Instant) -> Self {
        Self {
            since: keys.as_ref().map(|_| now),
            keys,
            authenticated: false,
            step: Step::Idle,
            success: None,
            negotiations: 0,
            limit: None,
        }
    }

    /// Whether the command parked in request slot `slot` may run again:
    /// its DH work is done, or the transaction moved on without it.
    pub fn resumable(&self, slot: u16) -> bool {
        match &self.step {
            Step::Generating { job, slot: s, .. } | Step::Deriving { job, slot: s, .. } => {
                *s != slot || job.ready()
            }
            _ => true,
        }
    }

    /// The transaction that succeeded since the last call, if one did.
    pub fn take_success(&mut self) -> Option<Succeeded> {
        self.success.take()
    }

    /// Whether the queue must authenticate.
    pub fn required(&self) -> bool {
        self.keys.is_some()
    }

    /// Whether the queue may run commands other than authentication.
    pub fn may_run_commands(&self) -> bool {
        self.keys.is_none() || self.authenticated
    }

    /// Whether the transaction failed and its Failure went out or came in:
    /// the connection closes.
    pub fn failed(&self) -> bool {
        matches!(self.step, Step::Failed)
    }

    /// Whether the transaction has run past [`AUTH_DEADLINE`].
    pub fn overdue(&self, now: Instant) -> bool {
        self.since
            .is_some_and(|s| now.saturating_duration_since(s) > AUTH_DEADLINE)
    }

    fn fail(&mut self, t_id: u16, explanation: u8) {
        self.step = Step::Failure1Next { t_id, explanation };
    }

    fn done(&mut self, s: Succeeded) {
        self.authenticated = true;
        self.since = None;
        self.negotiations = 0;
        self.step = Step::Idle;
        self.success = Some(s);
    }
}

/// An Authentication Send or Receive as the queue received it.
#[derive(Debug, Clone, Copy)]
pub struct AuthCommand<'a> {
    /// The command.
    pub sqe: Sqe,
    /// Its data (Send), or nothing (Receive).
    pub data: &'a [u8],
    /// The host NQN of the queue's controller.
    pub hostnqn: &'a str,
    /// Its subsystem NQN.
    pub subnqn: &'a str,
    /// The command's arrival.
    pub now: Instant,
    /// Its request slot (a command waiting for DH work runs again there).
    pub slot: u16,
    /// Where DH work goes.
    pub pool: &'a DhPool,
    /// The socket's source address, charged for the DH work.
    pub source: Option<IpAddr>,
    /// The reactor to wake when DH work is done.
    pub waker: Option<&'a Arc<OwnedFd>>,
}

impl AuthCommand<'_> {
    fn submit(&self, work: DhWork) -> Result<DhTicket, (Refused, String)> {
        let charge = DhCharge {
            hostnqn: self.hostnqn.to_string(),
            source: self.source,
            waker: self.waker.cloned(),
        };
        self.pool
            .submit(work, charge)
            .map_err(|r| (Refused::AuthDhBudget, r.to_string()))
    }
}

fn check_command(sqe: &Sqe) -> Result<u32, Status> {
    let (secp, spsp0, spsp1) = wire::secp_spsp(sqe.cdw10);
    if secp != wire::SECP_NVME_AUTH || spsp0 != wire::SPSP_DHCHAP || spsp1 != wire::SPSP_DHCHAP {
        return Err(Status::INVALID_FIELD);
    }
    if sqe.cdw11 == 0 || sqe.cdw11 != sqe.dptr.length {
        return Err(Status::INVALID_FIELD);
    }
    Ok(sqe.cdw11)
}

/// Authentication Send: the host's Negotiate, Reply, Success2 or Failure2.
/// Returns the outcome and, when the transaction just failed, why.
pub fn send(qa: &mut QueueAuth, cmd: &AuthCommand<'_>) -> (Progress<()>, Option<AuthFailure>) {
    let Some(keys) = qa.keys.clone() else {
        return (Progress::Done(Err(Status::INVALID_FIELD)), None);
    };
    let len = match check_command(&cmd.sqe) {
        Ok(l) => l as usize,
        Err(s) => return (Progress::Done(Err(s)), None),
    };
    let msg = Message::decode(&cmd.data[..len.min(cmd.data.len())]);
    let now = cmd.now;
    let mut failure = None;
    match (msg, std::mem::take(&mut qa.step)) {
        // The Reply that waited for its shared secret, run again.
        (Ok(Message::Reply(r)), Step::Deriving { txn, job, slot }) if slot == cmd.slot => {
            let Some(done) = job.take() else {
                qa.step = Step::Deriving { txn, job, slot };
                return (Progress::Pending, None);
            };
            derived(qa, txn, done, &r, cmd);
        }
        (Ok(Message::Negotiate(n)), _) => {
            // The deadline runs from the Connect (or, on an authenticated
            // queue, from its first re-authentication Negotiate).
            qa.since.get_or_insert(now);
            qa.negotiations += 1;
            if qa.negotiations > NEGOTIATIONS_MAX {
                let why = format!(
                    "Negotiate limit per queue reached ({NEGOTIATIONS_MAX} Negotiates without a \
                     successful transaction; NEGOTIATIONS_MAX)"
                );
                qa.limit = Some((Refused::AuthRestarts, why));
                qa.fail(n.t_id, explain::FAILED);
            } else {
                negotiate(qa, keys, &n);
            }
        }
        (Ok(Message::Reply(r)), Step::ReplyNext(txn)) if r.t_id == txn.t_id => {
            if reply(qa, txn, &r, cmd) {
                return (Progress::Pending, None);
            }
        }
        (
            Ok(Message::Success2(t_id)),
            Step::Success2Next {
                t_id: want,
                hash,
                group,
            },
        ) if t_id == want => qa.done(Succeeded {
            hash,
            group,
            bidirectional: true,
        }),
        (Ok(Message::Failure(f)), _) if f.auth_id == id::FAILURE2 => {
            qa.authenticated = false;
            qa.step = Step::Failed;
            failure = Some(AuthFailure {
                explanation: f.explanation,
                by_host: true,
                limit: None,
            });
        }
        (Ok(m), step) => {
            let t_id = match &m {
                Message::Reply(r) => r.t_id,
                Message::Success2(t) => *t,
                _ => step_tid(&step),
            };
            qa.fail(t_id, explain::INCORRECT_MESSAGE);
        }
        (Err(_), step) => qa.fail(step_tid(&step), explain::INCORRECT_PAYLOAD),
    }
    (Progress::Done(Ok(())), failure)
}

fn step_tid(step: &Step) -> u16 {
    match step {
        Step::ChallengeNext(t) | Step::ReplyNext(t) | Step::Success1Next(t) => t.t_id,
        Step::Generating { txn, .. } | Step::Deriving { txn, .. } => txn.t_id,
        Step::Success2Next { t_id: t, .. } | Step::Failure1Next { t_id: t, .. } => *t,
        Step::Idle | Step::Failed => 0,
    }
}

fn negotiate(qa: &mut QueueAuth, keys: Arc<HostKeys>, n: &Negotiate) {
    if n.sc_c != wire::SC_C_NONE {
        return qa.fail(n.t_id, explain::CONCAT_MISMATCH);
    }
    let Some(hash) = keys
        .hashes
        .iter()
        .copied()
        .find(|h| n.hashes.contains(&h.id()))
    else {
        return qa.fail(n.t_id, explain::HASH_UNUSABLE);
    };
    let Some(group) = keys
        .dhgroups
        .iter()
        .copied()
        .find(|g| n.dhgroups.contains(&g.id()))
    else {
        return qa.fail(n.t_id, explain::DHGROUP_UNUSABLE);
    };
    qa.step = Step::ChallengeNext(Box::new(Txn {
        t_id: n.t_id,
        hash,
        group,
        keys,
        c1: Zeroizing::new(Vec::new()),
        s1: 0,
        pair: None,
        session_key: None,
        c2: None,
    }));
}

/// Checks what a Reply carries that needs no exponentiation, then asks
/// the pool for the shared secret (true: the command waits for it) or,
/// with the null group, verifies R1 at once.
fn reply(qa: &mut QueueAuth, txn: Box<Txn>, r: &Reply, cmd: &AuthCommand<'_>) -> bool {
    let t_id = txn.t_id;
    if r.response.len() != txn.hash.digest_len() {
        qa.fail(t_id, explain::INCORRECT_PAYLOAD);
        return false;
    }
    match (&txn.pair, r.dh_value.is_empty()) {
        (Some(pair), false) => {
            if r.dh_value.len() > pair.group().bytes() {
                qa.fail(t_id, explain::DHGROUP_UNUSABLE);
                return false;
            }
            let work = DhWork::Shared {
                pair: pair.clone(),
                peer: r.dh_value.clone(),
            };
            match cmd.submit(work) {
                Ok(job) => {
                    qa.step = Step::Deriving {
                        txn,
                        job,
                        slot: cmd.slot,
                    };
                    true
                }
                Err(limit) => {
                    qa.limit = Some(limit);
                    qa.fail(t_id, explain::FAILED);
                    false
                }
            }
        }
        (None, true) => {
            verify(qa, txn, r, cmd.hostnqn, cmd.subnqn);
            false
        }
        _ => {
            qa.fail(t_id, explain::INCORRECT_PAYLOAD);
            false
        }
    }
}

/// The shared secret came back from the pool: R1 is checked with it.
fn derived(qa: &mut QueueAuth, mut txn: Box<Txn>, done: DhDone, r: &Reply, cmd: &AuthCommand<'_>) {
    match done {
        DhDone::Shared(Ok(k)) => {
            txn.session_key = Some(k);
            verify(qa, txn, r, cmd.hostnqn, cmd.subnqn);
        }
        _ => qa.fail(txn.t_id, explain::DHGROUP_UNUSABLE),
    }
}

/// Checks R1 (over the session key, when there is one) and settles what
/// the Success1 says.
fn verify(qa: &mut QueueAuth, mut txn: Box<Txn>, r: &Reply, hostnqn: &str, subnqn: &str) {
    let t_id = txn.t_id;
    let challenge = auth::augmented_challenge(
        txn.hash,
        txn.session_key.as_ref().map(|k| k.as_slice()),
        &txn.c1,
    );
    let t = Transaction {
        hash: txn.hash,
        challenge: &challenge,
        seqnum: txn.s1,
        t_id,
        hostnqn,
        subnqn,
    };
    let want = auth::host_response(&txn.keys.secret.transformed(hostnqn), &t, 0);
    if !auth::responses_equal(&want, &r.response) {
        return qa.fail(t_id, explain::FAILED);
    }
    match &r.challenge {
        // S2 = 0: a C2 for a TLS PSK only, no controller authentication.
        Some(c2) if r.seqnum != 0 => {
            if txn.keys.ctrl_secret.is_none() {
                return qa.fail(t_id, explain::FAILED);
            }
            txn.c2 = Some((Zeroizing::new(c2.clone()), r.seqnum));
        }
        _ => {
            qa.authenticated = true;
            qa.negotiations = 0;
            qa.success = Some(Succeeded {
                hash: txn.hash,
                group: txn.group,
                bidirectional: false,
            });
        }
    }
    qa.step = Step::Success1Next(txn);
}

/// Authentication Receive: the controller's Challenge, Success1 or
/// Failure1, by the step the transaction is at.
/// Returns the message (at most the allocation length) or a status.
pub fn receive(
    qa: &mut QueueAuth,
    cmd: &AuthCommand<'_>,
) -> (Progress<Vec<u8>>, Option<AuthFailure>) {
    if qa.keys.is_none() {
        return (Progress::Done(Err(Status::INVALID_FIELD)), None);
    }
    let al = match check_command(&cmd.sqe) {
        Ok(l) => l as usize,
        Err(s) => return (Progress::Done(Err(s)), None),
    };
    let mut failure = None;
    let msg = match std::mem::take(&mut qa.step) {
        Step::ChallengeNext(mut txn) => {
            txn.c1 = auth::random_bytes(txn.hash.digest_len());
            txn.s1 = auth::next_seqnum();
            if txn.group == DhGroup::Null {
                challenge(qa, txn)
            } else {
                match cmd.submit(DhWork::Generate(txn.group)) {
                    Ok(job) => {
                        qa.step = Step::Generating {
                            txn,
                            job,
                            slot: cmd.slot,
                        };
                        return (Progress::Pending, None);
                    }
                    Err(limit) => {
                        qa.limit = Some(limit);
                        failure1(qa, txn.t_id, explain::FAILED, &mut failure)
                    }
                }
            }
        }
        Step::Generating { mut txn, job, slot } if slot == cmd.slot => match job.take() {
            None => {
                qa.step = Step::Generating { txn, job, slot };
                return (Progress::Pending, None);
            }
            Some(DhDone::Pair(pair)) => {
                txn.pair = pair.map(Arc::new);
                challenge(qa, txn)
            }
            Some(DhDone::Shared(_)) => unreachable!("a key generation job returns a pair"),
        },
        Step::Success1Next(txn) => success1(qa, &txn, cmd.hostnqn, cmd.subnqn),
        step => {
            let (t_id, explanation) = match step {
                Step::Failure1Next { t_id, explanation } => (t_id, explanation),
                other => (step_tid(&other), explain::FAILED),
            };
            failure1(qa, t_id, explanation, &mut failure)
        }
    };
    let bytes = msg.encode();
    if bytes.len() > al && matches!(msg, Message::Challenge(_)) {
        // The host's buffer cannot take the challenge: nothing was sent,
        // so the transaction restarts with its next Negotiate.
        qa.step = Step::Idle;
        return (Progress::Done(Err(Status::INVALID_FIELD)), None);
    }
    let mut bytes = bytes;
    bytes.truncate(al);
    (Progress::Done(Ok(bytes)), failure)
}

/// The Challenge (with the key pair's public value, if any).
fn challenge(qa: &mut QueueAuth, txn: Box<Txn>) -> Message {
    let m = Message::Challenge(Challenge {
        t_id: txn.t_id,
        hash_id: txn.hash.id(),
        dhgroup_id: txn.group.id(),
        seqnum: txn.s1,
        challenge: txn.c1.to_vec(),
        dh_value: txn
            .pair
            .as_ref()
            .map_or_else(Vec::new, |p| p.public().to_vec()),
    });
    qa.step = Step::ReplyNext(txn);
    m
}

/// Success1, with the controller's response when the host asked for one.
fn success1(qa: &mut QueueAuth, txn: &Txn, hostnqn: &str, subnqn: &str) -> Message {
    let response = txn.c2.as_ref().map(|(c2, s2)| {
        let challenge =
            auth::augmented_challenge(txn.hash, txn.session_key.as_ref().map(|k| k.as_slice()), c2);
        let t = Transaction {
            hash: txn.hash,
            challenge: &challenge,
            seqnum: *s2,
            t_id: txn.t_id,
            hostnqn,
            subnqn,
        };
        let key = txn
            .keys
            .ctrl_secret
            .as_ref()
            .expect("a C2 is kept only with a controller secret")
            .transformed(subnqn);
        auth::controller_response(&key, &t).to_vec()
    });
    qa.step = if response.is_some() {
        Step::Success2Next {
            t_id: txn.t_id,
            hash: txn.hash,
            group: txn.group,
        }
    } else {
        qa.since = None;
        Step::Idle
    };
    Message::Success1(Success1 {
        t_id: txn.t_id,
        hash_len: txn.hash.digest_len() as u8,
        response,
    })
}

/// Failure1: the transaction ends (and the queue once it is sent).
fn failure1(
    qa: &mut QueueAuth,
    t_id: u16,
    explanation: u8,
    failure: &mut Option<AuthFailure>,
) -> Message {
    qa.authenticated = false;
    qa.step = Step::Failed;
    *failure = Some(AuthFailure {
        explanation,
        by_host: false,
        limit: qa.limit.take(),
    });
    Message::Failure(Failure {
        auth_id: id::FAILURE1,
        t_id,
        reason: wire::REASON_FAILED,
        explanation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvme_spec::auth::{FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND};

    const HOST: &str = "nqn.2026-01.io.numio:auth-unit";

    fn keys() -> Arc<HostKeys> {
        Arc::new(HostKeys {
            secret: Secret::generate(32, None),
            ctrl_secret: None,
            hashes: vec![HashFn::Sha256],
            dhgroups: vec![DhGroup::Ffdhe2048],
        })
    }

    fn sqe(fctype: u8, len: usize) -> Sqe {
        let mut s = wire::command(fctype, 0, len as u32);
        s.dptr.length = len as u32;
        s
    }

    fn negotiate(qa: &mut QueueAuth, pool: &DhPool, now: Instant) -> Progress<()> {
        let msg = Message::Negotiate(Negotiate {
            t_id: 1,
            sc_c: 0,
            hashes: vec![HashFn::Sha256.id()],
            dhgroups: vec![DhGroup::Ffdhe2048.id()],
        })
        .encode();
        let cmd = command(sqe(FCTYPE_AUTH_SEND, msg.len()), &msg, pool, now, 0);
        send(qa, &cmd).0
    }

    fn command<'a>(
        sqe: Sqe,
        data: &'a [u8],
        pool: &'a DhPool,
        now: Instant,
        slot: u16,
    ) -> AuthCommand<'a> {
        AuthCommand {
            sqe,
            data,
            hostnqn: HOST,
            subnqn: "nqn.2026-01.io.numio:auth-unit-sub",
            now,
            slot,
            pool,
            source: Some("10.0.0.9".parse().unwrap()),
            waker: None,
        }
    }

    // Regression (issue 38): a Negotiate reset the authentication deadline,
    // so a host without the secret held its controller for ever.
    #[test]
    fn a_negotiate_does_not_restart_the_deadline() {
        let pool = DhPool::default();
        let t0 = Instant::now();
        let mut qa = QueueAuth::on_connect(Some(keys()), t0);
        let later = t0 + AUTH_DEADLINE - Duration::from_secs(1);
        assert_eq!(negotiate(&mut qa, &pool, later), Progress::Done(Ok(())));
        assert!(
            qa.overdue(t0 + AUTH_DEADLINE + Duration::from_secs(1)),
            "the deadline runs from the Connect"
        );
    }

    // Regression (issue 38): Negotiate/Receive in a loop made the reactor
    // generate a key pair per Receive, without end.
    #[test]
    fn negotiates_past_the_limit_fail_the_queue_naming_the_limit() {
        let pool = DhPool::default();
        let now = Instant::now();
        let mut qa = QueueAuth::on_connect(Some(keys()), now);
        for _ in 0..NEGOTIATIONS_MAX {
            assert_eq!(negotiate(&mut qa, &pool, now), Progress::Done(Ok(())));
            assert!(!matches!(qa.step, Step::Failure1Next { .. }));
        }
        assert_eq!(negotiate(&mut qa, &pool, now), Progress::Done(Ok(())));
        let cmd = command(sqe(FCTYPE_AUTH_RECEIVE, 64), &[], &pool, now, 1);
        let (r, failure) = receive(&mut qa, &cmd);
        let Progress::Done(Ok(bytes)) = r else {
            panic!("Failure1 expected, got {r:?}")
        };
        assert!(matches!(Message::decode(&bytes), Ok(Message::Failure(_))));
        let (why, text) = failure.unwrap().limit.unwrap();
        assert_eq!(why, Refused::AuthRestarts);
        assert!(text.contains("NEGOTIATIONS_MAX"), "{text}");
        assert!(qa.failed());
    }

    // Regression (issue 38): the Challenge's key pair was generated on the
    // reactor; it is the pool's work, and the Receive waits for it.
    #[test]
    fn the_challenge_key_pair_comes_from_the_pool() {
        let pool = DhPool::default();
        let now = Instant::now();
        let mut qa = QueueAuth::on_connect(Some(keys()), now);
        assert_eq!(negotiate(&mut qa, &pool, now), Progress::Done(Ok(())));
        let cmd = command(sqe(FCTYPE_AUTH_RECEIVE, 1024), &[], &pool, now, 3);
        assert_eq!(receive(&mut qa, &cmd).0, Progress::Pending);
        assert!(!qa.resumable(3) || pool.queued() == 0);
        // Another command meanwhile does not disturb the waiting one.
        assert!(qa.resumable(4));
        while !qa.resumable(3) {
            std::thread::yield_now();
        }
        let Progress::Done(Ok(bytes)) = receive(&mut qa, &cmd).0 else {
            panic!("the Challenge")
        };
        let Ok(Message::Challenge(c)) = Message::decode(&bytes) else {
            panic!("a Challenge")
        };
        assert_eq!(c.dh_value.len(), DhGroup::Ffdhe2048.bytes());
        assert_eq!(pool.queued(), 0);
    }
}
