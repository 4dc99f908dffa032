//! In-band authentication (NVMe base specification 2.0 §8.13.5, TP 8006):
//! the Authentication Send and Receive fabrics commands and the
//! DH-HMAC-CHAP messages they carry, as bytes. The cryptography lives in
//! `nvmf::auth`; this module only lays messages out and reads them back.
//!
//! A DH-HMAC-CHAP transaction on one queue, after a Connect whose response
//! set [`CONNECT_AUTHREQ_ATR`]:
//! ```text
//! host                                   controller
//! AUTH_Send     Negotiate  ───────────►  picks a hash and a DH group
//! AUTH_Receive             ◄───────────  Challenge (C1, seq S1, g^x)
//! AUTH_Send     Reply (R1, C2, S2, g^y) ►  checks R1
//! AUTH_Receive             ◄───────────  Success1 (R2 if C2 was sent)
//! AUTH_Send     Success2   ───────────►  (bidirectional only)
//! ```
//! Either side ends a failed transaction with a Failure message
//! (Failure1 from the controller, Failure2 from the host).

use crate::bytes::{get_u16, get_u32, put_u16, put_u32};
use crate::Sqe;

/// Fabrics command type: Authentication Send (host to controller data).
pub const FCTYPE_AUTH_SEND: u8 = 0x05;
/// Fabrics command type: Authentication Receive (controller to host data).
pub const FCTYPE_AUTH_RECEIVE: u8 = 0x06;
/// Security protocol of NVMe in-band authentication (SECP).
pub const SECP_NVME_AUTH: u8 = 0xE9;
/// SPSP0 and SPSP1 of DH-HMAC-CHAP: both 1.
pub const SPSP_DHCHAP: u8 = 0x01;

/// Connect response dword 0, bit 17: authentication is required (ATR).
pub const CONNECT_AUTHREQ_ATR: u32 = 1 << 17;
/// Connect response dword 0, bit 18: secure channel concatenation (ASCR).
pub const CONNECT_AUTHREQ_ASCR: u32 = 1 << 18;

/// AUTH_Type of messages common to every protocol (Negotiate, Failure).
pub const AUTH_TYPE_COMMON: u8 = 0x00;
/// AUTH_Type of DH-HMAC-CHAP messages.
pub const AUTH_TYPE_DHCHAP: u8 = 0x01;

/// AUTH_Id values.
pub mod id {
    /// AUTH_Negotiate (common).
    pub const NEGOTIATE: u8 = 0x00;
    /// DH-HMAC-CHAP_Challenge.
    pub const CHALLENGE: u8 = 0x01;
    /// DH-HMAC-CHAP_Reply.
    pub const REPLY: u8 = 0x02;
    /// DH-HMAC-CHAP_Success1.
    pub const SUCCESS1: u8 = 0x03;
    /// DH-HMAC-CHAP_Success2.
    pub const SUCCESS2: u8 = 0x04;
    /// AUTH_Failure2 (from the host; common).
    pub const FAILURE2: u8 = 0xF0;
    /// AUTH_Failure1 (from the controller; common).
    pub const FAILURE1: u8 = 0xF1;
}

/// Protocol id of DH-HMAC-CHAP in a Negotiate descriptor (AUTHID).
pub const AUTHID_DHCHAP: u8 = 0x01;
/// Secure channel concatenation: none (SC_C).
pub const SC_C_NONE: u8 = 0x00;
/// Hash ids (and DH group ids) a Negotiate descriptor has room for.
pub const MAX_IDS: usize = 30;

/// Failure reason code: authentication failed.
pub const REASON_FAILED: u8 = 0x01;

/// Failure reason code explanations.
pub mod explain {
    /// Authentication failed.
    pub const FAILED: u8 = 0x01;
    /// Authentication protocol not usable.
    pub const PROTOCOL_UNUSABLE: u8 = 0x02;
    /// Secure channel concatenation mismatch.
    pub const CONCAT_MISMATCH: u8 = 0x03;
    /// No usable hash function.
    pub const HASH_UNUSABLE: u8 = 0x04;
    /// No usable Diffie-Hellman group.
    pub const DHGROUP_UNUSABLE: u8 = 0x05;
    /// Incorrect payload.
    pub const INCORRECT_PAYLOAD: u8 = 0x06;
    /// Incorrect protocol message.
    pub const INCORRECT_MESSAGE: u8 = 0x07;
}

/// Bytes of a Negotiate message with one protocol descriptor.
pub const NEGOTIATE_BYTES: usize = 8 + 64;
/// Bytes of the fixed part of Challenge, Reply and Success1.
pub const HEADER_BYTES: usize = 16;
/// Bytes of a Success2 message.
pub const SUCCESS2_BYTES: usize = 16;
/// Bytes of a Failure message.
pub const FAILURE_BYTES: usize = 8;

/// SECP, SPSP0 and SPSP1 of an Authentication Send or Receive (CDW10) and
/// its transfer or allocation length (CDW11).
pub fn command(fctype: u8, cid: u16, len: u32) -> Sqe {
    let mut s = Sqe {
        opcode: crate::command::admin::FABRICS,
        cid,
        nsid: u32::from(fctype),
        ..Default::default()
    };
    s.cdw10 = (u32::from(SECP_NVME_AUTH) << 24)
        | (u32::from(SPSP_DHCHAP) << 16)
        | (u32::from(SPSP_DHCHAP) << 8);
    s.cdw11 = len;
    s
}

/// The SECP, SPSP0 and SPSP1 of an authentication command's CDW10.
pub fn secp_spsp(cdw10: u32) -> (u8, u8, u8) {
    ((cdw10 >> 24) as u8, (cdw10 >> 8) as u8, (cdw10 >> 16) as u8)
}

/// A message that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Fewer bytes than the message needs.
    #[error("authentication message of {got} bytes is shorter than the {need} it needs")]
    Short {
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        got: usize,
    },
    /// An AUTH_Type and AUTH_Id pair no message has.
    #[error("unknown authentication message (type {auth_type:#04x}, id {auth_id:#04x})")]
    Unknown {
        /// AUTH_Type.
        auth_type: u8,
        /// AUTH_Id.
        auth_id: u8,
    },
    /// A field out of its range.
    #[error("authentication message field {field} is invalid ({value})")]
    Field {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: usize,
    },
}

/// AUTH_Negotiate: the transaction id, secure channel concatenation and
/// the hash functions and DH groups the host offers (in its order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiate {
    /// Transaction id.
    pub t_id: u16,
    /// Secure channel concatenation (SC_C).
    pub sc_c: u8,
    /// Hash function ids offered.
    pub hashes: Vec<u8>,
    /// DH group ids offered.
    pub dhgroups: Vec<u8>,
}

/// DH-HMAC-CHAP_Challenge: the controller's hash choice, challenge C1,
/// sequence number S1 and its DH public value (empty for the null group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// Transaction id.
    pub t_id: u16,
    /// Hash function id.
    pub hash_id: u8,
    /// DH group id.
    pub dhgroup_id: u8,
    /// Sequence number S1.
    pub seqnum: u32,
    /// Challenge C1 (the hash length).
    pub challenge: Vec<u8>,
    /// The controller's DH public value.
    pub dh_value: Vec<u8>,
}

/// DH-HMAC-CHAP_Reply: the host's response R1, its own challenge C2 (for
/// bidirectional authentication), sequence number S2 and DH public value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Transaction id.
    pub t_id: u16,
    /// Response R1 (the hash length).
    pub response: Vec<u8>,
    /// Challenge C2, when the host authenticates the controller.
    pub challenge: Option<Vec<u8>>,
    /// Sequence number S2 (0: no controller authentication).
    pub seqnum: u32,
    /// The host's DH public value.
    pub dh_value: Vec<u8>,
}

/// DH-HMAC-CHAP_Success1: the controller's response R2 when asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Success1 {
    /// Transaction id.
    pub t_id: u16,
    /// Hash length.
    pub hash_len: u8,
    /// Response R2 (RVALID set).
    pub response: Option<Vec<u8>>,
}

/// AUTH_Failure1 or AUTH_Failure2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// [`id::FAILURE1`] (controller) or [`id::FAILURE2`] (host).
    pub auth_id: u8,
    /// Transaction id.
    pub t_id: u16,
    /// Reason code.
    pub reason: u8,
    /// Reason code explanation ([`explain`]).
    pub explanation: u8,
}

/// One authentication message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// AUTH_Negotiate.
    Negotiate(Negotiate),
    /// DH-HMAC-CHAP_Challenge.
    Challenge(Challenge),
    /// DH-HMAC-CHAP_Reply.
    Reply(Reply),
    /// DH-HMAC-CHAP_Success1.
    Success1(Success1),
    /// DH-HMAC-CHAP_Success2 with its transaction id.
    Success2(u16),
    /// AUTH_Failure1 or AUTH_Failure2.
    Failure(Failure),
}

fn need(b: &[u8], n: usize) -> Result<(), MessageError> {
    if b.len() < n {
        return Err(MessageError::Short {
            need: n,
            got: b.len(),
        });
    }
    Ok(())
}

fn header(auth_type: u8, auth_id: u8, t_id: u16, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    b[0] = auth_type;
    b[1] = auth_id;
    put_u16(&mut b, 4, t_id);
    b
}

impl Message {
    /// The message as bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Message::Negotiate(n) => {
                let mut b = header(AUTH_TYPE_COMMON, id::NEGOTIATE, n.t_id, NEGOTIATE_BYTES);
                b[6] = n.sc_c;
                b[7] = 1; // NAPD: one protocol descriptor
                b[8] = AUTHID_DHCHAP;
                let (h, d) = (n.hashes.len().min(MAX_IDS), n.dhgroups.len().min(MAX_IDS));
                b[10] = h as u8;
                b[11] = d as u8;
                b[12..12 + h].copy_from_slice(&n.hashes[..h]);
                b[12 + MAX_IDS..12 + MAX_IDS + d].copy_from_slice(&n.dhgroups[..d]);
                b
            }
            Message::Challenge(c) => {
                let hl = c.challenge.len();
                let mut b = header(AUTH_TYPE_DHCHAP, id::CHALLENGE, c.t_id, HEADER_BYTES);
                b[6] = hl as u8;
                b[8] = c.hash_id;
                b[9] = c.dhgroup_id;
                put_u16(&mut b, 10, c.dh_value.len() as u16);
                put_u32(&mut b, 12, c.seqnum);
                b.extend_from_slice(&c.challenge);
                b.extend_from_slice(&c.dh_value);
                b
            }
            Message::Reply(r) => {
                let hl = r.response.len();
                let mut b = header(AUTH_TYPE_DHCHAP, id::REPLY, r.t_id, HEADER_BYTES);
                b[6] = hl as u8;
                b[8] = u8::from(r.challenge.is_some());
                put_u16(&mut b, 10, r.dh_value.len() as u16);
                put_u32(&mut b, 12, r.seqnum);
                b.extend_from_slice(&r.response);
                match &r.challenge {
                    Some(c) => b.extend_from_slice(c),
                    None => b.resize(b.len() + hl, 0),
                }
                b.extend_from_slice(&r.dh_value);
                b
            }
            Message::Success1(s) => {
                let mut b = header(AUTH_TYPE_DHCHAP, id::SUCCESS1, s.t_id, HEADER_BYTES);
                b[6] = s.hash_len;
                b[8] = u8::from(s.response.is_some());
                match &s.response {
                    Some(r) => b.extend_from_slice(r),
                    None => b.resize(b.len() + s.hash_len as usize, 0),
                }
                b
            }
            Message::Success2(t_id) => {
                header(AUTH_TYPE_DHCHAP, id::SUCCESS2, *t_id, SUCCESS2_BYTES)
            }
            Message::Failure(f) => {
                let mut b = header(AUTH_TYPE_COMMON, f.auth_id, f.t_id, FAILURE_BYTES);
                b[6] = f.reason;
                b[7] = f.explanation;
                b
            }
        }
    }

    /// Reads a message; bytes past its end are ignored (a buffer may be
    /// larger than the message it holds).
    pub fn decode(b: &[u8]) -> Result<Message, MessageError> {
        need(b, 6)?;
        let (auth_type, auth_id, t_id) = (b[0], b[1], get_u16(b, 4));
        match (auth_type, auth_id) {
            (AUTH_TYPE_COMMON, id::NEGOTIATE) => {
                need(b, NEGOTIATE_BYTES)?;
                if b[7] != 1 {
                    return Err(MessageError::Field {
                        field: "NAPD",
                        value: b[7] as usize,
                    });
                }
                if b[8] != AUTHID_DHCHAP {
                    return Err(MessageError::Field {
                        field: "AUTHID",
                        value: b[8] as usize,
                    });
                }
                let (h, d) = (b[10] as usize, b[11] as usize);
                if h > MAX_IDS || d > MAX_IDS {
                    return Err(MessageError::Field {
                        field: "HALEN/DHLEN",
                        value: h.max(d),
                    });
                }
                Ok(Message::Negotiate(Negotiate {
                    t_id,
                    sc_c: b[6],
                    hashes: b[12..12 + h].to_vec(),
                    dhgroups: b[12 + MAX_IDS..12 + MAX_IDS + d].to_vec(),
                }))
            }
            (AUTH_TYPE_DHCHAP, id::CHALLENGE) => {
                need(b, HEADER_BYTES)?;
                let (hl, dhvlen) = (b[6] as usize, get_u16(b, 10) as usize);
                need(b, HEADER_BYTES + hl + dhvlen)?;
                let v = &b[HEADER_BYTES..];
                Ok(Message::Challenge(Challenge {
                    t_id,
                    hash_id: b[8],
                    dhgroup_id: b[9],
                    seqnum: get_u32(b, 12),
                    challenge: v[..hl].to_vec(),
                    dh_value: v[hl..hl + dhvlen].to_vec(),
                }))
            }
            (AUTH_TYPE_DHCHAP, id::REPLY) => {
                need(b, HEADER_BYTES)?;
                let (hl, dhvlen) = (b[6] as usize, get_u16(b, 10) as usize);
                need(b, HEADER_BYTES + 2 * hl + dhvlen)?;
                let v = &b[HEADER_BYTES..];
                Ok(Message::Reply(Reply {
                    t_id,
                    response: v[..hl].to_vec(),
                    challenge: (b[8] != 0).then(|| v[hl..2 * hl].to_vec()),
                    seqnum: get_u32(b, 12),
                    dh_value: v[2 * hl..2 * hl + dhvlen].to_vec(),
                }))
            }
            (AUTH_TYPE_DHCHAP, id::SUCCESS1) => {
                need(b, HEADER_BYTES)?;
                let hl = b[6];
                let response = if b[8] != 0 {
                    need(b, HEADER_BYTES + hl as usize)?;
                    Some(b[HEADER_BYTES..HEADER_BYTES + hl as usize].to_vec())
                } else {
                    None
                };
                Ok(Message::Success1(Success1 {
                    t_id,
                    hash_len: hl,
                    response,
                }))
            }
            (AUTH_TYPE_DHCHAP, id::SUCCESS2) => {
                need(b, SUCCESS2_BYTES)?;
                Ok(Message::Success2(t_id))
            }
            (AUTH_TYPE_COMMON, id::FAILURE1 | id::FAILURE2) => {
                need(b, FAILURE_BYTES)?;
                Ok(Message::Failure(Failure {
                    auth_id,
                    t_id,
                    reason: b[6],
                    explanation: b[7],
                }))
            }
            _ => Err(MessageError::Unknown { auth_type, auth_id }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiate_at_the_spec_offsets() {
        let m = Message::Negotiate(Negotiate {
            t_id: 0x1234,
            sc_c: 0,
            hashes: vec![1, 2, 3],
            dhgroups: vec![0, 1, 2, 3, 4, 5],
        });
        let b = m.encode();
        assert_eq!(b.len(), 72);
        assert_eq!(&b[..12], &[0, 0, 0, 0, 0x34, 0x12, 0, 1, 1, 0, 3, 6]);
        assert_eq!(&b[12..15], &[1, 2, 3]);
        assert_eq!(&b[42..48], &[0, 1, 2, 3, 4, 5]);
        assert_eq!(Message::decode(&b).unwrap(), m);
    }

    #[test]
    fn challenge_reply_success_round_trip() {
        let msgs = [
            Message::Challenge(Challenge {
                t_id: 7,
                hash_id: 1,
                dhgroup_id: 1,
                seqnum: 0xDEADBEEF,
                challenge: vec![0xAA; 32],
                dh_value: vec![0x55; 256],
            }),
            Message::Reply(Reply {
                t_id: 7,
                response: vec![1; 48],
                challenge: Some(vec![2; 48]),
                seqnum: 9,
                dh_value: vec![3; 384],
            }),
            Message::Reply(Reply {
                t_id: 7,
                response: vec![1; 32],
                challenge: None,
                seqnum: 0,
                dh_value: vec![],
            }),
            Message::Success1(Success1 {
                t_id: 7,
                hash_len: 64,
                response: Some(vec![4; 64]),
            }),
            Message::Success1(Success1 {
                t_id: 7,
                hash_len: 32,
                response: None,
            }),
            Message::Success2(7),
            Message::Failure(Failure {
                auth_id: id::FAILURE1,
                t_id: 7,
                reason: REASON_FAILED,
                explanation: explain::FAILED,
            }),
        ];
        for m in msgs {
            let b = m.encode();
            assert_eq!(Message::decode(&b).unwrap(), m, "{m:?}");
        }
    }

    #[test]
    fn reply_layout() {
        let b = Message::Reply(Reply {
            t_id: 1,
            response: vec![0xA; 32],
            challenge: Some(vec![0xB; 32]),
            seqnum: 0x01020304,
            dh_value: vec![0xC; 4],
        })
        .encode();
        assert_eq!(&b[..16], &[1, 2, 0, 0, 1, 0, 32, 0, 1, 0, 4, 0, 4, 3, 2, 1]);
        assert_eq!(b.len(), 16 + 64 + 4);
        assert_eq!(b[16 + 32], 0xB);
        assert_eq!(b[16 + 64], 0xC);
    }

    #[test]
    fn short_and_unknown_messages_are_errors() {
        assert!(matches!(
            Message::decode(&[1, 1, 0, 0, 0, 0, 32, 0, 1, 0, 0, 0, 0, 0, 0, 0]),
            Err(MessageError::Short { need: 48, .. })
        ));
        assert!(matches!(
            Message::decode(&[1, 9, 0, 0, 0, 0, 0, 0]),
            Err(MessageError::Unknown { .. })
        ));
        let mut n = Message::Negotiate(Negotiate {
            t_id: 0,
            sc_c: 0,
            hashes: vec![1],
            dhgroups: vec![0],
        })
        .encode();
        n[10] = 31;
        assert!(Message::decode(&n).is_err());
    }

    #[test]
    fn command_dwords() {
        let s = command(FCTYPE_AUTH_SEND, 3, 72);
        assert_eq!(s.fctype(), FCTYPE_AUTH_SEND);
        assert_eq!(secp_spsp(s.cdw10), (0xE9, 1, 1));
        assert_eq!(s.cdw10, 0xE901_0100);
        assert_eq!(s.cdw11, 72);
    }
}
