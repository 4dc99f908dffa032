//! The `auth` target: a subsystem whose two hosts must authenticate with
//! DH-HMAC-CHAP, and an admin queue connected as one of them that runs
//! [`Op`]s, checking after each that no command but an authentication one
//! completed successfully unless the session holds the host's secret.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nvme_spec::auth::{self as wire, Challenge, Message, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND};
use nvme_spec::command::admin;
use nvme_spec::fabrics::{prop, CC_ENABLE};
use nvme_spec::Sqe;
use nvmf::auth::{self as crypto, DhGroup, HashFn, KeyPair, Secret, Transaction};
use nvmf::host::command;
use nvmf::tgt::subsystem::Target;

use crate::auth_ops::{Op, ReplyOp};
use crate::harness::{private_dir, Driven};
use crate::wire::{Connect, FromController, HostStream, IcParams, SUBNQN};

/// A host that authenticates one way (the target checks the host).
pub const HOST_ONE_WAY: &str = "nqn.2026-01.io.numio:fuzz-auth-1";
/// A host that may ask the controller to authenticate itself too.
pub const HOST_BIDIRECTIONAL: &str = "nqn.2026-01.io.numio:fuzz-auth-2";

/// The `auth` target and the secrets it was configured with.
#[derive(Debug)]
pub struct AuthTarget {
    /// The target.
    pub target: Arc<Target>,
    /// Both hosts' secret.
    pub host_secret: Secret,
    /// The controller's secret (the bidirectional host's).
    pub ctrl_secret: Secret,
}

/// The target of the `auth` fuzz target: both hosts share one secret
/// (`DHHC-1:00:`, from `Secret::generate(32, None)`), written to files of
/// mode 0600 in a private temporary directory that is removed once the
/// target has read them. SHA-256 and SHA-384 with the null group or
/// ffdhe2048 keep a transaction short.
pub fn auth_target() -> &'static AuthTarget {
    static T: OnceLock<AuthTarget> = OnceLock::new();
    T.get_or_init(|| {
        nvmf::log::init(nvmf::log::Format::Text, nvmf::log::Level::Error);
        let dir = private_dir("auth");
        let (host_secret, ctrl_secret) = (Secret::generate(32, None), Secret::generate(32, None));
        for (name, s) in [("host.key", &host_secret), ("ctrl.key", &ctrl_secret)] {
            let p = dir.join(name);
            std::fs::write(&p, s.encode().as_bytes()).expect("write a secret");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
                .expect("chmod 600");
        }
        let d = dir.display();
        let text = format!(
            r#"
            [[subsystem]]
            nqn = "{SUBNQN}"
            [[subsystem.namespace]]
            backing = "mem:1M"
            [[subsystem.host]]
            nqn = "{HOST_ONE_WAY}"
            dhchap_secret = "{d}/host.key"
            dhchap_hashes = ["sha256", "sha384"]
            dhchap_dhgroups = ["null", "ffdhe2048"]
            [[subsystem.host]]
            nqn = "{HOST_BIDIRECTIONAL}"
            dhchap_secret = "{d}/host.key"
            dhchap_ctrl_secret = "{d}/ctrl.key"
            dhchap_hashes = ["sha256"]
            dhchap_dhgroups = ["null"]
            "#
        );
        let cfg = nvmf::TargetConfig::from_toml(&text, "fuzz").expect("fuzz config");
        let target = crate::harness::dh_inline(Target::new(&cfg).expect("fuzz target"));
        std::fs::remove_dir_all(&dir).expect("remove the secrets");
        AuthTarget {
            target,
            host_secret,
            ctrl_secret,
        }
    })
}

/// What a command the session sent was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Auth { receive: bool },
    Other,
}

/// An admin queue connected as a host that must authenticate.
#[derive(Debug)]
pub struct AuthSession {
    d: Driven,
    hostnqn: &'static str,
    /// The key R1 is computed with: the host's secret, or a wrong one.
    key: Secret,
    /// The last Challenge received.
    challenge: Option<Challenge>,
    sent: HashMap<u16, Sent>,
    next_cid: u16,
    now: Instant,
    /// Whether a command other than authentication succeeded.
    pub other_succeeded: bool,
}

impl AuthSession {
    /// ICReq and Connect as the host `knobs` bit 0 picks; R1 computed with
    /// `key`. Panics unless the Connect response asks for authentication.
    pub fn open(knobs: u8, key: Secret) -> Self {
        let t = auth_target();
        let hostnqn = if knobs & 1 == 0 {
            HOST_ONE_WAY
        } else {
            HOST_BIDIRECTIONAL
        };
        let mut d = Driven::new(&t.target);
        let c = Connect {
            hostnqn,
            ..Connect::admin()
        };
        let dw0 = d.connect(IcParams::default(), &c);
        assert_ne!(dw0 & wire::CONNECT_AUTHREQ_ATR, 0, "Connect without ATR");
        Self {
            d,
            hostnqn,
            key,
            challenge: None,
            sent: HashMap::new(),
            next_cid: 2,
            now: Instant::now(),
            other_succeeded: false,
        }
    }

    /// Whether the connection is closing.
    pub fn closing(&self) -> bool {
        self.d.closing()
    }

    /// Runs one operation.
    pub fn run(&mut self, op: &Op) {
        match op {
            Op::SendRaw {
                via_r2t,
                len_mismatch,
                msg,
            } => {
                crate::auth_ops::check_message_round_trip(msg);
                let len = msg.len() as u32 + u32::from(*len_mismatch);
                self.send(msg, len, *via_r2t);
            }
            Op::Negotiate(n) => self.send_message(&Message::Negotiate(n.clone())),
            Op::Receive(len) => {
                let sqe = wire::command(FCTYPE_AUTH_RECEIVE, 0, u32::from(*len));
                self.command(sqe, Sent::Auth { receive: true }, Xfer::Read(*len));
            }
            Op::Reply(r) => {
                let m = self.reply(r);
                self.send_message(&m);
            }
            Op::Success2(t) => {
                let t_id = t.unwrap_or_else(|| self.challenge.as_ref().map_or(0, |c| c.t_id));
                self.send_message(&Message::Success2(t_id));
            }
            Op::Failure2 { t_id, explanation } => {
                self.send_message(&Message::Failure(wire::Failure {
                    auth_id: wire::id::FAILURE2,
                    t_id: *t_id,
                    reason: wire::REASON_FAILED,
                    explanation: *explanation,
                }))
            }
            Op::Other(which) => {
                let (sqe, x) = other_command(*which);
                self.command(sqe, Sent::Other, x);
            }
            Op::RawSqe { sqe, data } => {
                let sqe = Sqe::decode(sqe);
                let auth = sqe.opcode == admin::FABRICS
                    && matches!(sqe.fctype(), FCTYPE_AUTH_SEND | FCTYPE_AUTH_RECEIVE);
                let kind = if auth {
                    Sent::Auth {
                        receive: sqe.fctype() == FCTYPE_AUTH_RECEIVE,
                    }
                } else {
                    Sent::Other
                };
                self.command(sqe, kind, Xfer::Raw(data));
            }
            Op::Tick(secs) => {
                self.now += Duration::from_secs(u64::from(*secs));
                self.d.tick(self.now);
            }
        }
    }

    fn send_message(&mut self, m: &Message) {
        let b = m.encode();
        self.send(&b, b.len() as u32, false);
    }

    fn send(&mut self, msg: &[u8], len: u32, via_r2t: bool) {
        let sqe = wire::command(FCTYPE_AUTH_SEND, 0, len);
        let x = if via_r2t {
            Xfer::Write(msg)
        } else {
            Xfer::Raw(msg)
        };
        self.command(sqe, Sent::Auth { receive: false }, x);
    }

    /// Sends `sqe` with a fresh CID and reads what comes back.
    fn command(&mut self, mut sqe: Sqe, kind: Sent, x: Xfer<'_>) {
        sqe.cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        self.sent.insert(sqe.cid, kind);
        let mut s = HostStream::after_icreq(IcParams::default());
        match x {
            Xfer::Raw(data) if sqe.dptr.length == 0 && sqe.flags == 0 => s.command(sqe, data),
            Xfer::Raw(data) => s.raw_capsule(&sqe, data),
            Xfer::Read(len) => s.command_transport(sqe, u32::from(len)),
            Xfer::Write(_) => s.command_transport(sqe, sqe.cdw11),
        };
        let out = self.d.exchange(&s.take());
        let r2t = self.take_replies(out);
        if let (Xfer::Write(data), Some((ttag, offset, length))) = (x, r2t) {
            let start = (offset as usize).min(data.len());
            let end = (start + length as usize).min(data.len());
            if start < end {
                s.h2c_data(sqe.cid, ttag, offset, &data[start..end], true);
                let out = self.d.exchange(&s.take());
                self.take_replies(out);
            }
        }
    }

    /// Reads responses and Challenges; returns an R2T's transfer tag,
    /// offset and length.
    fn take_replies(&mut self, out: Vec<FromController>) -> Option<(u16, u32, u32)> {
        let mut ttag = None;
        for pdu in out {
            match pdu {
                FromController::Response(c) => {
                    let kind = self.sent.remove(&c.cid);
                    if kind == Some(Sent::Other) && c.status().is_success() {
                        self.other_succeeded = true;
                    }
                }
                FromController::Data {
                    cccid,
                    offset: 0,
                    data,
                } if self.sent.get(&cccid) == Some(&Sent::Auth { receive: true }) => {
                    if let Ok(Message::Challenge(c)) = Message::decode(&data) {
                        self.challenge = Some(c);
                    }
                }
                FromController::R2t {
                    ttag: t,
                    offset,
                    length,
                    ..
                } => ttag = Some((t, offset, length)),
                _ => {}
            }
        }
        ttag
    }

    /// A Reply as `r` asks, over the last Challenge where it leaves a
    /// field to the session.
    fn reply(&self, r: &ReplyOp) -> Message {
        let ch = self.challenge.as_ref();
        let t_id = r.t_id.unwrap_or_else(|| ch.map_or(0, |c| c.t_id));
        let hash = ch.and_then(|c| HashFn::from_id(c.hash_id));
        let group = ch.and_then(|c| DhGroup::from_id(c.dhgroup_id));
        let pair = match (&r.dh_value, group) {
            (None, Some(g)) => KeyPair::generate(g),
            _ => None,
        };
        let dh_value = r
            .dh_value
            .clone()
            .unwrap_or_else(|| pair.as_ref().map_or_else(Vec::new, |p| p.public().to_vec()));
        let response = match (&r.response, ch, hash) {
            (Some(resp), _, _) => resp.clone(),
            (None, Some(c), Some(h)) => {
                let session = pair.as_ref().and_then(|p| p.shared(&c.dh_value).ok());
                let c1 = crypto::augmented_challenge(
                    h,
                    session.as_deref().map(|k| &k[..]),
                    &c.challenge,
                );
                let t = Transaction {
                    hash: h,
                    challenge: &c1,
                    seqnum: c.seqnum,
                    t_id,
                    hostnqn: self.hostnqn,
                    subnqn: SUBNQN,
                };
                crypto::host_response(&self.key.transformed(self.hostnqn), &t, 0).to_vec()
            }
            _ => vec![0; 32],
        };
        let c2 = r.c2.then(|| vec![0xC2; response.len()]);
        Message::Reply(wire::Reply {
            t_id,
            response,
            challenge: c2,
            seqnum: if r.c2 { r.seqnum.max(1) } else { r.seqnum },
            dh_value,
        })
    }

    /// Sends a Property Get and returns whether it succeeded (`None`:
    /// the connection closed, so no response came).
    pub fn property_get_succeeds(&mut self) -> Option<bool> {
        if self.closing() {
            return None;
        }
        let before = self.other_succeeded;
        self.other_succeeded = false;
        let cid = self.next_cid;
        self.run(&Op::Other(0));
        let answered = !self.sent.contains_key(&cid);
        let ok = self.other_succeeded;
        self.other_succeeded |= before;
        assert!(
            answered || self.closing(),
            "a Property Get on an open queue got no response"
        );
        answered.then_some(ok)
    }

    /// Closes the queue; its controller goes with it.
    pub fn release(self) {
        self.d.release();
    }
}

/// How a command's data moves.
#[derive(Debug, Clone, Copy)]
enum Xfer<'a> {
    /// In the capsule, the SQE as given (an in-capsule SGL is added for
    /// data when the SQE has no SGL).
    Raw(&'a [u8]),
    /// This many bytes by C2HData.
    Read(u16),
    /// These bytes by R2T and H2CData.
    Write(&'a [u8]),
}

/// The SQE of [`Op::Other`]`(which)` and how its data moves.
fn other_command(which: u8) -> (Sqe, Xfer<'static>) {
    match which % crate::auth_ops::OTHER_COMMANDS.len() as u8 {
        0 => (command::property_get(prop::CSTS, false), Xfer::Raw(&[])),
        1 => (
            command::property_set(prop::CC, command::CC_ENABLED | CC_ENABLE),
            Xfer::Raw(&[]),
        ),
        2 => (command::identify(1, 0).0, Xfer::Read(4096)),
        3 => (command::keep_alive(), Xfer::Raw(&[])),
        4 => (
            command::get_log_page(0x02, 0xFFFF_FFFF, 512, 0).0,
            Xfer::Read(512),
        ),
        _ => (
            Sqe {
                opcode: admin::ASYNC_EVENT,
                ..Default::default()
            },
            Xfer::Raw(&[]),
        ),
    }
}
