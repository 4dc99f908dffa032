//! The `auth` target's input: a knob byte, then operations a host might
//! send on a queue that must authenticate, each an opcode byte and its
//! fields. [`Op::parse`] reads any bytes (an opcode is taken modulo the
//! number of operations; a field cut short ends the input) and
//! [`Op::encode`] writes what it reads, so the seeds are built from ops.
//!
//! Most operations are DH-HMAC-CHAP messages built from the fields, so
//! the fuzzer's bytes land in the target's state machine rather than in
//! the message decoder; a Reply can carry a response computed over the
//! last Challenge with the session's key (a wrong one when fuzzing), which
//! gets past every length check to the HMAC comparison.

use nvme_spec::auth::{Message, Negotiate, MAX_IDS};

/// One operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Authentication Send of `msg` as it is.
    SendRaw {
        /// The data by R2T and H2CData instead of in the capsule.
        via_r2t: bool,
        /// CDW11 (the transfer length) one more than the data.
        len_mismatch: bool,
        /// The bytes sent.
        msg: Vec<u8>,
    },
    /// Authentication Send of an AUTH_Negotiate.
    Negotiate(Negotiate),
    /// Authentication Receive of this many bytes.
    Receive(u16),
    /// Authentication Send of a DH-HMAC-CHAP_Reply.
    Reply(ReplyOp),
    /// Authentication Send of Success2 with this transaction id (`None`:
    /// the last Challenge's).
    Success2(Option<u16>),
    /// Authentication Send of AUTH_Failure2.
    Failure2 {
        /// Transaction id.
        t_id: u16,
        /// Reason code explanation.
        explanation: u8,
    },
    /// A command other than authentication ([`OTHER_COMMANDS`] names
    /// them, by this index modulo their number).
    Other(u8),
    /// A capsule with this SQE (its CID replaced) and in-capsule data.
    RawSqe {
        /// The 64 bytes of the SQE.
        sqe: [u8; 64],
        /// In-capsule data.
        data: Vec<u8>,
    },
    /// The connection's periodic work this many seconds later than the
    /// last (authentication has a deadline).
    Tick(u8),
}

/// The non-authentication commands [`Op::Other`] sends.
pub const OTHER_COMMANDS: [&str; 6] = [
    "Property Get CSTS",
    "Property Set CC.EN",
    "Identify controller",
    "Keep Alive",
    "Get Log Page SMART",
    "Asynchronous Event Request",
];

/// A Reply's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyOp {
    /// Transaction id (`None`: the last Challenge's).
    pub t_id: Option<u16>,
    /// R1 (`None`: computed over the last Challenge with the session's
    /// key, of the Challenge's hash length).
    pub response: Option<Vec<u8>>,
    /// Ask the controller to authenticate itself (C2 of the response's
    /// length, S2 = `seqnum`).
    pub c2: bool,
    /// S2.
    pub seqnum: u32,
    /// The DH public value (`None`: a key pair's in the last Challenge's
    /// group, empty for the null group).
    pub dh_value: Option<Vec<u8>>,
}

const OPS: u8 = 9;

/// Reads fields from the front of the input.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.bytes(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    /// A u8 count (at most `max`) and that many bytes.
    fn list(&mut self, max: usize) -> Option<Vec<u8>> {
        let n = (self.u8()? as usize).min(max);
        self.bytes(n).map(<[u8]>::to_vec)
    }

    /// A u16 length and that many bytes.
    fn blob(&mut self) -> Option<Vec<u8>> {
        let n = self.u16()? as usize;
        self.bytes(n).map(<[u8]>::to_vec)
    }
}

/// Every operation `input` holds, up to the first one cut short.
pub fn parse_ops(input: &[u8]) -> Vec<Op> {
    let mut r = Reader(input);
    std::iter::from_fn(|| Op::parse(&mut r)).collect()
}

/// The bytes of `ops`, as [`parse_ops`] reads them back.
pub fn encode_ops(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    for op in ops {
        op.encode(&mut out);
    }
    out
}

impl Op {
    fn parse(r: &mut Reader<'_>) -> Option<Op> {
        Some(match r.u8()? % OPS {
            0 => {
                let f = r.u8()?;
                Op::SendRaw {
                    via_r2t: f & 1 != 0,
                    len_mismatch: f & 2 != 0,
                    msg: r.blob()?,
                }
            }
            1 => Op::Negotiate(Negotiate {
                t_id: r.u16()?,
                sc_c: r.u8()?,
                hashes: r.list(MAX_IDS)?,
                dhgroups: r.list(MAX_IDS)?,
            }),
            2 => Op::Receive(r.u16()?),
            3 => Op::Reply(ReplyOp::parse(r)?),
            4 => Op::Success2(if r.u8()? & 1 != 0 {
                Some(r.u16()?)
            } else {
                None
            }),
            5 => Op::Failure2 {
                t_id: r.u16()?,
                explanation: r.u8()?,
            },
            6 => Op::Other(r.u8()?),
            7 => Op::RawSqe {
                sqe: r.bytes(64)?.try_into().expect("64 bytes"),
                data: r.blob()?,
            },
            _ => Op::Tick(r.u8()?),
        })
    }

    /// Appends the operation's bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let blob = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&(b.len() as u16).to_le_bytes());
            out.extend_from_slice(b);
        };
        let list = |out: &mut Vec<u8>, b: &[u8]| {
            out.push(b.len() as u8);
            out.extend_from_slice(b);
        };
        match self {
            Op::SendRaw {
                via_r2t,
                len_mismatch,
                msg,
            } => {
                out.extend([0, u8::from(*via_r2t) | u8::from(*len_mismatch) << 1]);
                blob(out, msg);
            }
            Op::Negotiate(n) => {
                out.push(1);
                out.extend_from_slice(&n.t_id.to_le_bytes());
                out.push(n.sc_c);
                list(out, &n.hashes);
                list(out, &n.dhgroups);
            }
            Op::Receive(len) => {
                out.push(2);
                out.extend_from_slice(&len.to_le_bytes());
            }
            Op::Reply(r) => r.encode(out),
            Op::Success2(t_id) => {
                out.extend([4, u8::from(t_id.is_some())]);
                out.extend(t_id.iter().flat_map(|t| t.to_le_bytes()));
            }
            Op::Failure2 { t_id, explanation } => {
                out.push(5);
                out.extend_from_slice(&t_id.to_le_bytes());
                out.push(*explanation);
            }
            Op::Other(which) => out.extend([6, *which]),
            Op::RawSqe { sqe, data } => {
                out.push(7);
                out.extend_from_slice(sqe);
                blob(out, data);
            }
            Op::Tick(secs) => out.extend([8, *secs]),
        }
    }

    /// Whether this is an authentication command (the only ones a queue
    /// that has not authenticated may complete successfully).
    pub fn is_auth(&self) -> bool {
        !matches!(self, Op::Other(_) | Op::RawSqe { .. } | Op::Tick(_))
    }
}

impl ReplyOp {
    fn parse(r: &mut Reader<'_>) -> Option<Self> {
        let f = r.u8()?;
        let t_id = if f & 1 != 0 { Some(r.u16()?) } else { None };
        let response = if f & 2 != 0 {
            Some(r.list(usize::from(u8::MAX))?)
        } else {
            None
        };
        let seqnum = r.u32()?;
        let dh_value = if f & 8 != 0 { Some(r.blob()?) } else { None };
        Some(Self {
            t_id,
            response,
            c2: f & 4 != 0,
            seqnum,
            dh_value,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let f = u8::from(self.t_id.is_some())
            | u8::from(self.response.is_some()) << 1
            | u8::from(self.c2) << 2
            | u8::from(self.dh_value.is_some()) << 3;
        out.extend([3, f]);
        out.extend(self.t_id.iter().flat_map(|t| t.to_le_bytes()));
        if let Some(resp) = &self.response {
            out.push(resp.len() as u8);
            out.extend_from_slice(resp);
        }
        out.extend_from_slice(&self.seqnum.to_le_bytes());
        if let Some(v) = &self.dh_value {
            out.extend_from_slice(&(v.len() as u16).to_le_bytes());
            out.extend_from_slice(v);
        }
    }
}

/// Invariant of `nvme_spec::auth::Message`: decoding never panics, and a
/// message that decodes encodes to bytes that decode to it again.
pub fn check_message_round_trip(bytes: &[u8]) {
    if let Ok(m) = Message::decode(bytes) {
        let again = Message::decode(&m.encode());
        assert_eq!(again.as_ref(), Ok(&m), "decode(encode(m)) != m");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_read_back_as_written() {
        let ops = vec![
            Op::SendRaw {
                via_r2t: true,
                len_mismatch: false,
                msg: vec![1, 2, 3],
            },
            Op::Negotiate(Negotiate {
                t_id: 9,
                sc_c: 0,
                hashes: vec![1, 2, 3],
                dhgroups: vec![0, 1],
            }),
            Op::Receive(4096),
            Op::Reply(ReplyOp {
                t_id: Some(3),
                response: Some(vec![7; 32]),
                c2: true,
                seqnum: 5,
                dh_value: Some(vec![1; 10]),
            }),
            Op::Reply(ReplyOp {
                t_id: None,
                response: None,
                c2: false,
                seqnum: 0,
                dh_value: None,
            }),
            Op::Success2(None),
            Op::Success2(Some(4)),
            Op::Failure2 {
                t_id: 1,
                explanation: 2,
            },
            Op::Other(3),
            Op::RawSqe {
                sqe: [0x7F; 64],
                data: vec![0; 5],
            },
            Op::Tick(31),
        ];
        assert_eq!(parse_ops(&encode_ops(&ops)), ops);
    }

    #[test]
    fn a_field_cut_short_ends_the_input() {
        let mut b = encode_ops(&[Op::Receive(1), Op::Tick(2)]);
        b.push(2); // a Receive without its length
        assert_eq!(parse_ops(&b), vec![Op::Receive(1), Op::Tick(2)]);
    }
}
