//! DH-HMAC-CHAP as the host runs it, after a Connect whose response asked
//! for authentication (ATR): Negotiate, read the Challenge, Reply, read
//! Success1 (and check the controller's response when the host holds the
//! controller's secret), Success2. The blocking
//! [`Initiator`](super::Initiator) drives it on each queue it connects (as
//! an [`AuthQueue`]); the engine's queues are connected by it too.

use std::path::Path;

use nvme_spec::auth::{
    self as wire, explain, id, Failure, Message, Negotiate, Reply, FCTYPE_AUTH_RECEIVE,
    FCTYPE_AUTH_SEND,
};
use zeroize::Zeroizing;

use super::error::InitiatorError;
use crate::auth::{self, DhGroup, HashFn, KeyPair, Secret, SecretError, Transaction};
use nvme_spec::Sqe;

/// What a transaction needs of a connected queue: one command with data
/// to send or a length to read back (the [`Initiator`](super::Initiator)
/// is one).
pub trait AuthQueue {
    /// Runs `sqe` with `data` out, or `read_len` bytes back; a status other
    /// than success is an error. Returns the bytes read.
    fn auth_command(
        &mut self,
        sqe: Sqe,
        data: &[u8],
        read_len: u32,
    ) -> Result<Vec<u8>, InitiatorError>;
}

/// Bytes the host lets an Authentication Receive return (as the kernel
/// does): room for a Challenge with an 8192-bit DH value.
const RECEIVE_BYTES: u32 = 4096;

/// The secrets a host authenticates with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSecrets {
    /// The host's secret.
    pub secret: Secret,
    /// The controller's secret: with it the host authenticates the
    /// controller too.
    pub ctrl_secret: Option<Secret>,
}

impl HostSecrets {
    /// Reads both from files (`DHHC-1:...`, readable by their owner only).
    pub fn from_files(secret: &Path, ctrl_secret: Option<&Path>) -> Result<Self, SecretError> {
        Ok(Self {
            secret: Secret::from_file(secret)?,
            ctrl_secret: ctrl_secret.map(Secret::from_file).transpose()?,
        })
    }
}

/// What a transaction settled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// The hash function.
    pub hash: HashFn,
    /// The DH group.
    pub group: DhGroup,
    /// Whether the controller proved itself too.
    pub bidirectional: bool,
}

fn err(msg: impl Into<String>) -> InitiatorError {
    InitiatorError::Auth(msg.into())
}

fn send(init: &mut impl AuthQueue, m: &Message) -> Result<(), InitiatorError> {
    let data = m.encode();
    let sqe = wire::command(FCTYPE_AUTH_SEND, 0, data.len() as u32);
    init.auth_command(sqe, &data, 0).map(|_| ())
}

fn receive(init: &mut impl AuthQueue) -> Result<Message, InitiatorError> {
    let sqe = wire::command(FCTYPE_AUTH_RECEIVE, 0, RECEIVE_BYTES);
    let data = init.auth_command(sqe, &[], RECEIVE_BYTES)?;
    let m = Message::decode(&data).map_err(|e| err(format!("the controller sent {e}")))?;
    if let Message::Failure(f) = &m {
        return Err(err(format!(
            "the controller refused this host: {} (reason {:#04x}); check the host's secret",
            auth::explain_text(f.explanation),
            f.explanation
        )));
    }
    Ok(m)
}

/// Ends a transaction the host found wrong with Failure2, then says why.
fn abort(init: &mut impl AuthQueue, t_id: u16, explanation: u8, why: String) -> InitiatorError {
    let _ = send(
        init,
        &Message::Failure(Failure {
            auth_id: id::FAILURE2,
            t_id,
            reason: wire::REASON_FAILED,
            explanation,
        }),
    );
    err(why)
}

/// Runs one DH-HMAC-CHAP transaction on a connected queue.
pub fn authenticate(
    init: &mut impl AuthQueue,
    hostnqn: &str,
    subnqn: &str,
    keys: &HostSecrets,
    t_id: u16,
) -> Result<Negotiated, InitiatorError> {
    send(
        init,
        &Message::Negotiate(Negotiate {
            t_id,
            sc_c: wire::SC_C_NONE,
            hashes: HashFn::ALL.iter().map(|h| h.id()).collect(),
            dhgroups: DhGroup::ALL.iter().map(|g| g.id()).collect(),
        }),
    )?;
    let Message::Challenge(ch) = receive(init)? else {
        return Err(abort(
            init,
            t_id,
            explain::INCORRECT_MESSAGE,
            "the controller answered Negotiate with something other than a Challenge".into(),
        ));
    };
    let (Some(hash), Some(group)) = (HashFn::from_id(ch.hash_id), DhGroup::from_id(ch.dhgroup_id))
    else {
        return Err(abort(
            init,
            t_id,
            explain::HASH_UNUSABLE,
            format!(
                "the controller chose hash {} and DH group {}, which were not offered",
                ch.hash_id, ch.dhgroup_id
            ),
        ));
    };
    if ch.t_id != t_id || ch.challenge.len() != hash.digest_len() {
        return Err(abort(
            init,
            t_id,
            explain::INCORRECT_PAYLOAD,
            "malformed Challenge".into(),
        ));
    }
    let pair = KeyPair::generate(group);
    let session_key = match (&pair, ch.dh_value.is_empty()) {
        (Some(p), false) => Some(p.shared(&ch.dh_value).map_err(|e| {
            abort(
                init,
                t_id,
                explain::DHGROUP_UNUSABLE,
                format!("the controller's {e}"),
            )
        })?),
        (None, true) => None,
        _ => {
            return Err(abort(
                init,
                t_id,
                explain::INCORRECT_PAYLOAD,
                format!("the Challenge's DH value does not fit group {group}"),
            ))
        }
    };
    let sk = session_key.as_ref().map(|k| k.as_slice());
    let c1 = auth::augmented_challenge(hash, sk, &ch.challenge);
    let t1 = Transaction {
        hash,
        challenge: &c1,
        seqnum: ch.seqnum,
        t_id,
        hostnqn,
        subnqn,
    };
    let r1 = auth::host_response(&keys.secret.transformed(hostnqn), &t1, 0);
    let c2: Option<(Zeroizing<Vec<u8>>, u32)> = keys
        .ctrl_secret
        .as_ref()
        .map(|_| (auth::random_bytes(hash.digest_len()), auth::next_seqnum()));
    send(
        init,
        &Message::Reply(Reply {
            t_id,
            response: r1.to_vec(),
            challenge: c2.as_ref().map(|(c, _)| c.to_vec()),
            seqnum: c2.as_ref().map_or(0, |(_, s)| *s),
            dh_value: pair.as_ref().map_or_else(Vec::new, |p| p.public().to_vec()),
        }),
    )?;
    let Message::Success1(s1) = receive(init)? else {
        return Err(abort(
            init,
            t_id,
            explain::INCORRECT_MESSAGE,
            "the controller answered the Reply with something other than Success1".into(),
        ));
    };
    let Some((c2, s2)) = c2 else {
        return Ok(Negotiated {
            hash,
            group,
            bidirectional: false,
        });
    };
    let ctrl_key = keys
        .ctrl_secret
        .as_ref()
        .expect("c2 only with a controller secret");
    let a2 = auth::augmented_challenge(hash, sk, &c2);
    let t2 = Transaction {
        hash,
        challenge: &a2,
        seqnum: s2,
        ..t1
    };
    let want = auth::controller_response(&ctrl_key.transformed(subnqn), &t2);
    match s1.response {
        Some(r2) if auth::responses_equal(&want, &r2) => {}
        _ => {
            return Err(abort(init, t_id, explain::FAILED, format!(
                "the controller of {subnqn} did not prove it holds the controller secret (--dhchap-ctrl-secret): not the target you meant, or a different secret"
            )))
        }
    }
    send(init, &Message::Success2(t_id))?;
    Ok(Negotiated {
        hash,
        group,
        bidirectional: true,
    })
}
