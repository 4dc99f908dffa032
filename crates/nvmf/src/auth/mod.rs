//! DH-HMAC-CHAP (NVMe base specification 2.0 §8.13.5, TP 8006): the
//! secrets, hash functions, Diffie-Hellman groups and the values both
//! sides compute. The messages are bytes in `nvme_spec::auth`; the target's
//! per-queue state machine is `tgt::auth`, the host's steps are
//! `host::auth`. Hashes and HMAC are RustCrypto's (`sha2`, `hmac`), modular
//! exponentiation is `crypto-bigint`'s constant-time Montgomery form, the
//! groups are RFC 7919's: nothing here is cryptography of our own.
//!
//! What each side computes, with `Kh`, `Kc` the host's and controller's
//! secrets transformed for their NQN ([`Secret::transformed`]):
//! ```text
//! Ca = HMAC(H(g^xy mod p), C)           (C itself for the null DH group)
//! R1 = HMAC(Kh, Ca1 || S1 || T_ID || SC_C || "HostHost"   || NQNh || 0 || NQNc)
//! R2 = HMAC(Kc, Ca2 || S2 || T_ID || 0    || "Controller" || NQNc || 0 || NQNh)
//! ```
//! (numbers little-endian: S 4 bytes, T_ID 2, SC_C 1).

mod dh;
mod ffdhe;
mod secret;

use std::sync::atomic::{AtomicU32, Ordering};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha384, Sha512};
use zeroize::Zeroizing;

pub use dh::{DhError, DhGroup, KeyPair};
pub(crate) use secret::read_private;
pub use secret::{Secret, SecretError};

/// A name of a DH-HMAC-CHAP hash or group that names none; the message
/// lists the names taken (from [`HashFn::ALL`] and [`DhGroup::ALL`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Not a hash function's name ([`HashFn::parse`]).
    #[error("{name:?} is not a DH-HMAC-CHAP hash: use {}", crate::one_of(HashFn::ALL.map(HashFn::name)))]
    Hash {
        /// The name as given.
        name: String,
    },
    /// Not a DH group's name ([`DhGroup::parse`]).
    #[error("{name:?} is not a DH group: use {}", crate::one_of(DhGroup::ALL.map(DhGroup::name)))]
    DhGroup {
        /// The name as given.
        name: String,
    },
}

/// A hash function of DH-HMAC-CHAP (HashID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashFn {
    /// SHA-256 (id 1).
    Sha256,
    /// SHA-384 (id 2).
    Sha384,
    /// SHA-512 (id 3).
    Sha512,
}

impl HashFn {
    /// Every hash function, in the order numio prefers and offers them.
    pub const ALL: [HashFn; 3] = [HashFn::Sha256, HashFn::Sha384, HashFn::Sha512];

    /// The HashID.
    pub fn id(self) -> u8 {
        match self {
            HashFn::Sha256 => 1,
            HashFn::Sha384 => 2,
            HashFn::Sha512 => 3,
        }
    }

    /// The hash function with this HashID.
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.id() == id)
    }

    /// Digest length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            HashFn::Sha256 => 32,
            HashFn::Sha384 => 48,
            HashFn::Sha512 => 64,
        }
    }

    /// Its name: `sha256`, `sha384`, `sha512`.
    pub fn name(self) -> &'static str {
        match self {
            HashFn::Sha256 => "sha256",
            HashFn::Sha384 => "sha384",
            HashFn::Sha512 => "sha512",
        }
    }

    /// Parses a name: `sha256`, `SHA-256` or the kernel's `hmac(sha256)`.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let n = name.trim().to_ascii_lowercase().replace('-', "");
        let n = n
            .strip_prefix("hmac(")
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or(&n);
        Self::ALL
            .into_iter()
            .find(|h| h.name() == n)
            .ok_or_else(|| NameError::Hash {
                name: name.to_string(),
            })
    }

    /// H(data).
    pub fn digest(self, data: &[u8]) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(match self {
            HashFn::Sha256 => Sha256::digest(data).to_vec(),
            HashFn::Sha384 => Sha384::digest(data).to_vec(),
            HashFn::Sha512 => Sha512::digest(data).to_vec(),
        })
    }

    /// HMAC(key, parts concatenated).
    pub fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
        fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
            let mut m = <M as hmac::digest::KeyInit>::new_from_slice(key)
                .expect("HMAC takes a key of any length");
            for p in parts {
                m.update(p);
            }
            m.finalize().into_bytes().to_vec()
        }
        Zeroizing::new(match self {
            HashFn::Sha256 => run::<Hmac<Sha256>>(key, parts),
            HashFn::Sha384 => run::<Hmac<Sha384>>(key, parts),
            HashFn::Sha512 => run::<Hmac<Sha512>>(key, parts),
        })
    }
}

impl std::fmt::Display for HashFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Random bytes from the operating system.
pub fn random_bytes(n: usize) -> Zeroizing<Vec<u8>> {
    let mut b = Zeroizing::new(vec![0u8; n]);
    getrandom::fill(&mut b).expect("the operating system's random source");
    b
}

/// A sequence number for a challenge: random at first, then counting up,
/// never 0 (0 means "no controller authentication" in a Reply).
pub fn next_seqnum() -> u32 {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    loop {
        let cur = SEQ.load(Ordering::Relaxed);
        let next = if cur == 0 {
            let mut b = [0u8; 4];
            getrandom::fill(&mut b).expect("the operating system's random source");
            u32::from_le_bytes(b)
        } else {
            cur.wrapping_add(1)
        };
        if next != 0
            && SEQ
                .compare_exchange(cur, next, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return next;
        }
    }
}

/// The challenge as the response hashes it: `HMAC(H(session key), C)`
/// with a DH exchange, `C` itself without one.
pub fn augmented_challenge(
    hash: HashFn,
    session_key: Option<&[u8]>,
    challenge: &[u8],
) -> Zeroizing<Vec<u8>> {
    match session_key {
        Some(k) => hash.hmac(&hash.digest(k), &[challenge]),
        None => Zeroizing::new(challenge.to_vec()),
    }
}

/// What one response covers besides the key.
#[derive(Debug, Clone, Copy)]
pub struct Transaction<'a> {
    /// The negotiated hash function.
    pub hash: HashFn,
    /// The (augmented) challenge answered.
    pub challenge: &'a [u8],
    /// Its sequence number.
    pub seqnum: u32,
    /// Transaction id.
    pub t_id: u16,
    /// Host NQN.
    pub hostnqn: &'a str,
    /// Subsystem NQN.
    pub subnqn: &'a str,
}

/// R1, the host's response: keyed with the host secret transformed for
/// the host NQN.
pub fn host_response(key: &[u8], t: &Transaction<'_>, sc_c: u8) -> Zeroizing<Vec<u8>> {
    t.hash.hmac(
        key,
        &[
            t.challenge,
            &t.seqnum.to_le_bytes(),
            &t.t_id.to_le_bytes(),
            &[sc_c],
            b"HostHost",
            t.hostnqn.as_bytes(),
            &[0],
            t.subnqn.as_bytes(),
        ],
    )
}

/// R2, the controller's response: keyed with the controller secret
/// transformed for the subsystem NQN.
pub fn controller_response(key: &[u8], t: &Transaction<'_>) -> Zeroizing<Vec<u8>> {
    t.hash.hmac(
        key,
        &[
            t.challenge,
            &t.seqnum.to_le_bytes(),
            &t.t_id.to_le_bytes(),
            &[0],
            b"Controller",
            t.subnqn.as_bytes(),
            &[0],
            t.hostnqn.as_bytes(),
        ],
    )
}

/// Whether two responses are equal, in time that does not depend on where
/// they differ.
pub fn responses_equal(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// A failure's reason code explanation in words, for logs and errors.
pub fn explain_text(code: u8) -> &'static str {
    use nvme_spec::auth::explain;
    match code {
        explain::FAILED => "authentication failed (wrong secret)",
        explain::PROTOCOL_UNUSABLE => "protocol not usable",
        explain::CONCAT_MISMATCH => "secure channel concatenation not supported",
        explain::HASH_UNUSABLE => "no hash function in common",
        explain::DHGROUP_UNUSABLE => "no DH group in common, or a bad DH value",
        explain::INCORRECT_PAYLOAD => "malformed message",
        explain::INCORRECT_MESSAGE => "message out of sequence",
        _ => "unknown reason",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn hmac_known_answers() {
        // RFC 4231 test case 2.
        let parts: [&[u8]; 2] = [b"what do ya want ", b"for nothing?"];
        assert_eq!(
            hex(&HashFn::Sha256.hmac(b"Jefe", &parts)),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&HashFn::Sha512.hmac(b"Jefe", &parts))[..32],
            *"164b7a7bfcf819e2e395fbe73b56e0a3"
        );
        assert_eq!(HashFn::Sha384.hmac(b"k", &[b"x"]).len(), 48);
    }

    #[test]
    fn names_and_ids() {
        for h in HashFn::ALL {
            assert_eq!(HashFn::from_id(h.id()), Some(h));
            assert_eq!(HashFn::parse(h.name()), Ok(h));
            assert_eq!(h.digest(b"").len(), h.digest_len());
        }
        assert_eq!(HashFn::parse("hmac(sha384)"), Ok(HashFn::Sha384));
        assert_eq!(HashFn::parse("SHA-512"), Ok(HashFn::Sha512));
        let e = HashFn::parse("md5").unwrap_err();
        assert_eq!(e, NameError::Hash { name: "md5".into() });
        assert_eq!(
            e.to_string(),
            "\"md5\" is not a DH-HMAC-CHAP hash: use sha256, sha384 or sha512"
        );
        assert_eq!(HashFn::from_id(0), None);
    }

    #[test]
    fn responses_bind_every_field() {
        let key = [7u8; 32];
        let t = Transaction {
            hash: HashFn::Sha256,
            challenge: &[1; 32],
            seqnum: 5,
            t_id: 1,
            hostnqn: "nqn.h",
            subnqn: "nqn.s",
        };
        let base = host_response(&key, &t, 0);
        // The same inputs concatenated by hand.
        let mut m = vec![1u8; 32];
        m.extend_from_slice(&[5, 0, 0, 0, 1, 0, 0]);
        m.extend_from_slice(b"HostHostnqn.h\0nqn.s");
        assert_eq!(*base, *HashFn::Sha256.hmac(&key, &[&m]));
        let changed = [
            Transaction { seqnum: 6, ..t },
            Transaction { t_id: 2, ..t },
            Transaction {
                hostnqn: "nqn.x",
                ..t
            },
            Transaction {
                subnqn: "nqn.y",
                ..t
            },
            Transaction {
                challenge: &[2; 32],
                ..t
            },
        ];
        for c in changed {
            assert_ne!(*host_response(&key, &c, 0), *base);
        }
        assert_ne!(*controller_response(&key, &t), *base);
        assert!(responses_equal(&base, &base.clone()));
        assert!(!responses_equal(&base, &base[..31]));
    }

    #[test]
    fn seqnums_are_never_zero_and_count_up() {
        let a = next_seqnum();
        let b = next_seqnum();
        assert_ne!(a, 0);
        assert_ne!(b, 0);
        assert_ne!(a, b);
    }

    #[test]
    fn augmented_challenge_uses_the_hashed_session_key() {
        let c = [3u8; 32];
        assert_eq!(*augmented_challenge(HashFn::Sha256, None, &c), c.to_vec());
        let k = [9u8; 256];
        let a = augmented_challenge(HashFn::Sha256, Some(&k), &c);
        assert_eq!(*a, *HashFn::Sha256.hmac(&HashFn::Sha256.digest(&k), &[&c]));
    }
}
