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
//! starts but does not finish within [`AUTH_DEADLINE`] is closed too.
//! Re-authentication (a Negotiate on an authenticated queue) keeps the
//! queue serving until it fails.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvme_spec::auth::{
    self as wire, explain, id, Challenge, Failure, Message, Negotiate, Reply, Success1,
};
use nvme_spec::{Sqe, Status};
use zeroize::Zeroizing;

use super::config::HostConfig;
use super::error::ConfigError;
use crate::auth::{self, DhGroup, HashFn, KeyPair, Secret, Transaction};

/// How long a queue that must authenticate may take from Connect (or from
/// a re-authentication's Negotiate) to success. Generous: an 8192-bit DH
/// exchange under emulation takes seconds on each side.
pub const AUTH_DEADLINE: Duration = Duration::from_secs(30);

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
    pair: Option<KeyPair>,
    session_key: Option<Zeroizing<Vec<u8>>>,
    /// C2 and S2, when the host asked to authenticate the controller.
    c2: Option<(Zeroizing<Vec<u8>>, u32)>,
}

#[derive(Debug, Default)]
enum Step {
    #[default]
    Idle,
    ChallengeNext(Box<Txn>),
    ReplyNext(Box<Txn>),
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
pub fn send(
    qa: &mut QueueAuth,
    cmd: &AuthCommand<'_>,
) -> (Result<(), Status>, Option<AuthFailure>) {
    let Some(keys) = qa.keys.clone() else {
        return (Err(Status::INVALID_FIELD), None);
    };
    let len = match check_command(&cmd.sqe) {
        Ok(l) => l as usize,
        Err(s) => return (Err(s), None),
    };
    let msg = Message::decode(&cmd.data[..len.min(cmd.data.len())]);
    let (hostnqn, subnqn, now) = (cmd.hostnqn, cmd.subnqn, cmd.now);
    let mut failure = None;
    match (msg, std::mem::take(&mut qa.step)) {
        (Ok(Message::Negotiate(n)), _) => {
            qa.since = Some(now);
            negotiate(qa, keys, &n);
        }
        (Ok(Message::Reply(r)), Step::ReplyNext(txn)) if r.t_id == txn.t_id => {
            reply(qa, txn, &r, hostnqn, subnqn);
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
    (Ok(()), failure)
}

fn step_tid(step: &Step) -> u16 {
    match step {
        Step::ChallengeNext(t) | Step::ReplyNext(t) | Step::Success1Next(t) => t.t_id,
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

fn reply(qa: &mut QueueAuth, mut txn: Box<Txn>, r: &Reply, hostnqn: &str, subnqn: &str) {
    let t_id = txn.t_id;
    if r.response.len() != txn.hash.digest_len() {
        return qa.fail(t_id, explain::INCORRECT_PAYLOAD);
    }
    match (&txn.pair, r.dh_value.is_empty()) {
        (Some(pair), false) => match pair.shared(&r.dh_value) {
            Ok(k) => txn.session_key = Some(k),
            Err(_) => return qa.fail(t_id, explain::DHGROUP_UNUSABLE),
        },
        (None, true) => {}
        _ => return qa.fail(t_id, explain::INCORRECT_PAYLOAD),
    }
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
) -> (Result<Vec<u8>, Status>, Option<AuthFailure>) {
    if qa.keys.is_none() {
        return (Err(Status::INVALID_FIELD), None);
    }
    let al = match check_command(&cmd.sqe) {
        Ok(l) => l as usize,
        Err(s) => return (Err(s), None),
    };
    let (hostnqn, subnqn) = (cmd.hostnqn, cmd.subnqn);
    let mut failure = None;
    let msg = match std::mem::take(&mut qa.step) {
        Step::ChallengeNext(mut txn) => {
            txn.c1 = auth::random_bytes(txn.hash.digest_len());
            txn.s1 = auth::next_seqnum();
            txn.pair = KeyPair::generate(txn.group);
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
        Step::Success1Next(txn) => {
            let response = txn.c2.as_ref().map(|(c2, s2)| {
                let challenge = auth::augmented_challenge(
                    txn.hash,
                    txn.session_key.as_ref().map(|k| k.as_slice()),
                    c2,
                );
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
        step => {
            let (t_id, explanation) = match step {
                Step::Failure1Next { t_id, explanation } => (t_id, explanation),
                other => (step_tid(&other), explain::FAILED),
            };
            qa.authenticated = false;
            qa.step = Step::Failed;
            failure = Some(AuthFailure {
                explanation,
                by_host: false,
            });
            Message::Failure(Failure {
                auth_id: id::FAILURE1,
                t_id,
                reason: wire::REASON_FAILED,
                explanation,
            })
        }
    };
    let bytes = msg.encode();
    if bytes.len() > al && matches!(msg, Message::Challenge(_)) {
        // The host's buffer cannot take the challenge: nothing was sent,
        // so the transaction restarts with its next Negotiate.
        qa.step = Step::Idle;
        return (Err(Status::INVALID_FIELD), None);
    }
    let mut bytes = bytes;
    bytes.truncate(al);
    (Ok(bytes), failure)
}
